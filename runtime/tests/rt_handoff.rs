//! Hand-off of stuck workers (`Builder::handoff`): a green thread that holds
//! its worker's OS thread — in a plain blocking call, or in a loop without
//! preemption points — no longer holds up the other green threads of that
//! worker. The bounds are generous (a wrong runtime misses them by
//! hundreds of milliseconds); speed is measured by the benchmarks.

mod common;

use eevdf_rt::{Builder, Runtime};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One test at a time: each measures how soon a stuck worker is handed
/// off, and the monitor tells a spinning thread from one waiting for a CPU
/// by the CPU time it got, which tests running side by side would starve.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn runtime(workers: usize) -> Runtime {
    Builder::new().workers(workers).build().unwrap()
}

/// Waits (bounded) until every green thread has exited: a join returns as
/// soon as the result is published, a moment before the worker retires the
/// task.
fn all_exited(rt: &Runtime) -> bool {
    let t = Instant::now();
    while rt.live_tasks() != 0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    rt.live_tasks() == 0
}

fn handoffs(rt: &Runtime) -> u64 {
    rt.stats().total().handoffs
}

/// Spins for `d` without any preemption point (a CPU-bound loop a
/// cooperative runtime cannot interrupt).
fn spin_for(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

#[test]
fn blocking_calls_do_not_hold_up_a_sleeper() {
    let _s = serial();
    let rt = runtime(2);
    let blockers: Vec<_> = (0..4)
        .map(|_| rt.spawn(|| std::thread::sleep(Duration::from_millis(300))))
        .collect();
    let late = rt
        .spawn(|| {
            let start = Instant::now();
            eevdf_rt::sleep(Duration::from_millis(2));
            start.elapsed().saturating_sub(Duration::from_millis(2))
        })
        .join()
        .unwrap();
    for b in blockers {
        b.join().unwrap();
    }
    // Without hand-off the sleeper waits for the blockers: 300–600 ms.
    assert!(
        late < Duration::from_millis(150),
        "a 2 ms sleeper was {late:?} late behind blocked workers"
    );
    assert!(handoffs(&rt) >= 1, "{}", rt.stats());
    assert!(rt.handoff_threads() >= 1);
}

#[test]
fn spinners_do_not_hold_up_a_later_task() {
    let _s = serial();
    let rt = runtime(2);
    let go = Arc::new(AtomicUsize::new(0));
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let go = go.clone();
            rt.spawn(move || {
                go.fetch_add(1, Ordering::SeqCst);
                spin_for(Duration::from_millis(400));
            })
        })
        .collect();
    while go.load(Ordering::SeqCst) < 2 {
        std::thread::yield_now();
    }
    let spawned = Instant::now();
    let started = rt.spawn(move || spawned.elapsed()).join().unwrap();
    for s in spinners {
        s.join().unwrap();
    }
    assert!(
        started < Duration::from_millis(200),
        "a task spawned after two spinners started after {started:?}"
    );
    assert!(handoffs(&rt) >= 1, "{}", rt.stats());
}

#[test]
fn a_handed_off_task_keeps_running_and_finishes_on_a_worker() {
    let _s = serial();
    // The stuck green thread blocks, yields and exits after its worker was
    // taken: each of those goes through the detach path.
    let rt = runtime(1);
    let stuck = rt.spawn(|| {
        spin_for(Duration::from_millis(50));
        let before = eevdf_rt::current().id();
        eevdf_rt::yield_now();
        eevdf_rt::sleep(Duration::from_millis(1));
        eevdf_rt::set_nice(3).unwrap();
        assert_eq!(eevdf_rt::current().nice(), 3);
        spin_for(Duration::from_millis(50));
        eevdf_rt::set_slice(Duration::from_millis(1)).unwrap();
        assert_eq!(eevdf_rt::current().id(), before);
        7
    });
    let others: Vec<_> = (0..4u64)
        .map(|i| {
            rt.spawn(move || {
                for _ in 0..20 {
                    eevdf_rt::sleep(Duration::from_micros(200));
                }
                i
            })
        })
        .collect();
    assert_eq!(stuck.join().unwrap(), 7);
    let sum: u64 = others.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, 6);
    assert!(handoffs(&rt) >= 1, "{}", rt.stats());
    assert!(all_exited(&rt), "{} tasks left", rt.live_tasks());
}

#[test]
fn handoff_off_starts_no_thread() {
    let _s = serial();
    let rt = Builder::new().workers(1).handoff(None).build().unwrap();
    let h = rt.spawn(|| spin_for(Duration::from_millis(20)));
    let other = rt.spawn(|| 1);
    h.join().unwrap();
    assert_eq!(other.join().unwrap(), 1);
    assert_eq!(handoffs(&rt), 0);
    assert_eq!(rt.handoff_threads(), 0);
    assert_eq!(rt.handoff(), None);
}

