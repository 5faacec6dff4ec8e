//! Peak refinement on sampled curves: windowed-sinc interpolation and Brent's maximiser.
//!
//! Both follow the numerics Boersma (1993) describes for the autocorrelation
//! pitch tracker (section 3, "interpolation"): a correlation curve sampled at
//! integer lags is band-limited, so its true maximum between samples is found
//! by sinc interpolation with a Hann-tapered kernel of a given depth (the
//! number of samples used on each side), and the maximum of that interpolant
//! is located with Brent's derivative-free method.

use std::f64::consts::PI;

/// Sinc interpolation depth used when refining a maximum (Praat's "sinc70").
pub(crate) const DEPTH_REFINE: usize = 70;

/// Value of the band-limited curve through `y` at fractional position `x`
/// (0-based), using a Hann-tapered sinc kernel of at most `depth` samples on
/// each side. Outside the curve it extrapolates with the end values.
pub(crate) fn sinc_interpolate(y: &[f64], x: f64, depth: usize) -> f64 {
    let n = y.len();
    if n == 0 || !x.is_finite() {
        return 0.0;
    }
    if x <= 0.0 {
        return y[0];
    }
    if x >= (n - 1) as f64 {
        return y[n - 1];
    }
    let midleft = x.floor() as usize;
    if x == midleft as f64 {
        return y[midleft];
    }
    let midright = midleft + 1;
    let depth = depth.min(midleft + 1).min(n - 1 - midleft);
    if depth == 0 {
        return y[midleft];
    }
    if depth == 1 {
        return y[midleft] + (x - midleft as f64) * (y[midright] - y[midleft]);
    }
    let left = midright - depth;
    let right = midleft + depth;
    let mut result = 0.0;

    // Left half: sinc(a) tapered by a raised cosine that reaches zero one
    // sample beyond the last tap. The taper angle advances by a constant step,
    // so it is rotated rather than recomputed.
    let span = x - left as f64 + 1.0;
    let mut a = PI * (x - midleft as f64);
    let mut half_sin_a = 0.5 * a.sin();
    let (mut sin_t, mut cos_t) = (a / span).sin_cos();
    let (sin_d, cos_d) = (PI / span).sin_cos();
    for ix in (left..=midleft).rev() {
        result += y[ix] * half_sin_a / a * (1.0 + cos_t);
        a += PI;
        let c = cos_t * cos_d - sin_t * sin_d;
        sin_t = cos_t * sin_d + sin_t * cos_d;
        cos_t = c;
        half_sin_a = -half_sin_a;
    }

    let span = right as f64 - x + 1.0;
    let mut a = PI * (midright as f64 - x);
    let mut half_sin_a = 0.5 * a.sin();
    let (mut sin_t, mut cos_t) = (a / span).sin_cos();
    let (sin_d, cos_d) = (PI / span).sin_cos();
    for &value in &y[midright..=right] {
        result += value * half_sin_a / a * (1.0 + cos_t);
        a += PI;
        let c = cos_t * cos_d - sin_t * sin_d;
        sin_t = cos_t * sin_d + sin_t * cos_d;
        cos_t = c;
        half_sin_a = -half_sin_a;
    }
    result
}

/// Refines a local maximum of `y` near integer position `imid` (0-based):
/// returns `(position, value)` of the maximum of the sinc interpolant within
/// one sample on either side. At the curve's ends the sample itself is used.
pub(crate) fn improve_maximum(y: &[f64], imid: usize, depth: usize) -> (f64, f64) {
    if imid == 0 || imid + 1 >= y.len() {
        let i = imid.min(y.len().saturating_sub(1));
        return (i as f64, y.get(i).copied().unwrap_or(0.0));
    }
    let centre = imid as f64;
    let (x, fx) = brent_maximize(
        |x| sinc_interpolate(y, x, depth),
        centre - 1.0,
        centre + 1.0,
        1e-4,
    );
    (x, fx)
}

