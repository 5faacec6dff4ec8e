//! Motion JPEG to pixels through `zune-jpeg` (pure Rust): every frame is a complete JPEG,
//! decoded straight to its Y plane when only luma is wanted, or to RGB (luma then computed with
//! JPEG's own BT.601 full-range weights) when colour is.
//!
//! Many MJPEG sources (webcams, AVI writers) leave out the Huffman tables and rely on the
//! standard ones of ITU T.81 Annex K.3. zune-jpeg fills those in for frames that carry the
//! `AVI1` APP0 marker, so a frame with no `DHT` segment gets that marker added first.

use zune_jpeg::zune_core::bytestream::ZCursor;
use zune_jpeg::zune_core::colorspace::ColorSpace;
use zune_jpeg::zune_core::options::DecoderOptions;
use zune_jpeg::JpegDecoder;

use super::scale::{downscale, scaled_size};
use super::yuv::{resample, Converted, Rgb, Want};

/// The largest JPEG side decoded (4096: DCI 4K fits), which bounds one frame's memory.
const MAX_SIDE: usize = 4096;
/// APP0 with the `AVI1` identifier: the MJPEG convention for "standard Huffman tables".
const APP0_AVI1: [u8; 9] = [0xff, 0xe0, 0x00, 0x07, b'A', b'V', b'I', b'1', 0];

/// Decodes one JPEG frame as `want` says, with the picture's pixel count; `None` for a frame
/// that does not decode.
pub(crate) fn decode(data: &[u8], want: Want) -> Option<(usize, Converted)> {
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
        .jpeg_set_out_colorspace(if want.rgb_width.is_some() {
            ColorSpace::RGB
        } else {
            ColorSpace::Luma
        });
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(jpeg), options);
    let decoded = crate::guard::catch(|| {
        let pixels = decoder.decode().ok()?;
        let info = decoder.info()?;
        Some((pixels, usize::from(info.width), usize::from(info.height)))
    });
    let (pixels, width, height) = decoded.ok().flatten()?;
    let area = width.checked_mul(height)?;
    let Some(rgb_width) = want.rgb_width else {
        if pixels.len() != area {
            return None;
        }
        let luma = downscale(&pixels, width, width, height, want.luma_width)?;
        return Some((area, Converted { luma, rgb: None }));
    };
    if pixels.len() != area.checked_mul(3)? {
        return None;
    }
    let mut planes = [
        Vec::with_capacity(area),
        Vec::with_capacity(area),
        Vec::with_capacity(area),
    ];
    let mut y = Vec::with_capacity(area);
    for px in pixels.chunks_exact(3) {
        let [r, g, b] = [px[0], px[1], px[2]].map(u32::from);
        y.push(((19_595 * r + 38_470 * g + 7_471 * b + (1 << 15)) >> 16) as u8);
        for (plane, &c) in planes.iter_mut().zip(px) {
            plane.push(c);
        }
    }
    let luma = downscale(&y, width, width, height, want.luma_width)?;
    let (ow, oh) = scaled_size(width, height, rgb_width);
    let [r, g, b] = planes.map(|p| resample(&p, width, width, height, ow, oh));
    let (r, g, b) = (r?, g?, b?);
    let mut data = Vec::with_capacity(ow * oh * 3);
    for ((r, g), b) in r.into_iter().zip(g).zip(b) {
        data.extend_from_slice(&[r, g, b]);
    }
    let rgb = Rgb {
        width: u32::try_from(ow).ok()?,
        height: u32::try_from(oh).ok()?,
        data,
    };
    Some((
        area,
        Converted {
            luma,
            rgb: Some(rgb),
        },
    ))
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
        let want = Want {
            luma_width: 160,
            rgb_width: Some(160),
        };
        assert!(decode(b"not a jpeg at all", want).is_none());
        assert!(decode(&[0xff, 0xd8, 0xff, 0xc0, 0xff, 0xff], want).is_none());
    }
}
