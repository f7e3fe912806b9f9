//! The start barrier for OS-thread tasks.
//!
//! Owns: [`Gate`], a one-shot "everyone ready → coordinator stamps the start
//! time → go" barrier, with an abort path so a coordinator that failed to
//! start every task can release the ones already waiting. Must not: know
//! what the tasks do or measure anything itself.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Open,
    Aborted,
}

/// A start barrier: tasks [`arrive`](Gate::arrive) and block; the
/// coordinator waits for all of them ([`wait_ready`](Gate::wait_ready)),
/// reads the clock, and [`open`](Gate::open)s the gate.
pub struct Gate {
    inner: Mutex<(usize, State)>,
    ready_cv: Condvar,
    go_cv: Condvar,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

impl Gate {
    /// A closed gate with nobody waiting.
    pub fn new() -> Self {
        Gate {
            inner: Mutex::new((0, State::Closed)),
            ready_cv: Condvar::new(),
            go_cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, (usize, State)> {
        // Nothing inside the lock can panic, but never propagate poison.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Announces this task as ready and blocks until the gate opens.
    /// Returns `false` if the run was aborted instead: the task must exit.
    pub fn arrive(&self) -> bool {
        let mut g = self.lock();
        g.0 += 1;
        self.ready_cv.notify_one();
        while g.1 == State::Closed {
            g = self.go_cv.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
        g.1 == State::Open
    }

    /// Blocks until `n` tasks have arrived.
    pub fn wait_ready(&self, n: usize) {
        let mut g = self.lock();
        while g.0 < n {
            g = self
                .ready_cv
                .wait(g)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Releases every task, now and later arrivals alike.
    pub fn open(&self) {
        self.lock().1 = State::Open;
        self.go_cv.notify_all();
    }

    /// Releases every task with "aborted".
    pub fn abort(&self) {
        self.lock().1 = State::Aborted;
        self.go_cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn open_releases_everyone_and_abort_says_so() {
        for open in [true, false] {
            let gate = Arc::new(Gate::new());
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let g = Arc::clone(&gate);
                    std::thread::spawn(move || g.arrive())
                })
                .collect();
            gate.wait_ready(4);
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
