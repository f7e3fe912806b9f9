//! One backend's run from start to report: the once-a-second timeline that samples
//! RPS, prints interim reports, zeroes statistics and steers auto-RPS, then stops the
//! backend and prints the final report.
//!
//! This module owns *when* things happen during a run. It must not know how a backend
//! works (only the `Backend`/`Running` traits) nor how output is formatted (`report`).
//!
//! Timeline: second 0 is when `start` returns; statistics are zeroed then, so start-up
//! is not measured. At each whole second k (absolute deadlines, no drift): the request
//! counts of all workers are summed and differenced into one RPS sample; `-A` adjusts
//! the rate; at k = runtime the final snapshot is taken and the run stops; otherwise an
//! interim report is printed when k is a multiple of `-i`, and then, at k = `-w` or a
//! multiple of `-z`, statistics are zeroed (report first, so the interval that ends is
//! still shown). `average rps` = requests since the last zeroing / seconds since then.

use std::io::{self, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::hist::Histogram;
use crate::opts::Plan;
use crate::pace::AutoRps;
use crate::report;
use crate::shared::Shared;
use crate::stats::Snapshot;

/// What one backend's run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Backend name.
    pub backend: &'static str,
    /// Header details (workers, features).
    pub details: String,
    /// Runtime feature switches (green only).
    pub features: Option<String>,
    /// Configured runtime, seconds.
    pub runtime: u64,
    /// Final latency histograms.
    pub latencies: Snapshot,
    /// RPS samples since the last zeroing.
    pub rps: Histogram,
    /// Every one-second RPS sample of the run, zeroing or not (for plots).
    pub rps_series: Vec<u64>,
    /// Requests since the last zeroing / seconds since then.
    pub average_rps: f64,
    /// What the backend asked to print after its report.
    pub trailer: Option<String>,
}

/// Runs `backend` for `plan.runtime` seconds, printing its header, interim reports and
/// final report to `out`.
pub fn run(backend: &dyn Backend, plan: &Plan, out: &mut dyn Write) -> io::Result<Outcome> {
    let details = backend.details(plan);
    writeln!(out, "{}", report::header(backend.name(), &details))?;
    out.flush()?;

    let shared = Arc::new(Shared::new(plan.clone()));
    let running = backend.start(shared.clone())?;
    let t0 = Instant::now();
    shared.stats.zero();

    let mut timeline = Timeline::new(&shared);
    let mut auto =
        (plan.auto_rps > 0).then(|| AutoRps::new(plan.auto_rps, plan.pinning.worker.clone()));
    let mut end = None;
    for k in 1..=plan.runtime {
        sleep_until(t0 + Duration::from_secs(k));
        let sample = timeline.sample(&shared);
        if let Some(auto) = &mut auto {
            shared.set_rps_target(auto.step(shared.rps_target()));
        }
        if k == plan.runtime {
            end = Some((shared.stats.snapshot(), timeline.requests));
            break;
        }
        if k % plan.interval == 0 {
            report::write_blocks(out, k, &shared.stats.snapshot(), &timeline.rps)?;
            report::write_current_rps(out, sample)?;
            out.flush()?;
        }
        if k == plan.warmup || (plan.zero_every > 0 && k % plan.zero_every == 0) {
            timeline.zero(&shared, k);
        }
    }
    shared.request_stop();
    let trailer = running.finish()?;

    let (latencies, requests) = end.unwrap_or_default();
    let seconds = plan.runtime - timeline.zeroed_at;
    let average_rps = (requests - timeline.base_requests) as f64 / seconds as f64;
    report::write_blocks(out, plan.runtime, &latencies, &timeline.rps)?;
    report::write_average_rps(out, average_rps)?;
    if let Some(text) = &trailer {
        write!(out, "{text}")?;
    }
    out.flush()?;
    Ok(Outcome {
        backend: backend.name(),
        details,
        features: backend.features(),
        runtime: plan.runtime,
        latencies,
        rps: timeline.rps,
        rps_series: timeline.series,
        average_rps,
        trailer,
    })
}

/// The driver's own counters.
struct Timeline {
    rps: Histogram,
    series: Vec<u64>,
    requests: u64,
    base_requests: u64,
    zeroed_at: u64,
}

impl Timeline {
    fn new(shared: &Shared) -> Self {
        let requests = shared.stats.requests();
        Timeline {
            rps: Histogram::new(),
            series: Vec::with_capacity(shared.plan.runtime as usize),
            requests,
            base_requests: requests,
            zeroed_at: 0,
        }
    }

    /// Takes this second's RPS sample.
    fn sample(&mut self, shared: &Shared) -> u64 {
        let now = shared.stats.requests();
        let sample = now - self.requests;
        self.requests = now;
        self.rps.record(sample);
        self.series.push(sample);
        sample
    }

    fn zero(&mut self, shared: &Shared, k: u64) {
        shared.stats.zero();
        self.rps.clear();
        self.base_requests = self.requests;
        self.zeroed_at = k;
    }
}

fn sleep_until(deadline: Instant) {
    let left = deadline.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        std::thread::sleep(left);
    }
}
