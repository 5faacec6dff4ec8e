//! Three operations of the face networks on loops of our own, swapped into tract's graph after it
//! is decluttered and before tract lowers it to its kernels.
//!
//! Measured op by op on the face mesh (BENCHMARKS.md, "Faces at the cost of decoding"), three
//! of tract's operations took a third of a run though they do almost no arithmetic: the 3x3
//! depthwise convolutions of stride 2 (tract's vectorised depthwise kernel takes only stride 1;
//! stride 2 falls to a scalar loop), the 2x2 max pools of stride 2 (a scalar loop per output
//! point with bounds checks per tap), and the zero padding of channels (through ndarray's
//! generic slicing). MediaPipe's networks downsample with exactly these three, so each is here
//! as a plain loop the compiler vectorises, for exactly the shapes the networks use; any other
//! shape keeps tract's own operation.
//!
//! Each computes what tract computes, in the same order, so the networks give the same bits
//! (tests here against tract's operations, and `net::tests` on both whole networks): the
//! convolution starts from the bias and adds `tap * input` for each tap inside the picture in
//! kernel order, one rounding per product and per sum, as tract's depthwise does (it skips the
//! taps that fall on padding rather than adding zeros); the pool folds `f32::max` from
//! `f32::MIN` over its four taps in row order, as tract's 2x2 pool does.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::array::{Pad, PadMode};
use tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat, MaxPool, PoolSpec};
use tract_onnx::tract_core::ops::nn::DataFormat;

/// Replaces, in a decluttered model, the operations this module has loops for; returns how
/// many were replaced.
pub(crate) fn substitute(model: &mut TypedModel) -> TractResult<usize> {
    let mut replaced = 0;
    for id in 0..model.nodes.len() {
        let node = &model.nodes[id];
        let Some(&input) = node.inputs.first() else {
            continue;
        };
        let fact = model.outlet_fact(input)?;
        let op: Option<Box<dyn TypedOp>> = if let Some(conv) = node.op_as::<Conv>() {
            DepthwiseS2::for_conv(conv, fact, node.inputs.len())
                .map(|op| Box::new(op) as Box<dyn TypedOp>)
        } else if let Some(pool) = node.op_as::<MaxPool>() {
            MaxPool2::for_pool(pool, fact).map(|op| Box::new(op) as Box<dyn TypedOp>)
        } else if let Some(pad) = node.op_as::<Pad>() {
            PadConstant::for_pad(pad, fact).map(|op| Box::new(op) as Box<dyn TypedOp>)
        } else {
            None
        };
        if let Some(op) = op {
            model.nodes[id].op = op;
            replaced += 1;
        }
    }
    Ok(replaced)
}

/// `[n, c, h, w]` of an f32 NCHW input with a known shape.
fn nchw(fact: &TypedFact) -> Option<[usize; 4]> {
    if fact.datum_type != f32::datum_type() {
        return None;
    }
    let shape = fact.shape.as_concrete()?;
    <[usize; 4]>::try_from(shape).ok()
}

/// The padding (before, after) and output size of each spatial axis of a pool or convolution
/// on an `h` x `w` input, when its kernel, strides and dilations are the ones given.
fn geometry(
    spec: &PoolSpec,
    kernel: [usize; 2],
    stride: usize,
    h: usize,
    w: usize,
) -> Option<[(usize, usize, usize); 2]> {
    let square = |v: &[usize], want: usize| v.len() == 2 && v.iter().all(|&x| x == want);
    if spec.data_format != DataFormat::NCHW
        || spec.kernel_shape.as_slice() != &kernel[..]
        || !square(&spec.strides(), stride)
        || !square(&spec.dilations(), 1)
    {
        return None;
    }
    match spec.computed_padding(&[h, w]).as_slice() {
        [y, x] => Some([
            (y.pad_before, y.pad_after, y.convoluted),
            (x.pad_before, x.pad_after, x.convoluted),
        ]),
        _ => None,
    }
}

/// A 3x3 depthwise convolution of stride 2 (one filter per channel, NCHW, f32).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct DepthwiseS2 {
    /// Input `[n, c, h, w]`.
    input: [usize; 4],
    /// Output rows and columns.
    out: [usize; 2],
    /// Padding rows above and columns left of the picture.
    pad: [usize; 2],
}

