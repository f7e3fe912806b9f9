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
use crate::worker::{tls, RECHECK, RESCHED, WAKELIST};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Spawns a green thread on the runtime of the calling green thread (or
/// of the blocking-pool thread running a
/// [`spawn_blocking`](crate::task::spawn_blocking) job).
///
/// # Panics
/// Outside the runtime — on an OS thread that is neither a green thread
/// nor one of its pool threads (like `tokio::spawn` outside a runtime; use
/// [`Runtime::spawn`](crate::Runtime::spawn) there) — or if the runtime is
/// shut down. One exception: in a destructor that runs while shutdown
/// unwinds the calling green thread, where a panic would abort the process,
/// the closure is dropped unrun and the handle's join reports
/// [`Cancelled`](crate::Cancelled).
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
        panic!("eevdf_rt::spawn called outside a runtime; use Runtime::spawn");
    };
    let h = match spawn::spawn_green(&sh, SpawnOpts::default_opts(), f) {
        Ok(h) => h,
        // A destructor of a green thread that shutdown is unwinding: a
        // panic here would abort the process (a panic in a destructor
        // during unwinding), so the spawn is refused quietly instead. The
        // closure was dropped unrun; the handle's join reports `Cancelled`.
        Err(_) if unwound_by_shutdown() => return JoinHandle::cancelled(),
        Err(e) => panic!("eevdf_rt::spawn: {e}"),
    };
    h
}

/// Whether the calling green thread is cancelled by shutdown (being
/// unwound, or about to be): the spawns it makes are refused with a
/// [`Cancelled`](crate::Cancelled) handle instead of a panic, which in a
/// destructor during that unwinding would abort the process.
pub(crate) fn unwound_by_shutdown() -> bool {
    tls::current().is_some_and(|t| t.cancelled.load(Ordering::Relaxed))
}

/// Gives up the worker: the green thread's deadline moves back by one
/// request and EEVDF picks again (it continues at once if nothing else is
/// runnable). On an OS thread: `std::thread::yield_now`.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
/// // Two green threads on one worker take turns at every yield.
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let turns = Arc::new(AtomicU32::new(0));
/// let t = turns.clone();
/// rt.block_on(move || {
///     let other = eevdf_rt::spawn(move || {
///         for _ in 0..3 {
///             t.fetch_add(1, Ordering::Relaxed);
///             eevdf_rt::yield_now();
///         }
///     });
///     for _ in 0..3 {
///         eevdf_rt::yield_now();
///     }
///     other.join().unwrap();
/// });
/// assert_eq!(turns.load(Ordering::Relaxed), 3);
/// ```
///
/// A green thread alone on its worker — nothing else queued and nothing on
/// its wakelist — continues without a switch: EEVDF would pick it again (a
/// yield with one entity queued changes nothing in the queue), so the call
/// costs what [`preempt_point`] costs — including serving a tick, timer or
/// I/O poll that has come due, which may still switch — and counts as a
/// yield.
#[inline]
pub fn yield_now() {
    let Some(me) = tls::current() else {
        std::thread::yield_now();
        return;
    };
    // A queue of one: the running task itself (`nr_running` counts it, and
    // any delayed entity, so a delayed one takes the full switch). Tested
    // here, from the task's own worker index, so that a yield among others
    // pays a few loads and nothing else.
    if me.shared.workers[me.cpu()].nr_running() <= 1 && lone_yield(me) {
        return;
    }
    // SAFETY: `me` is `tls::current()`, read above; `lone_yield` returned
    // `false`, so it made no switch.
    unsafe { crate::task::switch_out_of(me, Switch::Yield) };
}

