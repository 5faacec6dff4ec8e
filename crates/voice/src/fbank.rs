//! Kaldi log-mel filterbank features, as `torchaudio.compliance.kaldi.fbank` computes them with
//! the options CAM++ was trained on: 80 bins, 25 ms frames every 10 ms at 16 kHz, no dither,
//! DC removed per frame, pre-emphasis 0.97, Povey window, FFT of 512, power spectrum, mel bins
//! from 20 Hz to the Nyquist frequency on Kaldi's mel scale (1127 ln(1 + f / 700)), natural
//! log floored at the float epsilon, frames only where a whole window fits ("snip edges").

use realfft::{RealFftPlanner, RealToComplex};
use std::sync::{Arc, OnceLock};

/// Mel bins per frame.
pub const FBANK_BINS: usize = 80;
/// Samples per analysis window (25 ms).
pub const FBANK_WINDOW: usize = 400;
/// Samples between frames (10 ms).
pub const FBANK_HOP: usize = 160;
const FFT: usize = 512;
const PREEMPHASIS: f32 = 0.97;
const LOW_HZ: f64 = 20.0;

/// One frame of log-mel energies.
pub type FbankFrame = [f32; FBANK_BINS];

/// Number of frames of `samples` samples: one per hop while a whole window fits.
pub fn frame_count(samples: usize) -> usize {
    if samples < FBANK_WINDOW {
        0
    } else {
        1 + (samples - FBANK_WINDOW) / FBANK_HOP
    }
}

struct Tables {
    window: Vec<f32>,
    /// Per mel bin: first FFT bin and its weights.
    banks: Vec<(usize, Vec<f32>)>,
    fft: Arc<dyn RealToComplex<f32>>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        // Povey window: a symmetric Hann window raised to 0.85.
        let n = FBANK_WINDOW as f64;
        let window = (0..FBANK_WINDOW)
            .map(|i| {
                let hann = 0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / (n - 1.0)).cos();
                hann.powf(0.85) as f32
            })
            .collect();
        let mel = |hz: f64| 1127.0 * (1.0 + hz / 700.0).ln();
        let nyquist = crate::SAMPLE_RATE as f64 / 2.0;
        let (lo, hi) = (mel(LOW_HZ), mel(nyquist));
        let delta = (hi - lo) / (FBANK_BINS + 1) as f64;
        let bin_hz = crate::SAMPLE_RATE as f64 / FFT as f64;
        let banks = (0..FBANK_BINS)
            .map(|b| {
                let left = lo + b as f64 * delta;
                let centre = left + delta;
                let right = centre + delta;
                // Kaldi weighs the first FFT / 2 bins (the Nyquist bin gets none).
                let weights: Vec<(usize, f32)> = (0..FFT / 2)
                    .filter_map(|i| {
                        let m = mel(i as f64 * bin_hz);
                        let up = (m - left) / (centre - left);
                        let down = (right - m) / (right - centre);
                        let w = up.min(down);
                        (w > 0.0).then_some((i, w as f32))
                    })
                    .collect();
                let first = weights.first().map_or(0, |w| w.0);
                (first, weights.into_iter().map(|w| w.1).collect())
            })
            .collect();
        let fft = RealFftPlanner::<f32>::new().plan_fft_forward(FFT);
        Tables { window, banks, fft }
    })
}

/// Appends to `out` the filterbank frames of `samples` (16 kHz mono; non-finite samples read
/// as 0). Frame `k` covers samples `[160 k, 160 k + 400)`.
pub fn fbank(samples: &[f32], out: &mut Vec<FbankFrame>) {
    let t = tables();
    let count = frame_count(samples.len());
    out.reserve(count);
    let mut frame = vec![0.0f32; FFT];
    let mut spectrum = t.fft.make_output_vec();
    let mut scratch = t.fft.make_scratch_vec();
    let mut power = vec![0.0f32; FFT / 2 + 1];
    for k in 0..count {
        let src = &samples[k * FBANK_HOP..k * FBANK_HOP + FBANK_WINDOW];
        let mut mean = 0.0f64;
        for (d, &s) in frame.iter_mut().zip(src) {
            *d = if s.is_finite() { s } else { 0.0 };
            mean += *d as f64;
        }
        let mean = (mean / FBANK_WINDOW as f64) as f32;
        for d in &mut frame[..FBANK_WINDOW] {
            *d -= mean;
        }
        for i in (1..FBANK_WINDOW).rev() {
            frame[i] -= PREEMPHASIS * frame[i - 1];
        }
        frame[0] -= PREEMPHASIS * frame[0];
        for (d, w) in frame.iter_mut().zip(&t.window) {
            *d *= w;
        }
        frame[FBANK_WINDOW..].fill(0.0);
        t.fft
            .process_with_scratch(&mut frame, &mut spectrum, &mut scratch)
            .expect("buffers sized by the plan");
        for (p, c) in power.iter_mut().zip(&spectrum) {
            *p = c.norm_sqr();
        }
        let mut row = [0.0f32; FBANK_BINS];
        for (r, (first, weights)) in row.iter_mut().zip(&t.banks) {
            let e: f32 = weights
                .iter()
                .zip(&power[*first..])
                .map(|(w, p)| w * p)
                .sum();
            *r = e.max(f32::EPSILON).ln();
        }
        out.push(row);
    }
}
