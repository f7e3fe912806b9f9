//! Atomics for the lock-free protocols, swappable for loom's model-checked ones.
//!
//! Owns: the one place that decides whether the wakelist, the idle
//! park/kick protocol and the task wake state machine use `std` atomics or
//! `loom`'s (`RUSTFLAGS="--cfg loom"`). Must not: contain logic.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU8, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU8, Ordering};

/// A busy-wait hint (loom: yield to the model's scheduler so spins terminate).
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
