//! Per-task accounting, like the kernel's `/proc/<pid>/sched`.
//!
//! Owns: [`Acct`], the counters every task control block carries (run
//! time, wait time, switches, preemptions, migrations, wakeups), the hooks
//! the switch and wake paths call to update them, and [`TaskStats`], the
//! snapshot [`Task::stats`](crate::Task::stats) returns. Must not: read the
//! clock (every hook takes the `now` its caller already read, so the
//! accounting rides on the one clock read per switch) or take locks.
//!
//! # Who writes, who reads
//!
//! Every hook runs under the run-queue lock of the worker that owns the
//! task at that moment (the switch path, `activate`, `ttwu_runnable`, a
//! steal), so the writes to one task's counters are serialised by that
//! lock, and a task that moves to another worker carries a happens-before
//! edge from the old owner to the new one (the wake protocol's
//! release/acquire on `on_cpu`/`on_rq`, or a steal holding both locks).
//! The counters are therefore plain load-then-store updates on relaxed
//! atomics: no read-modify-write is needed, and the atomics exist only so
//! that [`Task::stats`](crate::Task::stats) may read them from any thread
//! without a lock. A reader sees each counter whole but the set of them not
//! necessarily from one instant (like reading `/proc/<pid>/sched`).
//!
//! Time is split in three: *running* (from `switched_in` to
//! `switched_out`), *waiting* (runnable but not running: from the wakeup,
//! spawn, yield or preemption to the next `switched_in`), and sleeping
//! (everything else, including a delayed dequeue: a task that blocked
//! while ineligible stays queued but does not want the CPU).

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// A snapshot of one task's accounting and of its EEVDF state, from
/// [`Task::stats`](crate::Task::stats).
///
/// The counters (`run_time` … `wakeups`) are cumulative since spawn. The
/// policy view (`vruntime` … `weight`) is read under the owning worker's
/// run-queue lock when the task is queued, otherwise from the entity it
/// saved when it left its run queue; virtual times are in the virtual
/// nanoseconds of `eevdf_rt::sched` (see `docs/eevdf.md`).
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let st = rt.block_on(|| {
///     let t0 = std::time::Instant::now();
///     while t0.elapsed() < std::time::Duration::from_millis(5) {}
///     eevdf_rt::current().stats()
/// });
/// assert!(st.run_time >= std::time::Duration::from_millis(4));
/// assert_eq!(st.weight, 1024);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskStats {
    /// Time spent running (including the current run, if it runs now).
    /// It never goes back from one read to the next.
    pub run_time: Duration,
    /// Time spent runnable but not running (waiting in a run queue).
    pub wait_time: Duration,
    /// Times it was switched out (voluntary and involuntary).
    pub switches: u64,
    /// Involuntary switches: preempted by the tick, HRTICK or a wakeup.
    pub preemptions: u64,
    /// Times it moved to another worker (wake placement or a steal).
    pub migrations: u64,
    /// Times it was woken (a blocked task made runnable again).
    pub wakeups: u64,
    /// Virtual runtime (virtual ns). Like the kernel's, virtual times are
    /// wrapping `u64`s (a queue's clock starts just below 2^64): compare
    /// them by their wrapping difference.
    pub vruntime: u64,
    /// Virtual deadline (absolute while queued; see `relative_deadline`).
    pub deadline: u64,
    /// Whether `deadline` holds the remaining request `vdl − vruntime`
    /// instead of an absolute deadline (a migrated or reweighted task).
    pub relative_deadline: bool,
    /// Lag `V − vruntime` (virtual ns): now if queued, at its last dequeue otherwise.
    pub lag: i64,
    /// Its current request size.
    pub slice: Duration,
    /// Its weight (1024 at nice 0; 3 for the idle policy).
    pub weight: u32,
    /// Its nice level.
    pub nice: i32,
    /// Its scheduling class.
    pub policy: crate::sched::Policy,
}

/// The counters in a task control block (see the module comment for the
/// write protocol).
#[derive(Debug, Default)]
pub(crate) struct Acct {
    run_ns: AtomicU64,
    wait_ns: AtomicU64,
    switches: AtomicU64,
    preemptions: AtomicU64,
    migrations: AtomicU64,
    wakeups: AtomicU64,
    /// When the current run began, or 0 while not running.
    running_since: AtomicU64,
    /// When the task last became runnable, or 0 while it is not waiting.
    runnable_since: AtomicU64,
    /// When it last switched out.
    out_at: AtomicU64,
    /// The largest run time a snapshot has reported (see `snapshot`).
    run_reported: AtomicU64,
}

/// Adds `d` to `c` (single writer: see the module comment).
#[inline]
fn add(c: &AtomicU64, d: u64) {
    c.store(c.load(Relaxed).wrapping_add(d), Relaxed);
}

impl Acct {
    /// The counters, with `now` for a run in progress. The run time never
    /// goes back from one snapshot to the next.
    pub(crate) fn snapshot(&self, now: u64, out: &mut TaskStats) {
        // Read `running_since` before `run_ns`: `switched_out` clears it
        // before adding the run, so a racing read undercounts the run in
        // flight instead of counting it twice.
        let since = self.running_since.load(Relaxed);
        let mut run = self.run_ns.load(Relaxed);
        if since != 0 {
            run += now.saturating_sub(since);
        }
        // Never less than an earlier snapshot said. A run in progress is
        // counted up to the reader's `now`, but it is charged up to the
        // reading its worker took when it began to switch out, which can
        // be earlier (the worker does some work before it takes the lock
        // the reader holds; a preemption point hands over an even earlier
        // reading). The charged total then catches up with the largest
        // reported value at the task's next run.
        run = run.max(self.run_reported.fetch_max(run, Relaxed));
        out.run_time = Duration::from_nanos(run);
        out.wait_time = Duration::from_nanos(self.wait_ns.load(Relaxed));
        out.switches = self.switches.load(Relaxed);
        out.preemptions = self.preemptions.load(Relaxed);
        out.migrations = self.migrations.load(Relaxed);
        out.wakeups = self.wakeups.load(Relaxed);
    }
}

/// The task becomes runnable at `now` without a wakeup (spawn).
#[inline]
pub(crate) fn runnable(a: &Acct, now: u64) {
    a.runnable_since.store(now.max(1), Relaxed);
}

/// A blocked task was made runnable at `now` (`migrated`: on another
/// worker). A task woken before it managed to switch out is still running:
/// its wait starts when it does switch out, not now.
#[inline]
pub(crate) fn woken(a: &Acct, now: u64, migrated: bool) {
    add(&a.wakeups, 1);
    if migrated {
        add(&a.migrations, 1);
    }
    if a.running_since.load(Relaxed) == 0 {
        runnable(a, now);
    }
}

/// Hook (`wake::activate`): the task was enqueued at `now` with activation
/// `kind` (`task::tcb::activation`: a new task, a wakeup, maybe migrated).
#[inline]
pub(crate) fn activated(a: &Acct, kind: u8, now: u64) {
    use crate::task::tcb::activation::{MIGRATED, NEW, REQUEUE};
    if kind & NEW != 0 {
        runnable(a, now);
    } else if kind & REQUEUE != 0 {
        // Runnable all along (it yielded or was preempted): no wakeup.
        if kind & MIGRATED != 0 {
            add(&a.migrations, 1);
        }
        if a.running_since.load(Relaxed) == 0 && a.runnable_since.load(Relaxed) == 0 {
            runnable(a, now);
        }
    } else {
        woken(a, now, kind & MIGRATED != 0);
    }
}

/// Hook (`worker::run::handle_prev`): `t` switched out at `now` for `why`.
#[inline]
pub(crate) fn switched_out_for(t: &crate::task::Tcb, why: &crate::context::Resumed, now: u64) {
    use crate::context::{Resumed, Switch};
    let (preempted, runnable) = match why {
        Resumed::Finished => (false, false),
        Resumed::Switched(Switch::Preempt { .. }) => (true, true),
        Resumed::Switched(Switch::Block | Switch::BlockUntil(_)) => {
            (false, t.st.state() != crate::task::state::BLOCKED)
        }
        Resumed::Switched(_) => (false, true),
    };
    switched_out(&t.acct, now, preempted, runnable);
}

/// Hook (`worker::run::schedule`): the scheduler picked the task that just
/// switched out again at `now`. If it did so at once (same `now`: the
/// worker did not go idle in between), that was no context switch (nor a
/// preemption): take back what `switched_out` counted.
#[inline]
pub(crate) fn repicked(a: &Acct, was_preempted: bool, now: u64) {
    if a.out_at.load(Relaxed) != now {
        return;
    }
    a.switches
        .store(a.switches.load(Relaxed).saturating_sub(1), Relaxed);
    if was_preempted {
        a.preemptions
            .store(a.preemptions.load(Relaxed).saturating_sub(1), Relaxed);
    }
}

/// A queued task moved to another worker (a steal).
#[inline]
pub(crate) fn migrated(a: &Acct) {
    add(&a.migrations, 1);
}

/// The task starts running at `now`: its wait, if any, ends.
#[inline]
pub(crate) fn switched_in(a: &Acct, now: u64) {
    let since = a.runnable_since.load(Relaxed);
    if since != 0 {
        add(&a.wait_ns, now.saturating_sub(since));
        a.runnable_since.store(0, Relaxed);
    }
    a.running_since.store(now.max(1), Relaxed);
}

/// The task stopped running at `now`; `preempted`: involuntarily;
/// `still_runnable`: it yielded or was preempted (it waits from now on).
#[inline]
pub(crate) fn switched_out(a: &Acct, now: u64, preempted: bool, still_runnable: bool) {
    let since = a.running_since.load(Relaxed);
    a.running_since.store(0, Relaxed);
    if since != 0 {
        add(&a.run_ns, now.saturating_sub(since));
    }
    add(&a.switches, 1);
    if preempted {
        add(&a.preemptions, 1);
    }
    a.out_at.store(now, Relaxed);
    if still_runnable {
        runnable(a, now);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_run_read_past_its_switch_out_does_not_go_back() {
        let a = Acct::default();
        switched_in(&a, 100);
        let mut st = TaskStats::default();
        // A reader at 180 while the worker, which read 150 when it began
        // to switch the task out, has not charged the run yet.
        a.snapshot(180, &mut st);
        assert_eq!(st.run_time, Duration::from_nanos(80));
        switched_out(&a, 150, false, true);
        a.snapshot(200, &mut st);
        assert_eq!(st.run_time, Duration::from_nanos(80));
        switched_in(&a, 300);
        a.snapshot(340, &mut st);
        assert_eq!(st.run_time, Duration::from_nanos(90));
    }

    #[test]
    fn run_and_wait_split_at_the_switches() {
        let a = Acct::default();
        runnable(&a, 100);
        switched_in(&a, 150); // waited 50
        switched_out(&a, 450, true, true); // ran 300, preempted, waits again
        switched_in(&a, 500); // waited 50
        switched_out(&a, 600, false, false); // ran 100, blocks
        woken(&a, 1_000, true);
        switched_in(&a, 1_010); // waited 10
        let mut st = TaskStats::default();
        a.snapshot(1_110, &mut st); // running for 100 now
        assert_eq!(st.run_time, Duration::from_nanos(500));
        assert_eq!(st.wait_time, Duration::from_nanos(110));
        assert_eq!(st.switches, 2);
        assert_eq!(st.preemptions, 1);
        assert_eq!(st.wakeups, 1);
        assert_eq!(st.migrations, 1);
    }
}
