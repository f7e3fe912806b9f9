//! Text output: hackbench's own lines, the latency tables and the
//! comparison tables.
//!
//! Owns: every format a user or a script reads — hackbench's header lines
//! and `Time: S.mmm` exactly as rt-tests prints them, the per-probe latency
//! table, the spawn rate line, and the `--backend all` comparisons (ratios
//! to `threads`). Must not: run anything or decide exit codes; functions
//! return strings so tests can check them.

use crate::backend::{
    BackendKind, HackbenchConfig, HackbenchRun, LatencyColumn, LatencyConfig, LatencyRun,
    SpawnConfig, SpawnLimit, SpawnRun,
};
use crate::latency::{Priority, ProbeResult};
use std::fmt::Write as _;

/// What happened to one backend in a multi-backend run.
#[derive(Clone, Debug)]
pub enum Outcome<T> {
    /// It ran.
    Ran(T),
    /// It failed with this message.
    Failed(String),
    /// It is not built yet (green).
    NotYetAvailable,
}

/// hackbench's two header lines, e.g.
/// `Running in process mode with 10 groups using 40 file descriptors each (== 400 tasks)` and
/// `Each sender will pass 100 messages of 100 bytes`.
pub fn hackbench_header(kind: BackendKind, cfg: &HackbenchConfig) -> String {
    let mut s = format!(
        "Running in {} mode with {} groups using {} file descriptors each (== {} tasks)\n\
         Each sender will pass {} messages of {} bytes",
        kind.mode_word(),
        cfg.groups,
        2 * cfg.fds,
        cfg.tasks(),
        cfg.loops,
        cfg.datasize
    );
    if kind.has_runtime() {
        let _ = write!(s, "\n({} worker threads)", cfg.runtime.workers);
    }
    s
}

/// `Time: S.mmm`, as hackbench prints it, then any backend details.
pub fn hackbench_time(run: &HackbenchRun) -> String {
    let mut s = format!("Time: {:.3}", run.elapsed.as_secs_f64());
    for d in &run.details {
        let _ = write!(s, "\n{d}");
    }
    s
}

/// Ratio of `value` to the threads backend's value, or "-" without one.
fn ratio(value: f64, threads: Option<f64>) -> String {
    match threads {
        Some(t) if t > 0.0 => format!("{:.2}x", value / t),
        _ => "-".to_string(),
    }
}

