//! One worker's trace buffer: a fixed ring of [`Event`]s with a single
//! writer (the worker's OS thread) and a reader that only reads after the
//! writer has been shut out.
//!
//! Owns: the slots, the write position and the `active` flag of the
//! start/stop handshake. Must not: allocate or lock on the write path, or
//! be written by any thread but its worker's.
//!
//! # Orderings
//!
//! The ring is never read while it may be written, so the slots need no
//! per-slot synchronisation (unlike crossbeam-deque, whose thieves read
//! while the owner pushes). What must be ordered is the hand-over between
//! the writer and whoever starts or stops the trace:
//!
//! * **Writer** (`record`): swap `active` to true (SeqCst) — if it was
//!   already true, a second writer is in the ring (the old thread of a
//!   handed-off worker, `worker::handoff`) and this event goes elsewhere;
//!   load `on` (SeqCst);
//!   if on, write the slot and bump `head` (Relaxed: read only after the
//!   hand-over below); `active = false` (Release).
//! * **Stopper** (`Tracer::stop`): `on = false` (SeqCst); then, for every
//!   ring, spin until `active` reads false (SeqCst, hence Acquire), then
//!   read `head` and the slots.
//!
//! This is Dekker's pattern: in the single total order of SeqCst
//! operations, either the writer's load of `on` follows the stopper's
//! store of `false` — the writer sees "off" and touches nothing — or the
//! stopper's load of `active` follows the writer's store of `true`, so the
//! stopper waits for the writer's Release store of `false`, and its
//! Acquire load of it makes every slot write and `head` visible. A stale
//! `false` from the writer's *previous* event cannot fool the stopper: it
//! would place the stopper's load before the writer's `active = true` and
//! thus before its load of `on`, which then sees "off".
//!
//! * **Starter** (`Tracer::start`, serialised with stop by a mutex)
//!   replaces the slots while `on` is false: no writer touches them then
//!   (the last stop waited out every writer that had seen "on"), and the
//!   SeqCst (Release) store of `on = true` publishes the new slots to every
//!   writer whose SeqCst (Acquire) load sees it.

