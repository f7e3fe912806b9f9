//! Hand-off: a worker stuck in one green thread is given to another OS
//! thread, so the rest of its run queue keeps running.
//!
//! Owns: the monitor thread that looks for stuck workers, the takeover
//! (under the stuck worker's run-queue lock), the pool of standby OS
//! threads that run taken-over workers, and what a thread does when it
//! finds out it was taken over (`detach`). Must not: switch green threads
//! from a signal handler or from another thread (the stuck thread keeps
//! its green thread until that thread reaches the runtime again), or sit
//! on any wakeup's path (a wakeup, timer or readiness never waits for the
//! monitor; only a worker that stopped serving them does).
//!
//! # Why
//!
//! Preemption in this runtime is cooperative: a green thread gives up its
//! worker only at a preemption point or a runtime call that blocks. One
//! that calls a plain blocking function (`std::thread::sleep`, `std::fs`,
//! a `std::sync::Mutex`, DNS) or spins without preemption points holds its
//! worker's OS thread, and every other task queued on that worker waits.
//!
//! # Design
//!
//! A worker's *identity* — its run queue, timers, wakelist, CPU — is
//! separate from the OS thread that runs it; the ownership word
//! (`worker::owner`) says which thread that is and whether it is inside a
//! green thread.
//!
//! * **Detection.** A worker is stuck when its ownership word has shown
//!   the same odd value (one stretch inside one green thread, without even
//!   a preemption point's slow path) for the threshold *and* something is
//!   waiting for it: another queued task, a wakelist entry, or a due
//!   timer. A worker that runs a lone task for a long time is left alone.
//!   The monitor looks at every worker every half threshold while some
//!   worker with work waiting has stayed in one stretch since the previous
//!   look, and every two thresholds while work waits but every worker
//!   moves on, so a stall is found within about four thresholds. While no
//!   work waits it backs off to 10 ms.
//! * **Workers watch each other.** Every look is a wakeup of the monitor
//!   thread on a CPU that a worker is using, and each one can delay the
//!   kernel's wakeup of some other thread there until the next kernel
//!   tick (a thread that wakes, runs a few microseconds and sleeps again
//!   stays on the kernel's run queue as a delayed entity, and a wakee
//!   that is not the kernel's EEVDF pick at once does not preempt). At
//!   250 looks a second, that was most of the tail of
//!   `examples/latency_service`. So busy workers do the watching
//!   themselves ([`watch_peers`]): at its tick each worker records that it
//!   watches (`Worker::watched_at`) and checks the next [`WATCHED_PEERS`]
//!   workers by index for a stall — inside a green thread, no preemption
//!   point's slow path for the threshold, work waiting. While every worker
//!   has a watcher that watched within three ticks, the monitor *dozes*:
//!   it sleeps on a dead-man switch (`sys::DeadMan`, a timerfd the
//!   watching workers push back by two thresholds about once a threshold
//!   between them, and an eventfd). The doze ends when a worker sees a
//!   stalled peer or finds that none of its own watchers watches any
//!   more, when a worker goes idle ([`stop_watching`]), or when the timer
//!   fires because no worker watched for two thresholds (all stalled at
//!   once); the monitor then looks as above and does not doze again for
//!   [`ATTENTIVE`]. A stall is found within about a tick plus three
//!   thresholds, as before; a busy two-worker runtime wakes the monitor
//!   about 15 times a second instead of 250. A lone worker has no
//!   watcher, but its own watch pushes the dead-man switch back, so the
//!   monitor dozes beside it too and looks when the switch fires.
//! * **Takeover.** Under the worker's run-queue lock the monitor claims the
//!   ownership word (`Ownership::take`), dequeues the stuck green thread as
//!   a migration does (its lag and remaining request are kept) and marks
//!   it `handed_off`; then it hands the worker to a standby thread (a
//!   parked one, or a new one up to [`MAX_EXTRA_THREADS`]). The standby
//!   pins itself to the worker's CPU and runs the ordinary worker loop.
//!   The kernel now time-slices the two OS threads on that CPU: the stuck
//!   one gets its share (nothing is lost, it just runs beside the rest),
//!   the others run again.
//! * **Return.** The old thread still runs the green thread. At its next
//!   runtime step — a preemption point, a blocking call, its exit — its
//!   ownership check fails (`Ownership::leave`, or the preemption point's
//!   comparison of the word with its thread-local value), the green thread
//!   switches back to the old thread's scheduler loop, and [`detach`] gives
//!   it back: an exit completes, a block stays blocked (a timed block arms
//!   its timer on the worker), anything else is woken through the ordinary
//!   wake path, which places it on a worker. Then the old thread becomes a
//!   standby itself.
//!
//! # The kernel's share of the CPU
//!
//! After a takeover two OS threads share the worker's CPU, and the kernel's
//! EEVDF decides between them: each gets half of it over time, whoever
//! runs. What matters for latency is *when* the new owner runs after a
//! wakeup. So a thread that takes a worker over asks the kernel for a
//! short slice, [`TAKEOVER_KERNEL_SLICE`] (`sched_setattr` with
//! `sched_runtime`: a custom slice of the fair class since Linux 6.12, no
//! privilege needed): with a shorter request than the stuck thread, its
//! wakeups preempt it (the kernel's PREEMPT_SHORT) and its deadlines come
//! first, at the same share. The short slice lasts while the two threads
//! contend: when the stuck thread gives its green thread back
//! ([`detach`]), it returns the new owner to the kernel's default slice
//! (`sched_setattr` takes any thread of the process), and if it gets there
//! before the new owner has taken its seat, the new owner does not ask for
//! the short slice at all. The two meet under the worker's
//! `takeover_slice` lock, keyed by the ownership value the takeover handed
//! out. A thread that goes back to standby with the short slice still set
//! (its own stuck predecessor never came back) returns to the default too.
//! On older kernels, and for real-time threads, the call changes nothing
//! and the hand-off works the same.
//!
//! # Safety argument
//!
//! * *One owner.* The ownership word admits one owner at a time (see
//!   `worker::owner`): the monitor's claim and the old owner's return are
//!   read-modify-writes of one word, and the monitor only claims a value
//!   the old owner has not left. The old thread checks the word before any
//!   step that touches the worker as its owner (its scheduler loop after
//!   every resume, the preemption point's slow path, `set_nice` and
//!   `set_slice`, which check that they are still the current task), and
//!   the claim is made under the run-queue lock, so by the time the old
//!   thread takes that lock the takeover's dequeue is complete.
//! * *One runner per green thread.* The stuck green thread is off every
//!   run queue from the takeover on, with its entity saved, `state`
//!   `RUNNING` and `on_cpu` set. Wakers of a running task return early; if
//!   it blocks, a waker claims it (`WAKING`) and, seeing `handed_off`,
//!   does not take the wakelist shortcut (which assumes that the worker
//!   draining the list is the one switching the task out) but waits for
//!   `on_cpu` to clear, which the old thread does only after the context
//!   is saved. So no worker can resume it before the old thread has let go.
//! * *Lost wakeups.* None are introduced: the stuck green thread's own
//!   blocks and wakes follow the wake protocol unchanged, and the detach
//!   path's requeue is an ordinary `wake_task` (exactly one of it and any
//!   racing waker enqueues the task).
//!
//! What the old thread may still do to the worker while it runs detached
//! is limited to what any thread may do: its wakes and spawns go through
//! wakelists with kicks, like an outsider's (`wake::waker_index` checks
//! ownership), and a wake or spawn it made as owner just before the
//! takeover is covered by a kick of the worker when it detaches. Its counter increments may race with the new
//! owner's (counters are single-writer and may lose an increment then),
//! and its trace events go to the external track when the worker's ring
//! is busy.
//!
//! # Steal time
//!
//! The monitor reads the CPU time of each busy worker's owner thread at
//! every look anyway. Between two looks that found the same stretch (one
//! odd ownership value: one green thread, no preemption point's slow path),
//! wall time minus CPU time is time the host did not run the thread — a
//! vCPU preempted, another thread on the CPU, a blocking call. The monitor
//! publishes the sum for that stretch (`Worker::stolen_in`, `stolen_ns`),
//! and the owner, when it comes back into the runtime from exactly that
//! stretch, leaves it uncharged (`RunQueue::forgive_current`), as the
//! kernel's `rq_clock_task` leaves out steal time. Without it, a green
//! thread running when the host stalls its worker for milliseconds is
//! charged the whole stall, and then waits, ineligible, at its next
//! wakeup. Stalls shorter than the monitor's period are not seen.
//!
//! # I/O
//!
//! A detaching thread cancels what is in flight on its io_uring ring and
//! reaps it; the green threads waiting on those operations resubmit on the
//! ring of the worker they run on next (a cancelled network operation has
//! transferred nothing). Operations on the ring of a thread that is stuck
//! complete when it comes back: with `SINGLE_ISSUER`/`DEFER_TASKRUN` only
//! that thread can reap them. Their timeouts wait for it too, and a green
//! thread whose operation is on that ring cannot help the stuck call end
//! (the README's Limits say so to users).

