//! `eevdf_rt::sync::Futex`: exact wake counts, timeouts, mixed green/OS
//! waiters, and the schbench one-token semaphore under stress.

use eevdf_rt::sync::Futex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::within;

fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `green` green threads and `os` OS threads each wait once on a word
/// whose value never changes (only a wake releases them); then
/// wake(2) == 2, wake(10) == rest, wake(1) == 0.
fn exact_counts(green: usize, os: usize) {
    let rt = rt();
    let word = Arc::new(AtomicU32::new(0));
    let arrived = Arc::new(AtomicUsize::new(0));
    let released = Arc::new(AtomicUsize::new(0));
    let waiter = {
        let (word, arrived, released) = (word.clone(), arrived.clone(), released.clone());
        move || {
            arrived.fetch_add(1, Ordering::SeqCst);
            Futex::wait(&word, 0);
            released.fetch_add(1, Ordering::SeqCst);
        }
    };
    let gs: Vec<_> = (0..green).map(|_| rt.spawn(waiter.clone())).collect();
    let os: Vec<_> = (0..os)
        .map(|_| std::thread::spawn(waiter.clone()))
        .collect();
    let n = green + os.len();
    wait_for("arrivals", || arrived.load(Ordering::SeqCst) == n);
    // Arrived means at most a few instructions from queueing (a green
    // thread has no switch point between the two): let them get there.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(Futex::wake(&word, 2), 2);
    wait_for("two releases", || released.load(Ordering::SeqCst) == 2);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        released.load(Ordering::SeqCst),
        2,
        "a wake(2) released more than two"
    );
    assert_eq!(Futex::wake(&word, 10), n - 2);
    assert_eq!(Futex::wake(&word, 1), 0);
    for g in gs {
        g.join().unwrap();
    }
    for o in os {
        o.join().unwrap();
    }
    assert_eq!(released.load(Ordering::SeqCst), n);
}

#[test]
fn wake_counts_are_exact_green() {
    within(Duration::from_secs(30), || exact_counts(5, 0));
}

#[test]
fn wake_counts_are_exact_mixed_green_and_os() {
    within(Duration::from_secs(30), || exact_counts(3, 2));
}

#[test]
fn wait_returns_at_once_when_the_value_differs() {
    let rt = rt();
    let a = Arc::new(AtomicU32::new(5));
    let a2 = a.clone();
    rt.block_on(move || Futex::wait(&a2, 4));
    Futex::wait(&a, 4);
    assert!(!Futex::wait_timeout(&a, 4, Duration::from_secs(10)));
}

#[test]
fn timed_wait_times_out() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let a = Arc::new(AtomicU32::new(0));
        let a2 = a.clone();
        let (timed_out, e) = rt.block_on(move || {
            let t = Instant::now();
            (
                Futex::wait_timeout(&a2, 0, Duration::from_millis(30)),
                t.elapsed(),
            )
        });
        assert!(timed_out);
        assert!(
            e >= Duration::from_millis(30) && e < Duration::from_secs(5),
            "{e:?}"
        );
        let t = Instant::now();
        assert!(Futex::wait_timeout(&a, 0, Duration::from_millis(30)));
        let e = t.elapsed();
        assert!(
            e >= Duration::from_millis(30) && e < Duration::from_secs(5),
            "{e:?}"
        );
        // The timed-out nodes are gone.
        assert_eq!(Futex::wake(&a, 10), 0);
    });
}

#[test]
fn timed_wait_woken_before_timeout_reports_woken() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let a = Arc::new(AtomicU32::new(0));
        let a2 = a.clone();
        let h = rt.spawn(move || Futex::wait_timeout(&a2, 0, Duration::from_secs(20)));
        let t = Instant::now();
        while Futex::wake(&a, 1) == 0 {
            assert!(t.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!h.join().unwrap());
    });
}

#[test]
fn wake_on_another_word_does_not_wake() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        // Many words: some share buckets with `a`.
        let words: Arc<Vec<AtomicU32>> = Arc::new((0..1024).map(|_| AtomicU32::new(0)).collect());
        let w2 = words.clone();
        let h = rt.spawn(move || Futex::wait_timeout(&w2[0], 0, Duration::from_secs(20)));
        std::thread::sleep(Duration::from_millis(20));
        for w in &words[1..] {
            assert_eq!(Futex::wake(w, usize::MAX), 0);
        }
        assert!(!h.is_finished());
        words[0].store(1, Ordering::SeqCst);
        assert_eq!(Futex::wake_all(&words[0]), 1);
        assert!(!h.join().unwrap());
    });
}

