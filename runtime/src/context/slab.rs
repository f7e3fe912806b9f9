//! Slabs: one memory mapping holding many green-thread stacks, and the
//! process-wide table of slabs that the overflow handler reads.
//!
//! Owns: the `mmap` of a slab, its guard pages (`mprotect`'d ones and a
//! canary slab's lead page when the slab is mapped; guard regions per
//! batch of stacks as they are first carved, [`install_guard_regions`]),
//! faulting in the top pages of a batch of stacks about to be handed out
//! ([`prefault_tops`]), the geometry of the stacks in it, `madvise` to
//! give a free stack's memory back, the count of mappings the slabs use, and [`TABLE`]: an
//! append-only array of slab ranges, published with `Release`, which a
//! signal handler can search without locks or allocation. Must not: keep
//! free lists (that is `stack`) or decide the protection (that is `guard`).
//!
//! Slabs are never unmapped: a process that once ran a million green
//! threads keeps the address space (not the memory: freed stacks are
//! `MADV_DONTNEED`ed) and reuses it. That keeps the table append-only,
//! which is what makes the signal-safe lookup simple.
//!
//! # Layout
//!
//! ```text
//! guard slabs:  [guard|stack 0][guard|stack 1] … [guard|stack n-1]      stride = page + size
//! canary slabs: [guard page][c|stack 0][c|stack 1] … [c|stack n-1]      stride = 64 + size
//! ```
//!
//! Each stack grows down from the end of its stride. In a canary slab the
//! 64-byte canary `c` of stack `i + 1` sits right above the top of stack
//! `i`, usually in the same page, so a canary costs no extra resident page.

use super::guard::{Protection, CANARY_BYTES, MADV_GUARD_INSTALL};
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The system's page size.
pub(crate) fn page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no preconditions.
            let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let p = if p > 0 { p as usize } else { 4096 };
            PAGE.store(p, Ordering::Relaxed);
            p
        }
        p => p,
    }
}

/// Memory mappings the slabs account for (for the guard-page budget).
static MAPPINGS: AtomicUsize = AtomicUsize::new(0);

/// Mappings used by slabs so far.
pub(crate) fn mappings_used() -> usize {
    MAPPINGS.load(Ordering::Relaxed)
}

/// The shape of the stacks of one size and protection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) protection: Protection,
    /// Usable bytes per stack.
    pub(crate) size: usize,
    /// Distance between consecutive stacks.
    pub(crate) stride: usize,
    /// Bytes at the low end of each stride that are not stack: the guard
    /// page, or the canary.
    pub(crate) below: usize,
    /// Bytes before the first stride: a guard page for canary slabs.
    pub(crate) lead: usize,
}

impl Geometry {
    /// The geometry of stacks of at least `size` usable bytes.
    pub(crate) fn new(size: usize, protection: Protection) -> Self {
        let page = page_size();
        let size = size.div_ceil(page) * page;
        match protection {
            Protection::GuardRegion | Protection::GuardMprotect => Geometry {
                protection,
                size,
                stride: size + page,
                below: page,
                lead: 0,
            },
            Protection::Canary => Geometry {
                protection,
                size,
                stride: size + CANARY_BYTES,
                below: CANARY_BYTES,
                lead: page,
            },
        }
    }

    /// Bytes of address space a slab of `count` stacks takes.
    pub(crate) fn slab_len(&self, count: usize) -> usize {
        let page = page_size();
        (self.lead + count * self.stride).div_ceil(page) * page
    }

    /// Mappings a slab of `count` stacks costs.
    pub(crate) fn mapping_cost(&self, count: usize) -> usize {
        match self.protection {
            Protection::GuardRegion => 1,
            Protection::GuardMprotect => 2 * count + 1,
            Protection::Canary => 2,
        }
    }

    /// The low end of stack `i`'s stride in a slab starting at `start`.
    #[inline]
    pub(crate) fn region(&self, start: usize, i: usize) -> usize {
        start + self.lead + i * self.stride
    }

