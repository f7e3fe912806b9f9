//! 200,000 green threads that each sleep 50 ms and are then joined, on
//! eevdf-rt and on tokio (multi-thread), side by side: wall time and peak
//! RSS per backend.
//!
//! ```text
//! cargo run --release -p examples --example sleepers
//! cargo run --release -p examples --example sleepers -- --tasks 200000 --workers 2 --rounds 3
//! ```
//!
//! Peak RSS (`VmHWM`) is a property of a whole process, so every
//! measurement runs in a fresh child process (this binary re-executed with
//! `--child eevdf|tokio`); the parent interleaves the backends for
//! `--rounds` rounds and prints each round, the medians, and the median
//! of the rounds' ratios (each round's two runs paired). The child
//! prints one line, `wall_ms=… hwm_kib=…`. `--features` and `--stats`
//! apply to the eevdf-rt side only (the parent passes them to its eevdf
//! children and prints their counters after each round with `--stats`);
//! a spawn that fails (memory, mappings) ends the run with the spawn's
//! error, like `parked`.

use bench_common::outln;
use clap::Parser;
use examples::cli;
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "N tasks sleep, then are joined: eevdf-rt vs tokio, wall time and peak RSS")]
struct Args {
    /// Number of tasks (1 ..= 10,000,000).
    #[arg(long, default_value_t = 200_000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    tasks: u64,
    /// How long each task sleeps, in ms (0 ..= 60,000).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    sleep_ms: u64,
    /// Worker threads of each runtime (1 ..= 256).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=256))]
    workers: u16,
    /// Interleaved rounds, each backend once per round (1 ..= 100).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Run one measurement in this process: `eevdf` or `tokio` (used by the parent).
    #[arg(long)]
    child: Option<String>,
    /// eevdf-rt scheduler features (`sched_features` syntax, e.g. `NO_SPAWN_SPILL`;
    /// "" or `default`: the defaults); not with `--child tokio`.
    #[arg(long, default_value = "default")]
    features: String,
    /// Also print eevdf-rt's per-worker counters to stderr (after each round,
    /// or from `--child eevdf`); not with `--child tokio`.
    #[arg(long)]
    stats: bool,
}

fn main() {
    let (args, matches) = cli::parse_with_matches::<Args>();
    if let Err(e) = check(&args, &matches) {
        eprintln!("sleepers: {e}");
        std::process::exit(2);
    }
    match args.child.as_deref() {
        Some("eevdf") => child(run_eevdf(&args)),
        Some(_) => child(run_tokio(&args)),
        None => parent(&args),
    }
}

/// Checks the options before anything runs (the parent's, so that a bad
/// one is reported once, before the banner).
fn check(a: &Args, m: &clap::ArgMatches) -> Result<(), String> {
    cli::check_features("--features", &a.features)?;
    match a.child.as_deref() {
        None | Some("eevdf") => Ok(()),
        Some("tokio") => match cli::first_given(m, &["features", "stats"]) {
            Some(o) => Err(format!(
                "{o} applies to the eevdf-rt backend, not to --child tokio"
            )),
            None => Ok(()),
        },
        Some(other) => Err(format!(
            "--child: unknown backend {other:?} (eevdf | tokio)"
        )),
    }
}

fn child(wall: Duration) {
    outln!(
        "wall_ms={:.1} hwm_kib={}",
        wall.as_secs_f64() * 1e3,
        examples::os::proc_status_kib("VmHWM").unwrap_or(0)
    );
}

