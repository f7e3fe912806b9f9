//! The scheduling trace: every switch, wakeup, migration, steal, delayed
//! dequeue and preemption, recorded into per-worker lock-free rings while
//! [`Runtime::trace_start`](crate::Runtime::trace_start) is in effect, and
//! written as Chrome trace-event JSON ([`Trace`]) that Perfetto and
//! `chrome://tracing` open.
//!
//! Owns: the `Tracer` of a runtime (the on/off flag, one `ring::Ring`
//! per worker, a locked buffer for wakers outside the runtime, the task
//! names seen), and the hooks the switch and wake paths call. Must not:
//! cost anything when off — every hook is an inlined relaxed load of `on`
//! and a not-taken branch; the recording itself is out of line — nor
//! write a worker's ring from any thread but that worker's (the hooks take
//! the index of the worker whose thread calls them).
//!
//! # Where the hooks are
//!
//! `worker::run` (`schedule`, right after the pick: `switch_in`;
//! `handle_prev`: `switch_out_for`, `delayed_dequeue`), `wake` (`wake_task`:
//! `migrate`; `ttwu_runnable`,
//! `try_wakelist`, `ttwu_queue`: `wakeup`), `wake::balance` (`newidle`:
//! `steal`), `runtime::spawn` (`spawned`). Each is one call with the
//! `now` its path already read, where it has one; a wakeup that reads no
//! clock on its path reads it inside the (cold) recording, so only a
//! running trace pays for it.

pub(crate) mod json;
pub(crate) mod ring;

pub use json::{RunSlice, Trace};

use crate::context::{Resumed, Switch};
use crate::shared::Shared;
use crate::task::Tcb;
use crate::time::clock;
use crate::worker::tls;
use parking_lot::Mutex;
use ring::{Event, Ring};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Event kinds (`Event::kind`).
pub(crate) mod kind {
    /// A task starts running on the ring's worker.
    pub(crate) const SWITCH_IN: u8 = 1;
    /// A task stops running on the ring's worker (`arg`: `out::*`).
    pub(crate) const SWITCH_OUT: u8 = 2;
    /// The ring's thread woke `task` onto worker `aux` (`arg`: `how::*`; `other`: the waker task or 0).
    pub(crate) const WAKEUP: u8 = 3;
    /// Wake placement moved `task` from worker `other` to worker `aux`.
    pub(crate) const MIGRATE: u8 = 4;
    /// The ring's worker stole `task` from worker `aux`.
    pub(crate) const STEAL: u8 = 5;
    /// `task` blocked while ineligible and stays queued (delayed dequeue).
    pub(crate) const DELAYED_DEQUEUE: u8 = 6;
}

/// How a wakeup reached its task (`Event::arg` of a wakeup).
pub(crate) mod how {
    /// Enqueued under the waker's own worker's lock.
    pub(crate) const LOCAL: u8 = 0;
    /// Enqueued under a remote worker's lock.
    pub(crate) const INLINE: u8 = 1;
    /// Pushed on the target's wakelist.
    pub(crate) const WAKELIST: u8 = 2;
    /// Still queued (delayed, or not yet switched out): made runnable in place.
    pub(crate) const IN_PLACE: u8 = 3;
    /// A delayed task handed to its owner's wakelist (TTWU_QUEUE_DELAYED).
    pub(crate) const DELAYED_WAKELIST: u8 = 4;
    /// Names, by code.
    pub(crate) const NAMES: [&str; 5] = [
        "local",
        "inline",
        "wakelist",
        "in place",
        "delayed wakelist",
    ];
}

/// Why a task stopped running (`Event::arg` of a switch-out).
pub(crate) mod out {
    /// It yielded.
    pub(crate) const YIELD: u8 = 0;
    /// It blocked (slept, waited).
    pub(crate) const BLOCK: u8 = 1;
    /// It exited.
    pub(crate) const EXIT: u8 = 2;
    /// Preempted at a tick.
    pub(crate) const TICK: u8 = 3;
    /// Preempted at its HRTICK deadline (protection or slice end).
    pub(crate) const HRTICK: u8 = 4;
    /// Preempted by a wakeup (or another reschedule request).
    pub(crate) const WAKEUP: u8 = 5;
    /// Its worker was handed off (`worker::handoff`): the task runs on, on
    /// the thread it had, beside the worker's new thread, until it next
    /// reaches the runtime; that is no longer the worker's time, so the
    /// worker's track ends the run here (the task's `run_time` counts all).
    pub(crate) const HANDOFF: u8 = 6;
    /// Names, by code.
    pub(crate) const NAMES: [&str; 7] = [
        "yield",
        "block",
        "exit",
        "preempt: tick",
        "preempt: HRTICK",
        "preempt: wakeup",
        "hand-off",
    ];
}

