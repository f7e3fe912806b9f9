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
//! where the vCPUs run, and may move them while a guest runs: two vCPUs on
//! one core complex pass a line in about 50 ns, on two complexes in about
//! 370 ns (measured on 2026-12-06, where `schbench -s 0` on two green
//! workers ran at 3.5 M requests/s in the first placement and 1.8 M in the
//! second, minutes apart, while tokio stayed at 1.7 M). The guest's cache
//! topology (`/sys/devices/system/cpu/*/cache`) does not show this.
//! `scripts/measure.sh` records this probe beside every schbench and
//! hackbench run, so that a result can be read with the placement it got.
//!
//! The probe itself: the thread on the first CPU writes an odd value and
//! spins until it reads the next even one, which the thread on the second
//! CPU writes when it has seen the odd one. Each round trip is two line
//! transfers (there and back) plus two spin-loop exits.

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

/// One sample: `n` round trips between `a` (this thread) and `b`; the time
/// per round trip.
fn sample(a: usize, b: usize, n: u64) -> Result<Duration, String> {
    os::pin_current_thread(a).map_err(|e| e.to_string())?;
    let word = AtomicU64::new(0);
    std::thread::scope(|s| {
        let echo = std::thread::Builder::new()
            .name("cache-line-echo".into())
            .spawn_scoped(s, || -> Result<(), String> {
                os::pin_current_thread(b).map_err(|e| e.to_string())?;
                for i in 0..n {
                    while word.load(Ordering::Acquire) != 2 * i + 1 {
                        std::hint::spin_loop();
                    }
                    word.store(2 * i + 2, Ordering::Release);
                }
                Ok(())
            })
            .map_err(|e| format!("spawning the echo thread: {e}"))?;
        // An echo that could not pin itself returns at once and never
        // answers: stop waiting when it is gone.
        let start = Instant::now();
        let mut done = 0;
        'trips: for i in 0..n {
            word.store(2 * i + 1, Ordering::Release);
            while word.load(Ordering::Acquire) != 2 * i + 2 {
                if echo.is_finished() {
                    break 'trips;
                }
                std::hint::spin_loop();
            }
            done += 1;
        }
        let elapsed = start.elapsed();
        echo.join()
            .map_err(|_| "the echo thread panicked".to_string())??;
        if done < n {
            return Err("the echo thread stopped early".into());
        }
        Ok(elapsed / n as u32)
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
            Ok(d) => {
                let v = d.as_nanos() as f64;
                outln!("sample {i}: {v:.0} ns");
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
        "median: {:.0} ns (min {min:.0}, max {max:.0})",
        examples::median(ns.iter().copied())
    );
    ExitCode::SUCCESS
}
