//! A/B test of scheduler feature switches: one mixed workload run under
//! several feature sets, with a table of throughput, latency percentiles
//! and the runtime's counters that explain the differences.
//!
//! ```text
//! cargo run --release -p examples --example feature_ab
//! cargo run --release -p examples --example feature_ab -- --sets "default;NO_DELAY_DEQUEUE;NO_TTWU_QUEUE_DELAYED" --rounds 3
//! cargo run --release -p examples --example feature_ab -- --hogs 0 --sleepers 0 --pairs 8
//! ```
//!
//! The workload (all green threads, nice 0, base slice):
//!
//! * **ping-pong pairs** (`--pairs`): two green threads pinned to
//!   different workers (the same one with `--workers 1`) hand a token back and forth through two futex words
//!   (schbench's post/wait protocol on `eevdf_rt::sync::Futex`). Every
//!   hand-off is a cross-worker wakeup — through the target's wakelist
//!   (TTWU_QUEUE) or inline under its run-queue lock — and its latency is
//!   the time from the post to the wakee running;
//! * **sleepers** (`--sleepers`): cyclictest-style tasks that sleep
//!   `--sleep-us`, then burn 10 µs; their latency is how late they wake;
//! * **CPU hogs** (`--hogs`), all pinned to worker 0: 50 µs work units
//!   with `preempt_point()` between them. Worker 0 is always busy, so
//!   wakeups there must preempt (or wait for the end of slice protection,
//!   RUN_TO_PARITY), and pair tasks on it compete with the hogs and often
//!   block while ineligible (delayed dequeue); the other workers run only
//!   pairs and sleepers and keep going idle, so wakes to them take the
//!   wakelist. Both remote-wake paths are exercised.
//!
//! What the default sets show (the counters, more than the throughput,
//! which moves by ±10% from run to run on a shared machine):
//! `NO_DELAY_DEQUEUE` — no delayed dequeues, hence no wakeups of delayed
//! tasks (`delayed_wakeups` → 0), which by default (TTWU_QUEUE_DELAYED) go
//! through the owner's wakelist; `NO_TTWU_QUEUE_DELAYED` — a remote waker
//! performs those wakes inline under the owner's run-queue lock, as the
//! kernel does (`wakeups_remote_inline` up by about the `delayed_wakeups`
//! rate); `NO_TTWU_QUEUE` — every remote wake is inline
//! (`wakeups_remote_queued` → 0); `NO_RUN_TO_PARITY` — the hogs are
//! preempted more often (`preemptions` up). The `workers' OS wait` row
//! shows how much the kernel delayed the workers (the runtime has no other
//! thread: busy workers fire the sleepers' timers themselves).
//!
//! Each set runs on a fresh runtime (so counters start at zero and no
//! delayed state leaks from one set into the next); with `--rounds N` the
//! sets are interleaved N times, to spread machine noise evenly, and each
//! column sums its rounds. Two sets that come to the same switches
//! (`"default;default"`) are refused. `--trace FILE` traces each set's
//! first round into its own file (`FILE-1.json`, `FILE-2.json`, … with
//! several sets); the header lists which file holds which set.

