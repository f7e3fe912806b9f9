//! Green-thread stacks: overflow of a guard page or a canary aborts with a
//! message naming the green thread (checked in child processes: this test
//! binary re-executed with `EEVDF_STACK_CHILD` set), faults that are not
//! ours keep their usual outcome, and many parked green threads fit in
//! canary stacks or a small guard-page budget.

mod common;

use common::with_timeout;
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const CHILD: &str = "EEVDF_STACK_CHILD";

/// Recurses until `stop(depth, &frame)` says so; each frame holds `N`
/// bytes (zeroed, so every frame writes all of them).
#[inline(never)]
fn recurse_with<const N: usize>(depth: u64, stop: &dyn Fn(u64, usize) -> bool) -> u64 {
    let mut buf = [0u8; N];
    buf[(depth % N as u64) as usize] = depth as u8;
    std::hint::black_box(&mut buf);
    if stop(depth, buf.as_ptr() as usize) {
        return depth;
    }
    recurse_with::<N>(depth + 1, stop) + std::hint::black_box(buf[7]) as u64
}

/// 512-byte frames.
fn recurse(depth: u64, stop: &dyn Fn(u64, usize) -> bool) -> u64 {
    recurse_with::<512>(depth, stop)
}

/// 4 KiB frames: deep quickly, so that an overflow takes microseconds even
/// in a debug build.
fn recurse_big(depth: u64, stop: &dyn Fn(u64, usize) -> bool) -> u64 {
    recurse_with::<4096>(depth, stop)
}

/// What the child does, by `EEVDF_STACK_CHILD`.
fn child(mode: &str) {
    let b = eevdf_rt::Builder::new().workers(1);
    let b = match mode {
        "mprotect" => b.stack_guard_regions(false),
        "canary-guard" => b.stack_guard(eevdf_rt::StackGuard::Canary),
        "canary" | "canary-yield" => b
            .stack_guard(eevdf_rt::StackGuard::Canary)
            .stack_size(32 * 1024),
        _ => b,
    };
    let rt = b.build().unwrap();
    match mode {
        "os-thread" => {
            // std's own overflow report for OS threads still works.
            let h = std::thread::Builder::new()
                .name("plain".into())
                .stack_size(64 * 1024)
                .spawn(|| recurse(0, &|_, _| false))
                .unwrap();
            let _ = h.join();
        }
        "segv" => {
            // SAFETY: deliberately faults (the parent checks the signal).
            unsafe { std::ptr::write_volatile(16 as *mut u8, 1) };
        }
        "canary-yield" => {
            // As "canary", but alone on its worker and yielding (a yield
            // that does not switch) before it would ever switch out: the
            // yield itself must find the smashed canary. The spawner exits
            // and the sleep lets the worker retire it, so that nothing else
            // is queued when the overflow happens.
            let h = rt.block_on(|| {
                eevdf_rt::task::Builder::new()
                    .name("shallow")
                    .spawn(|| {
                        eevdf_rt::sleep(Duration::from_millis(5));
                        // Serve the tick that came due while the worker
                        // slept (a yield with a due tick switches).
                        for _ in 0..3 {
                            eevdf_rt::yield_now();
                        }
                        let marker = 0u8;
                        let top = std::hint::black_box(&marker) as *const u8 as usize;
                        recurse_big(0, &move |_, sp| top.saturating_sub(sp) > 34 * 1024);
                        for _ in 0..100 {
                            eevdf_rt::yield_now();
                        }
                        eprintln!("yields survived");
                    })
                    .unwrap()
            });
            let _ = h.join();
        }
        "canary" => {
            // Overflow by about 2 KiB, return, and switch out: only the
            // canary can tell. (Spawned from a green thread, it gets a
            // stack from the middle of a slab, with another stack below it
            // rather than the slab's guard page.)
            rt.block_on(|| {
                let h = eevdf_rt::task::Builder::new()
                    .name("shallow")
                    .spawn(|| {
                        let marker = 0u8;
                        let top = std::hint::black_box(&marker) as *const u8 as usize;
                        recurse(0, &move |_, sp| top.saturating_sub(sp) > 34 * 1024);
                        eevdf_rt::yield_now();
                    })
                    .unwrap();
                let _ = h.join();
            });
        }
        _ => {
            let h = eevdf_rt::task::Builder::new()
                .name("deep")
                .stack_size(64 * 1024)
                .spawn_on(&rt, || recurse(0, &|_, _| false))
                .unwrap();
            let _ = h.join();
        }
    }
    eprintln!("child survived");
    std::process::exit(0);
}

