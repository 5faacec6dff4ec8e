//! Peak refinement on sampled curves: windowed-sinc interpolation and its maximum.
//!
//! Both follow the numerics Boersma (1993) describes for the autocorrelation
//! pitch tracker (section 3, "interpolation"): a correlation curve sampled at
//! integer lags is band-limited, so its true maximum between samples is found
//! by sinc interpolation with a Hann-tapered kernel of a given depth (the
//! number of samples used on each side), and the maximum of that interpolant
//! is located with Brent's derivative-free method. Here Newton's method on
//! the interpolant's exact derivatives does that in one or two evaluations,
//! with Brent's method as the fallback.

use std::f64::consts::PI;

use wide::f64x2;

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
///
/// Newton's method on the interpolant's derivative, computed analytically
/// ([`sinc_with_derivatives`]), from the parabola through the three samples:
/// one or two steps reach the maximum to within 1e-4 of a sample, where
/// Brent's method on the interpolant itself needs about seven evaluations.
/// Where the interpolant is not concave, or Newton leaves the bracket, Brent's
/// method decides, as Praat's `NUMimproveMaximum` does throughout.
pub(crate) fn improve_maximum(y: &[f64], imid: usize, depth: usize) -> (f64, f64) {
    if imid == 0 || imid + 1 >= y.len() {
        let i = imid.min(y.len().saturating_sub(1));
        return (i as f64, y.get(i).copied().unwrap_or(0.0));
    }
    let centre = imid as f64;
    let (lo, hi) = (centre - 1.0, centre + 1.0);
    let (prev, here, next) = (y[imid - 1], y[imid], y[imid + 1]);
    let curvature = 2.0 * here - prev - next;
    let mut x = if curvature > 0.0 {
        centre + (0.5 * (next - prev) / curvature).clamp(-0.5, 0.5)
    } else {
        centre
    };
    for _ in 0..MAX_NEWTON_STEPS {
        let Some([f, f1, f2]) = sinc_with_derivatives(y, x, depth) else {
            break;
        };
        // Not concave (or not a number): no maximum to step to.
        if f2.is_nan() || f2 >= 0.0 {
            break;
        }
        let step = -f1 / f2;
        if step.abs() <= NEWTON_ACCEPT && (lo..=hi).contains(&(x + step)) {
            // The step lands within about 1e-5 of the maximum; the value
            // there is the quadratic model's.
            return (x + step, f + 0.5 * f1 * step);
        }
        x = (x + step.clamp(-0.5, 0.5)).clamp(lo, hi);
    }
    brent_maximize(|x| sinc_interpolate(y, x, depth), lo, hi, 1e-4)
}

/// Newton steps tried before Brent's method takes over.
const MAX_NEWTON_STEPS: usize = 6;
/// A Newton step this short (samples) ends the search: the next would move
/// the position by well under 1e-4 of a sample.
const NEWTON_ACCEPT: f64 = 0.005;

