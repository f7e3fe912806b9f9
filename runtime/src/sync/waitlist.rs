//! Intrusive wait lists: the one sleeping mechanism every primitive in
//! `sync` shares.
//!
//! Owns: [`Node`] (a sleeper's entry: who to wake, a key, a payload slot
//! and the token a waker leaves in it), [`List`] (a FIFO of nodes, kept
//! inside a primitive's internal lock), [`block`] (enqueue the caller's
//! node, release the lock, park until a waker hands it a token or the
//! deadline passes) and [`WakeSet`] (wakes collected under a lock and
//! performed after it is released). This is the only module of `sync`
//! with `unsafe`. Must not: know what any primitive means by its tokens;
//! switch while a lock is held; touch a node after handing it its token.
//!
//! # Protocol (docs/architecture.md "Waking a task", `wake::waiter`)
//!
//! ```text
//! sleeper (block)                               waker (under the same lock)
//! lock; decide to sleep; push node              pop node; take its Waiter;
//! unlock                                        [write its slot]; token = T (SeqCst)  <- last access
//! park(|| token != WAITING, deadline)           unlock
//! token set  -> return Some(token)              waiter.wake()
//! deadline   -> lock; token still WAITING?
//!               yes: unlink, return None
//!               no:  return Some(token)  (a waker got there first: it counts as woken)
//! ```
//!
//! *No lost wakeup.* The decision to sleep and the push happen in one
//! critical section; a waker that makes the condition true does so under
//! the same lock (or, for the futex fast path, with the fences documented
//! in `futex`), so it either runs before the sleeper's decision (which then
//! sees the condition) or finds the node. The node's token is the
//! sleeper's wait condition: `park` marks a green thread blocked (`SeqCst`)
//! *before* loading the token (`SeqCst`), and the waker stores the token
//! (`SeqCst`) before reading the task's state in `wake_task` (`SeqCst`), so
//! one of them sees the other (task::state rule 1); an OS thread relies on
//! park/unpark token semantics. A wake that arrives after the sleeper
//! already left (it saw the token without parking) is a spurious wake of
//! its next park, which every caller of `park` tolerates by looping.
//!
//! *Memory safety of the intrusive links.* A node lives on its sleeper's
//! stack (a green thread's stack does not move while it is suspended). It
//! is linked only by [`block`], which borrows it for its whole duration and
//! does not return — nor unwind, thanks to a drop guard — until the node is
//! unlinked: either a waker unlinked it (and stored its token as its last
//! access, so the sleeper may free it as soon as it sees the token), or the
//! sleeper unlinked it itself under the lock. Every access to a linked
//! node's links, waiter and slot happens under the lock of the list holding
//! it.

use super::platform::{self, AtomicU32, Lock, LockGuard, Ordering, Waiter};
use std::cell::Cell;
use std::marker::PhantomPinned;
use std::ptr;
use std::time::Instant;

/// The token of a node no waker has handed anything yet.
pub(crate) const WAITING: u32 = 0;

/// The token a sleeper leaves in its own node when it unlinked the node
/// itself because it unwinds (never a waker's token).
const LEFT: u32 = u32::MAX;

/// A sleeper's entry in a [`List`].
///
/// `T` is a payload that a waker may move into or out of the node while it
/// is linked (a channel hands a message over this way); `()` for most
/// primitives.
pub(crate) struct Node<T = ()> {
    /// Left by the waker (`SeqCst`) as its last access to the node.
    token: AtomicU32,
    /// Free for the primitive (a futex address, "I lost a race before"...).
    key: usize,
    /// Who to wake; taken by the waker.
    waiter: Cell<Option<Waiter>>,
    /// The payload.
    slot: Cell<Option<T>>,
    prev: Cell<*const Node<T>>,
    next: Cell<*const Node<T>>,
    /// Linked nodes must not move: keep `Node` `!Unpin` as documentation
    /// (it is only ever linked while borrowed by [`block`]).
    _pin: PhantomPinned,
}

impl<T> Node<T> {
    /// A node for the calling green thread or OS thread.
    pub(crate) fn new(key: usize, slot: Option<T>) -> Self {
        Node {
            token: AtomicU32::new(WAITING),
            key,
            waiter: Cell::new(Some(platform::current())),
            slot: Cell::new(slot),
            prev: Cell::new(ptr::null()),
            next: Cell::new(ptr::null()),
            _pin: PhantomPinned,
        }
    }

    /// The key given at creation.
    #[inline]
    pub(crate) fn key(&self) -> usize {
        self.key
    }