/// Waiters on one word are woken oldest first, one at a time: wake(1)
/// takes the oldest sleeper on that word and skips sleepers on other
/// words of the same bucket.
#[test]
fn wake_one_takes_the_oldest_waiter_of_the_word() {
    within(Duration::from_secs(30), || {
        let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        let order = rt.block_on(|| {
            let words: Arc<Vec<AtomicU32>> = Arc::new((0..2).map(|_| AtomicU32::new(0)).collect());
            let woken = Arc::new(std::sync::Mutex::new(Vec::new()));
            let parked = Arc::new(AtomicUsize::new(0));
            let mut hs = Vec::new();
            // interleave waiters on word 0 (ids 0, 2, 4) and word 1 (1, 3)
            for id in 0..5usize {
                let (w, woken, arrived) = (words.clone(), woken.clone(), parked.clone());
                hs.push(eevdf_rt::spawn(move || {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    // one worker: nothing runs between the count and the park
                    while w[id % 2].load(Ordering::SeqCst) == 0 {
                        Futex::wait(&w[id % 2], 0);
                    }
                    woken.lock().unwrap().push(id);
                }));
                while parked.load(Ordering::SeqCst) <= id {
                    eevdf_rt::yield_now();
                }
            }
            words[0].store(1, Ordering::SeqCst);
            for k in 1..=3 {
                assert_eq!(Futex::wake(&words[0], 1), 1);
                // the woken one records itself before the next wake
                while woken.lock().unwrap().len() < k {
                    eevdf_rt::yield_now();
                }
            }
            assert_eq!(Futex::wake(&words[0], 1), 0, "word 0 has no waiter left");
            words[1].store(1, Ordering::SeqCst);
            assert_eq!(Futex::wake_all(&words[1]), 2);
            for h in hs {
                h.join().unwrap();
            }
            let v = woken.lock().unwrap().clone();
            v
        });
        assert_eq!(&order[..3], &[0, 2, 4], "word 0's waiters, oldest first");
        assert_eq!(order.len(), 5);
    });
}

/// schbench's post/wait protocol between green threads and OS threads:
/// every post is consumed by exactly one wait, nothing hangs.
#[test]
fn one_token_semaphore_ping_pong() {
    fn post(w: &AtomicU32) {
        if w.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            Futex::wake(w, 1);
        }
    }
    fn wait(w: &AtomicU32) {
        while w
            .compare_exchange(1, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            Futex::wait(w, 0);
        }
    }
    within(Duration::from_secs(60), || {
        let rt = rt();
        let rounds = 20_000;
        // Pairs: green<->green (2), green<->OS (1).
        let mut hs = Vec::new();
        let mut os = Vec::new();
        for kind in 0..3 {
            let ping = Arc::new(AtomicU32::new(0));
            let pong = Arc::new(AtomicU32::new(0));
            let (p1, q1) = (ping.clone(), pong.clone());
            hs.push(rt.spawn(move || {
                for _ in 0..rounds {
                    post(&p1);
                    wait(&q1);
                }
            }));
            let echo = move || {
                for _ in 0..rounds {
                    wait(&ping);
                    post(&pong);
                }
            };
            if kind < 2 {
                hs.push(rt.spawn(echo));
            } else {
                os.push(std::thread::spawn(echo));
            }
        }
        for h in hs {
            h.join().unwrap();
        }
        for o in os {
            o.join().unwrap();
        }
    });
}

/// Many waiters and wakers on a few words under the runtime's migration
/// and preemption: counts add up.
#[test]
fn stress_counts_add_up() {
    within(Duration::from_secs(60), || {
        let rt = rt();
        let word = Arc::new(AtomicU32::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let waiters = 16;
        let hs: Vec<_> = (0..waiters)
            .map(|_| {
                let (w, d) = (word.clone(), done.clone());
                rt.spawn(move || {
                    for _ in 0..200 {
                        let gen = w.load(Ordering::SeqCst);
                        Futex::wait_timeout(&w, gen, Duration::from_millis(5));
                    }
                    d.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        let mut woken = 0;
        while done.load(Ordering::SeqCst) < waiters {
            word.fetch_add(1, Ordering::SeqCst);
            woken += Futex::wake(&word, 3);
            std::thread::yield_now();
        }
        for h in hs {
            h.join().unwrap();
        }
        assert!(woken <= waiters * 200);
        assert_eq!(Futex::wake_all(&word), 0);
    });
}
