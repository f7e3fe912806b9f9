//! `eevdf_rt::block_on_future`: futures woken from other threads, before
//! the park, before the first poll, many times; on green and OS threads.

use futures::channel::{mpsc as fmpsc, oneshot};
use futures::StreamExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

mod common;
use common::within;

fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

#[test]
fn oneshot_completed_by_an_os_thread_after_a_delay() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (tx, rx) = oneshot::channel::<u32>();
        // Timed from before the sender starts: the value cannot exist
        // sooner than 20 ms after this, however late the green thread runs.
        let start = Instant::now();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send(7).unwrap();
        });
        let (v, e) = rt.block_on(move || {
            let v = eevdf_rt::block_on_future(rx).unwrap();
            (v, start.elapsed())
        });
        assert_eq!(v, 7);
        assert!(e >= Duration::from_millis(20), "{e:?}");
        t.join().unwrap();
    });
}

#[test]
fn ready_before_the_first_poll() {
    let rt = rt();
    let (tx, rx) = oneshot::channel::<&str>();
    tx.send("early").unwrap();
    assert_eq!(
        rt.block_on(move || eevdf_rt::block_on_future(rx)),
        Ok("early")
    );
}

/// A future that wakes itself during its first poll and returns Pending:
/// the wake lands before the park and must not be lost.
struct WakesItselfOnce(bool);

impl Future for WakesItselfOnce {
    type Output = &'static str;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<&'static str> {
        if self.0 {
            Poll::Ready("done")
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

#[test]
fn woken_before_it_parks() {
    let rt = rt();
    assert_eq!(
        rt.block_on(|| eevdf_rt::block_on_future(WakesItselfOnce(false))),
        "done"
    );
    assert_eq!(eevdf_rt::block_on_future(WakesItselfOnce(false)), "done");
}

/// The waker is cloned to another thread and called many times, also
/// after the future finished.
#[test]
fn many_wakes_from_many_threads() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (tx, rx) = fmpsc::unbounded::<u32>();
        let senders: Vec<_> = (0..4)
            .map(|i| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for k in 0..500 {
                        tx.unbounded_send(i * 1000 + k).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        let sum = rt.block_on(move || {
            eevdf_rt::block_on_future(rx.fold(0u64, |a, v| async move { a + v as u64 }))
        });
        for s in senders {
            s.join().unwrap();
        }
        let expected: u64 = (0..4u64)
            .flat_map(|i| (0..500u64).map(move |k| i * 1000 + k))
            .sum();
        assert_eq!(sum, expected);
    });
}

#[test]
fn join_all_completed_by_green_and_os_threads() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let mut rxs = Vec::new();
        let mut txs = Vec::new();
        for _ in 0..6 {
            let (tx, rx) = oneshot::channel::<u32>();
            txs.push(tx);
            rxs.push(rx);
        }
        let waiter = rt.spawn(move || {
            let all = eevdf_rt::block_on_future(futures::future::join_all(rxs));
            all.into_iter().map(|r| r.unwrap()).sum::<u32>()
        });
        for (i, tx) in txs.into_iter().enumerate() {
            let i = i as u32;
            if i.is_multiple_of(2) {
                rt.spawn(move || {
                    eevdf_rt::sleep(Duration::from_millis(2));
                    tx.send(i).unwrap();
                });
            } else {
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(2));
                    tx.send(i).unwrap();
                });
            }
        }
        assert_eq!(waiter.join().unwrap(), 15);
    });
}

#[test]
fn os_thread_waits_for_a_green_thread() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (tx, rx) = oneshot::channel::<u32>();
        rt.spawn(move || {
            eevdf_rt::sleep(Duration::from_millis(5));
            tx.send(3).unwrap();
        });
        assert_eq!(eevdf_rt::block_on_future(rx), Ok(3));
    });
}

