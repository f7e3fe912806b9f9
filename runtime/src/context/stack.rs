//! Green-thread stacks: carved from slabs, kept in a process-wide depot
//! and in per-worker caches, and counted.
//!
//! Owns: [`GreenStack`] (a stack handed out, which implements corosensei's
//! `Stack`), the depot (per size and protection: free stacks, the slab
//! being carved, the size of the next slab), [`StackCache`] (a worker's
//! warm stacks), and [`live_stacks`]. Must not: switch stacks, or make a
//! system call that a caller could not afford under its own locks without
//! saying so (see below).
//!
//! # Where the system calls are
//!
//! * A new slab (`mmap`, plus `mprotect`'d guard pages where guard
//!   regions are missing) when no free stack is left: once per slab, and
//!   slabs double in size up to 1,024 stacks. Done by [`StackCache::get`]
//!   and [`alloc`]. Guard regions are installed by [`alloc`] for each
//!   batch it carves, under the depot lock (a batch is at most what a
//!   cache asks for, 64 stacks).
//! * `process_madvise(MADV_POPULATE_WRITE)` for the top pages of the
//!   stacks [`alloc`] hands out that are not resident (carved, or freed
//!   with `madvise`): one call per batch, outside the depot lock.
//! * `madvise(MADV_DONTNEED)` when free stacks go back to the depot and
//!   it already keeps [`WARM_CAP`] of that size warm: the older half of
//!   those lose their memory, neighbouring stacks in one call. Stacks go
//!   back by [`StackCache::put`] once the cache holds more than its
//!   capacity (the older half goes), by [`StackCache::clear`], and when a
//!   [`GreenStack`] is dropped. The warm stacks of the depot carry stacks
//!   from the worker where green threads exit to the worker that spawns
//!   without a page fault each.
//!
//! So `get`, `put`, `clear` and dropping a stack must happen outside any
//! run-queue lock. A cache itself has no lock: its owner (the worker's
//! thread) is the only user, or the caller wraps it in one.
//!
//! # Counting
//!
//! [`live_stacks`] counts stacks handed out of the depot: in use by green
//! threads or warm in a cache. Once a runtime has shut down and its caches
//! are cleared, its stacks are back in the depot and no longer counted
//! (their address space stays reserved for reuse; their memory is freed,
//! except for up to [`WARM_CAP`] warm stacks per size).

use super::guard::{self, GuardPolicy, Protection};
use super::slab::{self, Geometry};
use corosensei::stack::{Stack, StackPointer};
use parking_lot::Mutex;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE_STACKS: AtomicUsize = AtomicUsize::new(0);

/// Number of green-thread stacks currently allocated (in use by green
/// threads or kept warm by a runtime for reuse). Used by tests to check
/// that shutdown frees everything.
pub fn live_stacks() -> usize {
    LIVE_STACKS.load(Ordering::Relaxed)
}

/// A green thread's stack: one stride of a slab, counted while it is out
/// of the depot. Dropping it gives it back to the depot (a `madvise`).
pub(crate) struct GreenStack {
    /// Top of the stack (it grows down from here).
    base: usize,
    /// Low end of its stride (the guard page or the canary).
    region: usize,
    /// Usable bytes.
    size: usize,
    /// Index of its depot class.
    class: u32,
    canary: bool,
}

impl GreenStack {
    /// Where its canary is, if it has one (else 0).
    #[inline]
    pub(crate) fn canary_at(&self) -> usize {
        if self.canary {
            self.region
        } else {
            0
        }
    }
}

impl Drop for GreenStack {
    fn drop(&mut self) {
        release(&mut [Released::of(self)]);
    }
}

