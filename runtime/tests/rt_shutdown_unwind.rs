//! Shutdown unwinds green threads whose destructors block: a destructor
//! that sleeps, joins a child, waits for a lock or spawns runs to its end
//! instead of aborting the process, and one that waits for good delays
//! shutdown by a bounded time only.

mod common;

use common::{park_forever, with_timeout, Arrivals, OnDrop};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn rt(workers: usize) -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(workers).build().unwrap()
}

fn is_cancelled<T: std::fmt::Debug>(r: std::thread::Result<T>) -> bool {
    r.err()
        .is_some_and(|p| p.downcast_ref::<eevdf_rt::Cancelled>().is_some())
}

/// A destructor that sleeps, one that takes a contended lock, and one that
/// yields, all while shutdown unwinds their green threads: each runs to
/// its end (a forced unwind aborted the process at the first of them).
#[test]
fn destructors_that_sleep_lock_or_yield_during_shutdown_complete() {
    with_timeout(60, "blocking destructors", || {
        let rt = rt(2);
        let done = Arc::new(AtomicUsize::new(0));
        let lock = Arc::new(eevdf_rt::sync::Mutex::new(0u32));
        let arrived = Arrivals::new();
        let mut handles = Vec::new();
        for i in 0..6 {
            let (done, lock, arrived) = (done.clone(), lock.clone(), arrived.clone());
            handles.push(rt.spawn(move || {
                let _g = OnDrop(move || {
                    match i % 3 {
                        0 => eevdf_rt::sleep(Duration::from_millis(2)),
                        1 => *lock.lock() += 1,
                        _ => eevdf_rt::yield_now(),
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                });
                arrived.arrive();
                park_forever()
            }));
        }
        // One green thread holds the lock while it is unwound: the lock's
        // destructor-takers wait for its guard to drop.
        let (lock2, arrived2) = (lock.clone(), arrived.clone());
        let holder = rt.spawn(move || {
            let _held = lock2.lock();
            arrived2.arrive();
            park_forever()
        });
        arrived.wait_for(7);
        rt.shutdown();
        assert_eq!(
            done.load(Ordering::SeqCst),
            6,
            "every destructor ran to its end"
        );
        assert_eq!(*lock.lock(), 2);
        assert!(is_cancelled(holder.join()));
        for h in handles {
            assert!(is_cancelled(h.join()));
        }
        assert_eq!(rt.live_tasks(), 0);
    });
}

/// A scope guard that joins a child green thread when dropped, with both
/// parked at shutdown: a parent unwound before its child waits in the
/// join, and the child's unwinding in a later turn ends that wait.
#[test]
fn a_destructor_that_joins_a_child_during_shutdown_completes() {
    with_timeout(60, "join in drop", || {
        let rt = rt(2);
        let joined = Arc::new(AtomicUsize::new(0));
        let arrived = Arrivals::new();
        let mut parents = Vec::new();
        for _ in 0..50 {
            let (joined, arrived) = (joined.clone(), arrived.clone());
            parents.push(rt.spawn(move || {
                let kid_arrived = arrived.clone();
                let mut kid = Some(eevdf_rt::spawn(move || {
                    kid_arrived.arrive();
                    park_forever()
                }));
                let _g = OnDrop(move || {
                    if is_cancelled(kid.take().unwrap().join()) {
                        joined.fetch_add(1, Ordering::SeqCst);
                    }
                });
                arrived.arrive();
                park_forever()
            }));
        }
        arrived.wait_for(100);
        rt.shutdown();
        assert_eq!(joined.load(Ordering::SeqCst), 50);
        for h in parents {
            assert!(is_cancelled(h.join()));
        }
        assert_eq!(rt.live_tasks(), 0);
    });
}

/// A spawn of each kind in a destructor during shutdown.
type Spawner = fn(Arc<AtomicUsize>) -> eevdf_rt::JoinHandle<usize>;

/// `eevdf_rt::spawn`, `spawn_future` and `task::spawn_blocking` in a
/// destructor during shutdown do not panic (which would abort): the handle
/// reports `Cancelled`, and the closure or future never runs.
#[test]
fn a_spawn_in_a_destructor_during_shutdown_is_cancelled_not_a_panic() {
    let kinds: [(&str, Spawner); 3] = [
        ("spawn", |r| {
            eevdf_rt::spawn(move || r.fetch_add(1, Ordering::SeqCst))
        }),
        ("spawn_future", |r| {
            eevdf_rt::spawn_future(async move { r.fetch_add(1, Ordering::SeqCst) })
        }),
        ("spawn_blocking", |r| {
            eevdf_rt::task::spawn_blocking(move || r.fetch_add(1, Ordering::SeqCst))
        }),
    ];
    for (kind, spawner) in kinds {
        with_timeout(60, "spawn in drop", move || {
            let rt = rt(1);
            let outcome = Arc::new(AtomicUsize::new(0));
            let o = outcome.clone();
            let arrived = Arrivals::new();
            let a = arrived.clone();
            let h = rt.spawn(move || {
                let _g = OnDrop(move || {
                    let ran = Arc::new(AtomicUsize::new(0));
                    let child = spawner(ran.clone());
                    if is_cancelled(child.join()) && ran.load(Ordering::SeqCst) == 0 {
                        o.store(1, Ordering::SeqCst);
                    }
                });
                a.arrive();
                park_forever()
            });
            arrived.wait_for(1);
            rt.shutdown();
            assert_eq!(outcome.load(Ordering::SeqCst), 1, "{kind}");
            assert!(is_cancelled(h.join()), "{kind}");
        });
    }
}

/// A destructor that waits for something nothing will ever do holds
/// shutdown for a bounded time only; the other green threads are unwound.
#[test]
fn a_destructor_that_waits_for_good_delays_shutdown_by_a_bounded_time() {
    with_timeout(60, "stuck destructor", || {
        let rt = rt(1);
        let (tx, rx) = eevdf_rt::sync::channel::bounded::<()>(1);
        let arrived = Arrivals::new();
        let a = arrived.clone();
        let stuck = rt.spawn(move || {
            let _g = OnDrop(move || {
                let _ = rx.recv();
            });
            a.arrive();
            park_forever()
        });
        let dropped = Arc::new(AtomicUsize::new(0));
        let (d, a) = (dropped.clone(), arrived.clone());
        let other = rt.spawn(move || {
            let _g = OnDrop(move || {
                d.fetch_add(1, Ordering::SeqCst);
            });
            a.arrive();
            park_forever()
        });
        arrived.wait_for(2);
        let t = Instant::now();
        rt.shutdown();
        let took = t.elapsed();
        assert!(took < Duration::from_secs(20), "shutdown took {took:?}");
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        assert!(is_cancelled(other.join()));
        // The stuck one is left as it is (the sender keeps it waiting),
        // but its joiner is told: `Cancelled`, not a wait for good.
        assert!(is_cancelled(stuck.join()));
        drop(tx);
    });
}

/// A second `shutdown` while the first still unwinds green threads waits
/// until the first has finished: when either returns, every destructor
/// has run.
#[test]
fn a_shutdown_during_another_returns_after_it() {
    with_timeout(60, "concurrent shutdown", || {
        let rt = Arc::new(rt(1));
        let dropped = Arc::new(AtomicUsize::new(0));
        let d = dropped.clone();
        let arrived = Arrivals::new();
        let a = arrived.clone();
        let _h = rt.spawn(move || {
            let _g = OnDrop(move || {
                eevdf_rt::sleep(Duration::from_millis(300));
                d.fetch_add(1, Ordering::SeqCst);
            });
            a.arrive();
            park_forever()
        });
        arrived.wait_for(1);
        let first = {
            let rt = rt.clone();
            let d = dropped.clone();
            std::thread::spawn(move || {
                rt.shutdown();
                d.load(Ordering::SeqCst)
            })
        };
        // Most often the first call is under way by now; if the host held
        // that thread back, this call is the first, and the other one the
        // second: either way, each must return only after the destructor.
        std::thread::sleep(Duration::from_millis(50));
        rt.shutdown();
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "the second call returned early"
        );
        assert_eq!(first.join().unwrap(), 1, "the first call returned early");
        rt.shutdown(); // and later calls return at once
    });
}

/// The run queues' decision counters in `stats()` do not go back to zero
/// at shutdown (the queues are replaced by empty ones then).
#[test]
fn stats_keep_their_counts_after_shutdown() {
    with_timeout(60, "stats after shutdown", || {
        let rt = eevdf_rt::Builder::new()
            .workers(1)
            .handoff(None)
            .base_slice(Duration::from_micros(100))
            .build()
            .unwrap();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                rt.spawn(|| {
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(30) {
                        eevdf_rt::preempt_point();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let before = rt.stats().total();
        assert!(before.resched_slice > 0, "{before:?}");
        rt.shutdown();
        let after = rt.stats().total();
        assert!(after.picks >= before.picks);
        assert_eq!(after.resched_slice, before.resched_slice);
        assert_eq!(after.resched_protection, before.resched_protection);
        assert_eq!(after.resched_ineligible, before.resched_ineligible);
        assert_eq!(after.protection_shortened, before.protection_shortened);
    });
}
