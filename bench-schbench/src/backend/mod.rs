//! The backend interface: what a backend must do to run schbench's workload, and the
//! list of backends `--backend` can name.
//!
//! This module owns the [`Backend`] and [`Running`] traits and the choice of backends.
//! It must not contain a backend's mechanics (those are `threads`, `green` and
//! `tokio`) nor measure or report (the driver does, through [`Shared`]).
//!
//! # Contract
//! [`Backend::start`] is given the run's [`Shared`] state and must, before returning,
//! have started `plan.message_threads` message loops and `plan.workers()` worker loops
//! wired through a [`Board`](crate::board::Board) with the backend's
//! [`Token`](crate::token::Token) (worker `id` belongs to message loop
//! `id / plan.workers_per_message`), honouring `plan.pinning` as far as the backend
//! can. Then:
//! - a worker claims its side, `let me = board.worker(id)`, then loops:
//!   `me.publish(stamp)`; wait on `me.token()`; if `shared.stopping()`, leave; read
//!   the clock (`shared.now_ns()`): wakeup latency is that minus `me.wake_time()`;
//!   run the request (pipe exchange `me.answer_pipe`, or sleep
//!   `plan.sleep_us`, lock unless `!plan.locking`, `plan.operations` multiplications of
//!   its own [`Matrices`](crate::math::Matrices), unlock); read the clock again and
//!   `recorder.record(wakeup, request)`; stamp the next publish with that clock read.
//!   Dropping `me` retires the worker; a worker that is never run is retired with
//!   `drop(board.worker(id))`.
//! - a message loop repeats `board.wake_all` (or, when `plan.paced()`, `wake_some`
//!   with a [`Pacer`](crate::pace::Pacer) budget and a timed wait), exits when
//!   `board.live(m) == 0` after a batch, and otherwise waits on its token.
//!
//! The blocking loops of [`blocking`] implement exactly this for any backend whose
//! tasks may block their thread (OS threads, green threads), given a
//! [`BlockingToken`](crate::token::BlockingToken) and a [`blocking::Env`].
//!
//! [`Running::finish`] is called after `shared.request_stop()`: it posts every message
//! token (so that the stop is seen at once, wherever a message loop waits), joins
//! every loop and returns text to print after the report (green: the runtime's
//! `Stats` with `--stats`).
//!
//! # Adding the green backend
//! Write `backend/green.rs` with a `Green` type implementing [`Backend`]: build an
//! eevdf-rt runtime with `plan.runtime_workers` workers and `plan.features` (an invalid
//! feature list is a [`UsageError`]), and spawn the loops of [`blocking`] as green
//! threads with a [`BlockingToken`](crate::token::BlockingToken) over eevdf-rt's futex,
//! `eevdf_rt::sleep` and the lock keyed by `eevdf_rt::current().worker()`. Then declare
//! `pub mod green;` here and make the `Kind::Green` arm of `create` (marked `GREEN:`)
//! return it; [`select`] then runs it for `--backend green` and `--backend all`.

pub mod blocking;
pub mod green;
pub mod threads;
pub mod tokio;

use std::sync::Arc;

use crate::opts::{BackendChoice, Plan, UsageError};
use crate::shared::Shared;

/// A way of running the workload.
pub trait Backend {
    /// The name `--backend` uses.
    fn name(&self) -> &'static str;

    /// Details for the header line (e.g. worker threads, features); may be empty.
    fn details(&self, plan: &Plan) -> String;

    /// The runtime feature switches in effect, for the JSON output (green only).
    fn features(&self) -> Option<String> {
        None
    }

    /// Starts every message loop and worker loop (see the module contract).
    fn start(&self, shared: Arc<Shared>) -> std::io::Result<Box<dyn Running>>;
}

/// A started run.
pub trait Running {
    /// After `request_stop`: make every loop leave, join them, and return optional
    /// text to print after the report.
    fn finish(self: Box<Self>) -> std::io::Result<Option<String>>;
}

/// The backends this crate knows, in the order `--backend all` runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// OS threads.
    Threads,
    /// eevdf-rt green threads.
    Green,
    /// tokio tasks.
    Tokio,
}

impl Kind {
    /// Every kind, in run order.
    pub const ALL: [Kind; 3] = [Kind::Threads, Kind::Green, Kind::Tokio];

    /// The name `--backend` uses.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Threads => "threads",
            Kind::Green => "green",
            Kind::Tokio => "tokio",
        }
    }
}

/// The backends to run for `plan`: the one `--backend` names, or with `all` every
/// backend. Bad backend-specific input (e.g. green's `--features`) is an error.
pub fn select(plan: &Plan) -> Result<Vec<Box<dyn Backend>>, UsageError> {
    let kinds: &[Kind] = match plan.backend {
        BackendChoice::Threads => &[Kind::Threads],
        BackendChoice::Green => &[Kind::Green],
        BackendChoice::Tokio => &[Kind::Tokio],
        BackendChoice::All => &Kind::ALL,
    };
    let mut backends = Vec::with_capacity(kinds.len());
    for &kind in kinds {
        backends.push(create(kind, plan)?);
    }
    Ok(backends)
}

/// Instantiates a backend.
fn create(kind: Kind, plan: &Plan) -> Result<Box<dyn Backend>, UsageError> {
    Ok(match kind {
        Kind::Threads => Box::new(threads::Threads),
        Kind::Tokio => Box::new(tokio::Tokio),
        // The green backend validates `--features` here, before anything runs.
        Kind::Green => Box::new(green::Green::new(plan)?),
    })
}