use crate::loom::spin_hint;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One recorded scheduling event (32 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Event {
    /// When (runtime clock, ns).
    pub(crate) ts: u64,
    /// The task it is about.
    pub(crate) task: u64,
    /// A second task (the waker of a wakeup), or 0.
    pub(crate) other: u64,
    /// A worker index: the target of a wakeup or migration, the victim of a steal.
    pub(crate) aux: u16,
    /// What happened (`trace::kind`).
    pub(crate) kind: u8,
    /// A detail of the kind (`trace::how`, `trace::out`).
    pub(crate) arg: u8,
    /// The task's nice level (switch-in).
    pub(crate) nice: i8,
}

/// A single-writer ring of events.
pub(crate) struct Ring {
    active: AtomicBool,
    head: AtomicU64,
    slots: UnsafeCell<Box<[Event]>>,
}

// SAFETY: `slots` is written only by the ring's worker thread between its
// `active = true` and `active = false`, while `on` is set; it is replaced
// and read only while `on` is false and no writer is active (see the
// module comment), so no two threads ever access it at the same time.
unsafe impl Sync for Ring {}

impl Ring {
    /// An empty ring with no slots.
    pub(crate) fn new() -> Self {
        Ring {
            active: AtomicBool::new(false),
            head: AtomicU64::new(0),
            slots: UnsafeCell::new(Box::new([])),
        }
    }

    /// Records `ev` if `on` is set. Call only from the ring's worker thread.
    #[inline]
    pub(crate) fn record(&self, on: &AtomicBool, ev: Event) -> bool {
        if self.active.swap(true, Ordering::SeqCst) {
            // Another writer is in the ring: the thread a hand-off took
            // this worker from, still running its last green thread
            // (worker::handoff). It owns `active` until it lowers it.
            return false;
        }
        if on.load(Ordering::SeqCst) {
            // SAFETY: we raised `active` ourselves (the swap saw it low), so
            // no other writer is in the slots, and `on` is set with
            // `active` raised, so no starter or stopper touches the slots
            // until we lower `active` (module comment).
            let slots = unsafe { &mut *self.slots.get() };
            if !slots.is_empty() {
                let h = self.head.load(Ordering::Relaxed);
                slots[(h % slots.len() as u64) as usize] = ev;
                self.head.store(h + 1, Ordering::Relaxed);
            }
        }
        self.active.store(false, Ordering::Release);
        true
    }

    /// Waits until no write is in flight. Call after storing `on = false`.
    pub(crate) fn quiesce(&self) {
        while self.active.load(Ordering::SeqCst) {
            spin_hint();
        }
    }

    /// `capacity` empty slots for [`reset`](Ring::reset), or `None` if the
    /// allocator refuses them (nothing is allocated then).
    pub(crate) fn try_slots(capacity: usize) -> Option<Box<[Event]>> {
        let mut v = Vec::new();
        v.try_reserve_exact(capacity).ok()?;
        v.resize(capacity, Event::default());
        Some(v.into_boxed_slice())
    }

    /// Replaces the slots with `slots` (from [`try_slots`](Ring::try_slots)).
    /// Only while `on` is false and after [`quiesce`](Ring::quiesce) (or
    /// before any start).
    pub(crate) fn reset(&self, slots: Box<[Event]>) {
        self.quiesce();
        // SAFETY: `on` is false and no writer is active, so nobody else
        // accesses the slots (module comment).
        unsafe { *self.slots.get() = slots };
        self.head.store(0, Ordering::Relaxed);
    }

    /// The recorded events, oldest first, and how many were overwritten.
    /// Only while `on` is false and after [`quiesce`](Ring::quiesce).
    ///
    /// Timestamps come out non-decreasing in recording order: an event
    /// stamped with a clock reading its caller made earlier (a switch-out
    /// at its preemption point's reading, after wakeups that point served
    /// with fresh readings) is moved up to the latest stamp recorded
    /// before it. The export sorts each track by time, so without this a
    /// cause could be sorted after its effect.
    pub(crate) fn take(&self) -> (Vec<Event>, u64) {
        self.quiesce();
        // SAFETY: as in `reset`.
        let slots = unsafe { &mut *self.slots.get() };
        let head = self.head.load(Ordering::Relaxed);
        let n = slots.len() as u64;
        let mut out = if head <= n {
            slots[..head as usize].to_vec()
        } else {
            let start = (head % n) as usize;
            let mut v = slots[start..].to_vec();
            v.extend_from_slice(&slots[..start]);
            v
        };
        *slots = Box::new([]);
        self.head.store(0, Ordering::Relaxed);
        monotone(&mut out);
        (out, head.saturating_sub(n))
    }
}

/// Raises each event's timestamp to at least its predecessor's.
fn monotone(events: &mut [Event]) {
    let mut latest = 0;
    for e in events {
        latest = latest.max(e.ts);
        e.ts = latest;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ev(ts: u64) -> Event {
        Event {
            ts,
            ..Event::default()
        }
    }

    #[test]
    fn records_only_while_on_and_keeps_the_newest() {
        let on = AtomicBool::new(false);
        let r = Ring::new();
        r.reset(Ring::try_slots(3).unwrap());
        r.record(&on, ev(1));
        on.store(true, Ordering::SeqCst);
        for ts in 2..=6 {
            r.record(&on, ev(ts));
        }
        on.store(false, Ordering::SeqCst);
        r.record(&on, ev(7));
        let (events, dropped) = r.take();
        let ts: Vec<u64> = events.iter().map(|e| e.ts).collect();
        assert_eq!(ts, vec![4, 5, 6]);
        assert_eq!(dropped, 2);
    }

    #[test]
    fn taken_stamps_never_go_back_in_recording_order() {
        let on = AtomicBool::new(true);
        let r = Ring::new();
        r.reset(Ring::try_slots(8).unwrap());
        for ts in [5, 9, 7, 12, 3] {
            r.record(&on, ev(ts));
        }
        on.store(false, Ordering::SeqCst);
        let ts: Vec<u64> = r.take().0.iter().map(|e| e.ts).collect();
        assert_eq!(ts, vec![5, 9, 9, 12, 12]);
    }

    #[test]
    fn a_stop_waits_for_the_writer_and_sees_all_it_wrote() {
        let on = std::sync::Arc::new(AtomicBool::new(true));
        let r = std::sync::Arc::new(Ring::new());
        r.reset(Ring::try_slots(1 << 16).unwrap());
        let (on2, r2) = (on.clone(), r.clone());
        let writer = std::thread::spawn(move || {
            let mut ts = 0;
            while on2.load(Ordering::Relaxed) {
                ts += 1;
                r2.record(&on2, ev(ts));
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(5));
        on.store(false, Ordering::SeqCst);
        let (events, _) = r.take();
        writer.join().unwrap();
        // Whatever was written is contiguous, in order and complete.
        for w in events.windows(2) {
            assert_eq!(w[1].ts, w[0].ts + 1);
        }
    }
}
