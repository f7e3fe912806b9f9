//! Test hooks: make the next allocation of one kind fail on this thread,
//! as if the allocator had no memory, so that tests can check that a
//! spawn reports it.
//!
//! Owns: one thread-local set of armed hooks. Must not: exist outside
//! `cfg(test)`.

use std::cell::Cell;

/// The allocations a spawn can fail on.
#[derive(Clone, Copy)]
pub(crate) enum Alloc {
    /// The task block (`TaskRef::try_new`).
    TaskBlock = 1,
    /// The registry's slab (`Registry::insert`).
    Registry = 2,
    /// The workers' room for the tasks (`worker::room::make`).
    Room = 4,
    /// The registry's free list, after its entries grew (`Registry::insert`).
    RegistryFree = 8,
}

thread_local! {
    static ARMED: Cell<u8> = const { Cell::new(0) };
}

/// Makes the next `what` on this thread fail.
#[inline(never)]
pub(crate) fn arm(what: Alloc) {
    ARMED.with(|a| a.set(a.get() | what as u8));
}

/// Whether `what` should fail now (it fails once). Never inlined: a
/// thread-local read in green code must not be (see `task::current`).
#[inline(never)]
pub(crate) fn take(what: Alloc) -> bool {
    ARMED.with(|a| {
        let armed = a.get();
        a.set(armed & !(what as u8));
        armed & what as u8 != 0
    })
}
