//! OS_YIELD: a busy worker gives the kernel a scheduling point at its paced
//! poll, so another OS thread woken on its CPU is not kept waiting for the
//! kernel's next tick (docs/features.md, OS_YIELD).

mod common;

use common::with_timeout;
use eevdf_rt::Builder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tests pin threads to the same CPU: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` on an OS thread pinned to the CPU of a one-worker runtime
/// (with `features`) whose worker a green thread keeps busy with
/// preemption points; returns its result and the CPU share the worker's
/// thread lost meanwhile (`common::CpuLoss`). `None` if the process cannot
/// pin threads, or if `f` returns `None`.
fn beside_busy_worker<R: Send + 'static>(
    features: &str,
    f: impl FnOnce() -> Option<R> + Send + 'static,
) -> Option<(R, f64)> {
    let cpu = *core_affinity::get_core_ids()?.first()?;
    let rt = Builder::new()
        .workers(1)
        .pin_workers(true)
        .features(features)
        .thread_name("osy")
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
    let loss = common::CpuLoss::start("osy-w", 1);
    let beside = std::thread::spawn(move || {
        if !core_affinity::set_for_current(cpu) {
            return None;
        }
        f()
    });
    let out = beside.join().unwrap().map(|r| (r, loss.share()));
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    rt.shutdown();
    out
}

/// How late (µs, sorted) a SCHED_BATCH thread pinned to the busy worker's
/// CPU wakes from 200 µs sleeps. A batch thread never preempts on wakeup
/// (the kernel lets it run at its tick, or when the running thread blocks
/// or yields): the same wait as a normal thread that the kernel does not
/// pick at its wakeup, made deterministic. `None` if the process cannot
/// pin threads or switch a thread to SCHED_BATCH.
fn batch_lateness_beside_busy_worker(features: &str) -> Option<(Vec<u64>, f64)> {
    beside_busy_worker(features, || {
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
    })
}

#[test]
fn a_thread_that_never_preempts_gets_a_busy_workers_cpu_within_a_poll_interval() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let p50 = |v: &[u64]| v.get(v.len() / 2).copied().unwrap_or(0);
    let p90 = |v: &[u64]| v.get(v.len() * 9 / 10).copied().unwrap_or(0);
    // Runs in which the machine kept the worker off its CPU (another
    // process on that CPU also delays the sleeper) are repeated.
    let Some(on) = with_timeout(60, "batch sleeper beside a busy worker", move || {
        common::unless_contended(
            "a_thread_that_never_preempts_gets_a_busy_workers_cpu_within_a_poll_interval",
            10,
            || match batch_lateness_beside_busy_worker("default") {
                Some((late, lost)) => (Some(late), lost),
                None => (None, 0.0),
            },
            |r| r.as_ref().is_none_or(|late| p50(late) < 1_000),
        )
        .flatten()
    }) else {
        eprintln!(
            "skipped: cannot pin threads or use SCHED_BATCH here, or the machine kept the \
             worker off its CPU in every run"
        );
        return;
    };
    let off = with_timeout(60, "batch sleeper, NO_OS_YIELD", || {
        batch_lateness_beside_busy_worker("NO_OS_YIELD")
    })
    .map(|(late, _)| late)
    .unwrap_or_default();
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

/// The calling thread's CPU time (ns).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The share of its CPU (0..1) that a CPU-bound thread pinned beside a
/// busy worker gets over `wall`. `None` if the process cannot pin threads.
fn hog_share_beside_busy_worker(features: &str, wall: Duration) -> Option<f64> {
    beside_busy_worker(features, move || {
        let (t0, c0) = (Instant::now(), thread_cpu_ns());
        while t0.elapsed() < wall {
            std::hint::black_box(0u64);
        }
        Some((thread_cpu_ns() - c0) as f64 / t0.elapsed().as_nanos() as f64)
    })
    // Here the worker losing CPU time is what is measured, not noise.
    .map(|(share, _)| share)
}

#[test]
fn a_cpu_bound_thread_beside_a_busy_worker_does_not_starve_it() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Since Linux 6.18 every yield with another thread runnable forfeits
    // the rest of the yielder's kernel slice: without the back-off after a
    // long yield, a CPU hog on the worker's CPU took 97% of it.
    let Some(share) = with_timeout(60, "CPU hog beside a busy worker", || {
        hog_share_beside_busy_worker("default", Duration::from_millis(1500))
    }) else {
        eprintln!("skipped: cannot pin threads here");
        return;
    };
    eprintln!("a CPU hog's share of a busy worker's CPU with OS_YIELD: {share:.2}");
    // Fair would be one half; the bound only catches starvation.
    assert!(
        share < 0.8,
        "the hog got {:.0}% of the busy worker's CPU",
        share * 100.0
    );
}

/// Context switches of one worker running two CPU-bound green threads
/// with `slice` each for `wall`, with `features`, and the CPU share the
/// worker's thread lost meanwhile (`common::CpuLoss`).
fn switches_between_two_spinners(features: &str, slice: Duration, wall: Duration) -> (u64, f64) {
    let rt = Builder::new()
        .workers(1)
        .features(features)
        .thread_name("spn")
        .build()
        .unwrap();
    let loss = common::CpuLoss::start("spn-w", 1);
    let before = rt.stats().total().context_switches;
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            rt.spawn(move || {
                eevdf_rt::set_slice(slice).unwrap();
                let t0 = Instant::now();
                while t0.elapsed() < wall {
                    for _ in 0..200 {
                        std::hint::black_box(0u64);
                    }
                    eevdf_rt::preempt_point();
                }
            })
        })
        .collect();
    for s in spinners {
        s.join().unwrap();
    }
    let n = rt.stats().total().context_switches - before;
    let lost = loss.share();
    rt.shutdown();
    (n, lost)
}

#[test]
fn hrtick_still_ends_short_slices_between_ticks() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Two spinners with 100 µs slices switch about every 100 µs when the
    // HRTICK deadline is kept (~3,000 switches in 300 ms), but only at the
    // 1 ms tick if each yield's re-arm pushed it back (~300): the first
    // OS_YIELD forgave every no-op yield and had that effect.
    // A run in which the worker lost more than a tenth of its CPU time is
    // repeated (`common::unless_contended`): the spinners' slices are
    // wall-clock time, so they end while the thread waits for its CPU.
    let Some(n) = with_timeout(60, "two 100 µs-slice spinners", || {
        common::unless_contended(
            "hrtick_still_ends_short_slices_between_ticks",
            10,
            || {
                switches_between_two_spinners(
                    "default",
                    Duration::from_micros(100),
                    Duration::from_millis(300),
                )
            },
            |&n| n > 1_000,
        )
    }) else {
        return;
    };
    eprintln!("context switches in 300 ms between two 100 µs-slice spinners: {n}");
    assert!(
        n > 1_000,
        "only {n} switches: slices end at the tick, not at HRTICK"
    );
}
