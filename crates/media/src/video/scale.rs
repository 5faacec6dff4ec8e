//! Area-average downscaling of a luma plane: each output pixel is the rounded mean of the block
//! of source pixels it covers.

/// A luma plane, `width * height` bytes, row by row with no padding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plane {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) data: Vec<u8>,
}

/// The output size for a `width` x `height` source scaled to at most `target_width` pixels
/// across, keeping the aspect ratio (never upscaling, never below 1 pixel).
pub(crate) fn scaled_size(width: usize, height: usize, target_width: usize) -> (usize, usize) {
    let out_w = target_width.clamp(1, width.max(1));
    if out_w >= width {
        return (width, height);
    }
    let out_h = ((height * out_w + width / 2) / width).clamp(1, height.max(1));
    (out_w, out_h)
}

/// Downscales a `width` x `height` plane whose rows start `stride` bytes apart to at most
/// `target_width` pixels across. `None` when the buffer is smaller than the geometry says or the
/// picture is empty.
///
/// Source pixels are split into whole-pixel bins (column bin `i` is `i*w/out_w ..
/// (i+1)*w/out_w`), so every source pixel is read once and lands in exactly one output pixel: a
/// box filter whose cost is one addition per source pixel.
pub(crate) fn downscale(
    src: &[u8],
    stride: usize,
    width: usize,
    height: usize,
    target_width: usize,
) -> Option<Plane> {
    if width == 0 || height == 0 || stride < width {
        return None;
    }
    let needed = stride.checked_mul(height - 1)?.checked_add(width)?;
    if src.len() < needed {
        return None;
    }
    let (out_w, out_h) = scaled_size(width, height, target_width);
    let mut data = Vec::with_capacity(out_w * out_h);
    if (out_w, out_h) == (width, height) {
        for row in src.chunks(stride).take(height) {
            data.extend_from_slice(&row[..width]);
        }
    } else {
        let cols: Vec<(usize, usize)> = (0..out_w)
            .map(|i| (i * width / out_w, (i + 1) * width / out_w))
            .collect();
        // Rows are summed first (a straight element-wise add the compiler vectorises), then
        // each output row's column sums are reduced bin by bin.
        let mut column_sums = vec![0u32; width];
        for j in 0..out_h {
            let (y0, y1) = (j * height / out_h, (j + 1) * height / out_h);
            column_sums.iter_mut().for_each(|a| *a = 0);
            for y in y0..y1 {
                let row = &src[y * stride..y * stride + width];
                for (a, &p) in column_sums.iter_mut().zip(row) {
                    *a += u32::from(p);
                }
            }
            let rows = (y1 - y0) as u32;
            let factor = width / out_w;
            if factor * out_w == width {
                // Equal bins (the common 2x, 4x, 8x reductions): fixed-size chunks, no bounds
                // per bin.
                let n = rows * factor as u32;
                data.extend(
                    column_sums
                        .chunks_exact(factor)
                        .map(|bin| ((bin.iter().sum::<u32>() + n / 2) / n) as u8),
                );
            } else {
                for &(x0, x1) in &cols {
                    let n = rows * (x1 - x0) as u32;
                    let sum: u32 = column_sums[x0..x1].iter().sum();
                    data.push(((sum + n / 2) / n) as u8);
                }
            }
        }
    }
    Some(Plane {
        width: u32::try_from(out_w).ok()?,
        height: u32::try_from(out_h).ok()?,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_to_one_reduction_averages_each_block() {
        // 4x2 source, stride 5 (one byte of padding per row).
        let src = [10, 20, 30, 50, 99, 30, 40, 70, 90, 99];
        let out = downscale(&src, 5, 4, 2, 2).unwrap();
        assert_eq!((out.width, out.height), (2, 1));
        assert_eq!(out.data, vec![25, 60]);
    }

    #[test]
    fn a_narrow_source_is_copied_without_its_padding() {
        let src = [1, 2, 0, 3, 4, 0];
        let out = downscale(&src, 3, 2, 2, 160).unwrap();
        assert_eq!(out.data, vec![1, 2, 3, 4]);
    }

    #[test]
    fn odd_ratios_keep_the_aspect_and_cover_every_pixel() {
        let (w, h) = (333, 251);
        let src = vec![200u8; w * h];
        let out = downscale(&src, w, w, h, 160).unwrap();
        assert_eq!((out.width, out.height), (160, 121));
        assert!(out.data.iter().all(|&p| p == 200));
    }

    #[test]
    fn a_buffer_shorter_than_its_geometry_is_refused() {
        assert!(downscale(&[0; 10], 4, 4, 3, 2).is_none());
        assert!(downscale(&[0; 10], 2, 4, 1, 2).is_none());
    }
}
