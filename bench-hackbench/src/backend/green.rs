//! Placeholder for the `green` backend (eevdf-rt green threads).
//!
//! Owns: nothing yet but the three lookup functions, which say "not yet
//! available". Must not: grow workload code here; when the runtime lands,
//! replace this file with `green/{mod,hackbench,latency,spawn}.rs` as
//! described in [`crate::backend`]:
//!
//! - `hackbench`: green senders/receivers on `eevdf_rt::io::pipe`,
//!   `eevdf_rt::net` Unix sockets / TCP, plus a `--transport channel`
//!   variant on `eevdf_rt::sync::channel`; `Builder::workers(cfg.runtime.workers)`
//!   and `.features(...)`; with `--stats` put `rt.stats()` into `details`.
//! - `latency`: one green probe per nice level (`task::Builder::nice`,
//!   `.slice(column.probe_slice)`), `eevdf_rt::sleep_until` to absolute
//!   deadlines, the runtime built with `column.features`; preemption counts
//!   from `Stats` into `LatencyRun::counters`.
//! - `spawn`: `eevdf_rt::spawn(|| ()).join()` per iteration; local/remote
//!   placement counts from `Stats` into `SpawnRun::counters`.

use super::{HackbenchBackend, LatencyBackend, Missing, SpawnBackend};

/// The green hackbench backend: not built yet.
pub fn hackbench() -> Result<Box<dyn HackbenchBackend>, Missing> {
    Err(Missing::NotYetAvailable)
}

/// The green latency backend: not built yet.
pub fn latency() -> Result<Box<dyn LatencyBackend>, Missing> {
    Err(Missing::NotYetAvailable)
}

/// The green spawn backend: not built yet.
pub fn spawn() -> Result<Box<dyn SpawnBackend>, Missing> {
    Err(Missing::NotYetAvailable)
}
