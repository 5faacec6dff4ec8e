//! H.264, VP8 and VP9 to pixels through the system's FFmpeg (libavcodec), one thread per
//! decoder: the `ffmpeg` cargo feature. The same decoders `ffmpeg -threads 1` runs, so a face
//! upload decodes at the floor BENCHMARKS.md measures against; without the feature the bundled
//! decoders (OpenH264, oximedia-codec, rusty_vp9) are used.
//!
//! Each frame is sent tagged with a key, and every picture that comes out carries the key of
//! the frame it came from (libavcodec copies a packet's `pts` to its picture), so the caller
//! knows which frame each picture is whatever the decoder reorders or holds back. H.264 goes in
//! as Annex B, the container's parameter sets before the first frame, as it does to OpenH264.

use ffmpeg_next::codec::{self, threading};
use ffmpeg_next::format::Pixel;
use ffmpeg_next::{decoder, frame, Packet};

use super::h264::{annex_b_units, Framing};
use super::yuv::Yuv;
use crate::formats::es::h264_sps_size;
use crate::info::Codec;

/// The largest picture decoded: H.264 level 5.2's frame size, as for the other decoders.
const MAX_PIXELS: u64 = 4096 * 2304;

/// One libavcodec decoder.
pub(crate) struct FfDecoder {
    decoder: decoder::Video,
    picture: frame::Video,
    /// H.264 framing (`None` for VP8 and VP9).
    framing: Option<Framing>,
    /// The parameter sets still to go before the next frame (H.264 from MP4 or Matroska).
    sets_due: bool,
    annex_b: Vec<u8>,
}

impl FfDecoder {
    /// A decoder for `codec` (H.264 with its `avcC` record, VP8, VP9).
    pub(crate) fn new(codec: &Codec, config: Option<&[u8]>) -> Result<Self, String> {
        let id = match codec {
            Codec::H264 => codec::Id::H264,
            Codec::Vp8 => codec::Id::VP8,
            Codec::Vp9 => codec::Id::VP9,
            other => return Err(format!("no libavcodec decoder wired for {other}")),
        };
        let found =
            decoder::find(id).ok_or_else(|| format!("libavcodec has no {codec} decoder"))?;
        let mut context = codec::context::Context::new_with_codec(found);
        // One thread, as `ffmpeg -threads 1`: the analysis runs many decoders side by side.
        context.set_threading(threading::Config {
            kind: threading::Type::None,
            count: 1,
            ..threading::Config::default()
        });
        let framing = matches!(codec, Codec::H264).then(|| Framing::new(config));
        if framing
            .as_ref()
            .is_some_and(|f| oversized_sps(f.parameter_sets()))
        {
            return Err("the stream's SPS declares a picture over level 5.2's size".into());
        }
        let decoder = context.decoder().video().map_err(|e| e.to_string())?;
        Ok(FfDecoder {
            decoder,
            picture: frame::Video::empty(),
            sets_due: framing
                .as_ref()
                .is_some_and(|f| !f.parameter_sets().is_empty()),
            framing,
            annex_b: Vec::new(),
        })
    }

    /// The H.264 framing, for the header checks the caller makes before decoding.
    pub(crate) fn framing(&self) -> Option<&Framing> {
        self.framing.as_ref()
    }

    /// Sends one frame's bytes tagged `key`, then hands each picture that comes out to `out`
    /// with the key of its frame. `Err(())`: the decoder refused the frame (it is not decodable;
    /// later key frames decode again).
    pub(crate) fn decode(
        &mut self,
        data: &[u8],
        key: i64,
        out: &mut dyn FnMut(i64, &Yuv<'_>),
    ) -> Result<(), ()> {
        let mut packet = match &self.framing {
            Some(framing) => {
                let mut annex_b = std::mem::take(&mut self.annex_b);
                // libavcodec allows pictures up to 16384 px a side: an SPS declaring more than
                // the bound of the other decoders never reaches it.
                if !framing.to_annex_b(data, &mut annex_b) || oversized_sps(&annex_b) {
                    self.annex_b = annex_b;
                    return Err(());
                }
                let packet = if self.sets_due {
                    self.sets_due = false;
                    let mut first = framing.parameter_sets().to_vec();
                    first.extend_from_slice(&annex_b);
                    Packet::copy(&first)
                } else {
                    Packet::copy(&annex_b)
                };
                self.annex_b = annex_b;
                packet
            }
            None => Packet::copy(data),
        };
        packet.set_pts(Some(key));
        packet.set_dts(None);
        let sent = self.decoder.send_packet(&packet);
        self.drain(out);
        sent.map_err(|_| ())
    }

    /// The pictures still held at the end of the stream.
    pub(crate) fn flush(&mut self, out: &mut dyn FnMut(i64, &Yuv<'_>)) {
        if self.decoder.send_eof().is_ok() {
            self.drain(out);
        }
    }

    fn drain(&mut self, out: &mut dyn FnMut(i64, &Yuv<'_>)) {
        while self.decoder.receive_frame(&mut self.picture).is_ok() {
            let Some(key) = self.picture.pts() else {
                continue;
            };
            if let Some(yuv) = planes(&self.picture) {
                out(key, &yuv);
            }
        }
    }
}

/// Whether any SPS in `annex_b` declares a picture over [`MAX_PIXELS`] (or one whose size does
/// not parse).
fn oversized_sps(annex_b: &[u8]) -> bool {
    annex_b_units(annex_b)
        .filter(|nal| nal.first().is_some_and(|h| h & 0x1f == 7))
        .any(|nal| h264_sps_size(nal).is_none_or(|(w, h)| u64::from(w) * u64::from(h) > MAX_PIXELS))
}

/// An 8-bit planar YUV picture's planes; `None` for other formats (high bit depth, which
/// browsers do not send).
fn planes(picture: &frame::Video) -> Option<Yuv<'_>> {
    let (shift_x, shift_y, full_range) = match picture.format() {
        Pixel::YUV420P => (1, 1, false),
        Pixel::YUVJ420P => (1, 1, true),
        Pixel::YUV422P => (1, 0, false),
        Pixel::YUVJ422P => (1, 0, true),
        Pixel::YUV444P => (0, 0, false),
        Pixel::YUVJ444P => (0, 0, true),
        _ => return None,
    };
    if picture.planes() < 3 {
        return None;
    }
    Some(Yuv {
        width: picture.width() as usize,
        height: picture.height() as usize,
        y: picture.data(0),
        y_stride: picture.stride(0),
        u: picture.data(1),
        v: picture.data(2),
        uv_stride: picture.stride(1).min(picture.stride(2)),
        shift_x,
        shift_y,
        full_range,
    })
}
