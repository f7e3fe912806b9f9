//! The `tokio` backend: message loops and workers are tasks, written as a tokio user
//! would write them.
//!
//! - Runtime: multi-thread, `--workers` worker threads, timers enabled; with `-W` (or
//!   `-M auto`) each runtime thread is pinned to the worker CPU set when it starts.
//! - Token: a `tokio::sync::Notify` per node. `notify_one` stores one permit when
//!   nobody waits, and `notified().await` consumes it, which is the one-token
//!   semaphore of the original; `arm` has nothing to clear because every push gets
//!   exactly one post (a message task's spurious permit only costs an empty round).
//! - Sleep: `tokio::time::sleep`. tokio's timer wheel has 1 ms resolution, so `-s 100`
//!   sleeps about 1 ms here; that is what users of tokio get, and is kept on purpose.
//! - Lock: the spin lock of the runtime thread the task runs on, keyed by an index each
//!   runtime thread takes in `on_thread_start`. A task never holds it across `.await`.
//! - Math: inline in the task (no `spawn_blocking`).
//! - `-M`: tokio cannot pin a task, so with `-M` every message loop runs on its own OS
//!   thread, pinned to its CPUs, driving a current-thread runtime; it wakes worker
//!   tasks across runtimes through their `Notify`. Without `-M`, message loops are
//!   ordinary tasks on the shared runtime.
//!
//! This module owns building, pinning and joining those; its loops mirror `blocking`
//! step for step and must stay in step with it.

use std::cell::{Cell, RefCell};
use std::io;
use std::panic;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Once};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::blocking::MAX_PACED_SLEEP;
use super::{Backend, Running};
use crate::board::Board;
use crate::lock::SpinLocks;
use crate::opts::Plan;
use crate::pace::Pacer;
use crate::shared::Shared;
use crate::token::Token;
use crate::work::Work;

/// The tokio backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tokio;

/// A [`Token`] over `tokio::sync::Notify`.
#[derive(Debug, Default)]
pub struct NotifyToken(Notify);

impl Token for NotifyToken {
    #[inline]
    fn arm(&self) {}

    #[inline]
    fn post(&self) {
        self.0.notify_one();
    }
}

impl NotifyToken {
    /// Waits for and consumes the token.
    pub async fn wait(&self) {
        self.0.notified().await;
    }
}

thread_local! {
    /// Index of the runtime thread this code runs on (its lock), set at thread start.
    static LOCK_KEY: Cell<usize> = const { Cell::new(0) };
}

struct Wiring {
    shared: Arc<Shared>,
    board: Board<NotifyToken>,
    locks: SpinLocks,
}

impl Backend for Tokio {
    fn name(&self) -> &'static str {
        "tokio"
    }

    fn details(&self, plan: &Plan) -> String {
        format!("workers {}", plan.runtime_workers)
    }

    fn start(&self, shared: Arc<Shared>) -> io::Result<Box<dyn Running>> {
        let plan = &shared.plan;
        let rt = build_runtime(plan)?;
        let w = Arc::new(Wiring {
            board: Board::new(plan.message_threads, plan.workers_per_message, plan.pipe),
            locks: SpinLocks::new(plan.runtime_workers),
            shared: shared.clone(),
        });
        let mut messages = Vec::with_capacity(plan.message_threads);
        for m in 0..plan.message_threads {
            let spawned = if plan.pinning.pins_messages() {
                spawn_pinned_message_thread(&w, m).map(MessageLoop::Thread)
            } else {
                Ok(MessageLoop::Task(rt.spawn(message_loop(w.clone(), m))))
            };
            match spawned {
                Ok(handle) => messages.push(handle),
                Err(error) => {
                    shared.request_stop();
                    (0..plan.workers()).for_each(|id| drop(w.board.worker(id)));
                    let _ = Box::new(TokioRun {
                        rt,
                        w,
                        messages,
                        workers: Vec::new(),
                    })
                    .finish();
                    return Err(error);
                }
            }
        }
        let workers = (0..plan.workers())
            .map(|id| rt.spawn(worker_loop(w.clone(), id)))
            .collect();
        Ok(Box::new(TokioRun {
            rt,
            w,
            messages,
            workers,
        }))
    }
}

thread_local! {
    /// Set on the thread that builds the runtime: where the panic hook reports a
    /// panic of tokio's `build` instead of printing it.
    static BUILD_PANIC: RefCell<Option<mpsc::Sender<io::Result<Runtime>>>> =
        const { RefCell::new(None) };
}

/// Builds the multi-thread runtime, turning a failure to start its worker threads
/// into an error.
///
/// tokio's `Builder::build` does not return the OS's refusal of a worker thread: it
/// panics ("OS can't spawn worker thread"), and the unwinding then waits forever for
/// the worker threads that did start. So the runtime is built on a helper thread
/// whose panic the panic hook reports through a channel (without printing it); on
/// that report the helper is left behind, stuck, and the error is returned (the
/// process exits with it).
fn build_runtime(plan: &Plan) -> io::Result<Runtime> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let reported = BUILD_PANIC.with_borrow_mut(|slot| match slot.take() {
                Some(tx) => {
                    let msg = info
                        .payload()
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| info.payload().downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "tokio panicked while building its runtime".into());
                    tx.send(Err(io::Error::other(msg))).is_ok()
                }
                None => false,
            });
            if !reported {
                previous(info);
            }
        }));
    });
    let mut builder = runtime_builder(plan);
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("schbench-tokio-build".into())
        .spawn(move || {
            BUILD_PANIC.set(Some(tx.clone()));
            let built = builder.build();
            BUILD_PANIC.set(None);
            let _ = tx.send(built);
        })?;
    // Detached: after a panic the helper never ends; otherwise it has sent and ends.
    rx.recv()
        .unwrap_or_else(|_| Err(io::Error::other("tokio runtime build thread vanished")))
}

