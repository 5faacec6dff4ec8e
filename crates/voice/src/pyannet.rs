//! pyannote segmentation-3.0 (PyanNet) computed here, from the weights of the committed ONNX
//! file: SincNet, four bidirectional LSTM layers, a linear head, the powerset log-softmax.
//!
//! tract ran this graph at about 70 ms per 10 s chunk on one core: its LSTM goes step by step
//! through a scan of small operations, with one matrix-vector product per step at a quarter of
//! what the processor does, and the 251-tap first convolution through a copied im2col
//! (BENCHMARKS.md, "segmentation-3.0 computed here"). Here every convolution is one matrix
//! product on an overlapping view of its input (no copy), the LSTM's input projections for all
//! frames and both directions are one product, and each recurrent step is a register-blocked
//! matrix-vector product on the widest vectors the processor has, its gates evaluated in place.
//!
//! The layers, for one chunk of 160,000 samples (shapes time x channels):
//!
//! | layer | output |
//! |---|---|
//! | instance norm of the waveform (scalar affine) | 160000 x 1 |
//! | 80 sinc band-pass filters, 251 taps, stride 10; absolute value; max-pool 3 | 5325 x 80 |
//! | instance norm, leaky ReLU 0.01 | 5325 x 80 |
//! | convolution 80 -> 60, 5 taps; max-pool 3; instance norm; leaky ReLU | 1773 x 60 |
//! | convolution 60 -> 60, 5 taps; max-pool 3; instance norm; leaky ReLU | 589 x 60 |
//! | 4 bidirectional LSTM layers, 128 units each way | 589 x 256 |
//! | linear 256 -> 128, leaky ReLU; linear 128 -> 128, leaky ReLU; linear 128 -> 7 | 589 x 7 |
//! | log-softmax | 589 x 7 |
//!
//! The LSTM is ONNX's (gates in the order input, output, forget, cell; zero initial state):
//! `c = σ(f) c + σ(i) tanh(g)`, `h = σ(o) tanh(c)`. The parity test
//! (`tests/parity.rs`) holds the output to pyannote's network in torch, and a unit test to
//! tract's run of the same ONNX file.

use crate::layers::{lstm_step, recurrent_panels, Weights, GATES, HIDDEN};
use crate::matmul::{matmul, matmul_packed, transpose, Packed, View};
use crate::VoiceError;
use std::cell::RefCell;

/// Samples per chunk.
const SAMPLES: usize = 160_000;
const SINC_FILTERS: usize = 80;
const SINC_TAPS: usize = 251;
const SINC_STRIDE: usize = 10;
/// Taps on each side of the middle one.
const HALF_TAPS: usize = SINC_TAPS / 2;
/// Frames after the sinc filters (before pooling).
const SINC_FRAMES: usize = (SAMPLES - SINC_TAPS) / SINC_STRIDE + 1;
const CONV_CHANNELS: usize = 60;
const CONV_TAPS: usize = 5;
const POOL: usize = 3;
/// Frames out (589).
pub(crate) const FRAMES: usize =
    ((((SINC_FRAMES / POOL) - CONV_TAPS + 1) / POOL) - CONV_TAPS + 1) / POOL;
const CLASSES: usize = 7;
const LEAK: f32 = 0.01;
const EPS: f64 = 1e-5;

/// Per-channel scale and shift of an instance norm.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// A convolution as a product: weights `(taps * in) x out`, row `tap * in + channel`.
struct Conv {
    weights: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
}

/// One bidirectional LSTM layer.
struct Lstm {
    /// Input weights of both directions (ONNX `W`, directions stacked, `1024 x inputs`)
    /// transposed to `inputs x 1024` and packed once.
    input_weights: Packed,
    inputs: usize,
    /// Per direction, the recurrent weights transposed and cut into panels of `layers::PANEL`
    /// gates: panel `p`, row `j` holds unit `j`'s weights into gates `p * PANEL..`, so that a
    /// step reads each panel as one contiguous run.
    recurrent_t: [Vec<f32>; 2],
    /// Input and recurrent biases summed, both directions: 1024.
    bias: Vec<f32>,
}

