//! A million green threads parked at once, each blocked on a channel:
//! spawn rate, resident memory per green thread, and a clean join of all.
//!
//! ```text
//! cargo run --release -p examples --example parked
//! cargo run --release -p examples --example parked -- --threads 100000 --workers 2
//! ```
//!
//! One green thread spawns `--threads` green threads; each counts itself
//! in and blocks in `recv` on one shared channel. Once all are parked the
//! program reads `VmRSS` and `VmPTE` (page tables) from
//! `/proc/self/status` and the number of memory mappings, then sends one
//! message per thread and joins them all. It prints
//! `spawned=N spawn_s=… rate_mps=… rss_per_thread_kib=… pte_per_thread_kib=… maps=… joined=N total_s=…`.
//! The default `vm.max_map_count` (65,530) applies: the runtime must fit
//! a million stacks into it.

use bench_common::outln;
use clap::Parser;
use examples::cli;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Park N green threads on a channel at once, then release and join them")]
struct Args {
    /// Number of green threads parked at once (1 ..= 100,000,000).
    #[arg(long, default_value_t = 1_000_000,
          value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    threads: u64,
    /// Worker threads (1 ..= 256).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=256))]
    workers: u16,
    /// Also print the runtime's per-worker counters (spawns, steals,
    /// switches) to stderr.
    #[arg(long)]
    stats: bool,
    /// Scheduler features (`sched_features` syntax, e.g. `NO_SPAWN_LOCAL`; ""
    /// or `default`: the defaults).
    #[arg(long, default_value = "default")]
    features: String,
}

fn main() {
    let a: Args = cli::parse();
    if let Err(e) = cli::check_features("--features", &a.features) {
        eprintln!("parked: {e}");
        std::process::exit(2);
    }
    let rt = match eevdf_rt::Builder::new()
        .workers(a.workers.into())
        .features(&a.features)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("parked: runtime: {e}");
            std::process::exit(1);
        }
    };
    let n = a.threads as usize;
    let (rss0, pte0) = (rss_kib(), pte_kib());
    let start = Instant::now();
    let r = rt.block_on(move || {
        let (tx, rx) = eevdf_rt::sync::channel::unbounded::<()>();
        let parked = Arc::new(AtomicUsize::new(0));
        let mut hs = Vec::with_capacity(n);
        for i in 0..n {
            let (rx, parked) = (rx.clone(), parked.clone());
            let h = eevdf_rt::task::Builder::new().spawn(move || {
                parked.fetch_add(1, Ordering::Relaxed);
                rx.recv().is_ok()
            });
            match h {
                Ok(h) => hs.push(h),
                Err(e) => return Err(format!("spawn #{i} failed: {e}")),
            }
        }
        let spawn_s = start.elapsed().as_secs_f64();
        while parked.load(Ordering::Relaxed) < n {
            eevdf_rt::sleep(Duration::from_millis(1));
        }
        // Give the last ones time to reach `recv` and block.
        eevdf_rt::sleep(Duration::from_millis(20));
        let rss = rss_kib().saturating_sub(rss0);
        let pte = pte_kib().saturating_sub(pte0);
        let maps = examples::os::mapping_count().unwrap_or(0);
        for _ in 0..n {
            tx.send(()).expect("receivers alive");
        }
        let mut joined = 0;
        for h in hs {
            if h.join().expect("parked thread") {
                joined += 1;
            }
        }
        Ok((spawn_s, rss, pte, maps, joined))
    });
    let total = start.elapsed().as_secs_f64();
    if a.stats {
        for (i, w) in rt.stats().workers.iter().enumerate() {
            eprintln!("worker {i}: {w:?}");
        }
    }
    match r {
        Ok((spawn_s, rss, pte, maps, joined)) => {
            outln!(
                "spawned={n} spawn_s={spawn_s:.3} rate_mps={:.3} rss_per_thread_kib={:.2} pte_per_thread_kib={:.2} maps={maps} joined={joined} total_s={total:.3}",
                n as f64 / spawn_s / 1e6,
                rss as f64 / n as f64,
                pte as f64 / n as f64,
            );
            if joined != n {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("parked: {e}");
            std::process::exit(1);
        }
    }
}

fn rss_kib() -> u64 {
    examples::os::proc_status_kib("VmRSS").unwrap_or(0)
}

fn pte_kib() -> u64 {
    examples::os::proc_status_kib("VmPTE").unwrap_or(0)
}
