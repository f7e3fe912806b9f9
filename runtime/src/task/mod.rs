//! Tasks (green threads): the control block, the wake-protocol state, the
//! user-facing handle and builder, and the way a green thread hands control
//! back to its worker.
//!
//! Owns: `Tcb` and `state`, [`Task`] (a handle to a green thread),
//! [`Builder`] (spawn options), and `switch_out`. Must not: schedule.

pub(crate) mod builder;
pub(crate) mod current;
pub(crate) mod handle;
pub(crate) mod registry;
pub(crate) mod state;
pub(crate) mod tcb;

pub use builder::Builder;
pub use handle::Task;
pub(crate) use tcb::{TaskRef, Tcb};

pub use crate::runtime::join::JoinHandle;

use crate::context::Switch;

/// Hands the worker back to its scheduler with `why`; returns when a
/// worker resumes this green thread (maybe another worker: re-fetch any
/// thread-local state afterwards).
///
/// Panics if called outside a green thread.
#[inline]
pub(crate) fn switch_out(why: Switch) {
    let me = current::current().expect("switch_out called outside a green thread");
    // SAFETY: `tls::current` is only set while `me` runs on this very stack
    // (the worker sets it around the resume), so we are on `me`'s context.
    unsafe { me.suspend.suspend(why) }
}