use super::{tls, Worker, RECHECK};
use crate::context::{Resumed, Switch};
use crate::sched::{Dequeue, DequeueFlags};
use crate::shared::Shared;
use crate::stats::Counter;
use crate::task::state::{BLOCKED, DEAD, RUNNING};
use crate::task::TaskRef;
use crate::time::clock;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The most OS threads the hand-off adds beyond the workers. A hand-off
/// that would need more is not made (the stuck worker waits, as it would
/// without hand-off).
pub const MAX_EXTRA_THREADS: usize = 256;

/// Default hand-off threshold: how long a worker may stay inside one green
/// thread, while other work waits for it, before it is handed off.
pub(crate) const DEFAULT_THRESHOLD: Duration = Duration::from_millis(2);

/// The kernel slice (ns) of a thread that took a worker over: 0.1 ms, the
/// kernel's minimum (module docs, "The kernel's share of the CPU").
pub(crate) const TAKEOVER_KERNEL_SLICE: u64 = 100_000;

/// Which thread of a worker runs with the short kernel slice of a
/// takeover, for the stuck thread to end it when it gives its green thread
/// back (module docs, "The kernel's share of the CPU"). Keyed by the
/// ownership value the takeover handed out, so that the stuck thread and
/// the new owner meet in either order.
#[derive(Default)]
pub(crate) struct TakeoverSlice {
    /// The new owner's starting ownership value.
    word: u64,
    /// Its thread id (0: none has the short slice).
    tid: i32,
    /// The stuck thread came back before the new owner took its seat.
    ended: bool,
}

