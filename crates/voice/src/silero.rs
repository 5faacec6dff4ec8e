//! Silero VAD v6 (16 kHz) computed here, from the weights of the committed ONNX export: per
//! 32 ms frame an STFT by a fixed basis, four convolutions, one LSTM step, a sigmoid.
//!
//! tract ran the sequence export at about 1.5-2.2 ms per audio second: for a network this small
//! its per-operation overhead is most of the cost. Here each frame's work is a handful of small
//! matrix products over a group of frames (`vad::GROUP`), the LSTM step on the widest vectors
//! (`layers::lstm_step`).
//!
//! Per frame (576 samples: the previous frame's last 64, then its 512; shapes time x channels):
//!
//! | layer | output |
//! |---|---|
//! | reflect-pad 64 samples at the end; 4 windows of 256, 128 apart, through the 258-row STFT basis; magnitude | 4 x 129 |
//! | convolution 129 -> 128, 3 taps, padding 1; ReLU | 4 x 128 |
//! | convolution 128 -> 64, 3 taps, padding 1, stride 2; ReLU | 2 x 64 |
//! | convolution 64 -> 64, 3 taps, padding 1, stride 2; ReLU | 1 x 64 |
//! | convolution 64 -> 128, 3 taps, padding 1; ReLU | 1 x 128 |
//! | LSTM step (128 units, state carried from frame to frame); ReLU; linear 128 -> 1; sigmoid | 1 |
//!
//! (The export pads 128 samples each side and drops the first window: the same four windows.)
//! Where a convolution's tap reads only padding, its zero products are left out, which changes
//! no value. The parity test (`tests/parity.rs`) holds the probabilities to the package's
//! TorchScript model, and a unit test to tract's run of the same ONNX file.

use crate::layers::{lstm_step, recurrent_panels, sigmoid, Weights, GATES, HIDDEN};
use crate::matmul::{matmul, View};
use crate::VoiceError;
use std::cell::RefCell;

/// Samples of one scored frame's input: the previous frame's last 64, then its 512.
pub(crate) const INPUT: usize = 576;
const WINDOW: usize = 256;
const HOP: usize = 128;
const WINDOWS: usize = 4;
/// Samples of reflected padding after the input.
const PAD: usize = WINDOW + (WINDOWS - 1) * HOP - INPUT;
const BINS: usize = WINDOW / 2 + 1;
const TAPS: usize = 3;

/// A 3-tap convolution as a product: weights `(taps * in) x out`, row `tap * in + channel`.
struct Conv {
    weights: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Conv {
    fn from(w: &mut Weights, i: usize, inputs: usize, outputs: usize) -> Result<Self, VoiceError> {
        let raw = w.take(&format!("encoder.{i}.weight"), &[outputs, inputs, TAPS])?;
        let mut weights = vec![0.0f32; TAPS * inputs * outputs];
        for o in 0..outputs {
            for c in 0..inputs {
                for t in 0..TAPS {
                    weights[(t * inputs + c) * outputs + o] = raw[(o * inputs + c) * TAPS + t];
                }
            }
        }
        Ok(Self {
            weights,
            bias: w.take(&format!("encoder.{i}.bias"), &[outputs])?,
            inputs,
            outputs,
        })
    }

    /// The rows of taps `taps` (all three, or the ones a padded input does not zero).
    fn taps(&self, taps: std::ops::Range<usize>) -> View<'_> {
        let rows = taps.len() * self.inputs;
        View::rows(
            &self.weights[taps.start * self.inputs * self.outputs..][..rows * self.outputs],
            rows,
            self.outputs,
        )
    }

    /// `out = relu(a w + b)` for `a` of `rows` rows of the given taps' inputs.
    fn apply(&self, a: &[f32], rows: usize, taps: std::ops::Range<usize>, out: &mut Vec<f32>) {
        out.clear();
        for _ in 0..rows {
            out.extend_from_slice(&self.bias);
        }
        let k = taps.len() * self.inputs;
        matmul(
            out,
            self.outputs,
            View::rows(a, rows, k),
            self.taps(taps),
            true,
        );
        out.iter_mut().for_each(|v| *v = v.max(0.0));
    }
}

/// The network's weights.
pub(crate) struct SileroNet {
    /// The STFT basis as stored, `258 x 256` (real parts of 129 bins, then imaginary).
    basis: Vec<f32>,
    encoder: [Conv; 4],
    /// LSTM input weights, `512 x 128` (ONNX `W`).
    input_weights: Vec<f32>,
    /// LSTM recurrent weights in [`recurrent_panels`] layout.
    recurrent: Vec<f32>,
    /// Input and recurrent biases summed: 512.
    bias: Vec<f32>,
    out_weights: Vec<f32>,
    out_bias: f32,
}

