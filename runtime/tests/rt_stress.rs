//! Stress: thousands of green threads doing ping-pong rings, fan-out/fan-in,
//! random sleeps and yields — every count exact, no lost wakeup, no hang —
//! under 2 and 4 workers and with DELAY_DEQUEUE, TTWU_QUEUE and
//! TTWU_QUEUE_DELAYED switched on and off.

mod common;

use common::{with_timeout, Rng};
use eevdf_rt::{Builder, Task};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Rings of `size` green threads passing a token `laps` times around;
/// every hop is one park/unpark wakeup. Returns the number of hops.
fn rings(count: u64, size: u64, laps: u64) -> u64 {
    let hops = Arc::new(AtomicU64::new(0));
    let mut joins = Vec::new();
    for _ in 0..count {
        let token = Arc::new(AtomicU64::new(0));
        let handles: Arc<Vec<OnceLock<Task>>> =
            Arc::new((0..size).map(|_| OnceLock::new()).collect());
        for i in 0..size {
            let (token, ring, hops) = (token.clone(), handles.clone(), hops.clone());
            let h = eevdf_rt::spawn(move || {
                for lap in 0..laps {
                    let mine = lap * size + i;
                    while token.load(Ordering::Acquire) != mine {
                        eevdf_rt::park();
                    }
                    token.store(mine + 1, Ordering::Release);
                    hops.fetch_add(1, Ordering::Relaxed);
                    let next = &ring[((i + 1) % size) as usize];
                    // the next task may not have published its handle yet
                    loop {
                        if let Some(t) = next.get() {
                            t.unpark();
                            break;
                        }
                        eevdf_rt::yield_now();
                    }
                }
            });
            handles[i as usize].set(h.task()).ok().unwrap();
            joins.push(h);
        }
    }
    for j in joins {
        j.join().unwrap();
    }
    hops.load(Ordering::Relaxed)
}

/// Fan-out/fan-in with random sleeps and yields; returns the checksum.
fn fan(parents: u64, children: u64, seed: u64) -> u64 {
    let hs: Vec<_> = (0..parents)
        .map(|p| {
            eevdf_rt::spawn(move || {
                let mut rng = Rng(seed ^ (p + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let kids: Vec<_> = (0..children)
                    .map(|c| {
                        let mode = rng.below(3);
                        let us = rng.below(300);
                        eevdf_rt::spawn(move || {
                            match mode {
                                0 => eevdf_rt::sleep(Duration::from_micros(us)),
                                1 => {
                                    for _ in 0..(us % 7) {
                                        eevdf_rt::yield_now();
                                    }
                                }
                                _ => eevdf_rt::preempt_point(),
                            }
                            p * 1_000_000 + c
                        })
                    })
                    .collect();
                kids.into_iter().map(|k| k.join().unwrap()).sum::<u64>()
            })
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).sum()
}

fn run(workers: usize, features: &str) {
    let label = format!("stress workers={workers} features={features}");
    let features = features.to_string();
    with_timeout(240, &label.clone(), move || {
        let rt = Builder::new()
            .workers(workers)
            .features(&features)
            .build()
            .unwrap();
        // 250 rings × 4 tasks × 240 laps = 240 000 hops (an unpark that finds
        // its target not yet asleep needs no wakeup), 1 000 green threads
        let hops = rt.block_on(|| rings(250, 4, 240));
        assert_eq!(hops, 250 * 4 * 240, "{label}");
        let sum = rt.block_on(|| fan(20, 50, 7));
        let expect: u64 = (0..20u64)
            .map(|p| (0..50).map(|c| p * 1_000_000 + c).sum::<u64>())
            .sum();
        assert_eq!(sum, expect, "{label}");
        let s = rt.stats().total();
        let wakeups = s.wakeups_local + s.wakeups_remote_queued + s.wakeups_remote_inline;
        assert!(
            wakeups >= 200_000,
            "{label}: only {wakeups} wakeups\n{}",
            rt.stats()
        );
        // A joined task finishes exiting on its worker just after its result
        // is delivered: allow a moment for the last exits.
        let t = std::time::Instant::now();
        while rt.live_tasks() != 0 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(rt.live_tasks(), 0, "{label}: tasks left behind");
    });
}

#[test]
fn stress_2_workers_default() {
    run(2, "");
}

#[test]
fn stress_2_workers_no_delay_dequeue() {
    run(2, "NO_DELAY_DEQUEUE,NO_DELAY_ZERO");
}

#[test]
fn stress_2_workers_no_ttwu_queue() {
    run(2, "NO_TTWU_QUEUE");
}

#[test]
fn stress_2_workers_kernel_ttwu_queue_rule() {
    // inline under a busy target's lock, as the kernel does
    run(2, "NO_TTWU_QUEUE_DEFAULT");
}

#[test]
fn stress_4_workers_no_ttwu_queue_delayed() {
    // delayed tasks woken inline under their owner's lock (the kernel's way)
    run(4, "NO_TTWU_QUEUE_DELAYED");
}

#[test]
fn stress_4_workers_no_wake_idle_no_balance() {
    run(4, "NO_WAKE_IDLE,NO_NEWIDLE_BALANCE,NO_SPAWN_LOCAL");
}
