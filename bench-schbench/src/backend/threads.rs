//! The `threads` backend: every message thread and worker is an OS thread, as in the
//! original — futex tokens, `nanosleep` for the request's sleep (`std::thread::sleep`),
//! the spin lock of the CPU the thread runs on (`sched_getcpu`), `sched_setaffinity`
//! for `-M`/`-W`.
//!
//! This module owns spawning, pinning and joining those threads. The loops themselves
//! are `blocking`'s; it must not duplicate them.

use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::blocking::{self, Env, Wiring};
use super::{Backend, Running};
use crate::board::Board;
use crate::cpus::CpuSet;
use crate::lock::{Held, SpinLocks};
use crate::opts::Plan;
use crate::shared::Shared;
use crate::token::{FutexToken, Token};

/// The OS-thread backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Threads;

/// Sleep and lock choice of OS threads.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsEnv;

impl Env for OsEnv {
    #[inline]
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d); // nanosleep(2), like usleep(3)
    }

    #[inline]
    fn lock(&self, locks: &SpinLocks) -> Held {
        locks.lock_current_cpu()
    }
}

type ThreadWiring = Wiring<FutexToken, OsEnv>;

impl Backend for Threads {
    fn name(&self) -> &'static str {
        "threads"
    }

    fn details(&self, _plan: &Plan) -> String {
        String::new()
    }

    fn start(&self, shared: Arc<Shared>) -> io::Result<Box<dyn Running>> {
        let plan = &shared.plan;
        let wiring = Arc::new(Wiring {
            board: Board::new(plan.message_threads, plan.workers_per_message, plan.pipe),
            locks: SpinLocks::per_cpu(),
            env: OsEnv,
            shared: shared.clone(),
        });
        let mut run = ThreadsRun {
            wiring: wiring.clone(),
            handles: Vec::new(),
        };
        let spawned = spawn_all(&wiring, &mut run.handles);
        if let Err((error, first_unspawned_worker)) = spawned {
            // Unblock what did start: stop, retire the workers that never ran so their
            // message threads can leave, then join.
            shared.request_stop();
            (first_unspawned_worker..plan.workers()).for_each(|id| drop(wiring.board.worker(id)));
            let _ = Box::new(run).finish();
            return Err(error);
        }
        Ok(Box::new(run))
    }
}

/// Spawns the message threads, then the workers. On failure returns the error and the
/// first worker id that was not spawned.
fn spawn_all(
    w: &Arc<ThreadWiring>,
    handles: &mut Vec<JoinHandle<()>>,
) -> Result<(), (io::Error, usize)> {
    let plan = &w.shared.plan;
    for m in 0..plan.message_threads {
        let (w2, pin) = (w.clone(), plan.pinning.message[m].clone());
        let handle = spawn(format!("schbench-msg{m}"), pin, move || {
            blocking::message_loop(&w2, m)
        });
        handles.push(handle.map_err(|e| (e, 0))?);
    }
    for id in 0..plan.workers() {
        let (w2, pin) = (w.clone(), plan.pinning.worker.clone());
        let handle = spawn(format!("schbench-w{id}"), pin, move || {
            blocking::worker_loop(&w2, id)
        });
        handles.push(handle.map_err(|e| (e, id))?);
    }
    Ok(())
}

fn spawn(
    name: String,
    pin: Option<CpuSet>,
    body: impl FnOnce() + Send + 'static,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        if let Some(set) = pin {
            if let Err(e) = set.pin_current_thread() {
                eprintln!(
                    "schbench: warning: cannot pin {:?} to CPUs {set}: {e}",
                    std::thread::current().name()
                );
            }
        }
        body()
    })
}

struct ThreadsRun {
    wiring: Arc<ThreadWiring>,
    handles: Vec<JoinHandle<()>>,
}

impl Running for ThreadsRun {
    fn finish(self: Box<Self>) -> io::Result<Option<String>> {
        let board = &self.wiring.board;
        // Post every message token so that each message loop sees the stop at once.
        (0..board.message_threads()).for_each(|m| board.message_token(m).post());
        let mut panicked = 0;
        for handle in self.handles {
            panicked += usize::from(handle.join().is_err());
        }
        if panicked > 0 {
            return Err(io::Error::other(format!(
                "{panicked} benchmark thread(s) panicked"
            )));
        }
        Ok(None)
    }
}
