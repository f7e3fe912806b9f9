//! `--plot FILE.svg`: two panels side by side — latency percentiles per backend on a
//! log scale (wakeup solid, request dashed), and the one-second RPS samples of each
//! backend over time.
//!
//! This module owns what goes into the picture; the drawing is
//! `bench_common::plot`'s. It must not compute statistics beyond reading
//! percentiles off the final histograms.

use std::path::Path;

use bench_common::plot::{percentiles_and_series, Line, TimeSeries};

use crate::driver::Outcome;
use crate::hist::LATENCY_PERCENTILES;

const LABELS: [&str; 4] = ["p50", "p90", "p99", "p99.9"];

/// Draws the outcomes into an SVG file at `path`.
pub fn draw(path: &Path, outcomes: &[Outcome]) -> Result<(), String> {
    let values = |h: &crate::hist::Histogram| -> Vec<u64> {
        h.percentiles(&LATENCY_PERCENTILES)
            .iter()
            .take(LABELS.len())
            .map(|p| p.value.max(1))
            .collect()
    };
    let mut lines = Vec::new();
    for (i, o) in outcomes.iter().enumerate() {
        lines.push(Line {
            name: format!("{} wakeup", o.backend),
            values: values(&o.latencies.wakeup),
            dashed: false,
            colour: i,
        });
        lines.push(Line {
            name: format!("{} request", o.backend),
            values: values(&o.latencies.request),
            dashed: true,
            colour: i,
        });
    }
    let series: Vec<TimeSeries> = outcomes
        .iter()
        .map(|o| TimeSeries {
            name: format!("{} (average {:.0})", o.backend, o.average_rps),
            values: o.rps_series.clone(),
        })
        .collect();
    percentiles_and_series(
        path,
        &LABELS,
        "latency percentiles (usec, log scale)",
        &lines,
        "requests per second",
        "rps",
        &series,
    )
}
