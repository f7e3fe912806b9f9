//! The EEVDF policy: a pure, deterministic run queue.
//!
//! Owns: everything `../shared/docs/EEVDF.md` specifies for one worker's
//! queue. Must not: use threads, atomics, `unsafe` or read a clock; time is
//! always passed in as `now` (nanoseconds).

mod arena;
pub mod entity;
pub mod features;
pub mod flags;
mod lru;
mod place;
pub mod rq;
mod tree;
pub mod vtime;
pub mod weight;

pub use entity::{base_slice_for, check_slice, Entity, Policy, MAX_SLICE, MIN_SLICE};
pub use features::{Feature, Features};
pub use flags::{DequeueFlags, EnqueueFlags, WakeFlags};
pub use rq::{Counters, Dequeue, Params, Pick, Resched, ReschedReason, RunQueue, Slot};
