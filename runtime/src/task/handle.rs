//! The user-facing handle to a green thread.
//!
//! Owns: [`Task`], a cheap clonable reference to a green thread with
//! read-only accessors. Must not: expose the control block.

use super::TaskRef;
use std::time::Duration;

/// A handle to a green thread, from [`current`](crate::current) or
/// [`JoinHandle::task`](crate::JoinHandle::task).
///
/// ```
/// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
/// let (id, nice) = rt.block_on(|| {
///     let me = eevdf_rt::current();
///     (me.id(), me.nice())
/// });
/// assert!(id > 0);
/// assert_eq!(nice, 0);
/// ```
#[derive(Clone)]
pub struct Task {
    pub(crate) tcb: TaskRef,
}

impl Task {
    /// A process-unique id.
    pub fn id(&self) -> u64 {
        self.tcb.id
    }

    /// The name given with [`task::Builder::name`](crate::task::Builder::name).
    pub fn name(&self) -> Option<&str> {
        self.tcb.name()
    }

    /// The index of the worker the task runs on (or last ran on).
    pub fn worker(&self) -> usize {
        self.tcb.cpu()
    }

    /// Its nice level (−20..=19).
    pub fn nice(&self) -> i32 {
        self.tcb.nice()
    }

    /// Its slice: the custom one if set, otherwise the runtime's base slice.
    pub fn slice(&self) -> Duration {
        match self.tcb.custom_slice() {
            0 => Duration::from_nanos(self.tcb.shared.config.base_slice),
            s => Duration::from_nanos(s),
        }
    }

    /// Whether the task has a custom slice (a latency request).
    pub fn has_custom_slice(&self) -> bool {
        self.tcb.custom_slice() != 0
    }

    /// Makes the task's park token available, waking it if it is blocked in
    /// [`park`](crate::park) (like `std::thread::Thread::unpark`). Callable
    /// from any thread; a token given before the park makes the next park
    /// return at once.
    pub fn unpark(&self) {
        // SeqCst: pairs with park's SeqCst read after marking itself blocked.
        self.tcb
            .unpark_token
            .store(true, std::sync::atomic::Ordering::SeqCst);
        crate::wake::wake_task(&self.tcb);
    }

    /// Whether the task has exited.
    pub fn is_finished(&self) -> bool {
        self.tcb.st.state() == super::state::DEAD
    }
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id())
            .field("name", &self.name())
            .field("worker", &self.worker())
            .field("nice", &self.nice())
            .finish()
    }
}

impl PartialEq for Task {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.tcb, &other.tcb)
    }
}
impl Eq for Task {}
