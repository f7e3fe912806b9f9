//! `spawn_blocking`: a bounded pool of OS threads, outside the workers,
//! for closures that block in calls this runtime cannot park (std's
//! file system, DNS, a std `Mutex`, a C library).
//!
//! Owns: each runtime's pool — its job queue, its threads (started on
//! demand up to [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads),
//! jobs beyond that wait in FIFO order; a thread idle for
//! [`Builder::blocking_keep_alive`](crate::Builder::blocking_keep_alive)
//! exits) — and the thread-local that lets code on a pool thread spawn
//! onto its runtime. Must not: run green threads, or be waited for by
//! shutdown.
//!
//! A job's result goes through the same join packet (`runtime::join`) as
//! a green thread's (a packet of its own: a job has no task block),
//! so joining it from a green thread parks only that green thread (the
//! pool thread wakes it like any other OS-thread waker: through the
//! wakelist of the green thread's worker).
//!
//! # Shutdown
//!
//! [`Runtime::shutdown`](crate::Runtime::shutdown) does not wait for
//! blocking jobs: jobs still queued are dropped (their joiners get
//! `Err(`[`Cancelled`](crate::Cancelled)`)`; a panic while one is dropped
//! is caught, so it stops neither the others nor the shutdown), jobs
//! already running keep
//! their threads until they return (an OS thread cannot be interrupted)
//! and still deliver their results to their joiners, and idle threads
//! exit at once.

use super::join::{JoinHandle, PacketGuard, PacketRef};
use crate::error::Error;
use crate::shared::Shared;
use parking_lot::{Condvar, Mutex};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Default of [`Builder::max_blocking_threads`](crate::Builder::max_blocking_threads).
pub(crate) const DEFAULT_MAX_THREADS: usize = 512;
/// Default of [`Builder::blocking_keep_alive`](crate::Builder::blocking_keep_alive).
pub(crate) const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send + 'static>;

struct State {
    queue: VecDeque<Job>,
    /// Threads alive (running a job or idle).
    threads: usize,
    /// Threads waiting for a job.
    idle: usize,
    shutdown: bool,
    /// Numbers the threads' names.
    next_thread: usize,
}

/// One runtime's blocking pool.
pub(crate) struct BlockingPool {
    state: Mutex<State>,
    work: Condvar,
    max_threads: usize,
    keep_alive: Duration,
    name: String,
    runtime: Weak<Shared>,
}

thread_local! {
    /// The runtime whose blocking pool runs this thread.
    static POOL_RUNTIME: RefCell<Option<Weak<Shared>>> = const { RefCell::new(None) };
}

/// The runtime of the calling blocking-pool thread, if it is one.
pub(crate) fn current_shared() -> Option<Arc<Shared>> {
    POOL_RUNTIME.with(|r| r.borrow().as_ref().and_then(Weak::upgrade))
}

