//! The start barrier for green tasks (and the OS thread that coordinates
//! them).
//!
//! Owns: [`GreenGate`], the green-aware twin of [`crate::gate::Gate`]: `n`
//! tasks arrive and park; the coordinator waits until all `n` have
//! arrived, reads the clock and opens the gate (or aborts it). Built on
//! `eevdf_rt::sync::Futex`, so a green thread parks only itself, never its
//! worker, and an OS thread blocks. Must not: know what the tasks do or
//! measure anything itself.

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
pub struct GreenGate {
    n: u32,
    ready: AtomicU32,
    state: AtomicU32,
}

impl GreenGate {
    /// A closed gate that expects `n` tasks (at most `u32::MAX`).
    pub fn new(n: usize) -> Self {
        GreenGate {
            n: u32::try_from(n).unwrap_or(u32::MAX),
            ready: AtomicU32::new(0),
            state: AtomicU32::new(CLOSED),
        }
    }

    /// Announces the caller as ready and parks until the gate opens.
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

    /// Blocks (or parks) until all `n` tasks have arrived.
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

    #[test]
    fn green_tasks_wait_for_the_gate_and_see_open_or_abort() {
        let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
        for open in [true, false] {
            let gate = Arc::new(GreenGate::new(5));
            let hs: Vec<_> = (0..5)
                .map(|_| {
                    let g = Arc::clone(&gate);
                    rt.spawn(move || g.arrive())
                })
                .collect();
            gate.wait_ready();
            assert!(hs.iter().all(|h| !h.is_finished()));
            if open {
                gate.open();
            } else {
                gate.abort();
            }
            for h in hs {
                assert_eq!(h.join().unwrap(), open);
            }
        }
    }
}
