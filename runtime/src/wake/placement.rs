//! Wake and spawn placement: which worker a task should run on.
//!
//! Owns: the simplified `select_task_rq` of docs/eevdf.md §12 — the task's
//! previous worker if it is idle, its recently used worker if idle, then a
//! bounded scan of the idle-worker bitmap, else the previous worker (or,
//! for an I/O readiness wakeup, the polling worker: WA_IO; or, if the
//! previous worker is not serving its queue, one that is: WA_STALE) — always
//! within the task's affinity; the I/O-wake hint the reactor sets around
//! its dispatch ([`io_wakeups`]); and spawn placement (local first or idlest,
//! the SPAWN_LOCAL switch, docs/kernel-discussions.md §4; idlest once the
//! spawner's worker has a backlog, SPAWN_SPILL). Every idle probe is counted.
//! Must not: scan unboundedly (the v6.15 regression was idle scanning), or
//! take locks.

use super::count;
use crate::mask::WorkerMask;
use crate::sched::Feature;
use crate::shared::Shared;
use crate::stats::Counter;
use crate::task::Tcb;
use crate::time::clock;
use std::cell::Cell;
use std::sync::atomic::Ordering;

/// Most idle-bitmap candidates examined by one wake placement.
pub(crate) const MAX_IDLE_PROBES: usize = 8;

/// Chooses the worker `t` (last on `prev`) should wake on. `sync`: the
/// waker will probably block soon (WA_SYNC).
pub(crate) fn select_worker(
    sh: &Shared,
    t: &Tcb,
    prev: usize,
    waker: Option<usize>,
    sync: bool,
) -> usize {
    let aff = &t.affinity;
    if aff.count() == 1 {
        return aff.lowest().expect("non-empty affinity");
    }
    // WA_SYNC: the waker's worker runs only the waker, which is about to
    // block: the wakee runs there next (the nr_running mirror counts the
    // running waker itself).
    if let Some(w) = waker {
        if sync && aff.contains(w) && sh.feature(Feature::WaSync) && sh.workers[w].nr_running() <= 1
        {
            return w;
        }
    }
    let fallback = || {
        if aff.contains(prev) {
            prev
        } else {
            waker
                .filter(|w| aff.contains(*w))
                .or_else(|| aff.lowest())
                .expect("non-empty affinity")
        }
    };
    if !sh.feature(Feature::WakeIdle) || sh.workers.len() == 1 {
        return fallback();
    }
    let mut probes = 1;
    if aff.contains(prev) && sh.available_idle(prev) {
        count(sh, waker, Counter::idle_probes);
        return prev;
    }
    let recent = t.recent_cpu.load(Ordering::Relaxed) as usize;
    if recent != prev && aff.contains(recent) {
        probes += 1;
        if sh.available_idle(recent) {
            add_probes(sh, waker, probes);
            return recent;
        }
    }
    let found = scan_idle(sh, aff, prev, &mut probes);
    add_probes(sh, waker, probes);
    found
        .or_else(|| io_affine(sh, aff, prev, waker))
        .or_else(|| away_from_stale(sh, aff, prev, waker))
        .unwrap_or_else(fallback)
}

/// Whether worker `i` has not reached a preemption point's slow path for
/// [`STALE_POLL`] past its busy-poll deadline at `now`: it is not serving
/// its queue (its OS thread is preempted by the host, or a green thread
/// runs without preemption points). Relaxed: a heuristic; the owner alone
/// writes its poll deadline.
pub(crate) fn is_stale(sh: &Shared, i: usize, now: u64) -> bool {
    now > sh.workers[i]
        .deadlines
        .next_poll
        .load(Ordering::Relaxed)
        .saturating_add(STALE_POLL)
}

/// WA_STALE, for a wakee still queued (delayed) on worker `prev`: whether
/// to take it off that queue because `prev` is stale and it may run
/// elsewhere.
pub(crate) fn should_leave(sh: &Shared, t: &Tcb, prev: usize) -> bool {
    t.affinity.count() > 1
        && sh.workers.len() > 1
        && sh.feature(Feature::WaStale)
        && is_stale(sh, prev, clock::now())
}

