//! `hackbench`: hackbench, a cyclictest-style latency mode and a spawn test,
//! each on several backends (processes, threads, green, tokio).
//!
//! Owns: the top level — parse options, run the selected mode on each
//! selected backend, print, plot, write `--json`, and turn failures into exit codes (0 ok,
//! 1 a run failed, 2 bad usage or an unavailable backend). Must not: hold
//! workload, measurement or formatting code; those live in the modules
//! below.

mod backend;
mod error;
mod gate;
mod json;
mod latency;
mod load;
mod opts;
mod policy;
mod probes;
mod report;
mod spawn;
mod tasks;
mod transport;
mod verify;
mod workload;

#[cfg(test)]
mod tests;

use backend::{BackendKind, LatencyConfig, Missing, SpawnConfig};
use bench_common::plot;
use bench_common::{out, outln};
use error::BenchError;
use opts::{Config, Mode, OptsError};
use report::Outcome;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cfg = match opts::parse(std::env::args_os()) {
        Ok(c) => c,
        Err(OptsError::Clap(e)) => bench_common::out::exit_clap(e),
        Err(OptsError::Usage(m)) => {
            eprintln!("hackbench: {m}\nTry 'hackbench --help' for more information.");
            return ExitCode::from(2);
        }
    };
    // Open output files before running, so a bad path fails at once.
    for (option, path) in [
        ("--plot", &cfg.plot),
        ("--json", &cfg.json),
        ("--trace", &cfg.hackbench.runtime.trace),
    ] {
        if let Some(path) = path {
            if let Err(e) = std::fs::File::create(path) {
                eprintln!(
                    "hackbench: cannot create {option} file {}: {e}",
                    path.display()
                );
                return ExitCode::from(2);
            }
        }
    }
    // Notes go to stderr (as schbench's do), so stdout holds only results.
    for n in &cfg.notes {
        eprintln!("note: {n}");
    }
    match run(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hackbench: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// Looks up a backend's implementation of a mode.
fn lookup<T>(kind: BackendKind, found: Result<T, Missing>) -> Result<T, BenchError> {
    found.map_err(|Missing::Unsupported| {
        BenchError::Usage(format!("the {} backend has no such mode", kind.name()))
    })
}

fn run(cfg: &Config) -> Result<(), BenchError> {
    match &cfg.mode {
        Mode::Hackbench => run_hackbench(cfg),
        Mode::Latency {
            interval,
            duration,
            nice_levels,
            columns,
        } => {
            let lcfg = LatencyConfig {
                load: cfg.hackbench.clone(),
                interval: *interval,
                duration: *duration,
                nice_levels: nice_levels.clone(),
            };
            run_latency(cfg, &lcfg, columns)
        }
        Mode::Spawn { spawners, limit } => {
            let scfg = SpawnConfig {
                spawners: *spawners,
                limit: *limit,
                runtime: cfg.hackbench.runtime.clone(),
            };
            run_spawn(cfg, &scfg)
        }
    }
}

fn flush() {
    bench_common::out::flush();
}

/// Records a failed backend and returns the error's message.
fn failed(kind: BackendKind, e: &BenchError, first: &mut Option<i32>) -> String {
    eprintln!("hackbench: {} backend: {e}", kind.name());
    first.get_or_insert(e.exit_code());
    e.to_string()
}

fn finish(first_failure: Option<i32>, what: &str) -> Result<(), BenchError> {
    match first_failure {
        None => Ok(()),
        Some(2) => Err(BenchError::Usage(format!("{what} could not run as asked"))),
        Some(_) => Err(BenchError::Task(format!("{what} failed (see above)"))),
    }
}

fn run_hackbench(cfg: &Config) -> Result<(), BenchError> {
    let h = &cfg.hackbench;
    let multi = cfg.backends.len() > 1;
    let mut rows = Vec::new();
    let mut failure = None;
    for &kind in &cfg.backends {
        let b = lookup(kind, backend::hackbench(kind))?;
        debug_assert_eq!(b.kind(), kind);
        if multi {
            outln!("== {} ==", kind.name());
        }
        outln!("{}", report::hackbench_header(kind, h));
        flush();
        match b.run(h) {
            Ok(r) => {
                outln!("{}", report::hackbench_time(&r));
                rows.push((kind, Outcome::Ran(r)));
            }
            Err(e) => {
                let m = failed(kind, &e, &mut failure);
                rows.push((kind, Outcome::Failed(m)));
            }
        }
        if multi {
            outln!();
        }
    }
    if multi {
        out!("{}", report::hackbench_table(h, &rows));
    }
    write_json(cfg, rows.iter().map(|(k, o)| json::hackbench(h, *k, o)))?;
    if let Some(path) = &cfg.plot {
        let groups: Vec<String> = rows.iter().map(|(k, _)| k.name().to_string()).collect();
        let values = rows
            .iter()
            .map(|(_, o)| match o {
                Outcome::Ran(r) => Some(r.elapsed.as_secs_f64()),
                _ => None,
            })
            .collect();
        let title = format!(
            "hackbench -g {} -f {} -l {} -s {} ({})",
            h.groups,
            h.fds,
            h.loops,
            h.datasize,
            h.transport.describe()
        );
        write_plot(
            path,
            &title,
            "time (s)",
            &groups,
            vec![plot::Series {
                name: "time".into(),
                values,
            }],
            false,
        )?;
    }
    finish(failure, "hackbench")
}

fn run_latency(
    cfg: &Config,
    lcfg: &LatencyConfig,
    columns: &[backend::LatencyColumn],
) -> Result<(), BenchError> {
    let mut rows: Vec<(String, Outcome<backend::LatencyRun>)> = Vec::new();
    let mut json_rows = Vec::new();
    let mut failure = None;
    let default_only = [backend::LatencyColumn::default_column()];
    for &kind in &cfg.backends {
        let b = lookup(kind, backend::latency(kind))?;
        debug_assert_eq!(b.kind(), kind);
        // Columns (feature sets, probe slices) are green-only.
        let cols = if kind == BackendKind::Green {
            columns
        } else {
            &default_only[..]
        };
        for col in cols {
            // A column that changes something is named even when alone.
            let label = if cols.len() > 1 || !col.is_default() {
                format!("{} {}", kind.name(), col.label)
            } else {
                kind.name().to_string()
            };
            flush();
            match b.run(lcfg, col) {
                Ok(r) => {
                    outln!("{}\n", report::latency_report(kind, lcfg, col, &r));
                    rows.push((label, Outcome::Ran(r)));
                }
                Err(e) => {
                    let m = failed(kind, &e, &mut failure);
                    rows.push((label, Outcome::Failed(m)));
                }
            }
            if let Some((label, o)) = rows.last() {
                json_rows.push(json::latency(lcfg, kind.name(), label, o));
            }
        }
    }
    if rows.len() > 1 {
        out!("{}", report::latency_table(&rows, &lcfg.nice_levels));
    }
    write_json(cfg, json_rows)?;
    if cfg.backends.contains(&BackendKind::Green) {
        outln!();
        out!("{}", report::latency_markdown(lcfg, &rows));
    }
    if let Some(path) = &cfg.plot {
        let groups: Vec<String> = lcfg
            .nice_levels
            .iter()
            .map(|n| format!("nice {n}"))
            .collect();
        let mut series = Vec::new();
        for (label, o) in &rows {
            if let Outcome::Ran(r) = o {
                let avg = r
                    .probes
                    .iter()
                    .map(|p| Some(p.avg_ns as f64 / 1e3))
                    .collect();
                let p99 = r
                    .probes
                    .iter()
                    .map(|p| Some(p.p99_ns as f64 / 1e3))
                    .collect();
                series.push(plot::Series {
                    name: format!("{label} avg"),
                    values: avg,
                });
                series.push(plot::Series {
                    name: format!("{label} p99"),
                    values: p99,
                });
            }
        }
        let title = format!(
            "wake-up lateness, interval {}, under hackbench -g {}",
            opts::fmt_duration(lcfg.interval),
            lcfg.load.groups
        );
        write_plot(path, &title, "lateness (us)", &groups, series, true)?;
    }
    finish(failure, "latency mode")
}

fn run_spawn(cfg: &Config, scfg: &SpawnConfig) -> Result<(), BenchError> {
    let mut rows = Vec::new();
    let mut failure = None;
    for &kind in &cfg.backends {
        let b = lookup(kind, backend::spawn(kind))?;
        debug_assert_eq!(b.kind(), kind);
        // Green runs once per spawn-placement policy (SPAWN_LOCAL and
        // NO_SPAWN_LOCAL) unless --features chose one.
        let variants = if kind == BackendKind::Green {
            backend::green::spawn::placement_variants(&scfg.runtime)
        } else {
            vec![(kind.name().to_string(), scfg.runtime.clone())]
        };
        for (label, runtime) in variants {
            let vcfg = SpawnConfig {
                runtime,
                ..scfg.clone()
            };
            flush();
            match b.run(&vcfg) {
                Ok(r) => {
                    outln!("{}", report::spawn_report(kind, &vcfg, &r));
                    rows.push((label, kind, Outcome::Ran(r)));
                }
                Err(e) => {
                    let m = failed(kind, &e, &mut failure);
                    rows.push((label, kind, Outcome::Failed(m)));
                }
            }
            if rows.len() > 1 || cfg.backends.len() > 1 {
                outln!();
            }
        }
    }
    if rows.len() > 1 {
        out!("{}", report::spawn_table(&rows));
    }
    write_json(
        cfg,
        rows.iter()
            .map(|(label, k, o)| json::spawn(scfg.spawners, k.name(), label, o)),
    )?;
    if let Some(path) = &cfg.plot {
        let groups: Vec<String> = rows.iter().map(|(l, _, _)| l.clone()).collect();
        let values = rows
            .iter()
            .map(|(_, _, o)| match o {
                Outcome::Ran(r) => Some(r.rate()),
                _ => None,
            })
            .collect();
        let title = format!("spawn and exit, {} spawner(s)", scfg.spawners);
        write_plot(
            path,
            &title,
            "spawns/s",
            &groups,
            vec![plot::Series {
                name: "spawns/s".into(),
                values,
            }],
            false,
        )?;
    }
    finish(failure, "spawn test")
}

/// Writes `--json` if it was asked for.
fn write_json(
    cfg: &Config,
    rows: impl IntoIterator<Item = serde_json::Value>,
) -> Result<(), BenchError> {
    let Some(path) = &cfg.json else {
        return Ok(());
    };
    let rows: Vec<_> = rows.into_iter().collect();
    json::write_lines(path, &rows)
        .map_err(|e| BenchError::io(format!("writing --json {}", path.display()), e))?;
    outln!("JSON written to {}", path.display());
    Ok(())
}

fn write_plot(
    path: &std::path::Path,
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: Vec<plot::Series>,
    log_y: bool,
) -> Result<(), BenchError> {
    plot::grouped_bars(path, title, y_desc, groups, &series, log_y)
        .map_err(|m| BenchError::io("writing the plot", std::io::Error::other(m)))?;
    outln!("plot written to {}", path.display());
    Ok(())
}
