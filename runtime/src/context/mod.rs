//! Stacks and stack switching.
//!
//! Owns: green-thread stacks (allocation, pooling, counting) and the
//! coroutine wrapper over corosensei — the only place with stack-switching
//! `unsafe`. Must not: know about scheduling; it switches when told to.

pub(crate) mod coroutine;
pub(crate) mod stack;

pub(crate) use coroutine::{GreenContext, Resumed, SuspendSlot, Switch};
pub use stack::live_stacks;
pub(crate) use stack::StackPool;
