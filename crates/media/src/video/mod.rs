//! Decoded video: downscaled luma (Y) frames for the motion measures, from whole files
//! ([`decode_luma`], [`decode_luma_each`]) or one encoded frame at a time ([`LumaDecoder`]).
//!
//! Which codecs give pixels (only decoders that build from crates.io alone, with no system
//! library, are used):
//!
//! | codec | pixels | decoder |
//! |---|---|---|
//! | H.264 / AVC | yes | OpenH264, built from the source bundled in the `openh264` crate (C++, compiled with `cc`; assembly only when `nasm` is installed) |
//! | Motion JPEG | yes | `zune-jpeg` (pure Rust), decoding straight to luma |
//! | VP8, VP9, MPEG-4 Part 2, MPEG-1/2 video, H.265, AV1 | no | none: [`PixelSupport::NoPixelDecoder`] |
//!
//! Streams without a pixel decoder are not an error: their frame timing, encoded sizes and
//! keyframe flags still come from [`crate::video_frames`], which is what motion measures fall
//! back on.
//!
//! Frames are downscaled as they come out of the decoder to at most `target_width` pixels across
//! (aspect ratio kept, never upscaled) by area averaging ([`DEFAULT_LUMA_WIDTH`] is what the
//! analyzer uses). Each [`LumaFrame`] carries the presentation time of the encoded frame it came
//! from, on the same media clock as [`crate::video_frames`] and the decoded audio.
//!
//! Untrusted input: a frame that does not decode (corrupt bytes, a reference frame missing
//! after one that did not decode, data cut off by truncation) is skipped and counted, never a
//! panic (panics inside the decoder wrappers are caught); picture sizes are bounded (OpenH264
//! refuses an SPS above level 5.2's frame size, JPEG frames above 4096 px a side are refused);
//! [`decode_luma`] keeps at most [`MAX_LUMA_BYTES`] of planes, and [`decode_luma_each`] and
//! [`LumaDecoder`] keep none.

mod encoded;
mod h264;
mod mjpeg;
mod scale;

use std::fmt;
use std::ops::ControlFlow;

pub use encoded::{EncodedVideo, EncodedVideoFrame};

use crate::error::MediaError;
use crate::info::Codec;

/// The width the analyzer downscales luma frames to, in pixels.
pub const DEFAULT_LUMA_WIDTH: u32 = 160;

/// The most luma bytes [`decode_luma`] keeps (256 MiB: about 5 hours of 160x90 frames at
/// 10 fps, or 10 minutes at 30 fps).
pub const MAX_LUMA_BYTES: usize = 256 << 20;

/// Pictures a decoder may hold back (for reordering) before the oldest pending frame is given
/// up as lost; H.264 never needs more than 16.
const MAX_PENDING: usize = 16;

/// Whether this build decodes `codec` to pixels (H.264 and Motion JPEG).
pub fn has_pixel_decoder(codec: &Codec) -> bool {
    matches!(codec, Codec::H264 | Codec::Mjpeg)
}

/// The first video track of `bytes` frame by frame with each frame's bytes, in decode order,
/// with the codec configuration the container stores (`avcC` for H.264 in MP4/Matroska); `None`
/// when the input has no video. The presented frames and their times are those of
/// [`crate::video_frames`].
///
/// Errors: those of [`crate::probe`]'s parsing.
pub fn encoded_video(bytes: &[u8]) -> Result<Option<EncodedVideo>, MediaError> {
    crate::MediaFile::open(bytes)?.encoded_video()
}

