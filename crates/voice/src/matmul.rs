//! Matrix products on strided views of slices, one thread: ndarray's `general_mat_mul`, which
//! runs matrixmultiply's kernels (AVX2 and FMA where the processor has them) on any strides,
//! behind a safe call.
//!
//! Strided views are what make a 1-D convolution one product with no copy: row `t` of the
//! left operand starts `stride` samples after row `t - 1` and reads `kernel` samples, so the
//! rows overlap (a Toeplitz view of the signal; read-only views may overlap).

use ndarray::{linalg::general_mat_mul, ArrayView2, ArrayViewMut2, ShapeBuilder};

/// A read-only matrix view: `rows x cols` elements of `data`, element `(r, c)` at
/// `r * row_stride + c * col_stride`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl<'a> View<'a> {
    /// A row-major matrix (`cols` elements per row, contiguous).
    pub fn rows(data: &'a [f32], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// The transpose of a row-major `cols x rows` matrix, read in place.
    pub fn transposed(data: &'a [f32], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            row_stride: 1,
            col_stride: rows,
        }
    }

    /// Index of the last element the view reads, or `None` when it reads none.
    fn last(&self) -> Option<usize> {
        if self.rows == 0 || self.cols == 0 {
            return None;
        }
        Some((self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride)
    }

    fn array(&self) -> ArrayView2<'a, f32> {
        if let Some(last) = self.last() {
            assert!(
                last < self.data.len(),
                "matrix view reads element {last} of {}",
                self.data.len()
            );
        }
        ArrayView2::from_shape(
            (self.rows, self.cols).strides((self.row_stride, self.col_stride)),
            self.data,
        )
        .expect("a view inside its slice")
    }
}

/// `dst = a * b` (or `dst += a * b` with `accumulate`), `dst` row-major with `b.cols` columns
/// per row and rows `dst_row_stride` apart.
///
/// # Panics
/// When the shapes do not agree or a view reaches past its slice.
pub(crate) fn matmul(
    dst: &mut [f32],
    dst_row_stride: usize,
    a: View<'_>,
    b: View<'_>,
    accumulate: bool,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(b.rows, k, "inner dimensions");
    assert!(dst_row_stride >= n, "destination rows overlap");
    let (a, b) = (a.array(), b.array());
    if m == 0 || n == 0 {
        return;
    }
    let dst_len = (m - 1) * dst_row_stride + n;
    assert!(
        dst_len <= dst.len(),
        "destination of {} elements",
        dst.len()
    );
    let mut c = ArrayViewMut2::from_shape((m, n).strides((dst_row_stride, 1)), &mut dst[..dst_len])
        .expect("destination rows apart");
    general_mat_mul(1.0, &a, &b, if accumulate { 1.0 } else { 0.0 }, &mut c);
}

/// ONNX's `out x in` weights (a linear layer's, or a 1-tap convolution's `out x in x 1`) as
/// the `in x out` right operand of a product.
pub(crate) fn transpose(raw: &[f32], outputs: usize, inputs: usize) -> Vec<f32> {
    let mut t = vec![0.0f32; inputs * outputs];
    for o in 0..outputs {
        for i in 0..inputs {
            t[i * outputs + o] = raw[o * inputs + i];
        }
    }
    t
}

/// Columns per panel of a [`Packed`] matrix.
pub(crate) const PANEL: usize = 32;
/// Accumulator vectors a block of the product holds in registers (of the 32 on AVX-512).
const ACCUMULATORS: usize = 12;

/// A constant right operand (a layer's weights, `k x n`) stored once as panels of [`PANEL`]
/// columns, each panel's `k` rows contiguous, so that a product reads it as it is: no packing
/// per call. For products whose left operand has few rows (tens of frames against hundreds
/// of weight rows) matrixmultiply spends about a third of its time packing.
pub(crate) struct Packed {
    k: usize,
    n: usize,
    panels: Vec<f32>,
}

impl Packed {
    /// Packs the row-major `k x n` matrix `b` (`n` a multiple of [`PANEL`]).
    pub fn new(b: &[f32], k: usize, n: usize) -> Self {
        assert_eq!(b.len(), k * n, "a k x n matrix");
        assert!(n.is_multiple_of(PANEL), "whole panels");
        let mut panels = vec![0.0f32; k * n];
        for p in 0..n / PANEL {
            for r in 0..k {
                let at = (p * k + r) * PANEL;
                panels[at..at + PANEL].copy_from_slice(&b[r * n + p * PANEL..][..PANEL]);
            }
        }
        Self { k, n, panels }
    }