// SAFETY: corosensei's contract is: `base` and `limit` aligned to
// STACK_ALIGNMENT (16), at least MIN_STACK_SIZE (4 KiB) usable bytes
// between them, and a guard page that catches overflows, included in
// `limit`.
// * Alignment and size: `base` is the end of a stride and `limit` its low
//   end; strides start page-aligned (guard slabs) or at 64-byte multiples
//   from a page (canary slabs), and usable sizes are whole pages of at
//   least 16 KiB (the builders reject less).
// * The guard page: stacks of guard slabs have one directly below their
//   usable range (a PROT_NONE page set when the slab was mapped, or a
//   guard region installed by `alloc` before the stride is first handed
//   out — `alloc` fails rather than hand out a stride whose install
//   failed; neither is ever removed: slabs are never unmapped, and
//   MADV_DONTNEED keeps guard regions). Rust code touches a new stack page
//   by page (stack probes for frames over a page), so an overflow faults
//   on that page before it reaches another stack, and the overflow handler
//   (`context::overflow`) aborts the process.
// * Canary stacks do NOT have a guard page: this is the documented
//   trade-off of `StackGuard::Canary`, and of `StackGuard::Auto` beyond
//   the mapping budget on kernels without guard regions. An overflow there
//   first overwrites the canary right below the stack and then the top of
//   the stack below it; the worker checks the canary every time the green
//   thread switches out and aborts the process if it changed, before any
//   other green thread runs on that worker. What is not prevented is the
//   overflowing thread itself (or another worker running the neighbour at
//   that moment) acting on corrupted memory before that check: canaries
//   detect, guard pages prevent. Auto therefore never chooses canaries
//   while guard pages are affordable, and never on Linux ≥ 6.13.
unsafe impl Stack for GreenStack {
    #[inline]
    fn base(&self) -> StackPointer {
        StackPointer::new(self.base).expect("stack base is not null")
    }
    #[inline]
    fn limit(&self) -> StackPointer {
        StackPointer::new(self.region).expect("stack limit is not null")
    }
}

/// A free or freed stack as the depot records it.
#[derive(Clone, Copy)]
struct Released {
    region: usize,
    class: u32,
}

impl Released {
    fn of(s: &GreenStack) -> Self {
        Released {
            region: s.region,
            class: s.class,
        }
    }
}

/// Stacks of one size and protection.
struct Class {
    geometry: Geometry,
    /// Free stacks whose memory is still resident (stride starts), oldest
    /// first: reused before any other, without a page fault.
    warm: Vec<usize>,
    /// Free stacks (stride starts), their memory given back.
    free: Vec<usize>,
    /// The slab being carved: its start, the next index, its count.
    carving: Option<(usize, usize, usize)>,
    /// Stacks in the next slab.
    next_count: usize,
}

/// Stacks in a class's first slab; each new slab doubles, up to [`MAX_SLAB_STACKS`].
const FIRST_SLAB_STACKS: usize = 16;
/// Most stacks in one slab.
const MAX_SLAB_STACKS: usize = 1024;
/// Most address space in one slab.
const MAX_SLAB_BYTES: usize = 1 << 30;
/// Most free stacks per class that keep their memory (a few MiB); beyond
/// it the older half is `madvise`d away in one batch.
const WARM_CAP: usize = 4096;

/// Every class of the process (a short list: one per stack size in use).
static DEPOT: Mutex<Vec<Class>> = Mutex::new(Vec::new());

fn class_index(depot: &mut Vec<Class>, size: usize, p: Protection) -> usize {
    let g = Geometry::new(size, p);
    if let Some(i) = depot.iter().position(|c| c.geometry == g) {
        return i;
    }
    depot.push(Class {
        geometry: g,
        warm: Vec::new(),
        free: Vec::new(),
        carving: None,
        next_count: FIRST_SLAB_STACKS,
    });
    depot.len() - 1
}

fn hand_out(depot: &[Class], class: usize, region: usize) -> GreenStack {
    let g = &depot[class].geometry;
    let canary = g.protection == Protection::Canary;
    if canary {
        // SAFETY: a canary stack's stride starts with CANARY_BYTES reserved
        // for its canary, inside a mapped slab.
        unsafe { guard::write_canary(region) };
    }
    LIVE_STACKS.fetch_add(1, Ordering::Relaxed);
    GreenStack {
        base: region + g.stride,
        region,
        size: g.size,
        class: class as u32,
        canary,
    }
}

