//! Turning one decoded YUV picture into what the caller asked for: a downscaled luma plane and,
//! when wanted, an RGB8 image at its own size.
//!
//! Decoders hand over borrowed planes ([`Yuv`]); nothing is converted for a frame the sampler
//! passes over, which is where the cost of decoding at full frame rate is saved.

use super::scale::{downscale, scaled_size, Plane};

/// A decoded 8-bit picture as planes borrowed from its decoder.
pub(crate) struct Yuv<'a> {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) y: &'a [u8],
    pub(crate) y_stride: usize,
    pub(crate) u: &'a [u8],
    pub(crate) v: &'a [u8],
    pub(crate) uv_stride: usize,
    /// Chroma subsampling as shifts: (1, 1) for 4:2:0.
    pub(crate) shift_x: u32,
    pub(crate) shift_y: u32,
    /// Full-range samples (JPEG) rather than studio range (16-235, most video).
    pub(crate) full_range: bool,
}

/// What to make of each sampled picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Want {
    /// Luma at most this wide.
    pub(crate) luma_width: usize,
    /// RGB at most this wide (aspect kept, never upscaled); `None`: no RGB.
    pub(crate) rgb_width: Option<usize>,
}

/// An RGB8 image, 3 bytes a pixel, rows packed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rgb {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) data: Vec<u8>,
}

/// The outputs of one picture.
pub(crate) struct Converted {
    pub(crate) luma: Plane,
    pub(crate) rgb: Option<Rgb>,
}

/// Converts `pic` as `want` says; `None` when its planes are smaller than its geometry.
///
/// When `want` asks for RGB, `keep_rgb` is asked with the picture's luma plane (lent mutably
/// only so that it can be moved into a frame and back, not to be changed) whether this
/// picture's RGB is made: the RGB conversion, most of the cost, is then done only for the
/// pictures a caller reads colour from. It is asked only once the planes are known to fit
/// their geometry, so whether a picture comes out does not depend on its answer.
pub(crate) fn convert_with(
    pic: &Yuv<'_>,
    want: Want,
    keep_rgb: &mut dyn FnMut(&mut Plane) -> bool,
) -> Option<Converted> {
    let mut luma = downscale(pic.y, pic.y_stride, pic.width, pic.height, want.luma_width)?;
    let rgb = match want.rgb_width {
        Some(w) => {
            if !chroma_fits(pic) {
                return None;
            }
            if keep_rgb(&mut luma) {
                Some(to_rgb(pic, w)?)
            } else {
                None
            }
        }
        None => None,
    };
    Some(Converted { luma, rgb })
}

/// Whether the chroma planes hold what the picture's geometry says (what [`to_rgb`]'s
/// resampling checks; the luma plane is checked by the luma downscale before).
fn chroma_fits(pic: &Yuv<'_>) -> bool {
    let cw = (pic.width + (1 << pic.shift_x) - 1) >> pic.shift_x;
    let ch = (pic.height + (1 << pic.shift_y) - 1) >> pic.shift_y;
    if cw == 0 || ch == 0 || pic.uv_stride < cw {
        return false;
    }
    let needed = pic
        .uv_stride
        .checked_mul(ch - 1)
        .and_then(|n| n.checked_add(cw));
    needed.is_some_and(|n| pic.u.len() >= n && pic.v.len() >= n)
}