/// One decoded frame: a downscaled luma plane.
#[derive(Debug, Clone, PartialEq)]
pub struct LumaFrame {
    /// Presentation time in seconds on the media clock, as [`crate::video_frames`] gives it.
    pub pts: f64,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width * height` luma values as the codec stores them (studio range, 16-235, for most
    /// video; full range for JPEG), row by row, top row first.
    pub data: Vec<u8>,
}

/// Whether an input's video could be decoded to pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PixelSupport {
    /// The codec has a decoder here; the frames carry luma planes.
    Decoded,
    /// The video track's codec has no pixel decoder in this build (VP8, VP9, MPEG-4 Part 2,
    /// MPEG-2, ...). Not an error: timing and encoded sizes come from [`crate::video_frames`].
    NoPixelDecoder(Codec),
    /// The input has no video track.
    NoVideo,
}

/// What a whole-file luma decode did, without the frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LumaSummary {
    /// Whether pixels were available at all.
    pub pixels: PixelSupport,
    /// Presented frames decoded.
    pub decoded: usize,
    /// Frames that did not decode (corrupt, missing their reference, or cut off) and were
    /// skipped.
    pub skipped: usize,
}

/// The luma frames of a whole input, from [`decode_luma`].
#[derive(Debug, Clone, PartialEq)]
pub struct LumaVideo {
    /// Whether pixels were available at all; without them `frames` is empty.
    pub pixels: PixelSupport,
    /// The decoded frames in presentation order.
    pub frames: Vec<LumaFrame>,
    /// Frames that did not decode and were skipped.
    pub skipped: usize,
    /// Whether decoding stopped at [`MAX_LUMA_BYTES`] before the end of the video.
    pub truncated: bool,
}

/// Decodes the first video track of `bytes` to luma frames at most `target_width` pixels
/// across, keeping them all (up to [`MAX_LUMA_BYTES`]; past it decoding stops and
/// [`LumaVideo::truncated`] is set). For long media prefer [`decode_luma_each`], which keeps
/// none.
///
/// A codec without a pixel decoder, or an input without video, is not an error: the result says
/// so in [`LumaVideo::pixels`] and holds no frames.
///
/// Errors: those of [`crate::probe`]'s parsing.
pub fn decode_luma(bytes: &[u8], target_width: u32) -> Result<LumaVideo, MediaError> {
    let mut frames = Vec::new();
    let mut kept = 0usize;
    let mut truncated = false;
    let summary = run(bytes, target_width, |frame| {
        kept += frame.data.len();
        if kept > MAX_LUMA_BYTES {
            truncated = true;
            return ControlFlow::Break(());
        }
        frames.push(frame);
        ControlFlow::Continue(())
    })?;
    frames.sort_by(|a, b| a.pts.total_cmp(&b.pts));
    Ok(LumaVideo {
        pixels: summary.pixels,
        frames,
        skipped: summary.skipped,
        truncated,
    })
}

/// Decodes the first video track of `bytes` like [`decode_luma`], handing each frame to
/// `on_frame` as it comes out of the decoder (in presentation order) instead of keeping it.
///
/// Errors: those of [`crate::probe`]'s parsing.
pub fn decode_luma_each(
    bytes: &[u8],
    target_width: u32,
    mut on_frame: impl FnMut(LumaFrame),
) -> Result<LumaSummary, MediaError> {
    run(bytes, target_width, |frame| {
        on_frame(frame);
        ControlFlow::Continue(())
    })
}

fn run(
    bytes: &[u8],
    target_width: u32,
    mut on_frame: impl FnMut(LumaFrame) -> ControlFlow<()>,
) -> Result<LumaSummary, MediaError> {
    let Some(video) = encoded_video(bytes)? else {
        return Ok(LumaSummary {
            pixels: PixelSupport::NoVideo,
            decoded: 0,
            skipped: 0,
        });
    };
    let mut decoder = match LumaDecoder::new(&video.codec, video.config.as_deref(), target_width) {
        Ok(d) => d,
        Err(e) => {
            return Ok(LumaSummary {
                pixels: PixelSupport::NoPixelDecoder(e.codec),
                decoded: 0,
                skipped: 0,
            })
        }
    };
    let mut decoded = 0usize;
    let mut stopped = false;
    for frame in &video.frames {
        if let Some(luma) = decoder.decode_frame(frame) {
            decoded += 1;
            if on_frame(luma).is_break() {
                stopped = true;
                break;
            }
        }
    }
    if !stopped {
        for luma in decoder.finish() {
            decoded += 1;
            if on_frame(luma).is_break() {
                break;
            }
        }
    }
    Ok(LumaSummary {
        pixels: PixelSupport::Decoded,
        decoded,
        skipped: decoder.skipped(),
    })
}

/// Why [`LumaDecoder::new`] has no decoder for a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoPixelDecoder {
    /// The stream's codec.
    pub codec: Codec,
    /// Why, for logs.
    pub reason: String,
}

impl fmt::Display for NoPixelDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no pixel decoder for {}: {}", self.codec, self.reason)
    }
}

impl std::error::Error for NoPixelDecoder {}

enum Inner {
    H264(Box<h264::H264Decoder>),
    Jpeg,
}

/// An incremental luma decoder, fed one encoded frame at a time (a file's frames from
/// [`encoded_video`], or a live reader's as they arrive).
///
/// Frames go in in decode order; pictures come out in presentation order, each stamped with
/// the time of the frame it came from. For H.264 with B-frames a picture can come out a few
/// frames after its own; [`finish`](Self::finish) returns those still held at the end.
pub struct LumaDecoder {
    inner: Inner,
    target_width: usize,
    /// Frames fed whose picture has not come out yet: (pts, presented).
    pending: Vec<(f64, bool)>,
    skipped: usize,
}

impl fmt::Debug for LumaDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LumaDecoder")
            .field("codec", &self.codec_name())
            .field("target_width", &self.target_width)
            .field("pending", &self.pending.len())
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl LumaDecoder {
    /// A decoder for a stream of `codec` with the container's codec configuration `config`
    /// (H.264: the `avcC` record from MP4/Matroska, frames then being length-prefixed; `None`
    /// for Annex B streams as in MPEG-TS and AVI), giving frames at most `target_width` pixels
    /// across.
    ///
    /// Errors: [`NoPixelDecoder`] for a codec this build has no pixel decoder for (see the
    /// module docs).
    pub fn new(
        codec: &Codec,
        config: Option<&[u8]>,
        target_width: u32,
    ) -> Result<Self, NoPixelDecoder> {
        let inner = match codec {
            Codec::H264 => Inner::H264(Box::new(h264::H264Decoder::new(config).map_err(|e| {
                NoPixelDecoder {
                    codec: codec.clone(),
                    reason: format!("OpenH264 did not start: {e}"),
                }
            })?)),
            Codec::Mjpeg => Inner::Jpeg,
            other => {
                return Err(NoPixelDecoder {
                    codec: other.clone(),
                    reason: "this build decodes only H.264 and Motion JPEG to pixels".into(),
                })
            }
        };
        Ok(Self {
            inner,
            target_width: usize::try_from(target_width.max(1)).unwrap_or(usize::MAX),
            pending: Vec::new(),
            skipped: 0,
        })
    }

    /// Decodes one presented frame shown at `pts` seconds; returns the picture that comes out,
    /// if any (`None` also for a frame that did not decode, which is counted in
    /// [`skipped`](Self::skipped)).
    pub fn decode(&mut self, pts: f64, data: &[u8]) -> Option<LumaFrame> {
        self.feed(pts, true, data)
    }

    /// Decodes one frame of an [`EncodedVideo`]; frames that are not presented are decoded (later
    /// frames may need them) but give no picture.
    pub fn decode_frame(&mut self, frame: &EncodedVideoFrame) -> Option<LumaFrame> {
        self.feed(frame.pts, frame.presented, &frame.data)
    }

    /// The pictures the decoder still holds at the end of the stream.
    pub fn finish(&mut self) -> Vec<LumaFrame> {
        let Inner::H264(decoder) = &mut self.inner else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for plane in decoder.flush(self.target_width) {
            let Some((pts, presented)) = pop_earliest(&mut self.pending) else {
                break;
            };
            if presented {
                out.push(frame_at(pts, plane));
            }
        }
        self.skipped += self.pending.len();
        self.pending.clear();
        out
    }

    /// Frames that did not decode so far.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    fn codec_name(&self) -> &'static str {
        match self.inner {
            Inner::H264(_) => "h264",
            Inner::Jpeg => "mjpeg",
        }
    }

    fn feed(&mut self, pts: f64, presented: bool, data: &[u8]) -> Option<LumaFrame> {
        // A frame without a usable time is decoded (others may need it) but never shown.
        let presented = presented && pts.is_finite();
        if data.is_empty() {
            self.skipped += 1;
            return None;
        }
        match &mut self.inner {
            Inner::Jpeg => match mjpeg::decode(data, self.target_width) {
                Some(plane) => presented.then(|| frame_at(pts, plane)),
                None => {
                    self.skipped += 1;
                    None
                }
            },
            Inner::H264(decoder) => match decoder.decode(data, self.target_width) {
                Err(h264::FrameError::Corrupt) => {
                    self.skipped += 1;
                    None
                }
                Ok(None) => {
                    self.pending.push((pts, presented));
                    if self.pending.len() > MAX_PENDING {
                        pop_earliest(&mut self.pending);
                        self.skipped += 1;
                    }
                    None
                }
                Ok(Some(plane)) => {
                    let (pts, shown) = if decoder.reorder_free() {
                        // Without reordering the picture is this frame's; anything still
                        // pending never produced one.
                        self.skipped += self.pending.len();
                        self.pending.clear();
                        (pts, presented)
                    } else {
                        // Pictures leave in presentation order: this one is the earliest of the
                        // frames fed and not yet out.
                        self.pending.push((pts, presented));
                        pop_earliest(&mut self.pending)?
                    };
                    shown.then(|| frame_at(pts, plane))
                }
            },
        }
    }
}

fn pop_earliest(pending: &mut Vec<(f64, bool)>) -> Option<(f64, bool)> {
    let (i, _) = pending
        .iter()
        .enumerate()
        .min_by(|(_, a), (_, b)| a.0.total_cmp(&b.0))?;
    Some(pending.swap_remove(i))
}

fn frame_at(pts: f64, plane: scale::Plane) -> LumaFrame {
    LumaFrame {
        pts,
        width: plane.width,
        height: plane.height,
        data: plane.data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_without_a_pixel_decoder_are_named() {
        for codec in [Codec::Vp8, Codec::Vp9, Codec::Mpeg4Part2, Codec::Mpeg2Video] {
            let err = LumaDecoder::new(&codec, None, 160).unwrap_err();
            assert_eq!(err.codec, codec);
            assert!(!has_pixel_decoder(&codec));
        }
        assert!(has_pixel_decoder(&Codec::H264) && has_pixel_decoder(&Codec::Mjpeg));
    }

    #[test]
    fn a_decoder_can_move_to_another_thread() {
        fn send<T: Send>(_: &T) {}
        send(&LumaDecoder::new(&Codec::H264, None, 160).unwrap());
    }

    #[test]
    fn empty_and_garbage_frames_are_counted_not_decoded() {
        let mut d = LumaDecoder::new(&Codec::H264, None, 160).unwrap();
        assert!(d.decode(0.0, &[]).is_none());
        assert!(d
            .decode(0.1, &[0, 0, 0, 1, 0x65, 0xff, 0x00, 0x13])
            .is_none());
        let _ = d.finish();
        assert!(d.skipped() >= 1);
        let mut j = LumaDecoder::new(&Codec::Mjpeg, None, 160).unwrap();
        assert!(j.decode(0.0, b"garbage").is_none());
        assert_eq!(j.skipped(), 1);
    }
}
