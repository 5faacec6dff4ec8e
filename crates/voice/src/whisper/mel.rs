//! Whisper's log-mel spectrogram, as openai-whisper's `log_mel_spectrogram` computes it:
//! 400-sample periodic Hann windows every 160 samples, centred (the signal reflected by 200
//! samples at each end), the power of a 400-point FFT, 80 Slaney mel filters from 0 to 8 kHz
//! (librosa's `filters.mel`, as `mel_filters.npz` stores them), log10 floored at 1e-10, then
//! floored at 8 below the largest value and mapped by `(x + 4) / 4`. The last STFT frame is
//! dropped, so `n` samples give `n / 160` frames.

use realfft::{RealFftPlanner, RealToComplex};
use std::sync::{Arc, OnceLock};

/// Mel bins.
pub const MEL_BINS: usize = 80;
/// FFT length and window, samples.
pub const N_FFT: usize = 400;
/// Samples between frames (10 ms).
pub const HOP: usize = 160;
const FREQS: usize = N_FFT / 2 + 1;

struct Tables {
    window: Vec<f32>,
    /// `[MEL_BINS][FREQS]`, row-major.
    filters: Vec<f32>,
    /// Per filter, the bins from its first non-zero weight to past its last: a triangle
    /// covers 1-14 of the 201 bins (391 in all), and the products outside it are exact zeros.
    bands: Vec<std::ops::Range<usize>>,
    fft: Arc<dyn RealToComplex<f32>>,
}

/// librosa's Slaney mel scale (`htk=False`): linear below 1 kHz, logarithmic above.
fn hz_to_mel(hz: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let logstep = (6.4f64).ln() / 27.0;
    if hz >= min_log_hz {
        min_log_mel + (hz / min_log_hz).ln() / logstep
    } else {
        hz / f_sp
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let logstep = (6.4f64).ln() / 27.0;
    if mel >= min_log_mel {
        min_log_hz * (logstep * (mel - min_log_mel)).exp()
    } else {
        f_sp * mel
    }
}

/// librosa.filters.mel(sr=16000, n_fft=400, n_mels=80), Slaney-normalized.
fn mel_filters() -> Vec<f32> {
    let sr = crate::SAMPLE_RATE as f64;
    let fft_freqs: Vec<f64> = (0..FREQS)
        .map(|i| i as f64 * (sr / 2.0) / (FREQS - 1) as f64)
        .collect();
    let (lo, hi) = (hz_to_mel(0.0), hz_to_mel(sr / 2.0));
    let mel_f: Vec<f64> = (0..MEL_BINS + 2)
        .map(|i| mel_to_hz(lo + (hi - lo) * i as f64 / (MEL_BINS + 1) as f64))
        .collect();
    let mut out = vec![0f32; MEL_BINS * FREQS];
    for m in 0..MEL_BINS {
        let enorm = 2.0 / (mel_f[m + 2] - mel_f[m]);
        for (k, &f) in fft_freqs.iter().enumerate() {
            let lower = (f - mel_f[m]) / (mel_f[m + 1] - mel_f[m]);
            let upper = (mel_f[m + 2] - f) / (mel_f[m + 2] - mel_f[m + 1]);
            out[m * FREQS + k] = (lower.min(upper).max(0.0) * enorm) as f32;
        }
    }
    out
}

/// The 80 mel filters, `[MEL_BINS][N_FFT / 2 + 1]` row-major, as computed here (the test
/// `mel_filters_are_openai_whispers` holds them to openai-whisper's `mel_filters.npz`).
pub fn filters() -> &'static [f32] {
    &tables().filters
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let filters = mel_filters();
        let bands = filters
            .chunks_exact(FREQS)
            .map(|w| {
                let first = w.iter().position(|&x| x != 0.0).unwrap_or(0);
                let last = w.iter().rposition(|&x| x != 0.0).map_or(0, |i| i + 1);
                first..last.max(first)
            })
            .collect();
        Tables {
            // torch.hann_window(400): periodic.
            window: (0..N_FFT)
                .map(|i| {
                    (0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / N_FFT as f64).cos()) as f32
                })
                .collect(),
            filters,
            bands,
            fft: RealFftPlanner::<f32>::new().plan_fft_forward(N_FFT),
        }
    })
}

