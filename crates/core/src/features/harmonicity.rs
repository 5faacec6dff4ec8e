//! Harmonics-to-noise ratio per frame as Praat's `Sound: To Harmonicity (cc)...` defines it.
//!
//! Boersma (1993) section 4: if a frame's normalised correlation at the period
//! lag is r, the periodic part carries r of the energy and the noise 1 - r, so
//! HNR = 10 log10(r / (1 - r)) dB. Praat's cc variant uses the forward
//! cross-correlation of one floor period (1/75 s, 210 samples) with the
//! signal shifted by every lag up to one further period, normalised by both
//! parts' energies; the frame takes its strongest maximum (no path costs, the
//! voicing threshold at 0) unless the frame is near-silent relative to the
//! loudest sample so far (silence threshold 0.1). Praat's defaults:
//! time step 0.01 s, minimum pitch 75 Hz, silence threshold 0.1, 1 period per
//! window. The cross-correlation is computed with one FFT pair here rather
//! than Praat's direct sums (the same values), and the strongest maximum is
//! refined on a sinc interpolant of depth 70 where Praat uses up to 700
//! (HNR means move by under 0.1 dB on the speech fixtures).

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use wide::f64x2;

use super::interp::{improve_maximum, DEPTH_REFINE};
#[cfg(test)]
use super::pitch::local_mean;
use super::pitch::PERIOD;

/// Analysis window in samples: one floor period rounded down to even (210).
const WINDOW: usize = 2 * ((213 / 2) - 1);
/// Longest lag searched, samples.
const MAX_LAG: usize = WINDOW;
const _: () = assert!(MAX_LAG.is_multiple_of(2), "lags are normalised in pairs");
const SPAN: usize = WINDOW + MAX_LAG;
const FFT_LEN: usize = 512;
const SILENCE_THRESHOLD: f64 = 0.1;
/// Samples before the frame centre where the correlated stretch starts:
/// Praat starts one floor period plus half a sample before the centre.
pub(crate) const LOOKBACK: usize = 214;
/// Samples after the frame centre the analysis reads: the local mean looks
/// one floor period ahead, further than the correlated stretch.
pub(crate) const LOOKAHEAD: usize = if SPAN - LOOKBACK > PERIOD {
    SPAN - LOOKBACK
} else {
    PERIOD
};
/// Only the strongest raw maximum is refined: the frame keeps the strongest
/// one, and refinement moves strengths by far less than the gaps between
/// rival maxima.
const REFINED: usize = 1;

/// Reusable buffers for the per-frame cross-correlation.
pub(crate) struct HarmonicityAnalyzer {
    forward: Arc<dyn RealToComplex<f32>>,
    inverse: Arc<dyn ComplexToReal<f32>>,
    x: Vec<f32>,
    y: Vec<f32>,
    spec_x: Vec<Complex<f32>>,
    spec_y: Vec<Complex<f32>>,
    scratch_fwd: Vec<Complex<f32>>,
    scratch_inv: Vec<Complex<f32>>,
    energy: Vec<f64>,
    /// Normalised correlation at lags -MAX_LAG..=MAX_LAG.
    r: Vec<f64>,
    raw: Vec<(f64, usize)>,
}

impl HarmonicityAnalyzer {
    pub fn new() -> Self {
        let mut planner = RealFftPlanner::<f32>::new();
        let forward = planner.plan_fft_forward(FFT_LEN);
        let inverse = planner.plan_fft_inverse(FFT_LEN);
        Self {
            scratch_fwd: forward.make_scratch_vec(),
            scratch_inv: inverse.make_scratch_vec(),
            spec_x: forward.make_output_vec(),
            spec_y: forward.make_output_vec(),
            forward,
            inverse,
            x: vec![0.0; FFT_LEN],
            y: vec![0.0; FFT_LEN],
            energy: vec![0.0; SPAN + 1],
            r: vec![0.0; 2 * MAX_LAG + 1],
            raw: Vec::with_capacity(64),
        }
    }

