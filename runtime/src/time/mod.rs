//! Time: the clock and per-worker timers; and, public, the timer futures.
//!
//! Owns: reading time (the cheap clock, once per switch), the timer heaps
//! that turn expired sleeps into ordinary wakeups, and the timer futures
//! ([`sleep`], [`sleep_until`], [`timeout`], [`interval`]) with their
//! driver thread. There is no tick thread: each worker serves its own
//! tick, HRTICK deadline, timers and I/O polls (`worker::Deadlines`),
//! checked with this clock at its switches and preemption points. Must
//! not: schedule (timers hand expired tasks to the wake path), or drive the
//! I/O reactor.
//!
//! The blocking `sleep` of a green thread is [`crate::sleep`]; the futures
//! here are for async code (`async fn`, hyper, tokio-io libraries) and
//! work under [`block_on_future`](crate::block_on_future) anywhere.

pub(crate) mod clock;
mod driver;
mod future;
pub(crate) mod timers;

pub use future::{
    interval, sleep, sleep_until, timeout, timeout_at, Elapsed, Interval, Sleep, Timeout,
};