impl DepthwiseS2 {
    fn for_conv(conv: &Conv, fact: &TypedFact, inputs: usize) -> Option<Self> {
        let [n, c, h, w] = nchw(fact)?;
        let depthwise = conv.group == c
            && conv.pool_spec.input_channels == c
            && conv.pool_spec.output_channels == c
            && c > 1;
        if conv.q_params.is_some()
            || conv.kernel_fmt != KernelFormat::OIHW
            || !depthwise
            || inputs != 3
        {
            return None;
        }
        let [(top, _, oh), (left, _, ow)] = geometry(&conv.pool_spec, [3, 3], 2, h, w)?;
        // The padding MediaPipe's networks use, at most one row and column before: the output
        // then fits the grid of the picture's phases (`run`).
        let fits = top <= 1 && left <= 1 && oh <= h.div_ceil(2) && ow <= w.div_ceil(2);
        (fits && oh > 0 && ow > 0).then_some(DepthwiseS2 {
            input: [n, c, h, w],
            out: [oh, ow],
            pad: [top, left],
        })
    }

    fn run(&self, x: &[f32], kernel: &[f32], bias: &[f32], out: &mut [f32]) {
        let [_, c, h, w] = self.input;
        let [oh, ow] = self.out;
        let [top, left] = self.pad;
        // The picture split in its four phases (even or odd row, even or odd column), each
        // `hh` x `hw`: tap (ky, kx) of output (oy, ox) reads phase ((ky - top) % 2,
        // (kx - left) % 2) at (oy + dy, ox + dx), dy and dx in -1..=1. On a grid of `hw`
        // columns that is one fixed offset per tap for every output point, so each tap is one
        // pass of multiply-adds over consecutive values. Reads that fall off the picture land in
        // zeros around the phases (or in the next row), and only at output points with a tap
        // outside the picture, which are then computed again one by one.
        let (hh, hw) = (h.div_ceil(2), w.div_ceil(2));
        let margin = hw + 1;
        let span = hh * hw + 2 * margin;
        let mut phases = crate::image::zeros::<f32>(4 * span);
        let mut acc = crate::image::zeros::<f32>(oh * hw);
        let tap_source = |ky: usize, kx: usize| -> (usize, isize) {
            let (y, x) = (ky as isize - top as isize, kx as isize - left as isize);
            let phase = (y.rem_euclid(2) * 2 + x.rem_euclid(2)) as usize;
            (phase, y.div_euclid(2) * hw as isize + x.div_euclid(2))
        };
        let border_row = |oy: usize| 2 * oy < top || 2 * oy + 3 > h + top;
        let border_col = |ox: usize| 2 * ox < left || 2 * ox + 3 > w + left;
        for (plane_index, (plane, out_plane)) in x
            .chunks_exact(h * w)
            .zip(out.chunks_exact_mut(oh * ow))
            .enumerate()
        {
            let ch = plane_index % c;
            let mut k = [0f32; 9];
            k.copy_from_slice(&kernel[ch * 9..ch * 9 + 9]);
            let b = if bias.len() == 1 { bias[0] } else { bias[ch] };
            for (y, row) in plane.chunks_exact(w).enumerate() {
                let at = margin + (y / 2) * hw;
                let (even, odd) = phases.split_at_mut(span * (2 * (y % 2) + 1));
                let even = &mut even[span * 2 * (y % 2) + at..][..hw];
                let odd = &mut odd[at..at + hw];
                for ((pair, e), o) in row.chunks_exact(2).zip(even.iter_mut()).zip(odd.iter_mut()) {
                    *e = pair[0];
                    *o = pair[1];
                }
                if w % 2 == 1 {
                    even[hw - 1] = row[w - 1];
                }
            }
            acc.fill(b);
            for ky in 0..3 {
                for kx in 0..3 {
                    let (phase, offset) = tap_source(ky, kx);
                    let start = (phase * span + margin) as isize + offset;
                    let source = &phases[start as usize..start as usize + acc.len()];
                    let tap = k[ky * 3 + kx];
                    for (a, &v) in acc.iter_mut().zip(source) {
                        *a += tap * v;
                    }
                }
            }
            for (oy, out_row) in out_plane.chunks_exact_mut(ow).enumerate() {
                if border_row(oy) {
                    for (ox, o) in out_row.iter_mut().enumerate() {
                        *o = self.point(plane, &k, b, oy, ox);
                    }
                    continue;
                }
                out_row.copy_from_slice(&acc[oy * hw..oy * hw + ow]);
                for ox in (0..ow).filter(|&ox| border_col(ox)) {
                    out_row[ox] = self.point(plane, &k, b, oy, ox);
                }
            }
        }
    }