/// Two green threads ping-pong through futures channels, each blocking in
/// block_on_future: only the green threads park, the workers keep running.
#[test]
fn green_threads_ping_pong_through_futures() {
    within(Duration::from_secs(30), || {
        let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        let (mut a_tx, mut a_rx) = fmpsc::channel::<u32>(1);
        let (mut b_tx, mut b_rx) = fmpsc::channel::<u32>(1);
        let echo = rt.spawn(move || {
            eevdf_rt::block_on_future(async move {
                use futures::SinkExt;
                while let Some(v) = a_rx.next().await {
                    b_tx.send(v + 1).await.unwrap();
                }
            })
        });
        let total = rt.block_on(move || {
            eevdf_rt::block_on_future(async move {
                use futures::SinkExt;
                let mut t = 0;
                for i in 0..1000 {
                    a_tx.send(i).await.unwrap();
                    t += b_rx.next().await.unwrap();
                }
                t
            })
        });
        echo.join().unwrap();
        assert_eq!(total, (1..=1000).sum::<u32>());
    });
}

#[test]
fn shared_state_future_woken_via_arc_waker() {
    // A hand-written future completed by a green thread through a stored Waker.
    use std::sync::Mutex as StdMutex;
    struct Shared {
        value: Option<u32>,
        waker: Option<std::task::Waker>,
    }
    struct Fut(Arc<StdMutex<Shared>>);
    impl Future for Fut {
        type Output = u32;
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
            let mut s = self.0.lock().unwrap();
            match s.value {
                Some(v) => Poll::Ready(v),
                None => {
                    s.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        }
    }
    within(Duration::from_secs(30), || {
        let rt = rt();
        let shared = Arc::new(StdMutex::new(Shared {
            value: None,
            waker: None,
        }));
        let s2 = shared.clone();
        rt.spawn(move || {
            eevdf_rt::sleep(Duration::from_millis(5));
            let w = {
                let mut s = s2.lock().unwrap();
                s.value = Some(11);
                s.waker.take()
            };
            if let Some(w) = w {
                w.wake();
            }
        });
        let s3 = shared.clone();
        assert_eq!(rt.block_on(move || eevdf_rt::block_on_future(Fut(s3))), 11);
    });
}

/// Another task on a one-worker runtime, which yields in a loop: it counts
/// its turns, and the turns it got while `inside` was set (by code that
/// must not be switched out of). Hand-off is off on that runtime: code that
/// burns past its threshold would rightly give the worker's queue to a
/// standby thread, and the watcher would then run there, beside that code,
/// without any switch out of it.
struct Watcher {
    rt: eevdf_rt::Runtime,
    inside: Arc<AtomicBool>,
    violations: Arc<AtomicU32>,
    turns: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    task: eevdf_rt::JoinHandle<()>,
}

impl Watcher {
    fn start() -> Watcher {
        let rt = eevdf_rt::Builder::new()
            .workers(1)
            .handoff(None)
            .build()
            .unwrap();
        let inside = Arc::new(AtomicBool::new(false));
        let violations = Arc::new(AtomicU32::new(0));
        let turns = Arc::new(AtomicU32::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let task = {
            let (inside, violations, turns, stop) = (
                inside.clone(),
                violations.clone(),
                turns.clone(),
                stop.clone(),
            );
            rt.spawn(move || {
                while !stop.load(SeqCst) {
                    if inside.load(SeqCst) {
                        violations.fetch_add(1, SeqCst);
                    }
                    turns.fetch_add(1, SeqCst);
                    eevdf_rt::yield_now();
                }
            })
        };
        Watcher {
            rt,
            inside,
            violations,
            turns,
            stop,
            task,
        }
    }

    /// Runs `f` on the runtime with the flag to set while inside, then
    /// stops the watcher: its (turns while inside, turns).
    fn run(self, f: impl FnOnce(&AtomicBool) + Send + 'static) -> (u32, u32) {
        let (inside, stop) = (self.inside.clone(), self.stop.clone());
        self.rt.block_on(move || {
            f(&inside);
            stop.store(true, SeqCst);
        });
        self.task.join().unwrap();
        (self.violations.load(SeqCst), self.turns.load(SeqCst))
    }
}

/// Runs `call` 20 times (with the round's number and what `prepare` made
/// for it, outside the poll) inside a `block_on_future` poll that first
/// burns past a tick and the slice, so that a switch is due, beside a
/// [`Watcher`]: how often it ran while a poll was under way (a switch out
/// of the poll), and how often it ran at all.
fn runs_inside_polls<S>(
    mut prepare: impl FnMut(u32) -> S + Send + 'static,
    mut call: impl FnMut(u32, S) + Send + 'static,
) -> (u32, u32) {
    Watcher::start().run(move |inside| {
        for round in 0..20 {
            let mut made = Some(prepare(round));
            eevdf_rt::block_on_future(std::future::poll_fn(|_cx| {
                inside.store(true, SeqCst);
                common::burn(Duration::from_millis(3));
                call(round, made.take().unwrap());
                inside.store(false, SeqCst);
                Poll::Ready(())
            }));
            eevdf_rt::yield_now();
        }
    })
}

/// Inside a `block_on_future` poll the runtime's own preemption points — a
/// spawn, here, with a reschedule due — do not switch: nothing else runs
/// on the worker until the poll returns (a switch there could resume the
/// rest of the poll on another thread, `future` module docs). The poll's
/// end is still a preemption point: the other task gets its turns.
#[test]
fn a_spawn_inside_a_poll_does_not_switch_out_of_it() {
    within(Duration::from_secs(60), || {
        let (violations, turns) = runs_inside_polls(|_| (), |_, ()| drop(eevdf_rt::spawn(|| {})));
        assert_eq!(violations, 0, "another task ran inside a poll");
        assert!(turns > 0, "the other task never ran");
    });
}

/// `spawn_future` and the join of a finished task inside a poll, with a
/// reschedule due, do not switch out of the poll either (both are the
/// runtime's own preemption points, not blocking calls).
#[test]
fn a_spawn_future_or_a_finished_join_inside_a_poll_does_not_switch_out_of_it() {
    within(Duration::from_secs(60), || {
        let (violations, _) = runs_inside_polls(
            |round| {
                // A task that has finished before the poll joins it.
                (round % 2 == 1).then(|| {
                    let h = eevdf_rt::spawn(|| 3u32);
                    while !h.is_finished() {
                        eevdf_rt::yield_now();
                    }
                    h
                })
            },
            |_, finished| match finished {
                None => drop(eevdf_rt::spawn_future(async {})),
                Some(h) => assert_eq!(h.join().unwrap(), 3),
            },
        );
        assert_eq!(violations, 0, "another task ran inside a poll");
    });
}

/// `set_nice` and `set_slice` inside a poll, with a reschedule due, do not
/// switch out of it either (their preemption point is the runtime's own).
#[test]
fn set_nice_or_set_slice_inside_a_poll_does_not_switch_out_of_it() {
    within(Duration::from_secs(60), || {
        let (violations, _) = runs_inside_polls(
            |_| (),
            |round, ()| {
                if round % 2 == 0 {
                    eevdf_rt::set_nice(1).unwrap();
                } else {
                    eevdf_rt::set_slice(Duration::from_millis(1)).unwrap();
                }
            },
        );
        assert_eq!(violations, 0, "another task ran inside a poll");
    });
}

/// `preempt_point_async` in a future's long computation lets the other
/// tasks of the worker run, between polls only: never while the future
/// computes.
#[test]
fn preempt_point_async_yields_between_polls() {
    within(Duration::from_secs(60), || {
        let (violations, turns) = Watcher::start().run(|inside| {
            eevdf_rt::block_on_future(async move {
                for _ in 0..20 {
                    inside.store(true, SeqCst);
                    common::burn(Duration::from_millis(3));
                    inside.store(false, SeqCst);
                    eevdf_rt::preempt_point_async().await;
                }
            });
        });
        assert_eq!(violations, 0, "another task ran inside a poll");
        assert!(turns > 1, "the future never let the other task run");
    });
}
