//! The wakelist: a lock-free multi-producer, single-consumer stack of tasks
//! to activate on one worker (the kernel's per-CPU `wake_list`, §11.2–11.3).
//!
//! Owns: the push (any thread) / take-all (the owning worker) protocol over
//! an intrusive link in each node. Must not: know what a task is beyond the
//! [`Linked`] trait, block, or allocate.
//!
//! # Protocol
//!
//! `head` points at the most recently pushed node; each node's link points
//! at the node pushed before it. A producer links its node to the head it
//! saw and publishes it with a `SeqCst` CAS: its release half makes the
//! node's contents — everything the waker wrote into the task —
//! happen-before the consumer's `Acquire` swap, and the kick that follows
//! orders the push before its look at the owner's idle state (see
//! `Worker::post` and `worker::idle`). The consumer takes the whole list
//! with one `swap(null)` and reverses it, so tasks are activated in the
//! order they were pushed (FIFO). The kernel does the same: its wake list
//! is an llist whose consumer reverses it before running the wakeups.
//!
//! Ownership: a pushed node is owned by the list (the producer hands over
//! one counted reference, [`Linked::into_raw`]); `take_all` hands ownership
//! to the consumer. A node is on at most one list at a time: the wake protocol only
//! pushes a task whose wake it has claimed (state `WAKING`).
//!
//! There is no ABA problem: nodes are only removed by the single consumer,
//! all at once, so a producer's CAS can only fail because another producer
//! pushed — the node it read as head is still on the list.

use crate::loom::{AtomicPtr, Ordering};
use std::ptr;

/// A node that can be linked into a [`WakeList`], and the counted
/// reference to it that the list holds while it is linked.
///
/// # Safety
/// `from_raw(into_raw(r))` must give back `r`, and while the raw pointer
/// is outstanding it must point at a live node that the reference keeps
/// alive (its count is not given back until `from_raw`).
pub(crate) unsafe trait Linked: Sized {
    /// The counted reference (`Arc<Self>`, or the runtime's `TaskRef`).
    type Ref;
    /// The intrusive link. Only the wakelist touches it.
    fn link(&self) -> &AtomicPtr<Self>;
    /// Gives up `r`'s count as a raw pointer.
    fn into_raw(r: Self::Ref) -> *const Self;
    /// Takes back a count given up by `into_raw`.
    ///
    /// # Safety
    /// `p` comes from `into_raw` and is taken back once.
    unsafe fn from_raw(p: *const Self) -> Self::Ref;
}

/// The lock-free MPSC stack.
pub(crate) struct WakeList<T: Linked> {
    head: AtomicPtr<T>,
}

// SAFETY: the list only moves counted references to `T` between threads;
// `T` must be shareable across threads, and its reference sendable, for
// that to be sound.
unsafe impl<T: Linked + Send + Sync> Send for WakeList<T> where T::Ref: Send {}
// SAFETY: as above; all shared access goes through the atomic head.
unsafe impl<T: Linked + Send + Sync> Sync for WakeList<T> where T::Ref: Send {}

