//! Runtime micro-benchmarks, each beside its tokio / OS-thread counterpart
//! in the same run (issue: runtime core):
//!
//! * `switch/*`: a yield ping-pong of two tasks on one worker (ns per switch),
//!   and a yield alone on its worker (`green_yield_alone`: no switch);
//! * `spawn_join/*`: spawn an empty task and wait for it;
//! * `wake_round_trip/*`: two tasks on different workers waking each other.
//!
//! Run: `cargo bench -p eevdf-rt --bench runtime`.

use criterion::{criterion_group, criterion_main, Criterion};
use linux_futex::{AsFutex, Private};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

fn green(workers: usize) -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(workers).build().unwrap()
}

fn switch(c: &mut Criterion) {
    let mut g = c.benchmark_group("switch");
    let rt = green(1);
    g.bench_function("green_yield", |b| {
        b.iter_custom(|iters| {
            rt.block_on(move || {
                let h = eevdf_rt::spawn(move || {
                    for _ in 0..iters {
                        eevdf_rt::yield_now();
                    }
                });
                let t = Instant::now();
                for _ in 0..iters {
                    eevdf_rt::yield_now();
                }
                h.join().unwrap();
                // two switches per iteration: report per switch
                t.elapsed() / 2
            })
        })
    });
    // A yield with nothing else queued on the worker: no switch (EEVDF
    // would pick the yielder again), a preemption point's cost.
    g.bench_function("green_yield_alone", |b| {
        b.iter_custom(|iters| {
            rt.block_on(move || {
                let t = Instant::now();
                for _ in 0..iters {
                    eevdf_rt::yield_now();
                }
                t.elapsed()
            })
        })
    });
    drop(rt);
    let trt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    g.bench_function("tokio_yield_now", |b| {
        b.iter_custom(|iters| {
            trt.block_on(async move {
                let h = tokio::spawn(async move {
                    for _ in 0..iters {
                        tokio::task::yield_now().await;
                    }
                });
                let t = Instant::now();
                for _ in 0..iters {
                    tokio::task::yield_now().await;
                }
                h.await.unwrap();
                t.elapsed() / 2
            })
        })
    });
    g.finish();
}

fn spawn_join(c: &mut Criterion) {
    let mut g = c.benchmark_group("spawn_join");
    let rt = green(1);
    g.bench_function("green", |b| {
        b.iter_custom(|iters| {
            rt.block_on(move || {
                let t = Instant::now();
                for _ in 0..iters {
                    eevdf_rt::spawn(|| ()).join().unwrap();
                }
                t.elapsed()
            })
        })
    });
    drop(rt);
    let trt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    g.bench_function("tokio_current_thread", |b| {
        b.iter_custom(|iters| {
            trt.block_on(async move {
                let t = Instant::now();
                for _ in 0..iters {
                    tokio::spawn(async {}).await.unwrap();
                }
                t.elapsed()
            })
        })
    });
    let trt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    g.bench_function("tokio_multi_thread", |b| {
        b.iter_custom(|iters| {
            trt.block_on(async move {
                let t = Instant::now();
                for _ in 0..iters {
                    tokio::spawn(async {}).await.unwrap();
                }
                t.elapsed()
            })
        })
    });
    g.bench_function("os_thread", |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                std::thread::spawn(|| ()).join().unwrap();
            }
            t.elapsed()
        })
    });
    g.finish();
}

/// Green: two tasks pinned to workers 0 and 1 pass a token with park/unpark.
fn green_round_trips(rt: &eevdf_rt::Runtime, iters: u64) -> Duration {
    let token = Arc::new(AtomicU64::new(0));
    let peer: Arc<OnceLock<eevdf_rt::Task>> = Arc::new(OnceLock::new());
    let (t2, p2) = (token.clone(), peer.clone());
    let pong = eevdf_rt::task::Builder::new()
        .pin(1)
        .spawn_on(rt, move || {
            let ping = loop {
                if let Some(p) = p2.get() {
                    break p.clone();
                }
                eevdf_rt::yield_now();
            };
            for i in 0..iters {
                while t2.load(Ordering::Acquire) != 2 * i + 1 {
                    eevdf_rt::park();
                }
                t2.store(2 * i + 2, Ordering::Release);
                ping.unpark();
            }
        })
        .unwrap();
    let pong_task = pong.task();
    let ping = eevdf_rt::task::Builder::new()
        .pin(0)
        .spawn_on(rt, move || {
            peer.set(eevdf_rt::current()).unwrap();
            let t = Instant::now();
            for i in 0..iters {
                token.store(2 * i + 1, Ordering::Release);
                pong_task.unpark();
                while token.load(Ordering::Acquire) != 2 * i + 2 {
                    eevdf_rt::park();
                }
            }
            t.elapsed()
        })
        .unwrap();
    let d = ping.join().unwrap();
    pong.join().unwrap();
    d
}

fn os_futex_round_trips(iters: u64) -> Duration {
    let words = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
    let w2 = words.clone();
    let pong = std::thread::spawn(move || {
        let (mine, theirs) = (&w2[1], &w2[0]);
        for _ in 0..iters {
            while mine.swap(0, Ordering::Acquire) == 0 {
                let _ = AsFutex::<Private>::as_futex(mine).wait(0);
            }
            theirs.store(1, Ordering::Release);
            AsFutex::<Private>::as_futex(theirs).wake(1);
        }
    });
    let (mine, theirs) = (&words[0], &words[1]);
    let t = Instant::now();
    for _ in 0..iters {
        theirs.store(1, Ordering::Release);
        AsFutex::<Private>::as_futex(theirs).wake(1);
        while mine.swap(0, Ordering::Acquire) == 0 {
            let _ = AsFutex::<Private>::as_futex(mine).wait(0);
        }
    }
    let d = t.elapsed();
    pong.join().unwrap();
    d
}

fn wake_round_trip(c: &mut Criterion) {
    let mut g = c.benchmark_group("wake_round_trip");
    g.measurement_time(Duration::from_secs(3));
    let rt = green(2);
    g.bench_function("green_cross_worker", |b| {
        b.iter_custom(|n| green_round_trips(&rt, n))
    });
    drop(rt);
    let trt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    g.bench_function("tokio_multi_thread", |b| {
        b.iter_custom(|iters| {
            trt.block_on(async move {
                let (a, bn) = (
                    Arc::new(tokio::sync::Notify::new()),
                    Arc::new(tokio::sync::Notify::new()),
                );
                let (a2, b2) = (a.clone(), bn.clone());
                let pong = tokio::spawn(async move {
                    for _ in 0..iters {
                        b2.notified().await;
                        a2.notify_one();
                    }
                });
                let t = Instant::now();
                for _ in 0..iters {
                    bn.notify_one();
                    a.notified().await;
                }
                let d = t.elapsed();
                pong.await.unwrap();
                d
            })
        })
    });
    g.bench_function("os_threads_futex", |b| b.iter_custom(os_futex_round_trips));
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
    targets = switch, spawn_join, wake_round_trip
}
criterion_main!(benches);
