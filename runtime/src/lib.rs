//! eevdf-rt: an M:N green-thread runtime scheduled by the Linux kernel's EEVDF policy.
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod error;
pub mod sched;

pub use error::Error;