impl<T: Linked> WakeList<T> {
    /// An empty list.
    pub(crate) fn new() -> Self {
        WakeList {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Pushes `node`. Returns `true` if the list was empty before (the
    /// caller then decides whether the owner needs a kick).
    pub(crate) fn push(&self, node: T::Ref) -> bool {
        let raw = T::into_raw(node) as *mut T;
        // SAFETY: `raw` comes from `Linked::into_raw` just above, so it
        // points at a live `T`; we own one count until the CAS publishes it.
        let link = unsafe { (*raw).link() };
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            link.store(head, Ordering::Relaxed);
            // SeqCst on success. Its release half makes the node's link and
            // the waker's writes to the task visible to the consumer that
            // acquires the head. The order against the owner's parking
            // comes from the waker's next step, `IdleState::kick`, which
            // starts with a SeqCst fence before it loads the idle state
            // (the park/kick pair in `worker::idle`); SeqCst here keeps the
            // push in that single total order too.
            match self
                .head
                .compare_exchange_weak(head, raw, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => return head.is_null(),
                Err(actual) => head = actual,
            }
        }
    }

    /// Whether the list looks empty (an idle owner calls this after the
    /// fence of `IdleState::prepare_park`, see `worker::idle`).
    pub(crate) fn is_empty(&self) -> bool {
        self.head.load(Ordering::SeqCst).is_null()
    }

    /// Takes every node, in push order (FIFO).
    pub(crate) fn take_all(&self) -> Drain<T> {
        // Fast path: a relaxed peek avoids the write when empty.
        if self.head.load(Ordering::Relaxed).is_null() {
            return Drain {
                next: ptr::null_mut(),
            };
        }
        // Acquire pairs with the producers' release CAS.
        let mut node = self.head.swap(ptr::null_mut(), Ordering::Acquire);
        // Reverse LIFO → FIFO.
        let mut reversed: *mut T = ptr::null_mut();
        while !node.is_null() {
            // SAFETY: every node on the list is a live node whose count
            // `push` gave up; after the swap only this consumer can reach it.
            let link = unsafe { (*node).link() };
            let next = link.load(Ordering::Relaxed);
            link.store(reversed, Ordering::Relaxed);
            reversed = node;
            node = next;
        }
        Drain { next: reversed }
    }
}

impl<T: Linked> Drop for WakeList<T> {
    fn drop(&mut self) {
        for node in self.take_all() {
            drop(node);
        }
    }
}

/// The nodes taken by [`WakeList::take_all`], oldest first.
pub(crate) struct Drain<T: Linked> {
    next: *mut T,
}

impl<T: Linked> Iterator for Drain<T> {
    type Item = T::Ref;
    fn next(&mut self) -> Option<T::Ref> {
        if self.next.is_null() {
            return None;
        }
        let raw = self.next;
        // SAFETY: the drain exclusively owns the reversed chain; each node is
        // a count given up by `push`, taken back exactly once here.
        unsafe {
            self.next = (*raw).link().load(Ordering::Relaxed);
            (*raw).link().store(ptr::null_mut(), Ordering::Relaxed);
            Some(T::from_raw(raw))
        }
    }
}

impl<T: Linked> Drop for Drain<T> {
    fn drop(&mut self) {
        for node in self.by_ref() {
            drop(node);
        }
    }
}

/// The node type of the unit tests and the loom models.
#[cfg(test)]
mod fixture {
    use super::*;
    use std::sync::Arc;

    pub(super) struct Node {
        pub(super) value: usize,
        link: AtomicPtr<Node>,
    }
    // SAFETY: `Arc::into_raw` and `Arc::from_raw` are inverse and the raw
    // pointer keeps its count.
    unsafe impl Linked for Node {
        type Ref = Arc<Node>;
        fn link(&self) -> &AtomicPtr<Node> {
            &self.link
        }
        fn into_raw(r: Arc<Node>) -> *const Node {
            Arc::into_raw(r)
        }
        unsafe fn from_raw(p: *const Node) -> Arc<Node> {
            // SAFETY: the caller's contract (from `into_raw`, once).
            unsafe { Arc::from_raw(p) }
        }
    }
    pub(super) fn node(value: usize) -> Arc<Node> {
        Arc::new(Node {
            value,
            link: AtomicPtr::new(ptr::null_mut()),
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::fixture::{node, Node};
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_order_and_empty_flag() {
        let list = WakeList::<Node>::new();
        assert!(list.push(node(1)));
        assert!(!list.push(node(2)));
        assert!(!list.push(node(3)));
        let got: Vec<usize> = list.take_all().map(|n| n.value).collect();
        assert_eq!(got, vec![1, 2, 3]);
        assert!(list.is_empty());
        assert!(list.push(node(4)));
    }

    #[test]
    fn concurrent_pushes_lose_nothing() {
        let list = Arc::new(WakeList::<Node>::new());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let list = list.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000 {
                        list.push(node(t * 10_000 + i));
                    }
                })
            })
            .collect();
        let mut seen = vec![false; 40_000];
        let mut count = 0;
        while count < 40_000 {
            for n in list.take_all() {
                assert!(!seen[n.value]);
                seen[n.value] = true;
                count += 1;
            }
        }
        for t in threads {
            t.join().unwrap();
        }
        // per-producer order is preserved
        assert!(list.is_empty());
    }

    #[test]
    fn dropping_a_list_frees_its_nodes() {
        let n = node(7);
        let list = WakeList::<Node>::new();
        list.push(n.clone());
        assert_eq!(Arc::strong_count(&n), 2);
        drop(list);
        assert_eq!(Arc::strong_count(&n), 1);
    }
}

/// Loom models: `RUSTFLAGS="--cfg loom" cargo test -p eevdf-rt --lib --release loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::fixture::{node, Node};
    use super::*;
    use loom::sync::Arc as LArc;

    /// Two producers push two nodes each while the consumer drains: every
    /// node arrives exactly once and each producer's nodes arrive in order.
    #[test]
    fn loom_wakelist_mpsc() {
        loom::model(|| {
            let list = LArc::new(WakeList::<Node>::new());
            let producers: Vec<_> = (0..2)
                .map(|p| {
                    let list = list.clone();
                    loom::thread::spawn(move || {
                        list.push(node(p * 10));
                        list.push(node(p * 10 + 1));
                    })
                })
                .collect();
            let mut got = Vec::new();
            got.extend(list.take_all().map(|n| n.value));
            for p in producers {
                p.join().unwrap();
            }
            got.extend(list.take_all().map(|n| n.value));
            let mut sorted = got.clone();
            sorted.sort();
            assert_eq!(sorted, vec![0, 1, 10, 11]);
            for p in [0, 10] {
                let a = got.iter().position(|v| *v == p).unwrap();
                let b = got.iter().position(|v| *v == p + 1).unwrap();
                assert!(a < b, "per-producer FIFO violated: {got:?}");
            }
        });
    }
}
