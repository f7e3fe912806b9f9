//! Wake and spawn placement: which worker a task should run on.
//!
//! Owns: the simplified `select_task_rq` of EEVDF.md §12 — the task's
//! previous worker if it is idle, its recently used worker if idle, then a
//! bounded scan of the idle-worker bitmap, else the previous worker — always
//! within the task's affinity; and spawn placement (local first or idlest,
//! the SPAWN_LOCAL switch, BACKGROUND.md §4). Every idle probe is counted.
//! Must not: scan unboundedly (the v6.15 regression was idle scanning), or
//! take locks.

use super::count;
use crate::sched::Feature;
use crate::shared::Shared;
use crate::stats::Counter;
use crate::task::Tcb;
use crate::worker::mask::WorkerMask;
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
    found.unwrap_or_else(fallback)
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

/// Chooses the worker for a new task spawned from `here` (a worker index,
/// or `None` outside the runtime).
pub(crate) fn select_spawn_worker(sh: &Shared, aff: &WorkerMask, here: Option<usize>) -> usize {
    if let Some(h) = here {
        if aff.contains(h) && sh.feature(Feature::SpawnLocal) {
            return h;
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
