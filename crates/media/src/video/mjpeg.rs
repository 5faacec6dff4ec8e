//! Motion JPEG to luma through `zune-jpeg` (pure Rust): every frame is a complete JPEG, decoded
//! straight to its Y plane (no colour conversion).
//!
//! Many MJPEG sources (webcams, AVI writers) leave out the Huffman tables and rely on the
//! standard ones of ITU T.81 Annex K.3. zune-jpeg fills those in for frames that carry the
//! `AVI1` APP0 marker, so a frame with no `DHT` segment gets that marker added first.

use zune_jpeg::zune_core::bytestream::ZCursor;
use zune_jpeg::zune_core::colorspace::ColorSpace;
use zune_jpeg::zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use super::scale::{downscale, Plane};

/// The largest JPEG side decoded (4096: DCI 4K fits), which bounds one frame's memory.
const MAX_SIDE: usize = 4096;
/// APP0 with the `AVI1` identifier: the MJPEG convention for "standard Huffman tables".
const APP0_AVI1: [u8; 9] = [0xff, 0xe0, 0x00, 0x07, b'A', b'V', b'I', b'1', 0];

/// Decodes one JPEG frame to its downscaled luma plane; `None` for a frame that does not decode.
pub(crate) fn decode(data: &[u8], target_width: usize) -> Option<Plane> {
    let patched;
    let jpeg = if data.starts_with(&[0xff, 0xd8]) && !has_huffman_tables(data) {
        patched = [&data[..2], &APP0_AVI1[..], &data[2..]].concat();
        &patched[..]
    } else {
        data
    };
    let options = DecoderOptions::default()
        .set_max_width(MAX_SIDE)
        .set_max_height(MAX_SIDE)
        .jpeg_set_out_colorspace(ColorSpace::Luma);
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(jpeg), options);
    let decoded = crate::guard::catch(|| {
        let pixels = decoder.decode().ok()?;
        let info = decoder.info()?;
        Some((pixels, usize::from(info.width), usize::from(info.height)))
    });
    let (pixels, width, height) = decoded.ok().flatten()?;
    if pixels.len() != width.checked_mul(height)? {
        return None;
    }
    downscale(&pixels, width, width, height, target_width)
}

/// Whether a JPEG defines Huffman tables (a `DHT` segment) before its first scan.
fn has_huffman_tables(jpeg: &[u8]) -> bool {
    let mut at = 2;
    while let (Some(&0xff), Some(&marker)) = (jpeg.get(at), jpeg.get(at + 1)) {
        match marker {
            0xc4 => return true,
            // Start of scan: the headers are over.
            0xda => return false,
            // Fill bytes before a marker.
            0xff => at += 1,
            _ => {
                let len = match jpeg.get(at + 2..at + 4) {
                    Some(&[hi, lo]) => usize::from(u16::from_be_bytes([hi, lo])),
                    _ => return false,
                };
                at += 2 + len;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huffman_tables_are_found_only_before_the_scan() {
        let with = [0xff, 0xd8, 0xff, 0xdb, 0, 2, 0xff, 0xc4, 0, 2, 0xff, 0xda];
        let without = [0xff, 0xd8, 0xff, 0xdb, 0, 2, 0xff, 0xda, 0, 2, 0xff, 0xc4];
        assert!(has_huffman_tables(&with));
        assert!(!has_huffman_tables(&without));
        assert!(!has_huffman_tables(&[0xff, 0xd8, 0xff, 0xdb, 0xff]));
    }

    #[test]
    fn bytes_that_are_not_a_jpeg_decode_to_nothing() {
        assert!(decode(b"not a jpeg at all", 160).is_none());
        assert!(decode(&[0xff, 0xd8, 0xff, 0xc0, 0xff, 0xff], 160).is_none());
    }
}
