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
