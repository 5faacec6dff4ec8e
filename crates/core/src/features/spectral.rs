//! Spectral balance per frame with the eGeMAPS definitions, plus timbre cues for speaker turns.
//!
//! Eyben, F., Scherer, K. R., Schuller, B. W., et al. (2016). "The Geneva
//! Minimalistic Acoustic Parameter Set (GeMAPS) for Voice Research and
//! Affective Computing." *IEEE Trans. Affective Computing* 7(2), 190-202.
//! As openSMILE's eGeMAPSv02 configuration computes them: a 20 ms Hamming
//! window (here centred on the frame), zero-padded to a 512-point FFT, power
//! spectrum P(f):
//!
//! - alpha ratio (dB) = 10 log10( sum P over 1-5 kHz / sum P below 1 kHz );
//! - Hammarberg index (dB) = 10 log10( max P below 2 kHz / max P in 2-5 kHz );
//! - spectral slope 0-500 Hz and 500-1500 Hz (dB/Hz): least-squares slope of
//!   10 log10 P(f) against f over the band's FFT bins, with openSMILE's
//!   normalisation (the bin count taken as the index span);
//! - MFCC 1-13: 26 mel bands 20-8000 Hz on the power spectrum, HTK-style
//!   DCT-II with cepstral liftering 22 (openSMILE `cMfcc`); 1-4 for
//!   spectral steadiness (filled pauses), all 13 for speaker timbre;
//! - spectral centroid (Hz): power-weighted mean frequency, 0-8 kHz.

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};

use super::SAMPLE_RATE;

/// Window length, samples (20 ms).
pub(crate) const WINDOW: usize = 320;
const FFT_LEN: usize = 512;
const BINS: usize = FFT_LEN / 2 + 1;
const BIN_HZ: f64 = SAMPLE_RATE as f64 / FFT_LEN as f64;
const MEL_BANDS: usize = 26;
/// MFCCs kept for speaker timbre (1-13; c0, the frame's level, is left out
/// so a louder speaker is not a different one).
pub const TIMBRE_DIMS: usize = 13;
/// Highest bin a slope band reaches (1500 Hz).
const SLOPE_TOP_BIN: usize = 48;
const CEP_LIFTER: f64 = 22.0;
/// Power below which a bin counts as empty in the log spectrum.
const POWER_FLOOR: f64 = 1e-10;
/// openSMILE's 16-bit sample scaling for the mel spectrum (`htkcompatible`).
const HTK_SCALE: f32 = 32768.0;

/// What one frame's spectrum yields.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct SpectralFrame {
    pub alpha_ratio_db: f32,
    pub alpha_band_db: f32,
    pub hammarberg_db: f32,
    pub slope_0_500: f32,
    pub slope_500_1500: f32,
    pub tilt_500_1500: f32,
    pub centroid_hz: f32,
    pub mfcc: [f32; 4],
    pub timbre: [f32; TIMBRE_DIMS],
}

struct MelBand {
    first_bin: usize,
    weights: Vec<f64>,
}

/// Reusable buffers for the per-frame spectrum.
pub(crate) struct SpectralAnalyzer {
    forward: Arc<dyn RealToComplex<f32>>,
    window: Vec<f32>,
    frame: Vec<f32>,
    spectrum: Vec<Complex<f32>>,
    scratch: Vec<Complex<f32>>,
    power: Vec<f64>,
    log_power: Vec<f64>,
    mel: Vec<MelBand>,
    dct: Vec<[f64; MEL_BANDS]>,
}

fn hz_to_mel(f: f64) -> f64 {
    1127.0 * (1.0 + f / 700.0).ln()
}