/// Buffers of one call, kept per thread.
#[derive(Default)]
struct Scratch {
    windows: Vec<f32>,
    spectrum: Vec<f32>,
    a: Vec<f32>,
    x0: Vec<f32>,
    x1: Vec<f32>,
    x2: Vec<f32>,
    x3: Vec<f32>,
    gates: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl SileroNet {
    /// Reads the weights of the committed sequence export.
    pub(crate) fn from_onnx(bytes: &[u8]) -> Result<Self, VoiceError> {
        let mut w = Weights::from_onnx("Silero VAD", bytes)?;
        let basis = w.take("stft.forward_basis_buffer", &[2 * BINS, 1, WINDOW])?;
        let encoder = [
            Conv::from(&mut w, 0, BINS, 128)?,
            Conv::from(&mut w, 1, 128, 64)?,
            Conv::from(&mut w, 2, 64, 64)?,
            Conv::from(&mut w, 3, 64, 128)?,
        ];
        let input_weights = w.take("onnx::LSTM_209", &[1, GATES, HIDDEN])?;
        let recurrent = recurrent_panels(&w.take("onnx::LSTM_210", &[1, GATES, HIDDEN])?);
        let b = w.take("onnx::LSTM_211", &[1, 2 * GATES])?;
        let bias = (0..GATES).map(|g| b[g] + b[GATES + g]).collect();
        let out_weights = w.take("output.weight", &[1, HIDDEN, 1])?;
        let out_bias = w.take("output.bias", &[1])?[0];
        Ok(Self {
            basis,
            encoder,
            input_weights,
            recurrent,
            bias,
            out_weights,
            out_bias,
        })
    }

    /// Scores consecutive frames: `input` holds `n` rows of [`INPUT`] samples; `h` and `c` are
    /// the LSTM state before the first and become the state after the last. Appends each
    /// frame's speech probability to `out`.
    pub(crate) fn score(
        &self,
        input: &[f32],
        h: &mut [f32; HIDDEN],
        c: &mut [f32; HIDDEN],
        out: &mut Vec<f32>,
    ) {
        SCRATCH.with(|s| self.score_in(input, h, c, out, &mut s.borrow_mut()))
    }

    fn score_in(
        &self,
        input: &[f32],
        h: &mut [f32; HIDDEN],
        c: &mut [f32; HIDDEN],
        out: &mut Vec<f32>,
        s: &mut Scratch,
    ) {
        let n = input.len() / INPUT;
        // The four windows of each frame, the last reaching into the reflected end.
        s.windows.clear();
        for frame in input.chunks_exact(INPUT) {
            let mut padded = [0.0f32; INPUT + PAD];
            padded[..INPUT].copy_from_slice(frame);
            for i in 0..PAD {
                padded[INPUT + i] = frame[INPUT - 2 - i];
            }
            for w in 0..WINDOWS {
                s.windows
                    .extend_from_slice(&padded[w * HOP..w * HOP + WINDOW]);
            }
        }
        s.spectrum.resize(n * WINDOWS * 2 * BINS, 0.0);
        matmul(
            &mut s.spectrum,
            2 * BINS,
            View::rows(&s.windows, n * WINDOWS, WINDOW),
            View::transposed(&self.basis, WINDOW, 2 * BINS),
            false,
        );
        // Magnitudes, each frame's 4 x 129 set between zero rows (the convolution's padding),
        // then the 3-tap rows of the first convolution.
        s.a.clear();
        let mut frame_mag = [0.0f32; (WINDOWS + 2) * BINS];
        for spec in s.spectrum.chunks_exact(WINDOWS * 2 * BINS) {
            for (t, row) in spec.chunks_exact(2 * BINS).enumerate() {
                let (re, im) = row.split_at(BINS);
                for b in 0..BINS {
                    frame_mag[(t + 1) * BINS + b] = (re[b] * re[b] + im[b] * im[b]).sqrt();
                }
            }
            for t in 0..WINDOWS {
                s.a.extend_from_slice(&frame_mag[t * BINS..(t + TAPS) * BINS]);
            }
        }
        let [e0, e1, e2, e3] = &self.encoder;
        e0.apply(&s.a, n * WINDOWS, 0..TAPS, &mut s.x0);
        // Stride 2 over (pad, x0..x3, pad): rows (pad, x0, x1) and (x1, x2, x3).
        s.a.clear();
        for x in s.x0.chunks_exact(WINDOWS * 128) {
            s.a.extend(std::iter::repeat_n(0.0, 128));
            s.a.extend_from_slice(&x[..2 * 128]);
            s.a.extend_from_slice(&x[128..4 * 128]);
        }
        e1.apply(&s.a, n * 2, 0..TAPS, &mut s.x1);
        // Stride 2 over (pad, y0, y1, pad): one row (pad, y0, y1); the padding's tap left out.
        e2.apply(&s.x1, n, 1..TAPS, &mut s.x2);
        // Padding 1 around one step: only the middle tap reads it.
        e3.apply(&s.x2, n, 1..2, &mut s.x3);

        s.gates.clear();
        for _ in 0..n {
            s.gates.extend_from_slice(&self.bias);
        }
        matmul(
            &mut s.gates,
            GATES,
            View::rows(&s.x3, n, HIDDEN),
            View::transposed(&self.input_weights, HIDDEN, GATES),
            true,
        );
        pulp::Arch::new().dispatch(Steps {
            gates: &s.gates,
            recurrent: &self.recurrent,
            out_weights: &self.out_weights,
            out_bias: self.out_bias,
            h,
            c,
            out,
        });
    }
}

/// The LSTM over a group's frames and the output layer, as a [`pulp::WithSimd`].
struct Steps<'a> {
    gates: &'a [f32],
    recurrent: &'a [f32],
    out_weights: &'a [f32],
    out_bias: f32,
    h: &'a mut [f32; HIDDEN],
    c: &'a mut [f32; HIDDEN],
    out: &'a mut Vec<f32>,
}

impl pulp::WithSimd for Steps<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let mut g = [0.0f32; GATES];
        for row in self.gates.chunks_exact(GATES) {
            g.copy_from_slice(row);
            lstm_step(simd, self.recurrent, &mut g, self.h, self.c);
            let logit = self
                .h
                .iter()
                .zip(self.out_weights)
                .map(|(&h, &w)| h.max(0.0) * w)
                .sum::<f32>()
                + self.out_bias;
            self.out.push(sigmoid(logit));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_padding_is_what_the_export_adds() {
        assert_eq!(PAD, 64);
        assert_eq!(INPUT, crate::VAD_FRAME_SAMPLES + 64);
    }
}
