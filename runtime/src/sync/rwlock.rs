//! A green-aware reader-writer lock.
//!
//! Owns: [`RwLock`] and its guards: a state word (reader count and three
//! flags) and two wait lists (readers, writers) under one internal lock.
//! Must not: switch while the internal lock is held; let either side
//! starve.
//!
//! # Policy: phase-fair, with direct handoff
//!
//! * A reader may enter only while no writer holds the lock **or waits**
//!   for it (arriving readers queue behind a waiting writer, so a stream
//!   of readers cannot starve writers).
//! * Releases with sleepers hand the lock over directly — the sleepers
//!   were counted in by the releaser, so nobody can barge in between:
//!   the last reader out hands it to the oldest writer; a writer that
//!   leaves hands it to **all** sleeping readers if there are any (so a
//!   stream of writers cannot starve readers), else to the next writer.
//!
//! Read and write phases therefore alternate whenever both sides wait.
//! Uncontended read/write lock and unlock are one CAS (or one
//! `fetch_sub`).
//!
//! # No lost wakeup
//!
//! Every change of the `*_PARKED` flags happens under the internal lock,
//! with a CAS that fails if the word changed since it was read there; a
//! releaser whose fast path sees a flag takes the same lock and finds the
//! sleeper's node, which was pushed in the same critical section as its
//! flag.
//!
//! # Happens-before
//!
//! What a writer wrote must be visible to every later reader and writer,
//! and a reader's reads must come before the next writer's writes, by
//! whichever path the lock changes hands:
//! * fast paths: an `Acquire` CAS to enter, a `Release` CAS or decrement
//!   to leave;
//! * hand-offs to sleepers: the wake token, stored and read under the
//!   wait-list protocol;
//! * a store that admits readers (`admit_readers`, the stale-flag repair)
//!   is a `Release`: new readers may enter on the fast path behind the
//!   admitted ones, and read that value with their `Acquire` CAS;
//! * a reader's decrement is `AcqRel`: the last reader out may hand the
//!   lock to a sleeping writer, which never reads the state word, so the
//!   last reader must first acquire the other readers' decrements.
//!
//! Loom models check both of the last two (`sync::loom_tests`).

use super::platform::{self, AtomicUsize, Lock, Ordering};
use super::waitlist::{self, List, Node, WakeSet};
use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

const WRITER: usize = 1;
/// Some writer sleeps in the writers list.
const WRITERS_PARKED: usize = 2;
/// Some reader sleeps in the readers list.
const READERS_PARKED: usize = 4;
/// One reader.
const READER: usize = 8;

/// Wake token: the lock (read or write, per list) was handed to you.
const HANDOFF: u32 = 1;

struct Lists {
    readers: List,
    writers: List,
}

impl Lists {
    const fn new() -> Self {
        Lists {
            readers: List::new(),
            writers: List::new(),
        }
    }
}

/// A reader-writer lock for green threads and OS threads, like
/// `std::sync::RwLock` without poisoning.
///
/// Phase-fair: readers arriving while a writer waits queue behind it, and
/// a writer releasing the lock lets every waiting reader in before the
/// next writer, so neither side starves. `read` and `write` are
/// preemption points.
///
/// ```
/// use eevdf_rt::sync::RwLock;
/// use std::sync::Arc;
///
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let lock = Arc::new(RwLock::new(vec![1, 2, 3]));
/// let l2 = lock.clone();
/// let sum = rt.spawn(move || l2.read().iter().sum::<i32>()).join().unwrap();
/// assert_eq!(sum, 6);
/// lock.write().push(4);
/// assert_eq!(lock.read().len(), 4);
/// ```
pub struct RwLock<T: ?Sized> {
    state: AtomicUsize,
    lists: Lock<Lists>,
    data: UnsafeCell<T>,
}

// SAFETY: readers on several threads share `&T` (needs `T: Sync`), a
// writer gets `&mut T` on some thread (needs `T: Send`) — std's rule.
unsafe impl<T: ?Sized + Send + Sync> Sync for RwLock<T> {}
// SAFETY: owning the lock is owning the `T`.
unsafe impl<T: ?Sized + Send> Send for RwLock<T> {}

impl<T> RwLock<T> {
    platform::const_unless_loom! {
        /// A new unlocked lock holding `value` (a `const fn`: usable in statics).
        ///
        /// ```
        /// let l = eevdf_rt::sync::RwLock::new(1);
        /// assert_eq!(*l.read(), 1);
        /// ```
        pub fn new(value: T) -> Self {
            RwLock {
                state: AtomicUsize::new(0),
                lists: Lock::new(Lists::new()),
                data: UnsafeCell::new(value),
            }
        }
    }

    /// Consumes the lock and returns the data.
    ///
    /// ```
    /// let l = eevdf_rt::sync::RwLock::new(3);
    /// assert_eq!(l.into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }
}