    /// Whether a waker handed this node a token (call while unlinked).
    #[inline]
    pub(crate) fn was_woken(&self) -> bool {
        let t = self.token.load(Ordering::Acquire);
        t != WAITING && t != LEFT
    }

    /// Takes the payload (the owner while unlinked, or a waker under the lock).
    #[inline]
    pub(crate) fn take_slot(&self) -> Option<T> {
        self.slot.take()
    }

    /// Puts a payload in (a waker under the lock, before waking).
    #[inline]
    pub(crate) fn put_slot(&self, v: T) {
        self.slot.set(Some(v));
    }
}

/// A FIFO of sleeping [`Node`]s. Lives inside a primitive's internal lock;
/// every method runs under that lock.
pub(crate) struct List<T = ()> {
    head: *const Node<T>,
    tail: *const Node<T>,
    len: usize,
}

// SAFETY: a `List` only holds pointers to nodes whose sleepers are parked in
// `block` (module docs); the nodes' waiters and payloads are `Send` and are
// only touched under the lock that owns the list, so moving the list (the
// lock) to another thread moves nothing that is not `Send`.
unsafe impl<T: Send> Send for List<T> {}

impl<T> Default for List<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> List<T> {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        List {
            head: ptr::null(),
            tail: ptr::null(),
            len: 0,
        }
    }

    /// Whether no one sleeps here.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// How many sleep here.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The oldest sleeper (or the newest one pushed to the front).
    #[inline]
    pub(crate) fn front(&self) -> Option<&Node<T>> {
        // SAFETY: a linked node is alive until it is unlinked under the lock
        // we hold (`&self` borrows the list, so no unlink can happen while
        // the returned reference lives).
        unsafe { self.head.as_ref() }
    }

    fn push(&mut self, node: &Node<T>, front: bool) {
        let p = node as *const Node<T>;
        if front {
            node.prev.set(ptr::null());
            node.next.set(self.head);
            // SAFETY: `head`, if any, is a linked (alive) node; we hold the lock.
            match unsafe { self.head.as_ref() } {
                Some(h) => h.prev.set(p),
                None => self.tail = p,
            }
            self.head = p;
        } else {
            node.next.set(ptr::null());
            node.prev.set(self.tail);
            // SAFETY: as above, for `tail`.
            match unsafe { self.tail.as_ref() } {
                Some(t) => t.next.set(p),
                None => self.head = p,
            }
            self.tail = p;
        }
        self.len += 1;
    }

    /// Unlinks `node`, which must be in this list.
    fn unlink(&mut self, node: &Node<T>) {
        let (prev, next) = (node.prev.get(), node.next.get());
        // SAFETY: neighbours of a linked node are linked (alive) nodes of this list.
        match unsafe { prev.as_ref() } {
            Some(p) => p.next.set(next),
            None => self.head = next,
        }
        // SAFETY: as above.
        match unsafe { next.as_ref() } {
            Some(n) => n.prev.set(prev),
            None => self.tail = prev,
        }
        node.prev.set(ptr::null());
        node.next.set(ptr::null());
        self.len -= 1;
    }

    /// Unlinks `p` and hands it `token`; returns its waiter, to be woken
    /// after the lock is released. The node must not be touched afterwards.
    fn wake_node(&mut self, p: *const Node<T>, token: u32) -> Waiter {
        debug_assert!(token != WAITING && token != LEFT);
        // SAFETY: `p` is a linked node of this list (callers found it
        // through the links, under the lock).
        let node = unsafe { &*p };
        self.unlink(node);
        let w = node.waiter.take().expect("a linked node holds its waiter");
        // Last access: from here on the sleeper may return and free the node.
        node.token.store(token, Ordering::SeqCst);
        w
    }

    /// Wakes the front sleeper with `token`; returns its waiter (wake it
    /// after releasing the lock).
    pub(crate) fn wake_front(&mut self, token: u32) -> Option<Waiter> {
        if self.head.is_null() {
            return None;
        }
        Some(self.wake_node(self.head, token))
    }

    /// Wakes the oldest sleeper whose key is `key` with `token`; returns
    /// its waiter (wake it after releasing the lock). The one-waiter case
    /// of [`List::wake_key`], without a [`WakeSet`] to fill and drop.
    pub(crate) fn wake_key_one(&mut self, key: usize, token: u32) -> Option<Waiter> {
        let mut p = self.head;
        while !p.is_null() {
            // SAFETY: `p` was reached through the links under the lock: a
            // linked node.
            let node = unsafe { &*p };
            if node.key == key {
                return Some(self.wake_node(p, token));
            }
            p = node.next.get();
        }
        None
    }

    /// Wakes every sleeper with `token` into `set`; returns how many.
    pub(crate) fn wake_all(&mut self, token: u32, set: &mut WakeSet) -> usize {
        let mut n = 0;
        while let Some(w) = self.wake_front(token) {
            set.push(w);
            n += 1;
        }
        n
    }

    /// Wakes, in FIFO order, up to `max` sleepers whose key is `key` with
    /// `token` into `set`; returns how many.
    pub(crate) fn wake_key(
        &mut self,
        key: usize,
        max: usize,
        token: u32,
        set: &mut WakeSet,
    ) -> usize {
        let mut n = 0;
        let mut p = self.head;
        while n < max && !p.is_null() {
            // SAFETY: `p` was reached through the links under the lock: a
            // linked node.
            let node = unsafe { &*p };
            let next = node.next.get();
            if node.key == key {
                set.push(self.wake_node(p, token));
                n += 1;
            }
            p = next;
        }
        n
    }
}