/// WA_STALE: no idle worker, and the previous worker is stale: the wakee
/// goes to the waker's worker (running by definition), else to the allowed
/// worker with the fewest queued tasks among those that are not stale —
/// or, on a host so loaded that every worker is stale, among those that
/// served their queue at least [`STALE_POLL`] more recently than `prev`.
fn away_from_stale(
    sh: &Shared,
    aff: &WorkerMask,
    prev: usize,
    waker: Option<usize>,
) -> Option<usize> {
    if !aff.contains(prev) || !sh.feature(Feature::WaStale) {
        return None;
    }
    let now = clock::now();
    if !is_stale(sh, prev, now) {
        return None;
    }
    if let Some(w) = waker.filter(|&w| w != prev && aff.contains(w)) {
        return Some(w);
    }
    let poll = |i: usize| sh.workers[i].deadlines.next_poll.load(Ordering::Relaxed);
    let fresher = poll(prev).saturating_add(STALE_POLL);
    let others = || (0..sh.workers.len()).filter(|&i| i != prev && aff.contains(i));
    others()
        .filter(|&i| !is_stale(sh, i, now))
        .min_by_key(|&i| sh.workers[i].nr_running())
        .or_else(|| {
            others()
                .filter(|&i| poll(i) > fresher)
                .min_by_key(|&i| (sh.workers[i].nr_running(), u64::MAX - poll(i)))
        })
}

/// WA_IO: no idle worker, and the wakeup is I/O readiness found by a
/// worker's poll of the reactor — the runtime's interrupt. Like the
/// kernel's `wake_affine()` for a wakeup from the CPU that took the
/// interrupt (WA_WEIGHT, whose tie goes to the waking CPU), the wakee
/// moves to the polling worker unless that one has more tasks queued than
/// its previous worker — or even then, if the previous worker has not
/// polled for [`STALE_POLL`]: a busy worker polls at its preemption points
/// every `BUSY_POLL_INTERVAL`, so one that has not is not running (its OS
/// thread preempted by the host) or is stuck in a long run between
/// preemption points, and a wakee queued there would wait for it. The
/// polling worker is running by definition. Connection tasks of one
/// acceptor all start on its worker (SPAWN_LOCAL); this also spreads them
/// over the workers that poll.
fn io_affine(sh: &Shared, aff: &WorkerMask, prev: usize, waker: Option<usize>) -> Option<usize> {
    let w = waker?;
    if w == prev || !aff.contains(w) || !IO_WAKE.with(Cell::get) || !sh.feature(Feature::WaIo) {
        return None;
    }
    let lighter = sh.workers[w].nr_running() <= sh.workers[prev].nr_running();
    // Relaxed: a heuristic; the owner alone writes its poll deadline.
    let last_due = sh.workers[prev].deadlines.next_poll.load(Ordering::Relaxed);
    (lighter || clock::now() > last_due.saturating_add(STALE_POLL)).then_some(w)
}

/// How long past its busy-poll deadline a worker counts as not serving
/// its queue (WA_IO): four busy-poll intervals.
const STALE_POLL: u64 = 4 * crate::worker::BUSY_POLL_INTERVAL;

