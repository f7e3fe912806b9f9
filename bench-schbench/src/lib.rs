//! schbench, Chris Mason's scheduler wakeup benchmark, ported to Rust with several
//! backends that run the same workload side by side: `threads` (OS threads and
//! futexes, what the original measures), `tokio`, and later `green` (eevdf-rt).
//!
//! Modules, one concept each:
//! - [`opts`]: options, defaults, validation → [`opts::Plan`];
//! - [`cpus`]: CPU lists, affinity, `sched_getcpu`;
//! - [`hist`], [`stats`]: the original's histogram and per-worker statistics;
//! - [`list`], [`token`], [`board`]: the wait list, the post/wait token and the
//!   message-thread/worker rendezvous built from them;
//! - [`math`], [`lock`], [`work`]: what a request does;
//! - [`pace`]: `-R`/`-A` pacing;
//! - [`shared`], [`driver`]: one run's shared state and timeline;
//! - [`backend`]: the backend interface and the backends;
//! - [`report`], [`json`], [`plot`]: output.
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod backend;
pub mod board;
pub mod cpus;
pub mod driver;
pub mod hist;
pub mod json;
pub mod list;
pub mod lock;
pub mod math;
pub mod opts;
pub mod pace;
pub mod plot;
pub mod report;
pub mod shared;
pub mod stats;
pub mod token;
pub mod work;