#[test]
fn handoff_threshold_is_validated() {
    let _s = serial();
    for bad in [Duration::from_micros(10), Duration::from_secs(11)] {
        let e = Builder::new()
            .workers(1)
            .handoff(Some(bad))
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("handoff"), "{e}");
    }
    // At least two ticks.
    let rt = Builder::new()
        .workers(1)
        .tick(Duration::from_millis(4))
        .handoff(Some(Duration::from_millis(1)))
        .build()
        .unwrap();
    assert_eq!(rt.handoff(), Some(Duration::from_millis(8)));
}

/// Stress: green threads ping-pong over channels and count their own steps
/// while others, now and then, hold their worker without preemption points
/// or in blocking calls, so hand-offs happen under load. No message and no
/// wakeup is lost (everything finishes), and no task runs twice at once
/// (each task's step counter is checked against a flag only it sets).
#[test]
fn stress_handoffs_under_load_lose_nothing() {
    let _s = serial();
    let rt = runtime(2);
    let pairs = 8;
    let rounds = 300u64;
    let mut hs = Vec::new();
    let overlap = Arc::new(AtomicBool::new(false));
    for p in 0..pairs {
        let (tx_a, rx_a) = eevdf_rt::sync::channel::bounded::<u64>(1);
        let (tx_b, rx_b) = eevdf_rt::sync::channel::bounded::<u64>(1);
        let bad = overlap.clone();
        hs.push(rt.spawn(move || {
            let inside = AtomicBool::new(false);
            let mut sum = 0;
            for i in 0..rounds {
                if inside.swap(true, Ordering::SeqCst) {
                    bad.store(true, Ordering::SeqCst);
                }
                tx_a.send(i).unwrap();
                sum += rx_b.recv().unwrap();
                if p % 3 == 0 && i % 60 == 0 {
                    spin_for(Duration::from_millis(6));
                }
                inside.store(false, Ordering::SeqCst);
            }
            sum
        }));
        hs.push(rt.spawn(move || {
            let mut sum = 0;
            for _ in 0..rounds {
                let v = rx_a.recv().unwrap();
                if p % 4 == 1 && v % 75 == 0 {
                    std::thread::sleep(Duration::from_millis(10));
                }
                sum += v;
                tx_b.send(v).unwrap();
            }
            sum
        }));
    }
    let steps = Arc::new(AtomicU64::new(0));
    let counter = {
        let steps = steps.clone();
        rt.spawn(move || {
            for _ in 0..2000 {
                steps.fetch_add(1, Ordering::Relaxed);
                eevdf_rt::yield_now();
            }
        })
    };
    let expected = rounds * (rounds - 1) / 2;
    for h in hs {
        assert_eq!(h.join().unwrap(), expected);
    }
    counter.join().unwrap();
    assert_eq!(steps.load(Ordering::Relaxed), 2000);
    assert!(!overlap.load(Ordering::SeqCst), "a task ran twice at once");
    // The blocking calls (10 ms, in the kernel) are handed off whatever the
    // host's load.
    assert!(handoffs(&rt) >= 1, "{}", rt.stats());
    assert!(all_exited(&rt), "{} tasks left", rt.live_tasks());
    rt.shutdown();
}

#[test]
fn shutdown_with_a_thread_still_detached_waits_for_it() {
    let _s = serial();
    let rt = runtime(1);
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let _stuck = rt.spawn(move || {
        std::thread::sleep(Duration::from_millis(60));
        d.store(true, Ordering::SeqCst);
    });
    // Work waits behind it, so the worker is handed off.
    let other = rt.spawn(|| eevdf_rt::sleep(Duration::from_millis(1)));
    other.join().unwrap();
    rt.shutdown();
    assert!(done.load(Ordering::SeqCst));
}

/// Steal time: wall time the worker's thread did not run during one
/// stretch in a green thread (here: a plain blocking call, with nothing
/// else waiting, so no hand-off) is measured by the monitor and left
/// uncharged, as the kernel leaves steal time out of a task's runtime.
#[test]
fn time_the_worker_thread_did_not_run_is_not_charged() {
    let _s = serial();
    let rt = runtime(1);
    let charged = rt
        .spawn(|| {
            let me = eevdf_rt::current();
            eevdf_rt::yield_now();
            let v0 = me.stats().vruntime;
            std::thread::sleep(Duration::from_millis(80));
            eevdf_rt::yield_now();
            me.stats().vruntime.wrapping_sub(v0)
        })
        .join()
        .unwrap();
    // Charged in full, it would be at least 80 ms (nice 0: virtual = real).
    assert!(
        charged < 60_000_000,
        "charged {} ms for an 80 ms blocking call",
        charged / 1_000_000
    );
    assert_eq!(handoffs(&rt), 0);
}