    /// HNR in dB of the frame centred between `samples[centre - 1]` and
    /// `samples[centre]`, or `None` where Praat reports the frame as silent
    /// (-200 dB). `samples` must hold [`LOOKBACK`] samples before and
    /// [`LOOKAHEAD`] after `centre`; `mean` is its [`local_mean`] and
    /// `global_peak` the largest absolute sample so far.
    pub fn analyze(
        &mut self,
        samples: &[f32],
        centre: usize,
        mean: f64,
        global_peak: f64,
    ) -> Option<f32> {
        let mean32 = mean as f32;
        let half = WINDOW / 2;
        let local_peak = samples[centre - half..centre + half]
            .iter()
            .fold(0.0f32, |m, &v| m.max((v - mean32).abs())) as f64;
        let intensity = if global_peak <= 0.0 || local_peak >= global_peak {
            if local_peak > 0.0 {
                1.0
            } else {
                0.0
            }
        } else {
            local_peak / global_peak
        };
        let unvoiced = (2.0 - intensity / SILENCE_THRESHOLD).max(0.0);
        // A strength is at most 1 and must beat the unvoiced score strictly.
        if unvoiced >= 1.0 || local_peak == 0.0 {
            return None;
        }

        let start = centre - LOOKBACK;
        for (dst, &v) in self.y[..SPAN].iter_mut().zip(&samples[start..start + SPAN]) {
            *dst = v - mean32;
        }
        self.y[SPAN..].fill(0.0);
        self.x[..WINDOW].copy_from_slice(&self.y[..WINDOW]);
        self.x[WINDOW..].fill(0.0);
        self.energy[0] = 0.0;
        for i in 0..SPAN {
            let v = self.y[i] as f64;
            self.energy[i + 1] = self.energy[i] + v * v;
        }
        let sum_x2 = self.energy[WINDOW];
        if sum_x2.is_nan() || sum_x2 <= 0.0 {
            return None;
        }
        let _ =
            self.forward
                .process_with_scratch(&mut self.x, &mut self.spec_x, &mut self.scratch_fwd);
        let _ =
            self.forward
                .process_with_scratch(&mut self.y, &mut self.spec_y, &mut self.scratch_fwd);
        for (y, x) in self.spec_y.iter_mut().zip(&self.spec_x) {
            *y *= x.conj();
        }
        // The inverse overwrites `y` with the cross-correlation.
        let _ =
            self.inverse
                .process_with_scratch(&mut self.spec_y, &mut self.y, &mut self.scratch_inv);
        let scale = 1.0 / FFT_LEN as f64;
        self.r[MAX_LAG] = 1.0;
        // Lags 1..=MAX_LAG two at a time, then mirrored. Where the shifted
        // part has no energy the quotient is discarded for 0.
        let (below, above) = self.r.split_at_mut(MAX_LAG + 1);
        let (energy, y) = (&self.energy, &self.y);
        let (sum_x2v, scalev, zero) = (f64x2::splat(sum_x2), f64x2::splat(scale), f64x2::ZERO);
        for (i, pair) in above.chunks_exact_mut(2).enumerate() {
            let lag = 1 + 2 * i;
            let upper = f64x2::new([energy[lag + WINDOW], energy[lag + 1 + WINDOW]]);
            let lower = f64x2::new([energy[lag], energy[lag + 1]]);
            let sum_y2 = upper - lower;
            let c = f64x2::new([y[lag] as f64, y[lag + 1] as f64]);
            let q = c * scalev / (sum_x2v * sum_y2).sqrt();
            pair.copy_from_slice(&sum_y2.simd_gt(zero).select(q, zero).to_array());
        }
        for (down, &up) in below[..MAX_LAG].iter_mut().rev().zip(above.iter()) {
            *down = up;
        }

        let r = &self.r;
        self.raw.clear();
        for lag in 2..MAX_LAG {
            let (prev, here, next) = (r[MAX_LAG + lag - 1], r[MAX_LAG + lag], r[MAX_LAG + lag + 1]);
            if here > 0.0 && here > prev && here >= next {
                // Parabolic peak height: ranks the maxima as well as Praat's
                // sinc estimate does, at a fraction of the cost.
                let dr = 0.5 * (next - prev);
                let d2r = 2.0 * here - prev - next;
                let height = if d2r > 0.0 {
                    here + 0.5 * dr * dr / d2r
                } else {
                    here
                };
                self.raw.push((height, lag));
            }
        }
        // Strongest first; ties keep the shorter lag, as Praat's order would.
        self.raw
            .sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut best = f64::NEG_INFINITY;
        for &(_, lag) in self.raw.iter().take(REFINED) {
            let (_, mut s) = improve_maximum(r, MAX_LAG + lag, DEPTH_REFINE);
            if s > 1.0 {
                s = 1.0 / s;
            }
            best = best.max(s);
        }
        if best.is_nan() || best <= unvoiced {
            return None;
        }
        let db = if best <= 1e-15 {
            -150.0
        } else if best > 1.0 - 1e-15 {
            150.0
        } else {
            10.0 * (best / (1.0 - best)).log10()
        };
        Some(db as f32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_periodic_pulse_train_has_a_high_hnr_and_noise_a_low_one() {
        let n = 2000;
        let pulses: Vec<f32> = (0..n)
            .map(|i| {
                let phase = (i % 80) as f32 / 80.0;
                (-(phase * 12.0)).exp() - 0.1
            })
            .collect();
        let mut a = HarmonicityAnalyzer::new();
        let hnr = a
            .analyze(&pulses, 1000, local_mean(&pulses, 1000), 1.0)
            .unwrap_or(-200.0);
        assert!(hnr > 30.0, "{hnr}");

        let mut state: u32 = 12345;
        let noise: Vec<f32> = (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect();
        let hnr = a
            .analyze(&noise, 1000, local_mean(&noise, 1000), 0.5)
            .unwrap_or(-200.0);
        assert!(hnr < 3.0, "{hnr}");
    }
}