/// Appends `n` stacks of `size` usable bytes, protected as `policy` says,
/// to `out`. Maps a new slab when the depot has no free stack left.
/// The top page of each stack that is not resident is faulted in here, in
/// one batch (see [`slab::prefault_tops`]).
pub(crate) fn alloc(
    size: usize,
    policy: &GuardPolicy,
    n: usize,
    out: &mut Vec<GreenStack>,
) -> io::Result<()> {
    let mut depot = DEPOT.lock();
    let kinds = policy.protections();
    let mut got = 0;
    // Stacks handed out without resident memory (carved, or freed with
    // `madvise`), by class: their top pages are faulted in below.
    let mut cold: Vec<(u32, usize)> = Vec::new();
    // 1. Free stacks, best protection first; warm ones (newest) first.
    for &p in kinds {
        let c = class_index(&mut depot, size, p);
        while got < n {
            let class = &mut depot[c];
            let region = if let Some(r) = class.warm.pop() {
                r
            } else if let Some(r) = class.free.pop() {
                cold.push((c as u32, r));
                r
            } else {
                break;
            };
            out.push(hand_out(&depot, c, region));
            got += 1;
        }
    }
    // 2. Carve from slabs, mapping new ones as needed.
    while got < n {
        let c = carving_class(&mut depot, size, policy, kinds)?;
        let (start, next, count) = depot[c].carving.expect("a slab being carved");
        let take = (n - got).min(count - next);
        let g = depot[c].geometry;
        if g.protection == Protection::GuardRegion {
            // First carve of these strides: their guard regions now,
            // before anyone can run on them (a bounded batch; see
            // `slab::install_guard_regions` for why not per slab).
            let regions: Vec<usize> = (next..next + take).map(|i| g.region(start, i)).collect();
            slab::install_guard_regions(&g, &regions)?;
        }
        for i in next..next + take {
            let region = g.region(start, i);
            out.push(hand_out(&depot, c, region));
            cold.push((c as u32, region));
        }
        got += take;
        depot[c].carving = (next + take < count).then_some((start, next + take, count));
    }
    if cold.is_empty() {
        return Ok(());
    }
    // 3. Fault in the cold stacks' top pages, outside the depot lock (the
    // stacks are ours now; geometries never change once a class exists).
    let geometries: Vec<Geometry> = depot.iter().map(|c| c.geometry).collect();
    drop(depot);
    cold.sort_unstable();
    for group in cold.chunk_by(|a, b| a.0 == b.0) {
        let regions: Vec<usize> = group.iter().map(|&(_, r)| r).collect();
        slab::prefault_tops(&geometries[group[0].0 as usize], &regions);
    }
    Ok(())
}

/// The class to carve the next stack from: one with a slab in progress,
/// else a new slab of the best protection the policy and the mapping
/// budget allow.
fn carving_class(
    depot: &mut Vec<Class>,
    size: usize,
    policy: &GuardPolicy,
    kinds: &[Protection],
) -> io::Result<usize> {
    for &p in kinds {
        let c = class_index(depot, size, p);
        if depot[c].carving.is_some() {
            return Ok(c);
        }
    }
    for &p in kinds {
        let c = class_index(depot, size, p);
        let g = depot[c].geometry;
        let max = (MAX_SLAB_BYTES / g.stride).clamp(1, MAX_SLAB_STACKS);
        let mut count = depot[c].next_count.min(max);
        if p == Protection::GuardMprotect {
            // Fit the slab into what is left of the mapping budget.
            let left = policy.map_budget.saturating_sub(slab::mappings_used());
            count = count.min(left.saturating_sub(1) / 2);
            if count == 0 {
                continue;
            }
        }
        let start = slab::map(&g, count)?;
        depot[c].carving = Some((start, 0, count));
        depot[c].next_count = (count * 2).min(max);
        return Ok(c);
    }
    Err(io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!(
            "no green-thread stack with a guard page is left: guard pages would exceed the \
             mapping budget ({} of vm.max_map_count = {}); use StackGuard::Auto or \
             StackGuard::Canary, raise Builder::stack_map_budget, or raise vm.max_map_count",
            policy.map_budget,
            guard::max_map_count()
        ),
    ))
}

/// Gives stacks back to the depot. They stay warm (resident) for reuse
/// up to [`WARM_CAP`] per class; beyond it the oldest half of the warm
/// ones have their memory `madvise`d away, neighbours in one call.
fn release(stacks: &mut [Released]) {
    if stacks.is_empty() {
        return;
    }
    let mut depot = DEPOT.lock();
    let mut cold: Vec<(usize, u32)> = Vec::new();
    for s in stacks.iter() {
        let class = &mut depot[s.class as usize];
        class.warm.push(s.region);
        if class.warm.len() > WARM_CAP {
            cold.extend(class.warm.drain(..WARM_CAP / 2).map(|r| (r, s.class)));
        }
    }
    LIVE_STACKS.fetch_sub(stacks.len(), Ordering::Relaxed);
    if cold.is_empty() {
        return;
    }
    cold.sort_unstable();
    let mut ranges: Vec<(usize, usize)> = Vec::with_capacity(cold.len());
    for &(region, class) in &cold {
        let class = &mut depot[class as usize];
        let r = class.geometry.release_range(region);
        class.free.push(region);
        match ranges.last_mut() {
            Some(last) if last.1 == r.0 => last.1 = r.1,
            _ => ranges.push(r),
        }
    }
    // Still under the depot lock: a stack must not be handed out again
    // before its old contents are gone (a canary written before the
    // madvise would be wiped). The depot lock is never taken under a
    // run-queue lock.
    slab::release(&ranges);
}

