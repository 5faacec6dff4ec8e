//! Order statistics and robust slopes over frame measures.

/// Median of `values` (reorders them); `None` if empty.
pub(crate) fn median(values: &mut [f32]) -> Option<f32> {
    quantile(values, 0.5)
}

/// Linear-interpolated quantile `q` in 0..1 (sorts `values`).
pub(super) fn quantile(values: &mut [f32], q: f64) -> Option<f32> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let pos = q.clamp(0.0, 1.0) * (values.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = (pos - lo as f64) as f32;
    Some(values[lo] + frac * (values[hi] - values[lo]))
}

pub(super) fn mean(values: impl Iterator<Item = f32>) -> Option<f32> {
    let (mut sum, mut n) = (0.0f64, 0usize);
    for v in values {
        if v.is_finite() {
            sum += v as f64;
            n += 1;
        }
    }
    if n == 0 {
        None
    } else {
        Some((sum / n as f64) as f32)
    }
}

/// Theil-Sen slope of `(t, y)` points: the median of pairwise slopes.
pub(super) fn theil_sen(points: &[(f64, f32)]) -> Option<f32> {
    let mut slopes = Vec::with_capacity(points.len() * points.len() / 2);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            let dt = b.0 - a.0;
            if dt > 0.0 {
                slopes.push(((b.1 - a.1) as f64 / dt) as f32);
            }
        }
    }
    median(&mut slopes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_and_empty_input_has_none() {
        let mut v = vec![4.0, 1.0, 3.0, 2.0];
        assert_eq!(median(&mut v), Some(2.5));
        assert_eq!(quantile(&mut v, 0.0), Some(1.0));
        assert_eq!(median(&mut []), None);
    }

    #[test]
    fn theil_sen_ignores_a_single_outlier() {
        let mut pts: Vec<(f64, f32)> = (0..20)
            .map(|i| (i as f64 * 0.01, 30.0 + i as f32 * 0.1))
            .collect();
        pts[10].1 = 42.0;
        let slope = theil_sen(&pts).unwrap_or(0.0);
        assert!((slope - 10.0).abs() < 0.5, "{slope}");
    }
}
