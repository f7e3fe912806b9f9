//! The think time of a request: naive square matrix multiplication over a per-worker
//! cache footprint of `-F` KiB.
//!
//! This module owns the matrices and the multiplication. It must not time, lock or
//! sleep; callers decide what is measured.
//!
//! Three matrices of side `sqrt(F·1024/3/8)` (8-byte elements) fill the footprint; one
//! operation computes `C = A × B` with the textbook i-j-k loop. Elements are `u64` with
//! wrapping arithmetic, as a C port over `unsigned long` would do: the inner loop is a
//! chain of integer multiply-adds whose cost does not depend on the values (no
//! denormals, no NaN), it cannot be vectorised across `k` by the compiler (strided
//! column walk), and it leaves nothing for the optimiser to remove since `C` is kept
//! observable through `black_box`.

use std::hint::black_box;

/// Bytes per matrix element.
pub const ELEMENT_BYTES: usize = 8;

/// One worker's three matrices.
#[derive(Clone, Debug)]
pub struct Matrices {
    side: usize,
    a: Box<[u64]>,
    b: Box<[u64]>,
    c: Box<[u64]>,
}

/// Side of the square matrices for a footprint of `footprint_kib` KiB.
///
/// ```
/// assert_eq!(bench_schbench::math::side_for(256), 104); // sqrt(256·1024/24) = 104.5
/// ```
pub fn side_for(footprint_kib: usize) -> usize {
    let elements = footprint_kib * 1024 / 3 / ELEMENT_BYTES;
    elements.isqrt()
}

impl Matrices {
    /// Allocates and fills the matrices for a footprint of `footprint_kib` KiB.
    pub fn new(footprint_kib: usize) -> Self {
        let side = side_for(footprint_kib);
        let fill = |seed: u64| -> Box<[u64]> {
            (0..side * side)
                .map(|i| (i as u64).wrapping_mul(0x9e37_79b9).wrapping_add(seed))
                .collect()
        };
        Matrices {
            side,
            a: fill(1),
            b: fill(2),
            c: vec![0; side * side].into_boxed_slice(),
        }
    }

    /// Side of the matrices.
    pub fn side(&self) -> usize {
        self.side
    }

    /// One operation: `C = A × B`.
    pub fn multiply(&mut self) {
        self.multiply_with(|| {});
    }

    /// One operation, calling `between_rows` after each row of `C` (green threads
    /// pass the runtime's preemption point, as users of a cooperative runtime do in
    /// long CPU loops).
    #[inline]
    pub fn multiply_with(&mut self, mut between_rows: impl FnMut()) {
        let n = self.side;
        if n == 0 {
            return;
        }
        for (a_row, c_row) in self.a.chunks_exact(n).zip(self.c.chunks_exact_mut(n)) {
            for (j, c) in c_row.iter_mut().enumerate() {
                let column = self.b[j..].iter().step_by(n);
                *c = a_row
                    .iter()
                    .zip(column)
                    .fold(0u64, |sum, (&x, &y)| sum.wrapping_add(x.wrapping_mul(y)));
            }
            between_rows();
        }
        black_box(&mut self.c);
    }

    /// Element `(i, j)` of the last product.
    pub fn product(&self, i: usize, j: usize) -> u64 {
        self.c[i * self.side + j]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_fills_the_footprint() {
        assert_eq!(side_for(0), 0);
        assert_eq!(side_for(1), 6); // 1024/24 = 42 elements
        for kib in [16, 256, 1024, 4096] {
            let s = side_for(kib);
            assert!(3 * s * s * ELEMENT_BYTES <= kib * 1024);
            assert!(3 * (s + 1) * (s + 1) * ELEMENT_BYTES > kib * 1024);
        }
    }

    #[test]
    fn multiplies_correctly() {
        let mut m = Matrices::new(1);
        m.multiply();
        let n = m.side();
        for (i, j) in [(0, 0), (n - 1, 2), (3, n - 1)] {
            let want = (0..n).fold(0u64, |s, k| {
                s.wrapping_add(m.a[i * n + k].wrapping_mul(m.b[k * n + j]))
            });
            assert_eq!(m.product(i, j), want);
        }
    }

    #[test]
    fn zero_footprint_is_a_no_op() {
        let mut m = Matrices::new(0);
        m.multiply();
        assert_eq!(m.side(), 0);
    }
}
