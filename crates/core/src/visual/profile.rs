//! Global displacement of the head region between two luma frames, by 1-D projection
//! cross-correlation.
//!
//! Each frame is reduced to two profiles: the mean luma of every row across the region's
//! columns, and of every column across the region's rows. Content that moves down by `s` pixels
//! moves the row profile by `s`; content that moves right moves the column profile. The shift
//! that maximises the normalised cross-correlation (Pearson r over the overlap) between the
//! previous profile and the current one, refined to sub-pixel precision by a parabola through
//! the peak and its neighbours, is the displacement. Projections make this cheap (one pass over
//! the pixels, then a 1-D search) and robust to noise, which averages out along each row.

/// The head region, as fractions of the frame: the central half across, from 5% to 65% of the
/// height (where a speaker's head sits in a call or webcam picture).
const REGION_X: (f64, f64) = (0.25, 0.75);
const REGION_Y: (f64, f64) = (0.05, 0.65);
/// The largest shift searched, as a fraction of the region's extent along the axis.
const MAX_SHIFT_FRACTION: f64 = 0.15;
/// Profiles whose overlap varies less than this (luma standard deviation) carry no position.
const MIN_PROFILE_STD: f64 = 0.5;

/// The row and column profiles of a frame's head region.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Profiles {
    /// Mean luma of each row of the whole frame height over the region's columns.
    rows: Vec<f32>,
    /// Mean luma of each column of the whole frame width over the region's rows.
    cols: Vec<f32>,
    /// The region's row range.
    row_span: (usize, usize),
    /// The region's column range.
    col_span: (usize, usize),
}

impl Profiles {
    /// The profiles of a `width` x `height` plane (`data.len() == width * height`).
    pub(crate) fn of(data: &[u8], width: usize, height: usize) -> Self {
        let span = |len: usize, (a, b): (f64, f64)| {
            let lo = (len as f64 * a).floor() as usize;
            let hi = ((len as f64 * b).ceil() as usize).clamp(lo + 1, len.max(1));
            (lo.min(hi - 1), hi)
        };
        let col_span = span(width, REGION_X);
        let row_span = span(height, REGION_Y);
        let mut rows = vec![0f32; height];
        let mut cols = vec![0f32; width];
        for (y, row) in data.chunks_exact(width.max(1)).take(height).enumerate() {
            let sum: u32 = row[col_span.0..col_span.1]
                .iter()
                .map(|&p| u32::from(p))
                .sum();
            rows[y] = sum as f32 / (col_span.1 - col_span.0) as f32;
            if (row_span.0..row_span.1).contains(&y) {
                for (c, &p) in cols.iter_mut().zip(row) {
                    *c += f32::from(p);
                }
            }
        }
        let n = (row_span.1 - row_span.0) as f32;
        cols.iter_mut().for_each(|c| *c /= n);
        Self {
            rows,
            cols,
            row_span,
            col_span,
        }
    }

    /// The displacement `(dx, dy)` in pixels from `prev` to `self` (positive: right, down);
    /// `None` for either axis whose profile is too flat to locate, or frames of other sizes.
    pub(crate) fn shift_from(&self, prev: &Self) -> (Option<f64>, Option<f64>) {
        if self.rows.len() != prev.rows.len() || self.cols.len() != prev.cols.len() {
            return (None, None);
        }
        (
            shift_1d(&prev.cols, &self.cols, self.col_span),
            shift_1d(&prev.rows, &self.rows, self.row_span),
        )
    }
}

/// The shift `s` that best maps `prev[i]` onto `cur[i + s]` for `i` in `span`.
fn shift_1d(prev: &[f32], cur: &[f32], span: (usize, usize)) -> Option<f64> {
    let extent = span.1 - span.0;
    let max = ((extent as f64 * MAX_SHIFT_FRACTION).round() as i64).max(2);
    let scores: Vec<Option<f64>> = (-max..=max)
        .map(|s| correlation(prev, cur, span, s))
        .collect();
    let (best, &r0) = scores
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
        .max_by(|a, b| a.1.total_cmp(b.1))?;
    let neighbour = |i: Option<usize>| i.and_then(|i| scores.get(i).copied().flatten());
    let fraction = match (neighbour(best.checked_sub(1)), neighbour(Some(best + 1))) {
        (Some(rm), Some(rp)) => {
            let curvature = rm - 2.0 * r0 + rp;
            if curvature < 0.0 {
                (0.5 * (rm - rp) / curvature).clamp(-0.5, 0.5)
            } else {
                0.0
            }
        }
        _ => 0.0,
    };
    Some(best as f64 - max as f64 + fraction)
}

/// Pearson r between `prev[i]` and `cur[i + s]` over the part of `span` where both exist.
fn correlation(prev: &[f32], cur: &[f32], span: (usize, usize), s: i64) -> Option<f64> {
    let lo = (span.0 as i64).max(-s).max(0) as usize;
    let hi = (span.1 as i64)
        .min(cur.len() as i64 - s)
        .min(prev.len() as i64);
    let hi = usize::try_from(hi).ok()?;
    // At least half the region must overlap for the score to mean anything.
    if hi <= lo || (hi - lo) * 2 < span.1 - span.0 {
        return None;
    }
    let at = |i: usize| (f64::from(prev[i]), f64::from(cur[(i as i64 + s) as usize]));
    let n = (hi - lo) as f64;
    let (mut sa, mut sb) = (0.0, 0.0);
    for i in lo..hi {
        let (a, b) = at(i);
        sa += a;
        sb += b;
    }
    let (ma, mb) = (sa / n, sb / n);
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for i in lo..hi {
        let (a, b) = at(i);
        cov += (a - ma) * (b - mb);
        va += (a - ma) * (a - ma);
        vb += (b - mb) * (b - mb);
    }
    let min_var = MIN_PROFILE_STD * MIN_PROFILE_STD * n;
    if va < min_var || vb < min_var {
        return None;
    }
    Some(cov / (va * vb).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A smooth, non-repeating pattern moved by (dx, dy).
    fn frame(w: usize, h: usize, dx: f64, dy: f64) -> Vec<u8> {
        let mut out = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                let (u, v) = (x as f64 - dx, y as f64 - dy);
                let p = 128.0
                    + 50.0 * (0.21 * u + 0.7 * (0.05 * v).sin()).sin()
                    + 40.0 * (0.17 * v + 0.4 * (0.07 * u).cos()).cos();
                out.push(p.round().clamp(0.0, 255.0) as u8);
            }
        }
        out
    }

    #[test]
    fn a_pure_shift_is_measured_to_a_fraction_of_a_pixel() {
        let (w, h) = (160, 120);
        let a = Profiles::of(&frame(w, h, 0.0, 0.0), w, h);
        for (dx, dy) in [(0.0, 3.0), (-2.0, 0.0), (1.5, -2.5)] {
            let b = Profiles::of(&frame(w, h, dx, dy), w, h);
            let (mx, my) = b.shift_from(&a);
            assert!((mx.unwrap() - dx).abs() < 0.35, "dx {dx}: {mx:?}");
            assert!((my.unwrap() - dy).abs() < 0.35, "dy {dy}: {my:?}");
        }
    }

    #[test]
    fn a_flat_picture_has_no_position() {
        let flat = vec![90u8; 40 * 30];
        let p = Profiles::of(&flat, 40, 30);
        assert_eq!(p.shift_from(&p), (None, None));
    }
}
