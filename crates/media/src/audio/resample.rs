//! Streaming band-limited conversion of mono audio to 16 kHz with rubato.
//!
//! Common rates (8, 11.025, 22.05, 24, 32, 44.1, 48, 96 kHz, ...) go through rubato's synchronous
//! [`Fft`] resampler: an FFT-domain converter with a BlackmanHarris2 anti-aliasing window, chunks
//! of about 1024 input frames split into sub-chunks of at least 256 frames, a power-of-two
//! multiple of the rate pair's minimum block (48 kHz: 384 frames; 44.1 kHz: 441). Its cut-off
//! sits just under the 8 kHz Nyquist frequency of the output, so it is a real low-pass filter,
//! not decimation. A rate whose ratio to 16 kHz would need an FFT block of
//! more than [`MAX_FFT_BLOCK`] input frames (an odd rate such as 44 101 Hz) goes through rubato's
//! asynchronous sinc resampler instead (256-tap BlackmanHarris2 windowed sinc, automatic cut-off,
//! 128x oversampling, cubic interpolation), which handles any ratio at equal quality and more CPU.
//!
//! Both introduce a delay, which is trimmed so output sample 0 is input sample 0; the output is
//! `ceil(input_len * 16000 / rate)` samples long, like rubato's own `process_all`.

use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{
    Async, Fft, FixedAsync, FixedSync, Indexing, Resampler, SincInterpolationParameters,
    WindowFunction,
};

use crate::error::MediaError;
use crate::info::Pcm;

/// The largest input block (`rate / gcd(rate, 16000)`) sent to the FFT resampler.
const MAX_FFT_BLOCK: usize = 4096;
/// Target input chunk of each resampler call, in frames.
const CHUNK: usize = 1024;
/// Least input frames per FFT sub-chunk: also the length of the anti-aliasing filter, in input
/// frames (rubato's default target).
const SUB_CHUNK: usize = 256;

/// Converts mono audio at one rate to [`Pcm::SAMPLE_RATE`], fed in pieces of any size.
pub(crate) struct StreamResampler {
    /// `None` when the input is already at 16 kHz and passes through untouched.
    inner: Option<Box<dyn Resampler<f32>>>,
    /// Input frames waiting for a full chunk.
    pending: Vec<f32>,
    /// Output written so far, after the delay trim, less what [`Self::drain_output`] took.
    out: Vec<f32>,
    /// Output samples already handed out by [`Self::drain_output`].
    drained: usize,
    /// Scratch buffer one call's output is written into.
    scratch: Vec<f32>,
    /// Output frames of startup delay still to drop.
    delay_left: usize,
    /// Input frames received in total, to size the final output.
    input_total: u64,
    /// Input rate in Hz.
    rate: u32,
}

impl StreamResampler {
    /// A resampler from `rate` Hz to 16 kHz.
    pub(crate) fn new(rate: u32) -> Result<Self, MediaError> {
        let out_rate = Pcm::SAMPLE_RATE as usize;
        let inner: Option<Box<dyn Resampler<f32>>> = if rate == Pcm::SAMPLE_RATE {
            None
        } else {
            let rate_in = rate as usize;
            let block = rate_in / gcd(rate_in, out_rate);
            let built: Result<Box<dyn Resampler<f32>>, _> = if block <= MAX_FFT_BLOCK {
                // Sub-chunks of a power-of-two count of minimum blocks: the FFT lengths then
                // factor into the small primes of the block (48 kHz: 384 in, 128 out), where
                // rubato's own choice (`Fft::new`, 258 in for 48 kHz) can land on a length
                // with a large prime factor (43) that rustfft handles several times slower.
                let sub = SUB_CHUNK.div_ceil(block).next_power_of_two() * block;
                let subs = (CHUNK / sub).max(1);
                Fft::<f32>::new_custom(
                    rate_in,
                    out_rate,
                    sub * subs,
                    subs,
                    1,
                    WindowFunction::BlackmanHarris2,
                    FixedSync::Input,
                )
                .map(|r| Box::new(r) as Box<dyn Resampler<f32>>)
            } else {
                let params = SincInterpolationParameters::new(256, WindowFunction::BlackmanHarris2);
                Async::<f32>::new_sinc(
                    out_rate as f64 / rate_in as f64,
                    1.0,
                    &params,
                    CHUNK,
                    1,
                    FixedAsync::Input,
                )
                .map(|r| Box::new(r) as Box<dyn Resampler<f32>>)
            };
            Some(
                built
                    .map_err(|e| MediaError::unsupported(format!("sample rate {rate} Hz: {e}")))?,
            )
        };
        let delay_left = inner.as_ref().map_or(0, |r| r.output_delay());
        let scratch = vec![0.0; inner.as_ref().map_or(0, |r| r.output_frames_max())];
        Ok(Self {
            inner,
            pending: Vec::new(),
            out: Vec::new(),
            drained: 0,
            scratch,
            delay_left,
            input_total: 0,
            rate,
        })
    }

    /// The length [`Self::finish`] returns for the input so far, in all (counting what was
    /// drained): `ceil(input_len * 16000 / rate)`. It counts the input still waiting for a
    /// full resampler chunk, which at a very low input rate is minutes of audio (1,024 frames
    /// at 7 Hz: 146 s).
    pub(crate) fn final_len(&self) -> usize {
        let n = (self.input_total * u64::from(Pcm::SAMPLE_RATE)).div_ceil(u64::from(self.rate));
        usize::try_from(n).unwrap_or(usize::MAX)
    }

