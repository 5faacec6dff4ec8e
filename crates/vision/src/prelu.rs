//! ONNX `PRelu` as one element-wise pass.
//!
//! tract expands `PRelu(x, slope)` into a product, a comparison and a select; the last two run
//! element by element through ndarray's generic iteration, and on MediaPipe's face mesh (23
//! PRelus, one after most convolutions) they were 18 % of a mesh's time (BENCHMARKS.md, "Faces
//! at the cost of decoding"). Here `PRelu` is one binary operation of tract's graph whose
//! evaluation is a loop per channel that the compiler vectorizes. It computes what tract's
//! expansion computes, `x < 0 ? x * slope : x`, element for element, so the networks' outputs
//! are the same bits (`net::tests` runs the whole face mesh both ways).

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_core::ops::binary::{BinMiniOp, TypedBinOp};
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::expandable::expand;

/// tract's ONNX front end, with `PRelu` as [`PRelu`].
pub(crate) fn onnx() -> tract_onnx::Onnx {
    let mut onnx = tract_onnx::onnx();
    onnx.op_register.insert("PRelu", parse_prelu);
    onnx
}

fn parse_prelu(
    _ctx: &ParsingContext<'_>,
    _node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    Ok((expand(PReluExpansion), vec![]))
}

/// The ONNX node: checks shapes, then wires [`PRelu`] with the slope brought to the input's
/// rank (ONNX broadcasts it from the right).
#[derive(Debug, Clone)]
struct PReluExpansion;

impl Expansion for PReluExpansion {
    fn name(&self) -> StaticName {
        "AttunePRelu".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        if inputs.len() != 2 || outputs.len() != 1 {
            bail!("PRelu takes two inputs and gives one output");
        }
        s.equals(&inputs[0].datum_type, &outputs[0].datum_type)?;
        s.equals(&inputs[0].shape, &outputs[0].shape)?;
        Ok(())
    }

    fn wire(
        &self,
        name: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let x = inputs[0];
        let mut slope = inputs[1];
        let rank = model.outlet_fact(x)?.rank();
        while model.outlet_fact(slope)?.rank() < rank {
            slope = model.wire_node(
                format!("{name}.add-axis-{}", model.outlet_fact(slope)?.rank()),
                AxisOp::Add(0),
                &[slope],
            )?[0];
        }
        model.wire_node(name, TypedBinOp(Box::new(PRelu), None), &[x, slope])
    }
}

/// `x < 0 ? x * slope : x`, with `slope` broadcast to `x`'s shape.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PRelu;

impl BinMiniOp for PRelu {
    fn name(&self) -> &'static str {
        "AttunePRelu"
    }

    fn result_datum_type(&self, a: DatumType, _b: DatumType) -> TractResult<DatumType> {
        Ok(a)
    }

    fn is_commutative(&self) -> bool {
        false
    }

    fn eval_in_a(&self, a: &mut Tensor, b: &Tensor) -> TractResult<()> {
        let shape: TVec<usize> = a.shape().into();
        let slopes = b.cast_to::<f32>()?;
        let slopes = slopes.try_as_plain_ram()?;
        let mut xs = a.try_as_plain_ram_mut()?;
        prelu_in_place(
            xs.as_slice_mut::<f32>()?,
            &shape,
            slopes.as_slice::<f32>()?,
            b.shape(),
        )
    }

    fn eval_out_of_place(&self, c: &mut Tensor, a: &Tensor, b: &Tensor) -> TractResult<()> {
        // `c` has the broadcast shape of both: copy `x` into it, broadcast, then as in place.
        let shape: TVec<usize> = c.shape().into();
        let x = a.to_plain_array_view::<f32>()?;
        let Some(x) = x.broadcast(&*shape) else {
            bail!("PRelu: {:?} does not broadcast to {:?}", a.shape(), shape);
        };
        let mut out = c.try_as_plain_ram_mut()?;
        let out = out.as_slice_mut::<f32>()?;
        for (o, v) in out.iter_mut().zip(x.iter()) {
            *o = *v;
        }
        let slopes = b.cast_to::<f32>()?;
        let slopes = slopes.try_as_plain_ram()?;
        prelu_in_place(out, &shape, slopes.as_slice::<f32>()?, b.shape())
    }
}

/// The slope of one element: `x < 0 ? x * s : x` (tract's expansion: `Iff(0 > x, x * s, x)`).
#[inline(always)]
fn leaky(x: f32, s: f32) -> f32 {
    if x < 0.0 {
        x * s
    } else {
        x
    }
}

