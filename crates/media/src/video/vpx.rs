//! VP8 and VP9 (browser WebM) to pixels, both in pure Rust so `cargo build` needs nothing
//! beyond the toolchain: VP9 through `rusty_vp9` (checked bit-exact against libvpx's 315
//! conformance vectors by its authors), VP8 through `oximedia-codec`'s RFC 6386 decoder (its
//! `vp8` feature only). Neither reorders: each frame gives at most one picture, its own; a
//! hidden frame (VP8 alt-ref, VP9 superframe layers) gives none.
//!
//! Picture sizes are checked on the frame header before the decoder allocates anything: a
//! frame declaring more than [`MAX_PIXELS`] is refused (the bitstreams allow 16383x16383 and
//! 65536x65536, gigabytes of planes).

use oximedia_codec::traits::{DecoderConfig, VideoDecoder as _};
use oximedia_codec::vp8::Vp8Decoder;
use rusty_vp9::{BitReader, Vp9Decoder};

use super::scale::Plane;
use super::yuv::{convert_with, Want, Yuv};
use super::Pic;

/// The largest picture decoded: H.264 level 5.2's frame size (4096x2304), the bound OpenH264
/// applies too.
const MAX_PIXELS: u64 = 4096 * 2304;

/// One VP8 or VP9 decoder.
pub(crate) enum VpxDecoder {
    Vp8(Box<Vp8Decoder>),
    Vp9(Box<Vp9Decoder>),
}

impl VpxDecoder {
    pub(crate) fn vp8() -> Result<Self, String> {
        Vp8Decoder::new(DecoderConfig::default())
            .map(|d| Self::Vp8(Box::new(d)))
            .map_err(|e| e.to_string())
    }

    pub(crate) fn vp9() -> Self {
        Self::Vp9(Box::new(Vp9Decoder::new()))
    }

    /// Decodes one frame; the picture it shows is converted when `want` is set, its RGB when
    /// `keep_rgb` says so ([`convert_with`]). `Err(())`: the frame did not decode (the decoder
    /// is reset after a panic; the next key frame decodes).
    pub(crate) fn decode(
        &mut self,
        data: &[u8],
        want: Option<Want>,
        keep_rgb: &mut dyn FnMut(&mut Plane) -> bool,
    ) -> Result<Pic, ()> {
        let outcome = match self {
            Self::Vp8(d) => {
                if vp8_too_large(data) {
                    return Err(());
                }
                crate::guard::catch(|| decode_vp8(d, data, want, keep_rgb))
            }
            Self::Vp9(d) => {
                if vp9_too_large(data) {
                    return Err(());
                }
                crate::guard::catch(|| decode_vp9(d, data, want, keep_rgb))
            }
        };
        match outcome {
            Ok(result) => result,
            Err(_) => {
                *self = match self {
                    Self::Vp8(_) => Self::vp8().map_err(|_| ())?,
                    Self::Vp9(_) => Self::vp9(),
                };
                Err(())
            }
        }
    }
}

fn decode_vp8(
    d: &mut Vp8Decoder,
    data: &[u8],
    want: Option<Want>,
    keep_rgb: &mut dyn FnMut(&mut Plane) -> bool,
) -> Result<Pic, ()> {
    d.send_packet(data, 0).map_err(|_| ())?;
    let mut out = Pic::Held;
    // One packet queues at most one frame; drain whatever is there so none piles up.
    while let Ok(Some(frame)) = d.receive_frame() {
        let [y, u, v] = &frame.planes[..] else {
            return Err(());
        };
        out = Pic::Out(
            frame.width as usize * frame.height as usize,
            match want {
                None => None,
                Some(want) => Some(
                    convert_with(
                        &Yuv {
                            width: frame.width as usize,
                            height: frame.height as usize,
                            y: &y.data,
                            y_stride: y.stride,
                            u: &u.data,
                            v: &v.data,
                            uv_stride: u.stride.min(v.stride),
                            shift_x: 1,
                            shift_y: 1,
                            full_range: false,
                        },
                        want,
                        keep_rgb,
                    )
                    .ok_or(())?,
                ),
            },
        );
    }
    Ok(out)
}

