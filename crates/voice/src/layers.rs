//! What the networks this crate computes itself (`pyannet`, `silero`) share: their weights read
//! from an ONNX file's initializers, the LSTM cell on the widest vectors the processor has, and
//! branch-free activations.

use crate::VoiceError;
use std::collections::HashMap;
use tract_onnx::prelude::*;

/// The float initializers of an ONNX file by name, taken one by one with their shapes checked.
pub(crate) struct Weights {
    network: &'static str,
    by_name: HashMap<String, (Vec<usize>, Vec<f32>)>,
    /// Each node's inputs by its first output's name, for initializers the exporter named
    /// after nothing (`onnx::Conv_4411`: a convolution with a batch norm folded in).
    inputs_of: HashMap<String, Vec<String>>,
}

impl Weights {
    /// Reads every float initializer of `bytes` (an ONNX model) of the network called `network`
    /// in error messages.
    pub fn from_onnx(network: &'static str, bytes: &[u8]) -> Result<Self, VoiceError> {
        let err = |e: String| VoiceError::Model(format!("{network}: {e}"));
        let proto = tract_onnx::onnx()
            .proto_model_for_read(&mut std::io::Cursor::new(bytes))
            .map_err(|e| err(e.to_string()))?;
        let graph = proto.graph.ok_or_else(|| err("no graph".into()))?;
        let inputs_of = graph
            .node
            .iter()
            .filter_map(|n| Some((n.output.first()?.clone(), n.input.clone())))
            .collect();
        let mut by_name = HashMap::new();
        for t in graph.initializer {
            // 1 = FLOAT in ONNX's TensorProto.DataType.
            if t.data_type != 1 {
                continue;
            }
            let shape: Vec<usize> = t.dims.iter().map(|&d| d.max(0) as usize).collect();
            let n: usize = shape.iter().product();
            let values: Vec<f32> = if !t.raw_data.is_empty() {
                t.raw_data
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect()
            } else {
                t.float_data.clone()
            };
            if values.len() != n {
                return Err(err(format!(
                    "{}: {} values for {shape:?}",
                    t.name,
                    values.len()
                )));
            }
            by_name.insert(t.name, (shape, values));
        }
        Ok(Self {
            network,
            by_name,
            inputs_of,
        })
    }

    /// A model error naming the network.
    pub fn err(&self, what: impl std::fmt::Display) -> VoiceError {
        VoiceError::Model(format!("{}: {what}", self.network))
    }

    /// The values of initializer `name`, which must have `shape`.
    pub fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, VoiceError> {
        let (s, v) = self
            .by_name
            .remove(name)
            .ok_or_else(|| self.err(format!("no initializer {name}")))?;
        if s != shape {
            return Err(self.err(format!("{name}: shape {s:?}, expected {shape:?}")));
        }
        Ok(v)
    }

    /// The values of input `index` of the node whose first output is `output`, which must be
    /// an initializer of `shape`.
    pub fn take_input(
        &mut self,
        output: &str,
        index: usize,
        shape: &[usize],
    ) -> Result<Vec<f32>, VoiceError> {
        let name = self
            .inputs_of
            .get(output)
            .and_then(|inputs| inputs.get(index))
            .cloned()
            .ok_or_else(|| self.err(format!("no input {index} of the node making {output}")))?;
        self.take(&name, shape)
    }
}

/// LSTM units of every layer here.
pub(crate) const HIDDEN: usize = 128;
/// Gates per step (input, output, forget, cell: ONNX's order).
pub(crate) const GATES: usize = 4 * HIDDEN;
/// Gates per panel of the recurrent weights (8 vectors of 16 on AVX-512).
const PANEL: usize = 128;
/// Vectors of accumulators a matrix-vector block holds in registers.
const BLOCK_VECTORS: usize = 8;

/// One direction's recurrent weights transposed and cut into panels of [`PANEL`] gates: panel
/// `p`, row `j` holds unit `j`'s weights into gates `p * PANEL..`, so that a step reads each
/// panel as one contiguous run.
pub(crate) fn recurrent_panels(recurrent: &[f32]) -> Vec<f32> {
    debug_assert_eq!(recurrent.len(), GATES * HIDDEN);
    let mut t = vec![0.0f32; HIDDEN * GATES];
    for g in 0..GATES {
        let (block, w) = (g / PANEL, g % PANEL);
        for j in 0..HIDDEN {
            t[(block * HIDDEN + j) * PANEL + w] = recurrent[g * HIDDEN + j];
        }
    }
    t
}

