//! H.264 to luma through OpenH264 (Cisco's decoder, compiled from the source bundled in the
//! `openh264` crate; no system library).
//!
//! MP4 and Matroska store H.264 as length-prefixed NAL units with the parameter sets in an
//! `avcC` record; OpenH264 reads Annex B (start-code delimited), so frames are rewritten before
//! decoding. MPEG-TS and AVI already carry Annex B.
//!
//! OpenH264 checks every SPS against the largest level's frame size (level 5.2: 36 864
//! macroblocks, e.g. 4096x2304), which bounds the memory one decoder can take.

use openh264::decoder::{Decoder, DecoderConfig, Flush};
use openh264::formats::YUVSource;
use openh264::OpenH264API;

use super::scale::Plane;
use super::yuv::{convert_with, Converted, Want, Yuv};
use super::Pic;
use crate::bytes::Cursor;

/// The Annex B start code put before each NAL unit.
const START_CODE: [u8; 4] = [0, 0, 0, 1];
/// `profile_idc` of the Baseline profiles, which have no B slices and so no reordering.
const PROFILE_BASELINE: u8 = 66;

/// Why a frame gave no picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameError {
    /// The bytes do not form NAL units, or the decoder rejected them.
    Corrupt,
}

/// How an H.264 stream's frames are framed: length-prefixed NAL units with the parameter sets in
/// an `avcC` record (MP4, Matroska), or Annex B (MPEG-TS, AVI). Shared by the OpenH264 decoder and
/// the `ffmpeg` feature's, which both read Annex B.
#[derive(Debug, Clone, Default)]
pub(crate) struct Framing {
    /// Bytes of each NAL length prefix (from `avcC`); `None` for Annex B input.
    length_size: Option<usize>,
    /// The `avcC` parameter sets as Annex B, fed first and again after a reset.
    parameter_sets: Vec<u8>,
}

impl Framing {
    /// The framing of a stream with this `avcC` record (`None`: Annex B with in-band parameter
    /// sets). A record that does not parse still selects length-prefixed framing, with 4-byte
    /// lengths as every muxer writes.
    pub(crate) fn new(config: Option<&[u8]>) -> Self {
        let (length_size, parameter_sets) = match config {
            Some(record) => {
                parse_avcc(record).map_or((Some(4), Vec::new()), |(n, ps)| (Some(n), ps))
            }
            None => (None, Vec::new()),
        };
        Framing {
            length_size,
            parameter_sets,
        }
    }

    /// The container's parameter sets as Annex B (empty for Annex B streams).
    pub(crate) fn parameter_sets(&self) -> &[u8] {
        &self.parameter_sets
    }

    /// Rewrites one access unit as Annex B into `out` (cleared first); `false` when its bytes
    /// are neither framing.
    pub(crate) fn to_annex_b(&self, data: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        // A length prefix can itself look like a start code (00 00 01 xx is a length of
        // 256-511), so the declared framing is tried first and Annex B only when it fails.
        let mut framed = match self.length_size {
            Some(n) => length_prefixed_to_annex_b(data, n, out),
            None => false,
        };
        if !framed && (self.length_size.is_none() || looks_like_annex_b(data)) {
            out.clear();
            out.extend_from_slice(data);
            framed = true;
        }
        framed
    }

    /// Whether an access unit holds an IDR slice (a point where decoding can restart).
    pub(crate) fn is_idr(&self, data: &[u8]) -> bool {
        let mut annex_b = Vec::new();
        let framed = match self.length_size {
            Some(n) => length_prefixed_to_annex_b(data, n, &mut annex_b),
            None => false,
        };
        let units = if framed { &annex_b[..] } else { data };
        let idr = annex_b_units(units).any(|nal| nal.first().is_some_and(|h| h & 0x1f == 5));
        idr
    }

    /// Whether an access unit is disposable: every slice in it has `nal_ref_idc` 0 (H.264
    /// 7.4.1), so no other picture predicts from it and leaving it undecoded changes no other
    /// picture (non-reference pictures carry no reference marking and do not advance
    /// `frame_num`). A unit that also carries parameter sets, or holds no slice, is not.
    pub(crate) fn is_disposable(&self, data: &[u8]) -> bool {
        let mut slices = 0usize;
        let mut disposable = true;
        let mut look = |header: u8| match header & 0x1f {
            // Non-IDR slice and data partitions A-C.
            1..=4 => {
                slices += 1;
                disposable &= header & 0x60 == 0;
            }
            // IDR slices, SPS, PPS, SPS extension, subset SPS: always needed.
            5 | 7 | 8 | 13 | 15 => disposable = false,
            _ => {}
        };
        match self.length_size {
            // A frame whose lengths do not add up is decoded as usual (`decode` then tries
            // it as Annex B): never skip what was not read.
            Some(n) => {
                if !length_prefixed_headers(data, n, &mut look) {
                    return false;
                }
            }
            None => annex_b_units(data).for_each(|nal| {
                if let Some(&h) = nal.first() {
                    look(h);
                }
            }),
        }
        disposable && slices > 0
    }
}

