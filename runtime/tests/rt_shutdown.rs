//! Shutdown with green threads still blocked, runnable or never started:
//! no hang, every destructor runs, joiners get `Cancelled`, and nothing
//! leaks — checked with a counting global allocator and the runtime's
//! count of live stacks. (Its own test binary: the allocator counts the
//! whole process, so it must not share it with other tests.)

mod common;

use common::with_timeout;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator and only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The allocator counts the whole process: run the tests one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct Guard(Arc<AtomicUsize>);
impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// One runtime with 1 000 green threads in every state, shut down.
/// Returns (destructors run, joiners cancelled).
fn scenario() -> (usize, usize) {
    let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
    let dropped = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let arrived = common::Arrivals::new();
    let mut handles = Vec::new();
    // 600 parked forever (never unparked), each holding a guard
    for _ in 0..600 {
        let (d, a) = (dropped.clone(), arrived.clone());
        handles.push(rt.spawn(move || {
            let _g = Guard(d);
            a.arrive();
            loop {
                eevdf_rt::park();
            }
        }));
    }
    // 200 sleeping for an hour
    for _ in 0..200 {
        let (d, a) = (dropped.clone(), arrived.clone());
        handles.push(rt.spawn(move || {
            let _g = Guard(d);
            a.arrive();
            eevdf_rt::sleep(Duration::from_secs(3600));
        }));
    }
    // 200 runnable forever (yield loops)
    for _ in 0..200 {
        let (d, s, a) = (dropped.clone(), stop.clone(), arrived.clone());
        handles.push(rt.spawn(move || {
            let _g = Guard(d);
            a.arrive();
            while !s.load(Ordering::Relaxed) {
                eevdf_rt::yield_now();
            }
        }));
    }
    // Every one has made its guard (a body that never ran has none).
    arrived.wait_for(1000);
    assert_eq!(rt.live_tasks(), 1000);
    rt.shutdown();
    assert_eq!(rt.live_tasks(), 0);
    let cancelled = handles
        .into_iter()
        .filter(|h| {
            let _ = h.is_finished();
            true
        })
        .map(|h| h.join())
        .filter(|r| {
            r.as_ref()
                .err()
                .is_some_and(|p| p.downcast_ref::<eevdf_rt::Cancelled>().is_some())
        })
        .count();
    drop(rt);
    (dropped.load(Ordering::Relaxed), cancelled)
}

#[test]
fn shutdown_unwinds_blocked_tasks_and_leaks_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    with_timeout(120, "shutdown", || {
        // Warm up once: lazily initialised process state (thread-locals,
        // the clock, std's own buffers) is allocated the first time.
        let _ = scenario();
        let stacks_before = eevdf_rt::live_stacks();
        let bytes_before = LIVE_BYTES.load(Ordering::Relaxed);
        let (dropped, cancelled) = scenario();
        assert_eq!(dropped, 1000, "every green thread's destructors ran");
        assert_eq!(cancelled, 1000, "every joiner got Cancelled");
        assert_eq!(eevdf_rt::live_stacks(), stacks_before, "stacks freed");
        let leaked = LIVE_BYTES.load(Ordering::Relaxed) - bytes_before;
        // 1 000 leaked tasks would be hundreds of KiB; allow a few KiB of
        // noise from std's lazily grown internals.
        assert!(leaked.abs() < 16 * 1024, "leaked {leaked} bytes");
    });
}

#[test]
fn dropping_the_runtime_inside_a_green_thread_does_not_hang() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    with_timeout(60, "drop inside", || {
        let rt = Arc::new(eevdf_rt::Builder::new().workers(1).build().unwrap());
        let rt2 = rt.clone();
        let h = rt.spawn(move || {
            // shutting down from inside is refused with a clear panic
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt2.shutdown()));
            assert!(r.is_err());
            drop(rt2);
            7
        });
        assert_eq!(h.join().unwrap(), 7);
        drop(rt);
    });
}

/// A green thread alone on its worker that loops on `yield_now` (which
/// then continues without a switch) or on `preempt_point` (which switches
/// only when something asks it to) never reaches the scheduler by itself:
/// shutdown must still stop the worker and unwind the thread.
#[test]
fn shutdown_stops_a_lone_yield_or_preemption_point_loop() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    with_timeout(60, "lone loops", || {
        for preempt_point in [false, true] {
            let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
            let dropped = Arc::new(AtomicUsize::new(0));
            let started = Arc::new(AtomicBool::new(false));
            let (d, s) = (dropped.clone(), started.clone());
            let h = rt.spawn(move || {
                let _g = Guard(d);
                s.store(true, Ordering::SeqCst);
                loop {
                    if preempt_point {
                        eevdf_rt::preempt_point();
                    } else {
                        eevdf_rt::yield_now();
                    }
                }
            });
            while !started.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            rt.shutdown();
            assert_eq!(rt.live_tasks(), 0);
            assert_eq!(dropped.load(Ordering::SeqCst), 1, "its destructors ran");
            let r = h.join();
            assert!(
                r.as_ref()
                    .err()
                    .is_some_and(|p| p.downcast_ref::<eevdf_rt::Cancelled>().is_some()),
                "the joiner gets Cancelled"
            );
        }
    });
}

/// Dropping runtime A from a green thread of runtime B unwinds A's green
/// threads on B's worker thread: afterwards the green thread of B is still
/// one (it can spawn and join), and a destructor of A's green thread that
/// wakes another (a channel send) does not act on B's worker.
#[test]
fn dropping_a_runtime_inside_another_runtimes_green_thread_leaves_it_intact() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    with_timeout(60, "drop inside another runtime", || {
        let b = eevdf_rt::Builder::new().workers(1).build().unwrap();
        let (in_green, spawned) = b.block_on(|| {
            let a = eevdf_rt::Builder::new().workers(1).build().unwrap();
            let (tx, rx) = eevdf_rt::sync::channel::bounded::<u32>(1);
            struct SendOnDrop(eevdf_rt::sync::channel::Sender<u32>);
            impl Drop for SendOnDrop {
                fn drop(&mut self) {
                    let _ = self.0.try_send(1);
                }
            }
            let _waiter = a.spawn(move || rx.recv());
            let _parked = a.spawn(move || {
                let _g = SendOnDrop(tx);
                loop {
                    eevdf_rt::park();
                }
            });
            std::thread::sleep(Duration::from_millis(20));
            drop(a);
            (
                eevdf_rt::in_green_thread(),
                eevdf_rt::spawn(|| 5).join().unwrap(),
            )
        });
        assert!(in_green, "the green thread of B lost its identity");
        assert_eq!(spawned, 5);
    });
}
