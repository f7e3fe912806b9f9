//! Text output: hackbench's own lines, the latency tables and the
//! comparison tables.
//!
//! Owns: every format a user or a script reads — hackbench's header lines
//! and `Time: S.mmm` exactly as rt-tests prints them, the per-probe latency
//! table, the spawn rate line, and the `--backend all` comparisons
//! (speed-ups over `threads` and `tokio`: above 1 = faster). Must not: run
//! anything or decide exit codes; functions return strings so tests can
//! check them.

use crate::backend::green::describe_features;
use crate::backend::{
    BackendKind, HackbenchConfig, HackbenchRun, LatencyColumn, LatencyConfig, LatencyRun,
    SpawnConfig, SpawnLimit, SpawnRun,
};
use crate::latency::Priority;
use crate::opts::fmt_duration;
use crate::policy::LoadPolicy;
use std::fmt::Write as _;

/// What happened to one backend in a multi-backend run.
#[derive(Clone, Debug)]
pub enum Outcome<T> {
    /// It ran.
    Ran(T),
    /// It failed with this message.
    Failed(String),
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
    match kind {
        BackendKind::Green => {
            let _ = write!(
                s,
                "\n({} worker threads, eevdf-rt features: {}, I/O: {}, transport: {})",
                cfg.runtime.workers,
                describe_features(cfg.runtime.features.as_deref()),
                cfg.runtime.io.resolve().unwrap_or(cfg.runtime.io),
                cfg.transport.describe()
            );
        }
        k if k.has_runtime() => {
            let _ = write!(s, "\n({} worker threads)", cfg.runtime.workers);
        }
        _ => {}
    }
    if cfg.policy != LoadPolicy::Normal {
        let _ = if kind.has_policy() {
            write!(s, "\n(tasks' scheduling policy: {})", cfg.policy)
        } else {
            write!(
                s,
                "\n(--policy {} does not apply: tokio tasks have no scheduling policy)",
                cfg.policy
            )
        };
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

/// `numerator / denominator` as "N.NNx", or "-" when either is missing
/// or the denominator is not positive.
fn ratio(numerator: Option<f64>, denominator: Option<f64>) -> String {
    match (numerator, denominator) {
        (Some(n), Some(d)) if d > 0.0 => format!("{:.2}x", n / d),
        _ => "-".to_string(),
    }
}

/// What every "vs X" column of the comparison tables means.
pub const VS_MEANS: &str = "speed-up: above 1 = faster than X";

/// The `--backend all` hackbench table: time per backend and its speed-ups
/// over threads and over tokio (the reference's time / this time: above 1
/// = faster, as in the spawn table).
pub fn hackbench_table(
    cfg: &HackbenchConfig,
    rows: &[(BackendKind, Outcome<HackbenchRun>)],
) -> String {
    let time_of = |kind: BackendKind| {
        rows.iter().find_map(|(k, o)| match o {
            Outcome::Ran(r) if *k == kind => Some(r.elapsed.as_secs_f64()),
            _ => None,
        })
    };
    let (threads, tokio) = (time_of(BackendKind::Threads), time_of(BackendKind::Tokio));
    let mut s = format!(
        "Comparison: {} groups x {} fds, {} loops, {} bytes, {}; vs X = X's time / this time ({VS_MEANS})\n{:<10} {:>9} {:>11} {:>9} {:>12}\n",
        cfg.groups,
        2 * cfg.fds,
        cfg.loops,
        cfg.datasize,
        cfg.transport.describe(),
        "backend",
        "time (s)",
        "vs threads",
        "vs tokio",
        "messages ok"
    );
    for (k, o) in rows {
        let _ = match o {
            Outcome::Ran(r) => {
                let t = r.elapsed.as_secs_f64();
                writeln!(
                    s,
                    "{:<10} {:>9.3} {:>11} {:>9} {:>12}",
                    k.name(),
                    t,
                    ratio(threads, Some(t)),
                    ratio(tokio, Some(t)),
                    r.messages
                )
            }
            Outcome::Failed(m) => writeln!(s, "{:<10} {:>9} ({m})", k.name(), "FAILED"),
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
        "Latency mode, {} backend{}: {} probe(s), interval {}, duration {}; load: hackbench {} groups x {} fds, {} bytes, {}\n",
        kind.name(),
        if column.is_default() {
            String::new()
        } else {
            format!(", column '{}'", column.label)
        },
        cfg.nice_levels.len(),
        fmt_duration(cfg.interval),
        fmt_duration(cfg.duration),
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
pub fn latency_table(rows: &[(String, Outcome<LatencyRun>)], nice_levels: &[i32]) -> String {
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
                Outcome::Ran(r) => r.probes.get(i).map_or("-".to_string(), |p| {
                    format!(
                        "{:.0} / {:.0} / {:.0} / {:.0}",
                        us(p.min_ns),
                        us(p.avg_ns),
                        us(p.p99_ns),
                        us(p.max_ns)
                    )
                }),
                Outcome::Failed(_) => "FAILED".to_string(),
            };
            let _ = write!(s, " | {cell:^31}");
        }
        s.push('\n');
    }
    s
}

/// The latency comparison as a Markdown table for the project README, in
/// the shape of docs/kernel-discussions.md §3: one column per backend / green column,
/// one row per nice level with "min / avg / max (p99 …)" in µs, then the
/// preemptions of each column's probe window (green only: involuntary
/// switches, those that followed a tick in parentheses, then the wakeups
/// whose preemption check asked the running task to reschedule — a
/// request, so it may exceed the switches) and the messages the load moved.
pub fn latency_markdown(cfg: &LatencyConfig, rows: &[(String, Outcome<LatencyRun>)]) -> String {
    let l = &cfg.load;
    let all_green = rows.iter().all(|(label, _)| label.starts_with("green"));
    let heading = |label: &str| -> String {
        let h = if all_green {
            label.trim_start_matches("green").trim()
        } else {
            label
        };
        if h.is_empty() { "default" } else { h }.to_string()
    };
    let mut s = format!(
        "Markdown: wake-up lateness (us) of probes every {} for {} under hackbench -g {} -f {} -s {} ({}), {} workers; min / avg / max (p99)\n\n| nice |",
        fmt_duration(cfg.interval),
        fmt_duration(cfg.duration),
        l.groups,
        l.fds,
        l.datasize,
        l.transport.describe(),
        l.runtime.workers,
    );
    for (label, _) in rows {
        let _ = write!(s, " {} |", heading(label));
    }
    s.push_str("\n|---|");
    for _ in rows {
        s.push_str("---|");
    }
    s.push('\n');
    for (i, nice) in cfg.nice_levels.iter().enumerate() {
        let _ = write!(s, "| {nice} |");
        for (_, o) in rows {
            let cell = match o {
                Outcome::Ran(r) => r.probes.get(i).map_or("-".to_string(), |p| {
                    format!(
                        "{:.0} / {:.0} / {:.0} (p99 {:.0})",
                        us(p.min_ns),
                        us(p.avg_ns),
                        us(p.max_ns),
                        us(p.p99_ns)
                    )
                }),
                Outcome::Failed(_) => "FAILED".to_string(),
            };
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    s.push_str("| preemptions (at a tick) / wakeup-preemption requests |");
    for (_, o) in rows {
        let cell = match o {
            Outcome::Ran(r) => {
                let get = |name: &str| r.counters.iter().find(|(n, _)| n == name).map(|c| c.1);
                match (
                    get("preemptions"),
                    get("tick preemptions"),
                    get("wakeup preemptions"),
                ) {
                    (Some(p), Some(t), Some(w)) => format!("{p} ({t}) / {w}"),
                    _ => "-".to_string(),
                }
            }
            Outcome::Failed(_) => "FAILED".to_string(),
        };
        let _ = write!(s, " {cell} |");
    }
    s.push_str("\n| load messages |");
    for (_, o) in rows {
        let cell = match o {
            Outcome::Ran(r) => r.load_messages.to_string(),
            Outcome::Failed(_) => "FAILED".to_string(),
        };
        let _ = write!(s, " {cell} |");
    }
    s.push('\n');
    s
}

/// One backend's spawn result.
pub fn spawn_report(kind: BackendKind, cfg: &SpawnConfig, run: &SpawnRun) -> String {
    let limit = match cfg.limit {
        SpawnLimit::Duration(d) => format!("duration {}", fmt_duration(d)),
        SpawnLimit::Iterations(n) => format!("{n} spawns per spawner"),
    };
    let runtime = match kind {
        BackendKind::Green => format!(
            ", {} worker threads, eevdf-rt features: {}",
            cfg.runtime.workers,
            describe_features(cfg.runtime.features.as_deref())
        ),
        k if k.has_runtime() => format!(", {} worker threads", cfg.runtime.workers),
        _ => String::new(),
    };
    let mut s = format!(
        "Spawn test, {} backend: {} spawner(s), {limit}{runtime}\n\
         {} spawns in {:.3} s = {:.0} spawns/s",
        kind.name(),
        cfg.spawners,
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

/// The multi-row spawn table: spawns/s, speed-ups over threads and over
/// tokio (this rate / the reference's rate: above 1 = faster), and where
/// green put the new tasks (spawned on the spawner's own worker / elsewhere).
pub fn spawn_table(rows: &[(String, BackendKind, Outcome<SpawnRun>)]) -> String {
    let rate_of = |kind: BackendKind| {
        rows.iter().find_map(|(_, k, o)| match o {
            Outcome::Ran(r) if *k == kind => Some(r.rate()),
            _ => None,
        })
    };
    let (threads, tokio) = (rate_of(BackendKind::Threads), rate_of(BackendKind::Tokio));
    let w = rows
        .iter()
        .map(|(l, _, _)| l.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut s = format!(
        "Comparison; vs X = this spawns/s / X's spawns/s ({VS_MEANS})\n{:<w$} {:>12} {:>11} {:>9} {:>13} {:>14}\n",
        "backend", "spawns/s", "vs threads", "vs tokio", "spawned local", "spawned remote"
    );
    for (label, _, o) in rows {
        let _ = match o {
            Outcome::Ran(r) => {
                let counter = |name: &str| {
                    r.counters
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or("-".to_string(), |c| c.1.to_string())
                };
                writeln!(
                    s,
                    "{:<w$} {:>12.0} {:>11} {:>9} {:>13} {:>14}",
                    label,
                    r.rate(),
                    ratio(Some(r.rate()), threads),
                    ratio(Some(r.rate()), tokio),
                    counter("spawned local"),
                    counter("spawned remote")
                )
            }
            Outcome::Failed(m) => writeln!(s, "{:<w$} {:>12} ({m})", label, "FAILED"),
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
            policy: crate::policy::LoadPolicy::Normal,
            runtime: RuntimeOpts {
                workers: 2,
                features: None,
                stats: false,
                trace: None,
                io: eevdf_rt::io::IoDriver::Auto,
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
    fn comparison_has_speed_ups_over_threads_and_tokio() {
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
                (BackendKind::Green, run(100)),
                (BackendKind::Tokio, run(3000)),
            ],
        );
        assert!(t.contains("vs X = X's time / this time"), "{t}");
        assert!(t.contains("above 1 = faster than X"), "{t}");
        let row = |name: &str| -> Vec<String> {
            t.lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no {name} row: {t}"))
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        // Faster than threads (half the time): 2x; slower: below 1.
        assert_eq!(row("processes")[2..4], ["2.00x", "6.00x"], "{t}");
        assert_eq!(row("threads")[2..4], ["1.00x", "3.00x"], "{t}");
        assert_eq!(row("green")[2..4], ["10.00x", "30.00x"], "{t}");
        assert_eq!(row("tokio")[2..4], ["0.33x", "1.00x"], "{t}");
    }

    #[test]
    fn comparison_without_a_reference_shows_a_dash() {
        let t = hackbench_table(
            &cfg(),
            &[
                (
                    BackendKind::Green,
                    Outcome::Ran(HackbenchRun {
                        elapsed: Duration::from_millis(100),
                        ..Default::default()
                    }),
                ),
                (BackendKind::Threads, Outcome::Failed("boom".into())),
            ],
        );
        let green = t.lines().find(|l| l.starts_with("green")).unwrap();
        assert_eq!(green.split_whitespace().nth(2), Some("-"), "{t}");
        assert!(t.contains("threads       FAILED (boom)"), "{t}");
    }

    #[test]
    fn reports_print_durations_exactly() {
        use crate::latency::{Priority, ProbeResult};
        let mut lcfg = LatencyConfig {
            load: cfg(),
            interval: Duration::from_nanos(1500),
            duration: Duration::from_millis(30),
            nice_levels: vec![0],
        };
        let run = LatencyRun {
            probes: vec![ProbeResult {
                nice: 0,
                priority: Priority::Applied,
                cycles: 1,
                overruns: 0,
                min_ns: 0,
                avg_ns: 0,
                p50_ns: 0,
                p99_ns: 0,
                max_ns: 0,
            }],
            load_messages: 0,
            notes: Vec::new(),
            counters: Vec::new(),
        };
        let col = crate::backend::LatencyColumn::default_column();
        let r = latency_report(BackendKind::Threads, &lcfg, &col, &run);
        assert!(r.contains("interval 1500ns, duration 30ms;"), "{r}");
        lcfg.duration = Duration::from_millis(50);
        lcfg.interval = Duration::from_millis(1);
        let rows = vec![("green".to_string(), Outcome::Ran(run.clone()))];
        let m = latency_markdown(&lcfg, &rows);
        assert!(m.contains("probes every 1ms for 50ms under"), "{m}");
        for (d, shown) in [
            (Duration::from_millis(30), "duration 30ms"),
            (Duration::from_millis(50), "duration 50ms"),
            (Duration::from_secs(5), "duration 5s"),
        ] {
            let scfg = SpawnConfig {
                spawners: 2,
                limit: SpawnLimit::Duration(d),
                runtime: cfg().runtime,
            };
            let s = spawn_report(BackendKind::Threads, &scfg, &SpawnRun::default());
            assert!(
                s.starts_with(&format!(
                    "Spawn test, threads backend: 2 spawner(s), {shown}\n"
                )),
                "{s}"
            );
        }
    }

    #[test]
    fn markdown_latency_table_has_a_column_per_run_and_counters() {
        use crate::latency::{Priority, ProbeResult};
        let probe = |nice, us: u64| ProbeResult {
            nice,
            priority: Priority::Applied,
            cycles: 10,
            overruns: 0,
            min_ns: us * 1_000,
            avg_ns: 2 * us * 1_000,
            p50_ns: 2 * us * 1_000,
            p99_ns: 3 * us * 1_000,
            max_ns: 4 * us * 1_000,
        };
        let run = |us, preempt| LatencyRun {
            probes: vec![probe(-19, us), probe(0, 2 * us)],
            load_messages: 123,
            notes: Vec::new(),
            counters: vec![
                ("preemptions".into(), preempt),
                ("tick preemptions".into(), preempt / 2),
                ("wakeup preemptions".into(), 7),
            ],
        };
        let cfg = LatencyConfig {
            load: cfg(),
            interval: Duration::from_millis(1),
            duration: Duration::from_secs(5),
            nice_levels: vec![-19, 0],
        };
        let rows = vec![
            ("green default".to_string(), Outcome::Ran(run(6, 100))),
            ("green TICK_ELIGIBLE".to_string(), Outcome::Ran(run(5, 600))),
            ("green slice=100us".to_string(), Outcome::Failed("x".into())),
        ];
        let t = latency_markdown(&cfg, &rows);
        assert!(
            t.contains("| nice | default | TICK_ELIGIBLE | slice=100us |\n|---|---|---|---|\n"),
            "{t}"
        );
        assert!(
            t.contains("| -19 | 6 / 12 / 24 (p99 18) | 5 / 10 / 20 (p99 15) | FAILED |"),
            "{t}"
        );
        assert!(
            t.contains("| 100 (50) / 7 | 600 (300) / 7 | FAILED |"),
            "{t}"
        );
        assert!(t.contains("| load messages | 123 | 123 | FAILED |"), "{t}");
    }

    #[test]
    fn spawn_table_has_ratios_and_placement() {
        let run = |ms: u64, counters: Vec<(String, u64)>| {
            Outcome::Ran(SpawnRun {
                spawns: 1000,
                elapsed: Duration::from_millis(ms),
                counters,
                details: Vec::new(),
            })
        };
        let t = spawn_table(&[
            ("threads".into(), BackendKind::Threads, run(1000, vec![])),
            (
                "green SPAWN_LOCAL".into(),
                BackendKind::Green,
                run(
                    10,
                    vec![("spawned local".into(), 1000), ("spawned remote".into(), 0)],
                ),
            ),
            ("tokio".into(), BackendKind::Tokio, run(20, vec![])),
        ]);
        assert!(t.contains("vs X = this spawns/s / X's spawns/s"), "{t}");
        assert!(t.contains("above 1 = faster than X"), "{t}");
        assert!(t.contains("100.00x") && t.contains("2.00x"), "{t}");
        let threads = t.lines().find(|l| l.starts_with("threads")).unwrap();
        // threads is 50 times slower than tokio: 0.02x.
        assert!(
            threads.contains("1.00x") && threads.contains("0.02x"),
            "{t}"
        );
        assert!(t.contains("1000              0"), "{t}");
    }
}