fn run_child(test: &str, mode: &str) -> (Option<i32>, String) {
    let out = common::run_test_in_child(test, CHILD, mode);
    (
        out.status.signal(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn green_stack_overflow_reports_and_aborts() {
    if let Ok(mode) = std::env::var(CHILD) {
        return child(&mode);
    }
    with_timeout(120, "overflow children", || {
        for mode in ["auto", "mprotect", "canary-guard"] {
            let (sig, err) = run_child("green_stack_overflow_reports_and_aborts", mode);
            assert_eq!(sig, Some(libc::SIGABRT), "{mode}: {err}");
            // canary-guard: unbounded recursion runs through the canaries
            // into the guard page below the slab.
            assert!(err.contains("thread 'deep' (green task "), "{mode}: {err}");
            assert!(
                err.contains("has overflowed its stack (stack size 64 KiB"),
                "{mode}: {err}"
            );
        }
        let (sig, err) = run_child("green_stack_overflow_reports_and_aborts", "canary");
        assert_eq!(sig, Some(libc::SIGABRT), "canary: {err}");
        assert!(
            err.contains("thread 'shallow' (green task ")
                && err.contains("has overflowed its stack (stack size 32 KiB")
                && err.contains("found by its stack canary"),
            "canary: {err}"
        );
        let (sig, err) = run_child("green_stack_overflow_reports_and_aborts", "canary-yield");
        assert_eq!(sig, Some(libc::SIGABRT), "canary-yield: {err}");
        assert!(
            err.contains("thread 'shallow' (green task ")
                && err.contains("found by its stack canary")
                && !err.contains("yields survived"),
            "canary-yield: {err}"
        );
        // Faults that are not a green thread's go on as before.
        let (sig, err) = run_child("green_stack_overflow_reports_and_aborts", "os-thread");
        assert_eq!(sig, Some(libc::SIGABRT), "os-thread: {err}");
        assert!(
            err.contains("thread 'plain'") && err.contains("has overflowed its stack"),
            "{err}"
        );
        assert!(!err.contains("green task"), "{err}");
        let (sig, err) = run_child("green_stack_overflow_reports_and_aborts", "segv");
        assert_eq!(sig, Some(libc::SIGSEGV), "segv: {err}");
        assert!(!err.contains("overflowed"), "{err}");
    });
}

fn park_many(rt: &eevdf_rt::Runtime, n: usize) -> usize {
    rt.block_on(move || {
        let (tx, rx) = eevdf_rt::sync::channel::unbounded::<()>();
        let parked = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..n)
            .map(|_| {
                let (rx, parked) = (rx.clone(), parked.clone());
                eevdf_rt::task::Builder::new()
                    .spawn(move || {
                        parked.fetch_add(1, Ordering::Relaxed);
                        rx.recv().is_ok()
                    })
                    .expect("spawn")
            })
            .collect();
        // All of them exist at once, blocked in `recv`.
        while parked.load(Ordering::Relaxed) < n {
            eevdf_rt::sleep(Duration::from_millis(1));
        }
        for _ in 0..n {
            tx.send(()).unwrap();
        }
        hs.into_iter().map(|h| h.join().unwrap() as usize).sum()
    })
}

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .count()
}

/// 40,000 parked green threads on canary stacks: more than guard pages
/// alone would allow with a budget like the one below, no mapping per stack.
#[test]
fn forty_thousand_parked_on_canary_stacks() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    with_timeout(120, "canary parked", || {
        let rt = eevdf_rt::Builder::new()
            .workers(2)
            .stack_size(32 * 1024)
            .stack_guard(eevdf_rt::StackGuard::Canary)
            .build()
            .unwrap();
        let before = mappings();
        assert_eq!(park_many(&rt, 40_000), 40_000);
        assert!(
            mappings() < before + 1000,
            "{} mappings",
            mappings() - before
        );
    });
}

/// Auto without guard regions: mprotect'd guard pages up to the budget,
/// canaries beyond it; every green thread runs and the mappings stay
/// within the budget. GuardPage fails cleanly instead.
#[test]
fn auto_falls_back_to_canaries_beyond_the_mapping_budget() {
    if std::env::var(CHILD).is_ok() {
        return;
    }
    with_timeout(120, "budget", || {
        let before = mappings();
        let rt = eevdf_rt::Builder::new()
            .workers(2)
            .stack_size(24 * 1024)
            .stack_guard_regions(false)
            .stack_map_budget(400)
            .build()
            .unwrap();
        assert_eq!(park_many(&rt, 5_000), 5_000);
        let used = mappings() - before;
        assert!(used < 1000, "{used} mappings for 5,000 stacks");
        let strict = eevdf_rt::Builder::new()
            .workers(1)
            .stack_size(20 * 1024)
            .stack_guard(eevdf_rt::StackGuard::GuardPage)
            .stack_guard_regions(false)
            .stack_map_budget(0)
            .stack_pool(0)
            .build()
            .unwrap();
        let e = eevdf_rt::task::Builder::new()
            .spawn_on(&strict, || ())
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::OutOfMemory, "{e}");
        assert!(e.to_string().contains("mapping budget"), "{e}");
        // `spawn` turns the same error into a panic with the message.
        let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| strict.spawn(|| ())))
            .unwrap_err();
        let msg = p.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.starts_with("Runtime::spawn: ") && msg.contains("mapping budget"),
            "{msg}"
        );
    });
}