impl SpectralAnalyzer {
    pub fn new() -> Self {
        let mut planner = RealFftPlanner::<f32>::new();
        let forward = planner.plan_fft_forward(FFT_LEN);
        let window = (0..WINDOW)
            .map(|i| {
                (0.54
                    - 0.46 * (2.0 * std::f64::consts::PI * i as f64 / (WINDOW as f64 - 1.0)).cos())
                    as f32
            })
            .collect();
        let (lo, hi) = (hz_to_mel(20.0), hz_to_mel(8000.0));
        let centre = |b: usize| lo + (hi - lo) * b as f64 / (MEL_BANDS + 1) as f64;
        let mel = (0..MEL_BANDS)
            .map(|b| {
                let (m0, m1, m2) = (centre(b), centre(b + 1), centre(b + 2));
                let mut first_bin = BINS;
                let mut weights = Vec::new();
                for j in 0..BINS {
                    let m = hz_to_mel(j as f64 * BIN_HZ);
                    let w = if m > m0 && m <= m1 {
                        (m - m0) / (m1 - m0)
                    } else if m > m1 && m < m2 {
                        (m2 - m) / (m2 - m1)
                    } else {
                        0.0
                    };
                    if w > 0.0 {
                        if first_bin == BINS {
                            first_bin = j;
                        }
                        weights.resize(j - first_bin, 0.0);
                        weights.push(w);
                    }
                }
                MelBand {
                    first_bin: first_bin.min(BINS - 1),
                    weights,
                }
            })
            .collect();
        let dct = (1..=TIMBRE_DIMS)
            .map(|i| {
                let lifter =
                    1.0 + CEP_LIFTER / 2.0 * (std::f64::consts::PI * i as f64 / CEP_LIFTER).sin();
                let mut row = [0.0; MEL_BANDS];
                for (b, v) in row.iter_mut().enumerate() {
                    *v = (2.0 / MEL_BANDS as f64).sqrt()
                        * (std::f64::consts::PI * i as f64 * (b as f64 + 0.5) / MEL_BANDS as f64)
                            .cos()
                        * lifter;
                }
                row
            })
            .collect();
        Self {
            scratch: forward.make_scratch_vec(),
            spectrum: forward.make_output_vec(),
            forward,
            window,
            frame: vec![0.0; FFT_LEN],
            power: vec![0.0; BINS],
            log_power: vec![0.0; BINS],
            mel,
            dct,
        }
    }