/// Brent's method (parabolic interpolation with golden-section fallback) for
/// the maximum of `f` on `[lo, hi]`, to an absolute position tolerance of
/// about `tol`. Returns `(position, value)`.
pub(crate) fn brent_maximize(
    mut f: impl FnMut(f64) -> f64,
    lo: f64,
    hi: f64,
    tol: f64,
) -> (f64, f64) {
    const GOLDEN: f64 = 0.381_966_011_250_105;
    const MAX_ITERATIONS: usize = 60;
    let mut g = |x: f64| -f(x);
    let (mut a, mut b) = (lo, hi);
    let mut x = a + GOLDEN * (b - a);
    let (mut w, mut v) = (x, x);
    let mut fx = g(x);
    let (mut fw, mut fv) = (fx, fx);
    let mut d: f64 = 0.0;
    let mut e: f64 = 0.0;
    for _ in 0..MAX_ITERATIONS {
        let xm = 0.5 * (a + b);
        let tol1 = tol + 1e-12 * x.abs();
        let tol2 = 2.0 * tol1;
        if (x - xm).abs() <= tol2 - 0.5 * (b - a) {
            break;
        }
        let mut golden = true;
        if e.abs() > tol1 {
            let r = (x - w) * (fx - fv);
            let mut q = (x - v) * (fx - fw);
            let mut p = (x - v) * q - (x - w) * r;
            q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            }
            q = q.abs();
            let e_prev = e;
            e = d;
            if p.abs() < (0.5 * q * e_prev).abs() && p > q * (a - x) && p < q * (b - x) {
                d = p / q;
                let u = x + d;
                if u - a < tol2 || b - u < tol2 {
                    d = if xm >= x { tol1 } else { -tol1 };
                }
                golden = false;
            }
        }
        if golden {
            e = if x >= xm { a - x } else { b - x };
            d = GOLDEN * e;
        }
        let u = if d.abs() >= tol1 {
            x + d
        } else if d >= 0.0 {
            x + tol1
        } else {
            x - tol1
        };
        let fu = g(u);
        if fu <= fx {
            if u >= x {
                a = x;
            } else {
                b = x;
            }
            v = w;
            fv = fw;
            w = x;
            fw = fx;
            x = u;
            fx = fu;
        } else {
            if u < x {
                a = u;
            } else {
                b = u;
            }
            if fu <= fw || w == x {
                v = w;
                fv = fw;
                w = u;
                fw = fu;
            } else if fu <= fv || v == x || v == w {
                v = u;
                fv = fu;
            }
        }
    }
    (x, -fx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinc_interpolation_passes_through_samples_and_reconstructs_a_slow_sine() {
        let y: Vec<f64> = (0..200).map(|i| (i as f64 * 0.1).sin()).collect();
        assert_eq!(sinc_interpolate(&y, 50.0, 70), y[50]);
        let x = 100.37;
        let got = sinc_interpolate(&y, x, 70);
        assert!((got - (x * 0.1).sin()).abs() < 1e-3, "{got}");
    }

    #[test]
    fn brent_finds_the_vertex_of_a_parabola() {
        let (x, fx) = brent_maximize(|x| 3.0 - (x - 0.3).powi(2), -1.0, 1.0, 1e-9);
        assert!((x - 0.3).abs() < 1e-6);
        assert!((fx - 3.0).abs() < 1e-9);
    }

    #[test]
    fn improve_maximum_locates_a_peak_between_samples() {
        // A cosine sampled so that its crest lies at 40.3.
        let y: Vec<f64> = (0..100)
            .map(|i| (2.0 * PI * (i as f64 - 40.3) / 25.0).cos())
            .collect();
        let (x, v) = improve_maximum(&y, 40, DEPTH_REFINE);
        assert!((x - 40.3).abs() < 1e-3, "{x}");
        assert!((v - 1.0).abs() < 1e-3, "{v}");
    }
}
