//! Green hackbench: senders and receivers as eevdf-rt green threads.
//!
//! Owns: a fixed `-l` green run on a runtime of its own, with its
//! `--stats` window (from "go" to the end) and `--trace`. The skeleton is
//! `load`'s, the loops `workload`'s, run on [`GreenTasks`] over
//! [`super::endpoint`]'s writers and readers. Must not: block a worker or
//! allocate per message.

use super::endpoint::{self, Reader, Writer};
use super::{build_runtime, save_trace, start_trace, stats_lines, GreenTasks};
use crate::backend::{HackbenchConfig, HackbenchRun};
use crate::error::BenchError;
use crate::load::{HackbenchTasks, Load};
use crate::workload::SendFn;

use std::io;

impl HackbenchTasks for GreenTasks<'_> {
    type Writer = Writer;
    type Reader = Reader;

    fn channels(&self, cfg: &HackbenchConfig) -> io::Result<(Vec<Writer>, Vec<Reader>)> {
        endpoint::make(cfg.transport, cfg.fds, cfg.datasize)
    }
}

/// A fixed `-l` green run with the given sender loop, on a runtime of its
/// own (the registry's [`crate::backend::Blocking`] passes the real loop).
pub(crate) fn run_fixed(
    cfg: &HackbenchConfig,
    send: SendFn<Writer>,
) -> Result<HackbenchRun, BenchError> {
    let rt = build_runtime(&cfg.runtime, None)?;
    start_trace(&rt, &cfg.runtime)?;
    let tasks = GreenTasks {
        policy: cfg.policy.green(),
        ..GreenTasks::on(&rt)
    };
    let ready = Load::start(&tasks, cfg, Some(cfg.loops), send)?;
    let before = cfg.runtime.stats.then(|| rt.stats());
    let load = ready.go();
    let start = load.start;
    let messages = load.finish()?;
    let elapsed = start.elapsed();
    let mut details = match before {
        Some(b) => stats_lines("from go to the end", &rt.stats().since(&b)),
        None => Vec::new(),
    };
    details.extend(save_trace(&rt, &cfg.runtime)?);
    Ok(HackbenchRun {
        elapsed,
        messages,
        details,
    })
}