/// A green thread whose worker was handed off wakes another green thread
/// of that worker while it still runs without preemption points: the
/// wakee must not wait for it. (Its waker used to enqueue "locally", as
/// the worker's owner, without kicking the new owner, which had parked.)
#[test]
fn a_wake_from_a_handed_off_thread_reaches_the_parked_new_owner() {
    let _s = serial();
    let rt = runtime(1);
    let woken_at = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let flag = Arc::new(AtomicBool::new(false));
    let (w, f) = (woken_at.clone(), flag.clone());
    let sleeper = rt.spawn(move || {
        while !f.load(Ordering::SeqCst) {
            eevdf_rt::park();
        }
        *w.lock().unwrap() = Some(Instant::now());
    });
    std::thread::sleep(Duration::from_millis(20));
    let task = sleeper.task().clone();
    let f = flag.clone();
    let waker = rt.spawn(move || {
        // Hold the worker until it is handed off (a timer waits behind us).
        spin_for(Duration::from_millis(30));
        let sent = Instant::now();
        f.store(true, Ordering::SeqCst);
        task.unpark();
        // Keep holding this OS thread, without preemption points.
        spin_for(Duration::from_millis(300));
        sent
    });
    let timer = rt.spawn(|| eevdf_rt::sleep(Duration::from_millis(1)));
    timer.join().unwrap();
    let sent = waker.join().unwrap();
    sleeper.join().unwrap();
    let woken = woken_at.lock().unwrap().expect("woken");
    let late = woken.saturating_duration_since(sent);
    assert!(
        late < Duration::from_millis(150),
        "the wakee ran {late:?} after the wake (the waker spun 300 ms)"
    );
    assert!(handoffs(&rt) >= 1, "{}", rt.stats());
}

/// The kernel slice (`sched_getattr`'s `sched_runtime`, ns) of this
/// process's thread named `name`, if there is one.
fn kernel_slice_of(name: &str) -> Option<u64> {
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let tid: i32 = e.file_name().to_str()?.parse().ok()?;
        // SAFETY: an all-zero `sched_attr` is valid (plain integers).
        let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::sched_attr>() as u32;
        // SAFETY: `attr` is writable and `size` bytes long.
        let r = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &mut attr, size, 0) };
        return (r == 0).then_some(attr.sched_runtime);
    }
    None
}

/// Linux 6.12+ takes `sched_runtime` as a custom slice of the fair class.
fn kernel_has_custom_slices() -> bool {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = r.trim().split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (6, 12)
}

#[test]
fn a_takeover_thread_has_a_short_kernel_slice_while_the_threads_contend() {
    let _s = serial();
    if !kernel_has_custom_slices() {
        eprintln!("skipped: this kernel has no custom slices (Linux < 6.12)");
        return;
    }
    let rt = Builder::new()
        .thread_name("slc")
        .workers(1)
        .build()
        .unwrap();
    // A new thread names itself once it starts: wait for that.
    let t = Instant::now();
    while kernel_slice_of("slc-w0").is_none() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let default = kernel_slice_of("slc-w0").expect("the worker thread");
    let release = Arc::new(AtomicBool::new(false));
    let r = release.clone();
    // Released on every way out of this test, a failed assertion included
    // (the runtime's drop waits for the spinner).
    struct Release(Arc<AtomicBool>);
    impl Drop for Release {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let _release = Release(release.clone());
    // Stuck in a loop without preemption points until released, while a
    // sleeper's timer waits for the worker: a hand-off.
    let spinner = rt.spawn(move || {
        while !r.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
    });
    let sleeper = rt.spawn(|| eevdf_rt::sleep(Duration::from_millis(2)));
    let t = Instant::now();
    while handoffs(&rt) == 0 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(handoffs(&rt), 1, "{}", rt.stats());
    sleeper.join().unwrap();
    // The new owner (the first extra thread) asked for 0.1 ms; the stuck
    // thread kept the default.
    let t = Instant::now();
    while kernel_slice_of("slc-h0") != Some(100_000) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(kernel_slice_of("slc-h0"), Some(100_000));
    assert_eq!(kernel_slice_of("slc-w0"), Some(default));
    // Once the stuck thread has given its green thread back, the two no
    // longer contend: the new owner returns to the default slice.
    release.store(true, Ordering::SeqCst);
    spinner.join().unwrap();
    assert!(all_exited(&rt));
    let t = Instant::now();
    while kernel_slice_of("slc-h0") != Some(default) && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        kernel_slice_of("slc-h0"),
        Some(default),
        "still the short slice"
    );
    assert_eq!(kernel_slice_of("slc-w0"), Some(default));
}

