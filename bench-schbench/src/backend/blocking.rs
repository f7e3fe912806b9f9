//! The message loop and the worker loop for backends whose tasks block the thread they
//! run on: OS threads now, eevdf-rt green threads later.
//!
//! This module owns the order of steps of a request and of a message round (see the
//! contract in `backend`). It must not spawn, pin or choose primitives: the backend
//! gives it a [`BlockingToken`] type and an [`Env`] (how to sleep, which lock to take).
//!
//! Clock reads: the message thread reads the clock once per batch. A worker reads it
//! when it runs again (end of its wakeup latency, start of its request latency) and
//! after the math (end of the request, and the stamp of its next publish), plus once
//! before the math with `-C`.

use std::time::Duration;

use crate::board::Board;
use crate::lock::{Held, SpinLocks};
use crate::pace::Pacer;
use crate::shared::Shared;
use crate::token::BlockingToken;
use crate::work::Work;

/// Longest sleep of a paced message loop, so that it follows `-A` rate changes and
/// notices the end of the run.
pub const MAX_PACED_SLEEP: Duration = Duration::from_millis(10);

/// What differs between blocking backends besides the token.
pub trait Env: Send + Sync + 'static {
    /// Sleeps the calling task for `d` (the request's `usleep`).
    fn sleep(&self, d: Duration);
    /// Takes the calling task's lock (per CPU for OS threads, per runtime worker for
    /// green threads).
    fn lock(&self, locks: &SpinLocks) -> Held;
    /// Called after each matrix row of the math when no lock is held (green
    /// threads: `eevdf_rt::preempt_point`, the cooperative runtime's analogue of
    /// kernel preemption). OS threads are preempted by the kernel: nothing to do.
    #[inline]
    fn preempt_point(&self) {}
}

/// Everything the loops of one run share.
#[derive(Debug)]
pub struct Wiring<T, E> {
    /// The run's shared state (plan, stats, clock, stop flag, rate).
    pub shared: std::sync::Arc<Shared>,
    /// The rendezvous structures.
    pub board: Board<T>,
    /// The locks requests take unless `-L`.
    pub locks: SpinLocks,
    /// The backend's sleep and lock choice.
    pub env: E,
}

/// Runs worker `id` until the run stops; it retires on the way out (even by panic).
pub fn worker_loop<T: BlockingToken, E: Env>(w: &Wiring<T, E>, id: usize) {
    let me = w.board.worker(id); // retires the worker when dropped, even by panic
    let shared = &*w.shared;
    let plan = &shared.plan;
    let sleep = Duration::from_micros(plan.sleep_us);
    let mut recorder = shared.stats.recorder(id);
    let mut work = Work::new(plan);
    let mut stamp = shared.now_ns();
    while !shared.stopping() {
        me.publish(stamp);
        me.token().wait();
        if shared.stopping() {
            break;
        }
        let woke = shared.now_ns();
        let start = if plan.pipe > 0 {
            // SAFETY: between the end of the wait and the next publish.
            unsafe { me.answer_pipe(work.scratch()) };
            woke
        } else {
            if !sleep.is_zero() {
                w.env.sleep(sleep);
            }
            let held = plan.locking.then(|| w.env.lock(&w.locks));
            let start = if plan.calibrate {
                shared.now_ns()
            } else {
                woke
            };
            if held.is_some() {
                // a spin lock is held: no switch may happen inside it
                work.math();
            } else {
                work.math_with(|| w.env.preempt_point());
            }
            if let Some(held) = held {
                w.locks.unlock(held);
            }
            start
        };
        let end = shared.now_ns();
        recorder.record(woke.saturating_sub(me.wake_time()), end - start);
        stamp = end;
    }
}

/// Runs message thread `m` until all its workers have retired.
pub fn message_loop<T: BlockingToken, E: Env>(w: &Wiring<T, E>, m: usize) {
    let mut scratch = vec![0u8; w.shared.plan.pipe];
    if w.shared.plan.paced() {
        return paced_message_loop(w, m, &mut scratch);
    }
    let token = w.board.message_token(m);
    loop {
        w.board.wake_all(m, &mut scratch, || w.shared.now_ns());
        if w.board.live(m) == 0 {
            break;
        }
        token.wait();
    }
}

/// `-R`/`-A`: wake only the workers whose requests are due; then sleep until the next
/// one is, or, when requests are owed and nobody was free, wait for a worker to return
/// (its publish posts the token). Posts that arrive while it sleeps leave one token,
/// which only costs one extra round.
fn paced_message_loop<T: BlockingToken, E: Env>(w: &Wiring<T, E>, m: usize, scratch: &mut [u8]) {
    let shared = &*w.shared;
    let token = w.board.message_token(m);
    let mut pacer =
        Pacer::new(shared.rps_target(), shared.now_ns()).share(m, shared.plan.message_threads);
    loop {
        let now = shared.now_ns(); // the one clock read of this round
        pacer.retarget(shared.rps_target(), now);
        let budget = if shared.stopping() {
            u64::MAX
        } else {
            pacer.due(now)
        };
        pacer.issued(w.board.wake_some(m, budget, scratch, now));
        if w.board.live(m) == 0 {
            break;
        }
        match pacer.wait_ns(now) {
            Some(0) | None => token.wait(),
            Some(ns) => w.env.sleep(Duration::from_nanos(ns).min(MAX_PACED_SLEEP)),
        }
    }
}
