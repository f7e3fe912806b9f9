//! The user-facing handle to a green thread.
//!
//! Owns: [`Task`], a cheap clonable reference to a green thread, and its
//! accessors. Its accounting snapshot ([`Task::stats`]) and the changes of
//! its nice level and slice from any thread reach into a worker's run
//! queue, so they live in `runtime::task_attr`, above the worker layer.
//! Must not: expose the control block, or touch run queues.

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
    ///
    /// ```
    /// use std::time::Duration;
    /// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    /// let plain = rt.spawn(|| ());
    /// let short = eevdf_rt::task::Builder::new()
    ///     .slice(Duration::from_micros(100))
    ///     .spawn_on(&rt, || ())?;
    /// assert!(!plain.task().has_custom_slice());
    /// assert!(short.task().has_custom_slice());
    /// assert_eq!(short.task().slice(), Duration::from_micros(100));
    /// # plain.join().unwrap(); short.join().unwrap();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn has_custom_slice(&self) -> bool {
        self.tcb.custom_slice() != 0
    }

    /// Makes the task's park token available, waking it if it is blocked in
    /// [`park`](crate::park) (like `std::thread::Thread::unpark`). Callable
    /// from any thread; a token given before the park makes the next park
    /// return at once. Called from a green thread, it is a preemption
    /// point, like every runtime call that wakes: a woken task that EEVDF
    /// prefers runs at once, as the kernel honours a wakeup's preemption
    /// when the waker returns to user space.
    pub fn unpark(&self) {
        // SeqCst: pairs with park's SeqCst read after marking itself blocked.
        self.tcb
            .unpark_token
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let now = crate::wake::wake_task_reporting_clock(&self.tcb, false);
        crate::runtime::api::preempt_point_at(now);
    }

    /// Whether the task has finished: its closure has returned or
    /// panicked, so its result is ready (as
    /// [`JoinHandle::is_finished`](crate::JoinHandle::is_finished) says). The
    /// green thread may still be switching out for a moment: its
    /// [`stats`](Self::stats) are final, and it leaves
    /// [`Runtime::live_tasks`](crate::Runtime::live_tasks), only after that.
    ///
    /// ```
    /// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    /// let h = rt.spawn(|| 7);
    /// let task = h.task().clone();
    /// assert_eq!(h.join().unwrap(), 7);
    /// assert!(task.is_finished());
    /// ```
    pub fn is_finished(&self) -> bool {
        self.tcb.join.is_done() || self.tcb.st.state() == super::state::DEAD
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
        TaskRef::ptr_eq(&self.tcb, &other.tcb)
    }
}
impl Eq for Task {}