use bench_common::{out, outln};
use clap::Parser;
use eevdf_rt::sched::Features;
use eevdf_rt::sync::Futex;
use eevdf_rt::WorkerStats;
use examples::hist::{self, fmt_us};
use examples::work::{burn, Calibration, Counters};
use examples::{cli, os};
use hdrhistogram::Histogram;
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Run one workload under several scheduler feature sets and compare")]
struct Args {
    /// Feature sets, ';'-separated, each in sched_features syntax ("default" = the
    /// defaults); no two may come to the same switches
    #[arg(
        long,
        default_value = "default;NO_DELAY_DEQUEUE;NO_RUN_TO_PARITY;NO_TTWU_QUEUE;NO_TTWU_QUEUE_DELAYED"
    )]
    sets: String,
    /// Measured seconds per set and round (0.01 ..= 3600)
    #[arg(long, default_value = "0.5", value_parser = cli::parse_secs)]
    duration: Duration,
    /// Warm-up seconds per set and round (0 ..= 3600, 0 = none)
    #[arg(long, default_value = "0.1", value_parser = cli::parse_warmup_secs)]
    warmup: Duration,
    /// Times to run every set (interleaved)
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// Worker threads [default: the CPUs available, at least 2]
    #[arg(long)]
    workers: Option<usize>,
    /// Ping-pong pairs, each across two workers (on one with --workers 1) [default: 2 per worker]
    #[arg(long)]
    pairs: Option<usize>,
    /// Periodic sleepers [default: 2 per worker]
    #[arg(long)]
    sleepers: Option<usize>,
    /// The sleepers' period, µs
    #[arg(long, default_value_t = 200)]
    sleep_us: u64,
    /// CPU hogs [default: 1 per worker]
    #[arg(long)]
    hogs: Option<usize>,
    /// With --trace, the measured phase of each set's first round is traced
    /// into FILE, with `-N` (the set's position, from 1) before the extension
    /// when there are several sets.
    #[command(flatten)]
    trace: cli::TraceOpt,
}

/// The `--trace` file of set `i` (0-based) of `n`.
fn trace_for(opt: &cli::TraceOpt, i: usize, n: usize) -> cli::TraceOpt {
    let mut o = opt.clone();
    if let (Some(p), true) = (&opt.trace, n > 1) {
        let stem = p.file_stem().unwrap_or_default().to_string_lossy();
        let name = match p.extension() {
            Some(ext) => format!("{stem}-{}.{}", i + 1, ext.to_string_lossy()),
            None => format!("{stem}-{}", i + 1),
        };
        o.trace = Some(p.with_file_name(name));
    }
    o
}

/// One feature set: its label and its spec.
#[derive(Clone, Debug)]
struct Set {
    label: String,
    spec: String,
}

/// Parses `--sets`: ';'-separated specs, each validated; two specs that
/// come to the same switches are refused (they would give two columns of
/// the same experiment).
fn parse_sets(s: &str) -> Result<Vec<Set>, String> {
    let mut seen: Vec<(Features, String)> = Vec::new();
    let sets: Vec<Set> = s
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let spec = if p.eq_ignore_ascii_case("default") {
                String::new()
            } else {
                p.to_string()
            };
            let f = Features::parse(&spec).map_err(|e| format!("--sets: `{p}`: {e}"))?;
            if let Some((_, first)) = seen.iter().find(|(g, _)| *g == f) {
                return Err(format!(
                    "--sets: `{first}` and `{p}` are the same feature set ({}); give each set once",
                    f.diff_from_default()
                ));
            }
            seen.push((f, p.to_string()));
            Ok(Set {
                label: p.to_string(),
                spec,
            })
        })
        .collect::<Result<_, _>>()?;
    if sets.is_empty() {
        return Err("--sets: give at least one feature set".into());
    }
    Ok(sets)
}

/// The workload, validated.
#[derive(Clone, Copy, Debug)]
struct Mix {
    workers: usize,
    pairs: usize,
    sleepers: usize,
    hogs: usize,
    sleep: Duration,
    warmup: Duration,
    duration: Duration,
    sleeper_iters: u64,
    hog_iters: u64,
}

/// The counters the table shows (`WorkerStats` field names).
const COUNTERS: [&str; 13] = [
    "context_switches",
    "wakeups_local",
    "wakeups_remote_queued",
    "wakeups_remote_inline",
    "kicks",
    "parks",
    "steals",
    "delayed_dequeues",
    "delayed_wakeups",
    "preemptions",
    "tick_preemptions",
    "wakeup_preemptions",
    "timers_fired",
];

/// A counter by its field name.
fn counter(s: &WorkerStats, name: &str) -> u64 {
    s.fields()
        .into_iter()
        .find_map(|(n, v)| (n == name).then_some(v))
        .unwrap_or(0)
}