    /// Moves the output produced so far to the end of `into`, for a live reader that hands out
    /// audio as it decodes; [`Self::finish`] then returns only the rest.
    pub(crate) fn drain_output(&mut self, into: &mut Vec<f32>) {
        self.drained += self.out.len();
        into.append(&mut self.out);
    }

    /// Feeds more input.
    pub(crate) fn push(&mut self, input: &[f32]) -> Result<(), MediaError> {
        self.input_total += input.len() as u64;
        let Some(inner) = self.inner.as_mut() else {
            self.out.extend_from_slice(input);
            return Ok(());
        };
        self.pending.extend_from_slice(input);
        let mut consumed = 0;
        loop {
            let need = inner.input_frames_next();
            if self.pending.len() - consumed < need {
                break;
            }
            let chunk = &self.pending[consumed..consumed + need];
            run(
                inner.as_mut(),
                chunk,
                None,
                &mut self.scratch,
                &mut self.out,
                &mut self.delay_left,
            )?;
            consumed += need;
        }
        self.pending.drain(..consumed);
        Ok(())
    }

    /// Flushes the tail and returns exactly `ceil(input_len * 16000 / rate)` samples in total
    /// (counting those already drained).
    pub(crate) fn finish(mut self) -> Result<Vec<f32>, MediaError> {
        let expected = self.final_len().saturating_sub(self.drained);
        let Some(inner) = self.inner.as_mut() else {
            return Ok(self.out);
        };
        let mut partial = std::mem::take(&mut self.pending);
        // Bounded: each round either consumes the pending input or emits at least one chunk of
        // output; rubato always produces output for a full (zero-padded) input chunk.
        let mut rounds = 0usize;
        while self.out.len() < expected {
            let need = inner.input_frames_next();
            let have = partial.len().min(need);
            partial.resize(need, 0.0);
            run(
                inner.as_mut(),
                &partial,
                Some(have),
                &mut self.scratch,
                &mut self.out,
                &mut self.delay_left,
            )?;
            partial.clear();
            rounds += 1;
            if rounds > 64 {
                break;
            }
        }
        self.out.truncate(expected);
        Ok(self.out)
    }
}

/// One resampler call on `chunk`, appending its output after dropping any remaining delay.
fn run(
    inner: &mut dyn Resampler<f32>,
    chunk: &[f32],
    partial: Option<usize>,
    scratch: &mut [f32],
    out: &mut Vec<f32>,
    delay_left: &mut usize,
) -> Result<(), MediaError> {
    let resample_err =
        |e: &dyn std::fmt::Display| MediaError::unsupported(format!("resampler: {e}"));
    let input = InterleavedSlice::new(chunk, 1, chunk.len()).map_err(|e| resample_err(&e))?;
    let frames = scratch.len();
    let mut output = InterleavedSlice::new_mut(scratch, 1, frames).map_err(|e| resample_err(&e))?;
    let indexing = Indexing {
        input_offset: 0,
        output_offset: 0,
        partial_len: partial,
        active_channels_mask: None,
    };
    let (_, produced) = inner
        .process_into_buffer(&input, &mut output, Some(&indexing))
        .map_err(|e| resample_err(&e))?;
    let produced = &scratch[..produced.min(frames)];
    let drop = (*delay_left).min(produced.len());
    *delay_left -= drop;
    out.extend_from_slice(&produced[drop..]);
    Ok(())
}

/// Greatest common divisor.
fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine(rate: u32, freq: f64, len: usize) -> Vec<f32> {
        (0..len)
            .map(|i| (2.0 * std::f64::consts::PI * freq * i as f64 / f64::from(rate)).sin() as f32)
            .collect()
    }

    /// The largest deviation of `out` from a 440 Hz sine advanced by `shift` output samples,
    /// away from the edges where the filter sees zeros.
    fn deviation(out: &[f32], shift: f64) -> f64 {
        out[2000..14000]
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let t = (i + 2000) as f64 + shift;
                (f64::from(*a) - (2.0 * std::f64::consts::PI * 440.0 * t / 16000.0).sin()).abs()
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn a_tone_below_nyquist_keeps_its_amplitude_phase_and_length() {
        for rate in [8_000u32, 22_050, 44_100, 48_000, 44_101] {
            let input = sine(rate, 440.0, rate as usize);
            let mut r = StreamResampler::new(rate).unwrap();
            for piece in input.chunks(777) {
                r.push(piece).unwrap();
            }
            let out = r.finish().unwrap();
            assert_eq!(out.len(), 16_000, "rate {rate}");
            // The resamplers' delays are whole output samples while the filters' true delays
            // can be fractional: alignment is exact to within 0.6 of a 16 kHz sample (40 us).
            let (shift, err) = (-12..=12)
                .map(|k| f64::from(k) * 0.05)
                .map(|d| (d, deviation(&out, d)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap();
            assert!(
                shift.abs() <= 0.6,
                "rate {rate}: output is {shift} samples off"
            );
            assert!(err < 0.01, "rate {rate}: deviation {err} even when aligned");
        }
    }

    #[test]
    fn a_tone_above_the_output_nyquist_is_filtered_out() {
        let input = sine(48_000, 12_000.0, 48_000);
        let mut r = StreamResampler::new(48_000).unwrap();
        r.push(&input).unwrap();
        let out = r.finish().unwrap();
        let rms = (out[1000..15000].iter().map(|s| s * s).sum::<f32>() / 14000.0).sqrt();
        // Naive decimation by 3 would alias 12 kHz to 4 kHz at full amplitude (rms 0.707).
        assert!(rms < 0.01, "aliased energy rms {rms}");
    }
}
