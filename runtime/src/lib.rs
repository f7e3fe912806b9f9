//! eevdf-rt: an M:N green-thread runtime scheduled by the Linux kernel's EEVDF policy.
//!
//! Many stackful green threads run on a few worker OS threads, one pinned
//! per core. Each worker orders its green threads by EEVDF — earliest
//! eligible virtual deadline first, with weights from nice levels,
//! per-task slices, lag, slice protection, delayed dequeue and
//! wakelist-style remote wakeups — exactly as the kernel's fair class does,
//! and every mechanism is a switch ([`sched::Feature`]).
//!
//! ```
//! use std::time::Duration;
//! let rt = eevdf_rt::Builder::new().workers(2).build()?;
//! let answer = rt.block_on(|| {
//!     // a latency-sensitive handler: a short slice preempts batch work at wakeup
//!     let handler = eevdf_rt::task::Builder::new()
//!         .slice(Duration::from_micros(100))
//!         .spawn(|| 42)
//!         .unwrap();
//!     // batch work at a lower weight
//!     let batch = eevdf_rt::task::Builder::new().nice(10).spawn(|| {
//!         for _ in 0..1000 { eevdf_rt::preempt_point(); }
//!     }).unwrap();
//!     batch.join().unwrap();
//!     handler.join().unwrap()
//! });
//! assert_eq!(answer, 42);
//! # Ok::<(), eevdf_rt::Error>(())
//! ```
//!
//! # Layers
//!
//! This root file owns the crate's public names (re-exports) and its lint
//! settings; it must not hold logic. Each module's own documentation says
//! what it owns and what it must not do.
//!
//! | module | owns |
//! |---|---|
//! | [`sched`] | the pure EEVDF policy (no threads, atomics, unsafe or clocks) |
//! | `context` | stacks and stack switching (corosensei) |
//! | `task` | the task control block and its wake-protocol state |
//! | `worker` | worker threads, run queues, wakelists, idle/park, the switch path |
//! | `wake` | try-to-wake-up, placement, newidle balance |
//! | [`time`] | the cheap clock, timers; (public) timer futures: `sleep`, `timeout`, `interval` |
//! | [`io`], [`net`], [`fs`] | the I/O drivers (per-worker io_uring rings, or the epoll reactor: [`io::IoDriver`]); pipes, TCP and Unix sockets with `std`'s blocking API; files that do not block the worker under io_uring; [`io::AsyncFd`] |
//! | [`compat`] | tokio / futures-rs `AsyncRead`/`AsyncWrite`, hyper's `Executor` and `Timer` (cargo features) |
//! | [`sync`] | green-aware Futex, Mutex, Condvar, RwLock, Barrier, Semaphore, channels |
//! | [`Stats`] | schedstat-like counters |
//!
//! # Rules for green threads
//!
//! * Preemption is cooperative: long CPU loops must call [`preempt_point`].
//! * Do not hold a reference into a `thread_local!` across a call that can
//!   block, yield or preempt: the green thread may resume on another worker
//!   thread. Pin a task ([`task::Builder::pin`]) if it must stay on one.
//! * Closures are `Send + 'static`, like `std::thread::spawn`.
//! * Linux only.
#![warn(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks)]
// A loom build (`RUSTFLAGS="--cfg loom"`) runs only the loom models, and some
// code (test hooks, helpers swapped out under loom) is dead there.
#![cfg_attr(loom, allow(dead_code))]
#![cfg(target_os = "linux")]

pub mod compat;
mod context;
pub mod error;
pub mod fs;
mod future;
pub mod io;
mod lock;
mod lockfree;
mod loom;
mod mask;
pub mod net;
mod runtime;
pub mod sched;
mod shared;
mod stats;
pub mod sync;
mod sys;
pub mod task;
pub mod time;
pub mod trace;
mod wake;
mod worker;

pub use context::{live_stacks, StackGuard};
pub use error::Error;
pub use future::{block_on_future, preempt_point_async, spawn_future};
pub use mask::MAX_WORKERS;
pub use runtime::api::{
    current, in_green_thread, park, park_timeout, preempt_point, set_nice, set_slice, sleep,
    sleep_until, spawn, try_current, yield_now,
};
pub use runtime::join::{Cancelled, JoinHandle};
pub use runtime::{Builder, Runtime};
pub use stats::{Stats, WorkerStats};
pub use task::{Task, TaskStats};
pub use trace::Trace;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}
