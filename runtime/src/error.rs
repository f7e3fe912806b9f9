//! The crate's error type.
//!
//! Owns: `Error`, the one error type returned by configuration and policy
//! calls (builder values, nice levels, slices, feature strings). I/O calls
//! return `std::io::Error` instead, like `std`. Must not: depend on any other
//! module of the crate.

use std::fmt;

/// Errors returned by the runtime's configuration and policy calls.
///
/// Every variant names the offending parameter and, where it applies, the
/// allowed range, so the message alone tells the user what to change.
///
/// ```
/// let err = eevdf_rt::sched::Entity::new(25).unwrap_err();
/// assert!(err.to_string().contains("nice"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is outside its allowed range.
    InvalidParam {
        /// The parameter's name, as the user wrote it (`"nice"`, `"slice"`, `"workers"` ...).
        param: &'static str,
        /// The rejected value, formatted.
        value: String,
        /// The allowed values, in words (`"-20..=19"`).
        allowed: &'static str,
    },
    /// A feature name in a `sched_features`-style string is not known.
    UnknownFeature {
        /// The name that was not recognised, as written (with any `NO_` prefix).
        name: String,
        /// Every valid feature name.
        valid: Vec<&'static str>,
    },
    /// The runtime has been shut down.
    Shutdown,
    /// `Runtime::block_on` was called from inside a green thread, which would
    /// block the worker it runs on. (`block_on` returns no error: this is
    /// the text of its panic.)
    NestedBlockOn,
    /// A call that acts on the current green thread was made outside one.
    NotGreenThread {
        /// The function that was called.
        call: &'static str,
    },
    /// An operating-system call failed while building the runtime.
    Os {
        /// What the runtime was doing.
        context: &'static str,
        /// The OS error, formatted.
        message: String,
    },
    /// The allocator refused memory the call needed; nothing was changed.
    OutOfMemory {
        /// What the memory was for.
        what: &'static str,
        /// How many bytes were asked for.
        bytes: usize,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidParam`].
    pub fn invalid(param: &'static str, value: impl fmt::Display, allowed: &'static str) -> Self {
        Error::InvalidParam {
            param,
            value: value.to_string(),
            allowed,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidParam {
                param,
                value,
                allowed,
            } => write!(f, "invalid {param} {value}: allowed values are {allowed}"),
            Error::UnknownFeature { name, valid } => write!(
                f,
                "unknown scheduler feature `{name}`; valid features (each may be prefixed with NO_): {}; \
                 presets: default, kernel",
                valid.join(", ")
            ),
            Error::Shutdown => write!(f, "the runtime has been shut down"),
            Error::NestedBlockOn => write!(
                f,
                "Runtime::block_on called from inside a green thread: it would block a worker; \
                 call the closure directly or spawn it and join the handle"
            ),
            Error::NotGreenThread { call } => {
                write!(f, "{call} must be called from inside a green thread")
            }
            Error::Os { context, message } => write!(f, "{context}: {message}"),
            Error::OutOfMemory { what, bytes } => {
                write!(f, "out of memory: {what} needs {bytes} bytes")
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        let kind = match e {
            Error::InvalidParam { .. } | Error::UnknownFeature { .. } => {
                std::io::ErrorKind::InvalidInput
            }
            _ => std::io::ErrorKind::Other,
        };
        std::io::Error::new(kind, e)
    }
}