/// Value, first and second derivative (with respect to `x`) of
/// [`sinc_interpolate`]`(y, x, depth)`, or `None` where the kernel has fewer
/// than two samples a side (the curve's ends), `x` is outside the curve or
/// within 1e-4 above a sample (where the nearest tap's `sin(u) / u` needs
/// its series).
///
/// Each side's taps sit at distances `u = t + j` (`t` the distance to the
/// nearest sample on that side, `j = 0..depth`) and weigh
/// `sin(pi u) / (pi u) * (1 + cos(pi u / L)) / 2`, the taper's span
/// `L = t + depth` moving with `x` too; both factors are differentiated
/// exactly. The left side's `t` grows with `x`, the right side's shrinks.
/// The two sides run as the two lanes of a SIMD vector, each with the
/// same operations in the same order as a scalar evaluation would use.
pub(crate) fn sinc_with_derivatives(y: &[f64], x: f64, depth: usize) -> Option<[f64; 3]> {
    let n = y.len();
    if !(x > 0.0 && x < (n - 1) as f64) {
        return None;
    }
    let midleft = x.floor() as usize;
    let midright = midleft + 1;
    let depth = depth.min(midleft + 1).min(n - 1 - midleft);
    let d = x - midleft as f64;
    if depth < 2 || d < 1e-4 {
        return None;
    }
    let left = &y[midleft + 1 - depth..=midleft];
    let right = &y[midright..midright + depth];
    let (t0, t1) = (d, 1.0 - d);
    let depth_f = depth as f64;
    let inv_span = f64x2::new([1.0 / (t0 + depth_f), 1.0 / (t1 + depth_f)]);
    // (-1)^j sin(pi u) / pi and (-1)^j cos(pi u) at u = t + j: the sign
    // alternates with j, and sin(pi (1 - d)) = sin(pi d).
    let (sin_d, cos_d) = (PI * d).sin_cos();
    let mut sin_u = f64x2::splat(sin_d / PI);
    let mut cos_u = f64x2::new([cos_d, -cos_d]);
    // The taper angle pi u / L, rotated by pi / L per tap.
    let spans = inv_span.to_array();
    let (s0, c0) = (PI * t0 * spans[0]).sin_cos();
    let (s1, c1) = (PI * t1 * spans[1]).sin_cos();
    let (mut sin_taper, mut cos_taper) = (f64x2::new([s0, s1]), f64x2::new([c0, c1]));
    let (s0, c0) = (PI * spans[0]).sin_cos();
    let (s1, c1) = (PI * spans[1]).sin_cos();
    let (sin_step, cos_step) = (f64x2::new([s0, s1]), f64x2::new([c0, c1]));
    let zero = f64x2::splat(0.0);
    let (mut sum0, mut sum1, mut sum2) = (zero, zero, zero);
    for j in 0..depth {
        let value = f64x2::new([left[depth - 1 - j], right[j]]);
        let jf = j as f64;
        let (u0, u1) = (t0 + jf, t1 + jf);
        // One division for both reciprocals.
        let both = 1.0 / (u0 * u1);
        let inv_u = f64x2::new([u1 * both, u0 * both]);
        // sin(pi u) / (pi u) and its derivatives in t.
        let s = sin_u * inv_u;
        let s1 = inv_u * (cos_u - s);
        let s2 = f64x2::splat(-PI * PI) * s - f64x2::splat(2.0) * inv_u * s1;
        // The taper (1 + cos(pi v)) / 2 with v = u / L, dv/dt = (L - u) / L^2.
        let w = f64x2::splat(0.5) + f64x2::splat(0.5) * cos_taper;
        let dv = f64x2::splat(depth_f - jf) * inv_span * inv_span;
        let half_sin = f64x2::splat(0.5 * PI) * sin_taper;
        let w1 = -half_sin * dv;
        let w2 = dv
            * (f64x2::splat(-0.5 * PI * PI) * cos_taper * dv
                + f64x2::splat(2.0) * half_sin * inv_span);
        sum0 += value * s * w;
        sum1 += value * (s1 * w + s * w1);
        sum2 += value * (s2 * w + f64x2::splat(2.0) * s1 * w1 + s * w2);
        let c = cos_taper * cos_step - sin_taper * sin_step;
        sin_taper = cos_taper * sin_step + sin_taper * cos_step;
        cos_taper = c;
        sin_u = -sin_u;
        cos_u = -cos_u;
    }
    let (a, b, c) = (sum0.to_array(), sum1.to_array(), sum2.to_array());
    Some([a[0] + a[1], b[0] - b[1], c[0] + c[1]])
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
    fn derivatives_match_differences_of_the_interpolant() {
        let y: Vec<f64> = (0..300)
            .map(|i| (i as f64 * 0.13).sin() * (1.0 + 0.3 * (i as f64 * 0.041).cos()))
            .collect();
        for &x in &[3.7, 100.02, 100.5, 150.999, 211.31, 295.4] {
            let Some([f, f1, f2]) = sinc_with_derivatives(&y, x, DEPTH_REFINE) else {
                panic!("no derivatives at {x}");
            };
            let h = 1e-4;
            let at = |x: f64| sinc_interpolate(&y, x, DEPTH_REFINE);
            assert!((f - at(x)).abs() < 1e-12, "{x}: {f} vs {}", at(x));
            let d1 = (at(x + h) - at(x - h)) / (2.0 * h);
            let d2 = (at(x + h) - 2.0 * at(x) + at(x - h)) / (h * h);
            assert!((f1 - d1).abs() < 1e-6, "{x}: {f1} vs {d1}");
            assert!((f2 - d2).abs() < 1e-3, "{x}: {f2} vs {d2}");
        }
        // Too close to the ends for two samples a side.
        assert!(sinc_with_derivatives(&y, 0.5, DEPTH_REFINE).is_none());
        assert!(sinc_with_derivatives(&y, 298.5, DEPTH_REFINE).is_none());
    }

    #[test]
    fn newton_refinement_agrees_with_a_fine_brent_search() {
        // Normalised autocorrelations of noisy harmonic tones, as the pitch
        // and harmonicity analyses refine them.
        let mut state: u32 = 7;
        let mut worst = (0.0f64, 0.0f64);
        let mut peaks = 0;
        for k in 0..40 {
            let f0 = 80.0 + 11.3 * k as f64;
            let noise = 0.05 + 0.1 * (k % 5) as f64;
            let x: Vec<f64> = (0..638)
                .map(|i| {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    let t = i as f64 / 16_000.0;
                    (1..6)
                        .map(|h| (2.0 * PI * f0 * h as f64 * t + h as f64).sin() / h as f64)
                        .sum::<f64>()
                        + noise * ((state >> 8) as f64 / (1u32 << 24) as f64 - 0.5)
                })
                .collect();
            let r0: f64 = x.iter().map(|v| v * v).sum();
            let r: Vec<f64> = (0..320)
                .map(|lag| (0..638 - lag).map(|i| x[i] * x[i + lag]).sum::<f64>() / r0)
                .collect();
            for i in 2..215 {
                if !(r[i] > 0.2 && r[i] > r[i - 1] && r[i] >= r[i + 1]) {
                    continue;
                }
                peaks += 1;
                let (xn, fnew) = improve_maximum(&r, i, DEPTH_REFINE);
                let c = i as f64;
                let (xb, fb) = brent_maximize(
                    |x| sinc_interpolate(&r, x, DEPTH_REFINE),
                    c - 1.0,
                    c + 1.0,
                    1e-10,
                );
                worst.0 = worst.0.max((xn - xb).abs());
                worst.1 = worst.1.max((fnew - fb).abs());
            }
        }
        assert!(peaks > 100, "{peaks}");
        assert!(worst.0 < 1e-4 && worst.1 < 1e-8, "{worst:?}");
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