/// A worker's warm stacks of the runtime's default size (no lock of its
/// own: see the module docs).
pub(crate) struct StackCache {
    free: Vec<GreenStack>,
    /// The size spawns ask for.
    size: usize,
    /// The usable size of those stacks (rounded up to pages).
    usable: usize,
    cap: usize,
    policy: GuardPolicy,
}

impl StackCache {
    /// A cache for stacks of `size` bytes keeping at most `cap` warm ones.
    pub(crate) fn new(size: usize, cap: usize, policy: GuardPolicy) -> Self {
        StackCache {
            free: Vec::with_capacity(cap),
            size,
            usable: size.div_ceil(slab::page_size()) * slab::page_size(),
            cap,
            policy,
        }
    }

    /// A stack of `size` bytes: a warm one, or a batch from the depot
    /// (which may map a slab). Outside any run-queue lock.
    pub(crate) fn get(&mut self, size: usize) -> io::Result<GreenStack> {
        if size != self.size || self.cap == 0 {
            return alloc_one(size, &self.policy);
        }
        if let Some(s) = self.free.pop() {
            return Ok(s);
        }
        let batch = (self.cap / 4).clamp(1, 64);
        alloc(size, &self.policy, batch, &mut self.free)?;
        Ok(self.free.pop().expect("the depot filled the batch"))
    }

    /// Keeps a stack warm for reuse; beyond the capacity, gives the older
    /// half back to the depot (`madvise`). Outside any run-queue lock.
    pub(crate) fn put(&mut self, stack: GreenStack) {
        if stack.size != self.usable || self.cap == 0 {
            return drop(stack);
        }
        self.free.push(stack);
        if self.free.len() > self.cap {
            let n = self.free.len() - self.cap / 2;
            give_back(self.free.drain(..n));
        }
    }

    /// Gives every warm stack back to the depot.
    pub(crate) fn clear(&mut self) {
        give_back(self.free.drain(..));
    }
}

impl Drop for StackCache {
    fn drop(&mut self) {
        self.clear();
    }
}

/// One stack of `size` bytes straight from the depot (spawns from outside
/// the runtime's workers). Outside any run-queue lock.
pub(crate) fn alloc_one(size: usize, policy: &GuardPolicy) -> io::Result<GreenStack> {
    let mut v = Vec::with_capacity(1);
    alloc(size, policy, 1, &mut v)?;
    Ok(v.pop().expect("the depot handed out one stack"))
}