/// The picture as RGB8 at most `target_width` across: Y, U and V are each box-resampled to the
/// output grid, then converted with the BT.601 matrix (what browsers' and webcams' SD and HD
/// streams mostly carry; the difference to BT.709 is a slight hue shift, immaterial for faces).
fn to_rgb(pic: &Yuv<'_>, target_width: usize) -> Option<Rgb> {
    let (ow, oh) = scaled_size(pic.width, pic.height, target_width);
    let cw = (pic.width + (1 << pic.shift_x) - 1) >> pic.shift_x;
    let ch = (pic.height + (1 << pic.shift_y) - 1) >> pic.shift_y;
    let rows = (
        RowMap::of(pic.width, pic.height, ow, oh),
        RowMap::of(cw, ch, ow, oh),
    );
    let fits = plane_fits(pic.y, pic.y_stride, pic.width, pic.height)
        && plane_fits(pic.u, pic.uv_stride, cw, ch)
        && plane_fits(pic.v, pic.uv_stride, cw, ch);
    let data = match rows {
        (Some(luma), Some(chroma)) if fits => {
            // The sizes faces are read at (a plane kept, halved or doubled): each output row
            // is made from its source rows and converted at once, with no whole-picture
            // planes in between; the values are those of `resample` and `ycbcr_to_rgb`.
            let mut data = Vec::with_capacity(ow * oh * 3);
            let (mut y, mut u, mut v) = (vec![0; ow], vec![0; ow], vec![0; ow]);
            let mut rgb = vec![0; 3 * ow];
            for j in 0..oh {
                luma.row(pic.y, pic.y_stride, j, &mut y);
                chroma.row(pic.u, pic.uv_stride, j, &mut u);
                chroma.row(pic.v, pic.uv_stride, j, &mut v);
                convert_row(&y, &u, &v, pic.full_range, &mut rgb);
                data.extend_from_slice(&rgb);
            }
            data
        }
        _ => {
            let y = resample(pic.y, pic.y_stride, pic.width, pic.height, ow, oh)?;
            let u = resample(pic.u, pic.uv_stride, cw, ch, ow, oh)?;
            let v = resample(pic.v, pic.uv_stride, cw, ch, ow, oh)?;
            let mut data = vec![0; ow * oh * 3];
            convert_row(&y, &u, &v, pic.full_range, &mut data);
            data
        }
    };
    Some(Rgb {
        width: u32::try_from(ow).ok()?,
        height: u32::try_from(oh).ok()?,
        data,
    })
}

/// Converts rows of Y, Cb and Cr samples to RGB8 (`out` three bytes per sample) as
/// [`ycbcr_to_rgb`] does, in a loop the compiler vectorises: the three channels computed
/// apart, then interleaved.
fn convert_row(y: &[u8], cb: &[u8], cr: &[u8], full_range: bool, out: &mut [u8]) {
    const CHUNK: usize = 64;
    let (mut r, mut g, mut b) = ([0u8; CHUNK], [0u8; CHUNK], [0u8; CHUNK]);
    for (((y, cb), cr), out) in y
        .chunks(CHUNK)
        .zip(cb.chunks(CHUNK))
        .zip(cr.chunks(CHUNK))
        .zip(out.chunks_mut(3 * CHUNK))
    {
        let n = y.len().min(cb.len()).min(cr.len()).min(out.len() / 3);
        for i in 0..n {
            [r[i], g[i], b[i]] = ycbcr_to_rgb(y[i], cb[i], cr[i], full_range);
        }
        for (i, px) in out[..3 * n].chunks_exact_mut(3).enumerate() {
            px[0] = r[i];
            px[1] = g[i];
            px[2] = b[i];
        }
    }
}

/// How a plane becomes the output grid, row by row, where [`resample`] has a straight path
/// for it: kept, halved (2:1 box) or doubled (nearest).
#[derive(Debug, Clone, Copy)]
enum RowMap {
    Same,
    Halve,
    Double,
}

impl RowMap {
    fn of(w: usize, h: usize, ow: usize, oh: usize) -> Option<Self> {
        if w == 0 || h == 0 || ow == 0 || oh == 0 {
            None
        } else if (ow, oh) == (w, h) {
            Some(RowMap::Same)
        } else if (ow * 2, oh * 2) == (w, h) {
            Some(RowMap::Halve)
        } else if (ow, oh) == (w * 2, h * 2) {
            Some(RowMap::Double)
        } else {
            None
        }
    }

