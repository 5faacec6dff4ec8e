//! Intensity in dB as Praat's `Sound: To Intensity...` defines it.
//!
//! Each frame is the mean-subtracted signal squared and averaged under a
//! Kaiser-Bessel window (beta = 2 pi^2 + 0.5) that spans 6.4 periods of the
//! minimum pitch, expressed in dB re the auditory threshold (2e-5 Pa) with the
//! samples read as pascal, as Praat does. With the minimum pitch at Praat's
//! default of 100 Hz the window is 64 ms (1025 samples at 16 kHz). A copy of a
//! signal 6 dB louder scores exactly 6.02 dB more.

use super::SAMPLE_RATE;

/// Minimum pitch that sets the window length, Hz (Praat's default).
pub const INTENSITY_MIN_PITCH_HZ: f64 = 100.0;
/// Half the window, samples: floor(3.2 / 100 Hz * 16 kHz).
pub(crate) const HALF_WINDOW: usize = 512;
const WINDOW: usize = 2 * HALF_WINDOW + 1;
/// Lowest value reported, dB: digital silence and anything within 16-bit
/// dither of it.
pub const INTENSITY_FLOOR_DB: f32 = 0.0;

/// Reusable window for the per-frame intensity.
pub(crate) struct IntensityAnalyzer {
    window: Vec<f32>,
    window_sum: f64,
}

impl IntensityAnalyzer {
    pub fn new() -> Self {
        let half_duration = HALF_WINDOW as f64 / SAMPLE_RATE as f64;
        let beta = 2.0 * std::f64::consts::PI * std::f64::consts::PI + 0.5;
        let window: Vec<f32> = (0..WINDOW)
            .map(|i| {
                let x = (i as f64 - HALF_WINDOW as f64) / SAMPLE_RATE as f64 / half_duration;
                bessel_i0(beta * (1.0 - x * x).max(0.0).sqrt()) as f32
            })
            .collect();
        // Normalising the window leaves the weighted mean unchanged and keeps
        // the f32 sums far from overflow.
        let peak = window.iter().fold(0.0f32, |m, &v| m.max(v));
        let window: Vec<f32> = window.iter().map(|&v| v / peak).collect();
        let window_sum = window.iter().map(|&v| v as f64).sum();
        Self { window, window_sum }
    }

    /// Intensity (dB) of the frame centred on `samples[centre]`; `samples`
    /// must hold `HALF_WINDOW` samples on each side.
    pub fn analyze(&self, samples: &[f32], centre: usize) -> f32 {
        let part = &samples[centre - HALF_WINDOW..=centre + HALF_WINDOW];
        // sum w (x - m)^2 = sum w x^2 - 2 m sum w x + m^2 sum w, with m the
        // plain (unweighted) mean of the window, as Praat centres it.
        let mut sum_wxx = [0.0f32; 8];
        let mut sum_wx = [0.0f32; 8];
        let mut sum_x = [0.0f32; 8];
        let chunks = part.chunks_exact(8).zip(self.window.chunks_exact(8));
        for (xs, ws) in chunks {
            for k in 0..8 {
                let wx = ws[k] * xs[k];
                sum_wxx[k] += wx * xs[k];
                sum_wx[k] += wx;
                sum_x[k] += xs[k];
            }
        }
        let (mut wxx, mut wx, mut sx) = (
            sum_wxx.iter().map(|&v| v as f64).sum::<f64>(),
            sum_wx.iter().map(|&v| v as f64).sum::<f64>(),
            sum_x.iter().map(|&v| v as f64).sum::<f64>(),
        );
        let tail = part.len() - part.len() % 8;
        for (&x, &w) in part[tail..].iter().zip(&self.window[tail..]) {
            let (x, w) = (x as f64, w as f64);
            wxx += w * x * x;
            wx += w * x;
            sx += x;
        }
        let mean = sx / part.len() as f64;
        let power =
            ((wxx - 2.0 * mean * wx + mean * mean * self.window_sum) / self.window_sum).max(0.0);
        to_db(power)
    }
}

/// Mean square (Pa^2) to dB re (2e-5 Pa)^2, floored at [`INTENSITY_FLOOR_DB`].
pub(crate) fn to_db(power: f64) -> f32 {
    const REFERENCE: f64 = 4.0e-10;
    let ratio = power / REFERENCE;
    if ratio.is_nan() || ratio <= 1.0 {
        return INTENSITY_FLOOR_DB;
    }
    (10.0 * ratio.log10()) as f32
}

/// Modified Bessel function of the first kind, order 0 (power series; the
/// argument here is at most about 20, where 60 terms are ample).
fn bessel_i0(x: f64) -> f64 {
    let q = x * x / 4.0;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..200 {
        term *= q / (k as f64 * k as f64);
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bessel_i0_matches_known_values() {
        assert!((bessel_i0(0.0) - 1.0).abs() < 1e-15);
        assert!((bessel_i0(1.0) - 1.266_065_877_752_008_4).abs() < 1e-12);
        assert!((bessel_i0(10.0) - 2_815.716_628_466_254).abs() < 1e-6);
    }

    #[test]
    fn a_full_scale_sine_is_about_91_db_and_twice_the_amplitude_adds_6_db() {
        let n = 4 * WINDOW;
        let sine: Vec<f32> = (0..n)
            .map(|i| {
                (2.0 * std::f64::consts::PI * 220.0 * i as f64 / SAMPLE_RATE as f64).sin() as f32
            })
            .collect();
        let a = IntensityAnalyzer::new();
        let db = a.analyze(&sine, n / 2);
        assert!((db - 90.97).abs() < 0.05, "{db}");
        let half: Vec<f32> = sine.iter().map(|v| v * 0.5).collect();
        let diff = db - a.analyze(&half, n / 2);
        assert!((diff - 6.02).abs() < 0.01, "{diff}");
    }
}
