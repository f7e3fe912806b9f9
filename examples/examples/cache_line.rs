//! The host's price of moving a cache line between two CPUs: two threads,
//! pinned to two CPUs, pass a counter back and forth through one atomic
//! word, and the time per round trip is printed.
//!
//! ```text
//! cargo run --release -p examples --example cache_line
//! cargo run --release -p examples --example cache_line -- --cpus 0,1 --samples 9
//! ```
//!
//! Why a runtime benchmark needs it: every cross-worker wakeup moves a few
//! cache lines between the two workers' CPUs (the wakelist head, the task's
//! state, its run-queue entity), so a wakeup-bound benchmark on two workers
//! runs at the speed of this round trip. On a VM the hypervisor decides
//! where the vCPUs run, and may move them while a guest runs. On the
//! 2-vCPU AMD VM of 2026-12-06 this probe read about 78 ns at some times
//! and 430–450 ns at others, minutes apart (perhaps two vCPUs on one core
//! complex and on two; the guest's cache topology,
//! `/sys/devices/system/cpu/*/cache`, reports one shared L3 either way),
//! and both runtimes' two-worker `schbench -s 0` jumped with it (green
//! between 1.8 and 3.8 M requests/s, tokio between 1.7 and 5.3 M;
//! `results/2026-12-06/host-placement`). `scripts/measure.sh` records
//! this probe before each two-worker schbench and hackbench run, so that
//! a result can be read with the placement it probably got (a probe just
//! before a run does not see a move during it).
//!
//! The probe itself: the thread on the first CPU writes a ping value and
//! spins until it reads the echo value, which the thread on the second CPU
//! writes when it has seen the ping. Each round trip is two line transfers
//! (there and back) plus two spin-loop exits. The clock starts once the
//! echo thread runs on its CPU; a sample that takes over 10 s (two vCPUs
//! time-shared on one physical CPU) ends the program with an error.

use bench_common::outln;
use clap::Parser;
use examples::os;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Cache-line round trip between two CPUs (the cost a cross-worker wakeup pays)")]
struct Args {
    /// The two CPUs, `A,B` [default: the first two CPUs this process may use].
    #[arg(long, value_parser = parse_pair)]
    cpus: Option<(usize, usize)>,
    /// Round trips per sample (1 ..= 100,000,000).
    #[arg(long, default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    round_trips: u64,
    /// Samples (1 ..= 1,000); the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    samples: u32,
    /// Pause between samples, ms (0 ..= 10,000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pause_ms: u64,
}

fn parse_pair(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("`{s}`: expected two CPU numbers, `A,B`"))?;
    let cpu = |x: &str| {
        x.trim()
            .parse::<usize>()
            .map_err(|_| format!("`{x}` is not a CPU number"))
    };
    let (a, b) = (cpu(a)?, cpu(b)?);
    if a == b {
        return Err(format!("the two CPUs must differ (got {a} twice)"));
    }
    Ok((a, b))
}

/// The word the two threads pass back and forth, alone on its cache line
/// and the next (no false sharing, no adjacent-line prefetch).
#[repr(align(128))]
struct Line(AtomicU64);

/// The echo has pinned itself and is waiting for the first ping.
const READY: u64 = 1;
/// Tells the echo to give up (odd, and above any ping: `n` ≤ 10^8).
const STOP: u64 = u64::MAX;
/// How long one sample may take. Two vCPUs that the host runs on one
/// physical CPU pass the line only when it switches between them, so a
/// sample could otherwise take minutes.
const SAMPLE_LIMIT: Duration = Duration::from_secs(10);

/// One sample: `n` round trips between `a` (this thread) and `b`; the time
/// per round trip in ns. Ping `i` is the value `2i + 2`, its echo `2i + 3`.
fn sample(a: usize, b: usize, n: u64) -> Result<f64, String> {
    os::pin_current_thread(a).map_err(|e| e.to_string())?;
    let line = Line(AtomicU64::new(0));
    let word = &line.0;
    std::thread::scope(|s| {
        let echo = std::thread::Builder::new()
            .name("cache-line-echo".into())
            .spawn_scoped(s, || -> Result<(), String> {
                os::pin_current_thread(b).map_err(|e| e.to_string())?;
                word.store(READY, Ordering::Release);
                for i in 0..n {
                    loop {
                        match word.load(Ordering::Acquire) {
                            v if v == 2 * i + 2 => break,
                            STOP => return Ok(()),
                            _ => std::hint::spin_loop(),
                        }
                    }
                    word.store(2 * i + 3, Ordering::Release);
                }
                Ok(())
            })
            .map_err(|e| format!("spawning the echo thread: {e}"))?;
        // Waits until `word` holds `want`. Gives up when the echo is gone
        // (it could not pin itself) or the sample has run too long; looks
        // at both only every 1,024 spins, to stay off the measured path.
        let began = Instant::now();
        let wait = |want: u64| -> Result<(), String> {
            let mut spins = 0u32;
            while word.load(Ordering::Acquire) != want {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(1024) {
                    if echo.is_finished() {
                        return Err("the echo thread stopped early".into());
                    }
                    if began.elapsed() > SAMPLE_LIMIT {
                        return Err(format!(
                            "a sample took longer than {} s: do the two CPUs share one physical CPU?",
                            SAMPLE_LIMIT.as_secs()
                        ));
                    }
                }
                std::hint::spin_loop();
            }
            Ok(())
        };
        // The clock starts once the echo runs on its CPU.
        let mut outcome = wait(READY).map(|()| Instant::now());
        if let Ok(start) = outcome {
            for i in 0..n {
                word.store(2 * i + 2, Ordering::Release);
                if let Err(e) = wait(2 * i + 3) {
                    outcome = Err(e);
                    break;
                }
            }
            outcome = outcome.map(|_| start);
        }
        let result = outcome.map(|start| start.elapsed().as_secs_f64() * 1e9 / n as f64);
        if result.is_err() {
            word.store(STOP, Ordering::Release);
        }
        echo.join()
            .map_err(|_| "the echo thread panicked".to_string())??;
        result
    })
}

fn main() -> ExitCode {
    let args: Args = examples::cli::parse();
    let allowed = os::allowed_cpus();
    let (a, b) = match args.cpus {
        Some(pair) => pair,
        None if allowed.len() >= 2 => (allowed[0], allowed[1]),
        None => {
            return examples::cli::usage_error(
                "cache_line",
                format!(
                    "needs two CPUs, and this process may use {} ({allowed:?})",
                    allowed.len()
                ),
            )
        }
    };
    for cpu in [a, b] {
        if !allowed.contains(&cpu) {
            return examples::cli::usage_error(
                "cache_line",
                format!("--cpus: CPU {cpu} is not one this process may use ({allowed:?})"),
            );
        }
    }
    outln!(
        "cache-line round trip, CPU {a} <-> CPU {b}, {} round trips per sample",
        args.round_trips
    );
    let mut ns = Vec::with_capacity(args.samples as usize);
    for i in 1..=args.samples {
        if i > 1 {
            std::thread::sleep(Duration::from_millis(args.pause_ms));
        }
        match sample(a, b, args.round_trips) {
            Ok(v) => {
                outln!("sample {i}: {v:.1} ns");
                ns.push(v);
            }
            Err(e) => {
                eprintln!("cache_line: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let (min, max) = ns
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    outln!(
        "median: {:.1} ns (min {min:.1}, max {max:.1})",
        examples::median(ns.iter().copied())
    );
    ExitCode::SUCCESS
}