thread_local! {
    /// Set while this thread dispatches I/O readiness ([`io_wakeups`]).
    static IO_WAKE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` — the reactor waking the waiters and wakers of a ready
/// descriptor — with this thread's wakeups marked as I/O readiness
/// wakeups (the WA_IO placement of [`select_worker`]). Only placement reads
/// the mark, and only on this thread: it changes where a wakee goes, never
/// whether it is woken.
pub(crate) fn io_wakeups<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            IO_WAKE.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(IO_WAKE.with(|c| c.replace(true)));
    f()
}

fn add_probes(sh: &Shared, waker: Option<usize>, n: u64) {
    match waker {
        Some(i) => sh.workers[i].stats.add(Counter::idle_probes, n),
        None => {
            for _ in 0..n {
                sh.external.inc_shared(Counter::idle_probes);
            }
        }
    }
}

/// Bounded scan of the idle bitmap starting after `start`: at most
/// `MAX_IDLE_PROBES` candidates that are in the bitmap and allowed.
fn scan_idle(sh: &Shared, aff: &WorkerMask, start: usize, probes: &mut u64) -> Option<usize> {
    let n = sh.workers.len();
    let words = n.div_ceil(64);
    let mut examined = 0;
    // Walk words of the bitmap so empty stretches cost one load per 64 workers.
    for k in 0..=words {
        let wi = ((start + 1) / 64 + k) % words;
        let mut bits = sh.idle_mask.word(wi);
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let i = wi * 64 + b;
            if i >= n || i == start || !aff.contains(i) {
                continue;
            }
            *probes += 1;
            examined += 1;
            if sh.available_idle(i) {
                return Some(i);
            }
            if examined >= MAX_IDLE_PROBES {
                return None;
            }
        }
    }
    None
}

/// SPAWN_SPILL: the spawner's worker's `nr_running` (the spawner and the
/// tasks waiting behind it) from which a new task may go to an idle or a
/// much less loaded worker ([`spill_target`]). Above what spawn-and-join
/// patterns reach (a few spawners sharing a worker, each with one child),
/// below what a loop of spawns reaches within microseconds.
const SPAWN_SPILL_AT: u32 = 8;

/// SPAWN_SPILL, for a spawn on worker `h` whose `nr_running` is `load`
/// (a backlog): an idle worker, else the least loaded allowed worker if it
/// has at most half that load — one that starts the task clearly sooner.
/// `None`: the task stays on `h` (every worker as busy: moving it would
/// only cost the spawn-and-join pair its directed yield).
fn spill_target(sh: &Shared, aff: &WorkerMask, h: usize, load: u32) -> Option<usize> {
    let mut probes = 0;
    let idle = scan_idle(sh, aff, h, &mut probes);
    add_probes(sh, Some(h), probes.max(1));
    if idle.is_some() {
        return idle;
    }
    (0..sh.workers.len())
        .filter(|&i| i != h && aff.contains(i))
        .map(|i| (sh.workers[i].nr_running(), i))
        .min()
        .filter(|&(l, _)| 2 * l <= load)
        .map(|(_, i)| i)
}

/// Chooses the worker for a new task spawned from `here` (a worker index,
/// or `None` outside the runtime).
pub(crate) fn select_spawn_worker(sh: &Shared, aff: &WorkerMask, here: Option<usize>) -> usize {
    if let Some(h) = here {
        if aff.contains(h) && sh.feature(Feature::SpawnLocal) {
            let load = sh.workers[h].nr_running();
            if load < SPAWN_SPILL_AT || !sh.feature(Feature::SpawnSpill) {
                return h;
            }
            return spill_target(sh, aff, h, load).unwrap_or(h);
        }
    }
    if aff.count() == 1 {
        return aff.lowest().expect("non-empty affinity");
    }
    // Idlest: an idle worker if any (bounded scan), else the allowed worker
    // with the fewest queued tasks (round-robin among equals, so spawns from
    // outside spread out).
    let start =
        here.unwrap_or_else(|| sh.spawn_cursor.fetch_add(1, Ordering::Relaxed)) % sh.workers.len();
    let mut probes = 0;
    let found = scan_idle(sh, aff, start, &mut probes);
    add_probes(sh, here, probes.max(1));
    if let Some(i) = found {
        return i;
    }
    let n = sh.workers.len();
    let mut best = None;
    let mut best_load = u32::MAX;
    for k in 1..=n {
        let i = (start + k) % n;
        if !aff.contains(i) {
            continue;
        }
        let load = sh.workers[i].nr_running();
        if load < best_load {
            best_load = load;
            best = Some(i);
        }
    }
    best.expect("non-empty affinity")
}