/// The `--backend all` hackbench table: time per backend and its ratio to
/// threads (above 1 = slower than threads).
pub fn hackbench_table(
    cfg: &HackbenchConfig,
    rows: &[(BackendKind, Outcome<HackbenchRun>)],
) -> String {
    let threads = rows.iter().find_map(|(k, o)| match o {
        Outcome::Ran(r) if *k == BackendKind::Threads => Some(r.elapsed.as_secs_f64()),
        _ => None,
    });
    let mut s = format!(
        "Comparison: {} groups x {} fds, {} loops, {} bytes, {}\n{:<10} {:>9} {:>11} {:>12}\n",
        cfg.groups,
        2 * cfg.fds,
        cfg.loops,
        cfg.datasize,
        cfg.transport.describe(),
        "backend",
        "time (s)",
        "vs threads",
        "messages ok"
    );
    for (k, o) in rows {
        let _ = match o {
            Outcome::Ran(r) => {
                let t = r.elapsed.as_secs_f64();
                writeln!(
                    s,
                    "{:<10} {:>9.3} {:>11} {:>12}",
                    k.name(),
                    t,
                    ratio(t, threads),
                    r.messages
                )
            }
            Outcome::Failed(m) => writeln!(s, "{:<10} {:>9} ({m})", k.name(), "FAILED"),
            Outcome::NotYetAvailable => writeln!(s, "{:<10} {:>9}", k.name(), "not yet available"),
        };
    }
    s
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

/// The latency report of one backend and column: a header, one line per
/// probe (cycles, overruns, min / avg / p50 / p99 / max in µs), warnings
/// for priorities that did not apply, notes and counters.
pub fn latency_report(
    kind: BackendKind,
    cfg: &LatencyConfig,
    column: &LatencyColumn,
    run: &LatencyRun,
) -> String {
    let l = &cfg.load;
    let mut s = format!(
        "Latency mode, {} backend{}: {} probe(s), interval {} us, {:.1} s; load: hackbench {} groups x {} fds, {} bytes, {}\n",
        kind.name(),
        if column.label == "default" && column.probe_slice.is_none() {
            String::new()
        } else {
            format!(", column '{}'", column.label)
        },
        cfg.nice_levels.len(),
        cfg.interval.as_micros(),
        cfg.duration.as_secs_f64(),
        l.groups,
        2 * l.fds,
        l.datasize,
        l.transport.describe(),
    );
    let _ = writeln!(
        s,
        "{:>5} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10}   (us)",
        "nice", "cycles", "overruns", "min", "avg", "p50", "p99", "max"
    );
    for p in &run.probes {
        let _ = writeln!(
            s,
            "{:>5} {:>8} {:>8} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.1}",
            p.nice,
            p.cycles,
            p.overruns,
            us(p.min_ns),
            us(p.avg_ns),
            us(p.p50_ns),
            us(p.p99_ns),
            us(p.max_ns)
        );
    }
    for p in &run.probes {
        if let Priority::Failed(why) = &p.priority {
            let _ = writeln!(
                s,
                "warning: probe nice {} ran at the inherited priority: {why}",
                p.nice
            );
        }
    }
    for n in &run.notes {
        let _ = writeln!(s, "note: {n}");
    }
    for (name, v) in &run.counters {
        let _ = writeln!(s, "{name}: {v}");
    }
    let _ = write!(s, "load: {} messages moved and verified", run.load_messages);
    s
}

/// The `--backend all` latency table: one row per nice level, one
/// "min / avg / p99 / max" cell (µs) per backend and column.
pub fn latency_table(rows: &[(String, Outcome<Vec<ProbeResult>>)], nice_levels: &[i32]) -> String {
    let mut s = String::from("Comparison (min / avg / p99 / max, us)\n");
    let _ = write!(s, "{:>5}", "nice");
    for (label, _) in rows {
        let _ = write!(s, " | {label:^31}");
    }
    s.push('\n');
    for (i, nice) in nice_levels.iter().enumerate() {
        let _ = write!(s, "{nice:>5}");
        for (_, o) in rows {
            let cell = match o {
                Outcome::Ran(probes) => probes.get(i).map_or("-".to_string(), |p| {
                    format!(
                        "{:.0} / {:.0} / {:.0} / {:.0}",
                        us(p.min_ns),
                        us(p.avg_ns),
                        us(p.p99_ns),
                        us(p.max_ns)
                    )
                }),
                Outcome::Failed(_) => "FAILED".to_string(),
                Outcome::NotYetAvailable => "not yet available".to_string(),
            };
            let _ = write!(s, " | {cell:^31}");
        }
        s.push('\n');
    }
    s
}

/// One backend's spawn result.
pub fn spawn_report(kind: BackendKind, cfg: &SpawnConfig, run: &SpawnRun) -> String {
    let limit = match cfg.limit {
        SpawnLimit::Duration(d) => format!("{:.1} s", d.as_secs_f64()),
        SpawnLimit::Iterations(n) => format!("{n} spawns per spawner"),
    };
    let mut s = format!(
        "Spawn test, {} backend: {} spawner(s), {limit}{}\n\
         {} spawns in {:.3} s = {:.0} spawns/s",
        kind.name(),
        cfg.spawners,
        if kind.has_runtime() {
            format!(", {} worker threads", cfg.runtime.workers)
        } else {
            String::new()
        },
        run.spawns,
        run.elapsed.as_secs_f64(),
        run.rate()
    );
    for (name, v) in &run.counters {
        let _ = write!(s, "\n{name}: {v}");
    }
    for d in &run.details {
        let _ = write!(s, "\n{d}");
    }
    s
}

/// The `--backend all` spawn table: spawns/s and ratio to threads (above
/// 1 = faster than threads).
pub fn spawn_table(rows: &[(BackendKind, Outcome<SpawnRun>)]) -> String {
    let threads = rows.iter().find_map(|(k, o)| match o {
        Outcome::Ran(r) if *k == BackendKind::Threads => Some(r.rate()),
        _ => None,
    });
    let mut s = format!(
        "Comparison\n{:<10} {:>12} {:>11}\n",
        "backend", "spawns/s", "vs threads"
    );
    for (k, o) in rows {
        let _ = match o {
            Outcome::Ran(r) => writeln!(
                s,
                "{:<10} {:>12.0} {:>11}",
                k.name(),
                r.rate(),
                ratio(r.rate(), threads)
            ),
            Outcome::Failed(m) => writeln!(s, "{:<10} {:>12} ({m})", k.name(), "FAILED"),
            Outcome::NotYetAvailable => writeln!(s, "{:<10} {:>12}", k.name(), "not yet available"),
        };
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::RuntimeOpts;
    use crate::transport::TransportKind;
    use std::time::Duration;

    fn cfg() -> HackbenchConfig {
        HackbenchConfig {
            groups: 10,
            fds: 20,
            loops: 100,
            datasize: 100,
            transport: TransportKind::UnixSocket,
            runtime: RuntimeOpts {
                workers: 2,
                features: None,
                stats: false,
            },
        }
    }

    #[test]
    fn header_and_time_match_rt_tests() {
        assert_eq!(
            hackbench_header(BackendKind::Processes, &cfg()),
            "Running in process mode with 10 groups using 40 file descriptors each (== 400 tasks)\n\
             Each sender will pass 100 messages of 100 bytes"
        );
        assert!(
            hackbench_header(BackendKind::Threads, &cfg()).starts_with("Running in threaded mode")
        );
        let run = HackbenchRun {
            elapsed: Duration::from_millis(2210),
            ..Default::default()
        };
        assert_eq!(hackbench_time(&run), "Time: 2.210");
    }

    #[test]
    fn comparison_has_ratios_to_threads() {
        let run = |ms| {
            Outcome::Ran(HackbenchRun {
                elapsed: Duration::from_millis(ms),
                ..Default::default()
            })
        };
        let t = hackbench_table(
            &cfg(),
            &[
                (BackendKind::Processes, run(500)),
                (BackendKind::Threads, run(1000)),
                (BackendKind::Green, Outcome::NotYetAvailable),
                (BackendKind::Tokio, run(3000)),
            ],
        );
        assert!(t.contains("0.50x"), "{t}");
        assert!(t.contains("1.00x"), "{t}");
        assert!(t.contains("3.00x"), "{t}");
        assert!(t.contains("not yet available"), "{t}");
    }
}
