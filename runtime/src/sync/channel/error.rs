//! The channel error types, shaped exactly like crossbeam-channel's.
//!
//! Owns: [`SendError`], [`TrySendError`], [`SendTimeoutError`],
//! [`RecvError`], [`TryRecvError`], [`RecvTimeoutError`] and their
//! conversions. Must not: know how channels work.

use std::error::Error;
use std::fmt;

/// `send` failed because every receiver is gone; the message comes back.
///
/// ```
/// let (tx, rx) = eevdf_rt::sync::channel::unbounded();
/// drop(rx);
/// let err = tx.send(5).unwrap_err();
/// assert_eq!(err.into_inner(), 5);
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub struct SendError<T>(pub T);

/// `try_send` failed: the channel is full, or every receiver is gone.
///
/// ```
/// use eevdf_rt::sync::channel::{bounded, TrySendError};
/// let (tx, rx) = bounded(1);
/// tx.try_send(1).unwrap();
/// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2)));
/// drop(rx);
/// assert_eq!(tx.try_send(3), Err(TrySendError::Disconnected(3)));
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum TrySendError<T> {
    /// The channel is full (a rendezvous channel: no receiver is waiting).
    Full(T),
    /// Every receiver is gone.
    Disconnected(T),
}

/// `send_timeout` failed: the time ran out, or every receiver is gone.
///
/// ```
/// use eevdf_rt::sync::channel::{bounded, SendTimeoutError};
/// use std::time::Duration;
/// let (tx, _rx) = bounded(0);
/// let e = tx.send_timeout(1, Duration::from_millis(1)).unwrap_err();
/// assert_eq!(e, SendTimeoutError::Timeout(1));
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum SendTimeoutError<T> {
    /// The message could not be sent before the timeout.
    Timeout(T),
    /// Every receiver is gone.
    Disconnected(T),
}

/// `recv` failed: the channel is empty and every sender is gone.
///
/// ```
/// let (tx, rx) = eevdf_rt::sync::channel::unbounded::<i32>();
/// drop(tx);
/// assert_eq!(rx.recv(), Err(eevdf_rt::sync::channel::RecvError));
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub struct RecvError;

/// `try_recv` failed: the channel is empty, or empty with every sender gone.
///
/// ```
/// use eevdf_rt::sync::channel::{unbounded, TryRecvError};
/// let (tx, rx) = unbounded::<i32>();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum TryRecvError {
    /// Nothing to receive right now.
    Empty,
    /// Nothing to receive, ever: the channel is empty and every sender is gone.
    Disconnected,
}

/// `recv_timeout` failed: the time ran out, or the channel is empty with
/// every sender gone.
///
/// ```
/// use eevdf_rt::sync::channel::{unbounded, RecvTimeoutError};
/// use std::time::Duration;
/// let (_tx, rx) = unbounded::<i32>();
/// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
/// ```
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum RecvTimeoutError {
    /// No message arrived before the timeout.
    Timeout,
    /// The channel is empty and every sender is gone.
    Disconnected,
}

impl<T> SendError<T> {
    /// The message that could not be sent.
    ///
    /// ```
    /// let e = eevdf_rt::sync::channel::SendError("m");
    /// assert_eq!(e.into_inner(), "m");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError { .. }")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a disconnected channel")
    }
}

impl<T> Error for SendError<T> {}

impl<T> TrySendError<T> {
    /// The message that could not be sent.
    ///
    /// ```
    /// let e = eevdf_rt::sync::channel::TrySendError::Full(3);
    /// assert_eq!(e.into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Disconnected(v) => v,
        }
    }

    /// Whether the channel was full.
    ///
    /// ```
    /// assert!(eevdf_rt::sync::channel::TrySendError::Full(()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// Whether every receiver was gone.
    ///
    /// ```
    /// assert!(eevdf_rt::sync::channel::TrySendError::Disconnected(()).is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, TrySendError::Disconnected(_))
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending on a full channel"),
            TrySendError::Disconnected(_) => f.write_str("sending on a disconnected channel"),
        }
    }
}

impl<T> Error for TrySendError<T> {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> Self {
        TrySendError::Disconnected(e.0)
    }
}

impl<T> SendTimeoutError<T> {
    /// The message that could not be sent.
    ///
    /// ```
    /// let e = eevdf_rt::sync::channel::SendTimeoutError::Timeout(4);
    /// assert_eq!(e.into_inner(), 4);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v) | SendTimeoutError::Disconnected(v) => v,
        }
    }

    /// Whether the time ran out.
    ///
    /// ```
    /// assert!(eevdf_rt::sync::channel::SendTimeoutError::Timeout(()).is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendTimeoutError::Timeout(_))
    }

    /// Whether every receiver was gone.
    ///
    /// ```
    /// assert!(eevdf_rt::sync::channel::SendTimeoutError::Disconnected(()).is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, SendTimeoutError::Disconnected(_))
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("Timeout(..)"),
            SendTimeoutError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("timed out waiting on send operation"),
            SendTimeoutError::Disconnected(_) => f.write_str("sending on a disconnected channel"),
        }
    }
}

impl<T> Error for SendTimeoutError<T> {}

impl<T> From<SendError<T>> for SendTimeoutError<T> {
    fn from(e: SendError<T>) -> Self {
        SendTimeoutError::Disconnected(e.0)
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on an empty and disconnected channel")
    }
}

impl Error for RecvError {}

impl TryRecvError {
    /// Whether the channel was merely empty.
    ///
    /// ```
    /// assert!(eevdf_rt::sync::channel::TryRecvError::Empty.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        matches!(self, TryRecvError::Empty)
    }

    /// Whether the channel was empty with every sender gone.
    ///
    /// ```
    /// assert!(eevdf_rt::sync::channel::TryRecvError::Disconnected.is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, TryRecvError::Disconnected)
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receiving on an empty channel"),
            TryRecvError::Disconnected => {
                f.write_str("receiving on an empty and disconnected channel")
            }
        }
    }
}

impl Error for TryRecvError {}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        TryRecvError::Disconnected
    }
}

impl RecvTimeoutError {
    /// Whether the time ran out.
    ///
    /// ```
    /// assert!(eevdf_rt::sync::channel::RecvTimeoutError::Timeout.is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, RecvTimeoutError::Timeout)
    }

    /// Whether the channel was empty with every sender gone.
    ///
    /// ```
    /// assert!(eevdf_rt::sync::channel::RecvTimeoutError::Disconnected.is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, RecvTimeoutError::Disconnected)
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out waiting on receive operation"),
            RecvTimeoutError::Disconnected => f.write_str("channel is empty and disconnected"),
        }
    }
}

impl Error for RecvTimeoutError {}

impl From<RecvError> for RecvTimeoutError {
    fn from(_: RecvError) -> Self {
        RecvTimeoutError::Disconnected
    }
}