impl BlockingPool {
    pub(crate) fn new(
        runtime: Weak<Shared>,
        max_threads: usize,
        keep_alive: Duration,
        name: &str,
    ) -> Self {
        BlockingPool {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                threads: 0,
                idle: 0,
                shutdown: false,
                next_thread: 0,
            }),
            work: Condvar::new(),
            max_threads,
            keep_alive,
            name: format!("{name}-blocking"),
            runtime,
        }
    }

    /// Queues `job`, waking an idle thread or starting one if none is idle
    /// and the bound allows. With `may_wait` false, a job that would have
    /// to wait for a busy thread is refused instead (`WouldBlock`).
    fn submit(self: &Arc<Self>, job: Job, may_wait: bool) -> io::Result<()> {
        let mut st = self.state.lock();
        if st.shutdown {
            return Err(io::Error::other(Error::Shutdown));
        }
        if !may_wait && st.idle <= st.queue.len() && st.threads >= self.max_threads {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "every blocking-pool thread is busy",
            ));
        }
        st.queue.push_back(job);
        if st.idle >= st.queue.len() {
            self.work.notify_one();
            return Ok(());
        }
        if st.threads >= self.max_threads {
            // Every thread is busy: the job waits its turn.
            return Ok(());
        }
        st.threads += 1;
        st.next_thread += 1;
        let name = format!("{}-{}", self.name, st.next_thread);
        drop(st);
        let pool = self.clone();
        let started = std::thread::Builder::new()
            .name(name)
            .spawn(move || pool.thread_main());
        if let Err(e) = started {
            let mut st = self.state.lock();
            st.threads -= 1;
            if st.threads == 0 {
                // No thread will run what is queued: this job (its caller
                // gets the error) and any that other callers queued behind
                // it, counting on the thread this one had reserved. Those
                // are cancelled (their joiners get `Cancelled`) rather than
                // left to wait for a thread that no later submission may
                // start. (Taking only the last job, as before, could take
                // another caller's and leave this one queued.)
                let queued: Vec<Job> = st.queue.drain(..).collect();
                drop(st);
                drop_unrun(queued);
                return Err(io::Error::new(
                    e.kind(),
                    format!("spawn_blocking: starting a pool thread: {e}"),
                ));
            }
            // A running thread takes the job when it is free.
        }
        Ok(())
    }

    fn thread_main(self: Arc<Self>) {
        POOL_RUNTIME.with(|r| *r.borrow_mut() = Some(self.runtime.clone()));
        let mut st = self.state.lock();
        loop {
            if let Some(job) = st.queue.pop_front() {
                drop(st);
                job();
                st = self.state.lock();
                continue;
            }
            if st.shutdown {
                break;
            }
            st.idle += 1;
            let timed_out = self.work.wait_for(&mut st, self.keep_alive).timed_out();
            st.idle -= 1;
            if timed_out && st.queue.is_empty() {
                break;
            }
        }
        st.threads -= 1;
        drop(st);
        POOL_RUNTIME.with(|r| r.borrow_mut().take());
    }

    /// Stops the pool: queued jobs are dropped (cancelled), idle threads
    /// exit, running jobs finish on their own threads; does not wait.
    pub(crate) fn shutdown(&self) {
        let dropped: Vec<Job> = {
            let mut st = self.state.lock();
            st.shutdown = true;
            st.queue.drain(..).collect()
        };
        self.work.notify_all();
        drop_unrun(dropped);
    }

    /// Threads alive now (for tests and diagnostics).
    pub(crate) fn threads(&self) -> usize {
        self.state.lock().threads
    }
}

/// Drops jobs that will never run (their joiners get `Cancelled`), each on
/// its own: a closure whose captured values panic when dropped must not
/// stop the others, or the shutdown that drops them.
fn drop_unrun(jobs: Vec<Job>) {
    for job in jobs {
        let _ = catch_unwind(AssertUnwindSafe(move || drop(job)));
    }
}

/// Runs `f` on `sh`'s blocking pool.
pub(crate) fn spawn_blocking<F, T>(sh: &Arc<Shared>, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_on_pool(sh, f, true)
}

/// Runs `f` on `sh`'s blocking pool if a thread can take it now (an idle
/// one, or a new one within the bound); otherwise refuses with
/// `WouldBlock`, and `f` is dropped unrun. For the runtime's own short
/// jobs (`fs`), which must not queue behind user jobs: a user job that
/// waits for the caller would deadlock them.
pub(crate) fn spawn_blocking_now<F, T>(sh: &Arc<Shared>, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_on_pool(sh, f, false)
}

fn spawn_on_pool<F, T>(sh: &Arc<Shared>, f: F, may_wait: bool) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if sh.is_shutdown() {
        return Err(io::Error::other(Error::Shutdown));
    }
    let packet = PacketRef::standalone();
    let guard = PacketGuard::new(packet.clone());
    let handle = JoinHandle::new(&guard);
    let job: Job = Box::new(move || {
        let r = catch_unwind(AssertUnwindSafe(f));
        guard.complete(r);
    });
    sh.blocking_pool().submit(job, may_wait)?;
    Ok(handle)
}
