//! Synchronisation benchmarks, eevdf-rt beside std, parking_lot and tokio
//! in one run.
//!
//! ```text
//! cargo bench -p eevdf-rt --bench sync                 # everything (~1.5 min)
//! cargo bench -p eevdf-rt --bench sync -- ping_pong    # one group
//! ```
//!
//! * `channel_ping_pong`: one message there and back (a round trip) between
//!   two parties blocked in `recv`: green threads on two workers (pinned
//!   one per worker), on one worker (both pinned to worker 0), and on two
//!   workers unpinned (the runtime places them: WA_SYNC keeps them on one);
//!   `std::sync::mpsc` between OS threads; tokio mpsc on a current_thread
//!   runtime and on a 2-worker multi_thread runtime. All channels have
//!   capacity 1.
//! * `futex_ping_pong`: the schbench post/wait one-token semaphore on
//!   `sync::Futex`, green threads (two workers, one worker) and OS threads;
//!   plus the two fast paths (a wake with nobody waiting, a wait whose
//!   value already differs).
//! * `mutex_contended`: 4 parties increment one counter under a mutex;
//!   the figure is time per lock+increment+unlock: green threads on two
//!   workers, `parking_lot::Mutex` between 4 OS threads, `tokio::sync::Mutex`
//!   with 4 tasks on a 2-worker multi_thread runtime; plus the uncontended
//!   green lock as a floor.
//!
//! Short measurement windows: the machines are small shared VMs; read the
//! figures as ratios, and rerun before trusting a difference under ~20%.

use criterion::{criterion_group, criterion_main, Criterion};
use eevdf_rt::sync::{channel, Futex, Mutex};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn green_rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

/// Spawns `f` pinned to `worker`, or placed by the runtime (`None`).
fn spawn_pinned<T: Send + 'static>(
    rt: &eevdf_rt::Runtime,
    worker: Option<usize>,
    f: impl FnOnce() -> T + Send + 'static,
) -> eevdf_rt::JoinHandle<T> {
    let b = eevdf_rt::task::Builder::new();
    match worker {
        Some(w) => b.pin(w),
        None => b,
    }
    .spawn_on(rt, f)
    .unwrap()
}

/// `iters` round trips between two green threads pinned to `a` and `b`
/// (`None`: unpinned, the runtime places them).
fn green_ping_pong(
    rt: &eevdf_rt::Runtime,
    a: Option<usize>,
    b: Option<usize>,
    iters: u64,
) -> Duration {
    let (to_echo, echo_rx) = channel::bounded::<u64>(1);
    let (echo_tx, from_echo) = channel::bounded::<u64>(1);
    let echo = spawn_pinned(rt, b, move || {
        while let Ok(v) = echo_rx.recv() {
            echo_tx.send(v).unwrap();
        }
    });
    let d = spawn_pinned(rt, a, move || {
        // One warm-up trip so both are parked in recv when timing starts.
        to_echo.send(0).unwrap();
        from_echo.recv().unwrap();
        let start = Instant::now();
        for i in 0..iters {
            to_echo.send(i).unwrap();
            from_echo.recv().unwrap();
        }
        start.elapsed()
    })
    .join()
    .unwrap();
    echo.join().unwrap();
    d
}

fn channel_ping_pong(c: &mut Criterion) {
    let mut g = c.benchmark_group("channel_ping_pong");
    let rt = green_rt();
    g.bench_function("green_2_workers", |b| {
        b.iter_custom(|iters| green_ping_pong(&rt, Some(0), Some(1), iters))
    });
    g.bench_function("green_same_worker", |b| {
        b.iter_custom(|iters| green_ping_pong(&rt, Some(0), Some(0), iters))
    });
    g.bench_function("green_2_workers_unpinned", |b| {
        b.iter_custom(|iters| green_ping_pong(&rt, None, None, iters))
    });
    g.bench_function("std_mpsc_os_threads", |b| {
        b.iter_custom(|iters| {
            let (to_echo, echo_rx) = std::sync::mpsc::sync_channel::<u64>(1);
            let (echo_tx, from_echo) = std::sync::mpsc::sync_channel::<u64>(1);
            let echo = std::thread::spawn(move || {
                while let Ok(v) = echo_rx.recv() {
                    echo_tx.send(v).unwrap();
                }
            });
            to_echo.send(0).unwrap();
            from_echo.recv().unwrap();
            let start = Instant::now();
            for i in 0..iters {
                to_echo.send(i).unwrap();
                from_echo.recv().unwrap();
            }
            let d = start.elapsed();
            drop(to_echo);
            echo.join().unwrap();
            d
        })
    });
    for (name, multi) in [
        ("tokio_current_thread", false),
        ("tokio_multi_thread", true),
    ] {
        let trt = if multi {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build()
                .unwrap()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
        };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                trt.block_on(async move {
                    let (to_echo, mut echo_rx) = tokio::sync::mpsc::channel::<u64>(1);
                    let (echo_tx, mut from_echo) = tokio::sync::mpsc::channel::<u64>(1);
                    let echo = tokio::spawn(async move {
                        while let Some(v) = echo_rx.recv().await {
                            echo_tx.send(v).await.unwrap();
                        }
                    });
                    let driver = tokio::spawn(async move {
                        to_echo.send(0).await.unwrap();
                        from_echo.recv().await.unwrap();
                        let start = Instant::now();
                        for i in 0..iters {
                            to_echo.send(i).await.unwrap();
                            from_echo.recv().await.unwrap();
                        }
                        start.elapsed()
                    });
                    let d = driver.await.unwrap();
                    echo.await.unwrap();
                    d
                })
            })
        });
    }
    g.finish();
}

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