    /// One output point, its taps in kernel order, those outside the picture left out.
    fn point(&self, plane: &[f32], k: &[f32; 9], b: f32, oy: usize, ox: usize) -> f32 {
        let [_, _, h, w] = self.input;
        let [top, left] = self.pad;
        let mut sum = b;
        for ky in 0..3 {
            let iy = (2 * oy + ky) as isize - top as isize;
            if iy < 0 || iy as usize >= h {
                continue;
            }
            for kx in 0..3 {
                let ix = (2 * ox + kx) as isize - left as isize;
                if ix < 0 || ix as usize >= w {
                    continue;
                }
                sum += k[ky * 3 + kx] * plane[iy as usize * w + ix as usize];
            }
        }
        sum
    }
}

impl Op for DepthwiseS2 {
    fn name(&self) -> StaticName {
        "AttuneDepthwise3x3s2".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "input {:?} -> {:?}, padding {:?}",
            self.input, self.out, self.pad
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for DepthwiseS2 {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext<'_>, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let [x, kernel, bias] = &*inputs else {
            bail!("{} takes three inputs", self.name());
        };
        let [n, c, h, w] = self.input;
        let [oh, ow] = self.out;
        let (x, kernel, bias) = (
            x.cast_to::<f32>()?,
            kernel.cast_to::<f32>()?,
            bias.cast_to::<f32>()?,
        );
        let (x, kernel, bias) = (
            x.try_as_plain_ram()?,
            kernel.try_as_plain_ram()?,
            bias.try_as_plain_ram()?,
        );
        let (xs, ks, bs) = (
            x.as_slice::<f32>()?,
            kernel.as_slice::<f32>()?,
            bias.as_slice::<f32>()?,
        );
        ensure!(
            xs.len() == n * c * h * w,
            "{}: input of {} values",
            self.name(),
            xs.len()
        );
        ensure!(
            ks.len() == c * 9,
            "{}: kernel of {} values",
            self.name(),
            ks.len()
        );
        ensure!(
            bs.len() == c || bs.len() == 1,
            "{}: bias of {} values",
            self.name(),
            bs.len()
        );
        let mut out = Tensor::zero::<f32>(&[n, c, oh, ow])?;
        {
            let mut plain = out.try_as_plain_ram_mut()?;
            self.run(xs, ks, bs, plain.as_slice_mut::<f32>()?);
        }
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for DepthwiseS2 {
    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let [n, c, _, _] = self.input;
        let [oh, ow] = self.out;
        Ok(tvec!(f32::fact([n, c, oh, ow])))
    }

    as_op!();
}

/// A 2x2 max pool of stride 2 without padding (NCHW, f32).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct MaxPool2 {
    /// Input `[n, c, h, w]`.
    input: [usize; 4],
    /// Output rows and columns.
    out: [usize; 2],
}

impl MaxPool2 {
    fn for_pool(pool: &MaxPool, fact: &TypedFact) -> Option<Self> {
        let [n, c, h, w] = nchw(fact)?;
        if pool.with_index_outputs.is_some() {
            return None;
        }
        let [(t, b, oh), (l, r, ow)] = geometry(&pool.pool_spec, [2, 2], 2, h, w)?;
        let unpadded = t == 0 && b == 0 && l == 0 && r == 0;
        (unpadded && oh > 0 && ow > 0 && 2 * oh <= h && 2 * ow <= w).then_some(MaxPool2 {
            input: [n, c, h, w],
            out: [oh, ow],
        })
    }

    fn run(&self, x: &[f32], out: &mut [f32]) {
        let [_, _, h, w] = self.input;
        let [oh, ow] = self.out;
        for (plane, out_plane) in x.chunks_exact(h * w).zip(out.chunks_exact_mut(oh * ow)) {
            for (oy, out_row) in out_plane.chunks_exact_mut(ow).enumerate() {
                let top = &plane[2 * oy * w..2 * oy * w + 2 * ow];
                let bottom = &plane[(2 * oy + 1) * w..(2 * oy + 1) * w + 2 * ow];
                for ((o, t), b) in out_row
                    .iter_mut()
                    .zip(top.chunks_exact(2))
                    .zip(bottom.chunks_exact(2))
                {
                    *o = f32::MIN.max(t[0]).max(t[1]).max(b[0]).max(b[1]);
                }
            }
        }
    }
}

impl Op for MaxPool2 {
    fn name(&self) -> StaticName {
        "AttuneMaxPool2x2".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("input {:?} -> {:?}", self.input, self.out)])
    }

    op_as_typed_op!();
}

