//! Time: the clock, per-worker timers and the tick; and, public, the timer
//! futures.
//!
//! Owns: reading time (once per switch), the timer heaps that turn expired
//! sleeps into ordinary wakeups, the ticker thread that tells busy
//! workers a tick period has passed, and the timer futures ([`sleep`],
//! [`sleep_until`], [`timeout`], [`interval`]) with their driver thread.
//! Must not: schedule (timers hand expired tasks to the wake path).
//!
//! The blocking `sleep` of a green thread is [`crate::sleep`]; the futures
//! here are for async code (`async fn`, hyper, tokio-io libraries) and
//! work under [`block_on_future`](crate::block_on_future) anywhere.

pub(crate) mod clock;
mod driver;
mod future;
pub(crate) mod ticker;
pub(crate) mod timers;

pub use future::{
    interval, sleep, sleep_until, timeout, timeout_at, Elapsed, Interval, Sleep, Timeout,
};
