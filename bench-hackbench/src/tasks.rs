//! How a blocking backend starts and joins its tasks.
//!
//! Owns: the [`Tasks`] trait (spawn a named task, join it), its OS-thread
//! implementation [`OsThreads`], starting a batch of tasks that wait at a
//! gate ([`start_all`], which aborts the gate and joins on a failure), and
//! [`joined`], which turns any task's join result into the crate's error
//! with the task's name and panic message. The shared drivers (`load`, `spawn`, the probes in `latency`)
//! are written once over [`Tasks`]; the green backend implements it on its
//! runtime. Must not: know what the tasks do.

use crate::error::BenchError;
use crate::gate::Gate;
use std::io;

/// Stack size for OS-thread tasks: their loops need little.
const OS_TASK_STACK: usize = 256 * 1024;

/// A way to run closures as tasks that may block (OS threads, or green
/// threads that park only themselves).
pub trait Tasks {
    /// A started task, to be passed to [`Tasks::join`].
    type Handle<T: Send + 'static>;

    /// Starts `f` as a task named `name` (if given). A failure to start is
    /// an error that says what could not be started.
    fn spawn<T: Send + 'static>(
        &self,
        name: Option<String>,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<Self::Handle<T>, BenchError>;

    /// Waits for a task; `Err` carries its panic payload.
    fn join<T: Send + 'static>(h: Self::Handle<T>) -> std::thread::Result<T>;
}

/// OS threads with a small stack.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsThreads;

impl Tasks for OsThreads {
    type Handle<T: Send + 'static> = std::thread::JoinHandle<T>;

    fn spawn<T: Send + 'static>(
        &self,
        name: Option<String>,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<Self::Handle<T>, BenchError> {
        let mut b = std::thread::Builder::new().stack_size(OS_TASK_STACK);
        if let Some(name) = name {
            b = b.name(name);
        }
        b.spawn(f)
            .map_err(|e| BenchError::io("starting a thread", e))
    }

    fn join<T: Send + 'static>(h: Self::Handle<T>) -> std::thread::Result<T> {
        h.join()
    }
}

/// Starts one task per item of `items` with `start`. On the first
/// failure `gate` is aborted (so the tasks already started, waiting at it,
/// end at once), they are joined, and the error is returned.
pub fn start_all<B: Tasks, T: Send + 'static, I>(
    gate: &Gate,
    items: impl IntoIterator<Item = I>,
    mut start: impl FnMut(I) -> Result<B::Handle<T>, BenchError>,
) -> Result<Vec<B::Handle<T>>, BenchError> {
    let mut handles = Vec::new();
    for item in items {
        match start(item) {
            Ok(h) => handles.push(h),
            Err(e) => {
                gate.abort();
                handles.into_iter().for_each(|h| drop(B::join(h)));
                return Err(e);
            }
        }
    }
    Ok(handles)
}

/// Turns a task's join result into the crate's error: an I/O error is
/// named by `what()` ("group 0 sender 3: write"), a panic says its message.
pub fn joined<T>(
    r: std::thread::Result<io::Result<T>>,
    what: impl FnOnce() -> String,
) -> Result<T, BenchError> {
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(BenchError::io(what(), e)),
        Err(p) => Err(BenchError::Task(format!(
            "{}: {}",
            what(),
            panic_message(&*p)
        ))),
    }
}

/// The text of a panic payload (`panic!` strings, a cancelled green thread).
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .or_else(|| {
            p.downcast_ref::<eevdf_rt::Cancelled>()
                .map(|c| c.to_string())
        })
        .map_or_else(|| "panicked".to_string(), |m| format!("panicked: {m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_task_is_named_with_its_message() {
        let h = OsThreads
            .spawn(Some("t".into()), || -> io::Result<()> { panic!("boom") })
            .unwrap();
        let e = joined(OsThreads::join(h), || "group 1 receiver 0: read".into()).unwrap_err();
        assert!(
            e.to_string()
                .contains("group 1 receiver 0: read: panicked: boom"),
            "{e}"
        );
        let h = OsThreads
            .spawn(None, || Err::<(), _>(io::Error::other("bad")))
            .unwrap();
        assert!(matches!(
            joined(OsThreads::join(h), || "x".into()),
            Err(BenchError::Io { .. })
        ));
    }
}
