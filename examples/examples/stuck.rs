//! Green threads that hold their worker: plain blocking calls and loops
//! without preemption points, with the hand-off of stuck workers on and off
//! (`Builder::handoff`), and blocking calls moved to `spawn_blocking`.
//!
//! ```text
//! cargo run --release -p examples --example stuck
//! cargo run --release -p examples --example stuck -- --rounds 5 --block-ms 300 --spin-ms 400
//! ```
//!
//! Three scenarios, each run `--rounds` times with hand-off on and off,
//! interleaved; the medians are printed:
//!
//! * `blocking` (2 workers): 4 green threads call `std::thread::sleep(block)`;
//!   then a green thread sleeps 2 ms with `eevdf_rt::sleep`. Printed: how
//!   late it wakes, counted from its spawn.
//! * `spinning` (2 workers): 2 green threads spin for `spin` without a
//!   preemption point; then a task is spawned. Printed: how long it waits
//!   to start.
//! * `spawn_blocking` (1 worker): 8 calls of `std::thread::sleep(block · 2/3)`
//!   through `task::spawn_blocking`; then the 2 ms sleeper. Printed: how
//!   late it wakes.
//!
//! Each line reads `scenario=… handoff=on|off median_ms=… rounds_ms=[…]
//! handoffs=…`.

use bench_common::outln;
use clap::Parser;
use examples::median;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Green threads stuck in blocking calls and loops, with hand-off on and off")]
struct Args {
    /// Rounds per scenario and setting (interleaved).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// How long each blocking call sleeps (ms).
    #[arg(long, default_value_t = 300)]
    block_ms: u64,
    /// How long each spinner spins (ms).
    #[arg(long, default_value_t = 400)]
    spin_ms: u64,
}

fn main() -> ExitCode {
    let a: Args = examples::cli::parse();
    if let Err(e) = examples::cli::check_range("--rounds", a.rounds, 1..=1000)
        .and_then(|_| examples::cli::check_range("--block-ms", a.block_ms, 1..=60_000))
        .and_then(|_| examples::cli::check_range("--spin-ms", a.spin_ms, 1..=60_000))
    {
        return examples::cli::usage_error("stuck", e);
    }
    type Scenario = fn(&eevdf_rt::Runtime, &Args) -> Duration;
    let scenarios: [(&str, usize, Scenario); 3] = [
        ("blocking", 2, blocking),
        ("spinning", 2, spinning),
        ("spawn_blocking", 1, spawn_blocking),
    ];
    for (name, workers, run) in scenarios {
        let mut results: [(Vec<f64>, u64); 2] = [(Vec::new(), 0), (Vec::new(), 0)];
        for _ in 0..a.rounds {
            for (on, r) in [true, false].into_iter().zip(results.iter_mut()) {
                let handoff = on.then_some(Duration::from_millis(2));
                let rt = match eevdf_rt::Builder::new()
                    .workers(workers)
                    .handoff(handoff)
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        eprintln!("runtime: {e}");
                        return ExitCode::from(2);
                    }
                };
                r.0.push(run(&rt, &a).as_secs_f64() * 1e3);
                r.1 += rt.stats().total().handoffs;
                rt.shutdown();
            }
        }
        for (on, (ms, handoffs)) in ["on", "off"].into_iter().zip(results) {
            let rounds: Vec<String> = ms.iter().map(|m| format!("{m:.2}")).collect();
            outln!(
                "scenario={name} handoff={on} median_ms={:.2} rounds_ms=[{}] handoffs={handoffs}",
                median(ms.iter().copied()),
                rounds.join(",")
            );
        }
    }
    ExitCode::SUCCESS
}

/// How late a green thread that sleeps 2 ms wakes, counted from its spawn.
fn sleeper_lateness(rt: &eevdf_rt::Runtime) -> Duration {
    let spawned = Instant::now();
    rt.spawn(move || {
        eevdf_rt::sleep(Duration::from_millis(2));
        spawned.elapsed().saturating_sub(Duration::from_millis(2))
    })
    .join()
    .expect("the sleeper does not panic")
}

fn blocking(rt: &eevdf_rt::Runtime, a: &Args) -> Duration {
    let block = Duration::from_millis(a.block_ms);
    let started = Arc::new(AtomicUsize::new(0));
    let blockers: Vec<_> = (0..4)
        .map(|_| {
            let started = started.clone();
            rt.spawn(move || {
                started.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(block)
            })
        })
        .collect();
    // Both workers are inside a blocking call before the sleeper comes.
    while started.load(Ordering::SeqCst) < 2 {
        std::thread::yield_now();
    }
    let late = sleeper_lateness(rt);
    for b in blockers {
        b.join().expect("no panic");
    }
    late
}

fn spinning(rt: &eevdf_rt::Runtime, a: &Args) -> Duration {
    let spin = Duration::from_millis(a.spin_ms);
    let started = Arc::new(AtomicUsize::new(0));
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let started = started.clone();
            rt.spawn(move || {
                started.fetch_add(1, Ordering::SeqCst);
                let t = Instant::now();
                while t.elapsed() < spin {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    while started.load(Ordering::SeqCst) < 2 {
        std::thread::yield_now();
    }
    let spawned = Instant::now();
    let wait = rt
        .spawn(move || spawned.elapsed())
        .join()
        .expect("no panic");
    for s in spinners {
        s.join().expect("no panic");
    }
    wait
}

fn spawn_blocking(rt: &eevdf_rt::Runtime, a: &Args) -> Duration {
    let block = Duration::from_millis(a.block_ms * 2 / 3);
    rt.block_on(move || {
        let calls: Vec<_> = (0..8)
            .map(|_| eevdf_rt::task::spawn_blocking(move || std::thread::sleep(block)))
            .collect();
        let spawned = Instant::now();
        eevdf_rt::sleep(Duration::from_millis(2));
        let late = spawned.elapsed().saturating_sub(Duration::from_millis(2));
        for c in calls {
            c.join().expect("no panic");
        }
        late
    })
}
