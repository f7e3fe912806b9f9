//! `JoinHandle` as a future: awaiting green threads, `spawn_future` tasks
//! and blocking jobs from `block_on_future` on OS and green threads, panics
//! and cancellation as `Err`, a re-poll with a new waker, and a handle
//! dropped while pending (its waker released, never woken).

use futures::channel::oneshot;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

mod common;
use common::within;

fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

/// A waker that counts its wakes.
#[derive(Default)]
struct CountingWaker {
    wakes: AtomicUsize,
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll_once<F: Future + Unpin>(f: &mut F, w: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(w))
}

#[test]
fn await_a_green_thread_from_an_os_thread() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (tx, rx) = oneshot::channel::<()>();
        let h = rt.spawn(move || {
            // Still running when the OS thread first polls.
            eevdf_rt::block_on_future(rx).unwrap();
            6 * 7
        });
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send(()).unwrap();
        });
        let v = eevdf_rt::block_on_future(async move { h.await.unwrap() });
        assert_eq!(v, 42);
        t.join().unwrap();
    });
}

#[test]
fn await_from_spawn_future_and_from_a_green_thread() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let v = rt.block_on(|| {
            let outer = eevdf_rt::spawn_future(async {
                let green = eevdf_rt::spawn(|| {
                    eevdf_rt::sleep(Duration::from_millis(5));
                    20
                });
                let fut = eevdf_rt::spawn_future(async {
                    eevdf_rt::time::sleep(Duration::from_millis(5)).await;
                    22
                });
                green.await.unwrap() + fut.await.unwrap()
            });
            // A green thread awaiting the spawn_future task.
            eevdf_rt::block_on_future(outer).unwrap()
        });
        assert_eq!(v, 42);
    });
}

#[test]
fn many_awaits_across_workers() {
    within(Duration::from_secs(60), || {
        let rt = rt();
        let sum = rt.block_on(|| {
            eevdf_rt::block_on_future(async {
                let hs: Vec<_> = (0..200u64)
                    .map(|i| {
                        eevdf_rt::spawn(move || {
                            if i % 3 == 0 {
                                eevdf_rt::yield_now();
                            }
                            i
                        })
                    })
                    .collect();
                let mut sum = 0;
                for h in hs {
                    sum += h.await.unwrap();
                }
                sum
            })
        });
        assert_eq!(sum, (0..200).sum::<u64>());
    });
}

#[test]
fn a_panic_is_the_err_of_the_await() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let h = rt.spawn(|| -> u32 { panic!("boom in a green thread") });
        let err = eevdf_rt::block_on_future(h).unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"boom in a green thread"));
        let err = rt.block_on(|| {
            eevdf_rt::block_on_future(async {
                eevdf_rt::spawn_future(async { panic!("boom in a future") }).await
            })
        });
        assert_eq!(
            err.unwrap_err().downcast_ref::<&str>(),
            Some(&"boom in a future")
        );
    });
}

#[test]
fn a_blocking_job_can_be_awaited() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let v = rt.block_on(|| {
            eevdf_rt::block_on_future(async {
                eevdf_rt::task::spawn_blocking(|| {
                    std::thread::sleep(Duration::from_millis(5));
                    "done"
                })
                .await
                .unwrap()
            })
        });
        assert_eq!(v, "done");
    });
}

#[test]
fn repolled_with_a_new_waker_wakes_only_the_new_one() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (tx, rx) = oneshot::channel::<()>();
        let mut h = rt.spawn(move || eevdf_rt::block_on_future(rx).unwrap());
        let a = Arc::new(CountingWaker::default());
        let b = Arc::new(CountingWaker::default());
        let wa = Waker::from(a.clone());
        let wb = Waker::from(b.clone());
        assert!(poll_once(&mut h, &wa).is_pending());
        assert!(poll_once(&mut h, &wb).is_pending());
        // The packet let go of the old waker at the re-poll.
        drop(wa);
        assert_eq!(Arc::strong_count(&a), 1, "the old waker is still held");
        tx.send(()).unwrap();
        while b.wakes.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(a.wakes.load(Ordering::SeqCst), 0);
        assert!(matches!(poll_once(&mut h, &wb), Poll::Ready(Ok(()))));
    });
}

#[test]
fn dropped_while_pending_releases_its_waker_and_detaches() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (tx, rx) = oneshot::channel::<()>();
        let (done_tx, done_rx) = oneshot::channel::<u32>();
        let mut h = rt.spawn(move || {
            eevdf_rt::block_on_future(rx).unwrap();
            let _ = done_tx.send(7);
            7
        });
        let c = Arc::new(CountingWaker::default());
        let w = Waker::from(c.clone());
        assert!(poll_once(&mut h, &w).is_pending());
        drop(w);
        assert_eq!(Arc::strong_count(&c), 2, "the packet holds the waker");
        drop(h);
        assert_eq!(
            Arc::strong_count(&c),
            1,
            "the dropped future's waker is still held"
        );
        // The thread runs on, detached, and nobody wakes the old waker.
        tx.send(()).unwrap();
        assert_eq!(eevdf_rt::block_on_future(done_rx), Ok(7));
        assert_eq!(c.wakes.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn a_thread_cancelled_at_shutdown_is_an_err() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (_tx, rx) = oneshot::channel::<()>();
        let h = rt.spawn(move || {
            // Never completed: the runtime shuts down under it.
            let _ = eevdf_rt::block_on_future(rx);
        });
        std::thread::sleep(Duration::from_millis(10));
        let waiter = std::thread::spawn(move || eevdf_rt::block_on_future(h));
        std::thread::sleep(Duration::from_millis(10));
        rt.shutdown();
        let err = waiter.join().unwrap().unwrap_err();
        assert!(err.downcast_ref::<eevdf_rt::Cancelled>().is_some());
    });
}

/// A waker that panics when woken (a buggy executor's, say).
struct PanickingWaker;

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        panic!("a user's waker panics (expected in this test)");
    }
}

/// A handle awaited with a waker that panics: the green thread's completion
/// wakes it, and the panic ends there. The worker goes on (a new task
/// runs, the finished one leaves the registry), as does a blocking-pool
/// thread (its only slot takes the next job).
#[test]
fn a_panicking_waker_on_a_handle_stops_neither_a_worker_nor_the_pool() {
    within(Duration::from_secs(60), || {
        let rt = eevdf_rt::Builder::new()
            .workers(1)
            .max_blocking_threads(1)
            .build()
            .unwrap();
        let waker = Waker::from(Arc::new(PanickingWaker));
        let mut green = rt.spawn(|| {
            eevdf_rt::sleep(Duration::from_millis(30));
            7u32
        });
        let mut pooled = rt.spawn_blocking(|| {
            std::thread::sleep(Duration::from_millis(30));
            8u32
        });
        assert!(poll_once(&mut green, &waker).is_pending());
        assert!(poll_once(&mut pooled, &waker).is_pending());
        while !(green.is_finished() && pooled.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(rt.spawn(|| 5u32).join().unwrap(), 5, "the worker");
        assert_eq!(rt.spawn_blocking(|| 6u32).join().unwrap(), 6, "the pool");
        assert_eq!(green.join().unwrap(), 7);
        assert_eq!(pooled.join().unwrap(), 8);
        while rt.live_tasks() > 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    });
}
