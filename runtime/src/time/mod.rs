//! Time: the clock and per-worker timers.
//!
//! Owns: reading time (the cheap clock, once per switch) and the timer
//! heaps that turn expired sleeps into ordinary wakeups. There is no timer
//! thread: each worker serves its own tick, HRTICK deadline, timers and
//! I/O polls (`worker::Deadlines`), checked with this clock at its switches
//! and preemption points. Must not: schedule (timers hand expired tasks to
//! the wake path), or drive the I/O reactor.

pub(crate) mod clock;
pub(crate) mod timers;