    /// The range to `madvise` away when the stack whose stride starts at
    /// `region` is freed: whole pages of the stack only (and, with guard
    /// regions, its guard page, whose marker survives `MADV_DONTNEED`, so
    /// that neighbouring free stacks merge into one call). Never a page
    /// shared with a neighbour, nor a canary.
    pub(crate) fn release_range(&self, region: usize) -> (usize, usize) {
        let page = page_size();
        let top = region + self.stride;
        match self.protection {
            Protection::GuardRegion => (region, top),
            Protection::GuardMprotect => (region + self.below, top),
            Protection::Canary => {
                let lo = (region + self.below).div_ceil(page) * page;
                let hi = top / page * page;
                (lo, hi.max(lo))
            }
        }
    }
}

/// Maps a slab of `count` stacks with geometry `g` and sets its guard
/// pages; returns its start address. Registers it in [`TABLE`].
pub(crate) fn map(g: &Geometry, count: usize) -> io::Result<usize> {
    let len = g.slab_len(count);
    let cost = g.mapping_cost(count);
    let slot = TABLE.reserve().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::OutOfMemory,
            format!("too many stack slabs (the table holds {MAX_SLABS})"),
        )
    })?;
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        let e = io::Error::last_os_error();
        TABLE.unreserve(slot);
        return Err(io::Error::new(
            e.kind(),
            format!(
                "mapping a slab of {count} green-thread stacks ({} KiB each, {} MiB): {e}",
                g.size / 1024,
                len >> 20
            ),
        ));
    }
    let start = p as usize;
    if let Err(e) = set_guards(g, start, count) {
        // SAFETY: the mapping was created above and nothing uses it yet.
        unsafe { libc::munmap(p, len) };
        TABLE.unreserve(slot);
        return Err(io::Error::new(
            e.kind(),
            format!("setting the guard pages of a stack slab: {e}"),
        ));
    }
    MAPPINGS.fetch_add(cost, Ordering::Relaxed);
    TABLE.publish(slot, start, start + len, g);
    Ok(start)
}

fn set_guards(g: &Geometry, start: usize, count: usize) -> io::Result<()> {
    let page = page_size();
    let check = |r: libc::c_int| {
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    match g.protection {
        Protection::GuardRegion => {
            // Installed per batch as stacks are first carved
            // ([`install_guard_regions`]), not here: for a whole slab it
            // allocates the page tables of 1,024 stacks at once, which
            // took 1–10 ms on this VM — inside the spawn that needed the
            // slab, long enough for the hand-off monitor to take the
            // spawner's worker for stuck.
        }
        Protection::GuardMprotect => {
            for i in 0..count {
                // SAFETY: as above.
                check(unsafe {
                    libc::mprotect(g.region(start, i) as *mut _, page, libc::PROT_NONE)
                })?;
            }
        }
        Protection::Canary => {
            // SAFETY: the slab's first page, mapped by the caller.
            check(unsafe { libc::mprotect(start as *mut _, page, libc::PROT_NONE) })?;
        }
    }
    Ok(())
}

/// Installs the guard region below each stack whose stride starts at one
/// of `regions` (stacks of a guard-region slab, carved for the first time;
/// a guard region survives `MADV_DONTNEED`, so a stack freed and carved
/// again keeps it). One `process_madvise` call per batch where the kernel
/// has it, else one `madvise` per stack. The caller must not hand the
/// stacks out if this fails.
pub(crate) fn install_guard_regions(g: &Geometry, regions: &[usize]) -> io::Result<()> {
    debug_assert_eq!(g.protection, Protection::GuardRegion);
    let page = page_size();
    if PidFd::open().advise(regions.iter().copied(), page, MADV_GUARD_INSTALL) {
        return Ok(());
    }
    for &r in regions {
        // SAFETY: the page is the low end of a stride of a mapped slab
        // (never unmapped), below a stack nobody uses yet.
        if unsafe { libc::madvise(r as *mut _, page, MADV_GUARD_INSTALL) } != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("installing the guard pages of green-thread stacks: {e}"),
            ));
        }
    }
    Ok(())
}