/// Unlinks a node on the way out of [`block`] if nobody else did: the
/// unwinding path (a panic in `before_park`, or the unwinding of a parked
/// green thread at runtime shutdown).
struct Unlinker<'a, S, T> {
    lock: &'a Lock<S>,
    list: fn(&mut S) -> &mut List<T>,
    on_leave: fn(&mut S),
    node: &'a Node<T>,
}

impl<S, T> Drop for Unlinker<'_, S, T> {
    fn drop(&mut self) {
        let mut g = self.lock.lock();
        // Under the lock a waker either already unlinked the node (and set
        // its token in the same critical section) or will not find it; a
        // node the sleeper unlinked itself holds `LEFT`.
        if self.node.token.load(Ordering::Relaxed) == WAITING {
            (self.list)(&mut g).unlink(self.node);
            (self.on_leave)(&mut g);
        }
    }
}

/// Sleeps on `list(&mut *guard)`: pushes `node` (to the front if `front`),
/// releases `guard`, runs `before_park` (e.g. a condition variable
/// releases the user's mutex there), then parks until a waker hands the
/// node a token (`Some(token)`) or `deadline` passes (`None`; the node has
/// been unlinked and nobody woke it). A node dequeued by a waker while its
/// deadline was passing reports the waker's token: it counts as woken.
///
/// Never returns while `node` is linked, even by unwinding.
pub(crate) fn block<S, T>(
    lock: &Lock<S>,
    guard: LockGuard<'_, S>,
    list: fn(&mut S) -> &mut List<T>,
    node: &Node<T>,
    front: bool,
    before_park: impl FnOnce(),
    deadline: Option<Instant>,
) -> Option<u32> {
    block_reporting(lock, guard, list, node, front, before_park, deadline).0
}

/// [`block`] for a primitive that counts its sleepers in its state:
/// `on_leave` runs under the lock when the sleeper unlinks its node
/// itself because it unwinds (not on a timeout, which the caller sees).
pub(crate) fn block_leaving<S, T>(
    lock: &Lock<S>,
    guard: LockGuard<'_, S>,
    list: fn(&mut S) -> &mut List<T>,
    on_leave: fn(&mut S),
    node: &Node<T>,
) -> Option<u32> {
    block_inner(lock, guard, list, on_leave, node, false, || {}, None).0
}

/// [`block`], also telling whether the green thread switched out: a
/// caller that owes a preemption point wherever it completes (a channel
/// operation) passes one itself when it did not. Not for a primitive whose
/// token hands it something it then holds (a mutex's hand-off): that must
/// not be preempted while holding it.
pub(crate) fn block_reporting<S, T>(
    lock: &Lock<S>,
    guard: LockGuard<'_, S>,
    list: fn(&mut S) -> &mut List<T>,
    node: &Node<T>,
    front: bool,
    before_park: impl FnOnce(),
    deadline: Option<Instant>,
) -> (Option<u32>, bool) {
    block_inner(
        lock,
        guard,
        list,
        |_| {},
        node,
        front,
        before_park,
        deadline,
    )
}

