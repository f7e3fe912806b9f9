//! Multi-producer multi-consumer channels for green threads and OS
//! threads, with crossbeam-channel's API and disconnection rules.
//!
//! Owns: [`bounded`], [`unbounded`], [`Sender`], [`Receiver`], their
//! iterators and [`error`] types. Must not: run user code (a message's
//! `Drop`) or switch while the channel's internal lock is held.
//!
//! # Design: one short critical section, direct handoff to sleepers
//!
//! A channel is one internal lock over a ring buffer (`VecDeque`) and two
//! wait lists: receivers sleeping on an empty channel, senders sleeping on
//! a full one. Every operation is one critical section of a few dozen
//! instructions; contention is bounded by the number of workers (green
//! threads never hold the lock across a switch), so a lock beats a
//! lock-free queue's extra atomics here. Sleepers never retry, because
//! the waker does their work for them, Go-style:
//!
//! * a sender that finds a sleeping receiver moves the message straight
//!   into the receiver's node (the buffer is empty whenever receivers
//!   sleep) and wakes it with `DONE`;
//! * a sleeping sender's node carries its message; a receiver that frees
//!   a slot of a full buffer moves the oldest sleeping sender's message
//!   into the buffer and wakes it with `DONE`; on a rendezvous channel
//!   (`bounded(0)`) the receiver takes the message out of the sender's
//!   node directly, so a send completes exactly when a receiver has it;
//! * the last sender (receiver) to go wakes every sleeping receiver
//!   (sender) with `DISCONNECTED`; a sender gets its message back.
//!
//! *No lost wakeup, no lost message.* Whether to sleep is decided in the
//! same critical section that queues the sleeper's node; every state
//! change that could satisfy a sleeper (a message, a free slot, a
//! disconnection) happens under that lock and dequeues the sleeper it
//! satisfies, handing the result over in the node. A sleeper whose
//! timeout races with that handoff finds its token set when it takes the
//! lock to leave, and returns the handed-over result (a received message,
//! a completed send) rather than a timeout — nothing is dropped. The
//! token/park handshake itself is `waitlist::block`'s.
//!
//! Invariants under the lock: receivers sleep only while the buffer is
//! empty and no sender sleeps; senders sleep only while the buffer is
//! full (always, for capacity 0) and no receiver sleeps.
//!
//! Messages are FIFO per channel; sleepers are served FIFO.

pub mod error;

pub use error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};

use super::platform::{self, AtomicUsize, Lock, Ordering, Waiter};
use super::waitlist::{self, List, Node, WakeSet};
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Wake token: your send/receive was completed for you.
const DONE: u32 = 1;
/// Wake token: the other side is gone.
const DISCONNECTED: u32 = 2;

/// Initial buffer allocation of a bounded channel, at most.
const PREALLOC: usize = 1024;

struct State<T> {
    buf: VecDeque<T>,
    /// Receivers sleeping on an empty channel; a sender fills their slot.
    receivers: List<T>,
    /// Senders sleeping on a full channel; their slot holds their message.
    senders: List<T>,
    senders_gone: bool,
    receivers_gone: bool,
}

struct Chan<T> {
    state: Lock<State<T>>,
    /// `None`: unbounded.
    cap: Option<usize>,
    sender_count: AtomicUsize,
    receiver_count: AtomicUsize,
}

/// How long an operation may wait.
#[derive(Clone, Copy)]
enum Wait {
    No,
    Until(Option<Instant>),
}

impl Wait {
    /// The preemption point of an operation that may wait but completed
    /// without waiting (the kernel's `might_sleep`). Each call passes
    /// exactly one: here (also after a wait that did not switch), in
    /// [`wake_one`], or in the switch of its wait.
    #[inline]
    fn preempt(self) {
        if let Wait::Until(_) = self {
            platform::preempt();
        }
    }
}

enum SendFail<T> {
    Full(T),
    Disconnected(T),
    Timeout(T),
}

enum RecvFail {
    Empty,
    Disconnected,
    Timeout,
}

