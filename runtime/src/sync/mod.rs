//! Green-aware synchronisation: futexes, locks, condition variables,
//! barriers, semaphores and channels.
//!
//! Owns: every blocking primitive users share between green threads and
//! OS threads. A blocking call parks only the calling green thread, never
//! its worker; from a plain OS thread it blocks the thread, so green
//! threads and ordinary threads can talk. All primitives sleep through one
//! mechanism, the intrusive wait lists of `waitlist` (on top of
//! `wake::waiter`'s `Waiter` and `park`), following the protocol: the
//! sleeper queues itself under the primitive's internal lock, releases
//! it, and parks; the waker makes the condition true, dequeues under that
//! lock, releases it, then wakes. Lock acquisitions and semaphore acquires
//! honour a pending reschedule on entry (the kernel's `might_sleep()`);
//! every call that woke someone honours it after releasing its internal
//! locks (docs/architecture.md: the resched flag is honoured at every
//! runtime call that can block or wake). A blocking channel operation
//! passes exactly one preemption point, where it completes: after its
//! wake, after a completion that did not wait, or in the wait itself
//! (`waitlist::block_reporting` tells whether it switched; if not, the
//! channel passes one). Other waits pass none when they return without
//! switching: a mutex handed over by its unlocker must not be preempted
//! while its new owner holds it.
//!
//! Must not: hold an internal lock across a green-thread switch (it would
//! stall the worker thread of any other green thread that tries to take
//! it); allocate on the common wait/wake paths; keep a second waiter or
//! park mechanism beside `wake::waiter`.
//!
//! | item | like |
//! |---|---|
//! | [`Futex`] | Linux `FUTEX_WAIT`/`FUTEX_WAKE` on an `AtomicU32` |
//! | [`Mutex`], [`Condvar`], [`RwLock`], [`Barrier`] | `std::sync` (no poisoning) |
//! | [`Semaphore`] | a counting semaphore with RAII permits |
//! | [`channel`] | crossbeam-channel (`bounded`, `unbounded`) |
//!
//! Where they differ from std beyond poisoning: `Condvar`'s timed waits
//! return `(guard, timed_out)` instead of a `WaitTimeoutResult`, and the
//! guards are `Send` (a lock may be released on another thread than the
//! one that took it: a green thread may have moved meanwhile). Their
//! constructors are `const fn`, as std's are:
//!
//! ```
//! use eevdf_rt::sync::{Barrier, Condvar, Mutex, RwLock, Semaphore};
//! static STATE: Mutex<u32> = Mutex::new(0);
//! static CHANGED: Condvar = Condvar::new();
//! static CONFIG: RwLock<&str> = RwLock::new("default");
//! static START: Barrier = Barrier::new(1);
//! static SLOTS: Semaphore = Semaphore::new(4);
//! *STATE.lock() += 1;
//! CHANGED.notify_all();
//! assert_eq!(*CONFIG.read(), "default");
//! assert!(START.wait().is_leader());
//! assert_eq!(SLOTS.available_permits(), 4);
//! ```
//!
//! ```
//! use eevdf_rt::sync::{channel, Mutex};
//! use std::sync::Arc;
//!
//! let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
//! let total = Arc::new(Mutex::new(0));
//! let (tx, rx) = channel::bounded(8);
//! let t2 = total.clone();
//! let consumer = rt.spawn(move || {
//!     for v in rx {
//!         *t2.lock() += v;
//!     }
//! });
//! for i in 1..=10 {
//!     tx.send(i).unwrap(); // from an OS thread to a green thread
//! }
//! drop(tx);
//! consumer.join().unwrap();
//! assert_eq!(*total.lock(), 55);
//! ```
//!
//! Loom models of the wait-list protocol live in `sync/loom_tests.rs`
//! (`RUSTFLAGS="--cfg loom" cargo test -p eevdf-rt --release --lib sync::loom_tests`).

mod barrier;
pub mod channel;
mod condvar;
mod futex;
mod mutex;
pub(crate) mod platform;
mod rwlock;
mod semaphore;
mod waitlist;

#[cfg(all(test, loom))]
mod loom_tests;

pub use barrier::{Barrier, BarrierWaitResult};
pub use condvar::Condvar;
#[cfg(not(loom))]
pub use futex::Futex;
pub use mutex::{Mutex, MutexGuard};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
pub use semaphore::{Semaphore, SemaphorePermit};
