//! Spawn options for a green thread.
//!
//! Owns: [`Builder`] — name, nice, slice, affinity, stack size — and its
//! validation. Must not: place or enqueue (that is `runtime::spawn`).

use crate::error::Error;
use crate::mask::{WorkerMask, MAX_WORKERS};
use crate::runtime::join::JoinHandle;
use crate::runtime::{spawn, Runtime};
use crate::sched::{check_slice, weight::nice_index, Policy};
use std::io;
use std::time::Duration;

/// Smallest stack a green thread may ask for.
pub const MIN_STACK_SIZE: usize = 16 * 1024;
/// Largest stack a green thread may ask for.
pub const MAX_STACK_SIZE: usize = 1 << 30;

/// Options for spawning a green thread, like `std::thread::Builder`.
///
/// Invalid values (nice outside −20..=19, a slice outside 100 µs..=100 ms,
/// an affinity that is empty or names a worker index the runtime does not
/// have, a stack size outside 16 KiB..=1 GiB) make `spawn` return an `InvalidInput` error that names
/// the parameter and its range.
///
/// ```
/// use std::time::Duration;
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let h = eevdf_rt::task::Builder::new()
///     .name("handler")
///     .nice(-5)
///     .slice(Duration::from_micros(100))
///     .pin(1)
///     .spawn_on(&rt, || eevdf_rt::current().worker())
///     .unwrap();
/// assert_eq!(h.join().unwrap(), 1);
///
/// let err = eevdf_rt::task::Builder::new().nice(42).spawn_on(&rt, || ()).unwrap_err();
/// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    name: Option<String>,
    nice: i32,
    slice: Option<Duration>,
    policy: Policy,
    affinity: Option<Vec<usize>>,
    stack_size: Option<usize>,
}

/// Validated spawn options.
#[derive(Debug)]
pub(crate) struct SpawnOpts {
    pub(crate) name: Option<Box<str>>,
    pub(crate) nice: i32,
    pub(crate) slice: Option<u64>,
    pub(crate) policy: Policy,
    pub(crate) affinity: Option<Vec<usize>>,
    pub(crate) stack_size: Option<usize>,
}

impl SpawnOpts {
    /// Default options (nice 0, base slice, any worker).
    pub(crate) fn default_opts() -> Self {
        SpawnOpts {
            name: None,
            nice: 0,
            slice: None,
            policy: Policy::Normal,
            affinity: None,
            stack_size: None,
        }
    }

    /// The affinity as a mask over `workers` workers; an empty or
    /// out-of-range affinity is an error.
    pub(crate) fn mask(&self, workers: usize) -> Result<WorkerMask, Error> {
        match &self.affinity {
            None => Ok(WorkerMask::first(workers)),
            Some(list) => {
                let mut m = WorkerMask::empty();
                for &i in list {
                    if i >= workers {
                        return Err(Error::invalid(
                            "affinity",
                            i,
                            "worker indices below the runtime's worker count",
                        ));
                    }
                    m.insert(i);
                }
                if m.count() == 0 {
                    return Err(Error::invalid(
                        "affinity",
                        "[]",
                        "a non-empty list of worker indices",
                    ));
                }
                Ok(m)
            }
        }
    }
}

impl Builder {
    /// Default options: nice 0, the base slice, any worker, the runtime's stack size.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the green thread (shown by [`Task::name`](crate::Task::name)).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Nice level, −20 (most CPU) ..= 19 (least); each step is about 10 % of CPU share.
    pub fn nice(mut self, nice: i32) -> Self {
        self.nice = nice;
        self
    }

    /// A custom slice (a latency request), 100 µs ..= 100 ms: shorter
    /// slices get earlier deadlines and, with PREEMPT_SHORT, preempt
    /// longer-slice tasks at wakeup.
    pub fn slice(mut self, slice: Duration) -> Self {
        self.slice = Some(slice);
        self
    }

    /// The scheduling class (default [`Policy::Normal`]):
    /// [`Policy::Batch`] never preempts at wakeup (throughput work), and
    /// [`Policy::Idle`] runs at weight 3, yields to any normal wakeup and
    /// never preempts a normal task (background work). See `docs/eevdf.md`.
    ///
    /// ```
    /// use eevdf_rt::sched::Policy;
    /// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    /// let h = eevdf_rt::task::Builder::new()
    ///     .policy(Policy::Idle)
    ///     .spawn_on(&rt, || eevdf_rt::current().stats())
    ///     .unwrap();
    /// let st = h.join().unwrap();
    /// assert_eq!((st.policy, st.weight), (Policy::Idle, 3));
    /// ```
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Run only on worker `worker`; same as `.affinity([worker])`.
    pub fn pin(self, worker: usize) -> Self {
        self.affinity([worker])
    }

    /// Run only on these workers.
    pub fn affinity(mut self, workers: impl IntoIterator<Item = usize>) -> Self {
        self.affinity = Some(workers.into_iter().collect());
        self
    }

    /// Stack size in bytes (virtual; only touched pages become resident).
    /// Near the 16 KiB minimum, a panic that prints a backtrace
    /// (`RUST_BACKTRACE` set) can itself overflow the stack in a debug
    /// build, which aborts the process: give a thread that may panic at
    /// least 32 KiB.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    pub(crate) fn validate(self) -> Result<SpawnOpts, Error> {
        nice_index(self.nice)?;
        let slice = match self.slice {
            Some(d) => Some(check_slice(d.as_nanos().min(u64::MAX as u128) as u64)?),
            None => None,
        };
        if let Some(s) = self.stack_size {
            if !(MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&s) {
                return Err(Error::invalid("stack_size", s, "16 KiB ..= 1 GiB"));
            }
        }
        if let Some(a) = &self.affinity {
            if a.iter().any(|&i| i >= MAX_WORKERS) {
                return Err(Error::invalid(
                    "affinity",
                    format!("{a:?}"),
                    "worker indices below 256",
                ));
            }
        }
        Ok(SpawnOpts {
            name: self.name.map(String::into_boxed_str),
            nice: self.nice,
            slice,
            policy: self.policy,
            affinity: self.affinity,
            stack_size: self.stack_size,
        })
    }

    /// Spawns on the runtime of the calling green thread.
    ///
    /// Errors: invalid options (`InvalidInput`), no runtime on this thread
    /// (`Other`, use [`spawn_on`](Self::spawn_on)), the runtime is shut
    /// down, a stack could not be allocated (the OS error of the failed
    /// `mmap`, usually `OutOfMemory`), or there was no memory for the task's
    /// control block or its registry entry (`OutOfMemory`). A failed spawn
    /// runs nothing and leaves the runtime usable.
    pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let opts = self.validate()?;
        let sh = spawn::current_shared().ok_or_else(|| {
            io::Error::other("task::Builder::spawn called outside a runtime; use spawn_on")
        })?;
        spawn::spawn_green(&sh, opts, f)
    }

    /// Spawns on `rt`, from any thread. Errors as [`spawn`](Self::spawn)
    /// (less the missing runtime).
    pub fn spawn_on<F, T>(self, rt: &Runtime, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let opts = self.validate()?;
        spawn::spawn_green(rt.shared(), opts, f)
    }
}