impl<T> Chan<T> {
    fn new(cap: Option<usize>) -> Self {
        let buf = match cap {
            Some(c) => VecDeque::with_capacity(c.min(PREALLOC)),
            None => VecDeque::new(),
        };
        Chan {
            state: Lock::new(State {
                buf,
                receivers: List::new(),
                senders: List::new(),
                senders_gone: false,
                receivers_gone: false,
            }),
            cap,
            sender_count: AtomicUsize::new(1),
            receiver_count: AtomicUsize::new(1),
        }
    }

    fn send(&self, msg: T, wait: Wait) -> Result<(), SendFail<T>> {
        let mut g = self.state.lock();
        if g.receivers_gone {
            drop(g);
            wait.preempt();
            return Err(SendFail::Disconnected(msg));
        }
        // A sleeping receiver: the buffer is empty; hand it the message.
        if let Some(r) = g.receivers.front() {
            r.put_slot(msg);
            let w = g.receivers.wake_front(DONE);
            drop(g);
            wake_one(w);
            return Ok(());
        }
        if self.cap.is_none_or(|c| g.buf.len() < c) {
            g.buf.push_back(msg);
            drop(g);
            wait.preempt();
            return Ok(());
        }
        let Wait::Until(deadline) = wait else {
            drop(g);
            return Err(SendFail::Full(msg));
        };
        let node = Node::new(0, Some(msg));
        let (r, switched) = waitlist::block_reporting(
            &self.state,
            g,
            |s| &mut s.senders,
            &node,
            false,
            || {},
            deadline,
        );
        if !switched {
            wait.preempt(); // completed without a switch
        }
        match r {
            Some(DONE) => Ok(()),
            Some(_) => Err(SendFail::Disconnected(take(&node))),
            None => Err(SendFail::Timeout(take(&node))),
        }
    }

    fn recv(&self, wait: Wait) -> Result<T, RecvFail> {
        let mut g = self.state.lock();
        if let Some(msg) = g.buf.pop_front() {
            // A slot is free: move the oldest sleeping sender's message in.
            let w = match g.senders.front() {
                Some(s) => {
                    let m = take(s);
                    g.buf.push_back(m);
                    g.senders.wake_front(DONE)
                }
                None => None,
            };
            drop(g);
            if w.is_some() {
                wake_one(w);
            } else {
                wait.preempt();
            }
            return Ok(msg);
        }
        // Rendezvous: take the message straight from a sleeping sender.
        if let Some(s) = g.senders.front() {
            let msg = take(s);
            let w = g.senders.wake_front(DONE);
            drop(g);
            wake_one(w);
            return Ok(msg);
        }
        if g.senders_gone {
            drop(g);
            wait.preempt();
            return Err(RecvFail::Disconnected);
        }
        let Wait::Until(deadline) = wait else {
            return Err(RecvFail::Empty);
        };
        let node = Node::new(0, None);
        let (r, switched) = waitlist::block_reporting(
            &self.state,
            g,
            |s| &mut s.receivers,
            &node,
            false,
            || {},
            deadline,
        );
        if !switched {
            wait.preempt(); // completed without a switch
        }
        match r {
            Some(DONE) => Ok(take(&node)),
            Some(_) => Err(RecvFail::Disconnected),
            None => Err(RecvFail::Timeout),
        }
    }

    fn disconnect_senders(&self) {
        let mut set = WakeSet::new();
        {
            let mut g = self.state.lock();
            g.senders_gone = true;
            // Sleeping receivers imply an empty buffer: nothing more will come.
            g.receivers.wake_all(DISCONNECTED, &mut set);
        }
        set.wake();
    }

    fn disconnect_receivers(&self) {
        let mut set = WakeSet::new();
        let dropped = {
            let mut g = self.state.lock();
            g.receivers_gone = true;
            g.senders.wake_all(DISCONNECTED, &mut set);
            // Nobody can receive these any more (crossbeam discards them
            // too); drop them outside the lock.
            std::mem::take(&mut g.buf)
        };
        set.wake();
        drop(dropped);
    }

    fn len(&self) -> usize {
        self.state.lock().buf.len()
    }