fn give_back(stacks: impl Iterator<Item = GreenStack>) {
    let mut rel: Vec<Released> = stacks
        .map(|s| {
            let r = Released::of(&s);
            std::mem::forget(s);
            r
        })
        .collect();
    release(&mut rel);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::StackGuard;

    /// The tests of this module run one at a time: one of them counts
    /// [`live_stacks`], which every other allocation moves (those of other
    /// modules' tests are allowed for by a slack).
    fn one_at_a_time() -> parking_lot::MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock()
    }

    fn policy(mode: StackGuard) -> GuardPolicy {
        GuardPolicy {
            mode,
            map_budget: guard::default_map_budget(),
            guard_regions: true,
        }
    }

    #[test]
    fn stacks_come_back_warm_and_beyond_the_warm_cap_zeroed() {
        let _turn = one_at_a_time();
        let p = policy(StackGuard::Auto);
        let size = 44 * 1024;
        let n = WARM_CAP + 64;
        let mut v = Vec::new();
        alloc(size, &p, n, &mut v).unwrap();
        for s in &v {
            // SAFETY: the top word of a stack we own.
            unsafe { ((s.base - 8) as *mut u64).write(7) };
        }
        let before = live_stacks();
        let mut cache = StackCache::new(size, 8, p);
        for s in v.drain(..) {
            cache.put(s);
        }
        cache.clear();
        // `live_stacks` is process-wide: lib tests elsewhere that run a
        // runtime move it too (by a few batches at most).
        let slack = 1024;
        assert!(
            live_stacks() <= before - n + slack,
            "clear gave back {} of {n} stacks",
            before.saturating_sub(live_stacks())
        );
        alloc(size, &p, n, &mut v).unwrap();
        // SAFETY: as above.
        let zeroed = v
            .iter()
            .filter(|s| unsafe { ((s.base - 8) as *const u64).read() } == 0)
            .count();
        let kept = v.len() - zeroed;
        assert!(zeroed >= WARM_CAP / 2, "{zeroed} zeroed");
        assert!(kept >= WARM_CAP / 2, "{kept} kept warm");
    }

    /// Whether the page at `addr` is resident.
    fn resident(addr: usize) -> bool {
        let page = slab::page_size();
        let mut v = 0u8;
        // SAFETY: `addr` is page-aligned and inside a mapped slab; `v` has
        // room for the one page asked about.
        let r = unsafe { libc::mincore((addr / page * page) as *mut _, page, &mut v) };
        r == 0 && v & 1 == 1
    }

    #[test]
    fn handed_out_stacks_have_their_top_page_resident() {
        let _turn = one_at_a_time();
        let p = policy(StackGuard::Auto);
        // A size of its own: a class no other test carves from.
        let size = 52 * 1024;
        if !slab::populate_supported() {
            eprintln!("skipped: this kernel does not fault pages in through process_madvise");
            return;
        }
        let mut v = Vec::new();
        alloc(size, &p, 64, &mut v).unwrap();
        let top = |s: &GreenStack| s.base - 1;
        let cold = v.iter().filter(|s| !resident(top(s))).count();
        assert_eq!(
            cold, 0,
            "{cold} new stacks handed out without their top page"
        );
        // Beyond the warm cap they lose their memory: handed out again,
        // they are faulted in again, in one batch.
        let mut more = Vec::new();
        alloc(size, &p, WARM_CAP, &mut more).unwrap();
        give_back(v.drain(..).chain(more.drain(..)));
        alloc(size, &p, WARM_CAP + 64, &mut v).unwrap();
        let cold = v.iter().filter(|s| !resident(top(s))).count();
        assert_eq!(cold, 0, "{cold} stacks handed out without their top page");
    }

    /// Whether `/proc/self/pagemap` shows a guard region at the page at
    /// `addr` (bit 58, Linux 6.14+); `None` if it cannot be read.
    fn guard_marked(addr: usize) -> Option<bool> {
        use std::io::{Read, Seek, SeekFrom};
        let page = slab::page_size();
        let mut f = std::fs::File::open("/proc/self/pagemap").ok()?;
        f.seek(SeekFrom::Start((addr / page * 8) as u64)).ok()?;
        let mut b = [0u8; 8];
        f.read_exact(&mut b).ok()?;
        Some(u64::from_le_bytes(b) >> 58 & 1 == 1)
    }

    #[test]
    fn guard_regions_are_installed_as_stacks_are_first_carved() {
        let _turn = one_at_a_time();
        let p = policy(StackGuard::Auto);
        if !guard::guard_regions_supported() {
            eprintln!("skipped: no guard regions on this kernel");
            return;
        }
        // A size of its own: a class no other test carves from.
        let size = 60 * 1024;
        let mut v = Vec::new();
        // Half of the class's first slab (of FIRST_SLAB_STACKS).
        alloc(size, &p, FIRST_SLAB_STACKS / 2, &mut v).unwrap();
        let probe = v[0].region;
        if guard_marked(probe) != Some(true) {
            eprintln!("skipped: /proc/self/pagemap does not show guard regions here");
            return;
        }
        for s in &v {
            assert_eq!(
                guard_marked(s.region),
                Some(true),
                "a handed-out stack without its guard"
            );
        }
        // The other half of that slab is not carved yet: no guard there
        // until a batch takes it.
        let g = Geometry::new(size, Protection::GuardRegion);
        let lowest = v.iter().map(|s| s.region).min().unwrap();
        for i in FIRST_SLAB_STACKS / 2..FIRST_SLAB_STACKS {
            let r = lowest + i * g.stride;
            assert_eq!(
                guard_marked(r),
                Some(false),
                "a guard installed ahead of the carve"
            );
        }
    }

    #[test]
    fn canary_stacks_carry_intact_canaries() {
        let _turn = one_at_a_time();
        let p = policy(StackGuard::Canary);
        let mut v = Vec::new();
        alloc(32 * 1024, &p, 40, &mut v).unwrap();
        for s in &v {
            assert_ne!(s.canary_at(), 0);
            // SAFETY: the canary of a stack we hold.
            assert!(unsafe { guard::canary_intact(s.canary_at()) });
            assert_eq!(s.base % 16, 0);
        }
    }

    #[test]
    fn guard_page_mode_fails_cleanly_beyond_the_budget() {
        let _turn = one_at_a_time();
        let p = GuardPolicy {
            mode: StackGuard::GuardPage,
            map_budget: 0,
            guard_regions: false,
        };
        let e = alloc_one(20 * 1024, &p).err().expect("over budget");
        assert_eq!(e.kind(), io::ErrorKind::OutOfMemory);
        assert!(e.to_string().contains("mapping budget"), "{e}");
        // Auto falls back to canaries instead.
        let auto = GuardPolicy {
            mode: StackGuard::Auto,
            ..p
        };
        assert_ne!(alloc_one(20 * 1024, &auto).unwrap().canary_at(), 0);
    }
}