/// One LSTM step in place: `g` holds the step's input projection plus biases and becomes the
/// gates; `c` and `h` move on (ONNX's LSTM: `c = σ(f) c + σ(i) tanh(g)`, `h = σ(o) tanh(c)`).
#[inline(always)]
pub(crate) fn lstm_step<S: pulp::Simd>(
    simd: S,
    panels: &[f32],
    g: &mut [f32; GATES],
    h: &mut [f32; HIDDEN],
    c: &mut [f32; HIDDEN],
) {
    matvec_add(simd, panels, h, g);
    let (i, rest) = g.split_at(HIDDEN);
    let (o, rest) = rest.split_at(HIDDEN);
    let (f, cell) = rest.split_at(HIDDEN);
    for u in 0..HIDDEN {
        let next = sigmoid(f[u]) * c[u] + sigmoid(i[u]) * tanh(cell[u]);
        c[u] = next;
        h[u] = sigmoid(o[u]) * tanh(next);
    }
}

/// `g += Rᵀ h` for [`recurrent_panels`]: blocks of [`BLOCK_VECTORS`] vectors of `g` stay in
/// registers while every unit's row adds in.
#[inline(always)]
fn matvec_add<S: pulp::Simd>(simd: S, panels: &[f32], h: &[f32; HIDDEN], g: &mut [f32; GATES]) {
    let width = BLOCK_VECTORS * S::F32_LANES;
    debug_assert!(PANEL.is_multiple_of(width));
    for (panel, gp) in panels
        .chunks_exact(HIDDEN * PANEL)
        .zip(g.chunks_exact_mut(PANEL))
    {
        for (b, gb) in gp.chunks_exact_mut(width).enumerate() {
            let (gv, _) = S::as_mut_simd_f32s(gb);
            let mut acc: [S::f32s; BLOCK_VECTORS] = std::array::from_fn(|q| gv[q]);
            for (row, &hj) in panel.chunks_exact(PANEL).zip(h) {
                let (rv, _) = S::as_simd_f32s(&row[b * width..(b + 1) * width]);
                let hv = simd.splat_f32s(hj);
                for (a, &r) in acc.iter_mut().zip(rv) {
                    *a = simd.mul_add_e_f32s(hv, r, *a);
                }
            }
            gv[..BLOCK_VECTORS].copy_from_slice(&acc);
        }
    }
}

/// The logistic function, from `e^-|x|` (no overflow either side).
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    let e = crate::whisper::ops::fast_exp(-x.abs());
    let p = 1.0 / (1.0 + e);
    if x >= 0.0 {
        p
    } else {
        e * p
    }
}

/// `tanh`, from `e^-2|x|`.
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let e = crate::whisper::ops::fast_exp(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_activations_are_the_functions() {
        let mut x = -30.0f32;
        while x <= 30.0 {
            let s = 1.0 / (1.0 + (-(x as f64)).exp());
            assert!((sigmoid(x) as f64 - s).abs() < 2e-7, "sigmoid({x})");
            assert!(
                (tanh(x) as f64 - (x as f64).tanh()).abs() < 3e-7,
                "tanh({x})"
            );
            x += 0.0173;
        }
    }

    #[test]
    fn a_step_is_the_lstm_cell_written_out() {
        // Weights and inputs of no structure, one step, against the textbook cell in f64.
        let r: Vec<f32> = (0..GATES * HIDDEN)
            .map(|i| ((i * 7919) % 997) as f32 / 997.0 - 0.5)
            .collect();
        let panels = recurrent_panels(&r);
        let x: [f32; GATES] = std::array::from_fn(|i| ((i * 31) % 17) as f32 / 8.0 - 1.0);
        let h0: [f32; HIDDEN] = std::array::from_fn(|j| ((j * 13) % 11) as f32 / 11.0 - 0.5);
        let c0: [f32; HIDDEN] = std::array::from_fn(|j| (j % 5) as f32 / 5.0 - 0.4);
        let (mut g, mut h, mut c) = (x, h0, c0);
        pulp::Arch::new().dispatch(StepOnce {
            panels: &panels,
            g: &mut g,
            h: &mut h,
            c: &mut c,
        });
        let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
        for u in 0..HIDDEN {
            let pre = |gate: usize| {
                let row = gate * HIDDEN + u;
                x[row] as f64
                    + (0..HIDDEN)
                        .map(|j| r[row * HIDDEN + j] as f64 * h0[j] as f64)
                        .sum::<f64>()
            };
            let cell = sig(pre(2)) * c0[u] as f64 + sig(pre(0)) * pre(3).tanh();
            let out = sig(pre(1)) * cell.tanh();
            assert!((c[u] as f64 - cell).abs() < 1e-5, "c[{u}]");
            assert!((h[u] as f64 - out).abs() < 1e-5, "h[{u}]");
        }
    }

    struct StepOnce<'a> {
        panels: &'a [f32],
        g: &'a mut [f32; GATES],
        h: &'a mut [f32; HIDDEN],
        c: &'a mut [f32; HIDDEN],
    }

    impl pulp::WithSimd for StepOnce<'_> {
        type Output = ();
        fn with_simd<S: pulp::Simd>(self, simd: S) {
            lstm_step(simd, self.panels, self.g, self.h, self.c);
        }
    }
}