/// Applies the slopes of shape `slope_shape` (one per element of `shape`'s axes, or 1) to the
/// contiguous `xs` of shape `shape`, in place.
fn prelu_in_place(
    xs: &mut [f32],
    shape: &[usize],
    slopes: &[f32],
    slope_shape: &[usize],
) -> TractResult<()> {
    let rank = shape.len();
    if slope_shape.len() > rank {
        bail!(
            "PRelu: slope of rank {} for input of rank {rank}",
            slope_shape.len()
        );
    }
    // The slope's shape, aligned to the input's from the right.
    let aligned: TVec<usize> = std::iter::repeat_n(1, rank - slope_shape.len())
        .chain(slope_shape.iter().copied())
        .collect();
    for (i, (&s, &x)) in aligned.iter().zip(shape).enumerate() {
        if s != 1 && s != x {
            bail!("PRelu: slope {slope_shape:?} does not broadcast to {shape:?} (axis {i})");
        }
    }
    let varying: TVec<usize> = (0..rank).filter(|&i| aligned[i] != 1).collect();
    match varying.as_slice() {
        [] => {
            let s = slopes.first().copied().unwrap_or(1.0);
            xs.iter_mut().for_each(|x| *x = leaky(*x, s));
        }
        &[axis] => {
            // One slope per index of `axis`: runs of `inner` elements share a slope.
            let channels = shape[axis];
            let inner: usize = shape[axis + 1..].iter().product();
            if inner == 0 || channels == 0 {
                return Ok(());
            }
            for (run, chunk) in xs.chunks_mut(inner).enumerate() {
                let s = slopes[run % channels];
                chunk.iter_mut().for_each(|x| *x = leaky(*x, s));
            }
        }
        _ => {
            // Slopes varying along several axes: index each element.
            let mut strides = vec![0usize; rank];
            let mut stride = 1;
            for i in (0..rank).rev() {
                strides[i] = if aligned[i] == 1 { 0 } else { stride };
                stride *= aligned[i];
            }
            let mut index = vec![0usize; rank];
            for x in xs.iter_mut() {
                let at: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
                *x = leaky(*x, slopes[at]);
                for d in (0..rank).rev() {
                    index[d] += 1;
                    if index[d] < shape[d] {
                        break;
                    }
                    index[d] = 0;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What tract's own expansion computes, element by element.
    fn reference(xs: &[f32], shape: &[usize], slopes: &[f32], slope_shape: &[usize]) -> Vec<f32> {
        let x = tract_ndarray::ArrayD::from_shape_vec(shape.to_vec(), xs.to_vec()).unwrap();
        let s =
            tract_ndarray::ArrayD::from_shape_vec(slope_shape.to_vec(), slopes.to_vec()).unwrap();
        let s = s.broadcast(shape.to_vec()).unwrap();
        x.iter()
            .zip(s.iter())
            .map(|(&x, &s)| if 0.0 > x { x * s } else { x })
            .collect()
    }

    #[test]
    fn every_broadcast_of_the_slope_gives_what_tracts_expansion_gives() {
        let shape = [1usize, 3, 4, 5];
        let xs: Vec<f32> = (0..60).map(|i| (i as f32 - 29.5) * 0.37).collect();
        for (slope_shape, slopes) in [
            (vec![1usize, 3, 1, 1], vec![0.25f32, -0.5, 1.5]),
            (vec![3, 1, 1], vec![0.25, -0.5, 1.5]),
            (vec![5], vec![0.1, 0.2, -0.3, 0.4, 2.0]),
            (vec![1], vec![0.3]),
            (
                vec![1, 3, 4, 1],
                (0..12).map(|i| i as f32 * 0.1 - 0.4).collect(),
            ),
        ] {
            let mut got = xs.clone();
            prelu_in_place(&mut got, &shape, &slopes, &slope_shape).unwrap();
            let want = reference(&xs, &shape, &slopes, &slope_shape);
            assert_eq!(
                got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "slope shape {slope_shape:?}"
            );
        }
    }

    #[test]
    fn a_slope_that_does_not_broadcast_is_an_error_not_a_panic() {
        let mut xs = vec![1.0f32; 12];
        assert!(prelu_in_place(&mut xs, &[1, 3, 4], &[0.1, 0.2], &[2, 1]).is_err());
        assert!(prelu_in_place(&mut xs, &[12], &[0.1; 4], &[1, 1, 4]).is_err());
    }
}