/// A runtime's trace state.
pub(crate) struct Tracer {
    /// Whether a trace is being recorded (the one load every hook pays).
    on: AtomicBool,
    /// One ring per worker, written only by that worker's thread.
    rings: Box<[crossbeam_utils::CachePadded<Ring>]>,
    /// Events of wakers outside the runtime (any thread; rare): at most
    /// the session's capacity; later ones are counted in `external_lost`.
    external: Mutex<Vec<Event>>,
    /// The session's per-track capacity, for `external`.
    external_cap: AtomicUsize,
    /// External events left out because `external` was full.
    external_lost: AtomicU64,
    /// When the running session started (its events are not older).
    started_at: AtomicU64,
    /// Names of the tasks seen in this session.
    names: Mutex<Vec<(u64, Box<str>)>>,
    /// The session number (a task records its name once per session).
    epoch: AtomicU32,
    /// When the session started, and its per-worker capacity.
    session: Mutex<Option<(u64, usize)>>,
}

/// Per-task trace state in the task control block.
#[derive(Debug, Default)]
pub(crate) struct TaskMark {
    /// The last session in which the task's name was recorded.
    epoch: AtomicU32,
}

/// The largest per-worker capacity `trace_start` accepts.
pub const MAX_CAPACITY: usize = 1 << 24;

/// Bytes of memory one event of a ring takes: `trace_start(capacity)`
/// allocates `capacity × EVENT_BYTES` per worker when it is called.
///
/// ```
/// assert_eq!(eevdf_rt::trace::EVENT_BYTES, 32);
/// ```
pub const EVENT_BYTES: usize = std::mem::size_of::<Event>();

impl Tracer {
    pub(crate) fn new(workers: usize) -> Self {
        Tracer {
            on: AtomicBool::new(false),
            rings: (0..workers)
                .map(|_| crossbeam_utils::CachePadded::new(Ring::new()))
                .collect(),
            external: Mutex::new(Vec::new()),
            external_cap: AtomicUsize::new(0),
            external_lost: AtomicU64::new(0),
            started_at: AtomicU64::new(0),
            names: Mutex::new(Vec::new()),
            epoch: AtomicU32::new(0),
            session: Mutex::new(None),
        }
    }

    /// Whether a trace is being recorded.
    #[inline(always)]
    pub(crate) fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Starts (or restarts, discarding) a session of `capacity` events per worker.
    pub(crate) fn start(&self, capacity: usize) -> Result<(), crate::Error> {
        if !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(crate::Error::invalid(
                "trace capacity",
                capacity,
                "1 ..= 16777216 events per worker",
            ));
        }
        // Every ring's memory first: a refusal changes nothing (a running
        // trace goes on) and is an error, not an abort.
        let refused = || crate::Error::OutOfMemory {
            what: "the trace rings",
            bytes: capacity
                .saturating_mul(EVENT_BYTES)
                .saturating_mul(self.rings.len()),
        };
        let mut fresh = Vec::new();
        fresh
            .try_reserve_exact(self.rings.len())
            .map_err(|_| refused())?;
        for _ in self.rings.iter() {
            fresh.push(Ring::try_slots(capacity).ok_or_else(refused)?);
        }
        let mut session = self.session.lock();
        self.on.store(false, Ordering::SeqCst);
        for (r, slots) in self.rings.iter().zip(fresh) {
            r.reset(slots);
        }
        self.external.lock().clear();
        self.external_cap.store(capacity, Ordering::Relaxed);
        self.external_lost.store(0, Ordering::Relaxed);
        self.names.lock().clear();
        self.epoch.fetch_add(1, Ordering::Relaxed);
        let now = clock::now();
        self.started_at.store(now, Ordering::Relaxed);
        *session = Some((now, capacity));
        // Publishes the new slots (ring module comment).
        self.on.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Stops the session and collects it (empty if none was running).
    pub(crate) fn stop(&self) -> Trace {
        let mut session = self.session.lock();
        self.on.store(false, Ordering::SeqCst);
        let Some((start, _)) = session.take() else {
            return Trace::empty(self.rings.len());
        };
        let mut dropped = 0;
        let mut tracks = Vec::with_capacity(self.rings.len() + 1);
        for r in self.rings.iter() {
            let (events, lost) = r.take();
            dropped += lost;
            tracks.push(events);
        }
        tracks.push(std::mem::take(&mut *self.external.lock()));
        dropped += self.external_lost.swap(0, Ordering::Relaxed);
        let names = std::mem::take(&mut *self.names.lock());
        Trace::new(
            start,
            clock::now(),
            tracks,
            names.into_iter().collect(),
            dropped,
        )
    }

