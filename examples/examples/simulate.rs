//! Simulates the EEVDF policy deterministically with the public
//! `eevdf_rt::sched` run queue — no threads, no clock — and prints each
//! task's CPU share, the wakeup latency of periodic tasks, and a text
//! timeline of which task ran.
//!
//! ```text
//! cargo run --release -p examples --example simulate
//! cargo run --release -p examples --example simulate -- --task 0 --task 0 --task 5
//! cargo run --release -p examples --example simulate -- --task 0 --task 0 --task 0:100:1000:50 --features NO_RUN_TO_PARITY
//! ```
//!
//! A task is `NICE[:SLICE_US[:PERIOD_US:BURST_US]]`: always runnable (a
//! hog), or, with a period, waking every PERIOD_US to run for BURST_US and
//! sleeping again (a latency-sensitive handler). NICE is -20 ..= 19;
//! SLICE_US is 0 (the base slice) or 100 ..= 100000; a periodic task needs
//! 10 <= BURST_US < PERIOD_US <= 10000000 (time advances in 10 µs steps).
//! A hog is written without a period (`0` or `0:100`), never with a zero
//! one. `--ms` simulates at most ten minutes (600000 ms, seconds of run
//! time); `--tick-us` is 10 ..= 1000000.

use bench_common::outln;
use clap::Parser;
use eevdf_rt::sched::{
    DequeueFlags, EnqueueFlags, Entity, Params, Pick, Resched, RunQueue, Slot, WakeFlags,
};
use examples::cli;
use std::collections::BTreeMap;
use std::process::ExitCode;

/// The longest simulation, ms (ten minutes of simulated time: seconds
/// of run time even with 26 busy tasks).
const MAX_MS: u64 = 600_000;

/// The simulation's time step, ns.
const STEP_NS: u64 = 10_000;

#[derive(Parser, Debug)]
#[command(about = "Deterministic EEVDF simulation with eevdf_rt::sched")]
struct Args {
    /// A task: NICE[:SLICE_US[:PERIOD_US:BURST_US]] (repeatable, 1 ..= 26 tasks;
    /// NICE -20 ..= 19, SLICE_US 0 (base) or 100 ..= 100000,
    /// 10 <= BURST_US < PERIOD_US <= 10000000; default: 0, 0, 5 and a
    /// 100 µs-slice handler)
    #[arg(long = "task", allow_hyphen_values = true)]
    tasks: Vec<String>,
    /// Simulated time in milliseconds (1 ..= 600000, ten minutes)
    #[arg(long, default_value_t = 1000)]
    ms: u64,
    /// Tick period in microseconds (10 ..= 1000000)
    #[arg(long, default_value_t = 1000)]
    tick_us: u64,
    /// Scheduler features in sched_features syntax
    #[arg(long, default_value = "")]
    features: String,
    /// Milliseconds of timeline to print (0 ..= 600000; at most --ms of it)
    #[arg(long, default_value_t = 20)]
    timeline_ms: u64,
}

#[derive(Debug)]
struct Spec {
    nice: i32,
    slice_us: u64,
    period_us: u64,
    burst_us: u64,
}

/// Parses and range-checks one `--task`.
fn parse_task(s: &str) -> Result<Spec, String> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() == 3 || parts.len() > 4 {
        return Err(format!(
            "--task `{s}`: expected NICE[:SLICE_US[:PERIOD_US:BURST_US]]"
        ));
    }
    let field = |i: usize, name: &str, range: std::ops::RangeInclusive<i64>| {
        let Some(p) = parts.get(i) else {
            return Ok(0);
        };
        let v: i64 = p
            .trim()
            .parse()
            .map_err(|_| format!("--task `{s}`: {name} `{p}` is not an integer"))?;
        if !range.contains(&v) {
            return Err(format!(
                "--task `{s}`: {name} {v} is out of range ({} ..= {})",
                range.start(),
                range.end()
            ));
        }
        Ok(v)
    };
    let nice = field(0, "NICE", -20..=19)? as i32;
    let slice_us = field(1, "SLICE_US", 0..=100_000)? as u64;
    if slice_us != 0 && slice_us < 100 {
        return Err(format!(
            "--task `{s}`: SLICE_US {slice_us} is out of range (100 ..= 100000, or 0 for the base slice)"
        ));
    }
    let period_us = field(2, "PERIOD_US", 0..=10_000_000)? as u64;
    let burst_us = field(3, "BURST_US", 0..=10_000_000)? as u64;
    if parts.len() == 4 && !(10 <= burst_us && burst_us < period_us) {
        return Err(format!(
            "--task `{s}`: a periodic task needs 10 <= BURST_US < PERIOD_US <= 10000000 \
             (write a hog without a period: NICE or NICE:SLICE_US)"
        ));
    }
    Ok(Spec {
        nice,
        slice_us,
        period_us,
        burst_us,
    })
}