/// How many times this process's thread named `name` has gone to sleep
/// (`voluntary_ctxt_switches`), if there is one.
fn sleeps_of(name: &str) -> Option<u64> {
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let status = std::fs::read_to_string(e.path().join("status")).ok()?;
        return status
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok());
    }
    None
}

/// Two busy green threads pinned to each worker of `rt`, reaching preemption points
/// every 50 µs until `stop`: work always waits on both workers, and
/// neither stalls. Returns their handles.
fn keep_busy(rt: &Runtime, stop: &Arc<AtomicBool>) -> Vec<eevdf_rt::JoinHandle<()>> {
    let workers = rt.workers();
    (0..2 * workers)
        .map(|i| {
            let stop = stop.clone();
            eevdf_rt::task::Builder::new()
                .pin(i % workers)
                .spawn_on(rt, move || {
                    while !stop.load(Ordering::Relaxed) {
                        spin_for(Duration::from_micros(50));
                        eevdf_rt::preempt_point();
                    }
                })
                .unwrap()
        })
        .collect()
}

/// How many times the monitor slept in 500 ms beside `workers` healthy
/// busy workers, or `None` if the host kept the worker threads from their
/// CPUs for over 2.5% of the time (then a worker the host stops stands
/// still with work waiting, which is what the watch reports, and the
/// monitor looks closely and measures the steal time: nothing to
/// conclude). (No check that nothing was handed off: a host that pauses a
/// vCPU for a few milliseconds makes a healthy worker look stuck, its
/// thread's CPU clock running on, and schedstat does not show such a
/// pause.)
fn monitor_sleeps_beside_busy_workers(name: &str, workers: usize) -> Option<u64> {
    let rt = Builder::new()
        .workers(workers)
        .thread_name(name)
        .build()
        .unwrap();
    let monitor = format!("{name}-monitor");
    let stop = Arc::new(AtomicBool::new(false));
    let busy = keep_busy(&rt, &stop);
    std::thread::sleep(Duration::from_millis(100));
    let before = sleeps_of(&monitor).expect("the monitor thread");
    let delay0 = common::run_delay_of(&format!("{name}-w"));
    std::thread::sleep(Duration::from_millis(500));
    let after = sleeps_of(&monitor).expect("the monitor thread");
    let waited = Duration::from_nanos(common::run_delay_of(&format!("{name}-w")) - delay0);
    stop.store(true, Ordering::Relaxed);
    for b in busy {
        b.join().unwrap();
    }
    if waited > Duration::from_millis(25) {
        eprintln!("worker threads waited {waited:?} for a CPU: doze count not checked");
        return None;
    }
    Some(after - before)
}

/// While busy workers watch each other, the monitor thread dozes instead
/// of looking every few milliseconds: its wakeups land on the workers'
/// CPUs and delay other threads' wakeups there.
#[test]
fn the_monitor_dozes_while_busy_workers_watch_each_other() {
    let _s = serial();
    // Without the watch it looks every two thresholds while work waits:
    // about 125 times in 500 ms. Dozing, under 10 (a few more when a host
    // stall of a worker thread makes the other one wake it).
    if let Some(n) = monitor_sleeps_beside_busy_workers("dozing", 2) {
        assert!(
            n < 50,
            "the monitor woke {n} times in 500 ms beside two healthy busy workers"
        );
    }
}

/// A lone busy worker has no watcher, but its own ticks push the dead-man
/// switch back: the monitor dozes beside it too.
#[test]
fn the_monitor_dozes_beside_a_lone_busy_worker() {
    let _s = serial();
    if let Some(n) = monitor_sleeps_beside_busy_workers("dozeone", 1) {
        assert!(
            n < 50,
            "the monitor woke {n} times in 500 ms beside a healthy busy worker"
        );
    }
}