fn run_eevdf(a: &Args) -> Duration {
    let rt = match eevdf_rt::Builder::new()
        .workers(a.workers.into())
        .features(&a.features)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sleepers: runtime: {e}");
            std::process::exit(1);
        }
    };
    let (n, d) = (a.tasks, Duration::from_millis(a.sleep_ms));
    let start = Instant::now();
    // The fallible spawn: running out of memory or mappings is reported
    // as the spawn's error (exit 1), as in `parked`, not a panic.
    let r = rt.block_on(move || {
        let mut hs = Vec::with_capacity(n as usize);
        for i in 0..n {
            match eevdf_rt::task::Builder::new().spawn(move || eevdf_rt::sleep(d)) {
                Ok(h) => hs.push(h),
                Err(e) => return Err(format!("spawn #{i} failed: {e}")),
            }
        }
        for h in hs {
            h.join().map_err(|_| "a sleeper panicked".to_string())?;
        }
        Ok(())
    });
    let wall = start.elapsed();
    if let Err(e) = r {
        eprintln!("sleepers: {e}");
        std::process::exit(1);
    }
    if a.stats {
        for (i, w) in rt.stats().workers.iter().enumerate() {
            eprintln!("worker {i}: {w:?}");
        }
    }
    wall
}

fn run_tokio(a: &Args) -> Duration {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(a.workers.into())
        .enable_time()
        .build()
        .expect("tokio runtime");
    let (n, d) = (a.tasks, Duration::from_millis(a.sleep_ms));
    let start = Instant::now();
    rt.block_on(async move {
        let hs: Vec<_> = (0..n)
            .map(|_| tokio::spawn(async move { tokio::time::sleep(d).await }))
            .collect();
        for h in hs {
            h.await.expect("sleeper");
        }
    });
    start.elapsed()
}

fn parent(a: &Args) {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("sleepers: own path: {e}");
            std::process::exit(1);
        }
    };
    let mut res: [Vec<(f64, u64)>; 2] = [Vec::new(), Vec::new()];
    outln!(
        "{} tasks sleep {} ms then are joined, {} workers, {} rounds",
        a.tasks,
        a.sleep_ms,
        a.workers,
        a.rounds
    );
    for round in 1..=a.rounds {
        for (i, b) in ["eevdf", "tokio"].iter().enumerate() {
            let mut cmd = Command::new(&exe);
            cmd.args(["--child", b])
                .args(["--tasks", &a.tasks.to_string()])
                .args(["--sleep-ms", &a.sleep_ms.to_string()])
                .args(["--workers", &a.workers.to_string()]);
            if *b == "eevdf" {
                cmd.args(["--features", &a.features]);
                if a.stats {
                    cmd.arg("--stats");
                }
            }
            let out = match cmd.output() {
                Ok(out) => out,
                Err(e) => {
                    eprintln!("sleepers: running the {b} child: {e}");
                    std::process::exit(1);
                }
            };
            let text = String::from_utf8_lossy(&out.stdout);
            let (Some(w), Some(h)) = (field(&text, "wall_ms="), field(&text, "hwm_kib=")) else {
                eprintln!(
                    "sleepers: {b} child failed ({}):\n{text}{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
                // bad input (exit 2 from the child) stays exit 2
                std::process::exit(if out.status.code() == Some(2) { 2 } else { 1 });
            };
            outln!(
                "round {round} {b:>5}: wall {w:8.1} ms  peak RSS {:8.1} MiB",
                h / 1024.0
            );
            if a.stats && *b == "eevdf" {
                eprint!("{}", String::from_utf8_lossy(&out.stderr));
            }
            res[i].push((w, h as u64));
        }
    }
    // One measurement's figure: wall time (ms) or peak RSS (MiB).
    type Figure = fn(&(f64, u64)) -> f64;
    let (wall, rss): (Figure, Figure) = (|x| x.0, |x| x.1 as f64 / 1024.0);
    let column = |i: usize, f: Figure| examples::median(res[i].iter().map(f));
    // The ratios pair each round's two runs (this VM's speed drifts
    // between rounds), then take the median over the rounds.
    let ratio = |f: Figure| examples::median(res[0].iter().zip(&res[1]).map(|(e, t)| f(e) / f(t)));
    outln!(
        "median eevdf: {:.1} ms, {:.1} MiB | tokio: {:.1} ms, {:.1} MiB | ratio wall {:.2}x, RSS {:.2}x (median of the rounds' ratios)",
        column(0, wall),
        column(0, rss),
        column(1, wall),
        column(1, rss),
        ratio(wall),
        ratio(rss),
    );
}

fn field(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    rest.split_whitespace().next()?.parse().ok()
}
