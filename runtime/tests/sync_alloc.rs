//! The common wait/wake paths of `sync` do not allocate: futex and channel
//! ping-pong between green threads (and with an OS thread), counted with a
//! counting global allocator.

use eevdf_rt::sync::{channel, Futex, Mutex};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

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

/// Allocations per round trip of `f(rounds)` measured from inside a green
/// thread, after a warm-up call.
fn per_round(rt: &eevdf_rt::Runtime, pin: (usize, usize), kind: u8) -> f64 {
    let rounds = 20_000u64;
    let ping = Arc::new(AtomicU32::new(0));
    let pong = Arc::new(AtomicU32::new(0));
    let (a_tx, a_rx) = channel::bounded::<u64>(1);
    let (b_tx, b_rx) = channel::bounded::<u64>(1);
    let m = Arc::new(Mutex::new(0u64));
    let (p2, q2, m2) = (ping.clone(), pong.clone(), m.clone());
    let echo = eevdf_rt::task::Builder::new()
        .pin(pin.1)
        .spawn_on(rt, move || {
            for _ in 0..2 * rounds {
                match kind {
                    0 => {
                        wait(&p2);
                        post(&q2);
                    }
                    1 => {
                        let v = a_rx.recv().unwrap();
                        b_tx.send(v).unwrap();
                    }
                    _ => {
                        for _ in 0..4 {
                            *m2.lock() += 1;
                        }
                    }
                }
            }
        })
        .unwrap();
    let allocs = eevdf_rt::task::Builder::new()
        .pin(pin.0)
        .spawn_on(rt, move || {
            let one = |i| match kind {
                0 => {
                    post(&ping);
                    wait(&pong);
                }
                1 => {
                    a_tx.send(i).unwrap();
                    b_rx.recv().unwrap();
                }
                _ => {
                    for _ in 0..4 {
                        *m.lock() += 1;
                    }
                }
            };
            for i in 0..rounds {
                one(i); // warm-up: lazily created runtime state, buffers
            }
            let before = ALLOCS.load(Ordering::Relaxed);
            for i in 0..rounds {
                one(i);
            }
            ALLOCS.load(Ordering::Relaxed) - before
        })
        .unwrap()
        .join()
        .unwrap();
    echo.join().unwrap();
    allocs as f64 / rounds as f64
}

#[test]
fn wait_and_wake_paths_do_not_allocate() {
    let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
    for (name, kind) in [("futex", 0u8), ("channel", 1), ("mutex", 2)] {
        for pin in [(0, 0), (0, 1)] {
            let a = per_round(&rt, pin, kind);
            eprintln!("{name} {pin:?}: {a:.4} allocations per round trip");
            // Other threads of the process (the test harness) may allocate
            // now and then; the sync paths themselves must not.
            assert!(a < 0.01, "{name} {pin:?}: {a} allocations per round trip");
        }
    }
}
