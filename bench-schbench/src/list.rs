//! The lock-free list of workers waiting for their message thread: a Treiber stack on
//! which workers push themselves and from which the message thread takes everything
//! with one swap.
//!
//! This module owns the list and its memory orderings. It must not block, wake or
//! allocate. Nodes live in a slice owned by the caller and are named by index, so the
//! list is safe code with no lifetimes to prove; `NIL` ends a chain.
//!
//! No ABA: there is no single-element pop. A push compares against a head it read;
//! if anything changed in between, the compare fails and the push retries, and a taken
//! chain is never reachable from the head again until its nodes push themselves anew.
//!
//! Orderings:
//! - A push writes the node's link (relaxed), then publishes the node with a
//!   compare-exchange that is `Release` on success, so everything the pusher wrote
//!   before (its link, its wake stamp, the re-armed token word) is visible to whoever
//!   takes the node.
//! - `take_all` swaps the head with `AcqRel`. `Acquire` makes the pushed nodes' writes
//!   visible (every successful push is a read-modify-write, so a chain of pushes is one
//!   release sequence and the swap synchronises with all of them). `Release`, paired
//!   with the pushers' `Acquire` on success, orders the taker's earlier writes before
//!   any later push: the message thread re-arms its token word *before* taking, and a
//!   worker whose push lands after the take must see that re-arm when it posts, or its
//!   post would find the stale token, skip the wake, and the message thread would sleep
//!   with a worker on its list (a lost wakeup).
//! - Following a taken chain reads links relaxed (ordered by the swap's `Acquire`), and
//!   reads each link *before* handing the node back, because a woken worker pushes
//!   itself again and overwrites its link.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The end of a chain.
pub const NIL: usize = usize::MAX;

/// A node that can be on a [`WaitList`]: it owns one link word.
pub trait Linked {
    /// The link to the next node's index (or `NIL`).
    fn link(&self) -> &AtomicUsize;
}

/// A Treiber stack of node indices.
#[derive(Debug)]
pub struct WaitList {
    head: AtomicUsize,
}

impl Default for WaitList {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitList {
    /// An empty list.
    pub const fn new() -> Self {
        WaitList {
            head: AtomicUsize::new(NIL),
        }
    }

    /// Pushes node `index` of `nodes`. The node must not be on any list.
    #[inline]
    pub fn push<N: Linked>(&self, nodes: &[N], index: usize) {
        let link = nodes[index].link();
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            link.store(head, Ordering::Relaxed);
            match self
                .head
                .compare_exchange_weak(head, index, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Takes the whole list in one swap; returns its first index (or `NIL`).
    #[inline]
    pub fn take_all(&self) -> usize {
        self.head.swap(NIL, Ordering::AcqRel)
    }

    /// Iterates a chain returned by `take_all`, most recently pushed first. Each node's
    /// link is read before the node is yielded, so the caller may hand it back (wake
    /// it) at once.
    pub fn drain<N: Linked>(nodes: &[N], first: usize) -> Drain<'_, N> {
        Drain { nodes, next: first }
    }
}

/// Iterator over a taken chain: yields `(index, node)`.
#[derive(Debug)]
pub struct Drain<'a, N> {
    nodes: &'a [N],
    next: usize,
}

impl<'a, N: Linked> Iterator for Drain<'a, N> {
    type Item = (usize, &'a N);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.next == NIL {
            return None;
        }
        let index = self.next;
        let node = &self.nodes[index];
        self.next = node.link().load(Ordering::Relaxed);
        Some((index, node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[derive(Default)]
    struct Node(AtomicUsize);
    impl Linked for Node {
        fn link(&self) -> &AtomicUsize {
            &self.0
        }
    }

    #[test]
    fn lifo_and_take_all() {
        let nodes: Vec<Node> = (0..4).map(|_| Node::default()).collect();
        let list = WaitList::new();
        assert_eq!(list.take_all(), NIL);
        for i in [2, 0, 3] {
            list.push(&nodes, i);
        }
        let first = list.take_all();
        assert_eq!(list.take_all(), NIL);
        let order: Vec<usize> = WaitList::drain(&nodes, first).map(|(i, _)| i).collect();
        assert_eq!(order, [3, 0, 2]);
    }

    #[test]
    fn node_can_be_pushed_again_while_draining() {
        let nodes: Vec<Node> = (0..3).map(|_| Node::default()).collect();
        let list = WaitList::new();
        (0..3).for_each(|i| list.push(&nodes, i));
        let first = list.take_all();
        for (i, _) in WaitList::drain(&nodes, first) {
            list.push(&nodes, i); // overwrites the link we already followed
        }
        let again: Vec<usize> = WaitList::drain(&nodes, list.take_all())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(again, [0, 1, 2]);
    }

    #[test]
    fn concurrent_pushes_are_all_taken_once() {
        const THREADS: usize = 4;
        const ROUNDS: usize = 2_000;
        let nodes: Arc<Vec<Node>> = Arc::new((0..THREADS).map(|_| Node::default()).collect());
        let list = Arc::new(WaitList::new());
        let taken: Arc<Vec<AtomicUsize>> =
            Arc::new((0..THREADS).map(|_| AtomicUsize::new(0)).collect());
        let pushers: Vec<_> = (0..THREADS)
            .map(|i| {
                let (nodes, list, taken) = (nodes.clone(), list.clone(), taken.clone());
                std::thread::spawn(move || {
                    for round in 0..ROUNDS {
                        list.push(&nodes, i);
                        // Wait until the taker has consumed this push before pushing again.
                        while taken[i].load(Ordering::Acquire) <= round {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut seen = 0;
        while seen < THREADS * ROUNDS {
            let first = list.take_all();
            if first == NIL {
                std::thread::yield_now();
            }
            for (i, _) in WaitList::drain(&nodes, first) {
                taken[i].fetch_add(1, Ordering::Release);
                seen += 1;
            }
        }
        pushers.into_iter().for_each(|t| t.join().unwrap());
        assert!(taken.iter().all(|t| t.load(Ordering::Relaxed) == ROUNDS));
    }
}