struct Task {
    name: char,
    spec: Spec,
    slot: Option<Slot>,
    /// The entity while it sleeps (off the queue).
    parked: Option<Entity>,
    delayed: bool,
    next_wake: u64,
    burst_left: u64,
    woke_at: Option<u64>,
    /// Wakeup latencies, ns: value → count (bounded however long the run).
    latencies: BTreeMap<u64, u64>,
    ran: u64,
}

fn main() -> ExitCode {
    let args: Args = cli::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => cli::usage_error("simulate", e),
    }
}

/// The `q`-quantile of a value → count map (the smallest value with at
/// least `q` of the counts at or below it).
fn quantile(m: &BTreeMap<u64, u64>, q: f64) -> Option<u64> {
    let n: u64 = m.values().sum();
    let want = ((n as f64 * q).floor() as u64).min(n.saturating_sub(1));
    let mut seen = 0;
    for (&v, &c) in m {
        seen += c;
        if seen > want {
            return Some(v);
        }
    }
    None
}

fn run(args: Args) -> Result<(), String> {
    let specs: Vec<Spec> = if args.tasks.is_empty() {
        ["0", "0", "5", "0:100:1000:50"]
            .iter()
            .map(|s| parse_task(s))
            .collect::<Result<_, _>>()?
    } else {
        args.tasks
            .iter()
            .map(|s| parse_task(s))
            .collect::<Result<_, _>>()?
    };
    if specs.is_empty() || specs.len() > 26 {
        return Err("give 1 to 26 tasks".into());
    }
    let features = cli::check_features("--features", &args.features)?;
    let ms = cli::check_range("--ms", args.ms, 1..=MAX_MS)?;
    let tick_us = cli::check_range("--tick-us", args.tick_us, 10..=1_000_000)?;
    let timeline_ms = cli::check_range("--timeline-ms", args.timeline_ms, 0..=MAX_MS)?.min(ms);
    // In range, none of these products overflows.
    let tick = tick_us * 1000;
    let params =
        Params::new(eevdf_rt::sched::base_slice_for(1), tick).map_err(|e| e.to_string())?;
    let mut rq: RunQueue<usize> = RunQueue::new(params, features);
    let mut tasks = Vec::new();
    for (i, spec) in specs.into_iter().enumerate() {
        let slice = (spec.slice_us > 0).then_some(spec.slice_us * 1000);
        let e = Entity::new(spec.nice)
            .and_then(|e| e.with_slice(slice))
            .map_err(|e| e.to_string())?;
        let slot = rq.enqueue(e, i, EnqueueFlags::INITIAL, 0);
        tasks.push(Task {
            name: (b'A' + i as u8) as char,
            burst_left: spec.burst_us * 1000,
            spec,
            slot: Some(slot),
            parked: None,
            delayed: false,
            next_wake: 0,
            woke_at: Some(0),
            latencies: BTreeMap::new(),
            ran: 0,
        });
    }

    let end = ms * 1_000_000;
    let step = STEP_NS;
    let mut now = 0;
    let mut next_tick = tick;
    let mut current: Option<usize> = None;
    let mut timeline = String::new();
    let timeline_end = timeline_ms * 1_000_000;
    let mut switches = 0u64;
    let mut need_pick = true;
    while now < end {
        // wake sleepers whose period came
        for (i, t) in tasks.iter_mut().enumerate() {
            if t.spec.period_us > 0 && t.slot.is_none() && t.parked.is_some() && now >= t.next_wake
            {
                let e = t.parked.take().expect("parked entity");
                let s = rq.enqueue(e, i, EnqueueFlags::WAKEUP, now);
                t.slot = Some(s);
                t.woke_at = Some(now);
                t.burst_left = t.spec.burst_us * 1000;
                if rq.wakeup_preempt(s, WakeFlags::NONE, now) {
                    need_pick = true;
                }
            } else if t.delayed && now >= t.next_wake {
                let s = t.slot.expect("delayed keeps its slot");
                rq.requeue_delayed(s, now);
                t.delayed = false;
                t.woke_at = Some(now);
                t.burst_left = t.spec.burst_us * 1000;
                if rq.curr() != Some(s) && rq.wakeup_preempt(s, WakeFlags::NONE, now) {
                    need_pick = true;
                }
            }
        }
        if need_pick || rq.resched() != Resched::None || current.is_none() {
            current = None;
            loop {
                match rq.pick_next(now) {
                    Pick::Run(s) => {
                        rq.set_curr(s, now);
                        rq.clear_resched();
                        let i = *rq.payload(s);
                        if let Some(w) = tasks[i].woke_at.take() {
                            *tasks[i].latencies.entry(now - w).or_default() += 1;
                        }
                        current = Some(i);
                        switches += 1;
                        break;
                    }
                    Pick::FinishedDelayed(e, i) => {
                        tasks[i].slot = None;
                        tasks[i].delayed = false;
                        tasks[i].parked = Some(e);
                    }
                    Pick::Empty => break,
                }
            }
            need_pick = false;
        }
        // run one step
        if now < timeline_end && now % 500_000 == 0 {
            timeline.push(current.map_or('.', |i| tasks[i].name));
        }
        now += step;
        if let Some(i) = current {
            tasks[i].ran += step;
            if tasks[i].spec.period_us > 0 {
                tasks[i].burst_left = tasks[i].burst_left.saturating_sub(step);
                if tasks[i].burst_left == 0 {
                    // the burst is done: block until the next period
                    let s = tasks[i].slot.expect("running task is queued");
                    rq.charge_current(now);
                    let period = tasks[i].spec.period_us * 1000;
                    tasks[i].next_wake = (now / period + 1) * period;
                    match rq.dequeue(s, DequeueFlags::SLEEP, now) {
                        eevdf_rt::sched::Dequeue::Delayed => tasks[i].delayed = true,
                        eevdf_rt::sched::Dequeue::Removed(e, _) => {
                            tasks[i].slot = None;
                            tasks[i].parked = Some(e);
                        }
                    }
                    need_pick = true;
                    current = None;
                }
            }
        }
        if now >= next_tick {
            next_tick += tick;
            if rq.tick(now) {
                need_pick = true;
            }
        }
    }
    rq.check_invariants()
        .map_err(|e| format!("invariant violated: {e}"))?;

    let total: u64 = tasks.iter().map(|t| t.ran).sum();
    outln!(
        "EEVDF simulation: {} ms, tick {} µs, features {}",
        ms,
        tick_us,
        features.diff_from_default()
    );
    outln!(
        "{:<5} {:>5} {:>9} {:>14} {:>8} {:>12} {:>12}",
        "task",
        "nice",
        "slice",
        "kind",
        "share",
        "lat p50",
        "lat max"
    );
    let wsum: f64 = tasks
        .iter()
        .filter(|t| t.spec.period_us == 0)
        .map(|t| eevdf_rt::sched::weight::weight_of_nice(t.spec.nice).unwrap() as f64)
        .sum();
    for t in &tasks {
        let (p50, max) = match (quantile(&t.latencies, 0.5), t.latencies.keys().last()) {
            (Some(p50), Some(max)) => (format!("{} µs", p50 / 1000), format!("{} µs", max / 1000)),
            _ => ("-".to_string(), "-".to_string()),
        };
        let kind = if t.spec.period_us > 0 {
            format!("{}/{} µs", t.spec.burst_us, t.spec.period_us)
        } else {
            format!(
                "hog ({:.1} %)",
                100.0 * eevdf_rt::sched::weight::weight_of_nice(t.spec.nice).unwrap() as f64 / wsum
            )
        };
        outln!(
            "{:<5} {:>5} {:>9} {:>14} {:>7.1}% {:>12} {:>12}",
            t.name,
            t.spec.nice,
            if t.spec.slice_us > 0 {
                format!("{} µs", t.spec.slice_us)
            } else {
                "base".into()
            },
            kind,
            100.0 * t.ran as f64 / total as f64,
            if t.spec.period_us > 0 {
                p50
            } else {
                "-".into()
            },
            if t.spec.period_us > 0 {
                max
            } else {
                "-".into()
            },
        );
    }
    outln!("switches: {switches}; counters: {:?}", rq.counters());
    outln!(
        "timeline (one letter per 0.5 ms, first {} ms):",
        timeline_ms
    );
    for chunk in timeline.as_bytes().chunks(80) {
        outln!("  {}", String::from_utf8_lossy(chunk));
    }
    Ok(())
}