/// Name prefix of the runtime's threads: workers are `fab-wN` (for their
/// kernel run-queue wait).
const THREADS: &str = "fab";

/// Phases of a run, read by every task.
const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// What one run (one set, one round) measured.
#[derive(Clone)]
struct Measured {
    window: Duration,
    round_trips: u64,
    hog_units: u64,
    wake: Histogram<u64>,
    sleep_late: Histogram<u64>,
    stats: WorkerStats,
    /// Kernel run-queue wait of the worker threads in the window.
    os_wait: Option<Duration>,
    workers: usize,
}

impl Measured {
    fn add(&mut self, o: &Measured) {
        self.window += o.window;
        self.round_trips += o.round_trips;
        self.hog_units += o.hog_units;
        self.wake.add(&o.wake).expect("same bounds");
        self.sleep_late.add(&o.sleep_late).expect("same bounds");
        self.stats.add(&o.stats);
        self.os_wait = self.os_wait.zip(o.os_wait).map(|(a, b)| a + b);
    }
}

/// schbench's one-token semaphore on a futex word: post makes it 1 and
/// wakes the waiter if it was 0; wait takes the token, sleeping while 0.
fn post(word: &AtomicU32) {
    if word
        .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        Futex::wake(word, 1);
    }
}

fn wait(word: &AtomicU32) {
    while word
        .compare_exchange(1, 0, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        Futex::wait(word, 0);
    }
}

/// One ping-pong pair's shared state.
#[derive(Default)]
struct Pair {
    /// Token words: `[to ping, to pong]`.
    words: [AtomicU32; 2],
    /// When the last post was made, ns since the run's epoch.
    posted_at: AtomicU64,
}

