//! The timer futures (`eevdf_rt::time`): sleep, sleep_until, timeout,
//! interval, under `block_on_future` in green threads and on OS threads,
//! with cancellation and reset; and `spawn_future`.

use eevdf_rt::time::{interval, sleep, sleep_until, timeout, Elapsed};
use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::{Duration, Instant};

mod common;
use common::within;

const LIMIT: Duration = Duration::from_secs(60);

fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

#[test]
fn sleep_waits_at_least_its_duration_in_a_green_thread() {
    within(LIMIT, || {
        let rt = rt();
        let e = rt.block_on(|| {
            let t = Instant::now();
            eevdf_rt::block_on_future(sleep(Duration::from_millis(20)));
            t.elapsed()
        });
        assert!(e >= Duration::from_millis(20), "{e:?}");
        assert!(e < Duration::from_secs(10), "{e:?}");
    });
}

#[test]
fn sleep_works_on_an_os_thread_without_a_runtime() {
    within(LIMIT, || {
        let t = Instant::now();
        eevdf_rt::block_on_future(async {
            sleep(Duration::from_millis(10)).await;
            sleep_until(Instant::now() + Duration::from_millis(10)).await;
        });
        assert!(t.elapsed() >= Duration::from_millis(20));
    });
}

#[test]
fn a_past_deadline_is_ready_at_once() {
    let mut s = sleep_until(Instant::now() - Duration::from_millis(1));
    let w = std::task::Waker::noop();
    let mut cx = Context::from_waker(w);
    assert!(Pin::new(&mut s).poll(&mut cx).is_ready());
    assert!(s.is_elapsed());
}

#[test]
fn timeout_elapses_and_drops_the_inner_future() {
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            struct Flag(std::sync::Arc<std::sync::atomic::AtomicBool>);
            impl Drop for Flag {
                fn drop(&mut self) {
                    self.0.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
            let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let guard = Flag(dropped.clone());
            let t = Instant::now();
            let r = eevdf_rt::block_on_future(timeout(Duration::from_millis(10), async move {
                let _g = guard;
                std::future::pending::<()>().await
            }));
            assert_eq!(r, Err(Elapsed::from_test()));
            assert!(t.elapsed() >= Duration::from_millis(10));
            assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
            let r = eevdf_rt::block_on_future(timeout(Duration::from_secs(30), async {
                sleep(Duration::from_millis(1)).await;
                5
            }));
            assert_eq!(r, Ok(5));
        });
    });
}

/// `Elapsed` has no public constructor; get one from a zero timeout.
trait FromTest {
    fn from_test() -> Self;
}
impl FromTest for Elapsed {
    fn from_test() -> Elapsed {
        eevdf_rt::block_on_future(timeout(Duration::ZERO, std::future::pending::<()>()))
            .unwrap_err()
    }
}

#[test]
fn interval_keeps_its_schedule() {
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            eevdf_rt::block_on_future(async {
                let start = Instant::now();
                let mut iv = interval(Duration::from_millis(5));
                let first = iv.tick().await;
                let mut last = first;
                for n in 1..=6u32 {
                    last = iv.tick().await;
                    assert_eq!(last - first, Duration::from_millis(5) * n);
                }
                assert!(Instant::now() >= last);
                assert!(start.elapsed() >= Duration::from_millis(30));
            })
        });
    });
}

#[test]
fn reset_moves_the_deadline_both_ways() {
    within(LIMIT, || {
        eevdf_rt::block_on_future(async {
            let mut s = Box::pin(sleep(Duration::from_secs(3600)));
            // Arm it, then pull it in.
            let w = std::task::Waker::noop();
            assert!(s.as_mut().poll(&mut Context::from_waker(w)).is_pending());
            let t = Instant::now();
            s.as_mut().reset(Instant::now() + Duration::from_millis(5));
            s.as_mut().await;
            assert!(t.elapsed() >= Duration::from_millis(5));
            assert!(t.elapsed() < Duration::from_secs(600));
            // A completed sleep can be reset and awaited again.
            s.as_mut().reset(Instant::now() + Duration::from_millis(5));
            s.as_mut().await;
        });
    });
}

#[test]
fn many_concurrent_sleeps_and_cancellations_all_resolve() {
    within(LIMIT, || {
        let rt = rt();
        let done = rt.block_on(|| {
            let hs: Vec<_> = (0..400u64)
                .map(|i| {
                    eevdf_rt::spawn_future(async move {
                        // A third sleep, a third time out, and a third
                        // cancel their (long) timer by finishing first.
                        let d = Duration::from_micros(200 + (i * 37) % 3000);
                        match i % 3 {
                            0 => {
                                sleep(d).await;
                                true
                            }
                            1 => timeout(d, std::future::pending::<()>()).await.is_err(),
                            _ => timeout(Duration::from_secs(60), sleep(d)).await.is_ok(),
                        }
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap())
                .filter(|&b| b)
                .count()
        });
        assert_eq!(done, 400);
    });
}

#[test]
fn spawn_future_runs_on_the_runtime_with_its_options() {
    within(LIMIT, || {
        let rt = rt();
        let (nice, v) = rt.block_on(|| {
            let h = eevdf_rt::spawn_future(async {
                eevdf_rt::set_nice(7).unwrap();
                sleep(Duration::from_millis(1)).await;
                (eevdf_rt::current().nice(), 41 + 1)
            });
            h.join().unwrap()
        });
        assert_eq!((nice, v), (7, 42));
    });
}

#[test]
#[should_panic(expected = "spawn_future called outside a runtime")]
fn spawn_future_outside_a_runtime_panics_with_a_message() {
    drop(eevdf_rt::spawn_future(async {}));
}

/// A user's waker that panics when the timer thread fires it does not end
/// that thread: timer futures created afterwards still fire.
#[test]
fn a_waker_that_panics_does_not_stop_the_timers() {
    use std::sync::Arc;
    use std::task::{Wake, Waker};
    struct Bomb;
    impl Wake for Bomb {
        fn wake(self: Arc<Self>) {
            panic!("this waker panics on purpose");
        }
    }
    let waker = Waker::from(Arc::new(Bomb));
    let mut s = Box::pin(sleep(Duration::from_millis(1)));
    assert!(s
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    std::thread::sleep(Duration::from_millis(50));
    within(LIMIT, || {
        eevdf_rt::block_on_future(sleep(Duration::from_millis(5)));
    });
}

/// A waker that records that it was woken.
struct Flag(std::sync::atomic::AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Resetting a pending `Sleep` wakes the task that waits on it at the new
/// deadline without another poll (as tokio's does), and at once for a
/// deadline that has passed.
#[test]
fn a_reset_wakes_the_waiting_task_without_another_poll() {
    use std::sync::atomic::Ordering::SeqCst;
    use std::sync::Arc;
    within(LIMIT, || {
        for (later, past) in [(Duration::from_millis(20), false), (Duration::ZERO, true)] {
            let flag = Arc::new(Flag(std::sync::atomic::AtomicBool::new(false)));
            let waker = std::task::Waker::from(flag.clone());
            let mut cx = Context::from_waker(&waker);
            let mut s = sleep(Duration::from_secs(3600));
            assert!(Pin::new(&mut s).poll(&mut cx).is_pending());
            let deadline = if past {
                Instant::now() - Duration::from_millis(1)
            } else {
                Instant::now() + later
            };
            s.reset(deadline);
            let t = Instant::now();
            while !flag.0.load(SeqCst) && t.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(flag.0.load(SeqCst), "not woken (past deadline: {past})");
            assert!(Pin::new(&mut s).poll(&mut cx).is_ready());
        }
    });
}
