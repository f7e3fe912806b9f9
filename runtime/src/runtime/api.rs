//! The functions a green thread calls: spawn, yield, sleep, preemption
//! points, its own handle, nice and slice.
//!
//! Owns: the user-facing entry points into the scheduler from green code,
//! and their behaviour on plain OS threads (sleep and yield fall back to
//! `std`; spawn and the current-task calls need a green thread). Must not:
//! hold a thread-local reference across a switch.

use super::join::JoinHandle;
use super::spawn;
use crate::context::Switch;
use crate::error::Error;
use crate::sched::weight::nice_index;
use crate::sched::{check_slice, Feature};
use crate::task::builder::SpawnOpts;
use crate::task::{switch_out, Task};
use crate::time::clock;
use crate::wake::waiter;
use crate::worker::{tls, RESCHED, TICK, TIMER, WAKELIST};
use std::time::{Duration, Instant};

/// Spawns a green thread on the runtime of the calling green thread.
///
/// # Panics
/// Outside a green thread (like `tokio::spawn` outside a runtime; use
/// [`Runtime::spawn`](crate::Runtime::spawn) from OS threads), or if the
/// runtime is shut down.
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let sum = rt.block_on(|| {
///     let hs: Vec<_> = (0..4u64).map(|i| eevdf_rt::spawn(move || i * i)).collect();
///     hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
/// });
/// assert_eq!(sum, 14);
/// ```
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let Some(sh) = spawn::current_shared() else {
        panic!("eevdf_rt::spawn called outside a green thread; use Runtime::spawn");
    };
    let h = match spawn::spawn_green(&sh, SpawnOpts::default_opts(), f) {
        Ok(h) => h,
        Err(e) => panic!("eevdf_rt::spawn: {e}"),
    };
    drop(sh);
    preempt_point();
    h
}

/// Gives up the worker: the green thread's deadline moves back by one
/// request and EEVDF picks again (it continues at once if nothing else is
/// runnable). On an OS thread: `std::thread::yield_now`.
pub fn yield_now() {
    if tls::current().is_some() {
        switch_out(Switch::Yield);
    } else {
        std::thread::yield_now();
    }
}

/// Honours a pending reschedule — the analogue of the kernel's
/// `cond_resched()` for long CPU loops. Costs one relaxed load when nothing
/// is pending (no clock read unless a tick period has passed). Preemption
/// is cooperative: a green thread that never reaches a preemption point
/// (this, or any runtime call that can block or wake) keeps its worker.
/// A no-op on OS threads.
#[inline]
pub fn preempt_point() {
    if let Some((sh, i)) = tls::worker() {
        if sh.workers[i].flags() != 0 {
            preempt_slow();
        } else if sh.uring.is_some() {
            // I/O hook (io_uring driver): completions that arrived while
            // this green thread ran are delivered now, not at the next tick.
            crate::io::uring::at_preempt_point(sh);
        }
    }
}

#[cold]
#[inline(never)]
fn preempt_slow() {
    let Some((sh, w)) = tls::this_worker() else {
        return;
    };
    if tls::current().is_none() {
        return;
    }
    let flags = w.flags();
    let mut tick = false;
    let mut switch = flags & (RESCHED | TIMER) != 0;
    if flags & WAKELIST != 0 {
        // Remote wakeups queued for us while we run: enqueue them now (the
        // kernel does this in the reschedule IPI) so they compete at once.
        let now = clock::now();
        let (preempt, deadline) = {
            let mut rq = w.lock();
            let p = crate::worker::run::drain_wakelist(sh, w, &mut rq, now);
            w.publish_nr_running(sh, &rq);
            (p, w.arm_preempt(&rq, now, sh.feature(Feature::Hrtick)))
        };
        if preempt {
            switch = true;
        } else {
            crate::time::ticker::check_deadline(sh, deadline);
        }
    }
    if flags & TICK != 0 {
        w.clear_flags(TICK);
        // I/O hook (io_uring driver): a busy worker reaps its ring once per
        // tick even if it never switches.
        crate::io::uring::at_tick(sh);
        let now = clock::now();
        let (resched, deadline, queued) = {
            let mut rq = w.lock();
            let r = rq.q.tick(now);
            let d = w.arm_preempt(&rq, now, sh.feature(Feature::Hrtick));
            (r, d, rq.q.nr_queued())
        };
        if !resched {
            crate::time::ticker::check_deadline(sh, deadline);
        }
        if sh.feature(Feature::NewidleBalance) {
            crate::wake::balance::kick_idle_for_balance(sh, w, queued, now);
        }
        if resched {
            tick = flags & RESCHED == 0;
            switch = true;
        }
        // Due timers are fired by the scheduler: switch so it runs. [D] The
        // kernel fires them from an interrupt; a cooperative runtime
        // switches at the next preemption point instead.
        if w.next_timer.load(std::sync::atomic::Ordering::Relaxed) <= now {
            switch = true;
        }
    }
    if switch {
        w.clear_flags(TIMER);
        switch_out(Switch::Preempt { tick });
    }
}

/// Sleeps for `d`: the green thread blocks and a timer on its worker wakes
/// it (an ordinary wakeup: placement and delayed dequeue apply). On an OS
/// thread: `std::thread::sleep`.
pub fn sleep(d: Duration) {
    match Instant::now().checked_add(d) {
        Some(t) => sleep_until(t),
        None => loop {
            sleep(Duration::from_secs(3600 * 24 * 365));
        },
    }
}

/// Sleeps until `deadline` (returns at once if it has passed).
pub fn sleep_until(deadline: Instant) {
    if tls::current().is_none() {
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
        return;
    }
    let dl = clock::from_instant(deadline);
    while clock::now() < dl {
        waiter::park(|| false, Some(deadline));
    }
}

/// Blocks the calling green thread until its token is made available by
/// [`Task::unpark`] (like `std::thread::park`; spurious returns are
/// possible, so call it in a loop that checks your condition). On an OS
/// thread: `std::thread::park`.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let flag = Arc::new(AtomicBool::new(false));
/// let f = flag.clone();
/// let h = rt.spawn(move || {
///     while !f.load(Ordering::Acquire) {
///         eevdf_rt::park();
///     }
/// });
/// flag.store(true, Ordering::Release);
/// h.task().unpark();
/// h.join().unwrap();
/// ```
pub fn park() {
    park_inner(None);
}

/// Like [`park`], but returns after `timeout` at the latest.
pub fn park_timeout(timeout: Duration) {
    park_inner(Instant::now().checked_add(timeout));
}

fn park_inner(deadline: Option<Instant>) {
    let Some(me) = tls::current() else {
        match deadline {
            None => std::thread::park(),
            Some(d) => std::thread::park_timeout(d.saturating_duration_since(Instant::now())),
        }
        return;
    };
    let token = &me.unpark_token;
    if token.swap(false, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    waiter::park(|| token.load(std::sync::atomic::Ordering::SeqCst), deadline);
    // Re-fetch: we may run on another worker now (the task is the same).
    if let Some(me) = tls::current() {
        me.unpark_token
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The calling green thread's handle.
///
/// # Panics
/// Outside a green thread (see [`try_current`]).
pub fn current() -> Task {
    try_current().expect("eevdf_rt::current called outside a green thread")
}

/// The calling green thread's handle, or `None` on an OS thread.
pub fn try_current() -> Option<Task> {
    tls::current_ref().map(|tcb| Task { tcb })
}

/// Whether the caller is a green thread.
pub fn in_green_thread() -> bool {
    tls::current().is_some()
}

/// Changes the calling green thread's nice level (−20..=19), conserving
/// its lag (EEVDF reweight).
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// rt.block_on(|| {
///     eevdf_rt::set_nice(5).unwrap();
///     assert_eq!(eevdf_rt::current().nice(), 5);
///     assert!(eevdf_rt::set_nice(20).is_err());
/// });
/// assert!(eevdf_rt::set_nice(1).is_err()); // not a green thread
/// ```
pub fn set_nice(nice: i32) -> Result<(), Error> {
    let me = tls::current().ok_or(Error::NotGreenThread { call: "set_nice" })?;
    nice_index(nice)?;
    let (_, w) = tls::this_worker().expect("a green thread runs on a worker");
    let old = me.nice();
    let now = clock::now();
    {
        let mut rq = w.lock();
        let slot = rq.q.curr().expect("a running green thread is current");
        rq.q.reweight(slot, nice, now)?;
    }
    let custom = me.custom_slice();
    me.set_mirrors(nice, (custom != 0).then_some(custom));
    if nice > old {
        // Less share now: let EEVDF decide whether we still run (the
        // kernel's prio_changed_fair reschedules a running task that got
        // a lower priority).
        w.set_flags(RESCHED);
    }
    preempt_point();
    Ok(())
}

/// Sets the calling green thread's slice (its latency request), 100 µs ..= 100 ms.
pub fn set_slice(slice: Duration) -> Result<(), Error> {
    let me = tls::current().ok_or(Error::NotGreenThread { call: "set_slice" })?;
    let ns = check_slice(slice.as_nanos().min(u64::MAX as u128) as u64)?;
    let (_, w) = tls::this_worker().expect("a green thread runs on a worker");
    let now = clock::now();
    {
        let mut rq = w.lock();
        let slot = rq.q.curr().expect("a running green thread is current");
        rq.q.set_slice(slot, Some(ns), now)?;
    }
    me.set_mirrors(me.nice(), Some(ns));
    preempt_point();
    Ok(())
}
