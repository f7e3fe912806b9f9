//! Shared helpers for the example programs: calibrated CPU work
//! ([`work`]), latency histograms and their printing ([`hist`], from
//! `bench-common`, as are the plots, [`plot`]), exiting
//! with a clear message on bad input ([`cli`]) and the few thread-tuning
//! system calls the load generators make ([`os`]).
//!
//! Nothing here knows about a particular runtime: every example uses the
//! same helpers for its eevdf-rt and its tokio (or OS-thread) side, so
//! the sides differ only in how they schedule.

pub mod cli;
pub mod os;
pub mod work;

pub use bench_common::{hist, plot};
