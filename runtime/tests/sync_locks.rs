//! `eevdf_rt::sync::{RwLock, Barrier, Semaphore}`: basics and a small
//! stress each, green threads mixed with OS threads.

use eevdf_rt::sync::{Barrier, RwLock, Semaphore};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{within, H};

fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

// ---- RwLock ---------------------------------------------------------------

#[test]
fn rwlock_basics() {
    let l = RwLock::new(1);
    {
        let (a, b) = (l.read(), l.read());
        assert_eq!(*a + *b, 2);
        assert!(l.try_write().is_none());
        assert!(l.try_read().is_some());
    }
    {
        let mut w = l.write();
        *w = 5;
        assert!(l.try_read().is_none());
        assert!(l.try_write().is_none());
    }
    assert_eq!(*l.read(), 5);
    assert_eq!(format!("{l:?}"), "RwLock { data: 5, .. }");
    assert_eq!(l.into_inner(), 5);
}

#[test]
fn rwlock_readers_share_writers_exclude() {
    within(Duration::from_secs(60), || {
        let rt = rt();
        let l = Arc::new(RwLock::new((0u64, 0u64)));
        let readers_inside = Arc::new(AtomicUsize::new(0));
        let max_readers = Arc::new(AtomicUsize::new(0));
        let mut hs = Vec::new();
        for w in 0..4 {
            let l = l.clone();
            let f = move || {
                for i in 0..5_000 {
                    let mut g = l.write();
                    g.0 += 1;
                    if i % 100 == 0 {
                        eevdf_rt::yield_now(); // hold it across a switch
                    }
                    g.1 += 1;
                }
            };
            if w < 3 {
                hs.push(H::Green(rt.spawn(f)));
            } else {
                hs.push(H::Os(std::thread::spawn(f)));
            }
        }
        for _ in 0..4 {
            let (l, inside, max) = (l.clone(), readers_inside.clone(), max_readers.clone());
            hs.push(H::Green(rt.spawn(move || {
                for _ in 0..5_000 {
                    let g = l.read();
                    let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    max.fetch_max(n, Ordering::SeqCst);
                    assert_eq!(g.0, g.1, "a reader saw a half-done write");
                    eevdf_rt::yield_now();
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
            })));
        }
        for h in hs {
            h.join();
        }
        assert_eq!(*l.read(), (20_000, 20_000));
        assert!(
            max_readers.load(Ordering::SeqCst) >= 2,
            "readers never overlapped"
        );
    });
}

/// A writer gets in while readers keep streaming, and readers get in while
/// writers keep streaming (phase-fair).
#[test]
fn rwlock_neither_side_starves() {
    within(Duration::from_secs(60), || {
        let rt = rt();
        let l = Arc::new(RwLock::new(0u64));
        let stop = Arc::new(AtomicBool::new(false));
        // A stream of overlapping readers.
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (l, stop) = (l.clone(), stop.clone());
                rt.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let _g = l.read();
                        eevdf_rt::yield_now();
                    }
                })
            })
            .collect();
        for _ in 0..20 {
            let t = Instant::now();
            *l.write() += 1;
            assert!(t.elapsed() < Duration::from_secs(5), "writer starved");
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        // A stream of writers.
        stop.store(false, Ordering::Relaxed);
        let writers: Vec<_> = (0..3)
            .map(|_| {
                let (l, stop) = (l.clone(), stop.clone());
                rt.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let mut g = l.write();
                        *g += 1;
                        eevdf_rt::yield_now();
                    }
                })
            })
            .collect();
        for _ in 0..20 {
            let t = Instant::now();
            drop(l.read());
            assert!(t.elapsed() < Duration::from_secs(5), "reader starved");
        }
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
    });
}

// ---- Barrier --------------------------------------------------------------