/// One H.264 decoder with the framing of its stream.
pub(crate) struct H264Decoder {
    decoder: Decoder,
    framing: Framing,
    /// Whether the last SPS seen is Baseline: pictures then come out in decode order.
    reorder_free: bool,
    /// The current frame rewritten as Annex B (kept to reuse its allocation).
    annex_b: Vec<u8>,
}

impl H264Decoder {
    /// A decoder for a stream with this `avcC` record (`None`: Annex B with in-band parameter
    /// sets). A record that does not parse still selects length-prefixed framing, with 4-byte
    /// lengths as every muxer writes.
    pub(crate) fn new(config: Option<&[u8]>) -> Result<Self, openh264::Error> {
        let mut this = Self {
            decoder: new_decoder()?,
            framing: Framing::new(config),
            reorder_free: false,
            annex_b: Vec::new(),
        };
        this.reorder_free = baseline_sps(this.framing.parameter_sets()).unwrap_or(false);
        this.feed_parameter_sets();
        Ok(this)
    }

    /// Whether pictures come out in the order frames go in (no B slices in the stream).
    pub(crate) fn reorder_free(&self) -> bool {
        self.reorder_free
    }

    /// Decodes one access unit; the picture it completes, if any, is converted when `want` is
    /// set, its RGB when `keep_rgb` says so ([`convert_with`]).
    pub(crate) fn decode(
        &mut self,
        data: &[u8],
        want: Option<Want>,
        keep_rgb: &mut dyn FnMut(&mut Plane) -> bool,
    ) -> Result<Pic, FrameError> {
        let mut annex_b = std::mem::take(&mut self.annex_b);
        let framed = self.framing.to_annex_b(data, &mut annex_b);
        let result = if framed {
            self.note_sps(&annex_b);
            self.decode_annex_b(&annex_b, want, keep_rgb)
        } else {
            Err(FrameError::Corrupt)
        };
        self.annex_b = annex_b;
        result
    }