fn runtime_builder(plan: &Plan) -> Builder {
    let next_key = Arc::new(AtomicUsize::new(0));
    let pin = plan.pinning.worker.clone();
    let mut builder = Builder::new_multi_thread();
    builder
        .worker_threads(plan.runtime_workers)
        .enable_time()
        .thread_name("schbench-tokio")
        .on_thread_start(move || {
            // Relaxed: the counter only hands out distinct indices; nothing else is
            // published through it.
            LOCK_KEY.set(next_key.fetch_add(1, Ordering::Relaxed));
            if let Some(set) = &pin {
                if let Err(e) = set.pin_current_thread() {
                    eprintln!("schbench: warning: cannot pin a tokio thread to CPUs {set}: {e}");
                }
            }
        });
    builder
}

fn spawn_pinned_message_thread(
    w: &Arc<Wiring>,
    m: usize,
) -> io::Result<std::thread::JoinHandle<()>> {
    let w = w.clone();
    let pin = w.shared.plan.pinning.message[m].clone();
    let rt = Builder::new_current_thread().enable_time().build()?;
    std::thread::Builder::new()
        .name(format!("schbench-msg{m}"))
        .spawn(move || {
            if let Some(set) = pin {
                if let Err(e) = set.pin_current_thread() {
                    eprintln!(
                        "schbench: warning: cannot pin message thread {m} to CPUs {set}: {e}"
                    );
                }
            }
            rt.block_on(message_loop(w, m));
        })
}

async fn worker_loop(w: Arc<Wiring>, id: usize) {
    let me = w.board.worker(id); // retires the worker when dropped, even by panic
    let shared = &*w.shared;
    let plan = &shared.plan;
    let sleep = Duration::from_micros(plan.sleep_us);
    let mut recorder = shared.stats.recorder(id);
    let mut work = Work::new(plan);
    let mut stamp = shared.now_ns();
    while !shared.stopping() {
        me.publish(stamp);
        me.token().wait().await;
        if shared.stopping() {
            break;
        }
        let woke = shared.now_ns();
        let start = if plan.pipe > 0 {
            // SAFETY: between the end of the wait and the next publish.
            unsafe { me.answer_pipe(work.scratch()) };
            woke
        } else {
            if !sleep.is_zero() {
                tokio::time::sleep(sleep).await;
            }
            let held = plan.locking.then(|| w.locks.lock_index(LOCK_KEY.get()));
            let start = if plan.calibrate {
                shared.now_ns()
            } else {
                woke
            };
            work.math();
            if let Some(held) = held {
                w.locks.unlock(held);
            }
            start
        };
        let end = shared.now_ns();
        recorder.record(woke.saturating_sub(me.wake_time()), end - start);
        stamp = end;
    }
}

async fn message_loop(w: Arc<Wiring>, m: usize) {
    let mut scratch = vec![0u8; w.shared.plan.pipe];
    if w.shared.plan.paced() {
        return paced_message_loop(&w, m, &mut scratch).await;
    }
    let token = w.board.message_token(m);
    loop {
        w.board.wake_all(m, &mut scratch, || w.shared.now_ns());
        if w.board.live(m) == 0 {
            break;
        }
        token.wait().await;
    }
}

async fn paced_message_loop(w: &Wiring, m: usize, scratch: &mut [u8]) {
    let shared = &*w.shared;
    let token = w.board.message_token(m);
    let mut pacer =
        Pacer::new(shared.rps_target(), shared.now_ns()).share(m, shared.plan.message_threads);
    loop {
        let now = shared.now_ns();
        pacer.retarget(shared.rps_target(), now);
        let budget = if shared.stopping() {
            u64::MAX
        } else {
            pacer.due(now)
        };
        pacer.issued(w.board.wake_some(m, budget, scratch, now));
        if w.board.live(m) == 0 {
            break;
        }
        match pacer.wait_ns(now) {
            Some(0) | None => token.wait().await,
            Some(ns) => tokio::time::sleep(Duration::from_nanos(ns).min(MAX_PACED_SLEEP)).await,
        }
    }
}

enum MessageLoop {
    Task(JoinHandle<()>),
    Thread(std::thread::JoinHandle<()>),
}

struct TokioRun {
    rt: Runtime,
    w: Arc<Wiring>,
    messages: Vec<MessageLoop>,
    workers: Vec<JoinHandle<()>>,
}

impl Running for TokioRun {
    fn finish(self: Box<Self>) -> io::Result<Option<String>> {
        let TokioRun {
            rt,
            w,
            messages,
            workers,
        } = *self;
        (0..w.board.message_threads()).for_each(|m| w.board.message_token(m).post());
        let mut panicked = 0;
        rt.block_on(async {
            for handle in workers {
                panicked += usize::from(handle.await.is_err());
            }
        });
        for message in messages {
            panicked += usize::from(match message {
                MessageLoop::Task(handle) => rt.block_on(handle).is_err(),
                MessageLoop::Thread(handle) => handle.join().is_err(),
            });
        }
        rt.shutdown_timeout(Duration::from_secs(1));
        if panicked > 0 {
            return Err(io::Error::other(format!(
                "{panicked} benchmark task(s) panicked"
            )));
        }
        Ok(None)
    }
}
