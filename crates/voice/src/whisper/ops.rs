//! Two element-wise kernels the encoder spends most of its non-matmul time in, in place:
//! the attention softmax (13.5 M exponentials per encoder layer) and the exact (erf) GELU.
//! candle's own call the platform's scalar `exp` and `erf` per element (about 90 ms and 28 ms
//! per layer here); these are branch-free polynomial forms the compiler vectorizes.
//!
//! Both run on the widest vectors the processor has (`pulp::Arch` picks AVX-512 or AVX2 and
//! compiles the loops for it; the crate's baseline target has only SSE2): each element gets the
//! same operations in the same order whatever the width, so the results are the same bits.
//!
//! Accuracy: `exp` relative error below 2e-7 over the softmax's range (x <= 0); `erf` absolute
//! error below 1.5e-7 (Abramowitz and Stegun 7.1.26). Both far below the f32 noise of the
//! matrix products around them; the parity tests hold the outputs to the reference.

use candle_core::{CpuStorage, InplaceOp1, Layout, Result, Tensor};

const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;

/// `e^x` for `x <= 0` (the softmax's range; e^-87 below -87).
#[inline(always)]
pub(crate) fn fast_exp(x: f32) -> f32 {
    let x = x.max(-87.0);
    // n = round(x / ln 2) by the 1.5 * 2^23 trick: the sum's low mantissa bits are n.
    let shifter = 12_582_912.0f32;
    let t = x * LOG2E + shifter;
    let n = t - shifter;
    let ni = t.to_bits() as i32 - shifter.to_bits() as i32;
    let r = x - n * LN2_HI - n * LN2_LO;
    // Taylor to degree 7 on |r| <= 0.347: relative error under 1e-8 before rounding.
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r / 5040.0))))));
    p * f32::from_bits(((ni + 127) as u32) << 23)
}

/// Lanes of the partial maxima and sums (lets the compiler keep them in vector registers).
const LANES: usize = 16;

#[inline(always)]
fn max_of(row: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = a.max(x);
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    acc.iter().copied().fold(tail, f32::max)
}

#[inline(always)]
fn sum_of(row: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    let tail: f32 = chunks.remainder().iter().sum();
    acc.iter().sum::<f32>() + tail
}

/// Softmax of each row of a contiguous f32 buffer of rows of `width`. A masked `-inf` gives
/// e^-87 of the row's largest term (1.6e-38 of it): nothing, at f32 precision.
fn softmax_rows(data: &mut [f32], width: usize) {
    pulp::Arch::new().dispatch(SoftmaxRows(data, width))
}

/// The softmax of rows, as a [`pulp::WithSimd`] (see [`GeluRows`]).
struct SoftmaxRows<'a>(&'a mut [f32], usize);

impl pulp::WithSimd for SoftmaxRows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        softmax_rows_here(self.0, self.1)
    }
}

#[inline(always)]
fn softmax_rows_here(data: &mut [f32], width: usize) {
    for row in data.chunks_exact_mut(width) {
        let max = max_of(row);
        if max == f32::NEG_INFINITY {
            continue;
        }
        for x in row.iter_mut() {
            *x = fast_exp(*x - max);
        }
        let inv = 1.0 / sum_of(row);
        row.iter_mut().for_each(|x| *x *= inv);
    }
}

/// `erf(x)`, Abramowitz and Stegun 7.1.26.
#[inline(always)]
fn fast_erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let y = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let e = 1.0 - y * fast_exp(-a * a);
    e.copysign(x)
}

struct Softmax;

impl InplaceOp1 for Softmax {
    fn name(&self) -> &'static str {
        "whisper-softmax"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> Result<()> {
        let width = *layout.dims().last().unwrap_or(&1);
        match (storage, layout.contiguous_offsets()) {
            (CpuStorage::F32(data), Some((start, end))) => {
                softmax_rows(&mut data[start..end], width.max(1));
                Ok(())
            }
            _ => Err(candle_core::Error::Msg(
                "softmax: contiguous f32 expected".to_string(),
            )),
        }
    }
}

struct Gelu;

/// The GELU of a buffer, as a [`pulp::WithSimd`] so that its loop is compiled inside pulp's
/// `#[target_feature]` function for the processor's widest vectors. A closure handed to
/// `dispatch` holding the loop itself was not inlined there: its body stayed a separate function
/// at the crate's SSE2 baseline, 9 % of a stream's transcription (BENCHMARKS.md, "GELU on the
/// widest vectors, for real").
struct GeluRows<'a>(&'a mut [f32]);

impl pulp::WithSimd for GeluRows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        for x in self.0 {
            *x = 0.5 * *x * (1.0 + fast_erf(*x * std::f32::consts::FRAC_1_SQRT_2));
        }
    }
}

impl InplaceOp1 for Gelu {
    fn name(&self) -> &'static str {
        "whisper-gelu"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> Result<()> {
        match (storage, layout.contiguous_offsets()) {
            (CpuStorage::F32(data), Some((start, end))) => {
                pulp::Arch::new().dispatch(GeluRows(&mut data[start..end]));
                Ok(())
            }
            _ => Err(candle_core::Error::Msg(
                "gelu: contiguous f32 expected".to_string(),
            )),
        }
    }
}

/// Softmax over the last dimension, in place when `t` is a contiguous f32 tensor this code
/// owns (a fresh product), otherwise into a new tensor.
pub fn softmax_last_dim(t: Tensor) -> Result<Tensor> {
    let t = t.contiguous()?;
    t.inplace_op1(&Softmax)?;
    Ok(t)
}

/// The exact GELU, `x Φ(x)`, in place as [`softmax_last_dim`].
pub fn gelu(t: Tensor) -> Result<Tensor> {
    let t = t.contiguous()?;
    t.inplace_op1(&Gelu)?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_exp_is_exp() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x <= 0.0 {
            let want = (x as f64).exp();
            let got = fast_exp(x) as f64;
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(worst < 3e-7, "relative error {worst}");
    }

    #[test]
    fn fast_erf_is_erf() {
        // Reference values of erf (Abramowitz and Stegun table 7.1).
        for (x, want) in [
            (0.0f32, 0.0f64),
            (0.1, 0.112_462_916),
            (0.5, 0.520_499_878),
            (1.0, 0.842_700_793),
            (1.5, 0.966_105_146),
            (2.0, 0.995_322_265),
            (-1.0, -0.842_700_793),
        ] {
            let d = (fast_erf(x) as f64 - want).abs();
            assert!(d < 5e-7, "erf({x}): off by {d}");
        }
    }

    #[test]
    fn softmax_rows_sum_to_one_and_ignore_masked() {
        let mut d = vec![1.0, 2.0, f32::NEG_INFINITY, 0.5, 0.5, 0.5];
        softmax_rows(&mut d, 3);
        assert!(d[2] < 1e-30);
        assert!((d[0] + d[1] - 1.0).abs() < 1e-6);
        assert!((d[1] / d[0] - std::f32::consts::E).abs() < 1e-5);
        assert!((d[3] - 1.0 / 3.0).abs() < 1e-6);
    }
}
