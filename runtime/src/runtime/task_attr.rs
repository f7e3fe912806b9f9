//! The parts of [`Task`] that reach into a worker's run queue: its
//! accounting and EEVDF snapshot ([`Task::stats`]) and the changes of its
//! nice level and slice from any thread. They live here, in the top layer,
//! so that the task layer names no worker internals.
//!
//! Owns: finding a task's entity under the locks that own it. Must not:
//! decide policy (the run queue's `reweight` / `set_slice` do).
//!
//! # Reading and changing another task's EEVDF state
//!
//! A queued task's entity lives in its worker's run queue, an unqueued
//! one's in its control block. Both [`Task::stats`] and the setters find
//! it the way the wake path does: take the task's wake lock (so no waker
//! can claim it or move it meanwhile), read `cpu`, lock that worker's run
//! queue, re-check `cpu` (a steal may have moved the task while we waited;
//! retry there), then look at `on_rq`, which only changes under that lock.
//! Queued: change it in place (`RunQueue::reweight` / `set_slice`, lag
//! conserved) and ask that worker to reschedule so EEVDF re-picks with the
//! new values. Not queued: change the saved entity (`Tcb::saved_entity`):
//! every thread that saves or takes it holds either that run-queue lock or
//! the wake lock, and we hold both. The only other state is "in transit" —
//! the entity is taken but not yet enqueued — which lasts one critical
//! section of the lock holder that enqueues it, so the loop retries (after
//! releasing both locks).

use crate::error::Error;
use crate::sched::{check_slice, weight::nice_index, Entity, Slot};
use crate::task::state::{DEAD, QUEUED};
use crate::task::{Task, TaskRef, TaskStats};
use crate::time::clock;
use crate::worker::{Rq, RESCHED};
use std::time::Duration;