fn decode_vp9(
    d: &mut Vp9Decoder,
    data: &[u8],
    want: Option<Want>,
    keep_rgb: &mut dyn FnMut(&mut Plane) -> bool,
) -> Result<Pic, ()> {
    d.push(data, None).map_err(|_| ())?;
    let mut shown = None;
    let mut failed = false;
    // A superframe holds up to 8 frames; each call decodes one, returning the picture when it
    // is shown. Past the queue's end the calls return `Again` at once.
    for _ in 0..8 {
        match d.next_frame() {
            Ok(frame) => shown = Some(frame),
            Err(rusty_vp9::Error::Again) => {}
            Err(_) => failed = true,
        }
    }
    let Some(frame) = shown else {
        return if failed { Err(()) } else { Ok(Pic::Held) };
    };
    let pixels = frame.width as usize * frame.height as usize;
    let Some(want) = want else {
        return Ok(Pic::Out(pixels, None));
    };
    // High bit depth (profiles 2 and 3) comes as 16-bit samples: not what a browser sends, and
    // not worth a second conversion path.
    if frame.bit_depth != 8 || frame.planes.len() < 3 || frame.strides.len() < 3 {
        return Err(());
    }
    let pic = Yuv {
        width: frame.width as usize,
        height: frame.height as usize,
        y: &frame.planes[0],
        y_stride: frame.strides[0],
        u: &frame.planes[1],
        v: &frame.planes[2],
        uv_stride: frame.strides[1].min(frame.strides[2]),
        shift_x: frame.subsampling_x.min(1),
        shift_y: frame.subsampling_y.min(1),
        full_range: false,
    };
    convert_with(&pic, want, keep_rgb)
        .map(|c| Pic::Out(pixels, Some(c)))
        .ok_or(())
}

/// Whether a VP8 key frame declares a picture over [`MAX_PIXELS`] (RFC 6386 9.1: a 3-byte
/// tag, the start code, then 14-bit width and height).
pub(crate) fn vp8_too_large(data: &[u8]) -> bool {
    let key = data.first().is_some_and(|b| b & 1 == 0);
    match data.get(6..10) {
        Some(&[w0, w1, h0, h1]) if key => {
            let w = u64::from(u16::from_le_bytes([w0, w1]) & 0x3fff);
            let h = u64::from(u16::from_le_bytes([h0, h1]) & 0x3fff);
            w * h > MAX_PIXELS
        }
        _ => false,
    }
}

/// Whether a VP9 frame's header declares a picture over [`MAX_PIXELS`] (sizes taken from a
/// reference frame read as 0 here; the key frame that set that reference was checked).
pub(crate) fn vp9_too_large(data: &[u8]) -> bool {
    let mut r = BitReader::new(data);
    match rusty_vp9::parse_uncompressed_header(&mut r, &[(0, 0); 8]) {
        Ok(h) => u64::from(h.width) * u64::from(h.height) > MAX_PIXELS,
        Err(_) => false,
    }
}

/// Whether a VP9 frame (or the first frame of a superframe) is a key frame.
pub(crate) fn vp9_is_key(data: &[u8]) -> bool {
    let mut r = BitReader::new(data);
    rusty_vp9::parse_uncompressed_header(&mut r, &[(0, 0); 8]).is_ok_and(|h| h.key_frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_key_frames_are_refused_before_decoding() {
        // VP8 key frame tag, start code, 16000x16000.
        let big = [0x10, 0, 0, 0x9d, 0x01, 0x2a, 0x80, 0x3e, 0x80, 0x3e, 0, 0];
        assert!(vp8_too_large(&big));
        let small = [0x10, 0, 0, 0x9d, 0x01, 0x2a, 0x40, 0x01, 0xf0, 0x00, 0, 0];
        assert!(!vp8_too_large(&small));
        let mut d = VpxDecoder::vp8().unwrap();
        assert!(d.decode(&big, None, &mut |_| true).is_err());
    }

    #[test]
    fn garbage_is_an_error_for_both_codecs() {
        for mut d in [VpxDecoder::vp8().unwrap(), VpxDecoder::vp9()] {
            for bytes in [
                &b"\xff\xff\xff\xff\xff\xff\xff\xff"[..],
                &[0x82, 0x49, 0x83],
                &[0],
            ] {
                assert!(!matches!(
                    d.decode(bytes, None, &mut |_| true),
                    Ok(Pic::Out(..))
                ));
            }
        }
    }
}
