//! OS_YIELD: a busy worker gives the kernel a scheduling point at its paced
//! poll, so another OS thread woken on its CPU is not kept waiting for the
//! kernel's next tick (docs/features.md, OS_YIELD).

mod common;

use common::with_timeout;
use eevdf_rt::Builder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How late (µs, sorted) a SCHED_BATCH thread pinned to the busy worker's
/// CPU wakes from 200 µs sleeps, while a green thread keeps the worker
/// busy with preemption points. A batch thread never preempts on wakeup
/// (the kernel lets it run at its tick, or when the running thread blocks
/// or yields): the same wait as a normal thread that the kernel does not
/// pick at its wakeup, made deterministic. `None` if the process cannot
/// pin threads or switch a thread to SCHED_BATCH.
fn batch_lateness_beside_busy_worker(features: &str) -> Option<Vec<u64>> {
    let cpu = *core_affinity::get_core_ids()?.first()?;
    let rt = Builder::new()
        .workers(1)
        .pin_workers(true)
        .features(features)
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let busy = rt.spawn(move || {
        while !s.load(Ordering::Relaxed) {
            for _ in 0..1000 {
                std::hint::black_box(0u64);
            }
            eevdf_rt::preempt_point();
        }
    });
    let sleeper = std::thread::spawn(move || {
        if !core_affinity::set_for_current(cpu) {
            return None;
        }
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler on the calling thread (pid 0) with a
        // valid sched_param; SCHED_BATCH at priority 0 needs no privilege.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) } != 0 {
            return None;
        }
        let mut late = Vec::with_capacity(200);
        for _ in 0..200 {
            let t = Instant::now();
            std::thread::sleep(Duration::from_micros(200));
            late.push((t.elapsed().as_micros() as u64).saturating_sub(200));
        }
        late.sort_unstable();
        Some(late)
    });
    let late = sleeper.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    rt.shutdown();
    late
}

#[test]
fn a_thread_that_never_preempts_gets_a_busy_workers_cpu_within_a_poll_interval() {
    let Some(on) = with_timeout(60, "batch sleeper beside a busy worker", || {
        batch_lateness_beside_busy_worker("default")
    }) else {
        eprintln!("skipped: cannot pin threads or use SCHED_BATCH here");
        return;
    };
    let off = with_timeout(60, "batch sleeper, NO_OS_YIELD", || {
        batch_lateness_beside_busy_worker("NO_OS_YIELD")
    })
    .unwrap_or_default();
    let p50 = |v: &[u64]| v.get(v.len() / 2).copied().unwrap_or(0);
    let p90 = |v: &[u64]| v.get(v.len() * 9 / 10).copied().unwrap_or(0);
    eprintln!(
        "lateness of 200 µs sleeps of a SCHED_BATCH thread beside a busy worker (µs): \
         OS_YIELD p50 {} p90 {}; NO_OS_YIELD p50 {} p90 {}",
        p50(&on),
        p90(&on),
        p50(&off),
        p90(&off)
    );
    // The worker yields at most every 50 µs while busy (plus the timer's
    // own slack): a median far below a kernel tick. Without the yield the
    // thread waits for the tick (1–4 ms, the kernel's HZ).
    assert!(
        p50(&on) < 1_000,
        "median lateness {} µs beside a busy worker with OS_YIELD",
        p50(&on)
    );
}