    /// Pictures still held by the decoder at the end of the stream, in order, each converted by
    /// `convert_next` (`None`: not wanted, or not convertible).
    pub(crate) fn flush(
        &mut self,
        mut convert_next: impl FnMut(&Yuv<'_>) -> Option<Converted>,
    ) -> Vec<Option<Converted>> {
        let decoder = &mut self.decoder;
        crate::guard::catch(|| match decoder.flush_remaining() {
            Ok(pictures) => pictures
                .iter()
                .map(|p| convert_next(&picture_yuv(p)))
                .collect(),
            Err(_) => Vec::new(),
        })
        .unwrap_or_default()
    }

    /// Whether an access unit holds an IDR slice (a point where decoding can restart).
    pub(crate) fn is_idr(&self, data: &[u8]) -> bool {
        self.framing.is_idr(data)
    }

    /// Whether an access unit is disposable ([`Framing::is_disposable`]).
    pub(crate) fn is_disposable(&self, data: &[u8]) -> bool {
        self.framing.is_disposable(data)
    }

    fn decode_annex_b(
        &mut self,
        annex_b: &[u8],
        want: Option<Want>,
        keep_rgb: &mut dyn FnMut(&mut Plane) -> bool,
    ) -> Result<Pic, FrameError> {
        let decoder = &mut self.decoder;
        let outcome = crate::guard::catch(|| match decoder.decode(annex_b) {
            Ok(Some(picture)) => {
                let (w, h) = picture.dimensions();
                match want {
                    Some(want) => convert_with(&picture_yuv(&picture), want, keep_rgb)
                        .map(|c| Pic::Out(w * h, Some(c)))
                        .ok_or(FrameError::Corrupt),
                    None => Ok(Pic::Out(w * h, None)),
                }
            }
            Ok(None) => Ok(Pic::Held),
            Err(_) => Err(FrameError::Corrupt),
        });
        match outcome {
            Ok(result) => result,
            Err(_) => {
                // A panic in the wrapper leaves the decoder in an unknown state: start afresh
                // (the next keyframe decodes again).
                if let Ok(fresh) = new_decoder() {
                    self.decoder = fresh;
                    self.feed_parameter_sets();
                }
                Err(FrameError::Corrupt)
            }
        }
    }

    fn feed_parameter_sets(&mut self) {
        if self.framing.parameter_sets().is_empty() {
            return;
        }
        let (decoder, sets) = (&mut self.decoder, self.framing.parameter_sets());
        // Parameter sets alone complete no picture; a broken set shows up as failing frames.
        let _ = crate::guard::catch(|| decoder.decode(sets).map(|p| p.is_some()));
    }

    /// Records whether the stream is Baseline from any SPS in `annex_b`.
    fn note_sps(&mut self, annex_b: &[u8]) {
        if let Some(baseline) = baseline_sps(annex_b) {
            self.reorder_free = baseline;
        }
    }
}

/// Whether the last SPS in `annex_b` is Baseline; `None` without an SPS.
fn baseline_sps(annex_b: &[u8]) -> Option<bool> {
    annex_b_units(annex_b)
        .filter_map(|nal| match nal {
            [header, profile, ..] if header & 0x1f == 7 => Some(*profile == PROFILE_BASELINE),
            _ => None,
        })
        .last()
}

fn new_decoder() -> Result<Decoder, openh264::Error> {
    // The wrapper's default flushes the reorder buffer after every access unit, which breaks
    // streams with B-frames (High and Main profile, what cameras and libx264 write): every frame
    // after the first few then fails. Pictures leave in order instead, and `flush` takes the
    // last ones at the end.
    let config = DecoderConfig::new().flush_after_decode(Flush::NoFlush);
    Decoder::with_api_config(OpenH264API::from_source(), config)
}

/// A decoded picture's planes (OpenH264 gives 8-bit 4:2:0, studio range).
fn picture_yuv(picture: &impl YUVSource) -> Yuv<'_> {
    let (width, height) = picture.dimensions();
    let (y_stride, u_stride, v_stride) = picture.strides();
    Yuv {
        width,
        height,
        y: picture.y(),
        y_stride,
        u: picture.u(),
        v: picture.v(),
        uv_stride: u_stride.min(v_stride),
        shift_x: 1,
        shift_y: 1,
        full_range: false,
    }
}

/// Length size and Annex B parameter sets of an `AVCDecoderConfigurationRecord`
/// (ISO 14496-15 5.3.3.1).
fn parse_avcc(record: &[u8]) -> Option<(usize, Vec<u8>)> {
    let mut c = Cursor::new(record);
    if c.u8()? != 1 {
        return None;
    }
    c.skip(3)?;
    let length_size = usize::from(c.u8()? & 0x3) + 1;
    let mut sets = Vec::new();
    let sps_count = c.u8()? & 0x1f;
    for _ in 0..sps_count {
        let len = usize::from(c.u16_be()?);
        sets.extend_from_slice(&START_CODE);
        sets.extend_from_slice(c.take(len)?);
    }
    let pps_count = c.u8()?;
    for _ in 0..pps_count {
        let len = usize::from(c.u16_be()?);
        sets.extend_from_slice(&START_CODE);
        sets.extend_from_slice(c.take(len)?);
    }
    Some((length_size, sets))
}

/// Calls `each` with every length-prefixed NAL unit of `data` in order; `false` when a length
/// runs past the frame (the units before it have been passed).
fn for_each_length_prefixed<'a>(
    data: &'a [u8],
    length_size: usize,
    mut each: impl FnMut(&'a [u8]),
) -> bool {
    let mut c = Cursor::new(data);
    while !c.is_empty() {
        let Some(prefix) = c.take(length_size) else {
            return false;
        };
        let len = prefix
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        let Some(nal) = c.take(len) else {
            return false;
        };
        each(nal);
    }
    true
}

/// Rewrites length-prefixed NAL units as Annex B into `out`; `false` when a length runs past
/// the frame.
fn length_prefixed_to_annex_b(data: &[u8], length_size: usize, out: &mut Vec<u8>) -> bool {
    for_each_length_prefixed(data, length_size, |nal| {
        out.extend_from_slice(&START_CODE);
        out.extend_from_slice(nal);
    }) && !out.is_empty()
}

/// Passes the header byte of each length-prefixed NAL unit to `look`; `false` when a length
/// runs past the frame (some headers may have been passed) or there is no unit.
fn length_prefixed_headers(data: &[u8], length_size: usize, mut look: impl FnMut(u8)) -> bool {
    let mut any = false;
    for_each_length_prefixed(data, length_size, |nal| {
        if let Some(&h) = nal.first() {
            look(h);
            any = true;
        }
    }) && any
}

