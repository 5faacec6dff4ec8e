//! Full-covariance Gaussian voice models from sufficient statistics: the
//! likelihoods and delta-BIC the clustering and resegmentation compare.

use crate::features::spectral::TIMBRE_DIMS;

/// Dimensions of the frame vector: MFCC 1-13 and F0.
pub(super) const D: usize = TIMBRE_DIMS + 1;
/// Free parameters of one full-covariance Gaussian.
pub(super) const PARAMS: f64 = (D + D * (D + 1) / 2) as f64;

/// Sufficient statistics of a set of frame vectors.
#[derive(Debug, Clone)]
pub(super) struct Stats {
    pub(super) n: f64,
    pub(super) sum: [f64; D],
    /// Sum of outer products, full (symmetric) matrix, row-major.
    pub(super) outer: [f64; D * D],
}

impl Stats {
    pub(super) fn zero() -> Self {
        Self {
            n: 0.0,
            sum: [0.0; D],
            outer: [0.0; D * D],
        }
    }

    pub(super) fn push(&mut self, x: &[f64; D]) {
        self.n += 1.0;
        for i in 0..D {
            self.sum[i] += x[i];
            // Upper triangle only; mirrored when a covariance is made.
            for j in i..D {
                self.outer[i * D + j] += x[i] * x[j];
            }
        }
    }

    pub(super) fn add(&mut self, o: &Stats) {
        self.n += o.n;
        for (a, b) in self.sum.iter_mut().zip(&o.sum) {
            *a += b;
        }
        for (a, b) in self.outer.iter_mut().zip(&o.outer) {
            *a += b;
        }
    }

    pub(super) fn mean(&self) -> [f64; D] {
        let mut m = [0.0; D];
        if self.n > 0.0 {
            for (m, s) in m.iter_mut().zip(&self.sum) {
                *m = s / self.n;
            }
        }
        m
    }

    /// Scatter about the mean (upper triangle filled, mirrored).
    pub(super) fn scatter(&self) -> [f64; D * D] {
        let m = self.mean();
        let mut c = [0.0; D * D];
        for i in 0..D {
            for j in i..D {
                let v = self.outer[i * D + j] - self.n * m[i] * m[j];
                c[i * D + j] = v;
                c[j * D + i] = v;
            }
        }
        c
    }

    /// Covariance shrunk towards `prior` with the weight of `tau` frames.
    pub(super) fn covariance(&self, prior: &[f64; D * D], tau: f64) -> [f64; D * D] {
        let mut c = self.scatter();
        let w = self.n + tau;
        for (c, p) in c.iter_mut().zip(prior) {
            *c = (*c + tau * p) / w;
        }
        c
    }
}

/// Cholesky factor (lower, row-major) of a symmetric positive definite
/// matrix; `None` when it is not positive definite.
pub(super) fn cholesky(a: &[f64; D * D]) -> Option<[f64; D * D]> {
    let mut l = [0.0; D * D];
    for i in 0..D {
        for j in 0..=i {
            let mut s = a[i * D + j];
            for k in 0..j {
                s -= l[i * D + k] * l[j * D + k];
            }
            if i == j {
                if s <= 0.0 || !s.is_finite() {
                    return None;
                }
                l[i * D + i] = s.sqrt();
            } else {
                l[i * D + j] = s / l[j * D + j];
            }
        }
    }
    Some(l)
}

pub(super) fn log_det(l: &[f64; D * D]) -> f64 {
    (0..D).map(|i| 2.0 * l[i * D + i].ln()).sum()
}

/// Inverse of `L L^T` from its Cholesky factor.
pub(super) fn inverse(l: &[f64; D * D]) -> [f64; D * D] {
    // Columns of L^-1 by forward substitution, then (L^-1)^T L^-1.
    let mut li = [0.0; D * D];
    for c in 0..D {
        for i in c..D {
            let mut s = if i == c { 1.0 } else { 0.0 };
            for k in c..i {
                s -= l[i * D + k] * li[k * D + c];
            }
            li[i * D + c] = s / l[i * D + i];
        }
    }
    let mut inv = [0.0; D * D];
    for i in 0..D {
        for j in i..D {
            let s: f64 = (j..D).map(|k| li[k * D + i] * li[k * D + j]).sum();
            inv[i * D + j] = s;
            inv[j * D + i] = s;
        }
    }
    inv
}