    /// Output row `j` of the plane (rows `stride` apart), `out.len()` samples: what
    /// [`resample`]'s straight paths give for that row.
    fn row(self, src: &[u8], stride: usize, j: usize, out: &mut [u8]) {
        let n = out.len();
        match self {
            RowMap::Same => out.copy_from_slice(&src[j * stride..j * stride + n]),
            RowMap::Halve => {
                let top = &src[2 * j * stride..2 * j * stride + 2 * n];
                let bottom = &src[(2 * j + 1) * stride..(2 * j + 1) * stride + 2 * n];
                for ((o, t), b) in out
                    .iter_mut()
                    .zip(top.chunks_exact(2))
                    .zip(bottom.chunks_exact(2))
                {
                    let sum = u32::from(t[0]) + u32::from(t[1]) + u32::from(b[0]) + u32::from(b[1]);
                    *o = ((sum + 2) / 4) as u8;
                }
            }
            RowMap::Double => {
                let row = &src[(j / 2) * stride..(j / 2) * stride + n.div_ceil(2)];
                for (pair, &p) in out.chunks_exact_mut(2).zip(row) {
                    pair[0] = p;
                    pair[1] = p;
                }
                if n % 2 == 1 {
                    out[n - 1] = row[n / 2];
                }
            }
        }
    }
}

/// Whether a `w` x `h` plane with rows `stride` apart fits in `src` (what [`resample`] checks).
fn plane_fits(src: &[u8], stride: usize, w: usize, h: usize) -> bool {
    w > 0
        && h > 0
        && stride >= w
        && stride
            .checked_mul(h - 1)
            .and_then(|n| n.checked_add(w))
            .is_some_and(|n| src.len() >= n)
}

/// One BT.601 YCbCr sample as RGB (fixed point, 16 fractional bits).
pub(crate) fn ycbcr_to_rgb(y: u8, cb: u8, cr: u8, full_range: bool) -> [u8; 3] {
    let (y, cb, cr) = (i32::from(y), i32::from(cb) - 128, i32::from(cr) - 128);
    let (y, k_r, k_gb, k_gr, k_b) = if full_range {
        (y << 16, 91_881, 22_554, 46_802, 116_130)
    } else {
        ((y - 16) * 76_309, 104_597, 25_675, 53_279, 132_201)
    };
    let clamp = |v: i32| ((v + (1 << 15)) >> 16).clamp(0, 255) as u8;
    [
        clamp(y + k_r * cr),
        clamp(y - k_gb * cb - k_gr * cr),
        clamp(y + k_b * cb),
    ]
}

/// Resamples a `w` x `h` plane (rows `stride` apart) to exactly `ow` x `oh`: each output pixel
/// is the mean of the source box it covers, or the nearest source pixel when upsampling (the
/// chroma planes of 4:2:0 at full size).
pub(crate) fn resample(
    src: &[u8],
    stride: usize,
    w: usize,
    h: usize,
    ow: usize,
    oh: usize,
) -> Option<Vec<u8>> {
    if w == 0 || h == 0 || ow == 0 || oh == 0 || stride < w {
        return None;
    }
    if src.len() < stride.checked_mul(h - 1)?.checked_add(w)? {
        return None;
    }
    // The sizes faces are read at: a 1280x720 picture's luma halved to 640x360 and its chroma
    // kept, a 640x480 picture's luma kept and its chroma doubled. Each has a straight loop that
    // gives exactly what the general box filter below gives, at a fraction of its cost.
    if (ow, oh) == (w, h) {
        let mut out = Vec::with_capacity(ow * oh);
        for row in src.chunks(stride).take(h) {
            out.extend_from_slice(&row[..w]);
        }
        return Some(out);
    }
    if (ow * 2, oh * 2) == (w, h) {
        return Some(halve(src, stride, ow, oh));
    }
    if (ow, oh) == (w * 2, h * 2) {
        return Some(double(src, stride, w, h));
    }
    Some(box_resample(src, stride, w, h, ow, oh))
}

