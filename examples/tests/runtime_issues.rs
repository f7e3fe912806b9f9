//! Minimal reproductions of runtime behaviour found while writing the
//! examples, for the runtime's owners. They are `#[ignore]`d so that CI
//! stays green while the issue is open; run them with
//!
//! ```text
//! cargo test --release -p examples --test runtime_issues -- --ignored --nocapture
//! ```
//!
//! Each test asserts the behaviour the documentation promises (or a
//! latency-sensitive service needs), so it fails today and passes once the
//! issue is fixed. They run one at a time (each builds a runtime whose
//! worker is pinned to the first CPU).

use eevdf_rt::sync::channel;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// `WorkerStats::wakeup_preemptions` is documented as "wakeups whose
/// preemption check asked the running task to reschedule", but it is only
/// counted on the inline wake paths (`wake::ttwu_queue`,
/// `wake::ttwu_runnable`). A wakeup that arrives through a wakelist —
/// every wakeup from an OS thread, and remote wakes to idle workers — is
/// checked in `worker::run::drain_wakelist` → `wake::activate`, and when
/// that check preempts (the caller switches), nothing is counted. So in a
/// service fed from outside the runtime (latency_service) the counter
/// reads 0 while thousands of wakeup preemptions happen per second.
#[test]
#[ignore = "runtime issue: wakelist wakeup preemptions are not counted"]
fn wakelist_wakeup_preemptions_are_counted() {
    let _turn = one_at_a_time();
    let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    let (tx, rx) = channel::unbounded::<()>();
    // A short-slice handler blocked on a channel ...
    let handler = eevdf_rt::task::Builder::new()
        .slice(Duration::from_micros(100))
        .spawn_on(&rt, move || rx.iter().count())
        .unwrap();
    // ... beside a CPU hog with preemption points, on the same worker.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let hog = eevdf_rt::task::Builder::new()
        .nice(10)
        .spawn_on(&rt, move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                let t = std::time::Instant::now();
                while t.elapsed() < Duration::from_micros(20) {}
                eevdf_rt::preempt_point();
            }
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let before = rt.stats().total();
    // An OS thread wakes the handler 100 times: each wake goes through the
    // worker's wakelist and preempts the hog at its next preemption point.
    for _ in 0..100 {
        tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let d = rt.stats().total().since(&before);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    drop(tx);
    assert_eq!(handler.join().unwrap(), 100);
    hog.join().unwrap();
    println!(
        "wakeups_remote_queued {}, preemptions {}, wakeup_preemptions {}",
        d.wakeups_remote_queued, d.preemptions, d.wakeup_preemptions
    );
    assert!(
        d.preemptions >= 90,
        "the handler preempted the hog ({} preemptions)",
        d.preemptions
    );
    assert!(
        d.wakeup_preemptions >= 90,
        "wakeup_preemptions should count the ~100 wakeups that preempted; it is {}",
        d.wakeup_preemptions
    );
}

/// Under full load, socket readiness reaches a green thread only at the
/// next tick: a busy worker never polls the reactor (only idle workers and
/// the ticker do, `io` module docs, "Who polls" §3), so data that arrives
/// while every worker runs green threads waits for the ticker's
/// once-per-tick (1 ms) poll before its reader is even woken — although
/// the busy green thread reaches a preemption point every 20 µs. tokio
/// polls its I/O driver whenever a worker's local queue runs dry, so in
/// `latency_service --transport tcp` eevdf-rt's p50 is ~600 µs against
/// tokio's ~160 µs. The assertion is what a latency-sensitive service
/// would need: readiness noticed within a few preemption points.
#[test]
#[ignore = "runtime issue: under full load the reactor is polled once per tick"]
fn busy_worker_notices_socket_readiness_promptly() {
    let _turn = one_at_a_time();
    use std::io::{Read, Write};
    use std::time::Instant;
    let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    let (mut tx, rx) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut rx = eevdf_rt::net::UnixStream::from_std(rx).unwrap();
    let epoch = Instant::now();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    // A CPU-bound green thread with a preemption point every 20 µs.
    let hog = rt.spawn(move || {
        while !s.load(std::sync::atomic::Ordering::Relaxed) {
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(20) {}
            eevdf_rt::preempt_point();
        }
    });
    // A short-slice reader: how long after each write does it run?
    let reader = eevdf_rt::task::Builder::new()
        .slice(Duration::from_micros(100))
        .nice(-10)
        .spawn_on(&rt, move || {
            let mut delays = Vec::new();
            let mut buf = [0u8; 16];
            while rx.read_exact(&mut buf).is_ok() {
                let sent = u128::from_le_bytes(buf);
                delays.push(epoch.elapsed().as_nanos() - sent);
            }
            delays
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    for i in 0..200u64 {
        // Spread the writes over the tick period.
        std::thread::sleep(Duration::from_micros(1000 + 137 * (i % 7)));
        tx.write_all(&epoch.elapsed().as_nanos().to_le_bytes())
            .unwrap();
    }
    drop(tx);
    let mut delays = reader.join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    hog.join().unwrap();
    delays.sort_unstable();
    let p50 = delays[delays.len() / 2] / 1000;
    let p90 = delays[delays.len() * 9 / 10] / 1000;
    println!("socket write → reader running: p50 {p50} µs, p90 {p90} µs");
    assert!(
        p90 < 200,
        "readiness took p50 {p50} µs, p90 {p90} µs to reach a reader on a busy worker"
    );
}