/// Where a task's entity was found by [`Task::with_entity`].
enum Found<'a> {
    /// Queued (running, runnable or delayed) in `rq` at `slot`.
    Queued { rq: &'a mut Rq, slot: Slot },
    /// Off every run queue: its saved entity.
    Saved(&'a mut Entity),
    /// The task has exited: its entity as it was at the exit.
    Dead(Option<&'a Entity>),
}

impl Task {
    /// Its accounting and EEVDF state now, like `/proc/<pid>/sched`
    /// (see [`TaskStats`]). Callable from any thread; it briefly takes the
    /// owning worker's run-queue lock. After the task exited, the counters
    /// are final and the policy view keeps only nice and slice.
    ///
    /// ```
    /// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    /// let h = rt.spawn(|| eevdf_rt::sleep(std::time::Duration::from_millis(1)));
    /// let task = h.task().clone();
    /// h.join().unwrap();
    /// let st = task.stats();
    /// assert!(st.wakeups <= 1); // 0 if the sleep was over before it parked
    /// assert!(st.switches >= 1); // at least its exit
    /// ```
    pub fn stats(&self) -> TaskStats {
        let mut st = TaskStats::default();
        let t = &self.tcb;
        st.nice = t.nice();
        st.slice = self.slice();
        self.with_entity(|found, now| {
            t.acct.snapshot(now, &mut st);
            let (e, lag) = match found {
                Found::Queued { rq, slot } => (rq.q.entity(slot).clone(), rq.q.lag(slot)),
                Found::Saved(e) => (e.clone(), e.vlag()),
                Found::Dead(Some(e)) => (e.clone(), e.vlag()),
                Found::Dead(None) => return,
            };
            st.vruntime = e.vruntime();
            st.deadline = e.deadline();
            st.relative_deadline = e.has_relative_deadline();
            st.lag = lag;
            st.slice = Duration::from_nanos(e.slice());
            st.weight = e.weight();
            st.nice = e.nice();
            st.policy = e.policy();
        });
        st
    }

    /// Changes the task's nice level (−20..=19) from any thread, conserving
    /// its lag (EEVDF reweight; see `docs/eevdf.md`). The worker that runs
    /// or queues it re-picks at its next preemption point. A finished task
    /// is left alone.
    ///
    /// ```
    /// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
    /// let (go, wait) = eevdf_rt::sync::channel::bounded::<()>(1);
    /// let h = rt.spawn(move || wait.recv().unwrap());
    /// h.task().set_nice(7).unwrap();
    /// assert_eq!(h.task().nice(), 7);
    /// assert_eq!(h.task().stats().weight, 215);
    /// assert!(h.task().set_nice(-21).is_err());
    /// go.send(()).unwrap();
    /// h.join().unwrap();
    /// ```
    pub fn set_nice(&self, nice: i32) -> Result<(), Error> {
        nice_index(nice)?;
        let t = &self.tcb;
        // The mirrors `nice()` and `slice()` read change with the entity,
        // under the same locks (so concurrent setters cannot leave them
        // behind it), and not at all for a finished task.
        let mirror = || {
            let custom = t.custom_slice();
            t.set_mirrors(nice, (custom != 0).then_some(custom));
        };
        self.change(|found, now| match found {
            Found::Queued { rq, slot } => rq.q.reweight(slot, nice, now).map(|()| mirror()),
            Found::Saved(e) => e.set_nice_unqueued(nice).map(|()| mirror()),
            Found::Dead(_) => Ok(()),
        })
    }

    /// Sets the task's slice (its latency request, 100 µs ..= 100 ms) from
    /// any thread; `None` goes back to the runtime's base slice. A finished
    /// task is left alone.
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    /// let h = rt.spawn(|| eevdf_rt::sleep(Duration::from_millis(10)));
    /// h.task().set_slice(Some(Duration::from_micros(300))).unwrap();
    /// assert_eq!(h.task().slice(), Duration::from_micros(300));
    /// assert!(h.task().set_slice(Some(Duration::from_secs(1))).is_err());
    /// h.join().unwrap();
    /// ```
    pub fn set_slice(&self, slice: Option<Duration>) -> Result<(), Error> {
        let ns = slice
            .map(|d| check_slice(d.as_nanos().min(u64::MAX as u128) as u64))
            .transpose()?;
        let t = &self.tcb;
        let mirror = || t.set_mirrors(t.nice(), ns);
        self.change(|found, now| match found {
            Found::Queued { rq, slot } => rq.q.set_slice(slot, ns, now).map(|()| mirror()),
            Found::Saved(e) => {
                match ns {
                    Some(_) => e.set_slice_unqueued(ns)?,
                    // Back to the base slice now, not at its next
                    // placement, so that `stats()` agrees with `slice()`.
                    None => e.use_base_slice_unqueued(t.shared.config.base_slice),
                }
                mirror();
                Ok(())
            }
            Found::Dead(_) => Ok(()),
        })
    }

    /// Applies `f` to the task's entity wherever it is, then asks the
    /// owning worker to re-pick (and honours that at once if it is ours).
    /// A task whose result is already out ([`Task::is_finished`]) counts as
    /// dead here even while its exit still runs on its worker: a setter
    /// called after `is_finished` said true changes nothing.
    fn change(&self, f: impl FnOnce(Found<'_>, u64) -> Result<(), Error>) -> Result<(), Error> {
        let mut owner = None;
        let r = self.with_entity(|found, now| {
            let found = if self.is_finished() {
                Found::Dead(None)
            } else {
                found
            };
            if let Found::Queued { .. } = found {
                owner = Some(self.tcb.cpu());
            }
            f(found, now)
        });
        if let Some(i) = owner.filter(|_| r.is_ok()) {
            self.tcb.shared.workers[i].set_flags(RESCHED);
            // The runtime's own point: no switch inside a future's poll.
            crate::runtime::api::preempt_point_at(None);
        }
        r
    }

    /// Runs `f` on the task's entity under the locks that own it (see the
    /// module comment), with the time read after taking them.
    fn with_entity<R>(&self, f: impl FnOnce(Found<'_>, u64) -> R) -> R {
        let t = &self.tcb;
        let sh = &t.shared;
        loop {
            let wake = t.st.lock_wake();
            let cpu = t.cpu();
            let mut rq = sh.workers[cpu].lock();
            if t.cpu() != cpu {
                continue; // moved while we waited for the lock
            }
            let now = clock::now();
            if t.st.state() == DEAD {
                // SAFETY: DEAD is final and was published (Release) after
                // the exit kept the entity; no one takes it any more.
                return f(Found::Dead(unsafe { t.final_entity() }), now);
            }
            if t.st.on_rq() == QUEUED {
                let slot = t.slot();
                if rq.q.holds(slot, |p| TaskRef::ptr_eq(p, t)) {
                    return f(Found::Queued { rq: &mut rq, slot }, now);
                }
            } else {
                // SAFETY: we hold the wake lock and the run-queue lock of
                // the worker the task belongs to, and it is not queued.
                if let Some(e) = unsafe { t.saved_entity() } {
                    return f(Found::Saved(e), now);
                }
            }
            drop(rq);
            drop(wake);
            // In transit between two critical sections: let its owner finish.
            std::thread::yield_now();
        }
    }
}
