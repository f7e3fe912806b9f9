//! The start barrier for a run's tasks, green threads and OS threads alike.
//!
//! Owns: [`Gate`], a one-shot barrier for exactly `n` tasks: they
//! [`arrive`](Gate::arrive) and wait; the coordinator waits until all `n`
//! have arrived ([`wait_ready`](Gate::wait_ready)), reads the clock and
//! [`open`](Gate::open)s the gate, or [`abort`](Gate::abort)s it when it
//! failed to start every task. Built on `eevdf_rt::sync::Futex`, so a green
//! thread parks only itself, never its worker, and an OS thread blocks in
//! the kernel. Must not: know what the tasks do or measure anything itself.

use eevdf_rt::sync::Futex;
use std::sync::atomic::{AtomicU32, Ordering};

const CLOSED: u32 = 0;
const OPEN: u32 = 1;
const ABORTED: u32 = 2;

/// A one-shot start barrier for exactly `n` tasks.
///
/// Only the `n`-th arrival wakes the coordinator, and opening wakes every
/// task with one `Futex::wake_all`, so a run of `n` tasks costs `n + 1`
/// wakeups in all.
#[derive(Debug)]
pub struct Gate {
    n: u32,
    ready: AtomicU32,
    state: AtomicU32,
}

impl Gate {
    /// A closed gate that expects `n` tasks (at most `u32::MAX`).
    pub fn new(n: usize) -> Self {
        Gate {
            n: u32::try_from(n).unwrap_or(u32::MAX),
            ready: AtomicU32::new(0),
            state: AtomicU32::new(CLOSED),
        }
    }

    /// Announces the caller as ready and waits until the gate opens.
    /// Returns `false` if the run was aborted instead: the task must end.
    pub fn arrive(&self) -> bool {
        if self.ready.fetch_add(1, Ordering::SeqCst) + 1 == self.n {
            Futex::wake(&self.ready, 1);
        }
        loop {
            match self.state.load(Ordering::SeqCst) {
                CLOSED => Futex::wait(&self.state, CLOSED),
                s => return s == OPEN,
            }
        }
    }

    /// Waits until all `n` tasks have arrived.
    pub fn wait_ready(&self) {
        loop {
            let r = self.ready.load(Ordering::SeqCst);
            if r >= self.n {
                return;
            }
            Futex::wait(&self.ready, r);
        }
    }

    /// Releases every task.
    pub fn open(&self) {
        self.release(OPEN);
    }

    /// Releases every task with "aborted".
    pub fn abort(&self) {
        self.release(ABORTED);
    }

    fn release(&self, to: u32) {
        // Only the first release counts (an abort after open changes nothing).
        if self
            .state
            .compare_exchange(CLOSED, to, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            Futex::wake_all(&self.state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Five tasks, spawned by `spawn`, see "open" or "abort" as released.
    fn check(spawn: impl Fn(Arc<Gate>) -> Box<dyn FnOnce() -> bool>) {
        for open in [true, false] {
            let gate = Arc::new(Gate::new(5));
            let joins: Vec<_> = (0..5).map(|_| spawn(Arc::clone(&gate))).collect();
            gate.wait_ready();
            if open {
                gate.open();
            } else {
                gate.abort();
            }
            for join in joins {
                assert_eq!(join(), open);
            }
        }
    }

    #[test]
    fn os_threads_wait_for_the_gate_and_see_open_or_abort() {
        check(|g| {
            let h = std::thread::spawn(move || g.arrive());
            Box::new(move || h.join().unwrap())
        });
    }

    #[test]
    fn green_tasks_wait_for_the_gate_and_see_open_or_abort() {
        let rt = Arc::new(eevdf_rt::Builder::new().workers(2).build().unwrap());
        check(|g| {
            let h = rt.spawn(move || g.arrive());
            Box::new(move || h.join().unwrap())
        });
    }
}