    /// Spectral features of the 20 ms centred on `samples[centre]`; `samples`
    /// must hold half a window on each side.
    pub fn analyze(&mut self, samples: &[f32], centre: usize) -> SpectralFrame {
        let start = centre - WINDOW / 2;
        for ((dst, &x), &w) in self.frame[..WINDOW]
            .iter_mut()
            .zip(&samples[start..start + WINDOW])
            .zip(&self.window)
        {
            *dst = x * w;
        }
        self.frame[WINDOW..].fill(0.0);
        let _ = self.forward.process_with_scratch(
            &mut self.frame,
            &mut self.spectrum,
            &mut self.scratch,
        );
        for (p, c) in self.power.iter_mut().zip(&self.spectrum) {
            *p = c.norm_sqr() as f64;
        }
        // Only the slope bands need the log spectrum.
        for (lp, &p) in self.log_power[..=SLOPE_TOP_BIN].iter_mut().zip(&self.power) {
            *lp = 10.0 * p.max(POWER_FLOOR).log10();
        }
        let p = &self.power;
        let bin = |hz: f64| (hz / BIN_HZ) as usize;

        let below_1k: f64 = p[..bin(1000.0)].iter().sum();
        let band_1_5k: f64 = p[bin(1000.0)..=bin(5000.0)].iter().sum();
        let alpha = if below_1k > 0.0 {
            10.0 * (band_1_5k.max(POWER_FLOOR) / below_1k).log10()
        } else {
            0.0
        };
        // The same balance inside the telephone band (300-3400 Hz), clear of
        // its edges, which a telephone line or a small loudspeaker leaves as it
        // is: high over low, as the alpha ratio (1-3 kHz over 400-1000 Hz).
        let low_band: f64 = p[bin(400.0)..bin(1000.0)].iter().sum();
        let high_band: f64 = p[bin(1000.0)..=bin(3000.0)].iter().sum();
        let alpha_band = if low_band > 0.0 {
            10.0 * (high_band.max(POWER_FLOOR) / low_band).log10()
        } else {
            0.0
        };
        let max_0_2k = p[..bin(2000.0)].iter().fold(0.0f64, |m, &v| m.max(v));
        let max_2_5k = p[bin(2000.0)..=bin(5000.0)]
            .iter()
            .fold(0.0f64, |m, &v| m.max(v));
        let hammarberg = if max_2_5k > 0.0 {
            10.0 * (max_0_2k.max(POWER_FLOOR) / max_2_5k).log10()
        } else {
            0.0
        };
        let total: f64 = p.iter().sum();
        let centroid = if total > 0.0 {
            p.iter()
                .enumerate()
                .map(|(j, &v)| j as f64 * BIN_HZ * v)
                .sum::<f64>()
                / total
        } else {
            0.0
        };

        let mut mel_log = [0.0f64; MEL_BANDS];
        let scale = (HTK_SCALE as f64) * (HTK_SCALE as f64);
        for (out, band) in mel_log.iter_mut().zip(&self.mel) {
            let e: f64 = band
                .weights
                .iter()
                .zip(&p[band.first_bin..])
                .map(|(w, v)| w * v)
                .sum();
            *out = (e * scale).max(1.0).ln();
        }
        let mut timbre = [0.0f32; TIMBRE_DIMS];
        for (c, row) in timbre.iter_mut().zip(&self.dct) {
            *c = row.iter().zip(&mel_log).map(|(a, b)| a * b).sum::<f64>() as f32;
        }
        let mut mfcc = [0.0f32; 4];
        mfcc.copy_from_slice(&timbre[..4]);
        let high = self.band_slope(500.0, 1500.0);

        SpectralFrame {
            alpha_ratio_db: alpha as f32,
            alpha_band_db: alpha_band as f32,
            hammarberg_db: hammarberg as f32,
            slope_0_500: self.band_slope(0.0, 500.0).0 as f32,
            slope_500_1500: high.0 as f32,
            tilt_500_1500: high.1 as f32,
            centroid_hz: centroid as f32,
            mfcc,
            timbre,
        }
    }

