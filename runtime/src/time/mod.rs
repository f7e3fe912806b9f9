//! Time: the clock, per-worker timers and the tick.
//!
//! Owns: reading time (once per switch), the timer heaps that turn expired
//! sleeps into ordinary wakeups, and the ticker thread that tells busy
//! workers a tick period has passed. Must not: schedule (timers hand expired
//! tasks to the wake path).

pub(crate) mod clock;
pub(crate) mod ticker;
pub(crate) mod timers;