/// [`resample`]'s general case, for a plane already checked against its geometry.
fn box_resample(src: &[u8], stride: usize, w: usize, h: usize, ow: usize, oh: usize) -> Vec<u8> {
    let bins = |n: usize, on: usize| -> Vec<(usize, usize)> {
        (0..on)
            .map(|i| {
                let a = (i * n / on).min(n - 1);
                (a, ((i + 1) * n / on).clamp(a + 1, n))
            })
            .collect()
    };
    let (cols, rows) = (bins(w, ow), bins(h, oh));
    let mut out = Vec::with_capacity(ow * oh);
    for &(y0, y1) in &rows {
        for &(x0, x1) in &cols {
            let mut sum = 0u32;
            for row in y0..y1 {
                sum += src[row * stride + x0..row * stride + x1]
                    .iter()
                    .map(|&p| u32::from(p))
                    .sum::<u32>();
            }
            let n = ((y1 - y0) * (x1 - x0)) as u32;
            out.push(((sum + n / 2) / n) as u8);
        }
    }
    out
}

/// A 2:1 box filter: each output pixel the rounded mean of a 2x2 block (`ow` x `oh` out).
fn halve(src: &[u8], stride: usize, ow: usize, oh: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(ow * oh);
    for y in 0..oh {
        let top = &src[2 * y * stride..2 * y * stride + 2 * ow];
        let bottom = &src[(2 * y + 1) * stride..(2 * y + 1) * stride + 2 * ow];
        out.extend(
            top.chunks_exact(2)
                .zip(bottom.chunks_exact(2))
                .map(|(t, b)| {
                    let sum = u32::from(t[0]) + u32::from(t[1]) + u32::from(b[0]) + u32::from(b[1]);
                    ((sum + 2) / 4) as u8
                }),
        );
    }
    out
}