/// A linear layer: `inputs x outputs` weights, packed once when `outputs` makes whole
/// panels (the two hidden layers), row-major otherwise (the 7 classes).
struct Linear {
    weights: LinearWeights,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

enum LinearWeights {
    Packed(Packed),
    Rows(Vec<f32>),
}

/// The network's weights.
pub(crate) struct PyanNet {
    wav_norm: (f32, f32),
    /// The first 40 sinc filters (cosine, symmetric about the middle tap) folded:
    /// `126 x 40`, row `j < 125` the weight of taps `j` and `250 - j`, row 125 the middle tap's.
    sinc_even: Vec<f32>,
    /// The other 40 (sine, antisymmetric, middle tap 0): `125 x 40`, row `j` the weight of tap
    /// `j` (tap `250 - j` has its opposite).
    sinc_odd: Vec<f32>,
    norm0: Norm,
    conv1: Conv,
    norm1: Norm,
    conv2: Conv,
    norm2: Norm,
    lstm: Vec<Lstm>,
    head: [Linear; 3],
}

/// Buffers of one forward pass, kept per thread so that a chunk allocates nothing.
#[derive(Default)]
struct Scratch {
    wav: Vec<f32>,
    sinc_block: Vec<f32>,
    fold_even: Vec<f32>,
    fold_odd: Vec<f32>,
    a0: Vec<f32>,
    c1: Vec<f32>,
    a1: Vec<f32>,
    c2: Vec<f32>,
    x: Vec<f32>,
    gates: Vec<f32>,
    y: Vec<f32>,
    h1: Vec<f32>,
    h2: Vec<f32>,
    out: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl PyanNet {
    /// Reads the weights of the committed ONNX export (names as `models/convert_voice.py`
    /// leaves them).
    pub(crate) fn from_onnx(bytes: &[u8]) -> Result<Self, VoiceError> {
        let mut w = Weights::from_onnx("segmentation-3.0", bytes)?;
        let mut take = |name: &str, shape: &[usize]| w.take(name, shape);
        let wav_w = take("sincnet.wav_norm1d.weight", &[1])?[0];
        let wav_b = take("sincnet.wav_norm1d.bias", &[1])?[0];
        let sinc = take(
            "/sincnet/conv1d.0/Concat_2_output_0",
            &[SINC_FILTERS, 1, SINC_TAPS],
        )?;
        let (sinc_even, sinc_odd) =
            fold_sinc(&sinc).map_err(|e| VoiceError::Model(format!("segmentation-3.0: {e}")))?;
        let mut norm = |i: usize, c: usize| -> Result<Norm, VoiceError> {
            Ok(Norm {
                weight: take(&format!("sincnet.norm1d.{i}.weight"), &[c])?,
                bias: take(&format!("sincnet.norm1d.{i}.bias"), &[c])?,
            })
        };
        let norm0 = norm(0, SINC_FILTERS)?;
        let norm1 = norm(1, CONV_CHANNELS)?;
        let norm2 = norm(2, CONV_CHANNELS)?;
        let mut conv = |i: usize, inputs: usize| -> Result<Conv, VoiceError> {
            // ONNX: out x in x taps. Here: row tap * in + channel, column out.
            let raw = take(
                &format!("sincnet.conv1d.{i}.weight"),
                &[CONV_CHANNELS, inputs, CONV_TAPS],
            )?;
            let mut weights = vec![0.0f32; CONV_TAPS * inputs * CONV_CHANNELS];
            for o in 0..CONV_CHANNELS {
                for c in 0..inputs {
                    for t in 0..CONV_TAPS {
                        weights[(t * inputs + c) * CONV_CHANNELS + o] =
                            raw[(o * inputs + c) * CONV_TAPS + t];
                    }
                }
            }
            Ok(Conv {
                weights,
                bias: take(&format!("sincnet.conv1d.{i}.bias"), &[CONV_CHANNELS])?,
                inputs,
            })
        };
        let conv1 = conv(1, SINC_FILTERS)?;
        let conv2 = conv(2, CONV_CHANNELS)?;
        // The four layers' ONNX names (B, W, R), in order.
        let mut lstm = Vec::new();
        for (b, inputs) in [(783, 60), (826, 256), (869, 256), (912, 256)] {
            let biases = take(&format!("onnx::LSTM_{b}"), &[2, 2 * GATES])?;
            let onnx_w = take(&format!("onnx::LSTM_{}", b + 1), &[2, GATES, inputs])?;
            let input_weights =
                Packed::new(&transpose(&onnx_w, 2 * GATES, inputs), inputs, 2 * GATES);
            let recurrent = take(&format!("onnx::LSTM_{}", b + 2), &[2, GATES, HIDDEN])?;
            let panels = |d: usize| {
                recurrent_panels(&recurrent[d * GATES * HIDDEN..(d + 1) * GATES * HIDDEN])
            };
            let bias = (0..2 * GATES)
                .map(|i| {
                    let (d, g) = (i / GATES, i % GATES);
                    biases[d * 2 * GATES + g] + biases[d * 2 * GATES + GATES + g]
                })
                .collect();
            let recurrent_t = [panels(0), panels(1)];
            lstm.push(Lstm {
                input_weights,
                inputs,
                recurrent_t,
                bias,
            });
        }
        let mut linear = |w: &str, b: &str, inputs: usize, outputs: usize| {
            let weights = take(w, &[inputs, outputs])?;
            let weights = if outputs.is_multiple_of(crate::matmul::PANEL) {
                LinearWeights::Packed(Packed::new(&weights, inputs, outputs))
            } else {
                LinearWeights::Rows(weights)
            };
            Ok::<_, VoiceError>(Linear {
                weights,
                bias: take(b, &[outputs])?,
                inputs,
                outputs,
            })
        };
        let head = [
            linear("onnx::MatMul_915", "linear.0.bias", 2 * HIDDEN, HIDDEN)?,
            linear("onnx::MatMul_916", "linear.1.bias", HIDDEN, HIDDEN)?,
            linear("onnx::MatMul_917", "classifier.bias", HIDDEN, CLASSES)?,
        ];
        Ok(Self {
            wav_norm: (wav_w, wav_b),
            sinc_even,
            sinc_odd,
            norm0,
            conv1,
            norm1,
            conv2,
            norm2,
            lstm,
            head,
        })
    }

    /// The powerset log-probabilities of each of the [`FRAMES`] frames of one chunk of
    /// exactly 160,000 finite samples.
    pub(crate) fn forward(&self, samples: &[f32]) -> Vec<[f32; CLASSES]> {
        assert_eq!(samples.len(), SAMPLES, "one chunk");
        SCRATCH.with(|s| self.forward_in(samples, &mut s.borrow_mut()))
    }

    fn forward_in(&self, samples: &[f32], s: &mut Scratch) -> Vec<[f32; CLASSES]> {
        // The waveform's instance norm.
        let (mean, inv) = mean_inv_std(samples.iter().copied());
        let (w, b) = self.wav_norm;
        s.wav.clear();
        s.wav.extend(
            samples
                .iter()
                .map(|&x| ((x as f64 - mean) * inv) as f32 * w + b),
        );

        // Sinc filters, |.|, max-pool 3, in blocks of frames that stay in cache. Each filter is
        // symmetric or antisymmetric about its middle tap, so the block's samples are folded
        // (sums and differences of taps j and 250 - j) and each half of the bank reads half the
        // taps: half the products.
        const BLOCK: usize = 96 * POOL;
        let pooled0 = SINC_FRAMES / POOL;
        s.a0.clear();
        s.a0.resize(pooled0 * SINC_FILTERS, 0.0);
        s.sinc_block.resize(BLOCK * SINC_FILTERS, 0.0);
        s.fold_even.resize(BLOCK * (HALF_TAPS + 1), 0.0);
        s.fold_odd.resize(BLOCK * HALF_TAPS, 0.0);
        let mut f0 = 0;
        while f0 < pooled0 * POOL {
            let n = BLOCK.min(pooled0 * POOL - f0);
            for r in 0..n {
                let taps = &s.wav[(f0 + r) * SINC_STRIDE..(f0 + r) * SINC_STRIDE + SINC_TAPS];
                let even = &mut s.fold_even[r * (HALF_TAPS + 1)..(r + 1) * (HALF_TAPS + 1)];
                let odd = &mut s.fold_odd[r * HALF_TAPS..(r + 1) * HALF_TAPS];
                let (head, rest) = taps.split_at(HALF_TAPS);
                let (middle, tail) = rest.split_at(1);
                for (((e, o), &a), &b) in even
                    .iter_mut()
                    .zip(odd.iter_mut())
                    .zip(head)
                    .zip(tail.iter().rev())
                {
                    *e = a + b;
                    *o = a - b;
                }
                even[HALF_TAPS] = middle[0];
            }
            let half = SINC_FILTERS / 2;
            matmul(
                &mut s.sinc_block,
                SINC_FILTERS,
                View::rows(&s.fold_even, n, HALF_TAPS + 1),
                View::rows(&self.sinc_even, HALF_TAPS + 1, half),
                false,
            );
            matmul(
                &mut s.sinc_block[half..],
                SINC_FILTERS,
                View::rows(&s.fold_odd, n, HALF_TAPS),
                View::rows(&self.sinc_odd, HALF_TAPS, half),
                false,
            );
            let block = &s.sinc_block[..n * SINC_FILTERS];
            let out = &mut s.a0[f0 / POOL * SINC_FILTERS..(f0 + n) / POOL * SINC_FILTERS];
            pool_abs(block, SINC_FILTERS, out);
            f0 += n;
        }
        norm_leaky(&mut s.a0, SINC_FILTERS, &self.norm0);

        // The two small convolutions.
        conv_pool_norm(&s.a0, &self.conv1, &self.norm1, &mut s.c1, &mut s.a1);
        conv_pool_norm(&s.a1, &self.conv2, &self.norm2, &mut s.c2, &mut s.x);
        debug_assert_eq!(s.x.len(), FRAMES * CONV_CHANNELS);

        // The LSTM stack.
        for layer in &self.lstm {
            let frames = s.x.len() / layer.inputs;
            s.gates.clear();
            for _ in 0..frames {
                s.gates.extend_from_slice(&layer.bias);
            }
            matmul_packed(
                &mut s.gates,
                2 * GATES,
                View::rows(&s.x, frames, layer.inputs),
                layer.input_weights.all(),
                true,
            );
            s.y.clear();
            s.y.resize(frames * 2 * HIDDEN, 0.0);
            pulp::Arch::new().dispatch(Recurrence {
                gates: &s.gates,
                recurrent_t: [&layer.recurrent_t[0], &layer.recurrent_t[1]],
                out: &mut s.y,
            });
            std::mem::swap(&mut s.x, &mut s.y);
        }

        // The head.
        let frames = s.x.len() / (2 * HIDDEN);
        linear(&s.x, frames, &self.head[0], &mut s.h1, true);
        linear(&s.h1, frames, &self.head[1], &mut s.h2, true);
        linear(&s.h2, frames, &self.head[2], &mut s.out, false);
        s.out
            .chunks_exact(CLASSES)
            .map(|row| {
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let sum: f32 = row.iter().map(|&v| (v - max).exp()).sum();
                let log = max + sum.ln();
                std::array::from_fn(|c| row[c] - log)
            })
            .collect()
    }
}

/// The sinc bank folded about its middle tap ([`PyanNet::sinc_even`], [`PyanNet::sinc_odd`]),
/// after checking that the first half of the filters is symmetric and the second
/// antisymmetric, as pyannote's parametric sinc bank makes them (cosine and sine parts).
fn fold_sinc(sinc: &[f32]) -> Result<(Vec<f32>, Vec<f32>), String> {
    let half = SINC_FILTERS / 2;
    let mut even = vec![0.0f32; (HALF_TAPS + 1) * half];
    let mut odd = vec![0.0f32; HALF_TAPS * half];
    for f in 0..SINC_FILTERS {
        let k = &sinc[f * SINC_TAPS..(f + 1) * SINC_TAPS];
        let symmetric = f < half;
        for j in 0..HALF_TAPS {
            let (a, b) = (k[j], k[SINC_TAPS - 1 - j]);
            if (symmetric && a != b) || (!symmetric && a != -b) {
                return Err(format!("sinc filter {f} is not (anti)symmetric at tap {j}"));
            }
            if symmetric {
                even[j * half + f] = a;
            } else {
                odd[j * half + f - half] = a;
            }
        }
        if symmetric {
            even[HALF_TAPS * half + f] = k[HALF_TAPS];
        } else if k[HALF_TAPS] != 0.0 {
            return Err(format!("sinc filter {f} has a middle tap"));
        }
    }
    Ok((even, odd))
}

/// Mean and inverse standard deviation (biased variance plus the norms' epsilon), in f64.
fn mean_inv_std(values: impl Iterator<Item = f32> + Clone) -> (f64, f64) {
    let (mut n, mut sum, mut sq) = (0usize, 0.0f64, 0.0f64);
    for v in values {
        n += 1;
        sum += v as f64;
        sq += v as f64 * v as f64;
    }
    let n = n.max(1) as f64;
    let mean = sum / n;
    let var = (sq / n - mean * mean).max(0.0);
    (mean, 1.0 / (var + EPS).sqrt())
}

/// Max-pool 3 over time of the absolute values of a `frames x channels` block.
fn pool_abs(block: &[f32], channels: usize, out: &mut [f32]) {
    for (o, rows) in out
        .chunks_exact_mut(channels)
        .zip(block.chunks_exact(POOL * channels))
    {
        let (a, rest) = rows.split_at(channels);
        let (b, c) = rest.split_at(channels);
        for (((o, &a), &b), &c) in o.iter_mut().zip(a).zip(b).zip(c) {
            *o = a.abs().max(b.abs()).max(c.abs());
        }
    }
}

/// Max-pool 3 over time (floor) of a `frames x channels` matrix.
fn pool(input: &[f32], channels: usize, out: &mut Vec<f32>) {
    let frames = input.len() / channels / POOL;
    out.clear();
    out.resize(frames * channels, 0.0);
    for (o, rows) in out
        .chunks_exact_mut(channels)
        .zip(input.chunks_exact(POOL * channels))
    {
        let (a, rest) = rows.split_at(channels);
        let (b, c) = rest.split_at(channels);
        for (((o, &a), &b), &c) in o.iter_mut().zip(a).zip(b).zip(c) {
            *o = a.max(b).max(c);
        }
    }
}

/// Instance norm of each channel over time, its affine, then a leaky ReLU, in place.
fn norm_leaky(x: &mut [f32], channels: usize, norm: &Norm) {
    let frames = x.len() / channels;
    let mut sum = vec![0.0f64; channels];
    let mut sq = vec![0.0f64; channels];
    for row in x.chunks_exact(channels) {
        for ((s, q), &v) in sum.iter_mut().zip(sq.iter_mut()).zip(row) {
            *s += v as f64;
            *q += v as f64 * v as f64;
        }
    }
    let n = frames.max(1) as f64;
    let (scale, shift): (Vec<f32>, Vec<f32>) = (0..channels)
        .map(|c| {
            let mean = sum[c] / n;
            let inv = 1.0 / ((sq[c] / n - mean * mean).max(0.0) + EPS).sqrt();
            let scale = inv * norm.weight[c] as f64;
            (scale as f32, (norm.bias[c] as f64 - mean * scale) as f32)
        })
        .unzip();
    for row in x.chunks_exact_mut(channels) {
        for ((v, &a), &b) in row.iter_mut().zip(&scale).zip(&shift) {
            let y = *v * a + b;
            *v = if y >= 0.0 { y } else { y * LEAK };
        }
    }
}

/// A 5-tap convolution (one product on the overlapping view), max-pool 3, norm, leaky ReLU.
fn conv_pool_norm(input: &[f32], conv: &Conv, norm: &Norm, tmp: &mut Vec<f32>, out: &mut Vec<f32>) {
    let frames = input.len() / conv.inputs - CONV_TAPS + 1;
    tmp.clear();
    for _ in 0..frames {
        tmp.extend_from_slice(&conv.bias);
    }
    let view = View {
        data: input,
        rows: frames,
        cols: CONV_TAPS * conv.inputs,
        row_stride: conv.inputs,
        col_stride: 1,
    };
    matmul(
        tmp,
        CONV_CHANNELS,
        view,
        View::rows(&conv.weights, CONV_TAPS * conv.inputs, CONV_CHANNELS),
        true,
    );
    pool(tmp, CONV_CHANNELS, out);
    norm_leaky(out, CONV_CHANNELS, norm);
}

/// `out = x W + b`, with a leaky ReLU when `leaky`.
fn linear(x: &[f32], frames: usize, layer: &Linear, out: &mut Vec<f32>, leaky: bool) {
    out.clear();
    for _ in 0..frames {
        out.extend_from_slice(&layer.bias);
    }
    let x = View::rows(x, frames, layer.inputs);
    match &layer.weights {
        LinearWeights::Packed(w) => matmul_packed(out, layer.outputs, x, w.all(), true),
        LinearWeights::Rows(w) => matmul(
            out,
            layer.outputs,
            x,
            View::rows(w, layer.inputs, layer.outputs),
            true,
        ),
    }
    if leaky {
        for v in out.iter_mut() {
            if *v < 0.0 {
                *v *= LEAK;
            }
        }
    }
}

/// Both directions of one LSTM layer over every frame, as a [`pulp::WithSimd`] so that its
/// loops compile for the processor's widest vectors (the crate's baseline is SSE2); each
/// iteration takes one step of each direction.
struct Recurrence<'a> {
    /// `frames x 1024`: every frame's input projection plus biases, both directions.
    gates: &'a [f32],
    /// Each direction's [`Lstm::recurrent_t`].
    recurrent_t: [&'a [f32]; 2],
    /// `frames x 256`: the forward direction's 128 columns, then the backward's.
    out: &'a mut [f32],
}

impl pulp::WithSimd for Recurrence<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let frames = self.gates.len() / (2 * GATES);
        let mut h = [[0.0f32; HIDDEN]; 2];
        let mut c = [[0.0f32; HIDDEN]; 2];
        let mut g = [[0.0f32; GATES]; 2];
        for step in 0..frames {
            for d in 0..2 {
                let t = if d == 0 { step } else { frames - 1 - step };
                let at = t * 2 * GATES + d * GATES;
                g[d].copy_from_slice(&self.gates[at..at + GATES]);
                lstm_step(simd, self.recurrent_t[d], &mut g[d], &mut h[d], &mut c[d]);
                let at = t * 2 * HIDDEN + d * HIDDEN;
                self.out[at..at + HIDDEN].copy_from_slice(&h[d]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_come_out_as_the_network_has_them() {
        assert_eq!(SINC_FRAMES, 15_975);
        assert_eq!(FRAMES, crate::segment::CHUNK_FRAMES);
    }

    /// Our forward pass against tract's run of the same ONNX file, on real speech (the
    /// telephone call) and on input the parity fixture does not cover: silence, a clipped
    /// square wave, white-ish noise.
    #[test]
    fn the_forward_pass_is_tracts_run_of_the_onnx_graph() {
        let net = crate::segment::network().expect("weights load");
        let call = crate::test_common::read_wav(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/real/sample.wav"
        ));
        let mut inputs: Vec<Vec<f32>> = vec![
            call[..SAMPLES].to_vec(),
            call[call.len() - SAMPLES..].to_vec(),
            vec![0.0; SAMPLES],
        ];
        inputs.push(
            (0..SAMPLES)
                .map(|i| if (i / 40) % 2 == 0 { 1.0 } else { -1.0 })
                .collect(),
        );
        let mut state = 12345u32;
        inputs.push(
            (0..SAMPLES)
                .map(|_| {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (state >> 8) as f32 / (1u32 << 24) as f32 - 0.5
                })
                .collect(),
        );
        for (n, input) in inputs.iter().enumerate() {
            let ours = net.forward(input);
            let theirs = crate::Segmenter::new()
                .and_then(|s| s.run_in_tract(input))
                .expect("tract runs the graph");
            let mut worst = 0.0f32;
            for (a, b) in ours.iter().zip(&theirs.log_probs) {
                for (x, y) in a.iter().zip(b) {
                    worst = worst.max((x.exp() - y.exp()).abs());
                }
            }
            assert!(
                worst < 1e-3,
                "input {n}: largest probability difference {worst}"
            );
        }
    }
}