    /// The whole matrix.
    pub fn all(&self) -> PackedRows<'_> {
        self.rows(0, self.k)
    }

    /// Rows `start..start + k` (a convolution's tap of a matrix of all its taps).
    ///
    /// # Panics
    /// When they are not all rows of the matrix.
    pub fn rows(&self, start: usize, k: usize) -> PackedRows<'_> {
        assert!(start + k <= self.k, "rows of the matrix");
        PackedRows {
            panels: &self.panels,
            panel_rows: self.k,
            start,
            k,
            n: self.n,
        }
    }
}

/// Consecutive rows of a [`Packed`] matrix.
#[derive(Clone, Copy)]
pub(crate) struct PackedRows<'a> {
    panels: &'a [f32],
    /// Rows per panel of the whole matrix.
    panel_rows: usize,
    start: usize,
    k: usize,
    n: usize,
}

impl<'a> PackedRows<'a> {
    /// Panel `p`'s rows, `k x PANEL` contiguous.
    fn panel(&self, p: usize) -> &'a [f32] {
        let at = (p * self.panel_rows + self.start) * PANEL;
        &self.panels[at..at + self.k * PANEL]
    }
}

/// `dst = a * b` (or `dst += a * b` with `accumulate`), `dst` row-major with `b`'s columns,
/// rows `dst_row_stride` apart; `a`'s rows must be contiguous (`col_stride` 1) and may
/// overlap. Register-blocked on the widest vectors the processor has.
///
/// # Panics
/// When the shapes do not agree or a view reaches past its slice.
pub(crate) fn matmul_packed(
    dst: &mut [f32],
    dst_row_stride: usize,
    a: View<'_>,
    b: PackedRows<'_>,
    accumulate: bool,
) {
    assert_eq!(a.cols, b.k, "inner dimensions");
    assert_eq!(a.col_stride, 1, "contiguous rows");
    assert!(dst_row_stride >= b.n, "destination rows overlap");
    if a.rows == 0 {
        return;
    }
    if let Some(last) = a.last() {
        assert!(
            last < a.data.len(),
            "matrix view reads element {last} of {}",
            a.data.len()
        );
    }
    let dst_len = (a.rows - 1) * dst_row_stride + b.n;
    assert!(
        dst_len <= dst.len(),
        "destination of {} elements",
        dst.len()
    );
    pulp::Arch::new().dispatch(PackedProduct {
        dst,
        dst_row_stride,
        a,
        b,
        accumulate,
    });
}

struct PackedProduct<'a, 'b> {
    dst: &'a mut [f32],
    dst_row_stride: usize,
    a: View<'b>,
    b: PackedRows<'b>,
    accumulate: bool,
}

impl pulp::WithSimd for PackedProduct<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(mut self, simd: S) {
        let rows = self.a.rows;
        let b = self.b;
        // Rows per block: as many as leave every accumulator in a register.
        let per_row = PANEL / S::F32_LANES;
        let block = (ACCUMULATORS / per_row).clamp(1, 6);
        for p in 0..b.n / PANEL {
            let panel = b.panel(p);
            let mut m = 0;
            while m < rows {
                let r = (rows - m).min(block);
                match r {
                    6 => self.block::<S, 6>(simd, panel, p, m),
                    5 => self.block::<S, 5>(simd, panel, p, m),
                    4 => self.block::<S, 4>(simd, panel, p, m),
                    3 => self.block::<S, 3>(simd, panel, p, m),
                    2 => self.block::<S, 2>(simd, panel, p, m),
                    _ => self.block::<S, 1>(simd, panel, p, m),
                }
                m += r;
            }
        }
    }
}