fn run_set(set: &Set, mix: &Mix, trace: &cli::TraceOpt) -> Result<Measured, String> {
    let rt = eevdf_rt::Builder::new()
        .workers(mix.workers)
        .thread_name(THREADS)
        .features(&set.spec)
        .build()
        .map_err(|e| e.to_string())?;
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let epoch = Instant::now();
    let ns = move || epoch.elapsed().as_nanos() as u64;
    let trips = Arc::new(Counters::new(mix.pairs));
    let units = Arc::new(Counters::new(mix.hogs));
    let spawn_err = |e: std::io::Error| format!("spawn: {e}");

    // Ping-pong pairs: side 0 on worker i, side 1 on worker i+1.
    let pairs: Vec<Arc<Pair>> = (0..mix.pairs).map(|_| Arc::default()).collect();
    let mut pingers = Vec::new();
    for (i, pair) in pairs.iter().enumerate() {
        for side in 0..2 {
            let (pair, phase, trips) = (pair.clone(), phase.clone(), trips.clone());
            let worker = (i + side) % mix.workers;
            let h = eevdf_rt::task::Builder::new()
                .name(format!("pair-{i}-{side}"))
                .pin(worker)
                .spawn_on(&rt, move || {
                    let mut wake = hist::new();
                    let (mine, theirs) = (&pair.words[side], &pair.words[1 - side]);
                    if side == 0 {
                        pair.posted_at.store(ns(), Ordering::Relaxed);
                        post(theirs);
                    }
                    loop {
                        wait(mine);
                        let p = phase.load(Ordering::Relaxed);
                        if p == STOP {
                            return wake;
                        }
                        if p == MEASURE {
                            let posted = pair.posted_at.load(Ordering::Relaxed);
                            wake.saturating_record(ns().saturating_sub(posted).max(1));
                            if side == 0 {
                                trips.bump(i);
                            }
                        }
                        pair.posted_at.store(ns(), Ordering::Relaxed);
                        post(theirs);
                    }
                })
                .map_err(spawn_err)?;
            pingers.push(h);
        }
    }

    let mut sleepers = Vec::new();
    for i in 0..mix.sleepers {
        let (phase, m) = (phase.clone(), *mix);
        let h = eevdf_rt::task::Builder::new()
            .name(format!("sleeper-{i}"))
            .spawn_on(&rt, move || {
                let mut late = hist::new();
                let mut next = Instant::now();
                loop {
                    next += m.sleep;
                    eevdf_rt::sleep_until(next);
                    let now = Instant::now();
                    match phase.load(Ordering::Relaxed) {
                        STOP => return late,
                        MEASURE => hist::record(&mut late, now.saturating_duration_since(next)),
                        _ => {}
                    }
                    if now > next + m.sleep {
                        next = now; // fell a whole period behind: restart the schedule
                    }
                    black_box(burn(m.sleeper_iters));
                }
            })
            .map_err(spawn_err)?;
        sleepers.push(h);
    }

    let mut hogs = Vec::new();
    for i in 0..mix.hogs {
        let (phase, units, iters) = (phase.clone(), units.clone(), mix.hog_iters);
        let h = eevdf_rt::task::Builder::new()
            .name(format!("hog-{i}"))
            .pin(0)
            .spawn_on(&rt, move || {
                let mut sum = 0u64;
                while phase.load(Ordering::Relaxed) != STOP {
                    sum = sum.wrapping_add(burn(iters));
                    units.bump(i);
                    eevdf_rt::preempt_point();
                }
                sum
            })
            .map_err(spawn_err)?;
        hogs.push(h);
    }

    std::thread::sleep(mix.warmup);
    trace.start(&rt)?;
    let (t0, s0, r0, u0) = (Instant::now(), rt.stats(), trips.sum(), units.sum());
    let d0 = os::threads_run_delay(&format!("{THREADS}-w"));
    phase.store(MEASURE, Ordering::Relaxed);
    std::thread::sleep(mix.duration);
    phase.store(STOP, Ordering::Relaxed);
    let (t1, s1, r1, u1) = (Instant::now(), rt.stats(), trips.sum(), units.sum());
    let d1 = os::threads_run_delay(&format!("{THREADS}-w"));
    trace.finish(&rt)?;

    // Release every pair (each side sees STOP when it wakes).
    for p in &pairs {
        post(&p.words[0]);
        post(&p.words[1]);
    }
    let mut wakes = Vec::new();
    for h in pingers {
        wakes.push(h.join().map_err(|_| "a ping-pong task panicked")?);
    }
    let mut lates = Vec::new();
    for h in sleepers {
        lates.push(h.join().map_err(|_| "a sleeper panicked")?);
    }
    for h in hogs {
        black_box(h.join().map_err(|_| "a hog panicked")?);
    }
    Ok(Measured {
        window: t1 - t0,
        round_trips: r1 - r0,
        hog_units: u1 - u0,
        workers: mix.workers,
        wake: hist::merge(&wakes),
        sleep_late: hist::merge(&lates),
        stats: s1.since(&s0).total(),
        os_wait: d0.zip(d1).map(|(a, b)| b.saturating_sub(a)),
    })
}