/// A 1:2 nearest-neighbour upsampling: each source pixel repeated over a 2x2 block.
fn double(src: &[u8], stride: usize, w: usize, h: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 * w * h);
    for y in 0..h {
        let start = out.len();
        out.extend(src[y * stride..y * stride + w].iter().flat_map(|&p| [p, p]));
        out.extend_from_within(start..);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within one step per channel (the 8-bit YCbCr of a primary is itself rounded).
    fn close(a: [u8; 3], b: [u8; 3]) -> bool {
        a.iter().zip(b).all(|(&x, y)| x.abs_diff(y) <= 1)
    }

    #[test]
    fn studio_and_full_range_primaries_convert_to_their_colours() {
        // Studio-range BT.601 red, green, blue, black and white.
        assert!(close(ycbcr_to_rgb(81, 90, 240, false), [255, 0, 0]));
        assert!(close(ycbcr_to_rgb(145, 54, 34, false), [0, 255, 0]));
        assert!(close(ycbcr_to_rgb(41, 240, 110, false), [0, 0, 255]));
        assert_eq!(ycbcr_to_rgb(16, 128, 128, false), [0, 0, 0]);
        assert_eq!(ycbcr_to_rgb(235, 128, 128, false), [255, 255, 255]);
        assert_eq!(ycbcr_to_rgb(128, 128, 128, true), [128, 128, 128]);
        let red = ycbcr_to_rgb(76, 85, 255, true);
        assert!(red[0] >= 253 && red[1] <= 2 && red[2] <= 2, "{red:?}");
    }

    #[test]
    fn resampling_averages_down_and_repeats_up() {
        let src = [10, 20, 30, 40];
        assert_eq!(resample(&src, 2, 2, 2, 1, 1).unwrap(), vec![25]);
        assert_eq!(
            resample(&src, 2, 2, 2, 4, 2).unwrap(),
            vec![10, 10, 20, 20, 30, 30, 40, 40]
        );
        assert!(resample(&src, 2, 2, 3, 1, 1).is_none());
    }

    #[test]
    fn the_fast_paths_give_what_the_box_filter_gives() {
        // A plane with padding (stride 13 for 12 columns) and values that round both ways.
        let (w, h, stride) = (12, 8, 13);
        let src: Vec<u8> = (0..stride * h).map(|i| (i * 37 % 251) as u8).collect();
        for (ow, oh) in [(w / 2, h / 2), (2 * w, 2 * h), (w, h)] {
            assert_eq!(
                resample(&src, stride, w, h, ow, oh).unwrap(),
                box_resample(&src, stride, w, h, ow, oh),
                "{ow}x{oh}"
            );
        }
        // An odd size keeps the general path: 3x3 to 1x1 is the mean of all nine.
        let nine = [1, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(resample(&nine, 3, 3, 3, 1, 1).unwrap(), vec![5]);
    }

    /// RGB as `to_rgb` made it first: each plane resampled whole, then converted pixel by pixel.
    fn to_rgb_by_planes(pic: &Yuv<'_>, target_width: usize) -> Option<Vec<u8>> {
        let (ow, oh) = scaled_size(pic.width, pic.height, target_width);
        let y = resample(pic.y, pic.y_stride, pic.width, pic.height, ow, oh)?;
        let cw = (pic.width + (1 << pic.shift_x) - 1) >> pic.shift_x;
        let ch = (pic.height + (1 << pic.shift_y) - 1) >> pic.shift_y;
        let u = resample(pic.u, pic.uv_stride, cw, ch, ow, oh)?;
        let v = resample(pic.v, pic.uv_stride, cw, ch, ow, oh)?;
        let mut data = Vec::new();
        for ((&y, &u), &v) in y.iter().zip(&u).zip(&v) {
            data.extend_from_slice(&ycbcr_to_rgb(y, u, v, pic.full_range));
        }
        Some(data)
    }

    #[test]
    fn rgb_row_by_row_is_rgb_plane_by_plane() {
        // (width, height, chroma shifts, padding per row, target width, full range): the
        // upload's 2:1 case, a webcam's 1:1 with doubled chroma, 4:2:2 and 4:4:4, odd sizes
        // (which take the general path), padded rows.
        for (w, h, (sx, sy), pad, target, full) in [
            (1280, 720, (1, 1), 0, 640, false),
            (640, 480, (1, 1), 0, 640, false),
            (96, 54, (1, 1), 32, 48, true),
            (96, 54, (1, 0), 5, 96, false),
            (40, 30, (0, 0), 3, 20, false),
            (13, 9, (1, 1), 2, 13, false),
            (14, 10, (1, 1), 0, 7, true),
            (3, 3, (1, 1), 1, 1, false),
        ] {
            let (cw, ch) = ((w + (1 << sx) - 1) >> sx, (h + (1 << sy) - 1) >> sy);
            let (ys, cs) = (w + pad, cw + pad);
            let plane = |n: usize, k: usize| -> Vec<u8> {
                (0..n).map(|i| ((i * k + i / 7) % 256) as u8).collect()
            };
            let (y, u, v) = (plane(ys * h, 37), plane(cs * ch, 13), plane(cs * ch, 101));
            let pic = Yuv {
                width: w,
                height: h,
                y: &y,
                y_stride: ys,
                u: &u,
                v: &v,
                uv_stride: cs,
                shift_x: sx,
                shift_y: sy,
                full_range: full,
            };
            let got = to_rgb(&pic, target).map(|rgb| rgb.data);
            assert_eq!(got, to_rgb_by_planes(&pic, target), "{w}x{h} to {target}");
            assert!(got.is_some(), "{w}x{h}");
        }
    }

    #[test]
    fn a_420_picture_gives_rgb_at_the_requested_width() {
        // 4x2 picture: left half red, right half blue (chroma 2x1).
        let y = [81, 81, 41, 41, 81, 81, 41, 41];
        let (u, v) = ([90, 240], [240, 110]);
        let pic = Yuv {
            width: 4,
            height: 2,
            y: &y,
            y_stride: 4,
            u: &u,
            v: &v,
            uv_stride: 2,
            shift_x: 1,
            shift_y: 1,
            full_range: false,
        };
        let full = to_rgb(&pic, 4).unwrap();
        assert_eq!((full.width, full.height), (4, 2));
        assert!(close(
            [full.data[0], full.data[1], full.data[2]],
            [255, 0, 0]
        ));
        assert!(close(
            [full.data[9], full.data[10], full.data[11]],
            [0, 0, 255]
        ));
        let half = to_rgb(&pic, 2).unwrap();
        assert_eq!((half.width, half.height), (2, 1));
        assert!(close(
            [half.data[0], half.data[1], half.data[2]],
            [255, 0, 0]
        ));
        assert!(close(
            [half.data[3], half.data[4], half.data[5]],
            [0, 0, 255]
        ));
    }
}