/// `iters` post/wait round trips; `spawn` runs the echo side.
fn futex_round_trips(
    iters: u64,
    spawn_echo: impl FnOnce(Box<dyn FnOnce() + Send>),
    run_driver: impl FnOnce(Box<dyn FnOnce() -> Duration + Send>) -> Duration,
) -> Duration {
    let ping = Arc::new(AtomicU32::new(0));
    let pong = Arc::new(AtomicU32::new(0));
    let (p2, q2) = (ping.clone(), pong.clone());
    spawn_echo(Box::new(move || {
        for _ in 0..=iters {
            wait(&p2);
            post(&q2);
        }
    }));
    run_driver(Box::new(move || {
        post(&ping);
        wait(&pong);
        let start = Instant::now();
        for _ in 0..iters {
            post(&ping);
            wait(&pong);
        }
        start.elapsed()
    }))
}

fn futex_ping_pong(c: &mut Criterion) {
    let mut g = c.benchmark_group("futex_ping_pong");
    let rt = green_rt();
    for (name, a, b) in [
        ("green_2_workers", Some(0), Some(1)),
        ("green_same_worker", Some(0), Some(0)),
    ] {
        let rt = &rt;
        g.bench_function(name, |bn| {
            bn.iter_custom(|iters| {
                let mut echo = None;
                let d = futex_round_trips(
                    iters,
                    |f| echo = Some(spawn_pinned(rt, b, f)),
                    |f| spawn_pinned(rt, a, f).join().unwrap(),
                );
                echo.unwrap().join().unwrap();
                d
            })
        });
    }
    // The fast paths: nobody to wake (a fence and a load), and a wait
    // whose value already differs (bucket lock, check, unlock).
    let word = AtomicU32::new(1);
    g.bench_function("wake_nobody", |bn| bn.iter(|| Futex::wake(&word, 1)));
    g.bench_function("wait_value_differs", |bn| bn.iter(|| Futex::wait(&word, 0)));
    g.bench_function("os_threads", |bn| {
        bn.iter_custom(|iters| {
            let mut echo = None;
            let d = futex_round_trips(iters, |f| echo = Some(std::thread::spawn(f)), |f| f());
            echo.unwrap().join().unwrap();
            d
        })
    });
    g.finish();
}

const PARTIES: u64 = 4;

fn mutex_contended(c: &mut Criterion) {
    let mut g = c.benchmark_group("mutex_contended");
    let rt = green_rt();
    g.bench_function("green_uncontended", |b| {
        b.iter_custom(|iters| {
            rt.block_on(move || {
                let m = Mutex::new(0u64);
                let start = Instant::now();
                for _ in 0..iters {
                    *m.lock() += 1;
                }
                assert_eq!(*m.lock(), iters);
                start.elapsed()
            })
        })
    });
    g.bench_function("green_4_threads_2_workers", |b| {
        b.iter_custom(|iters| {
            let per = iters.div_ceil(PARTIES);
            let m = Arc::new(Mutex::new(0u64));
            let start = Instant::now();
            let hs: Vec<_> = (0..PARTIES)
                .map(|_| {
                    let m = m.clone();
                    rt.spawn(move || {
                        for _ in 0..per {
                            *m.lock() += 1;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            let d = start.elapsed();
            assert_eq!(*m.lock(), per * PARTIES);
            d
        })
    });
    g.bench_function("parking_lot_4_os_threads", |b| {
        b.iter_custom(|iters| {
            let per = iters.div_ceil(PARTIES);
            let m = Arc::new(parking_lot::Mutex::new(0u64));
            let start = Instant::now();
            let hs: Vec<_> = (0..PARTIES)
                .map(|_| {
                    let m = m.clone();
                    std::thread::spawn(move || {
                        for _ in 0..per {
                            *m.lock() += 1;
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            let d = start.elapsed();
            assert_eq!(*m.lock(), per * PARTIES);
            d
        })
    });
    let trt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    g.bench_function("tokio_4_tasks_multi_thread", |b| {
        b.iter_custom(|iters| {
            let per = iters.div_ceil(PARTIES);
            trt.block_on(async move {
                let m = Arc::new(tokio::sync::Mutex::new(0u64));
                let start = Instant::now();
                let hs: Vec<_> = (0..PARTIES)
                    .map(|_| {
                        let m = m.clone();
                        tokio::spawn(async move {
                            for _ in 0..per {
                                *m.lock().await += 1;
                            }
                        })
                    })
                    .collect();
                for h in hs {
                    h.await.unwrap();
                }
                let d = start.elapsed();
                assert_eq!(*m.lock().await, per * PARTIES);
                d
            })
        })
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = channel_ping_pong, futex_ping_pong, mutex_contended
}
criterion_main!(benches);