/// The yield of a green thread alone on its worker (see [`yield_now`]):
/// returns `false` if it must switch after all (it is no longer the
/// worker's owner, a flag is set, the runtime shuts down, or something was
/// queued meanwhile). Counts the yield only when it is done here (a switch
/// counts it in the scheduler).
#[inline(never)]
fn lone_yield(me: &crate::task::Tcb) -> bool {
    let Some((sh, i, own)) = tls::worker_own() else {
        return false;
    };
    let w = &sh.workers[i];
    if w.flags() != 0 || w.own.load() != own || w.nr_running() > 1 || sh.is_shutdown() {
        return false;
    }
    // What the worker checks after every switch.
    // SAFETY: `me` is the running green thread, on its own stack.
    unsafe { me.check_own_stack() };
    if w.event_due(clock::now()) {
        // Serve the due tick, timer or poll as a preemption point does; a
        // switch it decides is made as this yield.
        if preempt_slow_as(Some(Switch::Yield)) {
            return true;
        }
    } else if sh.uring.is_some() {
        crate::io::uring::at_preempt_point(sh);
        // A completion may have woken a task here: then yield to it.
        if w.nr_running() > 1 || w.flags() != 0 {
            return false;
        }
    }
    // Still this worker's owner here (no switch was made).
    w.stats.inc(crate::stats::Counter::yields);
    true
}