    fn is_full(&self) -> bool {
        match self.cap {
            None => false,
            Some(c) => self.len() >= c,
        }
    }
}

/// Takes the message out of a node's slot (present by the protocol).
fn take<T>(n: &Node<T>) -> T {
    n.take_slot()
        .expect("a completed channel node holds its message")
}

/// Wakes a sleeper (lock released) with the sync hint — a channel's
/// caller usually blocks next, like a kernel pipe writer (WA_SYNC) — and
/// honours a pending reschedule.
#[inline]
fn wake_one(w: Option<Waiter>) {
    if let Some(w) = w {
        platform::wake_sync_then_preempt(w);
    }
}

/// A channel that holds any number of messages: `send` never blocks.
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
/// let h = rt.spawn(move || {
///     for i in 0..10 {
///         tx.send(i).unwrap();
///     }
/// });
/// assert_eq!(rx.iter().sum::<i32>(), 45); // ends when the sender is gone
/// h.join().unwrap();
/// ```
pub fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
    pair(Chan::new(None))
}

/// A channel that holds at most `cap` messages: `send` waits while it is
/// full. `bounded(0)` is a rendezvous channel: a send completes only when
/// a receiver takes the message.
///
/// ```
/// use std::time::Duration;
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let (tx, rx) = eevdf_rt::sync::channel::bounded(0);
/// let h = rt.spawn(move || tx.send("hello").unwrap()); // waits for the receiver
/// std::thread::sleep(Duration::from_millis(5));
/// assert!(!h.is_finished());
/// assert_eq!(rx.recv(), Ok("hello"));
/// h.join().unwrap();
/// ```
pub fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
    pair(Chan::new(Some(cap)))
}

fn pair<T>(chan: Chan<T>) -> (Sender<T>, Receiver<T>) {
    let chan = Arc::new(chan);
    (Sender { chan: chan.clone() }, Receiver { chan })
}

