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
//! A task is `NICE[:SLICE_US[:PERIOD_US:BURST_US]]`: always runnable, or,
//! with a period, waking every PERIOD_US to run for BURST_US and sleeping
//! again (a latency-sensitive handler). SLICE_US 0 means the base slice.

use clap::Parser;
use eevdf_rt::sched::{
    DequeueFlags, EnqueueFlags, Entity, Features, Params, Pick, Resched, RunQueue, Slot, WakeFlags,
};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(about = "Deterministic EEVDF simulation with eevdf_rt::sched")]
struct Args {
    /// A task: NICE[:SLICE_US[:PERIOD_US:BURST_US]] (repeatable; default: 0, 0, 5 and a 100 µs-slice handler)
    #[arg(long = "task")]
    tasks: Vec<String>,
    /// Simulated time in milliseconds
    #[arg(long, default_value_t = 1000)]
    ms: u64,
    /// Tick period in microseconds
    #[arg(long, default_value_t = 1000)]
    tick_us: u64,
    /// Scheduler features in sched_features syntax
    #[arg(long, default_value = "")]
    features: String,
    /// Milliseconds of timeline to print
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

fn parse_task(s: &str) -> Result<Spec, String> {
    let parts: Vec<&str> = s.split(':').collect();
    let num = |i: usize| -> Result<i64, String> {
        parts
            .get(i)
            .map(|p| p.parse::<i64>().map_err(|e| format!("task `{s}`: {e}")))
            .unwrap_or(Ok(0))
    };
    if parts.len() == 3 || parts.len() > 4 {
        return Err(format!(
            "task `{s}`: expected NICE[:SLICE_US[:PERIOD_US:BURST_US]]"
        ));
    }
    let spec = Spec {
        nice: num(0)? as i32,
        slice_us: num(1)?.max(0) as u64,
        period_us: num(2)?.max(0) as u64,
        burst_us: num(3)?.max(0) as u64,
    };
    if spec.period_us > 0 && (spec.burst_us == 0 || spec.burst_us >= spec.period_us) {
        return Err(format!("task `{s}`: need 0 < BURST_US < PERIOD_US"));
    }
    Ok(spec)
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
    latencies: Vec<u64>,
    ran: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("simulate: {e}");
            ExitCode::from(2)
        }
    }
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
    let features = Features::parse(&args.features).map_err(|e| e.to_string())?;
    let tick = args.tick_us.max(1) * 1000;
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
            latencies: Vec::new(),
            ran: 0,
        });
    }

    let end = args.ms * 1_000_000;
    let step = 10_000; // 10 µs resolution
    let mut now = 0;
    let mut next_tick = tick;
    let mut current: Option<usize> = None;
    let mut timeline = String::new();
    let timeline_end = args.timeline_ms * 1_000_000;
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
                            tasks[i].latencies.push(now - w);
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
    println!(
        "EEVDF simulation: {} ms, tick {} µs, features {}",
        args.ms,
        args.tick_us,
        features.diff_from_default()
    );
    println!(
        "{:<5} {:>5} {:>9} {:>14} {:>8} {:>12} {:>12}",
        "task", "nice", "slice", "kind", "share", "lat p50", "lat max"
    );
    let wsum: f64 = tasks
        .iter()
        .filter(|t| t.spec.period_us == 0)
        .map(|t| eevdf_rt::sched::weight::weight_of_nice(t.spec.nice).unwrap() as f64)
        .sum();
    for t in &tasks {
        let mut l = t.latencies.clone();
        l.sort_unstable();
        let (p50, max) = if l.is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            (
                format!("{} µs", l[l.len() / 2] / 1000),
                format!("{} µs", l[l.len() - 1] / 1000),
            )
        };
        let kind = if t.spec.period_us > 0 {
            format!("{}/{} µs", t.spec.burst_us, t.spec.period_us)
        } else {
            format!(
                "hog ({:.1} %)",
                100.0 * eevdf_rt::sched::weight::weight_of_nice(t.spec.nice).unwrap() as f64 / wsum
            )
        };
        println!(
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
    println!("switches: {switches}; counters: {:?}", rq.counters());
    println!(
        "timeline (one letter per 0.5 ms, first {} ms):",
        args.timeline_ms
    );
    for chunk in timeline.as_bytes().chunks(80) {
        println!("  {}", String::from_utf8_lossy(chunk));
    }
    Ok(())
}
