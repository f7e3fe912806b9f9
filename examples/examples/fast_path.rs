//! The basic operations of the fast path — a yield switch, spawn + join of
//! an empty task, a channel ping-pong round trip — on eevdf-rt and on
//! tokio's current-thread runtime, one worker each, in one process.
//!
//! ```text
//! cargo run --release -p examples --example fast_path
//! cargo run --release -p examples --example fast_path -- --rounds 21 --ops 200000
//! ```
//!
//! A round runs every operation once on each runtime, back to back, for
//! `--ops` operations, and records eevdf-rt's time per operation divided by
//! tokio's from the same round. This VM's speed drifts by tens of percent
//! within minutes, so a ratio of two runs seconds apart is steadier than
//! either time; the medians over the rounds are printed at the end.
//! (criterion's `cargo bench -p eevdf-rt` measures the same operations with
//! more statistics per benchmark but minutes between the two runtimes.)
//!
//! Both runtimes build once and are reused by every round; nothing else
//! runs on them. eevdf-rt uses its defaults (the hand-off monitor, the
//! io_uring driver where available, all default feature switches).

use bench_common::outln;
use clap::Parser;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "yield, spawn + join, channel round trip: eevdf-rt vs tokio current-thread")]
struct Args {
    /// Interleaved rounds.
    #[arg(long, default_value_t = 11, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Operations per run (1 ..= 1,000,000,000).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=MAX_OPS))]
    ops: u64,
}

/// The largest `--ops`: a billion yields take over a minute per run already.
const MAX_OPS: u64 = 1_000_000_000;

/// `elapsed` divided by `ops` operations (`ops` ≥ 1), without narrowing `ops`
/// to the `u32` that `Duration`'s own division takes.
fn per_op(elapsed: Duration, ops: u64) -> Duration {
    let ns = elapsed.as_nanos() / u128::from(ops);
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}

/// One operation measured on both runtimes.
#[derive(Clone, Copy, Debug)]
enum Op {
    Yield,
    SpawnJoin,
    Channel,
}

impl Op {
    const ALL: [Op; 3] = [Op::Yield, Op::SpawnJoin, Op::Channel];

    fn name(self) -> &'static str {
        match self {
            Op::Yield => "yield switch (two tasks, per switch)",
            Op::SpawnJoin => "spawn + join an empty task",
            Op::Channel => "channel ping-pong round trip",
        }
    }
}

/// Time per operation on eevdf-rt (one worker).
fn green(rt: &eevdf_rt::Runtime, op: Op, n: u64) -> Duration {
    rt.block_on(move || match op {
        Op::Yield => {
            let h = eevdf_rt::spawn(move || {
                for _ in 0..n {
                    eevdf_rt::yield_now();
                }
            });
            let t = Instant::now();
            for _ in 0..n {
                eevdf_rt::yield_now();
            }
            h.join().unwrap();
            // two switches per iteration
            per_op(t.elapsed(), 2 * n)
        }
        Op::SpawnJoin => {
            let t = Instant::now();
            for _ in 0..n {
                eevdf_rt::spawn(|| {}).join().unwrap();
            }
            per_op(t.elapsed(), n)
        }
        Op::Channel => {
            let (to_echo, from_main) = eevdf_rt::sync::channel::bounded::<u64>(1);
            let (to_main, from_echo) = eevdf_rt::sync::channel::bounded::<u64>(1);
            let echo = eevdf_rt::spawn(move || {
                while let Ok(v) = from_main.recv() {
                    if to_main.send(v).is_err() {
                        break;
                    }
                }
            });
            let t = Instant::now();
            for i in 0..n {
                to_echo.send(i).unwrap();
                assert_eq!(from_echo.recv().unwrap(), i);
            }
            let d = per_op(t.elapsed(), n);
            drop(to_echo);
            echo.join().unwrap();
            d
        }
    })
}

/// Time per operation on tokio's current-thread runtime.
fn tokio(rt: &tokio::runtime::Runtime, op: Op, n: u64) -> Duration {
    rt.block_on(async move {
        match op {
            Op::Yield => {
                let h = tokio::spawn(async move {
                    for _ in 0..n {
                        tokio::task::yield_now().await;
                    }
                });
                let t = Instant::now();
                for _ in 0..n {
                    tokio::task::yield_now().await;
                }
                h.await.unwrap();
                per_op(t.elapsed(), 2 * n)
            }
            Op::SpawnJoin => {
                let t = Instant::now();
                for _ in 0..n {
                    tokio::spawn(async {}).await.unwrap();
                }
                per_op(t.elapsed(), n)
            }
            Op::Channel => {
                let (to_echo, mut from_main) = tokio::sync::mpsc::channel::<u64>(1);
                let (to_main, mut from_echo) = tokio::sync::mpsc::channel::<u64>(1);
                let echo = tokio::spawn(async move {
                    while let Some(v) = from_main.recv().await {
                        if to_main.send(v).await.is_err() {
                            break;
                        }
                    }
                });
                let t = Instant::now();
                for i in 0..n {
                    to_echo.send(i).await.unwrap();
                    assert_eq!(from_echo.recv().await.unwrap(), i);
                }
                let d = per_op(t.elapsed(), n);
                drop(to_echo);
                echo.await.unwrap();
                d
            }
        }
    })
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn main() {
    let args: Args = examples::cli::parse();
    let grt = eevdf_rt::Builder::new()
        .workers(1)
        .build()
        .expect("build the eevdf-rt runtime");
    let trt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("build the tokio runtime");
    // Warm both up (stack caches, allocator, clock calibration).
    for op in Op::ALL {
        green(&grt, op, args.ops.min(10_000));
        tokio(&trt, op, args.ops.min(10_000));
    }
    let mut rows: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> = vec![Default::default(); Op::ALL.len()];
    outln!(
        "{} rounds × {} operations; ns per operation (eevdf-rt / tokio current-thread)",
        args.rounds,
        args.ops
    );
    for round in 1..=args.rounds {
        let mut line = format!("round {round:>2}:");
        for (i, op) in Op::ALL.into_iter().enumerate() {
            // Alternate which runtime goes first, so neither always gets
            // the warmer (or the noisier) half of a round.
            let (g, t) = if round % 2 == 1 {
                let g = green(&grt, op, args.ops);
                (g, tokio(&trt, op, args.ops))
            } else {
                let t = tokio(&trt, op, args.ops);
                (green(&grt, op, args.ops), t)
            };
            let (g, t) = (g.as_nanos() as f64, t.as_nanos() as f64);
            rows[i].0.push(g);
            rows[i].1.push(t);
            rows[i].2.push(g / t);
            line += &format!("  {g:.0} / {t:.0}");
        }
        outln!("{line}");
    }
    outln!();
    outln!("| operation | eevdf-rt (ns) | tokio current-thread (ns) | eevdf-rt / tokio |");
    outln!("|---|---|---|---|");
    for (op, (g, t, r)) in Op::ALL.into_iter().zip(rows.iter_mut()) {
        outln!(
            "| {} | {:.0} | {:.0} | {:.2}× |",
            op.name(),
            median(g),
            median(t),
            median(r)
        );
    }
    outln!("(medians over the rounds; the ratio is the median of the per-round ratios)");
}
