//! The rendezvous between message threads and their workers: one node per worker (its
//! token, wake stamp, list link and pipe buffer) and one slot per message thread (its
//! token, its wait list, its count of running workers), generic over the backend's
//! [`Token`].
//!
//! This module owns the two halves of a wake-up as the original does them, for every
//! backend: the worker's publish (arm, stamp, push, post) and the message thread's
//! batch (arm, take the whole list in one swap, read the clock once, stamp and post
//! each worker), plus the shutdown hand-shake. It must not block, sleep, measure or
//! spawn: waiting is the backend's (a futex, a `Notify`, a green futex), and so is
//! everything a request does between two publishes.
//!
//! Workers: each worker loop claims its node once ([`Board::worker`]); the handle is
//! the only way to publish, read the wake stamp or touch the pipe buffer, so one loop
//! per worker is enforced, not assumed.
//!
//! Shutdown: a message slot counts its running workers (`live`). A worker leaving for
//! good (its handle dropped) decrements it (`Release`) and posts the message token; the message loop exits
//! once it reads 0 (`Acquire`) after a batch. Until then it keeps waking whoever
//! pushes, so no worker is left asleep on a list, whatever the interleaving with the
//! stop flag.
//!
//! Pipe mode (`-p SIZE`): each worker node holds a SIZE-byte buffer. Ownership of the
//! buffer travels with the node: the worker owns it from the end of its wait until its
//! push; the message thread owns it from its `take_all` until it posts the worker. The
//! `Release`/`Acquire` pairs of the push/take and of post/wait order the copies, so the
//! two sides never touch the buffer at the same time.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::list::{Linked, WaitList, NIL};
use crate::token::Token;

/// One worker's rendezvous state.
#[derive(Debug)]
#[repr(align(128))]
pub struct Node<T> {
    token: T,
    wake_time: AtomicU64,
    link: AtomicUsize,
    message: usize,
    claimed: AtomicBool,
    pipe: PipeBuf,
}

impl<T> Linked for Node<T> {
    #[inline]
    fn link(&self) -> &AtomicUsize {
        &self.link
    }
}

/// One message thread's rendezvous state.
#[derive(Debug)]
#[repr(align(128))]
pub struct MessageSlot<T> {
    token: T,
    waiting: WaitList,
    live: AtomicUsize,
}

/// All nodes and message slots of one run.
#[derive(Debug)]
pub struct Board<T> {
    messages: Box<[MessageSlot<T>]>,
    nodes: Box<[Node<T>]>,
    per_message: usize,
}

impl<T: Token> Board<T> {
    /// `message_threads` slots with `per_message` workers each (worker `id` belongs to
    /// message thread `id / per_message`), and pipe buffers of `pipe_size` bytes.
    pub fn new(message_threads: usize, per_message: usize, pipe_size: usize) -> Self {
        Board {
            messages: (0..message_threads)
                .map(|_| MessageSlot {
                    token: T::default(),
                    waiting: WaitList::new(),
                    live: AtomicUsize::new(per_message),
                })
                .collect(),
            nodes: (0..message_threads * per_message)
                .map(|id| Node {
                    token: T::default(),
                    wake_time: AtomicU64::new(0),
                    link: AtomicUsize::new(NIL),
                    message: id / per_message,
                    claimed: AtomicBool::new(false),
                    pipe: PipeBuf::new(pipe_size),
                })
                .collect(),
            per_message,
        }
    }

    /// Number of message threads.
    pub fn message_threads(&self) -> usize {
        self.messages.len()
    }

    /// Number of workers, all message threads together.
    pub fn workers(&self) -> usize {
        self.nodes.len()
    }

    /// Workers per message thread.
    pub fn per_message(&self) -> usize {
        self.per_message
    }

    /// The token message thread `m` waits on.
    pub fn message_token(&self, m: usize) -> &T {
        &self.messages[m].token
    }

