//! Stacks and stack switching.
//!
//! Owns: green-thread stacks (slabs, guard pages and canaries, the depot
//! and per-worker caches, counting), the overflow handler, and the
//! coroutine wrapper over corosensei — the only place with
//! stack-switching `unsafe`. Must not: know about scheduling; it switches
//! when told to.

pub(crate) mod coroutine;
pub(crate) mod guard;
pub(crate) mod overflow;
pub(crate) mod slab;
pub(crate) mod stack;

pub(crate) use coroutine::{GreenContext, Resumed, SuspendSlot, Switch};
pub(crate) use guard::GuardPolicy;
pub use guard::StackGuard;
pub use stack::live_stacks;
pub(crate) use stack::{GreenStack, StackCache};