impl EvalOp for MaxPool2 {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext<'_>, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let [x] = &*inputs else {
            bail!("{} takes one input", self.name());
        };
        let [n, c, h, w] = self.input;
        let [oh, ow] = self.out;
        let x = x.try_as_plain_ram()?;
        let xs = x.as_slice::<f32>()?;
        ensure!(
            xs.len() == n * c * h * w,
            "{}: input of {} values",
            self.name(),
            xs.len()
        );
        let mut out = Tensor::zero::<f32>(&[n, c, oh, ow])?;
        {
            let mut plain = out.try_as_plain_ram_mut()?;
            self.run(xs, plain.as_slice_mut::<f32>()?);
        }
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for MaxPool2 {
    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let [n, c, _, _] = self.input;
        let [oh, ow] = self.out;
        Ok(tvec!(f32::fact([n, c, oh, ow])))
    }

    as_op!();
}

/// A constant padding of an f32 tensor (MediaPipe's networks pad channels with zeros before a
/// residual sum that widens them, and the picture's last row and column before a convolution
/// of stride 2).
#[derive(Debug, Clone, PartialEq)]
struct PadConstant {
    /// Input shape.
    shape: TVec<usize>,
    /// Values added before and after, per axis.
    pads: TVec<(usize, usize)>,
    value: f32,
}

impl Eq for PadConstant {}

impl std::hash::Hash for PadConstant {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.shape, &self.pads, self.value.to_bits()).hash(state);
    }
}

impl PadConstant {
    fn for_pad(pad: &Pad, fact: &TypedFact) -> Option<Self> {
        if fact.datum_type != f32::datum_type() {
            return None;
        }
        let shape: TVec<usize> = fact.shape.as_concrete()?.into();
        let PadMode::Constant(value) = &pad.mode else {
            return None;
        };
        let value = value.cast_to_scalar::<f32>().ok()?;
        (pad.pads.len() == shape.len() && !shape.is_empty()).then(|| PadConstant {
            shape,
            pads: pad.pads.iter().copied().collect(),
            value,
        })
    }

    fn out_shape(&self) -> TVec<usize> {
        self.shape
            .iter()
            .zip(&self.pads)
            .map(|(d, (a, b))| d + a + b)
            .collect()
    }
}

