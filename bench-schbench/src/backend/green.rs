//! The `green` backend: every message thread and worker is an eevdf-rt green thread,
//! with the same code shape as `threads` — the loops of `blocking`, a one-token
//! futex semaphore over the runtime's green-aware [`eevdf_rt::sync::Futex`],
//! `eevdf_rt::sleep` for the request's sleep, and the spin lock of the runtime
//! worker the task runs on.
//!
//! - Runtime: `--workers` workers (default: the CPUs), pinned one per allowed CPU
//!   (worker `i` on the `i`-th allowed CPU), `--features` applied; `--trace` records
//!   the runtime's scheduling trace from the spawns to the last join.
//! - `-M`: message task `m` is pinned to the worker on its CPU (`-M auto`: worker
//!   `m`); `-W` (and the rest of `-M auto`): workers may run only on the runtime
//!   workers whose CPUs are in the worker set (all workers if none is).
//! - Math: the same multiplications, with a preemption point after each row while
//!   no lock is held — how a cooperative runtime's user writes a long CPU loop
//!   (OS threads get this from the kernel's preemption).
//!
//! This module owns building the runtime, spawning and joining the tasks. The loops
//! are `blocking`'s; it must not duplicate them.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use eevdf_rt::sync::Futex;
use eevdf_rt::{JoinHandle, Runtime};

use super::blocking::{self, Env, Wiring};
use super::{Backend, Running};
use crate::board::Board;
use crate::cpus::CpuSet;
use crate::lock::{Held, SpinLocks};
use crate::opts::{Plan, UsageError};
use crate::shared::Shared;
use crate::token::{BlockingToken, Token};

/// The original's futex semaphore on the runtime's green-aware futex: a waiting
/// green thread parks only itself. Aligned so tokens do not share cache lines.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct GreenToken {
    word: AtomicU32,
}

impl Token for GreenToken {
    #[inline]
    fn arm(&self) {
        self.word.store(0, Ordering::Relaxed);
    }

    #[inline]
    fn post(&self) {
        // Release: the wake stamp written before posting is visible to the waiter.
        if self
            .word
            .compare_exchange(0, 1, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            Futex::wake(&self.word, 1);
        }
    }
}

impl BlockingToken for GreenToken {
    #[inline]
    fn wait(&self) {
        // Acquire: pairs with post's Release.
        while self
            .word
            .compare_exchange(1, 0, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // The runtime re-checks the word under its bucket lock, so a post
            // between the failed CAS and the park makes the wait return at once.
            Futex::wait(&self.word, 0);
        }
    }
}

/// Sleep, lock and preemption points of green threads.
#[derive(Clone, Copy, Debug, Default)]
pub struct GreenEnv;

impl Env for GreenEnv {
    #[inline]
    fn sleep(&self, d: Duration) {
        eevdf_rt::sleep(d);
    }

    #[inline]
    fn lock(&self, locks: &SpinLocks) -> Held {
        // Keyed by the runtime worker (the green analogue of the CPU). A green
        // thread never switches while it holds the lock (no preemption point
        // inside), so the key stays right and no other task of its worker waits.
        locks.lock_index(eevdf_rt::current().worker())
    }

    #[inline]
    fn preempt_point(&self) {
        eevdf_rt::preempt_point();
    }
}

type GreenWiring = Wiring<GreenToken, GreenEnv>;

/// The eevdf-rt backend.
#[derive(Debug)]
pub struct Green {
    workers: usize,
    features: eevdf_rt::sched::Features,
}

impl Green {
    /// Checks `--features` (an unknown name is a usage error).
    pub fn new(plan: &Plan) -> Result<Green, UsageError> {
        let features = eevdf_rt::sched::Features::parse(plan.features.as_deref().unwrap_or(""))
            .map_err(|e| UsageError(format!("--features: {e}")))?;
        if plan.green_workers == 0 || plan.green_workers > eevdf_rt::MAX_WORKERS {
            return Err(UsageError(format!(
                "--workers must be 1..={} for the green backend",
                eevdf_rt::MAX_WORKERS
            )));
        }
        Ok(Green {
            workers: plan.green_workers,
            features,
        })
    }
}