/// Faults in the top page of each stack whose stride starts at one of
/// `regions` (stacks of geometry `g`), in one `process_madvise` call per
/// batch instead of one page fault per spawn: every stack's first frame
/// goes there (corosensei writes it when the context is created).
///
/// Called for a batch of stacks just before they are handed out, not for
/// a whole slab when it is mapped: the pages are then still in this CPU's
/// cache when the spawns write their first frames (a slab's 1,024 pages,
/// 4 MiB, are not). Best effort: a kernel without `MADV_POPULATE_WRITE`
/// leaves them to fault on first use.
pub(crate) fn prefault_tops(g: &Geometry, regions: &[usize]) {
    if regions.is_empty() {
        return;
    }
    let page = page_size();
    let tops = regions.iter().map(|&r| (r + g.stride - 1) / page * page);
    PidFd::open().advise(tops, page, MADV_POPULATE_WRITE);
}

/// `madvise` advice that faults pages in for writing (Linux 5.14).
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// A pidfd of this process, for `process_madvise` (many ranges, one call).
/// Opened per call, so a forked child never advises its parent.
struct PidFd(libc::c_int);

/// Ranges per `process_madvise` call: the kernel's `IOV_MAX`.
const BATCH_RANGES: usize = 1024;
/// Bytes per `process_madvise` call. The kernel advises at most 2 GiB − 4
/// KiB per call (and reports a short count beyond); 1 GiB keeps every
/// batch whole. A longer range is split.
const BATCH_BYTES: usize = 1 << 30;

/// The `process_madvise` advices this kernel refused (bit `advice % 64`;
/// the three the runtime uses, 4, 23 and 102, do not collide): later
/// calls go straight to the fallback instead of failing again (kernels before 6.13 refuse
/// `MADV_DONTNEED` and `MADV_POPULATE_WRITE` from `process_madvise`).
static REFUSED: AtomicU64 = AtomicU64::new(0);

impl PidFd {
    fn open() -> Self {
        // SAFETY: plain system calls without memory arguments.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
        PidFd(fd as libc::c_int)
    }

    /// Applies `advice` to `len` bytes at each address; `false` if the
    /// kernel refused any of it (see [`advise_ranges`](Self::advise_ranges)).
    fn advise(&self, addrs: impl Iterator<Item = usize>, len: usize, advice: libc::c_int) -> bool {
        self.advise_ranges(addrs.map(|a| (a, a + len)), advice)
    }

    /// Applies `advice` to each range `lo .. hi` (page-aligned, inside this
    /// process's slabs), at most [`BATCH_RANGES`] ranges and
    /// [`BATCH_BYTES`] per call. `false` as soon as a call is refused or
    /// short: the caller then falls back (the advices used are idempotent,
    /// so redoing ranges already advised is harmless) or gives up (a
    /// prefault is best effort).
    fn advise_ranges(
        &self,
        ranges: impl Iterator<Item = (usize, usize)>,
        advice: libc::c_int,
    ) -> bool {
        let bit = 1u64 << (advice as u32 % 64);
        if self.0 < 0 || REFUSED.load(Ordering::Relaxed) & bit != 0 {
            return false;
        }
        let mut iov: Vec<libc::iovec> = Vec::with_capacity(BATCH_RANGES);
        let mut bytes = 0;
        let flush = |iov: &mut Vec<libc::iovec>, bytes: &mut usize| -> bool {
            if iov.is_empty() {
                return true;
            }
            // SAFETY: the iovecs name page-aligned ranges inside slabs of
            // this process (never unmapped), each either free stacks or
            // the top page of a stack the caller was just handed; the
            // kernel only reads the array.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_process_madvise,
                    self.0,
                    iov.as_ptr(),
                    iov.len(),
                    advice,
                    0,
                )
            };
            let whole = r == *bytes as libc::c_long;
            if r < 0 {
                let e = io::Error::last_os_error().raw_os_error();
                if matches!(e, Some(libc::EINVAL | libc::ENOSYS | libc::EPERM)) {
                    REFUSED.fetch_or(bit, Ordering::Relaxed);
                }
            }
            iov.clear();
            *bytes = 0;
            whole
        };
        for (mut lo, hi) in ranges {
            while lo < hi {
                let len = (hi - lo).min(BATCH_BYTES);
                let full = iov.len() == BATCH_RANGES || bytes + len > BATCH_BYTES;
                if full && !flush(&mut iov, &mut bytes) {
                    return false;
                }
                iov.push(libc::iovec {
                    iov_base: lo as *mut _,
                    iov_len: len,
                });
                bytes += len;
                lo += len;
            }
        }
        flush(&mut iov, &mut bytes)
    }
}

