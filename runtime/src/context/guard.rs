//! How green-thread stacks are protected against overflow: the public
//! [`StackGuard`] choice, the runtime's resolved [`GuardPolicy`], the
//! kernel facts it depends on (lightweight guard regions, the mapping
//! limit), and the canary word.
//!
//! Owns: deciding which kind of slab ([`Protection`]) a stack comes from,
//! and writing and checking canaries. Must not: map memory (that is
//! `slab`) or keep free stacks (that is `stack`).
//!
//! # The three protections
//!
//! * **Guard regions** (Linux ≥ 6.13, `MADV_GUARD_INSTALL`): a page below
//!   every stack that faults on access, installed in the page tables
//!   without splitting the memory mapping. Costs no mapping, so every
//!   stack of a million can have one.
//! * **mprotect'd guard pages** (older kernels): a `PROT_NONE` page below
//!   every stack. Each one splits the slab's mapping, so a slab of `n`
//!   stacks costs `2n` of the process's `vm.max_map_count` mappings
//!   (65,530 by default): about 16,000 stacks fit in the default budget
//!   (half the limit), which leaves the other half to malloc, files and
//!   libraries.
//! * **Canaries**: no guard page; a 64-byte pattern right below each
//!   stack, checked by the worker every time the green thread switches
//!   out. An overflow is detected after the fact (the green thread has
//!   already written below its stack, into its neighbour's top), so the
//!   process is aborted at once with a message. Slabs of canary stacks
//!   still have one guard page at their low end.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// How the runtime protects green-thread stacks against overflow
/// ([`Builder::stack_guard`](crate::Builder::stack_guard)).
///
/// A stack overflow on a guard page aborts the process with a message
/// naming the green thread and its stack size; a smashed canary is
/// detected when the green thread next switches out, and aborts the same
/// way.
///
/// ```
/// use eevdf_rt::StackGuard;
/// let rt = eevdf_rt::Builder::new()
///     .workers(1)
///     .stack_guard(StackGuard::Canary)
///     .build()?;
/// assert_eq!(rt.block_on(|| 1 + 1), 2);
/// # Ok::<(), eevdf_rt::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StackGuard {
    /// The default: a guard page below every stack while that is
    /// affordable, a canary beyond. On Linux ≥ 6.13 guard pages cost no
    /// memory mapping (guard regions), so every stack gets one; on older
    /// kernels, stacks get `mprotect`'d guard pages until their mappings
    /// would exceed the budget
    /// ([`Builder::stack_map_budget`](crate::Builder::stack_map_budget),
    /// by default half of `vm.max_map_count`), and canaries after that,
    /// so a million green threads fit in a default Linux.
    #[default]
    Auto,
    /// A guard page below every stack, always. Where guard pages cost
    /// mappings (kernels before 6.13), a spawn that would exceed the
    /// mapping budget fails with an `OutOfMemory` error instead of falling
    /// back to a canary.
    GuardPage,
    /// No guard pages: a canary below every stack, checked at every switch
    /// (and at a yield that continues without one).
    /// The cheapest to set up; an overflow is caught only after it has
    /// written past the stack, when the green thread switches out.
    Canary,
}

/// What protects the stacks of one slab.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Protection {
    /// A lightweight guard region below each stack (no mapping split).
    GuardRegion,
    /// A `PROT_NONE` page below each stack (two mappings per stack).
    GuardMprotect,
    /// A canary below each stack; one guard page below the whole slab.
    Canary,
}

/// A runtime's stack protection, resolved from its configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GuardPolicy {
    /// What the user asked for.
    pub(crate) mode: StackGuard,
    /// Mappings that `mprotect`'d guard pages may use, process-wide.
    pub(crate) map_budget: usize,
    /// Whether lightweight guard regions may be used (where the kernel has them).
    pub(crate) guard_regions: bool,
}

impl GuardPolicy {
    /// The protections stacks may come from, best first.
    pub(crate) fn protections(&self) -> &'static [Protection] {
        let regions = self.guard_regions && guard_regions_supported();
        match (self.mode, regions) {
            (StackGuard::Canary, _) => &[Protection::Canary],
            (StackGuard::GuardPage, true) | (StackGuard::Auto, true) => &[Protection::GuardRegion],
            (StackGuard::GuardPage, false) => &[Protection::GuardMprotect],
            (StackGuard::Auto, false) => &[Protection::GuardMprotect, Protection::Canary],
        }
    }
}

/// The default mapping budget: half of `vm.max_map_count`.
pub(crate) fn default_map_budget() -> usize {
    max_map_count() / 2
}

/// The kernel's limit on memory mappings per process (65,530 unless changed).
pub(crate) fn max_map_count() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(65_530)
    })
}

/// `madvise` advice that installs guard regions (Linux 6.13).
pub(crate) const MADV_GUARD_INSTALL: libc::c_int = 102;

/// Whether the kernel supports lightweight guard regions (probed once on a
/// scratch mapping).
pub(crate) fn guard_regions_supported() -> bool {
    static PROBED: AtomicU8 = AtomicU8::new(0);
    match PROBED.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let ok = probe_guard_regions();
            PROBED.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
            ok
        }
    }
}

fn probe_guard_regions() -> bool {
    let page = super::slab::page_size();
    // SAFETY: a fresh private anonymous mapping of two pages that nothing
    // else references; it is unmapped before returning.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            2 * page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        let ok = libc::madvise(p, page, MADV_GUARD_INSTALL) == 0;
        libc::munmap(p, 2 * page);
        ok
    }
}

/// Bytes of the canary below a canary-protected stack.
pub(crate) const CANARY_BYTES: usize = 64;
const CANARY_WORDS: usize = CANARY_BYTES / 8;
/// The canary pattern (any value that ordinary stack contents are unlikely
/// to reproduce in all eight words).
const CANARY: u64 = 0x5afe_57ac_c0de_f00d;

/// Writes the canary at `at` (`CANARY_BYTES`, 8-aligned).
///
/// # Safety
/// `at .. at + CANARY_BYTES` must be writable memory reserved for this
/// stack's canary.
pub(crate) unsafe fn write_canary(at: usize) {
    let p = at as *mut u64;
    for i in 0..CANARY_WORDS {
        // SAFETY: in bounds of the canary, per the contract; volatile so the
        // stores are not elided (nothing in Rust reads them).
        unsafe { p.add(i).write_volatile(CANARY) };
    }
}

/// Whether the canary at `at` is intact.
///
/// # Safety
/// `at .. at + CANARY_BYTES` must be readable memory holding a canary
/// written by [`write_canary`].
#[inline]
pub(crate) unsafe fn canary_intact(at: usize) -> bool {
    let p = at as *const u64;
    let mut ok = true;
    for i in 0..CANARY_WORDS {
        // SAFETY: in bounds of the canary, per the contract. Volatile: the
        // green thread wrote here behind the compiler's back.
        ok &= unsafe { p.add(i).read_volatile() } == CANARY;
    }
    ok
}