    /// Claims worker `id`'s side of the board for the calling loop; dropping the
    /// returned handle retires the worker (at the end of its loop, while unwinding from
    /// a panic, or at once for a worker that is never run).
    ///
    /// # Panics
    /// If `id` was claimed before: two loops for one worker would share its token and
    /// its pipe buffer.
    pub fn worker(&self, id: usize) -> WorkerSide<'_, T> {
        // Relaxed: the flag only detects a second claim; it orders nothing.
        let again = self.nodes[id].claimed.swap(true, Ordering::Relaxed);
        assert!(!again, "worker {id} claimed twice");
        WorkerSide {
            board: self,
            node: &self.nodes[id],
            id,
        }
    }

    /// Message side: workers of message thread `m` still running. The message loop
    /// ends when this is 0 after a batch.
    #[inline]
    pub fn live(&self, m: usize) -> usize {
        self.messages[m].live.load(Ordering::Acquire)
    }

    /// Message side, one round of the original: re-arm the message token, take the
    /// whole list, and if it is not empty read the clock once (`now`), then for each
    /// worker exchange the pipe message (if any), stamp the batch time and post it.
    /// `scratch` is the message thread's own pipe buffer (empty without `-p`).
    /// Returns how many workers were woken.
    #[inline]
    pub fn wake_all(&self, m: usize, scratch: &mut [u8], now: impl FnOnce() -> u64) -> u64 {
        let slot = &self.messages[m];
        slot.token.arm(); // before the take: see `list`'s orderings
        let first = slot.waiting.take_all();
        if first == NIL {
            return 0;
        }
        let now = now();
        let mut woken = 0;
        for (_, node) in WaitList::drain(&self.nodes, first) {
            self.wake(node, scratch, now);
            woken += 1;
        }
        woken
    }

    /// Message side, paced (`-R`/`-A`): like [`wake_all`](Self::wake_all) with the
    /// time already read, but wakes at most `budget` workers and pushes the others
    /// back, still waiting. Returns how many were woken.
    #[inline]
    pub fn wake_some(&self, m: usize, budget: u64, scratch: &mut [u8], now_ns: u64) -> u64 {
        let slot = &self.messages[m];
        slot.token.arm();
        let first = slot.waiting.take_all();
        let mut woken = 0;
        for (index, node) in WaitList::drain(&self.nodes, first) {
            if woken < budget {
                self.wake(node, scratch, now_ns);
                woken += 1;
            } else {
                slot.waiting.push(&self.nodes, index);
            }
        }
        woken
    }

    #[inline]
    fn wake(&self, node: &Node<T>, scratch: &mut [u8], now_ns: u64) {
        // SAFETY: the node came off the list through `take_all`, so this thread owns
        // its pipe buffer until the `post` below hands it back.
        unsafe { node.pipe.exchange(scratch) };
        node.wake_time.store(now_ns, Ordering::Relaxed); // published by the post
        node.token.post();
    }
}

/// One worker's side of the board, held by exactly one loop (see [`Board::worker`]).
#[derive(Debug)]
#[must_use = "the worker retires when this is dropped"]
pub struct WorkerSide<'a, T: Token> {
    board: &'a Board<T>,
    node: &'a Node<T>,
    id: usize,
}

impl<T: Token> WorkerSide<'_, T> {
    /// The start of a request: re-arm the worker's token, stamp it, push it on its
    /// message thread's list and post the message thread. The caller then waits on
    /// [`token`](Self::token).
    ///
    /// `stamp_ns` is any recent time (the worker passes the end of its previous
    /// request, a clock read it already has); the message thread overwrites it with
    /// the batch time before the wake.
    #[inline]
    pub fn publish(&self, stamp_ns: u64) {
        let slot = &self.board.messages[self.node.message];
        self.node.token.arm();
        self.node.wake_time.store(stamp_ns, Ordering::Relaxed); // published by the push
        slot.waiting.push(&self.board.nodes, self.id);
        slot.token.post();
    }

    /// The token this worker waits on after `publish`.
    #[inline]
    pub fn token(&self) -> &T {
        &self.node.token
    }

    /// After the wait: the batch time the message thread stamped (ordered by the
    /// token's `Acquire`).
    #[inline]
    pub fn wake_time(&self) -> u64 {
        self.node.wake_time.load(Ordering::Relaxed)
    }

    /// After the wait, in pipe mode: read the message thread's message into `scratch`
    /// (`-p` bytes) and leave the reply in the shared buffer.
    ///
    /// # Safety
    /// Call only between the end of a wait on [`token`](Self::token) and the next
    /// `publish`: that is when the protocol gives the buffer to this worker (its
    /// message thread owns it from the take until the post that ended the wait).
    #[inline]
    pub unsafe fn answer_pipe(&self, scratch: &mut [u8]) {
        // SAFETY: forwarded from the caller's contract; `self` is the only handle of
        // this worker (`Board::worker` claims it once).
        unsafe { self.node.pipe.exchange(scratch) }
    }
}