/// The sending side of a channel. Clone it for more producers; the
/// channel disconnects for receivers when the last clone is dropped.
///
/// `send` and `recv` that may wait are preemption points.
///
/// ```
/// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
/// let tx2 = tx.clone();
/// tx.send(1).unwrap();
/// tx2.send(2).unwrap();
/// drop((tx, tx2));
/// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
/// ```
pub struct Sender<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Sender<T> {
    /// Sends a message, waiting while the channel is full. Fails, giving
    /// the message back, if every receiver is gone (also if they go while
    /// this waits).
    ///
    /// ```
    /// let (tx, rx) = eevdf_rt::sync::channel::bounded(1);
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.recv(), Ok(1));
    /// drop(rx);
    /// assert_eq!(tx.send(2).unwrap_err().into_inner(), 2);
    /// ```
    pub fn send(&self, msg: T) -> Result<(), SendError<T>> {
        match self.chan.send(msg, Wait::Until(None)) {
            Ok(()) => Ok(()),
            Err(SendFail::Disconnected(m) | SendFail::Full(m) | SendFail::Timeout(m)) => {
                Err(SendError(m))
            }
        }
    }

    /// Sends a message if that is possible without waiting.
    ///
    /// ```
    /// use eevdf_rt::sync::channel::{bounded, TrySendError};
    /// let (tx, _rx) = bounded(1);
    /// assert_eq!(tx.try_send(1), Ok(()));
    /// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
    /// ```
    pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        match self.chan.send(msg, Wait::No) {
            Ok(()) => Ok(()),
            Err(SendFail::Full(m) | SendFail::Timeout(m)) => Err(TrySendError::Full(m)),
            Err(SendFail::Disconnected(m)) => Err(TrySendError::Disconnected(m)),
        }
    }

    /// Sends a message, waiting at most `timeout` while the channel is full.
    ///
    /// ```
    /// use eevdf_rt::sync::channel::{bounded, SendTimeoutError};
    /// use std::time::Duration;
    /// let (tx, _rx) = bounded(1);
    /// tx.send(1).unwrap();
    /// assert_eq!(
    ///     tx.send_timeout(2, Duration::from_millis(1)),
    ///     Err(SendTimeoutError::Timeout(2))
    /// );
    /// ```
    pub fn send_timeout(&self, msg: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        self.send_until(msg, platform::deadline_after(timeout))
    }

    /// Sends a message, waiting at most until `deadline` while the channel is full.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (tx, rx) = eevdf_rt::sync::channel::bounded(1);
    /// tx.send_deadline(1, Instant::now() + Duration::from_millis(1)).unwrap();
    /// assert_eq!(rx.recv(), Ok(1));
    /// ```
    pub fn send_deadline(&self, msg: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
        self.send_until(msg, Some(deadline))
    }

    fn send_until(&self, msg: T, deadline: Option<Instant>) -> Result<(), SendTimeoutError<T>> {
        match self.chan.send(msg, Wait::Until(deadline)) {
            Ok(()) => Ok(()),
            Err(SendFail::Full(m) | SendFail::Timeout(m)) => Err(SendTimeoutError::Timeout(m)),
            Err(SendFail::Disconnected(m)) => Err(SendTimeoutError::Disconnected(m)),
        }
    }

    /// Messages in the channel.
    ///
    /// ```
    /// let (tx, _rx) = eevdf_rt::sync::channel::unbounded();
    /// tx.send(()).unwrap();
    /// assert_eq!(tx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan.len()
    }

    /// Whether the channel holds no message.
    ///
    /// ```
    /// let (tx, _rx) = eevdf_rt::sync::channel::unbounded::<()>();
    /// assert!(tx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the channel is full (always, for a rendezvous channel; never
    /// for an unbounded one).
    ///
    /// ```
    /// let (tx, _rx) = eevdf_rt::sync::channel::bounded(1);
    /// tx.send(()).unwrap();
    /// assert!(tx.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.chan.is_full()
    }

    /// The channel's capacity: `None` if unbounded.
    ///
    /// ```
    /// use eevdf_rt::sync::channel::{bounded, unbounded};
    /// assert_eq!(bounded::<()>(3).0.capacity(), Some(3));
    /// assert_eq!(unbounded::<()>().0.capacity(), None);
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.chan.cap
    }

    /// Whether two senders belong to the same channel.
    ///
    /// ```
    /// let (tx, _rx) = eevdf_rt::sync::channel::unbounded::<()>();
    /// assert!(tx.same_channel(&tx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        Arc::ptr_eq(&self.chan, &other.chan)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.chan.sender_count.fetch_add(1, Ordering::Relaxed);
        Sender {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        if self.chan.sender_count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.chan.disconnect_senders();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sender { .. }")
    }
}

/// The receiving side of a channel. Clone it for more consumers (each
/// message goes to one of them); the channel disconnects for senders when
/// the last clone is dropped, and messages still buffered are dropped.
///
/// ```
/// let (tx, rx) = eevdf_rt::sync::channel::bounded(4);
/// let rx2 = rx.clone();
/// tx.send(1).unwrap();
/// tx.send(2).unwrap();
/// assert_eq!(rx.recv().unwrap() + rx2.recv().unwrap(), 3);
/// ```
pub struct Receiver<T> {
    chan: Arc<Chan<T>>,
}

impl<T> Receiver<T> {
    /// Receives a message, waiting while the channel is empty. Buffered
    /// messages are still delivered after every sender is gone; then it
    /// fails.
    ///
    /// ```
    /// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
    /// tx.send(7).unwrap();
    /// drop(tx);
    /// assert_eq!(rx.recv(), Ok(7));
    /// assert!(rx.recv().is_err());
    /// ```
    pub fn recv(&self) -> Result<T, RecvError> {
        self.chan.recv(Wait::Until(None)).map_err(|_| RecvError)
    }