impl Op for PadConstant {
    fn name(&self) -> StaticName {
        "AttunePadConstant".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "{:?} padded {:?} with {}",
            self.shape, self.pads, self.value
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for PadConstant {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext<'_>, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let [x] = &*inputs else {
            bail!("{} takes one input", self.name());
        };
        let x = x.try_as_plain_ram()?;
        let xs = x.as_slice::<f32>()?;
        ensure!(
            xs.len() == self.shape.iter().product::<usize>(),
            "{}: input of {} values",
            self.name(),
            xs.len()
        );
        let out_shape = self.out_shape();
        let mut out = Tensor::zero::<f32>(&out_shape)?;
        {
            let mut plain = out.try_as_plain_ram_mut()?;
            let outs = plain.as_slice_mut::<f32>()?;
            if self.value.to_bits() != 0 {
                outs.fill(self.value);
            }
            // Each row of the last axis goes where its indices, shifted by the padding before,
            // put it in the output.
            let rank = self.shape.len();
            let row = self.shape[rank - 1];
            let mut strides = vec![1usize; rank];
            for d in (0..rank - 1).rev() {
                strides[d] = strides[d + 1] * out_shape[d + 1];
            }
            let mut index = vec![0usize; rank - 1];
            if row > 0 {
                for chunk in xs.chunks_exact(row) {
                    let at = self.pads[rank - 1].0
                        + (0..rank - 1)
                            .map(|d| (index[d] + self.pads[d].0) * strides[d])
                            .sum::<usize>();
                    outs[at..at + row].copy_from_slice(chunk);
                    for d in (0..rank - 1).rev() {
                        index[d] += 1;
                        if index[d] < self.shape[d] {
                            break;
                        }
                        index[d] = 0;
                    }
                }
            }
        }
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for PadConstant {
    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(&*self.out_shape())))
    }

    as_op!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::cnn::PaddingSpec;

    /// Values with both signs, exact zeros of both signs, and no two alike nearby.
    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| match (i * 7 + seed) % 23 {
                0 => 0.0,
                1 => -0.0,
                k => (k as f32 - 11.3) * 0.173 * (1.0 + (i % 5) as f32 * 0.01),
            })
            .collect()
    }

    /// The one-operation model `build` makes, optimized by tract alone and with our operation
    /// swapped in: the same bits out.
    fn same_bits(input: [usize; 4], build: impl Fn(&mut TypedModel, OutletId) -> OutletId) {
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact(input)).unwrap();
        let y = build(&mut model, x);
        model.select_output_outlets(&[y]).unwrap();
        model.declutter().unwrap();
        let mut ours = model.clone();
        assert_eq!(substitute(&mut ours).unwrap(), 1, "replaced for {input:?}");
        let mut theirs = model;
        let run = |mut m: TypedModel| -> Vec<u32> {
            m.optimize().unwrap();
            let plan = m.into_runnable().unwrap();
            let data = values(input.iter().product(), 3);
            let x = Tensor::from_shape(&input, &data).unwrap();
            let out = plan.run(tvec!(x.into_tvalue())).unwrap();
            let out = out[0].try_as_plain_ram().unwrap();
            out.as_slice::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect()
        };
        let got = run(ours);
        let want = run(std::mem::take(&mut theirs));
        assert_eq!(got.len(), want.len(), "{input:?}");
        assert_eq!(got, want, "{input:?}");
    }

    #[test]
    fn the_stride_2_depthwise_convolution_gives_tracts_bits() {
        for (input, padding) in [
            (
                [1, 3, 12, 12],
                PaddingSpec::Explicit(tvec![0, 0], tvec![1, 1]),
            ),
            (
                [1, 4, 11, 9],
                PaddingSpec::Explicit(tvec![1, 1], tvec![1, 1]),
            ),
            (
                [2, 3, 7, 10],
                PaddingSpec::Explicit(tvec![1, 0], tvec![0, 1]),
            ),
            ([1, 5, 9, 9], PaddingSpec::Valid),
            ([1, 2, 8, 13], PaddingSpec::SameUpper),
            ([1, 2, 3, 3], PaddingSpec::SameUpper),
        ] {
            let c = input[1];
            same_bits(input, |model, x| {
                let kernel = Tensor::from_shape(&[c, 1, 3, 3], &values(c * 9, 1)).unwrap();
                let kernel = model.add_const("kernel", kernel).unwrap();
                let bias = Tensor::from_shape(&[c], &values(c, 5)).unwrap();
                let bias = model.add_const("bias", bias).unwrap();
                let conv = Conv {
                    pool_spec: PoolSpec {
                        data_format: DataFormat::NCHW,
                        kernel_shape: tvec![3, 3],
                        padding: padding.clone(),
                        dilations: None,
                        strides: Some(tvec![2, 2]),
                        input_channels: c,
                        output_channels: c,
                    },
                    kernel_fmt: KernelFormat::OIHW,
                    group: c,
                    q_params: None,
                };
                model.wire_node("conv", conv, &[x, kernel, bias]).unwrap()[0]
            });
        }
    }

    #[test]
    fn the_2x2_max_pool_gives_tracts_bits() {
        for (input, padding) in [
            ([1, 3, 8, 8], PaddingSpec::Valid),
            ([1, 2, 9, 7], PaddingSpec::Valid),
            ([2, 4, 6, 10], PaddingSpec::SameUpper),
        ] {
            same_bits(input, |model, x| {
                let pool = MaxPool {
                    pool_spec: PoolSpec {
                        data_format: DataFormat::NCHW,
                        kernel_shape: tvec![2, 2],
                        padding: padding.clone(),
                        dilations: None,
                        strides: Some(tvec![2, 2]),
                        input_channels: input[1],
                        output_channels: input[1],
                    },
                    with_index_outputs: None,
                };
                model.wire_node("pool", pool, &[x]).unwrap()[0]
            });
        }
    }

    #[test]
    fn a_constant_padding_gives_tracts_bits() {
        for (input, pads, value) in [
            ([1, 3, 4, 5], vec![(0, 0), (0, 5), (0, 0), (0, 0)], 0.0f32),
            ([1, 3, 4, 5], vec![(0, 0), (0, 0), (0, 1), (0, 1)], 0.0),
            ([2, 2, 3, 3], vec![(1, 0), (2, 1), (0, 2), (3, 0)], -1.5),
        ] {
            same_bits(input, |model, x| {
                let pad = Pad {
                    pads: pads.clone(),
                    mode: PadMode::Constant(tensor0(value).into_arc_tensor()),
                };
                model.wire_node("pad", pad, &[x]).unwrap()[0]
            });
        }
    }
}