impl<T: ?Sized> RwLock<T> {
    /// Locks for shared reading, parking while a writer holds or waits for
    /// the lock.
    ///
    /// ```
    /// let l = eevdf_rt::sync::RwLock::new(5);
    /// let (a, b) = (l.read(), l.read());
    /// assert_eq!(*a + *b, 10);
    /// ```
    pub fn read(&self) -> RwLockReadGuard<'_, T> {
        platform::preempt();
        if !self.try_read_fast() {
            self.read_slow();
        }
        RwLockReadGuard { lock: self }
    }

    /// Locks for shared reading if that is possible without waiting.
    ///
    /// ```
    /// let l = eevdf_rt::sync::RwLock::new(5);
    /// let w = l.write();
    /// assert!(l.try_read().is_none());
    /// drop(w);
    /// assert!(l.try_read().is_some());
    /// ```
    pub fn try_read(&self) -> Option<RwLockReadGuard<'_, T>> {
        if self.try_read_fast() {
            Some(RwLockReadGuard { lock: self })
        } else {
            None
        }
    }

    /// Locks for exclusive writing, parking while readers or a writer hold it.
    ///
    /// ```
    /// let l = eevdf_rt::sync::RwLock::new(5);
    /// *l.write() += 1;
    /// assert_eq!(*l.read(), 6);
    /// ```
    pub fn write(&self) -> RwLockWriteGuard<'_, T> {
        platform::preempt();
        if self
            .state
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.write_slow();
        }
        RwLockWriteGuard { lock: self }
    }

    /// Locks for writing if the lock is free.
    ///
    /// ```
    /// let l = eevdf_rt::sync::RwLock::new(5);
    /// let r = l.read();
    /// assert!(l.try_write().is_none());
    /// drop(r);
    /// assert!(l.try_write().is_some());
    /// ```
    pub fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & (WRITER | WRITERS_PARKED) != 0 || s >= READER {
                return None;
            }
            match self.state.compare_exchange_weak(
                s,
                s | WRITER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(RwLockWriteGuard { lock: self }),
                Err(x) => s = x,
            }
        }
    }

    /// Mutable access without locking (the borrow proves exclusivity).
    ///
    /// ```
    /// let mut l = eevdf_rt::sync::RwLock::new(1);
    /// *l.get_mut() = 2;
    /// assert_eq!(*l.read(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    #[inline]
    fn try_read_fast(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if s & (WRITER | WRITERS_PARKED) != 0 {
                return false;
            }
            match self.state.compare_exchange_weak(
                s,
                s + READER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
    }

    #[cold]
    fn read_slow(&self) {
        loop {
            if self.try_read_fast() {
                return;
            }
            let mut g = self.lists.lock();
            let s = self.state.load(Ordering::Relaxed);
            if s & (WRITER | WRITERS_PARKED) == 0 {
                continue; // free for readers again: retry the fast path
            }
            if s & WRITERS_PARKED != 0 && g.writers.is_empty() {
                // A stale flag: its writers were unwound at runtime
                // shutdown while they slept. Clear it and retry; readers
                // that queued behind them come in now unless a writer
                // holds the lock (its unlock lets them in).
                let admit = s & (WRITER | READERS_PARKED) == READERS_PARKED;
                let ns = if admit {
                    (s & !(WRITERS_PARKED | READERS_PARKED)) + g.readers.len() * READER
                } else {
                    s & !WRITERS_PARKED
                };
                let mut set = WakeSet::new();
                // Release: readers admitted here may be joined by new ones
                // on the fast path, whose Acquire CAS reads this value;
                // they must see what the last writer wrote.
                if self
                    .state
                    .compare_exchange(s, ns, Ordering::Release, Ordering::Relaxed)
                    .is_ok()
                    && admit
                {
                    g.readers.wake_all(HANDOFF, &mut set);
                }
                drop(g);
                set.wake();
                continue;
            }
            if s & READERS_PARKED == 0
                && self
                    .state
                    .compare_exchange(s, s | READERS_PARKED, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            let node = Node::new(0, None);
            if waitlist::block(
                &self.lists,
                g,
                |l| &mut l.readers,
                &node,
                false,
                || {},
                None,
            ) == Some(HANDOFF)
            {
                return; // counted in by the releasing writer
            }
        }
    }

    #[cold]
    fn write_slow(&self) {
        loop {
            let g = self.lists.lock();
            let s = self.state.load(Ordering::Relaxed);
            if s & WRITER == 0 && s < READER {
                // Free. Parked writers (WRITERS_PARKED) can only coexist
                // with a free lock in the instant between the last
                // reader's decrement and its handoff; taking it then is a
                // barge, and our unlock hands over to them instead.
                if self
                    .state
                    .compare_exchange(s, s | WRITER, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            if s & WRITERS_PARKED == 0
                && self
                    .state
                    .compare_exchange(s, s | WRITERS_PARKED, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            let node = Node::new(0, None);
            if waitlist::block(
                &self.lists,
                g,
                |l| &mut l.writers,
                &node,
                false,
                || {},
                None,
            ) == Some(HANDOFF)
            {
                return;
            }
        }
    }

    fn read_unlock(&self) {
        // AcqRel: the last reader out may hand the lock to a parked writer
        // (`read_unlock_slow`), which never reads the state itself; the
        // other readers' reads must happen before that writer's writes, so
        // the last one acquires their Release decrements (the RMW chain)
        // before it hands over.
        let s = self.state.fetch_sub(READER, Ordering::AcqRel);
        // Last reader out with a writer parked: hand it over.
        if s & !(READER - 1) == READER && s & WRITERS_PARKED != 0 {
            self.read_unlock_slow();
        }
    }

    #[cold]
    fn read_unlock_slow(&self) {
        let mut set = WakeSet::new();
        let w = {
            let mut l = self.lists.lock();
            let s = self.state.load(Ordering::Relaxed);
            // Re-check under the lock: no reader can have entered (a writer
            // is parked), and only the last reader gets here.
            if s >= READER || s & WRITER != 0 || s & WRITERS_PARKED == 0 {
                return;
            }
            if l.writers.is_empty() {
                // A stale flag (the writers were unwound at runtime
                // shutdown while they slept): readers that queued behind
                // them come in; otherwise the lock is just free.
                if s & READERS_PARKED != 0 && !l.readers.is_empty() {
                    self.admit_readers(&mut l, 0, &mut set);
                } else {
                    self.state.store(0, Ordering::Release);
                }
                None
            } else {
                self.handoff_writer(&mut l, s)
            }
        };
        if let Some(w) = w {
            platform::wake_then_preempt(w);
        } else if !set.is_empty() {
            set.wake();
            platform::preempt();
        }
    }

    /// Under the lists lock, with the lock neither read- nor write-held:
    /// lets every parked reader in (into `set`, to wake after the lock),
    /// keeping the flags `keep`.
    fn admit_readers(&self, l: &mut Lists, keep: usize, set: &mut WakeSet) {
        // Release: with no writer flag kept, this value lets new readers in
        // on the fast path (an Acquire CAS that reads it): they must see
        // what the writer that held the lock wrote. (The parked readers
        // get that through their wake tokens.)
        self.state
            .store((l.readers.len() * READER) | keep, Ordering::Release);
        l.readers.wake_all(HANDOFF, set);
    }

    /// Under the lists lock: gives the lock to the oldest parked writer.
    fn handoff_writer(&self, l: &mut Lists, s: usize) -> Option<platform::Waiter> {
        let more = if l.writers.len() > 1 {
            WRITERS_PARKED
        } else {
            0
        };
        let ns = (s & !WRITERS_PARKED) | WRITER | more;
        // Every change of the word's flags is made under the lists lock,
        // and the WRITER bit makes reader CASes fail, so a CAS loop only
        // races with readers leaving (none: the lock is not read-held here).
        self.state.store(ns, Ordering::Relaxed);
        let w = l.writers.wake_front(HANDOFF);
        debug_assert!(w.is_some() || more == 0);
        w
    }

    fn write_unlock(&self) {
        if self
            .state
            .compare_exchange(WRITER, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            self.write_unlock_slow();
        }
    }

    #[cold]
    fn write_unlock_slow(&self) {
        let mut set = WakeSet::new();
        {
            let mut l = self.lists.lock();
            let s = self.state.load(Ordering::Relaxed);
            if s & READERS_PARKED != 0 && !l.readers.is_empty() {
                // Readers in, flags kept for the parked writers.
                self.admit_readers(&mut l, s & WRITERS_PARKED, &mut set);
            } else if s & WRITERS_PARKED != 0 && !l.writers.is_empty() {
                if let Some(w) = self.handoff_writer(&mut l, s & !READERS_PARKED) {
                    set.push(w);
                }
            } else {
                // Parked flags without sleepers (a sleeper was unwound at
                // runtime shutdown): just unlock.
                self.state.store(0, Ordering::Release);
            }
        }
        if !set.is_empty() {
            set.wake();
            platform::preempt();
        }
    }
}

impl<T: Default> Default for RwLock<T> {
    fn default() -> Self {
        RwLock::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwLock");
        match self.try_read() {
            Some(g) => d.field("data", &&*g),
            None => d.field("data", &format_args!("<locked>")),
        };
        d.finish_non_exhaustive()
    }
}

/// Shared access to the data of a read-locked [`RwLock`].
///
/// ```
/// let l = eevdf_rt::sync::RwLock::new(String::from("hi"));
/// let g = l.read();
/// assert_eq!(g.len(), 2);
/// ```
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

// SAFETY: sharing a read guard shares `&T`.
unsafe impl<T: ?Sized + Sync> Sync for RwLockReadGuard<'_, T> {}

impl<T: ?Sized> Deref for RwLockReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: while a read guard exists no writer holds the lock.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockReadGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.read_unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Exclusive access to the data of a write-locked [`RwLock`].
///
/// ```
/// let l = eevdf_rt::sync::RwLock::new(vec![1]);
/// l.write().push(2);
/// assert_eq!(*l.read(), [1, 2]);
/// ```
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized> {
    lock: &'a RwLock<T>,
}

// SAFETY: sharing a write guard shares `&T`.
unsafe impl<T: ?Sized + Sync> Sync for RwLockWriteGuard<'_, T> {}

impl<T: ?Sized> Deref for RwLockWriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the write guard is the only access while it exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and `&mut self` is the only access through it.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for RwLockWriteGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.write_unlock();
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwLockWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