#[test]
fn barrier_one_leader_per_generation_mixed_threads() {
    within(Duration::from_secs(60), || {
        let rt = rt();
        let n = 6;
        let gens = 200;
        let b = Arc::new(Barrier::new(n));
        let phase = Arc::new(AtomicUsize::new(0));
        let leaders = Arc::new(AtomicUsize::new(0));
        let mut hs = Vec::new();
        for i in 0..n {
            let (b, phase, leaders) = (b.clone(), phase.clone(), leaders.clone());
            let f = move || {
                for g in 0..gens {
                    // Nobody may be a whole generation ahead.
                    assert!(phase.load(Ordering::SeqCst) / n >= g);
                    phase.fetch_add(1, Ordering::SeqCst);
                    if b.wait().is_leader() {
                        leaders.fetch_add(1, Ordering::SeqCst);
                    }
                    assert!(phase.load(Ordering::SeqCst) >= (g + 1) * n);
                }
            };
            if i < 4 {
                hs.push(H::Green(rt.spawn(f)));
            } else {
                hs.push(H::Os(std::thread::spawn(f)));
            }
        }
        for h in hs {
            h.join();
        }
        assert_eq!(leaders.load(Ordering::SeqCst), gens);
    });
}

#[test]
fn barrier_of_one_never_waits() {
    let b = Barrier::new(1);
    assert!(b.wait().is_leader());
    assert!(b.wait().is_leader());
    assert!(Barrier::new(0).wait().is_leader());
}

// ---- Semaphore ------------------------------------------------------------

#[test]
fn semaphore_basics() {
    let s = Semaphore::new(2);
    let a = s.acquire();
    let b = s.try_acquire().unwrap();
    assert!(s.try_acquire().is_none());
    assert_eq!(s.available_permits(), 0);
    let t = Instant::now();
    assert!(s.acquire_timeout(Duration::from_millis(20)).is_none());
    assert!(t.elapsed() >= Duration::from_millis(20));
    drop(a);
    assert_eq!(s.available_permits(), 1);
    b.forget();
    assert_eq!(s.available_permits(), 1);
    s.release();
    assert_eq!(s.available_permits(), 2);
}

#[test]
fn semaphore_release_beyond_the_limit_panics_clearly_and_keeps_the_count() {
    let s = Semaphore::new(usize::MAX >> 1);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.release()));
    let p = r.expect_err("a release past the limit must not wrap the count");
    let msg = p
        .downcast_ref::<&str>()
        .map(|m| m.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    assert!(msg.contains("too many permits"), "{msg}");
    assert_eq!(s.available_permits(), usize::MAX >> 1);
    // Still usable at the limit.
    s.acquire().forget();
    s.release();
    assert_eq!(s.available_permits(), usize::MAX >> 1);
}

#[test]
fn semaphore_limits_concurrency() {
    within(Duration::from_secs(60), || {
        let rt = rt();
        let s = Arc::new(Semaphore::new(3));
        let inside = Arc::new(AtomicUsize::new(0));
        let max = Arc::new(AtomicUsize::new(0));
        let mut hs = Vec::new();
        for i in 0..10 {
            let (s, inside, max) = (s.clone(), inside.clone(), max.clone());
            let f = move || {
                for _ in 0..1_000 {
                    let _p = s.acquire();
                    let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    max.fetch_max(n, Ordering::SeqCst);
                    eevdf_rt::yield_now();
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
            };
            if i < 8 {
                hs.push(H::Green(rt.spawn(f)));
            } else {
                hs.push(H::Os(std::thread::spawn(f)));
            }
        }
        for h in hs {
            h.join();
        }
        assert!(max.load(Ordering::SeqCst) <= 3);
        assert_eq!(s.available_permits(), 3);
    });
}

#[test]
fn semaphore_release_wakes_a_sleeper_and_timeouts_leave_no_trace() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let s = Arc::new(Semaphore::new(0));
        // Sleepers that time out must not swallow later permits.
        let s2 = s.clone();
        let timed: Vec<_> = (0..3)
            .map(|_| {
                let s = s2.clone();
                rt.spawn(move || s.acquire_timeout(Duration::from_millis(10)).is_some())
            })
            .collect();
        for t in timed {
            assert!(!t.join().unwrap());
        }
        let s3 = s.clone();
        let h = rt.spawn(move || s3.acquire().forget());
        std::thread::sleep(Duration::from_millis(10));
        assert!(!h.is_finished());
        s.release();
        h.join().unwrap();
        assert_eq!(s.available_permits(), 0);
        s.release();
        assert_eq!(s.available_permits(), 1);
    });
}
