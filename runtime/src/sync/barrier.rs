//! A green-aware barrier.
//!
//! Owns: [`Barrier`] and [`BarrierWaitResult`]: a count of arrivals and a
//! wait list under one internal lock. Must not: switch while that lock is
//! held.
//!
//! The `n`-th arrival of a generation (the leader) resets the count and
//! wakes everyone in the list in the same critical section as its arrival,
//! so an early arrival of the next generation can never be woken by the
//! previous one (it queues after the list was emptied).

use super::platform::{self, Lock};
use super::waitlist::{self, List, Node, WakeSet};
use std::fmt;

const RELEASED: u32 = 1;

struct State {
    arrived: usize,
    list: List,
}

/// A barrier for green threads and OS threads, like `std::sync::Barrier`:
/// `wait` blocks until `n` callers have arrived, then releases them all;
/// exactly one of them is told it is the leader. Reusable.
///
/// ```
/// use eevdf_rt::sync::Barrier;
/// use std::sync::Arc;
///
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let b = Arc::new(Barrier::new(4));
/// let hs: Vec<_> = (0..4)
///     .map(|_| {
///         let b = b.clone();
///         rt.spawn(move || b.wait().is_leader())
///     })
///     .collect();
/// let leaders: u32 = hs.into_iter().map(|h| h.join().unwrap() as u32).sum();
/// assert_eq!(leaders, 1);
/// ```
pub struct Barrier {
    n: usize,
    state: Lock<State>,
}

impl Barrier {
    platform::const_unless_loom! {
        /// A barrier that releases its waiters by groups of `n` (`n` of 0 or 1
        /// releases every caller at once, each a leader, like std). A `const fn`:
        /// usable in statics.
        ///
        /// ```
        /// let b = eevdf_rt::sync::Barrier::new(1);
        /// assert!(b.wait().is_leader());
        /// ```
        pub fn new(n: usize) -> Self {
            Barrier {
                n,
                state: Lock::new(State {
                    arrived: 0,
                    list: List::new(),
                }),
            }
        }
    }

    /// Waits until `n` threads (green or OS) have called `wait`.
    ///
    /// ```
    /// use eevdf_rt::sync::Barrier;
    /// use std::sync::Arc;
    /// let b = Arc::new(Barrier::new(2));
    /// let b2 = b.clone();
    /// let t = std::thread::spawn(move || b2.wait().is_leader());
    /// let me = b.wait().is_leader();
    /// assert!(me ^ t.join().unwrap());
    /// ```
    pub fn wait(&self) -> BarrierWaitResult {
        let mut g = self.state.lock();
        g.arrived += 1;
        if g.arrived < self.n {
            let node = Node::new(0, None);
            // A waiter that shutdown unwinds before its group is complete
            // takes its arrival back.
            let r =
                waitlist::block_leaving(&self.state, g, |s| &mut s.list, |s| s.arrived -= 1, &node);
            debug_assert_eq!(r, Some(RELEASED));
            return BarrierWaitResult { leader: false };
        }
        g.arrived = 0;
        let mut set = WakeSet::new();
        g.list.wake_all(RELEASED, &mut set);
        drop(g);
        if !set.is_empty() {
            set.wake();
            platform::preempt();
        }
        BarrierWaitResult { leader: true }
    }
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Barrier")
            .field("n", &self.n)
            .finish_non_exhaustive()
    }
}

/// What [`Barrier::wait`] returns: whether this caller is the group's leader.
///
/// ```
/// let r = eevdf_rt::sync::Barrier::new(1).wait();
/// assert!(r.is_leader());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierWaitResult {
    leader: bool,
}

impl BarrierWaitResult {
    /// Whether this caller was the last of its group to arrive (exactly one
    /// per group is).
    ///
    /// ```
    /// assert!(eevdf_rt::sync::Barrier::new(0).wait().is_leader());
    /// ```
    pub fn is_leader(&self) -> bool {
        self.leader
    }
}
