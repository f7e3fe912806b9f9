//! The crate's error type and its mapping to exit codes.
//!
//! Owns: [`BenchError`] and the exit-code convention (2 = the user asked for
//! something impossible, 1 = a run failed). Must not: print anything or
//! exit; `main` does that.

use crate::verify::VerifyError;
use std::fmt;
use std::io;

/// Everything that can stop a benchmark.
#[derive(Debug)]
pub enum BenchError {
    /// Bad command-line input or a combination no backend supports (exit 2).
    Usage(String),
    /// An operating-system call failed (exit 1).
    Io {
        /// What the benchmark was doing.
        context: String,
        /// The OS error.
        source: io::Error,
    },
    /// Message accounting found a lost, short or extra message (exit 1).
    Verify(VerifyError),
    /// A task or child process failed in a way that is not an I/O error of
    /// the parent (exit 1): a panic, a signal, a non-zero child exit.
    Task(String),
}

impl BenchError {
    /// Shorthand for [`BenchError::Io`].
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        BenchError::Io {
            context: context.into(),
            source,
        }
    }

    /// The process exit code this error maps to.
    pub fn exit_code(&self) -> i32 {
        match self {
            BenchError::Usage(_) => 2,
            BenchError::Io { .. } | BenchError::Verify(_) | BenchError::Task(_) => 1,
        }
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Usage(m) | BenchError::Task(m) => f.write_str(m),
            BenchError::Io { context, source } => write!(f, "{context}: {source}"),
            BenchError::Verify(e) => write!(f, "message verification failed: {e}"),
        }
    }
}

impl std::error::Error for BenchError {}

impl From<VerifyError> for BenchError {
    fn from(e: VerifyError) -> Self {
        BenchError::Verify(e)
    }
}