impl PackedProduct<'_, '_> {
    /// Rows `m..m + R` of panel `p`'s columns: `R x PANEL` accumulators in registers while
    /// every row of the panel adds in.
    #[inline(always)]
    fn block<S: pulp::Simd, const R: usize>(&mut self, simd: S, panel: &[f32], p: usize, m: usize) {
        const MAX_VECTORS: usize = PANEL / 4;
        let vectors = PANEL / S::F32_LANES;
        let k = self.b.k;
        let a = self.a;
        let a_rows: [&[f32]; R] = std::array::from_fn(|r| &a.data[(m + r) * a.row_stride..][..k]);
        let zero = simd.splat_f32s(0.0);
        let mut acc = [[zero; MAX_VECTORS]; R];
        for (i, row) in panel.chunks_exact(PANEL).enumerate() {
            let (bv, _) = S::as_simd_f32s(row);
            for r in 0..R {
                let av = simd.splat_f32s(a_rows[r][i]);
                for v in 0..vectors {
                    acc[r][v] = simd.mul_add_e_f32s(av, bv[v], acc[r][v]);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            let at = (m + r) * self.dst_row_stride + p * PANEL;
            let (out, _) = S::as_mut_simd_f32s(&mut self.dst[at..at + PANEL]);
            for (o, &v) in out.iter_mut().zip(&acc[..vectors]) {
                *o = if self.accumulate {
                    simd.add_f32s(*o, v)
                } else {
                    v
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: View<'_>, b: View<'_>) -> Vec<f32> {
        let mut out = vec![0.0f32; a.rows * b.cols];
        for r in 0..a.rows {
            for c in 0..b.cols {
                let mut s = 0.0f64;
                for i in 0..a.cols {
                    s += a.data[r * a.row_stride + i * a.col_stride] as f64
                        * b.data[i * b.row_stride + c * b.col_stride] as f64;
                }
                out[r * b.cols + c] = s as f32;
            }
        }
        out
    }

    #[test]
    fn products_of_overlapping_and_transposed_views_are_the_naive_ones() {
        let signal: Vec<f32> = (0..200).map(|i| ((i * 37) % 23) as f32 - 11.0).collect();
        let kernel: Vec<f32> = (0..7 * 3).map(|i| (i as f32 * 0.3).sin()).collect();
        // A strided convolution: rows of 7 samples, 4 apart; 3 filters stored filter-major.
        let a = View {
            data: &signal,
            rows: 49,
            cols: 7,
            row_stride: 4,
            col_stride: 1,
        };
        let b = View::transposed(&kernel, 7, 3);
        let mut dst = vec![f32::NAN; 49 * 3];
        matmul(&mut dst, 3, a, b, false);
        let want = naive(a, b);
        for (g, w) in dst.iter().zip(&want) {
            assert!((g - w).abs() < 1e-4, "{g} vs {w}");
        }
        // Accumulating adds the product to what is there.
        matmul(&mut dst, 3, a, b, true);
        for (g, w) in dst.iter().zip(&want) {
            assert!((g - 2.0 * w).abs() < 2e-4);
        }
    }

    #[test]
    fn packed_products_are_the_naive_ones() {
        let signal: Vec<f32> = (0..4000).map(|i| ((i * 37) % 23) as f32 - 11.0).collect();
        let (k, n) = (3 * 40, 96);
        let weights: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.37).sin()).collect();
        let packed = Packed::new(&weights, k, n);
        // Every row count up to past two blocks (the remainders of every block size), on an
        // overlapping view of rows 40 apart reading 120.
        for rows in 1..15 {
            let a = View {
                data: &signal,
                rows,
                cols: k,
                row_stride: 40,
                col_stride: 1,
            };
            let want = naive(a, View::rows(&weights, k, n));
            let mut dst = vec![f32::NAN; rows * (n + 5)];
            matmul_packed(&mut dst, n + 5, a, packed.all(), false);
            for r in 0..rows {
                for c in 0..n {
                    let (g, w) = (dst[r * (n + 5) + c], want[r * n + c]);
                    assert!((g - w).abs() < 1e-3, "{rows} rows, ({r}, {c}): {g} vs {w}");
                }
                // Columns past the product's are left alone.
                assert!(dst[r * (n + 5) + n].is_nan());
            }
            // Accumulating adds; a range of rows is the product with those rows.
            let tail = View {
                data: &signal,
                rows,
                cols: 40,
                row_stride: 40,
                col_stride: 1,
            };
            matmul_packed(&mut dst, n + 5, tail, packed.rows(80, 40), true);
            let want_tail = naive(tail, View::rows(&weights[80 * n..], 40, n));
            for r in 0..rows {
                for c in 0..n {
                    let (g, w) = (dst[r * (n + 5) + c], want[r * n + c] + want_tail[r * n + c]);
                    assert!((g - w).abs() < 2e-3, "{rows} rows, accumulated ({r}, {c})");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "matrix view reads")]
    fn a_view_past_its_slice_is_refused() {
        let data = vec![0.0f32; 10];
        let a = View {
            data: &data,
            rows: 3,
            cols: 4,
            row_stride: 4,
            col_stride: 1,
        };
        let b = View::rows(&data, 4, 2);
        let mut dst = vec![0.0f32; 6];
        matmul(&mut dst, 2, a, b, false);
    }
}