impl<T: Token> Drop for WorkerSide<'_, T> {
    /// Retires the worker: stop counting it and post the message thread so that it
    /// re-checks [`Board::live`].
    fn drop(&mut self) {
        let slot = &self.board.messages[self.node.message];
        // Release: pairs with the message loop's Acquire load in `live`, so the
        // worker's last push and post come before the exit it allows.
        slot.live.fetch_sub(1, Ordering::Release);
        slot.token.post();
    }
}

/// A buffer handed back and forth between a worker and its message thread.
struct PipeBuf(UnsafeCell<Box<[u8]>>);

// SAFETY: the buffer is only accessed through `exchange`, whose contract (exclusive
// ownership, transferred by the board's Release/Acquire pairs) rules out concurrent
// access.
unsafe impl Sync for PipeBuf {}

impl std::fmt::Debug for PipeBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PipeBuf")
    }
}

impl PipeBuf {
    fn new(size: usize) -> Self {
        PipeBuf(UnsafeCell::new(vec![0; size].into_boxed_slice()))
    }

    /// Reads the peer's message into `scratch`, then writes ours (the same bytes with
    /// the first one bumped) back. A no-op for an empty buffer.
    ///
    /// # Safety
    /// The caller must own the buffer: no other thread may access it during the call.
    #[inline]
    unsafe fn exchange(&self, scratch: &mut [u8]) {
        // SAFETY: exclusive access per the caller's contract.
        let buf = unsafe { &mut *self.0.get() };
        if buf.is_empty() {
            return;
        }
        scratch.copy_from_slice(buf);
        scratch[0] = scratch[0].wrapping_add(1);
        buf.copy_from_slice(scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::{BlockingToken, FutexToken};
    use std::sync::Arc;

    #[test]
    fn batch_wakes_everyone_with_one_stamp() {
        let board: Board<FutexToken> = Board::new(1, 3, 0);
        let workers: Vec<_> = (0..3).map(|id| board.worker(id)).collect();
        workers.iter().for_each(|w| w.publish(7));
        let mut clock_reads = 0;
        let woken = board.wake_all(0, &mut [], || {
            clock_reads += 1;
            1000
        });
        assert_eq!((woken, clock_reads), (3, 1));
        for w in &workers {
            assert_eq!(w.wake_time(), 1000);
            assert!(w.token().try_take());
        }
        assert_eq!(
            board.wake_all(0, &mut [], || unreachable!(
                "no clock read for an empty list"
            )),
            0
        );
    }

    #[test]
    fn paced_batch_keeps_the_rest_waiting() {
        let board: Board<FutexToken> = Board::new(2, 3, 0);
        let workers: Vec<_> = (3..6).map(|id| board.worker(id)).collect();
        workers.iter().for_each(|w| w.publish(1));
        assert_eq!(board.wake_some(1, 2, &mut [], 50), 2);
        assert_eq!(board.wake_some(1, 5, &mut [], 60), 1);
        assert_eq!(board.wake_some(1, 5, &mut [], 70), 0);
    }

    #[test]
    fn pipe_messages_travel_both_ways() {
        let board: Arc<Board<FutexToken>> = Arc::new(Board::new(1, 1, 4));
        let peer = board.clone();
        let worker = std::thread::spawn(move || {
            let mut scratch = [0u8; 4];
            let me = peer.worker(0);
            me.publish(0);
            me.token().wait();
            // SAFETY: between the end of the wait and the next publish.
            unsafe { me.answer_pipe(&mut scratch) };
            drop(me); // retires
            scratch[0]
        });
        let mut scratch = [0u8; 4];
        let mut woken = 0;
        while board.live(0) != 0 {
            woken += board.wake_all(0, &mut scratch, || 1);
            if board.live(0) != 0 {
                board.message_token(0).wait();
            }
        }
        assert_eq!(woken, 1);
        // The message thread read 0 and wrote 1; the worker read 1 and bumped it.
        assert_eq!(worker.join().unwrap(), 2);
    }

    #[test]
    #[should_panic(expected = "claimed twice")]
    fn a_worker_is_claimed_once() {
        let board: Board<FutexToken> = Board::new(1, 1, 0);
        let _first = board.worker(0);
        let _second = board.worker(0);
    }

    #[test]
    fn dropping_an_unrun_worker_retires_it() {
        let board: Board<FutexToken> = Board::new(1, 2, 0);
        drop(board.worker(1));
        assert_eq!(board.live(0), 1);
        assert!(
            board.message_token(0).try_take(),
            "the message thread was posted"
        );
    }
}
