//! The timer driver behind the timer futures: one background OS thread
//! per process that wakes `Waker`s at their deadlines.
//!
//! Owns: a min-heap of armed [`Entry`]s under one lock, the thread that
//! sleeps until the earliest of them and fires it, and the lazy removal of
//! cancelled entries. Must not: run user code under its lock (wakers are
//! woken after it is released), or touch the scheduler (a `Waker` decides
//! what waking means — for `block_on_future`, an ordinary green-thread
//! wakeup through `wake_task`).
//!
//! # Why a thread, not the workers' timer heaps
//!
//! The workers' heaps (`time::timers`) hold *tasks*: a green thread that
//! sleeps is off its run queue and the heap makes it runnable again. A
//! future's timer is different: it must wake a `Waker` while the future
//! may be polled anywhere — on a green thread, under `block_on_future` on
//! an OS thread with no runtime at all, or handed between runtimes — and it
//! is usually cancelled (hyper's header-read timeout, `timeout` around a
//! read that completes). A process-wide driver serves all of them and
//! keeps the scheduler core untouched. The price is one thread that is
//! asleep unless a timer expires, and one wakeup hop (driver thread →
//! `Waker::wake`) at expiry: tens of µs, next to the kernel's own timer
//! slack, which the driver sets to 1 ns for itself.
//!
//! # Protocol (no lost wakeup)
//!
//! ```text
//! poller (Sleep::poll)                        driver (at the deadline)
//! lock entry.waker; store cx.waker(); unlock  fired.store(true, SeqCst)
//! if fired.load(SeqCst) → Ready               lock entry.waker; take it; unlock; wake
//! else Pending
//! ```
//!
//! Both critical sections use the same lock: if the poller's comes first,
//! the driver takes its waker; otherwise the driver's `fired` store
//! precedes the poller's lock, so the poller's load sees it.
//!
//! Cancelled entries (a dropped or reset `Sleep`) stay in the heap until
//! they surface or until the heap holds twice as many entries as are live,
//! when it is rebuilt without them (amortised O(1) per cancel).

use parking_lot::{Condvar, Mutex};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Waker;
use std::time::Instant;

/// One armed timer, shared by its future and the driver's heap.
pub(crate) struct Entry {
    /// Set by the driver when the deadline has passed.
    fired: AtomicBool,
    /// Set by the future when it stops waiting (dropped or reset).
    cancelled: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Entry {
    /// Whether the driver fired this entry.
    #[inline]
    pub(crate) fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// Stores `waker` as the one to wake at expiry (module docs: protocol);
    /// the caller re-checks [`fired`](Self::fired) afterwards.
    pub(crate) fn set_waker(&self, waker: &Waker) {
        let old = {
            let mut g = self.waker.lock();
            match &*g {
                Some(w) if w.will_wake(waker) => None,
                _ => g.replace(waker.clone()),
            }
        };
        drop(old);
    }

    /// The future no longer waits on this entry: the driver will drop it.
    /// Returns the waker it held, if any (a reset carries it over).
    pub(crate) fn cancel(&self) -> Option<Waker> {
        if !self.fired() {
            // Under the heap lock, where the driver fires: counted once.
            let mut st = driver().state.lock();
            if !self.fired() && !self.cancelled.swap(true, Ordering::Relaxed) {
                st.live -= 1;
            }
        }
        self.waker.lock().take()
    }
}

struct HeapEntry {
    deadline: Instant,
    entry: Arc<Entry>,
}

impl PartialEq for HeapEntry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline
    }
}
impl Eq for HeapEntry {}
impl PartialOrd for HeapEntry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeapEntry {
    // Reversed: the earliest deadline on top of the max-heap.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other.deadline.cmp(&self.deadline)
    }
}

struct State {
    heap: BinaryHeap<HeapEntry>,
    /// Entries in the heap that are neither fired nor cancelled.
    live: usize,
}

struct Driver {
    state: Mutex<State>,
    /// Signalled when a new earliest deadline is armed.
    cond: Condvar,
}

/// The process's driver, started on first use.
fn driver() -> &'static Driver {
    static DRIVER: OnceLock<&'static Driver> = OnceLock::new();
    DRIVER.get_or_init(|| {
        let d: &'static Driver = Box::leak(Box::new(Driver {
            state: Mutex::new(State {
                heap: BinaryHeap::new(),
                live: 0,
            }),
            cond: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("eevdf-rt-timer".into())
            .spawn(move || run(d))
            .expect("eevdf-rt: cannot start the timer-future thread");
        d
    })
}

/// Arms a timer for `deadline`; the driver fires it (and wakes its waker)
/// once `Instant::now() >= deadline`.
pub(crate) fn arm(deadline: Instant) -> Arc<Entry> {
    let entry = Arc::new(Entry {
        fired: AtomicBool::new(false),
        cancelled: AtomicBool::new(false),
        waker: Mutex::new(None),
    });
    let d = driver();
    let earliest = {
        let mut st = d.state.lock();
        let earliest = st.heap.peek().is_none_or(|top| deadline < top.deadline);
        st.heap.push(HeapEntry {
            deadline,
            entry: entry.clone(),
        });
        st.live += 1;
        if st.heap.len() >= 64 && st.heap.len() > 2 * st.live {
            let old = std::mem::take(&mut st.heap).into_vec();
            st.heap = old
                .into_iter()
                .filter(|e| !e.entry.cancelled.load(Ordering::Relaxed))
                .collect();
        }
        earliest
    };
    if earliest {
        d.cond.notify_one();
    }
    entry
}

/// The driver thread: fire what is due, sleep until the next deadline.
fn run(d: &'static Driver) {
    crate::sys::set_min_timer_slack();
    let mut due: Vec<Waker> = Vec::new();
    let mut st = d.state.lock();
    loop {
        let now = Instant::now();
        while let Some(top) = st.heap.peek() {
            if top.deadline > now {
                break;
            }
            let e = st.heap.pop().expect("peeked").entry;
            if e.cancelled.load(Ordering::Relaxed) {
                continue;
            }
            st.live -= 1;
            e.fired.store(true, Ordering::SeqCst);
            let w = e.waker.lock().take();
            due.extend(w);
        }
        if !due.is_empty() {
            // Wake outside the heap lock: a waker may arm a new timer.
            drop(st);
            for w in due.drain(..) {
                // A user's waker that panics must not end this thread: every
                // timer future of the process would stop firing.
                crate::wake::wake_foreign(w);
            }
            st = d.state.lock();
            continue;
        }
        match st.heap.peek().map(|t| t.deadline) {
            Some(deadline) => {
                d.cond.wait_until(&mut st, deadline);
            }
            None => d.cond.wait(&mut st),
        }
    }
}