/// Blocks the worker(s) `block` three times for 150 ms each, on a runtime
/// of `workers` workers kept busy, after giving the
/// monitor time to start dozing; returns, per round, the longest time a
/// green thread pinned to a blocked worker stood still.
fn stall_gaps(name: &str, workers: usize, block: &[usize]) -> (Vec<Duration>, u64) {
    let rt = Builder::new()
        .workers(workers)
        .thread_name(name)
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let busy = keep_busy(&rt, &stop);
    // Each blocked worker's progress: when a green thread pinned there
    // last got past a preemption point, and the longest gap seen.
    type Progress = Arc<std::sync::Mutex<(Instant, Duration)>>;
    let progress: Vec<(Progress, eevdf_rt::JoinHandle<()>)> = block
        .iter()
        .map(|&w| {
            let last: Progress = Arc::new(std::sync::Mutex::new((Instant::now(), Duration::ZERO)));
            let (stop, l) = (stop.clone(), last.clone());
            let h = eevdf_rt::task::Builder::new()
                .pin(w)
                .spawn_on(&rt, move || {
                    while !stop.load(Ordering::Relaxed) {
                        spin_for(Duration::from_micros(20));
                        eevdf_rt::preempt_point();
                        let mut l = l.lock().unwrap();
                        let now = Instant::now();
                        l.1 = l.1.max(now - l.0);
                        l.0 = now;
                    }
                })
                .unwrap();
            (last, h)
        })
        .collect();
    let mut gaps = Vec::new();
    for _ in 0..3 {
        // Long enough for the monitor to start dozing.
        std::thread::sleep(Duration::from_millis(150));
        for (l, _) in &progress {
            *l.lock().unwrap() = (Instant::now(), Duration::ZERO);
        }
        let blockers: Vec<_> = block
            .iter()
            .map(|&w| {
                eevdf_rt::task::Builder::new()
                    .pin(w)
                    .spawn_on(&rt, || std::thread::sleep(Duration::from_millis(150)))
                    .unwrap()
            })
            .collect();
        for b in blockers {
            b.join().unwrap();
        }
        gaps.push(
            progress
                .iter()
                .map(|(l, _)| l.lock().unwrap().1)
                .max()
                .unwrap(),
        );
    }
    stop.store(true, Ordering::Relaxed);
    for (_, h) in progress {
        h.join().unwrap();
    }
    for b in busy {
        b.join().unwrap();
    }
    (gaps, handoffs(&rt))
}

/// Runs [`stall_gaps`] and expects every round's gap under `bound` and at
/// least `min_handoffs` hand-offs. A missed stall keeps a worker still for
/// the whole blocking call (150 ms) in every round of every attempt, so
/// the scenario may run up to three times: a host that descheduled the
/// test's threads for tens of milliseconds (another process keeping both
/// CPUs busy) fails one attempt, not three.
fn expect_stalls_found(
    name: &str,
    workers: usize,
    block: &[usize],
    bound: Duration,
    min_handoffs: u64,
) {
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (gaps, handoffs) = stall_gaps(name, workers, block);
        if gaps.iter().all(|g| *g < bound) && handoffs >= min_handoffs {
            return;
        }
        seen.push((gaps, handoffs));
    }
    panic!(
        "workers {block:?} stood still behind blocking calls for longer than \
         {bound:?} (per attempt: round gaps, hand-offs; at least \
         {min_handoffs} expected): {seen:?}"
    );
}

/// A worker stuck in a blocking call while the monitor dozes is seen by
/// the other worker, which wakes the monitor: the stuck worker's other
/// green threads wait about a tick and a few thresholds, not a doze.
#[test]
fn a_stall_is_found_while_the_monitor_dozes() {
    let _s = serial();
    // Found by the other worker: a tick and about three 2 ms thresholds.
    // Missed by the watch, it would wait while worker 1 keeps the doze
    // going, until the blocking call returns (150 ms).
    expect_stalls_found("dozestall", 2, &[0], Duration::from_millis(50), 3);
}

/// Both workers stuck at once while the monitor dozes: no watcher is left
/// to report it, and the dead-man switch ends the doze two thresholds
/// after the last watch.
#[test]
fn every_watcher_stalling_at_once_is_found_within_a_doze() {
    let _s = serial();
    // Two thresholds, then a look as usual: about 10 ms. A doze that only
    // a worker could end would last until the calls return (150 ms); a
    // fixed 100 ms doze failed this bound too.
    expect_stalls_found("dozeboth", 2, &[0, 1], Duration::from_millis(60), 6);
}

/// A lone busy worker stuck in a blocking call while the monitor dozes
/// beside it: the dead-man switch its ticks kept pushing back fires, and
/// the monitor hands the worker off.
#[test]
fn a_lone_worker_stall_is_found_while_the_monitor_dozes() {
    let _s = serial();
    expect_stalls_found("dozelone", 1, &[0], Duration::from_millis(60), 3);
}