/// `n log|Sigma|` of a model (what delta-BIC compares); a degenerate
/// covariance counts as infinitely good so nothing merges into it blindly.
pub(super) fn n_log_det(s: &Stats, prior: &[f64; D * D], tau: f64) -> f64 {
    cholesky(&s.covariance(prior, tau)).map_or(f64::NEG_INFINITY, |l| s.n * log_det(&l))
}

/// A cluster model for the Viterbi pass.
pub(super) struct Model {
    pub(super) mean: [f64; D],
    pub(super) inv: [f64; D * D],
    /// `log|2 pi Sigma|`.
    pub(super) log_norm: f64,
}

impl Model {
    pub(super) fn new(s: &Stats, prior: &[f64; D * D], tau: f64) -> Option<Model> {
        let l = cholesky(&s.covariance(prior, tau))?;
        Some(Model {
            mean: s.mean(),
            inv: inverse(&l),
            log_norm: log_det(&l) + D as f64 * (2.0 * std::f64::consts::PI).ln(),
        })
    }

    /// Summed log-likelihood of the frames behind `s`.
    pub(super) fn log_likelihood(&self, s: &Stats) -> f64 {
        let m = s.mean();
        let c = s.scatter();
        let mut trace = 0.0;
        let mut quad = 0.0;
        for i in 0..D {
            let di = m[i] - self.mean[i];
            for j in 0..D {
                let p = self.inv[i * D + j];
                trace += p * c[i * D + j];
                quad += p * di * (m[j] - self.mean[j]);
            }
        }
        -0.5 * (s.n * self.log_norm + trace + s.n * quad)
    }
}

/// `n log|Sigma|` of the union of `a` and `b`, without building it.
pub(super) fn merged_n_log_det(a: &Stats, b: &Stats, prior: &[f64; D * D], tau: f64) -> f64 {
    let n = a.n + b.n;
    if n <= 0.0 {
        return 0.0;
    }
    let mut mean = [0.0; D];
    for (m, (x, y)) in mean.iter_mut().zip(a.sum.iter().zip(&b.sum)) {
        *m = (x + y) / n;
    }
    let w = n + tau;
    let mut c = [0.0; D * D];
    for i in 0..D {
        for j in i..D {
            let v = (a.outer[i * D + j] + b.outer[i * D + j] - n * mean[i] * mean[j]
                + tau * prior[i * D + j])
                / w;
            c[i * D + j] = v;
            c[j * D + i] = v;
        }
    }
    cholesky(&c).map_or(f64::NEG_INFINITY, |l| n * log_det(&l))
}

/// Delta-BIC of merging `a` and `b` (negative: one model is better),
/// given their own `n log|Sigma|`.
pub(super) fn delta_bic(
    a: &Stats,
    b: &Stats,
    own: (f64, f64),
    prior: &[f64; D * D],
    tau: f64,
    lambda: f64,
) -> f64 {
    let merged = merged_n_log_det(a, b, prior, tau);
    0.5 * (merged - own.0 - own.1) - lambda * 0.5 * PARAMS * (a.n + b.n).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_inverse_and_log_det_agree_with_a_diagonal_matrix() {
        let mut a = [0.0; D * D];
        for i in 0..D {
            a[i * D + i] = (i + 1) as f64;
        }
        a[1] = 0.5;
        a[D] = 0.5;
        let l = cholesky(&a).expect("positive definite");
        let inv = inverse(&l);
        for i in 0..D {
            for j in 0..D {
                let p: f64 = (0..D).map(|k| a[i * D + k] * inv[k * D + j]).sum();
                assert!((p - if i == j { 1.0 } else { 0.0 }).abs() < 1e-9);
            }
        }
        let expected: f64 = (1..=D).map(|i| (i as f64).ln()).sum::<f64>() + (1.75f64 / 2.0).ln();
        assert!((log_det(&l) - expected).abs() < 1e-9);
    }
}
