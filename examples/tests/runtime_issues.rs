//! Minimal reproductions of runtime behaviour found while writing the
//! examples, for the runtime's owners. They are `#[ignore]`d so that CI
//! stays green while the issue is open; run them with
//!
//! ```text
//! cargo test --release -p examples --test runtime_issues -- --ignored --nocapture
//! ```
//!
//! Each test asserts the behaviour the documentation promises, so it fails
//! today and passes once the issue is fixed.

use eevdf_rt::sync::channel;
use std::time::Duration;

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