/// `log10` of the mel power of each frame of `samples` (16 kHz), before Whisper's floor and
/// scaling: `[frames][MEL_BINS]`, `samples.len() / HOP` frames. Reflection at the edges uses
/// the samples themselves, so a stream's frames equal the whole file's once 200 samples past
/// a frame's centre have arrived.
pub fn log_mel_raw(samples: &[f32]) -> Vec<[f32; MEL_BINS]> {
    let t = tables();
    let frames = samples.len() / HOP;
    let mut out = Vec::with_capacity(frames);
    if samples.is_empty() {
        return out;
    }
    let n = samples.len() as isize;
    // Reflect without repeating the edge sample (numpy's "reflect").
    let at = |i: isize| -> f32 {
        let mut i = i;
        if n == 1 {
            return samples[0];
        }
        loop {
            if i < 0 {
                i = -i;
            } else if i >= n {
                i = 2 * (n - 1) - i;
            } else {
                return samples[i as usize];
            }
        }
    };
    let mut input = t.fft.make_input_vec();
    let mut spectrum = t.fft.make_output_vec();
    let mut scratch = t.fft.make_scratch_vec();
    let mut power = vec![0f32; FREQS];
    // What a frame of zeros gives: a zero power in every bin, floored.
    let silent = 0f32.max(1e-10).log10();
    for f in 0..frames {
        let start = (f * HOP) as isize - (N_FFT / 2) as isize;
        for (j, x) in input.iter_mut().enumerate() {
            let i = start + j as isize;
            let s = if i >= 0 && i < n {
                samples[i as usize]
            } else {
                at(i)
            };
            *x = s * t.window[j];
        }
        if input.iter().all(|&x| x == 0.0) {
            // Silence (the 30 s of padding of every file): a zero spectrum, every mel value
            // at the floor, as the FFT would give.
            out.push([silent; MEL_BINS]);
            continue;
        }
        t.fft
            .process_with_scratch(&mut input, &mut spectrum, &mut scratch)
            .expect("buffers sized by the plan");
        for (p, c) in power.iter_mut().zip(&spectrum) {
            *p = c.re * c.re + c.im * c.im;
        }
        let mut row = [0f32; MEL_BINS];
        for ((m, r), band) in row.iter_mut().enumerate().zip(&t.bands) {
            // The weights outside the band are zeros, and a power is finite and not negative,
            // so their products are +0 and leave the sum's bits as they are.
            let w = &t.filters[m * FREQS..(m + 1) * FREQS];
            let e: f32 = w[band.clone()]
                .iter()
                .zip(&power[band.clone()])
                .map(|(a, b)| a * b)
                .sum();
            *r = e.max(1e-10).log10();
        }
        out.push(row);
    }
    out
}

/// Whisper's floor and scaling of raw log-mel values, with `max` the largest raw value of the
/// whole input (openai-whisper takes it over the file and its 30 s of padding).
pub fn normalize(raw: &[[f32; MEL_BINS]], max: f32) -> Vec<[f32; MEL_BINS]> {
    let floor = max - 8.0;
    raw.iter()
        .map(|row| {
            let mut out = [0f32; MEL_BINS];
            for (o, &x) in out.iter_mut().zip(row) {
                *o = (x.max(floor) + 4.0) / 4.0;
            }
            out
        })
        .collect()
}

/// The largest value of raw log-mel frames (`-10`, the floor, when there are none).
pub fn max_of(raw: &[[f32; MEL_BINS]]) -> f32 {
    raw.iter()
        .flat_map(|r| r.iter().copied())
        .fold(-10.0f32, f32::max)
}

/// openai-whisper's `log_mel_spectrogram(audio, padding=N_SAMPLES)`: the spectrogram of the
/// samples followed by 30 s of silence, normalized over all of it. Frames `[frames][bins]`.
pub fn log_mel_padded(samples: &[f32], padding: usize) -> Vec<[f32; MEL_BINS]> {
    let mut padded = Vec::with_capacity(samples.len() + padding);
    padded.extend_from_slice(samples);
    padded.resize(samples.len() + padding, 0.0);
    let raw = log_mel_raw(&padded);
    normalize(&raw, max_of(&raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spectrogram as it was computed before the bands and the silent-frame shortcut: every
    /// frame through the FFT, every filter over all 201 bins.
    fn dense(samples: &[f32]) -> Vec<[f32; MEL_BINS]> {
        let t = tables();
        let n = samples.len() as isize;
        let at = |i: isize| -> f32 {
            let i = if i < 0 {
                -i
            } else if i >= n {
                2 * (n - 1) - i
            } else {
                i
            };
            samples[i as usize]
        };
        let mut input = t.fft.make_input_vec();
        let mut spectrum = t.fft.make_output_vec();
        (0..samples.len() / HOP)
            .map(|f| {
                let start = (f * HOP) as isize - (N_FFT / 2) as isize;
                for (j, x) in input.iter_mut().enumerate() {
                    *x = at(start + j as isize) * t.window[j];
                }
                t.fft.process(&mut input, &mut spectrum).expect("sized");
                let power: Vec<f32> = spectrum.iter().map(|c| c.re * c.re + c.im * c.im).collect();
                let mut row = [0f32; MEL_BINS];
                for (m, r) in row.iter_mut().enumerate() {
                    let w = &t.filters[m * FREQS..(m + 1) * FREQS];
                    let e: f32 = w.iter().zip(&power).map(|(a, b)| a * b).sum();
                    *r = e.max(1e-10).log10();
                }
                row
            })
            .collect()
    }

    #[test]
    fn the_banded_spectrogram_has_the_bits_of_the_dense_one() {
        // A chirp with noise, a stretch of digital silence (frames that skip the FFT), a
        // lone click inside it, then the chirp again and 0.25 s of silence at the end (as the
        // padding of a file starts).
        let mut x: u32 = 12345;
        let mut samples: Vec<f32> = (0..16_000)
            .map(|i| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let noise = (x >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
                let t = i as f32 / 16_000.0;
                0.5 * (std::f32::consts::TAU * (200.0 + 3000.0 * t) * t).sin() + 0.01 * noise
            })
            .collect();
        samples.extend(std::iter::repeat_n(0.0, 8_000));
        samples[20_000] = 0.25;
        samples.extend_from_within(..8_000);
        samples.extend(std::iter::repeat_n(0.0, 4_000));
        let ours = log_mel_raw(&samples);
        let reference = dense(&samples);
        assert_eq!(ours.len(), reference.len());
        let silent = ours
            .iter()
            .filter(|r| r[0] == -10.0 && r[79] == -10.0)
            .count();
        assert!(silent > 40, "the silent frames were found: {silent}");
        for (f, (a, b)) in ours.iter().zip(&reference).enumerate() {
            for m in 0..MEL_BINS {
                assert_eq!(a[m].to_bits(), b[m].to_bits(), "frame {f}, bin {m}");
            }
        }
    }
}