/// Honours a pending reschedule — the analogue of the kernel's
/// `cond_resched()` for long CPU loops — and serves the worker's
/// clock-driven duties that have come due: its tick, the HRTICK end of the
/// running task's protection or slice, its timers, and a paced poll of the
/// I/O reactor. Costs one relaxed load of the worker's flags and one read
/// of the cheap clock (`rdtsc` where available) when nothing is due.
/// Preemption is cooperative: a green thread that never reaches a
/// preemption point (this, or any runtime call that can block or wake)
/// keeps its worker. A no-op on OS threads.
///
/// ```
/// // A CPU-bound loop that lets a short-slice task in between its units.
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let sum = rt.block_on(|| {
///     let mut sum = 0u64;
///     for i in 0..100_000u64 {
///         sum = sum.wrapping_add(i * i);
///         if i % 1_000 == 0 {
///             eevdf_rt::preempt_point();
///         }
///     }
///     sum
/// });
/// assert_eq!(sum, (0..100_000u64).map(|i| i * i).sum::<u64>());
/// ```
///
/// Called inside a future's poll (under [`block_on_future`](crate::block_on_future)),
/// it still switches when one is due: the caller asked for it. The
/// runtime's own preemption points in spawns, wakes and I/O polls do not
/// switch there (see `block_on_future`).
#[inline]
pub fn preempt_point() {
    preempt_point_inner(None, true);
}

/// [`preempt_point`], checking the clock-driven duties against `now` if
/// given: a clock reading the calling runtime operation made a moment ago
/// (a wake's or a spawn's, taken just before its run-queue lock), which
/// saves reading the clock again. A reading made late by a contended lock
/// only defers a duty that fell due meanwhile to the next preemption
/// point; it never serves one early.
#[inline]
pub(crate) fn preempt_point_at(now: Option<u64>) {
    preempt_point_inner(now, false);
}

/// `explicit`: the user's own [`preempt_point`], which switches even inside
/// a future's poll.
#[inline]
fn preempt_point_inner(now: Option<u64>, explicit: bool) {
    if let Some((sh, i, own)) = tls::worker_own() {
        let w = &sh.workers[i];
        // `own` differs from the word only if the worker was handed to
        // another thread while this green thread ran (worker::handoff).
        if w.flags() != 0 || w.own.load() != own || w.event_due(now.unwrap_or_else(clock::now)) {
            // Not inside a future's poll (`future`, "No switch inside a
            // poll"): its executor passes a preemption point between polls.
            if explicit || !crate::future::polling_now() {
                preempt_slow();
            }
        } else if sh.uring.is_some() {
            // I/O hook (io_uring driver): completions that arrived while
            // this green thread ran are delivered now, not at the next tick.
            crate::io::uring::at_preempt_point(sh);
        }
    } else {
        // Not on a worker: an OS thread, or a green thread that shutdown
        // unwinds, which may owe a deferred cancellation.
        crate::task::raise_deferred_cancellation();
    }
}

/// Whether a preemption point here would take its slow path (a switch or
/// a duty is due), without taking it; `false` off the workers.
pub(crate) fn preempt_due() -> bool {
    match tls::worker_own() {
        Some((sh, i, own)) => {
            let w = &sh.workers[i];
            w.flags() != 0 || w.own.load() != own || w.event_due(clock::now())
        }
        None => false,
    }
}

#[cold]
#[inline(never)]
fn preempt_slow() {
    preempt_slow_as(None);
}

/// [`preempt_slow`], making a switch it decides as `instead` if given (a
/// lone yield's: the switch then counts and charges as the yield it is).
/// Returns whether it switched.
fn preempt_slow_as(instead: Option<Switch>) -> bool {
    let Some((sh, w)) = tls::this_worker() else {
        return false;
    };
    let Some(me) = tls::current() else {
        return false;
    };
    // Come back into the runtime as the worker's owner (worker::owner), or
    // learn that the worker was handed to another thread: then switch back
    // to this thread's scheduler loop, which gives this green thread back.
    let own = tls::own();
    if own & 1 == 0 {
        // Already in the runtime: a preemption point reached from inside
        // this slow path (a waker it ran called one). Nothing to do.
        return false;
    }
    let stolen = w.stolen_during(own);
    let Some(v) = w.own.leave(own) else {
        let why = Switch::Preempt {
            tick: false,
            now: 0,
        };
        // SAFETY: `me` is `tls::current()`, read above, with no switch since.
        unsafe { crate::task::switch_out_of(me, why) };
        return true;
    };
    tls::set_own(v);
    match preempt_owned(sh, w, stolen) {
        Some(why) => {
            // SAFETY: as above (`preempt_owned` runs wakers; it never
            // switches).
            unsafe { crate::task::switch_out_of(me, instead.unwrap_or(why)) };
            true
        }
        // Back into the task's stretch.
        None => {
            tls::set_own(w.own.enter(v));
            false
        }
    }
}

/// The slow path of a preemption point, as the worker's owner: returns the
/// switch to make, if any.
/// `stolen`: steal time measured during the stretch that just ended, left
/// uncharged (`worker::handoff`, "Steal time").
fn preempt_owned(
    sh: &crate::shared::Shared,
    w: &crate::worker::Worker,
    mut stolen: u64,
) -> Option<Switch> {
    let mut now = clock::now();
    // I/O first: the readiness it dispatches may land on this worker's
    // queue or wakelist, and is then handled below. The time away in an
    // OS_YIELD yield is left uncharged, like steal time.
    if let Some(y) = crate::worker::run::busy_poll(sh, w, now) {
        stolen += y.away;
        now = y.now;
    }
    let flags = w.flags_acquire();
    if flags & RECHECK != 0 {
        w.clear_flags(RECHECK);
    }
    let d = &w.deadlines;
    let tick_due = now >= d.next_tick.load(Ordering::Relaxed);
    let hrtick_due = now >= w.preempt_at.load(Ordering::Relaxed);
    // Due timers are fired by the scheduler: switch so it runs. [D] The
    // kernel fires them from an interrupt; a cooperative runtime switches
    // at the next preemption point instead.
    let timer_due = now >= w.next_timer.load(Ordering::Relaxed);
    let mut switch = flags & RESCHED != 0 || timer_due;
    if flags & WAKELIST == 0 && !tick_due && !hrtick_due && stolen == 0 {
        // Nothing to change in the queue: just plan the next look.
        w.refresh_next_event();
        return switch.then_some(Switch::Preempt { tick: false, now });
    }
    let mut tick = false;
    let queued = {
        let mut rq = w.lock_rq(sh, now);
        if stolen > 0 {
            rq.q.forgive_current(stolen, now);
            // Charge the rest, so that the HRTICK deadline the guard arms
            // counts from an up-to-date vruntime.
            if rq.q.charge_current(now) {
                switch = true;
            }
        }
        if flags & WAKELIST != 0 {
            // Remote wakeups queued for us while we run: enqueue them now
            // (the kernel does this in the reschedule IPI) so they compete
            // at once.
            switch |= crate::worker::run::drain_wakelist(sh, w, &mut rq, now);
        }
        if tick_due {
            d.next_tick
                .store(now + sh.config.tick.as_nanos() as u64, Ordering::Relaxed);
        }
        // The tick's rules run at a tick and when HRTICK's horizon passes.
        if (tick_due || hrtick_due) && rq.q.tick(now) && !switch {
            tick = true;
            switch = true;
        }
        if switch {
            // we switch below: no preemption timer to arm for this task
            rq.request_resched();
        }
        rq.q.nr_queued()
        // the guard publishes, arms HRTICK and recomputes next_event
    };
    if tick_due {
        crate::worker::handoff::watch_peers(sh, w, now);
    }
    if tick_due && sh.feature(Feature::NewidleBalance) {
        crate::wake::balance::kick_idle_for_balance(sh, w, queued, now);
    }
    // WA_STALE: take the next task of a worker that stopped serving its
    // queue; it competes here (and may preempt us) instead of waiting there.
    if tick_due && !switch && crate::wake::balance::pull_from_stale(sh, w, now) {
        switch = true;
    }
    switch.then_some(Switch::Preempt { tick, now })
}

/// Sleeps for `d`: the green thread blocks and a timer on its worker wakes
/// it (an ordinary wakeup: placement and delayed dequeue apply). On an OS
/// thread: `std::thread::sleep`.
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let slept = rt.block_on(|| {
///     let t = Instant::now();
///     eevdf_rt::sleep(Duration::from_millis(5)); // parks this green thread only
///     t.elapsed()
/// });
/// // (a millisecond of slack for a clock that NTP is slewing)
/// assert!(slept + Duration::from_millis(1) >= Duration::from_millis(5));
/// ```
pub fn sleep(d: Duration) {
    if tls::current().is_none() {
        std::thread::sleep(d);
        return;
    }
    // Deadlines stay far below the clock's end: longer sleeps go a year at
    // a time.
    const YEAR: Duration = Duration::from_secs(3600 * 24 * 365);
    let mut left = d;
    loop {
        let step = left.min(YEAR);
        // The deadline is a reading of the runtime's clock plus the step,
        // not an `Instant` converted to it.
        sleep_green_until(clock::now().saturating_add(step.as_nanos() as u64));
        left -= step;
        if left.is_zero() {
            return;
        }
    }
}

/// Blocks the current green thread until the runtime's clock reads `dl`
/// (its callers have checked that they run on one).
fn sleep_green_until(dl: u64) {
    // `Some(true)`: woken before the deadline (spurious), so park again.
    while waiter::park_green_until(dl) == Some(true) {}
}

/// Sleeps until `deadline` (returns at once if it has passed).
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let deadline = Instant::now() + Duration::from_millis(3);
/// rt.block_on(move || eevdf_rt::sleep_until(deadline));
/// // (a millisecond of slack for a clock that NTP is slewing)
/// assert!(Instant::now() + Duration::from_millis(1) >= deadline);
/// ```
pub fn sleep_until(deadline: Instant) {
    if tls::current().is_none() {
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        }
        return;
    }
    sleep_green_until(clock::from_instant(deadline));
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
///
/// ```
/// use std::time::{Duration, Instant};
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// // Wait for a flag, but give up at a deadline. Returns may be
/// // spurious, so the loop checks both.
/// let flag = std::sync::atomic::AtomicBool::new(false);
/// let got_it = rt.block_on(move || {
///     let deadline = Instant::now() + Duration::from_millis(2);
///     loop {
///         if flag.load(std::sync::atomic::Ordering::Acquire) {
///             return true;
///         }
///         let left = deadline.saturating_duration_since(Instant::now());
///         if left.is_zero() {
///             return false;
///         }
///         eevdf_rt::park_timeout(left); // nobody unparks us here
///     }
/// });
/// assert!(!got_it);
/// ```
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
    if !waiter::park(|| token.load(std::sync::atomic::Ordering::SeqCst), deadline) {
        // Timed out: a token that an `unpark` leaves from now on is for the
        // next park, as with std's (erasing it here could lose that wakeup).
        return;
    }
    // Woken by the token: consume it, with a read-modify-write, which
    // reads the unparker's store and so sees what it wrote before.
    // Re-fetch: we may run on another worker now (the task is the same).
    if let Some(me) = tls::current() {
        me.unpark_token
            .swap(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The calling green thread's handle.
///
/// # Panics
/// Outside a green thread (see [`try_current`]).
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let h = rt.spawn(|| eevdf_rt::current().id());
/// let id = h.task().id();
/// assert_eq!(h.join().unwrap(), id);
/// ```
pub fn current() -> Task {
    try_current().expect("eevdf_rt::current called outside a green thread")
}

/// The calling green thread's handle, or `None` on an OS thread.
///
/// ```
/// assert!(eevdf_rt::try_current().is_none());
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// assert!(rt.block_on(|| eevdf_rt::try_current().is_some()));
/// ```
pub fn try_current() -> Option<Task> {
    tls::current_ref().map(|tcb| Task { tcb })
}

/// Whether the caller is a green thread.
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// assert!(!eevdf_rt::in_green_thread());
/// assert!(rt.block_on(eevdf_rt::in_green_thread));
/// ```
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
    let old = me.nice();
    with_own_entity(|rq, slot, now| {
        rq.q.reweight(slot, nice, now)?;
        if nice > old {
            // Less share now: let EEVDF decide whether we still run (the
            // kernel's prio_changed_fair reschedules a running task that
            // got a lower priority).
            rq.request_resched();
        }
        Ok::<(), Error>(())
    })?;
    // Re-fetched: the call may have moved this green thread to another worker.
    let me = tls::current().expect("still a green thread");
    let custom = me.custom_slice();
    me.set_mirrors(nice, (custom != 0).then_some(custom));
    // The runtime's own point: no switch inside a future's poll.
    preempt_point_at(None);
    Ok(())
}

/// Sets the calling green thread's slice (its latency request), 100 µs ..= 100 ms.
///
/// ```
/// use std::time::Duration;
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// rt.block_on(|| {
///     eevdf_rt::set_slice(Duration::from_micros(200)).unwrap();
///     assert_eq!(eevdf_rt::current().slice(), Duration::from_micros(200));
///     assert!(eevdf_rt::set_slice(Duration::from_micros(10)).is_err()); // below 100 µs
/// });
/// assert!(eevdf_rt::set_slice(Duration::from_millis(1)).is_err()); // not a green thread
/// ```
pub fn set_slice(slice: Duration) -> Result<(), Error> {
    tls::current().ok_or(Error::NotGreenThread { call: "set_slice" })?;
    let ns = check_slice(slice.as_nanos().min(u64::MAX as u128) as u64)?;
    // the guard re-arms HRTICK for the new slice
    with_own_entity(|rq, slot, now| rq.q.set_slice(slot, Some(ns), now))?;
    // Re-fetched: the call may have moved this green thread to another worker.
    let me = tls::current().expect("still a green thread");
    me.set_mirrors(me.nice(), Some(ns));
    // The runtime's own point: no switch inside a future's poll.
    preempt_point_at(None);
    Ok(())
}

/// Runs `f` on the calling green thread's own entity, under its worker's
/// run-queue lock (the guard applies the follow-up steps). If the worker
/// was handed to another thread while this green thread ran
/// (`worker::handoff`), the green thread is not its current task any more:
/// it first goes back to a run queue, then tries again where it runs next.
fn with_own_entity<R>(
    mut f: impl FnMut(&mut crate::worker::RqGuard<'_>, crate::sched::Slot, u64) -> R,
) -> R {
    loop {
        let me = tls::current().expect("a green thread");
        let (sh, w) = tls::this_worker().expect("a green thread runs on a worker");
        let now = clock::now();
        {
            let mut rq = w.lock_rq(sh, now);
            if let Some(slot) = rq.q.curr() {
                if std::ptr::eq(&**rq.q.payload(slot), me) {
                    return f(&mut rq, slot, now);
                }
            }
        }
        switch_out(Switch::Preempt {
            tick: false,
            now: 0,
        });
    }
}
