//! `task::spawn_blocking` and `Runtime::spawn_blocking`: blocking work runs
//! on the pool, not on a worker; the pool is bounded, lingers and exits;
//! joins park only green threads; shutdown does not wait for it.

mod common;

use common::with_timeout;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// 8 × 200 ms blocking calls on a 1-worker runtime barely delay a green
/// sleeper: the worker never runs them. (A runtime that ran them on its
/// worker would make the sleeper at least 200 ms late.)
#[test]
fn blocking_calls_do_not_hold_the_worker() {
    with_timeout(60, "spawn_blocking latency", || {
        let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        let (late, took) = rt.block_on(|| {
            let start = Instant::now();
            let hs: Vec<_> = (0..8)
                .map(|i| {
                    eevdf_rt::task::spawn_blocking(move || {
                        std::thread::sleep(Duration::from_millis(200));
                        i
                    })
                })
                .collect();
            let sleeper = eevdf_rt::spawn(|| {
                let mut worst = Duration::ZERO;
                for _ in 0..50 {
                    let t = Instant::now();
                    eevdf_rt::sleep(Duration::from_millis(2));
                    worst = worst.max(t.elapsed().saturating_sub(Duration::from_millis(2)));
                }
                worst
            });
            let sum: i32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, 28);
            (sleeper.join().unwrap(), start.elapsed())
        });
        assert!(
            late < Duration::from_millis(100),
            "sleeper late by {late:?}"
        );
        // The 8 calls ran side by side on the pool, not one after another.
        assert!(took < Duration::from_millis(1500), "8 calls took {took:?}");
    });
}

#[test]
fn the_pool_is_bounded_and_queues_beyond_its_bound() {
    with_timeout(60, "bounded pool", || {
        let rt = eevdf_rt::Builder::new()
            .workers(1)
            .max_blocking_threads(2)
            .build()
            .unwrap();
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..6)
            .map(|i| {
                let (running, most) = (running.clone(), most.clone());
                rt.spawn_blocking(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(30));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i * 2
                })
            })
            .collect();
        let got: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(got, vec![0, 2, 4, 6, 8, 10]);
        assert_eq!(most.load(Ordering::SeqCst), 2);
        assert!(rt.blocking_threads() <= 2);
    });
}

#[test]
fn idle_pool_threads_exit_after_the_keep_alive() {
    with_timeout(60, "keep alive", || {
        let rt = eevdf_rt::Builder::new()
            .workers(1)
            .blocking_keep_alive(Duration::from_millis(20))
            .build()
            .unwrap();
        let hs: Vec<_> = (0..3).map(|_| rt.spawn_blocking(|| ())).collect();
        for h in hs {
            h.join().unwrap();
        }
        let t = Instant::now();
        while rt.blocking_threads() > 0 {
            assert!(t.elapsed() < Duration::from_secs(10), "pool threads linger");
            std::thread::sleep(Duration::from_millis(5));
        }
    });
}

#[test]
fn panics_are_returned_and_pool_code_can_spawn() {
    with_timeout(60, "panics", || {
        let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        let err = rt
            .spawn_blocking(|| -> u32 { panic!("blocking boom") })
            .join()
            .unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"blocking boom"));
        // From a pool thread: spawn a green thread and another blocking job.
        let v = rt
            .spawn_blocking(|| {
                let g = eevdf_rt::spawn(eevdf_rt::in_green_thread);
                let b = eevdf_rt::task::spawn_blocking(|| 5);
                (g.join().unwrap(), b.join().unwrap())
            })
            .join()
            .unwrap();
        assert_eq!(v, (true, 5));
        let h = rt.spawn_blocking(|| 1);
        assert!(h.try_task().is_none());
        assert_eq!(h.join().unwrap(), 1);
    });
}

#[test]
fn outside_a_runtime_task_spawn_blocking_panics_with_a_clear_message() {
    let p = std::panic::catch_unwind(|| eevdf_rt::task::spawn_blocking(|| 1)).unwrap_err();
    let msg = p
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(msg.contains("outside a runtime"), "{msg}");
    let e = eevdf_rt::Builder::new()
        .max_blocking_threads(0)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("max_blocking_threads"), "{e}");
}

/// Shutdown does not wait for a running job; a queued one is cancelled;
/// the running one still delivers its result.
#[test]
fn shutdown_does_not_wait_for_blocking_jobs() {
    with_timeout(60, "shutdown", || {
        let rt = eevdf_rt::Builder::new()
            .workers(1)
            .max_blocking_threads(1)
            .build()
            .unwrap();
        let started = Arc::new(AtomicUsize::new(0));
        let s = started.clone();
        let running = rt.spawn_blocking(move || {
            s.store(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(600));
            "done"
        });
        let queued = rt.spawn_blocking(|| "never");
        while started.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let t = Instant::now();
        rt.shutdown();
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "shutdown waited {:?}",
            t.elapsed()
        );
        let e = queued.join().unwrap_err();
        assert!(e.downcast_ref::<eevdf_rt::Cancelled>().is_some());
        assert_eq!(running.join().unwrap(), "done");
        assert!(rt.try_spawn_blocking(|| ()).is_err());
    });
}

/// A queued job whose captured value panics when the cancelled job is
/// dropped must not stop the shutdown halfway: the other queued job is
/// still cancelled, and a parked green thread is still unwound (its joiner
/// gets `Cancelled` instead of waiting forever).
#[test]
fn a_cancelled_job_that_panics_when_dropped_does_not_stop_shutdown() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("PanicOnDrop dropped");
        }
    }
    with_timeout(60, "shutdown with a panicking drop", || {
        let rt = eevdf_rt::Builder::new()
            .workers(1)
            .max_blocking_threads(1)
            .build()
            .unwrap();
        let started = Arc::new(AtomicUsize::new(0));
        let s = started.clone();
        let running = rt.spawn_blocking(move || {
            s.store(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(300));
        });
        let bomb = PanicOnDrop;
        let panics = rt.spawn_blocking(move || drop(bomb));
        let queued = rt.spawn_blocking(|| "never");
        let parked = rt.spawn(|| loop {
            eevdf_rt::park();
        });
        while started.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        rt.shutdown();
        for h in [
            panics.join().unwrap_err(),
            queued.join().map(drop).unwrap_err(),
        ] {
            assert!(h.downcast_ref::<eevdf_rt::Cancelled>().is_some());
        }
        let e = parked.join().unwrap_err();
        assert!(e.downcast_ref::<eevdf_rt::Cancelled>().is_some());
        running.join().unwrap();
    });
}
