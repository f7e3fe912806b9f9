//! `eevdf_rt::sync::Condvar`: producer/consumer, timeouts, notify_all,
//! the `_while` variants, mixed green and OS threads.

use eevdf_rt::sync::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{within, H};

fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

/// A bounded queue made of a Mutex and two Condvars.
struct Queue {
    q: Mutex<(VecDeque<u64>, bool)>, // (items, closed)
    not_empty: Condvar,
    not_full: Condvar,
    cap: usize,
}

impl Queue {
    fn push(&self, v: u64) {
        let mut g = self
            .not_full
            .wait_while(self.q.lock(), |(q, _)| q.len() >= self.cap);
        g.0.push_back(v);
        drop(g);
        self.not_empty.notify_one();
    }
    fn pop(&self) -> Option<u64> {
        let mut g = self
            .not_empty
            .wait_while(self.q.lock(), |(q, closed)| q.is_empty() && !*closed);
        let v = g.0.pop_front();
        drop(g);
        if v.is_some() {
            self.not_full.notify_one();
        }
        v
    }
    fn close(&self) {
        self.q.lock().1 = true;
        self.not_empty.notify_all();
    }
}

#[test]
fn producers_and_consumers() {
    within(Duration::from_secs(60), || {
        let rt = rt();
        let q = Arc::new(Queue {
            q: Mutex::new((VecDeque::new(), false)),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            cap: 4,
        });
        let per = 20_000u64;
        // 3 green producers + 1 OS producer; 3 green consumers + 1 OS consumer.
        let mut producers = Vec::new();
        for p in 0..3 {
            let q = q.clone();
            producers.push(rt.spawn(move || (0..per).for_each(|i| q.push(p * per + i))));
        }
        let qo = q.clone();
        let os_producer = std::thread::spawn(move || (0..per).for_each(|i| qo.push(3 * per + i)));
        let mut consumers = Vec::new();
        for _ in 0..3 {
            let q = q.clone();
            consumers.push(rt.spawn(move || {
                let mut v = Vec::new();
                while let Some(x) = q.pop() {
                    v.push(x);
                }
                v
            }));
        }
        let qo = q.clone();
        let os_consumer = std::thread::spawn(move || {
            let mut v = Vec::new();
            while let Some(x) = qo.pop() {
                v.push(x);
            }
            v
        });
        for p in producers {
            p.join().unwrap();
        }
        os_producer.join().unwrap();
        q.close();
        let mut all: Vec<u64> = consumers
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .chain(os_consumer.join().unwrap())
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..4 * per).collect::<Vec<_>>());
    });
}

#[test]
fn wait_timeout_returns_on_time_and_reports_it() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let pair = Arc::new((Mutex::new(0), Condvar::new()));
        let p2 = pair.clone();
        let (timed_out, e) = rt.block_on(move || {
            let (m, cv) = &*p2;
            let t = Instant::now();
            let (g, timed_out) = cv.wait_timeout(m.lock(), Duration::from_millis(30));
            assert_eq!(*g, 0);
            (timed_out, t.elapsed())
        });
        assert!(timed_out);
        assert!(
            e >= Duration::from_millis(30) && e < Duration::from_secs(5),
            "{e:?}"
        );
        // From an OS thread too.
        let (m, cv) = &*pair;
        let t = Instant::now();
        let (_g, timed_out) = cv.wait_timeout(m.lock(), Duration::from_millis(30));
        assert!(timed_out);
        assert!(t.elapsed() >= Duration::from_millis(30));
    });
}

#[test]
fn wait_timeout_notified_in_time_is_not_a_timeout() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let p2 = pair.clone();
        let h = rt.spawn(move || {
            let (m, cv) = &*p2;
            let (g, timed_out) =
                cv.wait_timeout_while(m.lock(), Duration::from_secs(20), |ready| !*ready);
            assert!(*g);
            timed_out
        });
        std::thread::sleep(Duration::from_millis(10));
        let (m, cv) = &*pair;
        *m.lock() = true;
        cv.notify_one();
        assert!(!h.join().unwrap());
    });
}

#[test]
fn wait_timeout_while_times_out_with_condition_still_true() {
    let (m, cv) = (Mutex::new(1), Condvar::new());
    let t = Instant::now();
    let (g, timed_out) = cv.wait_timeout_while(m.lock(), Duration::from_millis(20), |v| *v == 1);
    assert!(timed_out && *g == 1);
    assert!(t.elapsed() >= Duration::from_millis(20));
}

#[test]
fn notify_all_wakes_everyone() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let pair = Arc::new((Mutex::new((false, 0usize)), Condvar::new()));
        let mut hs = Vec::new();
        for i in 0..10 {
            let p = pair.clone();
            let f = move || {
                let (m, cv) = &*p;
                let mut g = m.lock();
                g.1 += 1;
                while !g.0 {
                    g = cv.wait(g);
                }
            };
            if i < 8 {
                hs.push(H::Green(rt.spawn(f)));
            } else {
                hs.push(H::Os(std::thread::spawn(f)));
            }
        }
        let (m, cv) = &*pair;
        let t = Instant::now();
        while m.lock().1 < 10 {
            assert!(t.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(1));
        }
        m.lock().0 = true;
        cv.notify_all();
        for h in hs {
            h.join();
        }
    });
}

#[test]
fn notify_one_wakes_one() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let pair = Arc::new((Mutex::new((0usize, 0usize)), Condvar::new())); // (tickets, waiting)
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let p = pair.clone();
                rt.spawn(move || {
                    let (m, cv) = &*p;
                    let mut g = m.lock();
                    g.1 += 1;
                    g = cv.wait_while(g, |(tickets, _)| *tickets == 0);
                    g.0 -= 1;
                })
            })
            .collect();
        let (m, cv) = &*pair;
        while m.lock().1 < 4 {
            std::thread::sleep(Duration::from_millis(1));
        }
        for _ in 0..4 {
            m.lock().0 += 1;
            cv.notify_one();
        }
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(m.lock().0, 0);
    });
}