impl Backend for Green {
    fn name(&self) -> &'static str {
        "green"
    }

    fn details(&self, _plan: &Plan) -> String {
        format!(
            "workers {}, features {}",
            self.workers,
            self.features.diff_from_default()
        )
    }

    fn features(&self) -> Option<String> {
        Some(self.features.diff_from_default())
    }

    fn start(&self, shared: Arc<Shared>) -> io::Result<Box<dyn Running>> {
        let plan = &shared.plan;
        let rt = eevdf_rt::Builder::new()
            .workers(self.workers)
            .features(&self.features.to_string())
            .build()
            .map_err(io::Error::from)?;
        let placement = Placement::new(plan, self.workers)?;
        if plan.trace.is_some() {
            rt.trace_start(plan.trace_capacity)
                .map_err(io::Error::from)?;
        }
        let wiring = Arc::new(Wiring {
            board: Board::new(plan.message_threads, plan.workers_per_message, plan.pipe),
            locks: SpinLocks::new(self.workers),
            env: GreenEnv,
            shared: shared.clone(),
        });
        let mut run = GreenRun {
            wiring: wiring.clone(),
            handles: Vec::new(),
            rt,
            stats: plan.stats,
            trace: plan.trace.clone(),
        };
        if let Err((error, first_unspawned_worker)) =
            spawn_all(&run.rt, &wiring, &placement, &mut run.handles)
        {
            shared.request_stop();
            (first_unspawned_worker..plan.workers()).for_each(|id| drop(wiring.board.worker(id)));
            let _ = Box::new(run).finish();
            return Err(error);
        }
        Ok(Box::new(run))
    }
}

/// Which runtime workers each task may use, from `-M` / `-W`.
struct Placement {
    /// Per message task: the worker it is pinned to.
    message: Vec<Option<usize>>,
    /// Workers the worker tasks may run on (`None`: all).
    worker: Option<Vec<usize>>,
}

impl Placement {
    fn new(plan: &Plan, workers: usize) -> io::Result<Placement> {
        // Runtime worker `i` is pinned to the `i`-th allowed CPU (round robin).
        let allowed = CpuSet::allowed()?;
        let cpus = allowed.as_slice();
        let cpu_of = |i: usize| cpus[i % cpus.len()];
        let on = |set: &CpuSet| -> Vec<usize> {
            (0..workers).filter(|&i| set.contains(cpu_of(i))).collect()
        };
        let message = plan
            .pinning
            .message
            .iter()
            .enumerate()
            .map(|(m, set)| {
                set.as_ref()
                    .map(|s| on(s).first().copied().unwrap_or(m % workers))
            })
            .collect();
        let worker = plan
            .pinning
            .worker
            .as_ref()
            .map(&on)
            .filter(|w| !w.is_empty());
        Ok(Placement { message, worker })
    }
}

/// Spawns the message tasks, then the workers. On failure returns the error and the
/// first worker id that was not spawned.
fn spawn_all(
    rt: &Runtime,
    w: &Arc<GreenWiring>,
    placement: &Placement,
    handles: &mut Vec<JoinHandle<()>>,
) -> Result<(), (io::Error, usize)> {
    let plan = &w.shared.plan;
    for m in 0..plan.message_threads {
        let w2 = w.clone();
        let mut b = eevdf_rt::task::Builder::new().name(format!("schbench-msg{m}"));
        if let Some(worker) = placement.message[m] {
            b = b.pin(worker);
        }
        let h = b
            .spawn_on(rt, move || blocking::message_loop(&w2, m))
            .map_err(|e| (e, 0))?;
        handles.push(h);
    }
    for id in 0..plan.workers() {
        let w2 = w.clone();
        let mut b = eevdf_rt::task::Builder::new().name(format!("schbench-worker{id}"));
        if let Some(set) = &placement.worker {
            b = b.affinity(set.iter().copied());
        }
        let h = b
            .spawn_on(rt, move || blocking::worker_loop(&w2, id))
            .map_err(|e| (e, id))?;
        handles.push(h);
    }
    Ok(())
}

struct GreenRun {
    wiring: Arc<GreenWiring>,
    handles: Vec<JoinHandle<()>>,
    rt: Runtime,
    stats: bool,
    trace: Option<std::path::PathBuf>,
}

impl Running for GreenRun {
    fn finish(self: Box<Self>) -> io::Result<Option<String>> {
        let board = &self.wiring.board;
        // Post every message token so that each message loop sees the stop at once.
        (0..board.message_threads()).for_each(|m| board.message_token(m).post());
        let mut panicked = 0;
        for handle in self.handles {
            panicked += usize::from(handle.join().is_err());
        }
        let mut stats = self
            .stats
            .then(|| format!("eevdf-rt stats:\n{}", self.rt.stats()));
        if let Some(path) = &self.trace {
            let trace = self.rt.trace_stop();
            trace.save(path).map_err(|e| {
                io::Error::new(e.kind(), format!("--trace {}: {e}", path.display()))
            })?;
            let note = format!(
                "trace: {} events ({} task runs, {} dropped) written to {}",
                trace.len(),
                trace.runs().len(),
                trace.dropped(),
                path.display()
            );
            stats = Some(match stats {
                Some(s) => format!("{s}\n{note}"),
                None => note,
            });
        }
        self.rt.shutdown();
        if panicked > 0 {
            return Err(io::Error::other(format!(
                "{panicked} green thread(s) panicked"
            )));
        }
        Ok(stats)
    }
}
