//! Green-thread stacks and the per-worker stack pool.
//!
//! Owns: allocating stacks (corosensei's `DefaultStack`: mmap with a guard
//! page, only touched pages become resident), counting live stacks, and
//! reusing them. Each worker keeps a bounded pool under its run-queue lock;
//! a stack freed on one worker is reused by spawns on that worker. Must
//! not: switch stacks.

use corosensei::stack::{DefaultStack, Stack, StackPointer};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE_STACKS: AtomicUsize = AtomicUsize::new(0);

/// Number of green-thread stacks currently allocated (in pools or in use).
/// Used by tests to check that shutdown frees everything.
pub fn live_stacks() -> usize {
    LIVE_STACKS.load(Ordering::Relaxed)
}

/// A green thread's stack: corosensei's mmap'd stack with a guard page,
/// counted while it exists.
pub(crate) struct GreenStack {
    inner: DefaultStack,
    size: usize,
}

impl GreenStack {
    /// Allocates a stack of at least `size` usable bytes.
    pub(crate) fn new(size: usize) -> io::Result<Self> {
        let inner = DefaultStack::new(size)?;
        LIVE_STACKS.fetch_add(1, Ordering::Relaxed);
        Ok(GreenStack { inner, size })
    }

    /// The size it was requested with (the pool's size class).
    pub(crate) fn size(&self) -> usize {
        self.size
    }
}

impl Drop for GreenStack {
    fn drop(&mut self) {
        LIVE_STACKS.fetch_sub(1, Ordering::Relaxed);
    }
}

// SAFETY: pure delegation to `DefaultStack`, which upholds the trait's
// contract (a guard page and at least MIN_STACK_SIZE usable bytes); the
// wrapper adds no memory of its own to the stack.
unsafe impl Stack for GreenStack {
    #[inline]
    fn base(&self) -> StackPointer {
        self.inner.base()
    }
    #[inline]
    fn limit(&self) -> StackPointer {
        self.inner.limit()
    }
}

/// A bounded pool of stacks of one size class.
pub(crate) struct StackPool {
    free: Vec<GreenStack>,
    size: usize,
    cap: usize,
}

impl StackPool {
    /// A pool for stacks of `size` bytes keeping at most `cap` free stacks.
    pub(crate) fn new(size: usize, cap: usize) -> Self {
        StackPool {
            free: Vec::with_capacity(cap),
            size,
            cap,
        }
    }

    /// A stack of `size` bytes: a pooled one if the size matches the pool's class.
    pub(crate) fn get(&mut self, size: usize) -> io::Result<GreenStack> {
        if size == self.size {
            if let Some(s) = self.free.pop() {
                return Ok(s);
            }
        }
        GreenStack::new(size)
    }

    /// Returns a stack to the pool, or frees it if the pool is full or the
    /// size class differs.
    pub(crate) fn put(&mut self, stack: GreenStack) {
        if stack.size() == self.size && self.free.len() < self.cap {
            self.free.push(stack);
        }
    }

    /// Frees every pooled stack.
    pub(crate) fn clear(&mut self) {
        self.free.clear();
    }
}