thread_local! {
    /// This runtime thread asked for the short kernel slice (and has not
    /// gone back to standby since). Only runtime threads' own stacks read
    /// it, never a green thread.
    static SHORT_SLICE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The stuck thread of a takeover of `w` that claimed ownership value
/// `taken` (odd) has given its green thread back: the new owner, which
/// started from `taken + 1`, goes back to the default kernel slice; if it
/// has not taken its seat yet, it will not ask for the short one.
fn end_takeover_slice(w: &Worker, taken: u64) {
    let mut s = w.takeover_slice.lock();
    if !s.ended && s.tid != 0 && s.word == taken + 1 {
        let _ = crate::sys::set_kernel_slice(s.tid, 0);
        *s = TakeoverSlice::default();
    } else if s.tid == 0 {
        *s = TakeoverSlice {
            word: taken + 1,
            tid: 0,
            ended: true,
        };
    }
}

/// The monitor's longest period while no work waits anywhere.
const MAX_PERIOD: Duration = Duration::from_millis(10);

/// The longest doze with a dead-man switch (a safety net: the switch
/// itself ends a doze two thresholds after the workers stop watching).
const DOZE_LIMIT: Duration = Duration::from_secs(1);

/// A worker watches if it did so within this many ticks.
const WATCH_TICKS: u32 = 3;

/// How many other workers each worker watches: the next ones by index
/// (so each worker has this many watchers, the previous ones), which keeps
/// a tick's watch O(1) however many workers there are.
const WATCHED_PEERS: usize = 2;

/// After a worker woke the monitor or a look found a worker in the same
/// stretch twice, the monitor does not doze for this long, so a workload
/// that keeps tripping the workers' test wakes it about as often as
/// without the watch, not more.
const ATTENTIVE: Duration = Duration::from_millis(20);

/// What a standby thread is asked to do next.
enum Assignment {
    /// Run worker `index`, owning its word from the even value `word`.
    Run { index: usize, word: u64 },
    /// The runtime shuts down.
    Exit,
}

/// A parked standby thread.
struct Seat {
    next: Mutex<Option<Assignment>>,
    cv: Condvar,
}

impl Seat {
    fn new() -> Self {
        Seat {
            next: Mutex::new(None),
            cv: Condvar::new(),
        }
    }

    fn give(&self, a: Assignment) {
        *self.next.lock() = Some(a);
        self.cv.notify_one();
    }

    fn wait(&self) -> Assignment {
        let mut g = self.next.lock();
        loop {
            if let Some(a) = g.take() {
                return a;
            }
            self.cv.wait(&mut g);
        }
    }
}

/// The runtime's hand-off state (in `Shared`; `None` when disabled).
pub(crate) struct HandOff {
    /// How long a worker may stay in one green thread while work waits (ns).
    threshold: u64,
    /// The CPU of each worker (by index modulo the length), if pinned.
    cores: std::sync::OnceLock<Vec<core_affinity::CoreId>>,
    /// Parked standby threads.
    standby: Mutex<Vec<Arc<Seat>>>,
    /// Every OS thread the hand-off started (joined at shutdown).
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// How many of them there are.
    extra: AtomicUsize,
    /// The monitor thread.
    monitor: Mutex<Option<JoinHandle<()>>>,
    /// Wakes the monitor early from a look's wait (shutdown; a doze is
    /// ended through the dead-man switch instead).
    sleep: (Mutex<bool>, Condvar),
    /// The monitor dozes (module docs, "Workers watch each other"): set by
    /// the monitor before it sleeps for a doze, cleared by the worker that
    /// wakes it (or by the monitor when it wakes).
    dozing: AtomicBool,
    /// The dead-man switch of a doze (`None` if the kernel refused a
    /// timerfd or eventfd: the monitor then never dozes).
    deadman: Option<crate::sys::DeadMan>,
    /// Until when (runtime clock, ns) the dead-man timer is armed, so that
    /// the watching workers re-arm it about once per half period between
    /// them, not at every tick.
    armed_until: AtomicU64,
    /// Source of `Tcb::handed_off` marks.
    marks: AtomicU32,
}

impl HandOff {
    /// Hand-off after `threshold`.
    pub(crate) fn new(threshold: Duration) -> Self {
        HandOff {
            threshold: threshold.as_nanos().min(u64::MAX as u128) as u64,
            cores: std::sync::OnceLock::new(),
            standby: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            extra: AtomicUsize::new(0),
            monitor: Mutex::new(None),
            sleep: (Mutex::new(false), Condvar::new()),
            dozing: AtomicBool::new(false),
            deadman: crate::sys::DeadMan::new().ok(),
            armed_until: AtomicU64::new(0),
            marks: AtomicU32::new(0),
        }
    }

    /// The monitor's shortest period between looks (ns): half the
    /// threshold, at least 0.1 ms.
    fn period(&self) -> u64 {
        (self.threshold / 2).max(100_000)
    }

    /// How long a doze lasts after the last worker's watch (ns): the
    /// monitor's period while work waits (two thresholds).
    fn deadman_after(&self) -> u64 {
        self.period() * 4
    }

    /// Records the workers' CPUs (empty: not pinned), at start.
    pub(crate) fn set_cores(&self, cores: Vec<core_affinity::CoreId>) {
        let _ = self.cores.set(cores);
    }

    /// OS threads started by hand-offs so far (standby or running).
    pub(crate) fn extra_threads(&self) -> usize {
        self.extra.load(Ordering::Relaxed)
    }

    /// Prepares the calling standby thread to run worker `w` (index
    /// `index`), taken over from a stuck thread and starting from ownership
    /// value `word`: pins it to the worker's CPU and, unless the stuck
    /// thread has already given its green thread back, asks the kernel for
    /// a [`TAKEOVER_KERNEL_SLICE`] (module docs, "The kernel's share of the
    /// CPU").
    fn take_seat(&self, w: &Worker, index: usize, word: u64) {
        self.pin(index);
        let mut s = w.takeover_slice.lock();
        if s.ended && s.word == word {
            // The stuck thread came back before this thread got here.
            *s = TakeoverSlice::default();
            return;
        }
        let tid = crate::sys::gettid();
        // Best effort: a real-time thread or a kernel without custom
        // slices keeps its default, and the hand-off works the same.
        if crate::sys::set_kernel_slice(tid, TAKEOVER_KERNEL_SLICE).is_ok() {
            SHORT_SLICE.with(|f| f.set(true));
            *s = TakeoverSlice {
                word,
                tid,
                ended: false,
            };
        }
    }

    /// Pins the calling thread to worker `index`'s CPU, if workers are pinned.
    fn pin(&self, index: usize) {
        if let Some(cores) = self.cores.get().filter(|c| !c.is_empty()) {
            core_affinity::set_for_current(cores[index % cores.len()]);
        }
    }
}

/// Starts the monitor thread (at runtime start, when hand-off is enabled).
pub(crate) fn start_monitor(sh: &Arc<Shared>) -> std::io::Result<()> {
    let Some(ho) = sh.handoff.as_ref() else {
        return Ok(());
    };
    let s = sh.clone();
    let h = std::thread::Builder::new()
        .name(format!("{}-monitor", sh.config.name))
        .spawn(move || monitor_main(&s))?;
    *ho.monitor.lock() = Some(h);
    Ok(())
}

/// Stops the monitor and every standby thread, and joins them (shutdown,
/// after the shutdown flag is set). Threads still running a detached green
/// thread are joined when it reaches the runtime again.
pub(crate) fn shutdown(sh: &Shared) {
    let Some(ho) = sh.handoff.as_ref() else {
        return;
    };
    {
        let mut stop = ho.sleep.0.lock();
        *stop = true;
        ho.sleep.1.notify_all();
    }
    if let Some(dm) = &ho.deadman {
        dm.wake();
    }
    if let Some(h) = ho.monitor.lock().take() {
        let _ = h.join();
    }
    wake_standbys(ho);
}

/// Joins the threads the hand-off started (shutdown, after the workers'
/// original threads are joined).
pub(crate) fn join_threads(sh: &Shared) {
    let Some(ho) = sh.handoff.as_ref() else {
        return;
    };
    loop {
        wake_standbys(ho);
        let Some(h) = ho.threads.lock().pop() else {
            return;
        };
        let _ = h.join();
    }
}

fn wake_standbys(ho: &HandOff) {
    for seat in ho.standby.lock().drain(..) {
        seat.give(Assignment::Exit);
    }
}

/// What the thread of a taken-over worker does once its green thread is
/// back: waits as a standby until the monitor gives it a worker to run.
/// Returns that worker and the ownership value to start from, or `None`
/// at shutdown.
pub(crate) fn standby(sh: &Shared) -> Option<(usize, u64)> {
    let ho = sh.handoff.as_ref()?;
    let seat = Arc::new(Seat::new());
    {
        let mut pool = ho.standby.lock();
        // Checked under the pool lock, which `shutdown` takes after setting
        // the flag: either we see it, or it drains us.
        if sh.is_shutdown() {
            return None;
        }
        pool.push(seat.clone());
    }
    // If this thread ran a worker it had taken over, it no longer does:
    // back to the default slice (it was short only for that contention).
    if SHORT_SLICE.with(|f| f.replace(false)) {
        let _ = crate::sys::set_kernel_slice(crate::sys::gettid(), 0);
    }
    match seat.wait() {
        Assignment::Run { index, word } => {
            ho.take_seat(&sh.workers[index], index, word);
            Some((index, word))
        }
        Assignment::Exit => None,
    }
}

/// The monitor: finds stuck workers and hands them off.
fn monitor_main(sh: &Arc<Shared>) {
    let ho = sh.handoff.as_ref().expect("started only with hand-off");
    let period = Duration::from_nanos(ho.period());
    let mut seen: Vec<Seen> = (0..sh.workers.len()).map(|_| Seen::new(0)).collect();
    let mut wait = period;
    // Whether the last sleep was a doze, and until when not to doze again
    // after a worker woke the monitor or a look found a suspect.
    let mut doze = false;
    let mut attentive_until = 0u64;
    loop {
        let woken = match (&ho.deadman, doze) {
            (Some(dm), true) => {
                // Until the watching workers stop pushing the timer back, or
                // one of them ends the doze (`end_doze`); a worker that ended
                // it before this wait left the event set, so nothing is lost.
                if ho.dozing.load(Ordering::Acquire) {
                    dm.wait(DOZE_LIMIT);
                }
                let asked = !ho.dozing.swap(false, Ordering::AcqRel);
                if *ho.sleep.0.lock() || sh.is_shutdown() {
                    return;
                }
                asked
            }
            _ => {
                let mut stop = ho.sleep.0.lock();
                if !*stop {
                    ho.sleep.1.wait_for(&mut stop, wait);
                }
                if *stop || sh.is_shutdown() {
                    return;
                }
                false
            }
        };
        let now = clock::now();
        if woken {
            attentive_until = now + ATTENTIVE.as_nanos() as u64;
        }
        let mut waiting = false;
        let mut suspect = false;
        for (i, w) in sh.workers.iter().enumerate() {
            let v = w.own.load();
            let work = work_waits(w, now);
            waiting |= work;
            let s = &mut seen[i];
            if v & 1 == 0 {
                *s = Seen::new(v);
                continue;
            }
            let cpu = w.owner_cpu_time();
            if s.word != v {
                *s = Seen::new(v);
                s.since = now;
                s.last = (cpu, now);
                continue;
            }
            // The same stretch in one green thread since the last look:
            // the wall time its thread did not run is steal time.
            suspect |= work;
            let (cpu0, at) = s.last;
            s.last = (cpu, now);
            let stolen = now
                .saturating_sub(at)
                .saturating_sub(cpu.saturating_sub(cpu0));
            if stolen >= MIN_STEAL {
                s.stolen += stolen;
                w.stolen_ns.store(s.stolen, Ordering::Relaxed);
                w.stolen_in.store(v, Ordering::Release);
            }
            let first = *s.first.get_or_insert((cpu0, at));
            if !work || now.saturating_sub(s.since) < ho.threshold {
                continue;
            }
            if stuck(w, first.0, cpu, now.saturating_sub(first.1))
                && take_over(sh, ho, i, v, s.stolen)
            {
                *s = Seen::new(u64::MAX);
            }
        }
        if suspect {
            attentive_until = now + ATTENTIVE.as_nanos() as u64;
        }
        // Doze while every worker has a watcher, unless a stall was seen
        // lately; else look closely while a worker has stayed in one
        // stretch since the last look, every two thresholds while work
        // waits but every worker moves on, and back off while nothing
        // waits anywhere.
        doze = now >= attentive_until && all_watched(sh, now);
        wait = if suspect {
            period
        } else if waiting {
            period * 4
        } else {
            (wait * 2).min(MAX_PERIOD.max(period * 4))
        };
        // (`all_watched` holds only with a dead-man switch.)
        if let (true, Some(dm)) = (doze, &ho.deadman) {
            ho.armed_until
                .store(now + ho.deadman_after(), Ordering::Relaxed);
            dm.arm(Duration::from_nanos(ho.deadman_after()));
            ho.dozing.store(true, Ordering::Release);
        }
    }
}

/// How recently a worker must have watched to count as a watcher.
fn watch_window(sh: &Shared) -> u64 {
    (sh.config.tick * WATCH_TICKS)
        .as_nanos()
        .min(u64::MAX as u128) as u64
}

/// Whether worker `w` watched within the window before `now`.
fn watching(w: &Worker, now: u64, window: u64) -> bool {
    now.saturating_sub(w.watched_at.load(Ordering::Relaxed)) <= window
}

/// The workers that watch worker `i` (the previous [`WATCHED_PEERS`] by
/// index, itself excluded), or that `i` watches (`ahead`: the next ones).
fn peers(n: usize, i: usize, ahead: bool) -> impl Iterator<Item = usize> {
    (1..=WATCHED_PEERS.min(n.saturating_sub(1))).map(move |k| {
        if ahead {
            (i + k) % n
        } else {
            (i + n - k) % n
        }
    })
}

/// Whether every worker has a watcher that watched lately (the monitor
/// may doze); a lone worker counts if it watched itself lately. Never
/// without a dead-man switch.
fn all_watched(sh: &Shared, now: u64) -> bool {
    if sh.handoff.as_ref().is_none_or(|ho| ho.deadman.is_none()) {
        return false;
    }
    let n = sh.workers.len();
    let window = watch_window(sh);
    if n == 1 {
        // Nobody watches a lone worker, but its own watch pushes the
        // dead-man switch back: when it stalls, the switch fires.
        return watching(&sh.workers[0], now, window);
    }
    (0..n).all(|i| peers(n, i, false).any(|j| watching(&sh.workers[j], now, window)))
}

/// Ends the monitor's doze, if it dozes.
fn end_doze(ho: &HandOff) {
    if ho.dozing.load(Ordering::Relaxed) && ho.dozing.swap(false, Ordering::AcqRel) {
        if let Some(dm) = &ho.deadman {
            dm.wake();
        }
    }
}

/// Called by the owner of worker `w` at its tick (`now`): records that it
/// watches and, while the monitor dozes, wakes it if a worker it watches
/// looks stalled — inside a green thread, no preemption point's slow path
/// for the threshold, work waiting — or if none of its own watchers
/// watches any more (module docs, "Workers watch each other"). A few
/// relaxed loads of at most [`WATCHED_PEERS`] other workers; a futex wake
/// only to end a doze.
pub(crate) fn watch_peers(sh: &Shared, w: &Worker, now: u64) {
    let Some(ho) = sh.handoff.as_ref() else {
        return;
    };
    let n = sh.workers.len();
    w.watched_at.store(now, Ordering::Relaxed);
    if !ho.dozing.load(Ordering::Relaxed) {
        return;
    }
    // Push the dead-man timer back: one worker about every half period.
    if let Some(dm) = &ho.deadman {
        let after = ho.deadman_after();
        let until = ho.armed_until.load(Ordering::Relaxed);
        if now.saturating_add(after / 2) > until
            && ho
                .armed_until
                .compare_exchange(until, now + after, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            dm.arm(Duration::from_nanos(after));
        }
    }
    let stalled = peers(n, w.index, true).any(|j| {
        let x = &sh.workers[j];
        // `next_poll` moves on at every switch and preemption point's slow
        // path (at most every busy-poll interval, see `run::busy_poll`).
        let quiet = now.saturating_sub(x.deadlines.next_poll.load(Ordering::Relaxed));
        x.own.load() & 1 == 1 && quiet >= ho.threshold && work_waits(x, now)
    });
    let window = watch_window(sh);
    let unwatched =
        n >= 2 && !peers(n, w.index, false).any(|j| watching(&sh.workers[j], now, window));
    if stalled || unwatched {
        end_doze(ho);
    }
}

/// Called by the owner of worker `w` when it goes idle: it stops watching
/// (an idle worker reaches no tick), and the monitor, if it dozes, looks
/// again, since the workers `w` watched may have no other watcher now.
pub(crate) fn stop_watching(sh: &Shared, w: &Worker) {
    let Some(ho) = sh.handoff.as_ref() else {
        return;
    };
    if w.watched_at.load(Ordering::Relaxed) != 0 {
        w.watched_at.store(0, Ordering::Relaxed);
        end_doze(ho);
    }
}

/// Shortest steal between two looks that counts (ns): below it, the
/// distance between the look's clock read and its CPU-time read.
const MIN_STEAL: u64 = 20_000;

/// The monitor's memory of one worker.
struct Seen {
    /// The ownership value last seen.
    word: u64,
    /// When it was first seen.
    since: u64,
    /// The owner thread's CPU time at the last look, and when.
    last: (u64, u64),
    /// The same at the first look that found the value unchanged.
    first: Option<(u64, u64)>,
    /// Steal time measured in this stretch so far (ns).
    stolen: u64,
}

impl Seen {
    fn new(word: u64) -> Self {
        Seen {
            word,
            since: 0,
            last: (0, 0),
            first: None,
            stolen: 0,
        }
    }
}

/// Whether the owner thread of `w`, seen in one green thread for at least
/// the threshold, would be helped by a hand-off: it spins (its CPU time
/// went from `cpu0` to `cpu`, at least an eighth of the `span` ns between
/// the two reads — a thread that reaches preemption points changes its
/// ownership value at least every 50 µs it runs, so this much CPU time in
/// one stretch means it reaches none), or it is blocked in the kernel (not
/// runnable). A thread that is runnable but did not get the CPU
/// is waiting for the CPU it is pinned to, which a new thread on that CPU
/// would wait for too (an overloaded host, not a stuck green thread).
fn stuck(w: &Worker, cpu0: u64, cpu: u64, span: u64) -> bool {
    let ran = cpu.saturating_sub(cpu0);
    ran >= span / 8 || !w.owner_runnable()
}

/// Whether something other than the running task waits for worker `w`.
fn work_waits(w: &Worker, now: u64) -> bool {
    w.nr_running() >= 2 || !w.wakelist().is_empty() || w.next_timer.load(Ordering::Relaxed) <= now
}

/// Takes worker `i` from its thread, seen inside one green thread at `v`,
/// and gives it to a standby thread. Returns whether it did.
/// `stolen`: the stretch's steal time so far, not charged to the task.
fn take_over(sh: &Arc<Shared>, ho: &HandOff, i: usize, v: u64, stolen: u64) -> bool {
    // A thread first: a takeover must never leave the worker without one.
    let seat = match ho.standby.lock().pop() {
        Some(s) => s,
        None => match new_standby(sh, ho) {
            Some(s) => s,
            None => return false,
        },
    };
    let w = &sh.workers[i];
    let taken = {
        let mut rq = w.lock();
        // Claimed under the lock (module docs, "Safety argument").
        let start = w.own.take(v);
        if start.is_some() {
            if let Some(slot) = rq.q.curr() {
                let task: TaskRef = rq.q.payload(slot).clone();
                let mark = ho.marks.fetch_add(1, Ordering::Relaxed).max(1);
                // Before `save_entity`'s Release of NOT_QUEUED: a waker that
                // reads NOT_QUEUED (Acquire) sees the mark.
                task.handed_off.store(mark, Ordering::Relaxed);
                // A migration's dequeue: lag and remaining request kept,
                // never delayed; charged for the CPU time it got.
                let now = clock::now();
                rq.q.forgive_current(stolen, now);
                match rq.q.dequeue(slot, DequeueFlags::NONE, now) {
                    Dequeue::Removed(entity, t) => t.save_entity(entity),
                    Dequeue::Delayed => unreachable!("only sleeping dequeues are delayed"),
                }
                // The worker's track ends the run here; the task runs on
                // beside it (`detach` records nothing more).
                crate::trace::switch_out(sh, i, &task, crate::trace::out::HANDOFF, now);
            }
            w.publish_nr_running(sh, &rq);
            w.preempt_at.store(u64::MAX, Ordering::Relaxed);
        }
        start
    };
    match taken {
        Some(word) => {
            w.stats.inc(Counter::handoffs);
            seat.give(Assignment::Run { index: i, word });
            true
        }
        None => {
            ho.standby.lock().push(seat);
            false
        }
    }
}

/// Starts a standby thread (bounded by [`MAX_EXTRA_THREADS`]).
fn new_standby(sh: &Arc<Shared>, ho: &HandOff) -> Option<Arc<Seat>> {
    if ho.extra.load(Ordering::Relaxed) >= MAX_EXTRA_THREADS {
        return None;
    }
    let n = ho.extra.fetch_add(1, Ordering::Relaxed);
    let seat = Arc::new(Seat::new());
    let (s, first) = (sh.clone(), seat.clone());
    let spawned = std::thread::Builder::new()
        .name(format!("{}-h{n}", sh.config.name))
        .spawn(move || {
            let first = match first.wait() {
                Assignment::Run { index, word } => {
                    s.handoff.as_ref().expect("hand-off on").take_seat(
                        &s.workers[index],
                        index,
                        word,
                    );
                    Some((index, word))
                }
                Assignment::Exit => None,
            };
            super::run::thread_main(s, first);
        });
    match spawned {
        Ok(h) => {
            ho.threads.lock().push(h);
            Some(seat)
        }
        Err(_) => {
            ho.extra.fetch_sub(1, Ordering::Relaxed);
            None
        }
    }
}

/// The thread that ran worker `w` was taken over while it ran `task`, which
/// has now switched back for `why`: give the task back and stop acting as
/// `w`'s owner (module docs, "Return").
pub(crate) fn detach(sh: &Shared, w: &Worker, task: TaskRef, why: Resumed, taken: u64) {
    // The takeover claimed the word under this lock: once we hold it, the
    // takeover's dequeue of `task` is complete (worker::owner, Orderings).
    drop(w.lock());
    // From here on this thread is outside the runtime: its wakes go through
    // wakelists, its counters to the external row.
    tls::leave_worker();
    let p = &*task;
    let now = clock::now();
    crate::task::stats::switched_out_for(p, &why, now);
    let mark = p.handed_off.load(Ordering::Relaxed);
    match why {
        Resumed::Finished => {
            {
                // The entity saved at the takeover stays as the final one;
                // its readers hold these locks (Tcb::saved_entity) until DEAD.
                let _wake = p.st.lock_wake();
                let _rq = sh.workers[p.cpu()].lock();
                p.st.set_state(DEAD);
            }
            // (`task` keeps `p` alive past the registry's reference.)
            let stack = super::run::retire(sh, p);
            clear_mark(p, mark);
            if let Some(s) = stack {
                w.stacks.lock().put(s);
            }
        }
        Resumed::Switched(Switch::Block) | Resumed::Switched(Switch::BlockUntil(_))
            if p.st.state() == BLOCKED =>
        {
            if let Resumed::Switched(Switch::BlockUntil(deadline)) = why {
                // Its timer goes to its worker, whose owner recomputes its
                // next event (RECHECK) or wakes from its park.
                sh.workers[p.cpu()].arm_timer_remote(deadline, task.clone());
            }
            // Release: the saved context; a waker waiting for it may go on.
            p.st.set_on_cpu(false);
            clear_mark(p, mark);
        }
        _ => {
            // Yield, preemption, or a block a waker already ended. The task
            // is off every run queue: enqueue it through the wake path. A
            // waker that claimed it first (WAKING) waits for on_cpu and
            // enqueues it itself; our wake then finds it not blocked.
            if p.st.state() == RUNNING {
                p.st.set_blocked();
            }
            p.st.set_on_cpu(false);
            clear_mark(p, mark);
            // Through the wake path, but not counted as a wakeup (a block a
            // waker ended was counted by that waker).
            crate::wake::requeue_task(&task);
        }
    }
    // Last: the ring's cancelled operations wake their green threads, and
    // `task` may be one of them (blocked on its own operation), which a
    // waker can only enqueue once `on_cpu` is clear.
    crate::io::uring::on_detach();
    // A wake or spawn this thread made onto `w` as its owner, just before
    // the takeover, kicked nobody; the new owner may have parked since.
    w.idle().kick();
    // The two threads no longer contend for the worker's CPU.
    end_takeover_slice(w, taken);
}

/// Clears `handed_off` if it still holds this takeover's mark (a later
/// takeover of the same task sets a new one).
fn clear_mark(p: &crate::task::Tcb, mark: u32) {
    let _ = p
        .handed_off
        .compare_exchange(mark, 0, Ordering::Release, Ordering::Relaxed);
}

impl Worker {
    /// Records the calling thread as this worker's owner thread (its
    /// thread id and CPU-time clock, for the monitor).
    pub(crate) fn set_owner_thread(&self) {
        let tid = crate::sys::gettid() as u32 as u64;
        let clock = crate::sys::thread_cpu_clock() as u32 as u64;
        self.owner_thread
            .store(tid << 32 | clock, Ordering::Relaxed);
    }

    /// CPU time of the owner thread (ns; 0 if unknown).
    fn owner_cpu_time(&self) -> u64 {
        let v = self.owner_thread.load(Ordering::Relaxed);
        crate::sys::cpu_clock_ns(v as u32 as i32)
    }

    /// Whether the owner thread is runnable (running or waiting for a
    /// CPU); `false` if it is blocked in the kernel or cannot be read.
    fn owner_runnable(&self) -> bool {
        let tid = (self.owner_thread.load(Ordering::Relaxed) >> 32) as u32;
        crate::sys::thread_runnable(tid as i32)
    }

    /// Arms a timer for `task` from a thread that is not this worker's
    /// owner, and makes the owner notice it (a parked owner is woken; a
    /// busy one recomputes its next event at its next preemption point).
    pub(crate) fn arm_timer_remote(&self, deadline: u64, task: TaskRef) {
        {
            let mut rq = self.lock();
            self.arm_timer(&mut rq, deadline, task);
        }
        self.set_flags(RECHECK);
        self.idle().kick();
    }
}