/// Whether a frame already starts with an Annex B start code (some muxers store Annex B in
/// MP4 or Matroska despite the `avcC`).
fn looks_like_annex_b(data: &[u8]) -> bool {
    data.starts_with(&[0, 0, 0, 1]) || data.starts_with(&[0, 0, 1])
}

/// The NAL units of an Annex B buffer, each from its header byte (a unit may keep the zero
/// byte of a following 4-byte start code, which no caller here reads).
pub(crate) fn annex_b_units(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let find = |from: usize| {
        data.get(from..)?
            .windows(3)
            .position(|w| w == [0, 0, 1])
            .map(|p| p + from)
    };
    let mut next = find(0);
    std::iter::from_fn(move || {
        let start = next? + 3;
        next = find(start);
        data.get(start..next.unwrap_or(data.len()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_avcc_record_yields_its_length_size_and_parameter_sets() {
        let record = [
            1, 66, 0xc0, 30, 0xff, 0xe1, 0, 3, 0x67, 66, 0xaa, 1, 0, 2, 0x68, 0xbb,
        ];
        let (n, sets) = parse_avcc(&record).unwrap();
        assert_eq!(n, 4);
        assert_eq!(sets, [0, 0, 0, 1, 0x67, 66, 0xaa, 0, 0, 0, 1, 0x68, 0xbb]);
    }

    #[test]
    fn length_prefixes_become_start_codes_and_overruns_are_refused() {
        let mut out = Vec::new();
        assert!(length_prefixed_to_annex_b(
            &[0, 0, 0, 2, 0x65, 9, 0, 0, 0, 1, 0x41],
            4,
            &mut out
        ));
        assert_eq!(out, [0, 0, 0, 1, 0x65, 9, 0, 0, 0, 1, 0x41]);
        out.clear();
        assert!(!length_prefixed_to_annex_b(
            &[0, 0, 0, 9, 0x65],
            4,
            &mut out
        ));
    }

    #[test]
    fn only_access_units_of_non_reference_slices_are_disposable() {
        let annex_b = H264Decoder::new(None).unwrap();
        // A non-reference P/B slice (nal_ref_idc 0, type 1), with an SEI and an AUD beside it.
        assert!(
            annex_b.is_disposable(&[0, 0, 0, 1, 0x09, 0xf0, 0, 0, 1, 0x06, 5, 0, 0, 1, 0x01, 0x9a])
        );
        // A reference slice (nal_ref_idc 2), an IDR slice, parameter sets, no slice at all.
        assert!(!annex_b.is_disposable(&[0, 0, 1, 0x41, 0x9a]));
        assert!(!annex_b.is_disposable(&[0, 0, 1, 0x01, 0x9a, 0, 0, 1, 0x41, 0x9a]));
        assert!(!annex_b.is_disposable(&[0, 0, 1, 0x65, 0x88]));
        assert!(!annex_b.is_disposable(&[0, 0, 1, 0x67, 66, 0, 0, 1, 0x01, 0x9a]));
        assert!(!annex_b.is_disposable(&[0, 0, 1, 0x09, 0xf0]));
        // The same units length-prefixed, as MP4 stores them.
        let mp4 = H264Decoder::new(Some(&[1, 100, 0, 30, 0xff, 0xe0, 0])).unwrap();
        assert!(mp4.is_disposable(&[0, 0, 0, 2, 0x01, 0x9a]));
        assert!(!mp4.is_disposable(&[0, 0, 0, 2, 0x21, 0x9a]));
        assert!(!mp4.is_disposable(&[0, 0, 0, 2, 0x01, 0x9a, 0, 0, 0, 2, 0x61, 0x9a]));
    }

    #[test]
    fn a_baseline_sps_marks_the_stream_reorder_free() {
        let units: Vec<&[u8]> =
            annex_b_units(&[0, 0, 0, 1, 0x67, 66, 1, 0, 0, 1, 0x68, 5]).collect();
        assert_eq!(units, [&[0x67, 66, 1][..], &[0x68, 5][..]]);
        let mut baseline = H264Decoder::new(None).unwrap();
        baseline.note_sps(&[0, 0, 1, 0x67, 66, 0xc0]);
        assert!(baseline.reorder_free());
        baseline.note_sps(&[0, 0, 1, 0x67, 100, 0]);
        assert!(!baseline.reorder_free());
    }
}