/// # Shutdown
///
/// When shutdown unwinds a sleeping green thread, the park asks whether
/// the wait was served, under the lock: if a waker handed the node a
/// token, the thread keeps it (its cancellation is deferred to its next
/// switch, `task::resumed_by_shutdown`), so a lock, a permit or a message
/// handed over is used and given back by the thread's destructors instead
/// of being lost with its stack; otherwise the sleeper unlinks its node in
/// the same critical section (so no waker can serve it afterwards), runs
/// `on_leave` and unwinds.
#[allow(clippy::too_many_arguments)]
fn block_inner<S, T>(
    lock: &Lock<S>,
    mut guard: LockGuard<'_, S>,
    list: fn(&mut S) -> &mut List<T>,
    on_leave: fn(&mut S),
    node: &Node<T>,
    front: bool,
    before_park: impl FnOnce(),
    deadline: Option<Instant>,
) -> (Option<u32>, bool) {
    node.token.store(WAITING, Ordering::Relaxed);
    list(&mut guard).push(node, front);
    drop(guard);
    let unlinker = Unlinker {
        lock,
        list,
        on_leave,
        node,
    };
    before_park();
    let mut switched = false;
    loop {
        let t = node.token.load(Ordering::SeqCst);
        if t != WAITING {
            std::mem::forget(unlinker);
            return (Some(t), switched);
        }
        let (awake, sw) = platform::park_reporting_or_cancel(
            || node.token.load(Ordering::SeqCst) != WAITING,
            deadline,
            || served_or_leave(lock, list, on_leave, node),
        );
        switched |= sw;
        if !awake {
            // The deadline passed: settle the race with wakers under the lock.
            let mut g = lock.lock();
            let t = node.token.load(Ordering::Relaxed);
            std::mem::forget(unlinker);
            if t == WAITING {
                list(&mut g).unlink(node);
                return (None, switched);
            }
            return (Some(t), switched);
        }
    }
}

/// Shutdown unwinds a sleeper whose node is (or was) in `list`: whether a
/// waker served it (it keeps the token), else — in the same critical
/// section, so that no waker can serve it afterwards — unlinks the node,
/// runs `on_leave` and marks it `LEFT` (the unwinding's [`Unlinker`] then
/// leaves it alone).
fn served_or_leave<S, T>(
    lock: &Lock<S>,
    list: fn(&mut S) -> &mut List<T>,
    on_leave: fn(&mut S),
    node: &Node<T>,
) -> bool {
    let mut g = lock.lock();
    if node.token.load(Ordering::Relaxed) != WAITING {
        return true;
    }
    list(&mut g).unlink(node);
    on_leave(&mut g);
    node.token.store(LEFT, Ordering::Relaxed);
    false
}

/// Waiters taken out of lists under a lock, woken after it is released.
/// Holds a few inline; spills to the heap only for larger batches.
pub(crate) struct WakeSet {
    inline: [Option<Waiter>; INLINE],
    n: usize,
    spill: Vec<Waiter>,
}

const INLINE: usize = 8;

impl WakeSet {
    /// An empty set.
    pub(crate) fn new() -> Self {
        WakeSet {
            inline: [const { None }; INLINE],
            n: 0,
            spill: Vec::new(),
        }
    }

    /// Adds a waiter.
    pub(crate) fn push(&mut self, w: Waiter) {
        if self.n < INLINE {
            self.inline[self.n] = Some(w);
            self.n += 1;
        } else {
            self.spill.push(w);
        }
    }

    /// Whether nobody is to be woken.
    pub(crate) fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Wakes everyone (call with no internal lock held).
    pub(crate) fn wake(mut self) {
        for w in self.inline.iter_mut().take(self.n) {
            if let Some(w) = w.take() {
                platform::wake(w);
            }
        }
        if !self.spill.is_empty() {
            for w in self.spill.drain(..) {
                platform::wake(w);
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// Shutdown settles a sleeper's node while a waker pops the list: the
    /// token goes to exactly one side. Either the waker handed the node its
    /// token and the sleeper keeps it (served), or the sleeper unlinked the
    /// node and the waker found nobody; the list is empty afterwards and
    /// `on_leave` ran exactly when the sleeper left.
    #[test]
    fn loom_shutdown_settles_a_node_against_a_waker() {
        loom::model(|| {
            let lock = Arc::new(Lock::new((List::<()>::new(), 0u32)));
            let node = Node::new(0, None);
            lock.lock().0.push(&node, false);
            let l2 = lock.clone();
            let waker = thread::spawn(move || {
                let w = l2.lock().0.wake_front(7);
                let found = w.is_some();
                if let Some(w) = w {
                    platform::wake(w);
                }
                found
            });
            let served = served_or_leave(&lock, |s| &mut s.0, |s| s.1 += 1, &node);
            let found = waker.join().unwrap();
            assert_eq!(served, found, "the token must go to exactly one side");
            let g = lock.lock();
            assert!(g.0.is_empty());
            assert_eq!(g.1, u32::from(!served), "on_leave runs only for a leave");
            assert_eq!(node.was_woken(), served);
        });
    }
}