    /// Records `ev` from the thread of worker `worker` (`None`: outside).
    #[cold]
    #[inline(never)]
    fn record(&self, worker: Option<usize>, ev: Event) {
        match worker {
            Some(i) => {
                if !self.rings[i].record(&self.on, ev) && self.is_on() {
                    // The ring was busy with another writer (hand-off).
                    self.record_external(ev);
                }
            }
            None => {
                if self.is_on() {
                    self.record_external(ev);
                }
            }
        }
    }

    /// Adds `ev` to the external track, unless it holds the session's
    /// capacity already (then it is counted as dropped): a trace left
    /// running beside a busy outside waker stays bounded.
    fn record_external(&self, ev: Event) {
        let mut external = self.external.lock();
        // Checked again under the lock that `stop` takes: the caller's
        // `is_on` may predate a stop (the event would then stay here,
        // uncounted, until the next start cleared it) or a stop and a start
        // (it would join the new session with a time before it). A stop
        // stores `on` before it takes this lock, so we see it; the Acquire
        // reads a start's `on` with the `started_at` stored before it.
        if !self.on.load(Ordering::Acquire) || ev.ts < self.started_at.load(Ordering::Relaxed) {
            return;
        }
        if external.len() < self.external_cap.load(Ordering::Relaxed) {
            external.push(ev);
        } else {
            self.external_lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records `t`'s name once per session.
    #[cold]
    fn note_name(&self, t: &Tcb) {
        let epoch = self.epoch.load(Ordering::Relaxed);
        if t.trace.epoch.swap(epoch, Ordering::Relaxed) != epoch {
            if let Some(name) = t.name() {
                self.names.lock().push((t.id, name.into()));
            }
        }
    }
}

/// The waker's task id: the green thread running on this thread, or 0.
fn current_task_id() -> u64 {
    tls::current().map_or(0, |t| t.id)
}

/// Hook (`worker::run::pick`): `t` starts running on worker `w` at `now`.
#[inline(always)]
pub(crate) fn switch_in(sh: &Shared, w: usize, t: &Tcb, now: u64) {
    if sh.trace.is_on() {
        switch_in_slow(sh, w, t, now);
    }
}

#[cold]
#[inline(never)]
fn switch_in_slow(sh: &Shared, w: usize, t: &Tcb, now: u64) {
    sh.trace.note_name(t);
    sh.trace.record(
        Some(w),
        Event {
            // A fresh reading, not the switch's: `now` may be a preemption
            // point's reading from before the wakeups that this switch
            // serves (a local wake of the task it switches to, a wakelist
            // entry pushed by another worker), and the run must not appear
            // to start before the wakeup that caused it, or the export
            // ties that wakeup to the task's *next* run.
            ts: clock::now().max(now),
            task: t.id,
            kind: kind::SWITCH_IN,
            nice: t.nice() as i8,
            ..Event::default()
        },
    );
}

/// Hook (`worker::run::handle_prev`): `t` stopped running on worker `w`
/// at `now`, for `why` (`out::*`; see [`out_reason`]).
#[inline(always)]
pub(crate) fn switch_out(sh: &Shared, w: usize, t: &Tcb, why: u8, now: u64) {
    if sh.trace.is_on() {
        sh.trace.record(
            Some(w),
            Event {
                ts: now,
                task: t.id,
                kind: kind::SWITCH_OUT,
                arg: why,
                ..Event::default()
            },
        );
    }
}

/// Hook (`worker::run::handle_prev`): `t` switched out of worker `w` at
/// `now` for `why`. A tick preemption at or after the worker's armed
/// HRTICK deadline (the worker serves both through the tick's rules) counts
/// as HRTICK.
#[inline(always)]
pub(crate) fn switch_out_for(sh: &Shared, w: usize, t: &Tcb, why: &Resumed, now: u64) {
    if sh.trace.is_on() {
        let code = match why {
            Resumed::Finished => out::EXIT,
            Resumed::Switched(Switch::Preempt { tick: true, .. }) => {
                if sh.workers[w].preempt_at.load(Ordering::Relaxed) <= now {
                    out::HRTICK
                } else {
                    out::TICK
                }
            }
            Resumed::Switched(Switch::Preempt { tick: false, .. }) => out::WAKEUP,
            Resumed::Switched(Switch::Block | Switch::BlockUntil(_)) => out::BLOCK,
            Resumed::Switched(_) => out::YIELD,
        };
        switch_out(sh, w, t, code, now);
    }
}

/// The `how::*` code of an inline enqueue by `waker` onto `target`.
#[inline]
pub(crate) fn inline_how(waker: Option<usize>, target: usize) -> u8 {
    if waker == Some(target) {
        how::LOCAL
    } else {
        how::INLINE
    }
}

/// Hook (`worker::run::handle_prev`): `t` blocked on worker `w` but stays
/// queued (delayed dequeue).
#[inline(always)]
pub(crate) fn delayed_dequeue(sh: &Shared, w: usize, t: &Tcb, now: u64) {
    if sh.trace.is_on() {
        sh.trace.record(
            Some(w),
            Event {
                ts: now,
                task: t.id,
                kind: kind::DELAYED_DEQUEUE,
                ..Event::default()
            },
        );
    }
}

/// Hook (`wake`): the calling thread (worker `waker`, or outside the
/// runtime) woke `t` onto worker `target`, `how` (`how::*`), stamped now.
/// Only for a wakeup recorded while the wakee cannot run yet (under the
/// target's run-queue lock); one that is recorded after the wakee was
/// handed over takes its stamp before, with [`wakeup_stamp`] and
/// [`wakeup_at`], or the wakee's switch-in could carry an earlier stamp
/// than the wakeup that caused it.
#[inline(always)]
pub(crate) fn wakeup(sh: &Shared, waker: Option<usize>, t: &Tcb, how: u8, target: usize) {
    if sh.trace.is_on() {
        wakeup_slow(sh, waker, t, how, target, clock::now());
    }
}

/// The stamp of a wakeup about to be handed over (0 with tracing off).
#[inline(always)]
pub(crate) fn wakeup_stamp(sh: &Shared) -> u64 {
    if sh.trace.is_on() {
        clock::now()
    } else {
        0
    }
}

/// [`wakeup`] with the stamp `ts` that [`wakeup_stamp`] took before the
/// hand-over (nothing for 0: tracing was off then).
#[inline(always)]
pub(crate) fn wakeup_at(
    sh: &Shared,
    waker: Option<usize>,
    t: &Tcb,
    how: u8,
    target: usize,
    ts: u64,
) {
    if ts != 0 && sh.trace.is_on() {
        wakeup_slow(sh, waker, t, how, target, ts);
    }
}

#[cold]
#[inline(never)]
fn wakeup_slow(sh: &Shared, waker: Option<usize>, t: &Tcb, how: u8, target: usize, ts: u64) {
    sh.trace.record(
        waker,
        Event {
            ts,
            task: t.id,
            other: current_task_id(),
            aux: target as u16,
            kind: kind::WAKEUP,
            arg: how,
            ..Event::default()
        },
    );
}

/// Hook (`wake::wake_task`): placement moved `t` from worker `from` to `to`.
#[inline(always)]
pub(crate) fn migrate(sh: &Shared, waker: Option<usize>, t: &Tcb, from: usize, to: usize) {
    if sh.trace.is_on() {
        sh.trace.record(
            waker,
            Event {
                ts: clock::now(),
                task: t.id,
                other: from as u64,
                aux: to as u16,
                kind: kind::MIGRATE,
                ..Event::default()
            },
        );
    }
}

/// Hook (`wake::balance::newidle`): worker `w` stole `t` from worker `from` at `now`.
#[inline(always)]
pub(crate) fn steal(sh: &Shared, w: usize, t: &Tcb, from: usize, now: u64) {
    if sh.trace.is_on() {
        sh.trace.record(
            Some(w),
            Event {
                ts: now,
                task: t.id,
                aux: from as u16,
                kind: kind::STEAL,
                ..Event::default()
            },
        );
    }
}

/// Hook (`runtime::spawn`): `t` was spawned (its name is recorded now, as
/// it may exit before its name would otherwise be noted).
#[inline(always)]
pub(crate) fn spawned(sh: &Shared, t: &Tcb) {
    if sh.trace.is_on() {
        sh.trace.note_name(t);
    }
}
