//! JSON output of `-j FILE`: one object per backend, one per line (JSON Lines).
//!
//! This module owns the key names. It must not compute anything the text report does
//! not show (percentiles come from the same histograms, read the same way).
//!
//! Keys of each object:
//! - `backend` (string), `features` (string or null; green only), `jobname` (string or
//!   null), `runtime` (configured seconds);
//! - `wakeup_latency`, `request_latency` (µs): `total_samples`, `min`, `max`, `p50`,
//!   `p90`, `p99`, `p99_9`;
//! - `rps` (requests per second): `total_samples`, `min`, `max`, `p20`, `p50`, `p90`;
//! - in a block with `total_samples` 0, `min`, `max` and the percentiles are null (no
//!   sample: not a value of 0);
//! - `average_rps` (number);
//! - `options`: every resolved option (`message_threads`, `threads`, `runtime`,
//!   `warmuptime`, `intervaltime`, `zerotime`, `footprint_kib`, `operations`,
//!   `sleeptime_usec`, `locking`, `calibrate`, `rps`, `auto_rps`, `pipe`,
//!   `message_cpus`, `worker_cpus`, `workers`: the runtime worker threads of this
//!   object's backend).

use std::io::{self, Write};

use serde_json::{json, Map, Value};

use crate::driver::Outcome;
use crate::hist::{Histogram, LATENCY_PERCENTILES, RPS_PERCENTILES};
use crate::opts::Plan;

fn block(hist: &Histogram, pcts: &[f64]) -> Value {
    let mut map = Map::new();
    let total = hist.total();
    // No sample: null, not 0 (which would read as a measured 0).
    let value = |v: u64| if total == 0 { Value::Null } else { v.into() };
    map.insert("total_samples".into(), total.into());
    map.insert("min".into(), value(hist.min()));
    map.insert("max".into(), value(hist.max()));
    for p in hist.percentiles(pcts) {
        map.insert(format!("p{}", p.pct).replace('.', "_"), value(p.value));
    }
    Value::Object(map)
}

/// The JSON object of one backend's outcome.
pub fn outcome(o: &Outcome, plan: &Plan) -> Value {
    json!({
        "backend": o.backend,
        "features": o.features,
        "jobname": plan.jobname,
        "runtime": o.runtime,
        "wakeup_latency": block(&o.latencies.wakeup, &LATENCY_PERCENTILES),
        "request_latency": block(&o.latencies.request, &LATENCY_PERCENTILES),
        "rps": block(&o.rps, &RPS_PERCENTILES),
        "average_rps": o.average_rps,
        "options": options(plan, o.backend),
    })
}

fn options(plan: &Plan, backend: &str) -> Value {
    json!({
        "message_threads": plan.message_threads,
        "threads": plan.workers_per_message,
        "runtime": plan.runtime,
        "warmuptime": plan.warmup,
        "intervaltime": plan.interval,
        "zerotime": plan.zero_every,
        "footprint_kib": plan.footprint_kib,
        "operations": plan.operations,
        "sleeptime_usec": plan.sleep_us,
        "locking": plan.locking,
        "calibrate": plan.calibrate,
        "rps": plan.rps,
        "auto_rps": plan.auto_rps,
        "pipe": plan.pipe,
        "message_cpus": plan.message_cpus.as_ref().map(ToString::to_string),
        "worker_cpus": plan.worker_cpus.as_ref().map(ToString::to_string),
        "workers": if backend == "green" { plan.green_workers } else { plan.runtime_workers },
    })
}

/// Writes one line per outcome.
pub fn write_lines(out: &mut dyn Write, outcomes: &[Outcome], plan: &Plan) -> io::Result<()> {
    for o in outcomes {
        writeln!(out, "{}", outcome(o, plan))?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_keys() {
        let mut h = Histogram::new();
        h.record(5);
        let lat = block(&h, &LATENCY_PERCENTILES);
        for key in ["total_samples", "min", "max", "p50", "p90", "p99", "p99_9"] {
            let want: u64 = if key == "total_samples" { 1 } else { 5 };
            assert_eq!(lat[key], want, "{key}");
        }
        let rps = block(&h, &RPS_PERCENTILES);
        assert!(rps.get("p20").is_some() && rps.get("p99").is_none());
    }

    #[test]
    fn empty_blocks_are_null_and_percentiles_stay_within_max() {
        let empty = block(&Histogram::new(), &LATENCY_PERCENTILES);
        assert_eq!(empty["total_samples"], 0);
        for key in ["min", "max", "p50", "p90", "p99", "p99_9"] {
            assert!(empty[key].is_null(), "{key}: {}", empty[key]);
        }
        let mut h = Histogram::new();
        h.record(943);
        let rps = block(&h, &RPS_PERCENTILES);
        for key in ["min", "max", "p20", "p50", "p90"] {
            assert_eq!(rps[key], 943, "{key}");
        }
    }
}