    /// The band slope of the log spectrum (dB/Hz) twice: openSMILE's, and
    /// the least-squares line's. Band edges fall on bins here (31.25 Hz
    /// spacing), so every edge weight is 1.
    ///
    /// openSMILE normalises with one bin fewer than it sums (`N - 1` for `N`
    /// bins), which adds `-mean level * Sum f / denominator` to the slope: a
    /// louder frame reads steeper (-0.55 dB/kHz per dB over 500-1500 Hz). The
    /// first value keeps that, for parity with eGeMAPS' `slope500-1500`; the
    /// second, over the true bin count, does not move with the level.
    fn band_slope(&self, lo_hz: f64, hi_hz: f64) -> (f64, f64) {
        let lo = (lo_hz / BIN_HZ) as usize;
        let hi = (hi_hz / BIN_HZ) as usize;
        let n_opensmile = (hi - lo) as f64;
        let n_bins = (hi - lo + 1) as f64;
        let (mut sf, mut s2f, mut sum_a, mut sum_b) = (0.0, 0.0, 0.0, 0.0);
        for j in lo..=hi {
            let f = j as f64 * BIN_HZ;
            let l = self.log_power[j];
            sf += f;
            s2f += f * f;
            sum_a += f * l;
            sum_b += l;
        }
        let slope = |n: f64| {
            let denominator = n * s2f - sf * sf;
            if denominator == 0.0 {
                0.0
            } else {
                (n * sum_a - sf * sum_b) / denominator
            }
        };
        (slope(n_opensmile), slope(n_bins))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine(freqs: &[(f64, f64)]) -> Vec<f32> {
        (0..2000)
            .map(|i| {
                let t = i as f64 / SAMPLE_RATE as f64;
                freqs
                    .iter()
                    .map(|(f, a)| a * (2.0 * std::f64::consts::PI * f * t).sin())
                    .sum::<f64>() as f32
            })
            .collect()
    }

    #[test]
    fn more_high_frequency_energy_raises_alpha_ratio_and_lowers_hammarberg() {
        let mut a = SpectralAnalyzer::new();
        let dull = a.analyze(&sine(&[(300.0, 0.5), (3000.0, 0.01)]), 1000);
        let bright = a.analyze(&sine(&[(300.0, 0.5), (3000.0, 0.3)]), 1000);
        assert!(bright.alpha_ratio_db > dull.alpha_ratio_db + 20.0);
        assert!(bright.hammarberg_db < dull.hammarberg_db - 20.0);
        assert!(bright.centroid_hz > dull.centroid_hz);
    }

    #[test]
    fn the_telephone_band_moves_the_alpha_ratio_and_not_its_band_limited_twin() {
        let mut a = SpectralAnalyzer::new();
        // A 125 Hz voice: harmonics falling 6 dB an octave up to 5 kHz, then the same voice
        // with what a telephone line removes (below 300 Hz and above 3.4 kHz).
        let voice: Vec<(f64, f64)> = (1..=40)
            .map(|k| (125.0 * k as f64, 0.3 / k as f64))
            .collect();
        let line: Vec<(f64, f64)> = voice
            .iter()
            .copied()
            .filter(|&(f, _)| (300.0..=3400.0).contains(&f))
            .collect();
        let full = a.analyze(&sine(&voice), 1000);
        let phone = a.analyze(&sine(&line), 1000);
        let alpha_moved = phone.alpha_ratio_db - full.alpha_ratio_db;
        let band_moved = (phone.alpha_band_db - full.alpha_band_db).abs();
        assert!(alpha_moved > 3.0, "alpha ratio moved {alpha_moved} dB");
        assert!(
            band_moved < 0.5,
            "band-limited alpha ratio moved {band_moved} dB"
        );
    }

    #[test]
    fn a_spectrum_falling_with_frequency_has_a_negative_slope() {
        let mut a = SpectralAnalyzer::new();
        let s = a.analyze(&sine(&[(100.0, 0.5), (250.0, 0.2), (400.0, 0.05)]), 1000);
        assert!(s.slope_0_500 < 0.0, "{}", s.slope_0_500);
    }

    #[test]
    fn the_tilt_stays_when_the_level_changes_and_opensmiles_slope_does_not() {
        let mut a = SpectralAnalyzer::new();
        let voice = [(600.0, 0.3), (900.0, 0.15), (1200.0, 0.05), (1400.0, 0.02)];
        let quiet = a.analyze(&sine(&voice), 1000);
        let louder: Vec<(f64, f64)> = voice.iter().map(|&(f, x)| (f, x * 2.0)).collect();
        let loud = a.analyze(&sine(&louder), 1000);
        // +6 dB: the least-squares line keeps its slope ...
        let tilt_moved = (loud.tilt_500_1500 - quiet.tilt_500_1500).abs() * 1000.0;
        assert!(tilt_moved < 0.01, "tilt moved {tilt_moved} dB/kHz");
        assert!(quiet.tilt_500_1500 < 0.0, "{}", quiet.tilt_500_1500);
        // ... where openSMILE's normalisation steepens it by about 0.55 dB/kHz per dB.
        let slope_moved = (loud.slope_500_1500 - quiet.slope_500_1500) * 1000.0;
        assert!(
            (-4.5..-2.5).contains(&slope_moved),
            "openSMILE's slope moved {slope_moved} dB/kHz"
        );
    }
}
