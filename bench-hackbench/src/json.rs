//! `--json FILE`: the results as JSON Lines, one object per row of the
//! printed report, so that scripts need not scrape the text.
//!
//! Owns: the shape of those objects. Must not: measure or print.
//!
//! Every object has `mode` ("hackbench", "latency" or "spawn"), `backend`,
//! `label` (the report row: the backend, or a latency column / spawn
//! placement variant), `ok` and, when a row failed, `error`; then:
//!
//! * hackbench: `groups`, `fds`, `loops`, `datasize`, `transport`,
//!   `policy` (`"normal"` or `"batch"`; null for tokio, which has none),
//!   `features` (green only, else null), `workers` (green and tokio, else
//!   null), `time_s`, `messages`;
//! * latency: `interval_us`, `duration_s`, `load_messages`, `probes` (per
//!   nice level: `nice`, `priority`, `cycles`, `overruns`, `min_us`,
//!   `avg_us`, `p50_us`, `p99_us`, `max_us`), `counters`;
//! * spawn: `spawners`, `spawns`, `time_s`, `spawns_per_s`, `counters`.

use crate::backend::{
    BackendKind, HackbenchConfig, HackbenchRun, LatencyConfig, LatencyRun, SpawnRun,
};
use crate::latency::Priority;
use crate::report::Outcome;
use serde_json::{json, Map, Value};
use std::io::Write;

fn row<T>(
    mode: &str,
    backend: &str,
    label: &str,
    o: &Outcome<T>,
    fill: impl FnOnce(&T, &mut Map<String, Value>),
) -> Value {
    let mut m = Map::new();
    m.insert("mode".into(), json!(mode));
    m.insert("backend".into(), json!(backend));
    m.insert("label".into(), json!(label));
    match o {
        Outcome::Ran(r) => {
            m.insert("ok".into(), json!(true));
            fill(r, &mut m);
        }
        Outcome::Failed(e) => {
            m.insert("ok".into(), json!(false));
            m.insert("error".into(), json!(e));
        }
    }
    Value::Object(m)
}

fn counters(c: &[(String, u64)]) -> Value {
    Value::Object(c.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

/// One hackbench row.
pub fn hackbench(cfg: &HackbenchConfig, kind: BackendKind, o: &Outcome<HackbenchRun>) -> Value {
    let backend = kind.name();
    row("hackbench", backend, backend, o, |r, m| {
        m.insert("groups".into(), json!(cfg.groups));
        m.insert("fds".into(), json!(cfg.fds));
        m.insert("loops".into(), json!(cfg.loops));
        m.insert("datasize".into(), json!(cfg.datasize));
        m.insert("transport".into(), json!(cfg.transport.describe()));
        let policy = kind.has_policy().then(|| cfg.policy.to_string());
        m.insert("policy".into(), json!(policy));
        // Only the green backend has feature switches, and only the two
        // runtimes have worker threads: null for the others.
        let features = (kind == BackendKind::Green)
            .then(|| cfg.runtime.features.clone())
            .flatten();
        m.insert("features".into(), json!(features));
        let workers = kind.has_runtime().then_some(cfg.runtime.workers);
        m.insert("workers".into(), json!(workers));
        m.insert("time_s".into(), json!(r.elapsed.as_secs_f64()));
        m.insert("messages".into(), json!(r.messages));
    })
}

/// One latency row (a backend, or one of green's columns).
pub fn latency(cfg: &LatencyConfig, backend: &str, label: &str, o: &Outcome<LatencyRun>) -> Value {
    let us = |ns: u64| ns as f64 / 1e3;
    row("latency", backend, label, o, |r, m| {
        m.insert(
            "interval_us".into(),
            json!(us(cfg.interval.as_nanos() as u64)),
        );
        m.insert("duration_s".into(), json!(cfg.duration.as_secs_f64()));
        m.insert("load_messages".into(), json!(r.load_messages));
        let probes: Vec<Value> = r
            .probes
            .iter()
            .map(|p| {
                json!({
                    "nice": p.nice,
                    "priority": match &p.priority {
                        Priority::Applied => "applied".to_string(),
                        Priority::Failed(e) => format!("failed: {e}"),
                        Priority::Unsupported => "unsupported".to_string(),
                    },
                    "cycles": p.cycles,
                    "overruns": p.overruns,
                    "min_us": us(p.min_ns),
                    "avg_us": us(p.avg_ns),
                    "p50_us": us(p.p50_ns),
                    "p99_us": us(p.p99_ns),
                    "max_us": us(p.max_ns),
                })
            })
            .collect();
        m.insert("probes".into(), Value::Array(probes));
        m.insert("counters".into(), counters(&r.counters));
    })
}

/// One spawn row (a backend, or one of green's placement variants).
pub fn spawn(spawners: usize, backend: &str, label: &str, o: &Outcome<SpawnRun>) -> Value {
    row("spawn", backend, label, o, |r, m| {
        m.insert("spawners".into(), json!(spawners));
        m.insert("spawns".into(), json!(r.spawns));
        m.insert("time_s".into(), json!(r.elapsed.as_secs_f64()));
        m.insert("spawns_per_s".into(), json!(r.rate()));
        m.insert("counters".into(), counters(&r.counters));
    })
}

/// Writes `rows` to `path`, one object per line.
pub fn write_lines(path: &std::path::Path, rows: &[Value]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    for r in rows {
        serde_json::to_writer(&mut w, r)?;
        writeln!(w)?;
    }
    w.flush()
}
