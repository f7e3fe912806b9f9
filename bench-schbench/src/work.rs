//! A worker's private request state: its matrices and its pipe scratch buffer.
//!
//! This module owns what a worker allocates once, before its first request, so that
//! the request path allocates nothing. It must not time, lock, sleep or wake.

use crate::math::Matrices;
use crate::opts::Plan;

/// The per-worker state a request works on.
#[derive(Debug)]
pub struct Work {
    matrices: Matrices,
    operations: usize,
    scratch: Box<[u8]>,
}

impl Work {
    /// Allocates the matrices (`-F`; none in pipe mode, where no math is done) and the
    /// pipe scratch buffer (`-p` bytes).
    pub fn new(plan: &Plan) -> Self {
        let footprint = if plan.pipe > 0 { 0 } else { plan.footprint_kib };
        Work {
            matrices: Matrices::new(footprint),
            operations: plan.operations,
            scratch: vec![0; plan.pipe].into_boxed_slice(),
        }
    }

    /// The request's think time: `-n` multiplications.
    #[inline]
    pub fn math(&mut self) {
        self.math_with(|| {});
    }

    /// The request's think time, calling `between_rows` after each matrix row.
    #[inline]
    pub fn math_with(&mut self, mut between_rows: impl FnMut()) {
        for _ in 0..self.operations {
            self.matrices.multiply_with(&mut between_rows);
        }
    }

    /// The worker's copy of the pipe message (`-p` bytes).
    #[inline]
    pub fn scratch(&mut self) -> &mut [u8] {
        &mut self.scratch
    }
}