fn main() -> ExitCode {
    let args: Args = cli::parse();
    let (sets, mix) = match check(&args) {
        Ok(v) => v,
        Err(e) => return cli::usage_error("feature_ab", e),
    };
    outln!(
        "feature_ab: {} workers; {} ping-pong pairs {}, {} sleepers ({} µs), {} CPU hogs (50 µs units); \
         {:.2} s per set × {} round(s), fresh runtime per set",
        mix.workers,
        mix.pairs,
        if mix.workers > 1 {
            "across workers"
        } else {
            "on the one worker"
        },
        mix.sleepers,
        mix.sleep.as_micros(),
        mix.hogs,
        mix.duration.as_secs_f64(),
        args.rounds,
    );
    if args.trace.trace.is_some() {
        outln!("--trace: the measured phase of round 1 of each set:");
        for (i, set) in sets.iter().enumerate() {
            if let Some(p) = trace_for(&args.trace, i, sets.len()).trace {
                outln!("  {:<24} -> {}", set.label, p.display());
            }
        }
    }
    let mut results: Vec<Option<Measured>> = vec![None; sets.len()];
    for round in 0..args.rounds {
        for (i, (set, acc)) in sets.iter().zip(results.iter_mut()).enumerate() {
            let trace = if round == 0 {
                trace_for(&args.trace, i, sets.len())
            } else {
                cli::TraceOpt::default()
            };
            match run_set(set, &mix, &trace) {
                Ok(r) => match acc {
                    Some(a) => a.add(&r),
                    None => *acc = Some(r),
                },
                Err(e) => {
                    eprintln!("feature_ab: set `{}`: {e}", set.label);
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let results: Vec<Measured> = results.into_iter().flatten().collect();
    print_table(&sets, &results);
    ExitCode::SUCCESS
}

fn check(a: &Args) -> Result<(Vec<Set>, Mix), String> {
    let sets = parse_sets(&a.sets)?;
    let workers = cli::check_range(
        "--workers",
        a.workers.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(2, |n| n.get().clamp(2, eevdf_rt::MAX_WORKERS))
        }),
        1..=eevdf_rt::MAX_WORKERS,
    )?;
    cli::check_range("--rounds", a.rounds, 1..=100)?;
    for i in 0..sets.len() {
        trace_for(&a.trace, i, sets.len()).check(workers)?;
    }
    let pairs = cli::check_range("--pairs", a.pairs.unwrap_or(2 * workers), 0..=10_000)?;
    let sleepers = cli::check_range("--sleepers", a.sleepers.unwrap_or(2 * workers), 0..=10_000)?;
    let hogs = cli::check_range("--hogs", a.hogs.unwrap_or(workers), 0..=10_000)?;
    let sleep_us = cli::check_range("--sleep-us", a.sleep_us, 20..=1_000_000)?;
    if pairs + sleepers + hogs == 0 {
        return Err("nothing to run: --pairs, --sleepers and --hogs are all 0".into());
    }
    let cal = Calibration::measure();
    Ok((
        sets,
        Mix {
            workers,
            pairs,
            sleepers,
            hogs,
            sleep: Duration::from_micros(sleep_us),
            warmup: a.warmup,
            duration: a.duration,
            sleeper_iters: cal.iters_for_us(10.0),
            hog_iters: cal.iters_for_us(50.0),
        },
    ))
}

fn print_table(sets: &[Set], results: &[Measured]) {
    let w = sets
        .iter()
        .map(|s| s.label.len() + 2)
        .max()
        .unwrap_or(0)
        .max(12);
    let label_w = 24;
    out!("\n{:<label_w$}", "");
    for s in sets {
        out!("{:>w$}", s.label);
    }
    outln!();
    let row = |label: &str, f: &dyn Fn(&Measured) -> String| {
        out!("{label:<label_w$}");
        for r in results {
            out!("{:>w$}", f(r));
        }
        outln!();
    };
    let per_s = |v: u64, r: &Measured| format!("{:.0}", v as f64 / r.window.as_secs_f64());
    row("round trips/s", &|r| per_s(r.round_trips, r));
    row("hog units/s", &|r| per_s(r.hog_units, r));
    for (label, q) in [("wake latency p50", 0.5), ("wake latency p99", 0.99)] {
        row(label, &|r| fmt_us(hist::quantile_us(&r.wake, q)));
    }
    for (label, q) in [("sleeper late p50", 0.5), ("sleeper late p99", 0.99)] {
        row(label, &|r| fmt_us(hist::quantile_us(&r.sleep_late, q)));
    }
    row("workers' OS wait", &|r| match r.os_wait {
        Some(d) => format!(
            "{:.1}%",
            100.0 * d.as_secs_f64() / (r.window.as_secs_f64() * r.workers as f64)
        ),
        None => "-".into(),
    });
    outln!("counters per second:");
    for name in COUNTERS {
        row(&format!("  {name}"), &|r| per_s(counter(&r.stats, name), r));
    }
}