impl Drop for PidFd {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: closing the descriptor this value owns.
            unsafe { libc::close(self.0) };
        }
    }
}

/// Gives the memory of each range `lo .. hi` (page-aligned, inside a
/// slab, holding only free stacks) back to the kernel; the ranges read as
/// zeros afterwards.
///
/// In as few system calls as possible: each `madvise(MADV_DONTNEED)` of a
/// multi-threaded process ends with a TLB shootdown — an interrupt to
/// every other CPU running one of its threads, a busy worker among them —
/// and on a VM that costs the caller about 19 µs per call. Freed stacks are
/// rarely neighbours, so one call per range was one shootdown per stack.
/// `process_madvise` takes many ranges per call, and the kernel this was
/// measured on (6.18) flushes once per call: 2,048 single-stack ranges,
/// with another thread spinning on the second vCPU, took 19 µs per range
/// with one `madvise` each and 0.26 µs per range in two `process_madvise`
/// calls. Kernels before 6.13 refuse `MADV_DONTNEED` there and get one
/// `madvise` per range, as before.
pub(crate) fn release(ranges: &[(usize, usize)]) {
    let ranges = || ranges.iter().copied().filter(|&(lo, hi)| hi > lo);
    if PidFd::open().advise_ranges(ranges(), libc::MADV_DONTNEED) {
        return;
    }
    for (lo, hi) in ranges() {
        // SAFETY: the range lies inside a slab (never unmapped) and belongs
        // to free stacks only: no live data is discarded.
        unsafe { libc::madvise(lo as *mut _, hi - lo, libc::MADV_DONTNEED) };
    }
}

/// Whether this kernel faults pages in through `process_madvise`
/// (`MADV_POPULATE_WRITE`, 6.13+ for this process's own memory): tests
/// that check the prefault skip where it cannot happen.
#[cfg(test)]
pub(crate) fn populate_supported() -> bool {
    let page = page_size();
    // SAFETY: a fresh private anonymous page, unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    let ok = PidFd::open().advise(std::iter::once(p as usize), page, MADV_POPULATE_WRITE);
    // SAFETY: the page mapped above, which nothing else uses.
    unsafe { libc::munmap(p, page) };
    ok
}

/// Most slabs a process can have (slabs grow to 1,024 stacks, so this is
/// millions of stacks).
pub(crate) const MAX_SLABS: usize = 16_384;

/// One slab, as the overflow handler sees it.
struct Entry {
    start: AtomicUsize,
    end: AtomicUsize,
    lead: AtomicUsize,
    stride: AtomicUsize,
    /// Guard bytes at the low end of each stride (0 for canary slabs).
    guard: AtomicUsize,
    size: AtomicUsize,
}

impl Entry {
    const fn new() -> Self {
        Entry {
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            lead: AtomicUsize::new(0),
            stride: AtomicUsize::new(1),
            guard: AtomicUsize::new(0),
            size: AtomicUsize::new(0),
        }
    }
}

/// The append-only table of slabs.
pub(crate) struct Table {
    entries: [Entry; MAX_SLABS],
    /// Entries handed out to `map` (some may not be published yet).
    reserved: AtomicUsize,
}

/// Every slab of the process.
pub(crate) static TABLE: Table = Table {
    entries: [const { Entry::new() }; MAX_SLABS],
    reserved: AtomicUsize::new(0),
};

/// A guard page hit: what the overflow message needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GuardHit {
    /// Usable size of the stack whose guard was hit.
    pub(crate) stack_size: usize,
}

impl Table {
    fn reserve(&self) -> Option<usize> {
        let i = self.reserved.fetch_add(1, Ordering::Relaxed);
        if i < MAX_SLABS {
            Some(i)
        } else {
            self.reserved.fetch_sub(1, Ordering::Relaxed);
            None
        }
    }

