//! What happens to a green thread's result when nobody joins it: it is
//! dropped exactly once, by the green thread at its completion or by the
//! handle's drop — never by a worker that drops the task's last reference
//! under its run-queue lock (a result whose destructor wakes another green
//! thread would deadlock that worker), and never kept alive by other
//! references to the task. Also: a spawn that races with shutdown is
//! refused or cancelled, never left unjoinable; a green thread blocked in
//! `join` at shutdown is unwound cleanly; a never-started body whose
//! captured value panics on drop is dropped once; a detached result that
//! panics on drop aborts with a message, like std's.

mod common;

use common::with_timeout;
use eevdf_rt::sync::channel;
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Whether a join result is the `Cancelled` error of a shutdown.
fn cancelled<T>(r: &std::thread::Result<T>) -> bool {
    r.as_ref()
        .err()
        .and_then(|e| e.downcast_ref::<eevdf_rt::Cancelled>())
        .is_some()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: not within 10 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A detached task returns a channel sender; dropping it disconnects the
/// channel, which wakes a green thread blocked in `recv` on the same (only)
/// worker. That wake must not come from inside the worker's scheduler.
#[test]
fn a_detached_result_that_wakes_a_green_thread_is_dropped_outside_the_scheduler() {
    with_timeout(60, "detached result waking a receiver", || {
        for _ in 0..50 {
            let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
            let (tx, rx) = channel::bounded::<u8>(1);
            let receiver = rt.spawn(move || rx.recv_timeout(Duration::from_secs(20)));
            // Let the receiver block first.
            std::thread::sleep(Duration::from_millis(2));
            drop(rt.spawn(move || {
                eevdf_rt::yield_now();
                tx
            }));
            let got = receiver.join().unwrap();
            assert!(got.is_err(), "the receiver saw a message: {got:?}");
            assert!(
                matches!(got, Err(channel::RecvTimeoutError::Disconnected)),
                "the receiver timed out instead of seeing the disconnect: {got:?}"
            );
        }
    });
}

/// A result that holds its own task (a `Task` handle) is still dropped once
/// the handle is gone and the task has finished: no reference cycle
/// through the task block.
#[test]
fn a_detached_result_holding_its_own_task_is_dropped() {
    with_timeout(60, "result holding its own task", || {
        let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
        for detach_first in [true, false] {
            let drops = Arc::new(AtomicUsize::new(0));
            let d = drops.clone();
            let (go_tx, go_rx) = channel::bounded::<()>(1);
            let h = rt.spawn(move || {
                let _ = go_rx.recv();
                (eevdf_rt::current(), Counted(d))
            });
            if detach_first {
                drop(h);
                go_tx.send(()).unwrap();
            } else {
                go_tx.send(()).unwrap();
                wait_for("the task finishes", || h.is_finished());
                drop(h);
            }
            wait_for("the result is dropped", || {
                drops.load(Ordering::SeqCst) == 1
            });
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped more than once");
        }
    });
}

/// A `Task` handle kept after the join handle is gone (to read its stats,
/// say) does not keep the result alive.
#[test]
fn a_task_handle_does_not_keep_the_result_alive() {
    with_timeout(60, "task handle keeping a result", || {
        let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        let d = drops.clone();
        let h = rt.spawn(move || Counted(d));
        let task = h.task();
        wait_for("the task finishes", || h.is_finished());
        drop(h);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert!(task.id() > 0);
        // Joined: the caller owns the result; nothing else drops it.
        let d = drops.clone();
        let r = rt.spawn(move || Counted(d)).join().unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop(r);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
        // A large (boxed) result, detached before it completes.
        let d = drops.clone();
        let (go_tx, go_rx) = channel::bounded::<()>(1);
        drop(rt.spawn(move || {
            let _ = go_rx.recv();
            (Counted(d), [0u64; 16])
        }));
        go_tx.send(()).unwrap();
        wait_for("the boxed result is dropped", || {
            drops.load(Ordering::SeqCst) == 3
        });
    });
}

/// Green threads spawned from outside the workers (a blocking-pool job)
/// while the runtime shuts down: each spawn either fails or gives a handle
/// that finishes (with the value, or `Cancelled`); none is left registered
/// after shutdown took the registry, where nothing would ever run it.
#[test]
fn a_spawn_racing_with_shutdown_is_refused_or_cancelled() {
    with_timeout(120, "spawn racing with shutdown", || {
        for round in 0..20u64 {
            let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            let started = Arc::new(AtomicUsize::new(0));
            let st = started.clone();
            let job = rt.spawn_blocking(move || {
                let mut handles = Vec::new();
                let refused = loop {
                    match eevdf_rt::task::Builder::new().spawn(|| 7u32) {
                        Ok(h) => handles.push(h),
                        Err(e) => break e,
                    }
                    st.store(handles.len(), Ordering::Relaxed);
                    if handles.len() > 200_000 {
                        panic!("shutdown never refused a spawn");
                    }
                };
                let _ = tx.send((handles, refused.to_string()));
            });
            wait_for("the spawning job starts", || {
                started.load(Ordering::Relaxed) > 0
            });
            std::thread::sleep(Duration::from_micros(100 + 300 * (round % 7)));
            rt.shutdown();
            let (handles, refused) = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("the spawning job ended");
            job.join().expect("the spawning job");
            assert!(refused.contains("shut down"), "refused with: {refused}");
            let deadline = Instant::now() + Duration::from_secs(10);
            for h in handles {
                while !h.is_finished() {
                    assert!(
                        Instant::now() < deadline,
                        "a handle never finished (round {round})"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
                match h.join() {
                    Ok(v) => assert_eq!(v, 7),
                    Err(e) => assert!(e.downcast_ref::<eevdf_rt::Cancelled>().is_some()),
                }
            }
        }
    });
}

/// A green thread blocked in `join` when the runtime shuts down is unwound:
/// its handle's drop takes back the registered joiner (it used to trip the
/// packet's protocol check inside an unwind, which aborts).
#[test]
fn a_joiner_blocked_at_shutdown_is_unwound() {
    with_timeout(60, "joiner blocked at shutdown", || {
        for workers in [1, 2] {
            let rt = eevdf_rt::Builder::new().workers(workers).build().unwrap();
            let joined = Arc::new(AtomicUsize::new(0));
            let j = joined.clone();
            let outer = rt.spawn(move || {
                let inner = eevdf_rt::spawn(|| eevdf_rt::sleep(Duration::from_secs(100)));
                let r = inner.join();
                j.fetch_add(1, Ordering::SeqCst);
                r.is_ok()
            });
            std::thread::sleep(Duration::from_millis(20));
            rt.shutdown();
            let r = outer.join();
            assert!(cancelled(&r), "the joiner was not cancelled");
            assert_eq!(
                joined.load(Ordering::SeqCst),
                0,
                "the join returned instead of unwinding"
            );
        }
    });
}

/// Panics in its first drop only (a second drop would be a double drop).
struct PanicOnFirstDrop(Arc<AtomicUsize>);
impl Drop for PanicOnFirstDrop {
    fn drop(&mut self) {
        if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("first drop");
        }
    }
}

/// A task that never started, whose closure holds a value that panics on
/// drop, is dropped exactly once at shutdown (the coroutine's drop of a
/// never-started body must not see the panic).
#[test]
fn a_never_started_body_that_panics_on_drop_is_dropped_once() {
    with_timeout(60, "never-started body panicking on drop", || {
        let mut unstarted = 0;
        for _ in 0..20 {
            let rt = eevdf_rt::Builder::new()
                .workers(1)
                .handoff(None)
                .build()
                .unwrap();
            let drops = Arc::new(AtomicUsize::new(0));
            let started = Arc::new(AtomicUsize::new(0));
            // Keep the only worker in a nice −20 loop of preemption points:
            // a nice-19 task spawned beside it gets its first turn only
            // after the loop's slice protection ends (milliseconds), and
            // the shutdown right after the spawn stops the worker first.
            let spinning = Arc::new(AtomicUsize::new(0));
            let sp = spinning.clone();
            let blocker = eevdf_rt::task::Builder::new()
                .nice(-20)
                .spawn_on(&rt, move || loop {
                    sp.store(1, Ordering::SeqCst);
                    eevdf_rt::preempt_point();
                })
                .unwrap();
            wait_for("the blocker runs", || spinning.load(Ordering::SeqCst) == 1);
            let keep = PanicOnFirstDrop(drops.clone());
            let s = started.clone();
            let never = eevdf_rt::task::Builder::new()
                .nice(19)
                .spawn_on(&rt, move || {
                    s.store(1, Ordering::SeqCst);
                    drop(keep);
                })
                .unwrap();
            rt.shutdown();
            // Started or not, the value is dropped exactly once.
            assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped twice (or never)");
            let r = never.join();
            assert!(r.is_err(), "the task reported a result");
            if started.load(Ordering::SeqCst) == 0 {
                unstarted += 1;
                assert!(cancelled(&r), "a never-started task was not cancelled");
            }
            let _ = blocker.join();
        }
        assert!(
            unstarted > 0,
            "the task started before every shutdown: scenario not reached"
        );
    });
}

const CHILD: &str = "EEVDF_JOIN_RESULT_CHILD";

/// A detached result whose destructor panics aborts the process with a
/// message (std does the same for a thread's result), instead of unwinding
/// into the worker's loop and killing the worker.
#[test]
fn a_detached_result_that_panics_on_drop_aborts_with_a_message() {
    if std::env::var(CHILD).is_ok() {
        let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        let (go_tx, go_rx) = channel::bounded::<()>(1);
        drop(rt.spawn(move || {
            let _ = go_rx.recv();
            PanicOnFirstDrop(Arc::new(AtomicUsize::new(0)))
        }));
        go_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_secs(5));
        // Not reached: the worker aborted the process.
        std::process::exit(0);
    }
    with_timeout(60, "child that aborts", || {
        let out = common::run_test_in_child(
            "a_detached_result_that_panics_on_drop_aborts_with_a_message",
            CHILD,
            "1",
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{err}");
        assert!(err.contains("nobody joined panicked on drop"), "{err}");
    });
}