    /// Receives a message if one is ready.
    ///
    /// ```
    /// use eevdf_rt::sync::channel::{unbounded, TryRecvError};
    /// let (tx, rx) = unbounded();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.try_recv(), Ok(1));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        self.chan.recv(Wait::No).map_err(|e| match e {
            RecvFail::Disconnected => TryRecvError::Disconnected,
            RecvFail::Empty | RecvFail::Timeout => TryRecvError::Empty,
        })
    }

    /// Receives a message, waiting at most `timeout`.
    ///
    /// ```
    /// use eevdf_rt::sync::channel::{unbounded, RecvTimeoutError};
    /// use std::time::Duration;
    /// let (tx, rx) = unbounded::<i32>();
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
    /// drop(tx);
    /// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Disconnected));
    /// ```
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        self.recv_until(platform::deadline_after(timeout))
    }

    /// Receives a message, waiting at most until `deadline`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
    /// tx.send(1).unwrap();
    /// assert_eq!(rx.recv_deadline(Instant::now() + Duration::from_millis(1)), Ok(1));
    /// ```
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        self.recv_until(Some(deadline))
    }

    fn recv_until(&self, deadline: Option<Instant>) -> Result<T, RecvTimeoutError> {
        self.chan.recv(Wait::Until(deadline)).map_err(|e| match e {
            RecvFail::Disconnected => RecvTimeoutError::Disconnected,
            RecvFail::Empty | RecvFail::Timeout => RecvTimeoutError::Timeout,
        })
    }

    /// A blocking iterator: yields messages until the channel is empty and
    /// every sender is gone.
    ///
    /// ```
    /// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
    /// std::thread::spawn(move || {
    ///     tx.send(1).unwrap();
    ///     tx.send(2).unwrap();
    /// });
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// A non-blocking iterator: yields the messages ready now.
    ///
    /// ```
    /// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
    /// tx.send(1).unwrap();
    /// tx.send(2).unwrap();
    /// assert_eq!(rx.try_iter().count(), 2);
    /// assert_eq!(rx.try_iter().count(), 0);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }

    /// Messages in the channel.
    ///
    /// ```
    /// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
    /// tx.send(()).unwrap();
    /// assert_eq!(rx.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.chan.len()
    }

    /// Whether the channel holds no message.
    ///
    /// ```
    /// let (_tx, rx) = eevdf_rt::sync::channel::unbounded::<()>();
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the channel is full.
    ///
    /// ```
    /// let (_tx, rx) = eevdf_rt::sync::channel::bounded::<()>(0);
    /// assert!(rx.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.chan.is_full()
    }

    /// The channel's capacity: `None` if unbounded.
    ///
    /// ```
    /// assert_eq!(eevdf_rt::sync::channel::bounded::<()>(0).1.capacity(), Some(0));
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.chan.cap
    }

    /// Whether two receivers belong to the same channel.
    ///
    /// ```
    /// let (_tx, rx) = eevdf_rt::sync::channel::unbounded::<()>();
    /// assert!(rx.same_channel(&rx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        Arc::ptr_eq(&self.chan, &other.chan)
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.chan.receiver_count.fetch_add(1, Ordering::Relaxed);
        Receiver {
            chan: self.chan.clone(),
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        if self.chan.receiver_count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.chan.disconnect_receivers();
        }
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Receiver { .. }")
    }
}

/// Blocking iterator over a [`Receiver`]'s messages ([`Receiver::iter`]).
///
/// ```
/// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
/// tx.send(1).unwrap();
/// drop(tx);
/// let mut it = rx.iter();
/// assert_eq!(it.next(), Some(1));
/// assert_eq!(it.next(), None);
/// ```
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> fmt::Debug for Iter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Iter { .. }")
    }
}

/// Non-blocking iterator over a [`Receiver`]'s ready messages ([`Receiver::try_iter`]).
///
/// ```
/// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
/// tx.send(1).unwrap();
/// let mut it = rx.try_iter();
/// assert_eq!(it.next(), Some(1));
/// assert_eq!(it.next(), None); // empty now, though still connected
/// ```
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

impl<T> fmt::Debug for TryIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TryIter { .. }")
    }
}

/// Owning blocking iterator over a [`Receiver`]'s messages.
///
/// ```
/// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
/// tx.send('a').unwrap();
/// drop(tx);
/// let v: Vec<char> = rx.into_iter().collect();
/// assert_eq!(v, ['a']);
/// ```
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> fmt::Debug for IntoIter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IntoIter { .. }")
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;
    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;
    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}