    /// Leaves a reserved entry unpublished (its `end` stays 0: never matches).
    fn unreserve(&self, _slot: usize) {}

    fn publish(&self, slot: usize, start: usize, end: usize, g: &Geometry) {
        let e = &self.entries[slot];
        e.start.store(start, Ordering::Relaxed);
        e.lead.store(g.lead, Ordering::Relaxed);
        e.stride.store(g.stride, Ordering::Relaxed);
        let guard = match g.protection {
            Protection::Canary => 0,
            _ => g.below,
        };
        e.guard.store(guard, Ordering::Relaxed);
        e.size.store(g.size, Ordering::Relaxed);
        // Release: a reader that sees `end` sees the fields above.
        e.end.store(end, Ordering::Release);
    }

    /// The slab entry containing `addr`. Async-signal-safe: atomic loads only.
    fn find(&self, addr: usize) -> Option<&Entry> {
        let n = self.reserved.load(Ordering::Acquire).min(MAX_SLABS);
        self.entries[..n].iter().find(|e| {
            let end = e.end.load(Ordering::Acquire);
            end != 0 && e.start.load(Ordering::Relaxed) <= addr && addr < end
        })
    }

    /// Whether `addr` lies in a guard page of a green-thread stack.
    /// Async-signal-safe (no locks, no allocation).
    pub(crate) fn guard_hit(&self, addr: usize) -> Option<GuardHit> {
        let e = self.find(addr)?;
        let start = e.start.load(Ordering::Relaxed);
        let lead = e.lead.load(Ordering::Relaxed);
        let stack_size = e.size.load(Ordering::Relaxed);
        let off = addr - start;
        if off < lead {
            // The guard page below a canary slab.
            return Some(GuardHit { stack_size });
        }
        let guard = e.guard.load(Ordering::Relaxed);
        let stride = e.stride.load(Ordering::Relaxed).max(1);
        ((off - lead) % stride < guard).then_some(GuardHit { stack_size })
    }

    /// Usable size of the stacks of the slab containing `addr`.
    pub(crate) fn stack_size_at(&self, addr: usize) -> Option<usize> {
        self.find(addr).map(|e| e.size.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_keeps_canaries_off_their_own_page_and_releases_whole_pages() {
        let page = page_size();
        let g = Geometry::new(64 * 1024, Protection::Canary);
        assert_eq!(g.stride, 64 * 1024 + CANARY_BYTES);
        for i in 0..100 {
            let r = g.region(1 << 30, i);
            let (lo, hi) = g.release_range(r);
            assert_eq!(lo % page, 0);
            assert_eq!(hi % page, 0);
            assert!(lo >= r + CANARY_BYTES && hi <= r + g.stride);
        }
        let g = Geometry::new(100_000, Protection::GuardRegion);
        assert_eq!(g.size % page, 0);
        assert_eq!(g.stride, g.size + page);
        assert_eq!(g.mapping_cost(10), 1);
        assert_eq!(
            Geometry::new(16384, Protection::GuardMprotect).mapping_cost(10),
            21
        );
    }

    #[test]
    fn the_table_finds_guard_pages_of_mapped_slabs_only() {
        let page = page_size();
        for p in [Protection::GuardMprotect, Protection::Canary] {
            let g = Geometry::new(16 * 1024, p);
            let start = map(&g, 4).unwrap();
            let r1 = g.region(start, 1);
            let top = r1 + g.stride - 8;
            assert_eq!(TABLE.guard_hit(top), None);
            assert_eq!(TABLE.stack_size_at(top), Some(16 * 1024));
            match p {
                Protection::Canary => {
                    assert!(TABLE.guard_hit(start + 8).is_some());
                    assert_eq!(TABLE.guard_hit(r1), None);
                }
                _ => {
                    assert!(TABLE.guard_hit(r1 + page - 1).is_some());
                    assert_eq!(TABLE.guard_hit(r1 + page), None);
                }
            }
        }
        assert_eq!(TABLE.guard_hit(8), None);
    }
}
