//! `eevdf_rt::sync::Mutex`: exact counts under contention from green
//! threads and OS threads, try_lock, and freedom from starvation.

use eevdf_rt::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::within;

/// Runs `f` on a helper thread and fails the test if it takes longer than
/// `limit` (a hang becomes a failure instead of a stuck CI job).
fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

/// Heavy tests of this file run one at a time: each builds a runtime
/// whose workers are pinned to the same cores, and contention tests
/// measure nothing useful while another runtime's workers share them.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn eight_green_threads_100k_increments_each() {
    let _serial = serial();
    within(Duration::from_secs(60), || {
        let rt = rt();
        let m = Arc::new(Mutex::new(0u64));
        let start = Instant::now();
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let m = m.clone();
                rt.spawn(move || {
                    for _ in 0..100_000 {
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), 800_000);
        eprintln!("8 x 100000 increments: {:?}", start.elapsed());
    });
}

#[test]
fn green_and_os_threads_share_a_mutex() {
    let _serial = serial();
    within(Duration::from_secs(60), || {
        let rt = rt();
        let m = Arc::new(Mutex::new(0u64));
        const N: u64 = 50_000;
        let greens: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                rt.spawn(move || {
                    for i in 0..N {
                        let mut g = m.lock();
                        *g += 1;
                        if i % 1000 == 0 {
                            // Hold it across a switch now and then: other
                            // green threads must park, not spin forever.
                            eevdf_rt::yield_now();
                        }
                    }
                })
            })
            .collect();
        let oss: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for _ in 0..N {
                        *m.lock() += 1;
                    }
                })
            })
            .collect();
        for h in greens {
            h.join().unwrap();
        }
        for h in oss {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), 6 * N);
    });
}

#[test]
fn holding_across_a_sleep_parks_the_others() {
    let _serial = serial();
    within(Duration::from_secs(30), || {
        let rt = rt();
        let m = Arc::new(Mutex::new(Vec::new()));
        let m2 = m.clone();
        rt.block_on(move || {
            let g = m2.lock();
            let hs: Vec<_> = (0..10)
                .map(|i| {
                    let m = m2.clone();
                    eevdf_rt::spawn(move || m.lock().push(i))
                })
                .collect();
            eevdf_rt::sleep(Duration::from_millis(20));
            assert!(g.is_empty());
            drop(g);
            for h in hs {
                h.join().unwrap();
            }
        });
        let mut v = m.lock().clone();
        v.sort();
        assert_eq!(v, (0..10).collect::<Vec<_>>());
    });
}

#[test]
fn try_lock_and_guard_deref() {
    let m = Mutex::new(String::from("a"));
    {
        let mut g = m.try_lock().unwrap();
        g.push('b');
        assert!(m.try_lock().is_none());
        assert!(m.is_locked());
    }
    assert_eq!(&*m.lock(), "ab");
    assert_eq!(format!("{:?}", m), "Mutex { data: \"ab\", .. }");
    assert_eq!(m.into_inner(), "ab");
}

#[test]
fn a_panic_while_locked_unlocks_without_poisoning() {
    let rt = rt();
    let m = Arc::new(Mutex::new(1));
    let m2 = m.clone();
    let r = rt
        .spawn(move || {
            let _g = m2.lock();
            panic!("boom");
        })
        .join();
    assert!(r.is_err());
    *m.lock() += 1;
    assert_eq!(*m.lock(), 2);
}

/// A waiter is not starved by a green thread that re-locks in a tight
/// loop (the woken waiter is handed the lock after losing one race):
/// neither an OS thread nor a green thread on the hog's own worker.
#[test]
fn no_starvation_under_a_tight_relock_loop() {
    let _serial = serial();
    within(Duration::from_secs(30), || {
        let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        let m = Arc::new(Mutex::new(()));
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicU64::new(0));
        let hog = {
            let (m, stop, rounds) = (m.clone(), stop.clone(), rounds.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    let _g = m.lock();
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            }
        };
        // OS-thread waiters, repeatedly: each must get through.
        let h = rt.spawn(hog.clone());
        while rounds.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        for _ in 0..50 {
            let t = Instant::now();
            drop(m.lock());
            assert!(t.elapsed() < Duration::from_secs(5));
        }
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
        assert!(rounds.load(Ordering::Relaxed) > 0);
        // A green waiter on the hog's own (only) worker. The hog is spawned
        // from the waiter (a local spawn: it is queued at once, and the
        // tick preempts whichever runs past its slice).
        stop.store(false, Ordering::Relaxed);
        let (m2, s2, r2) = (m.clone(), stop.clone(), rounds.clone());
        rt.block_on(move || {
            let before = r2.load(Ordering::Relaxed);
            let h = eevdf_rt::spawn(hog);
            while r2.load(Ordering::Relaxed) == before {
                eevdf_rt::yield_now(); // let the hog start
            }
            for _ in 0..50 {
                let t = Instant::now();
                drop(m2.lock());
                assert!(t.elapsed() < Duration::from_secs(5));
            }
            s2.store(true, Ordering::Relaxed);
            h.join().unwrap();
        });
    });
}
