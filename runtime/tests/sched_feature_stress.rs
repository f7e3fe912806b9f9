//! A mixed workload under many scheduler feature sets, with 1, 2 and 3
//! workers: every wait must complete (a watchdog per configuration) and
//! every count must be exact. It looks for lost wakeups, hangs and wrong
//! results that only a non-default set of switches, or a set changed while
//! tasks run, would show.
//!
//! The sets: the defaults; each switch flipped from its default alone; the
//! `kernel` preset and two variants; all off; all on; and eight random
//! combinations. Each configuration also draws its idle spin, tick,
//! hand-off threshold and pinning at random (named in its output). The
//! workload runs all at once: channel ping-pong between green threads and
//! OS threads, mutex and condition-variable hand-offs, sleeps and
//! timeouts, spawn-and-join storms, park/unpark from OS threads, yield
//! loops at several nice levels and slices with a CPU hog and blocking
//! calls, pinned and affinity-limited tasks, batch and idle policies, and
//! an OS thread that changes tasks' nice levels and slices as they run.
//! Afterwards every task must have exited and the runtime must drop.
//!
//! By default the workload is small enough for CI (`FS_SCALE=25`: about
//! 20 s for all 117 configurations in a debug build on two cores). For a
//! longer search:
//!
//! ```text
//! FS_SCALE=300 FS_REPEAT=3 FS_SEED=7 cargo test --release -p eevdf-rt \
//!     --test sched_feature_stress -- --test-threads=1 --nocapture
//! ```
//!
//! Environment: `FS_ONLY` (one feature spec instead of the sets),
//! `FS_WORKERS` (one worker count), `FS_SEED` (base seed, default 1),
//! `FS_REPEAT` (repetitions, default 1), `FS_SCALE` (workload size in
//! percent, default 25), `FS_WATCHDOG` (seconds per configuration, default
//! 60), `FS_PLAIN` (no random builder settings), `FS_VERBOSE` (per-phase
//! counts).

mod common;

use common::Rng;
use eevdf_rt::sched::{Feature, Features};
use eevdf_rt::sync::channel::{self, RecvTimeoutError};
use eevdf_rt::sync::{Condvar, Mutex};
use eevdf_rt::{Builder, Runtime, Task};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env_u64(k: &str, d: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn scale(n: u64) -> u64 {
    (n * env_u64("FS_SCALE", 25) / 100).max(1)
}

/// Progress of each phase (printed when a configuration hangs).
#[derive(Default)]
struct Progress {
    pp_os: AtomicU64,
    pp_green: AtomicU64,
    rr_turns: AtomicU64,
    mtx: AtomicU64,
    sleeps: AtomicU64,
    spawned: AtomicU64,
    unparks: AtomicU64,
    yields: AtomicU64,
    phases_done: AtomicU64,
    phase_names_done: std::sync::Mutex<Vec<&'static str>>,
    errors: std::sync::Mutex<Vec<String>>,
}

impl Progress {
    fn snapshot(&self) -> String {
        format!(
            "pp_os={} pp_green={} rr_turns={} mtx={} sleeps={} spawned={} unparks={} yields={} phases_done={} {:?} errors={:?}",
            self.pp_os.load(SeqCst),
            self.pp_green.load(SeqCst),
            self.rr_turns.load(SeqCst),
            self.mtx.load(SeqCst),
            self.sleeps.load(SeqCst),
            self.spawned.load(SeqCst),
            self.unparks.load(SeqCst),
            self.yields.load(SeqCst),
            self.phases_done.load(SeqCst),
            self.phase_names_done.lock().unwrap(),
            self.errors.lock().unwrap(),
        )
    }
    fn done(&self, name: &'static str) {
        self.phases_done.fetch_add(1, SeqCst);
        self.phase_names_done.lock().unwrap().push(name);
    }
}

/// Tasks that the disturber re-nices / re-slices from an OS thread.
type Victims = Arc<std::sync::Mutex<Vec<Task>>>;

fn register(v: &Victims) {
    v.lock().unwrap().push(eevdf_rt::current());
}

fn green_spawn<T: Send + 'static>(
    rt: &Runtime,
    nice: i32,
    slice_us: Option<u64>,
    f: impl FnOnce() -> T + Send + 'static,
) -> eevdf_rt::JoinHandle<T> {
    let mut b = eevdf_rt::task::Builder::new().nice(nice);
    if let Some(s) = slice_us {
        b = b.slice(Duration::from_micros(s));
    }
    b.spawn_on(rt, f).unwrap()
}

// ------------------------------------------------------------ phases

/// A: channel ping-pong, OS thread <-> green thread, and green <-> green.
fn phase_pingpong(rt: &Runtime, seed: u64, p: &'static Progress, victims: &Victims) {
    let rounds = scale(1500);
    let mut rng = Rng::new(seed ^ 0xa);
    std::thread::scope(|s| {
        // OS <-> green, three channel kinds
        for kind in 0..3u64 {
            let mk = |k: u64| match k {
                0 => channel::bounded::<u64>(0),
                1 => channel::bounded::<u64>(1),
                _ => channel::unbounded::<u64>(),
            };
            let (tx_a, rx_a) = mk(kind);
            let (tx_b, rx_b) = mk((kind + 1) % 3);
            let nice = [0, 5, -3][kind as usize];
            let slice = [None, Some(100), Some(3000)][kind as usize];
            let v = victims.clone();
            let g = green_spawn(rt, nice, slice, move || {
                register(&v);
                let mut n = 0;
                while let Ok(x) = rx_a.recv() {
                    tx_b.send(x * 2 + 1).unwrap();
                    n += 1;
                }
                n
            });
            let timed = rng.chance(2);
            s.spawn(move || {
                for i in 0..rounds {
                    tx_a.send(i).unwrap();
                    let r = if timed {
                        loop {
                            match rx_b.recv_timeout(Duration::from_micros(50)) {
                                Ok(r) => break r,
                                Err(RecvTimeoutError::Timeout) => continue,
                                Err(e) => panic!("pingpong os recv: {e:?}"),
                            }
                        }
                    } else {
                        rx_b.recv().unwrap()
                    };
                    assert_eq!(r, i * 2 + 1, "pingpong os kind {kind}");
                    p.pp_os.fetch_add(1, Relaxed);
                }
                drop(tx_a);
                assert_eq!(g.join().unwrap(), rounds, "pingpong os kind {kind} count");
            });
        }
        // green <-> green pairs
        for pair in 0..3u64 {
            let (tx_a, rx_a) = channel::bounded::<u64>(pair as usize % 2);
            let (tx_b, rx_b) = channel::bounded::<u64>(0);
            let v = victims.clone();
            let echo = green_spawn(rt, 0, None, move || {
                register(&v);
                let mut n = 0;
                while let Ok(x) = rx_a.recv() {
                    if n % 97 == 0 {
                        eevdf_rt::yield_now();
                    }
                    if n % 211 == 5 {
                        common::burn(Duration::from_micros(300));
                    }
                    tx_b.send(x + 7).unwrap();
                    n += 1;
                }
                n
            });
            let nice = [0, 10, -5][pair as usize];
            let slice = [Some(100), None, Some(700)][pair as usize];
            let driver = green_spawn(rt, nice, slice, move || {
                for i in 0..rounds {
                    tx_a.send(i).unwrap();
                    let r = if i % 5 == 0 {
                        loop {
                            match rx_b.recv_timeout(Duration::from_micros(30)) {
                                Ok(r) => break r,
                                Err(RecvTimeoutError::Timeout) => continue,
                                Err(e) => panic!("pingpong green recv: {e:?}"),
                            }
                        }
                    } else {
                        rx_b.recv().unwrap()
                    };
                    assert_eq!(r, i + 7, "pingpong green pair {pair}");
                    p.pp_green.fetch_add(1, Relaxed);
                }
                drop(tx_a);
                echo.join().unwrap()
            });
            s.spawn(move || {
                let n = driver.join().unwrap();
                assert_eq!(n, rounds, "pingpong green pair {pair} count");
            });
        }
    });
    p.done("pingpong");
}

/// Members of phase B's round robin.
const K: u64 = 5;

/// One member of phase B's round robin: takes turn `i` of every `K` until
/// `total` turns were taken, waiting on the condition variable (sometimes
/// with a timeout) between its turns; `turns` counts its turns for the
/// progress report, and a green member yields now and then.
fn round_robin(
    state: &(Mutex<u64>, Condvar),
    per: &[AtomicU64],
    turns: Option<&AtomicU64>,
    total: u64,
    i: u64,
    green: bool,
    mut r: Rng,
) {
    let (m, cv) = state;
    loop {
        let mut g = m.lock();
        while *g < total && *g % K != i {
            if r.chance(3) {
                g = cv.wait_timeout(g, Duration::from_micros(r.below(300))).0;
            } else {
                g = cv.wait(g);
            }
        }
        if *g >= total {
            break;
        }
        *g += 1;
        per[i as usize].fetch_add(1, Relaxed);
        if let Some(t) = turns {
            t.fetch_add(1, Relaxed);
        }
        if r.chance(2) {
            cv.notify_all();
            drop(g);
        } else {
            drop(g);
            cv.notify_all();
        }
        if green && r.chance(50) {
            eevdf_rt::yield_now();
        }
    }
}

/// B: mutex/condvar round-robin hand-offs among green and OS threads, and
/// a mutex counter.
fn phase_mutex(rt: &Runtime, seed: u64, p: &'static Progress, victims: &Victims) {
    let total = scale(1500) / K * K;
    let state = Arc::new((Mutex::new(0u64), Condvar::new()));
    let per = Arc::new((0..K).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
    let counter = Arc::new(Mutex::new(0u64));
    let mut rng = Rng::new(seed ^ 0xb);
    std::thread::scope(|s| {
        let mut greens = Vec::new();
        for i in 0..K {
            let seed_i = rng.next();
            if i == 2 {
                let (state, per) = (&state, &per);
                s.spawn(move || {
                    round_robin(
                        state,
                        per,
                        Some(&p.rr_turns),
                        total,
                        i,
                        false,
                        Rng::new(seed_i),
                    )
                });
            } else {
                let (state, per, v) = (state.clone(), per.clone(), victims.clone());
                let nice = [0, 7, 0, -4, 19][i as usize];
                let slice = [None, None, None, Some(100), Some(5000)][i as usize];
                greens.push(green_spawn(rt, nice, slice, move || {
                    register(&v);
                    round_robin(&state, &per, None, total, i, true, Rng::new(seed_i));
                }));
            }
        }
        // mutex counter: 4 green + 1 OS thread, yields inside the section
        let iters = scale(2000);
        let mut cs = Vec::new();
        for j in 0..4u64 {
            let c = counter.clone();
            cs.push(green_spawn(
                rt,
                j as i32 * 3 - 3,
                (j == 1).then_some(100),
                move || {
                    for k in 0..iters {
                        let mut g = c.lock();
                        let v = *g;
                        if k % 64 == j {
                            eevdf_rt::yield_now();
                        }
                        *g = v + 1;
                    }
                },
            ));
        }
        let c = counter.clone();
        s.spawn(move || {
            for k in 0..iters {
                let mut g = c.lock();
                let v = *g;
                if k % 128 == 0 {
                    std::thread::yield_now();
                }
                *g = v + 1;
                p.mtx.fetch_add(1, Relaxed);
            }
        });
        for g in greens {
            g.join().unwrap();
        }
        for c in cs {
            c.join().unwrap();
        }
    });
    assert_eq!(*state.0.lock(), total, "round-robin turns");
    // turns by green threads were not counted in rr_turns; per[] has all
    for i in 0..K {
        assert_eq!(
            per[i as usize].load(SeqCst),
            total / K,
            "round-robin share of {i}"
        );
    }
    assert_eq!(*counter.lock(), scale(2000) * 5, "mutex counter");
    p.done("mutex");
}

/// C: many short sleeps and timeouts.
fn phase_sleeps(rt: &Runtime, seed: u64, p: &'static Progress) {
    let n = 40u64;
    let iters = scale(30);
    let hs: Vec<_> = (0..n)
        .map(|t| {
            let mut r = Rng::new(seed ^ 0xc ^ (t << 8));
            let nice = (r.below(20) as i32) - 5;
            let slice = r.chance(3).then(|| 100 + r.below(2000));
            green_spawn(rt, nice, slice, move || {
                let (_tx, rx) = channel::bounded::<u8>(1);
                let m = Mutex::new(());
                let cv = Condvar::new();
                let slack = Duration::from_millis(1);
                let mut done = 0;
                for _ in 0..iters {
                    let d = Duration::from_micros(r.below(400));
                    let t0 = Instant::now();
                    match r.below(5) {
                        0 => {
                            eevdf_rt::sleep(d);
                            assert!(
                                t0.elapsed() + slack >= d,
                                "sleep({d:?}) returned after {:?}",
                                t0.elapsed()
                            );
                        }
                        1 => {
                            eevdf_rt::sleep_until(t0 + d);
                            assert!(t0.elapsed() + slack >= d, "sleep_until returned early");
                        }
                        2 => {
                            eevdf_rt::park_timeout(d);
                        }
                        3 => {
                            let e = rx.recv_timeout(d);
                            assert_eq!(e, Err(RecvTimeoutError::Timeout));
                            assert!(
                                t0.elapsed() + slack >= d,
                                "recv_timeout({d:?}) returned after {:?}",
                                t0.elapsed()
                            );
                        }
                        _ => {
                            let (_g, to) = cv.wait_timeout(m.lock(), d);
                            assert!(to, "condvar wait_timeout without notify did not time out");
                        }
                    }
                    done += 1;
                    p.sleeps.fetch_add(1, Relaxed);
                }
                done
            })
        })
        .collect();
    let sum: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, n * iters, "sleeps");
    p.done("sleeps");
}

/// D: spawn+join storms, nested, from green and OS threads.
fn phase_spawn(rt: &Runtime, seed: u64, p: &'static Progress) {
    let parents = 6u64;
    let kids = scale(40);
    let hs: Vec<_> = (0..parents)
        .map(|pi| {
            green_spawn(rt, 0, None, move || {
                let mut r = Rng::new(seed ^ 0xd ^ (pi << 16));
                let mut total = 0u64;
                // spawn-and-join-at-once pairs
                for c in 0..kids / 2 {
                    let h = eevdf_rt::spawn(move || c * 3);
                    p.spawned.fetch_add(1, Relaxed);
                    total += h.join().unwrap();
                }
                // a burst, with grandchildren
                let burst: Vec<_> = (0..kids)
                    .map(|c| {
                        let mode = r.below(4);
                        let nice = r.below(10) as i32 - 3;
                        let slice = r
                            .chance(4)
                            .then(|| Duration::from_micros(100 + r.below(900)));
                        let mut b = eevdf_rt::task::Builder::new().nice(nice);
                        if let Some(s) = slice {
                            b = b.slice(s);
                        }
                        p.spawned.fetch_add(1, Relaxed);
                        b.spawn(move || {
                            let mut v = pi * 1_000_000 + c;
                            match mode {
                                0 => eevdf_rt::yield_now(),
                                1 => eevdf_rt::sleep(Duration::from_micros(c % 50)),
                                2 => {
                                    let g: Vec<_> =
                                        (0..3).map(|k| eevdf_rt::spawn(move || k + 1)).collect();
                                    p.spawned.fetch_add(3, Relaxed);
                                    v += g.into_iter().map(|h| h.join().unwrap()).sum::<u64>();
                                }
                                _ => eevdf_rt::preempt_point(),
                            }
                            (v, mode)
                        })
                        .unwrap()
                    })
                    .collect();
                for h in burst {
                    let (v, mode) = h.join().unwrap();
                    total += v - if mode == 2 { 6 } else { 0 };
                }
                total
            })
        })
        .collect();
    // from this OS thread too
    let os: Vec<_> = (0..scale(100)).map(|i| rt.spawn(move || i)).collect();
    let os_sum: u64 = os.into_iter().map(|h| h.join().unwrap()).sum();
    let n = scale(100);
    assert_eq!(os_sum, n * (n - 1) / 2, "os spawns");
    let sum: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    let expect: u64 = (0..parents)
        .map(|pi| {
            (0..kids / 2).map(|c| c * 3).sum::<u64>()
                + (0..kids).map(|c| pi * 1_000_000 + c).sum::<u64>()
        })
        .sum();
    assert_eq!(sum, expect, "spawn storm sum");
    p.done("spawn");
}

/// E: park/unpark driven from OS threads: each round an OS thread bumps a
/// task's sequence number and unparks it; the task acks.
fn phase_park(rt: &Runtime, seed: u64, p: &'static Progress, victims: &Victims) {
    let tasks = 6usize;
    let rounds = scale(400);
    let seq: Arc<Vec<AtomicU64>> = Arc::new((0..tasks).map(|_| AtomicU64::new(0)).collect());
    let ack: Arc<Vec<AtomicU64>> = Arc::new((0..tasks).map(|_| AtomicU64::new(0)).collect());
    let handles: Vec<_> = (0..tasks)
        .map(|i| {
            let (seq, ack, v) = (seq.clone(), ack.clone(), victims.clone());
            let nice = [0, 3, -2, 12, 0, 0][i];
            let slice = [None, Some(100), None, None, Some(2000), Some(150)][i];
            green_spawn(rt, nice, slice, move || {
                register(&v);
                let mut r = Rng::new(seed ^ 0xe ^ i as u64);
                let mut parks = 0u64;
                for round in 1..=rounds {
                    while seq[i].load(Acquire) < round {
                        if r.chance(4) {
                            eevdf_rt::park_timeout(Duration::from_micros(r.below(200)));
                        } else {
                            eevdf_rt::park();
                        }
                        parks += 1;
                    }
                    ack[i].store(round, Release);
                }
                parks
            })
        })
        .collect();
    let tasks_h: Vec<Task> = handles.iter().map(|h| h.task()).collect();
    std::thread::scope(|s| {
        // two OS unparkers, each owning half the tasks
        for half in 0..2 {
            let (seq, ack, th) = (&seq, &ack, &tasks_h);
            s.spawn(move || {
                let mine: Vec<usize> = (0..tasks).filter(|i| i % 2 == half).collect();
                for round in 1..=rounds {
                    for &i in &mine {
                        seq[i].store(round, Release);
                        th[i].unpark();
                        p.unparks.fetch_add(1, Relaxed);
                    }
                    for &i in &mine {
                        let t0 = Instant::now();
                        let mut spins = 0u32;
                        while ack[i].load(Acquire) < round {
                            spins += 1;
                            if spins < 50 {
                                std::thread::yield_now();
                            } else {
                                std::thread::sleep(Duration::from_micros(20));
                            }
                            assert!(
                                t0.elapsed() < Duration::from_secs(20),
                                "park task {i} never acked round {round} (lost unpark)"
                            );
                        }
                    }
                }
            });
        }
    });
    for h in handles {
        h.join().unwrap();
    }
    p.done("park");
}

/// F: yield loops (with nice levels, short slices, a CPU hog with
/// preemption points and a blocking hand-off now and then).
fn phase_yield(rt: &Runtime, p: &'static Progress, victims: &Victims, stop: Arc<AtomicBool>) {
    let iters = scale(4000);
    let cfgs: [(i32, Option<u64>); 5] = [
        (0, None),
        (10, None),
        (-5, None),
        (0, Some(100)),
        (19, Some(100)),
    ];
    let hs: Vec<_> = cfgs
        .iter()
        .enumerate()
        .map(|(k, &(nice, slice))| {
            let v = victims.clone();
            green_spawn(rt, nice, slice, move || {
                register(&v);
                let mut n = 0u64;
                for i in 0..iters {
                    eevdf_rt::yield_now();
                    n += 1;
                    if k == 2 && i % 1500 == 0 {
                        // blocking call: the worker may be handed off
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    if k == 4 && i % 1000 == 7 {
                        // no preemption point for a while: a stale worker (WA_STALE)
                        common::burn(Duration::from_micros(300 + (i % 3) * 1000));
                    }
                    p.yields.fetch_add(1, Relaxed);
                }
                n
            })
        })
        .collect();
    // a CPU hog with preemption points, until the others are done
    let v = victims.clone();
    let hog = green_spawn(rt, -2, None, move || {
        register(&v);
        let mut n = 0u64;
        while !stop.load(Relaxed) {
            let t = Instant::now();
            while t.elapsed() < Duration::from_micros(200) {
                std::hint::spin_loop();
            }
            eevdf_rt::preempt_point();
            n += 1;
        }
        n
    });
    let sum: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sum, iters * cfgs.len() as u64, "yields");
    // the hog is stopped by the driver once all other phases are done
    assert!(hog.join().unwrap() > 0);
    p.done("yield");
}

/// H: affinity and policies: a token ring of tasks pinned to each worker,
/// tasks with an affinity subset, and Batch / Idle tasks; every wakeup must
/// land on an allowed worker; plus spurious unparks from an OS thread.
fn phase_affinity(rt: &Runtime, seed: u64, p: &'static Progress) {
    use eevdf_rt::sched::Policy;
    let w = rt.workers();
    let laps = scale(150);
    // members: (affinity, policy, nice, slice)
    let mut members: Vec<(Vec<usize>, Policy, i32, Option<u64>)> = Vec::new();
    for i in 0..w {
        members.push((vec![i], Policy::Normal, 0, (i % 2 == 1).then_some(100)));
    }
    members.push(((0..w).collect(), Policy::Batch, 0, None));
    members.push(((0..w).collect(), Policy::Idle, 0, None));
    members.push((vec![w - 1, 0], Policy::Normal, 8, Some(200)));
    members.push((vec![(w - 1) / 2], Policy::Normal, -6, None));
    let n = members.len();
    let chans: Vec<_> = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                channel::bounded::<u64>(0)
            } else {
                channel::bounded::<u64>(1)
            }
        })
        .collect();
    let txs: Vec<_> = chans.iter().map(|c| c.0.clone()).collect();
    let rxs: Vec<_> = chans.into_iter().map(|c| c.1).collect();
    let mut rxs: Vec<Option<_>> = rxs.into_iter().map(Some).collect();
    let hs: Vec<_> = members
        .iter()
        .enumerate()
        .map(|(i, (aff, pol, nice, slice))| {
            let rx = rxs[i].take().unwrap();
            let tx = txs[(i + 1) % n].clone();
            let aff2 = aff.clone();
            let mut b = eevdf_rt::task::Builder::new()
                .affinity(aff.clone())
                .policy(*pol)
                .nice(*nice);
            if let Some(s) = slice {
                b = b.slice(Duration::from_micros(*s));
            }
            b.spawn_on(rt, move || {
                let mut r = Rng::new(seed ^ 0x4 ^ i as u64);
                let check = |what: &str| {
                    let on = eevdf_rt::current().worker();
                    assert!(
                        aff2.contains(&on),
                        "member {i} affinity {aff2:?} ran on worker {on} after {what}"
                    );
                };
                check("start");
                let mut got = 0u64;
                if i == 0 {
                    tx.send(0).unwrap();
                }
                while let Ok(v) = rx.recv() {
                    check("recv");
                    got += 1;
                    match r.below(20) {
                        0 => {
                            eevdf_rt::sleep(Duration::from_micros(r.below(100)));
                            check("sleep");
                        }
                        1 => {
                            eevdf_rt::park_timeout(Duration::from_micros(r.below(50)));
                            check("park_timeout");
                        }
                        2 => {
                            eevdf_rt::yield_now();
                            check("yield");
                        }
                        3 => {
                            let h = eevdf_rt::spawn(|| eevdf_rt::current().worker());
                            let _ = h.join().unwrap();
                            check("join");
                        }
                        _ => {}
                    }
                    let next = v + 1;
                    if next == laps * n as u64 {
                        break; // the ring is done: drop our sender
                    }
                    if tx.send(next).is_err() {
                        break;
                    }
                    check("send");
                }
                drop(tx);
                got
            })
            .unwrap()
        })
        .collect();
    drop(txs);
    let tasks: Vec<Task> = hs.iter().map(|h| h.task()).collect();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (stop, tasks) = (&stop, &tasks);
        s.spawn(move || {
            let mut r = Rng::new(seed ^ 0x77);
            while !stop.load(Relaxed) {
                tasks[r.below(tasks.len() as u64) as usize].unpark();
                std::thread::sleep(Duration::from_micros(r.below(300)));
            }
        });
        let total: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
        stop.store(true, Relaxed);
        assert_eq!(total, laps * n as u64, "affinity ring hops");
    });
    p.done("affinity");
}

/// G: an OS thread that re-nices / re-slices registered tasks while they run.
fn disturber(victims: &Victims, stop: &AtomicBool, seed: u64) -> u64 {
    let mut r = Rng::new(seed ^ 0xf);
    let mut n = 0;
    while !stop.load(Relaxed) {
        let t = {
            let v = victims.lock().unwrap();
            if v.is_empty() {
                None
            } else {
                Some(v[r.below(v.len() as u64) as usize].clone())
            }
        };
        if let Some(t) = t {
            if r.chance(2) {
                t.set_nice(r.below(25) as i32 - 5).unwrap();
            } else if r.chance(3) {
                t.set_slice(None).unwrap();
            } else {
                t.set_slice(Some(Duration::from_micros(100 + r.below(4000))))
                    .unwrap();
            }
            n += 1;
        }
        std::thread::sleep(Duration::from_micros(100 + r.below(400)));
    }
    n
}

fn workload(rt: &Runtime, seed: u64, p: &'static Progress, dynamic: Option<Vec<String>>) {
    let victims: Victims = Arc::new(std::sync::Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let hog_stop = Arc::new(AtomicBool::new(false));
    let errs = |name: &'static str, r: std::thread::Result<()>| {
        if let Err(e) = r {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            p.errors.lock().unwrap().push(format!("{name}: {msg}"));
        }
    };
    std::thread::scope(|s| {
        let (v, st) = (&victims, &stop);
        s.spawn(move || disturber(v, st, seed));
        if let Some(specs) = dynamic.clone() {
            let st = &stop;
            s.spawn(move || {
                let mut r = Rng::new(seed ^ 0x5e7);
                while !st.load(Relaxed) {
                    let spec = &specs[r.below(specs.len() as u64) as usize];
                    rt.set_features(spec).unwrap();
                    std::thread::sleep(Duration::from_micros(200 + r.below(2000)));
                }
            });
        }
        let hs = vec![
            (
                "pingpong",
                s.spawn(|| phase_pingpong(rt, seed, p, &victims)),
            ),
            ("mutex", s.spawn(|| phase_mutex(rt, seed, p, &victims))),
            ("sleeps", s.spawn(|| phase_sleeps(rt, seed, p))),
            ("spawn", s.spawn(|| phase_spawn(rt, seed, p))),
            ("park", s.spawn(|| phase_park(rt, seed, p, &victims))),
            ("affinity", s.spawn(|| phase_affinity(rt, seed, p))),
            ("yield", {
                let hs = hog_stop.clone();
                s.spawn(|| phase_yield(rt, p, &victims, hs))
            }),
        ];
        let mut yield_h = None;
        for (name, h) in hs {
            if name == "yield" {
                yield_h = Some(h);
            } else {
                errs(name, h.join());
            }
        }
        hog_stop.store(true, Relaxed);
        errs("yield", yield_h.unwrap().join());
        stop.store(true, Relaxed);
    });
    let errors = p.errors.lock().unwrap().clone();
    assert!(errors.is_empty(), "phase failures: {errors:#?}");
}

// ------------------------------------------------------------ matrix

fn feature_sets() -> Vec<String> {
    if let Ok(only) = std::env::var("FS_ONLY") {
        return vec![only];
    }
    let mut v = vec!["default".to_string()];
    for f in Feature::ALL {
        if f.default_enabled() {
            v.push(format!("NO_{}", f.name()));
        } else {
            v.push(f.name().to_string());
        }
    }
    v.push("kernel".into());
    v.push("kernel,TICK_ELIGIBLE,NEXT_BUDDY".into());
    v.push("kernel,SPAWN_LOCAL,NO_DELAY_DEQUEUE".into());
    let all_off: Vec<String> = Feature::ALL
        .iter()
        .map(|f| format!("NO_{}", f.name()))
        .collect();
    v.push(all_off.join(","));
    let all_on: Vec<String> = Feature::ALL.iter().map(|f| f.name().to_string()).collect();
    v.push(all_on.join(","));
    let mut r = Rng::new(env_u64("FS_SEED", 1) ^ 0xfea7);
    for _ in 0..8 {
        let mut f = Features::default();
        for feat in Feature::ALL {
            f.set(*feat, r.chance(2));
        }
        v.push(f.diff_from_default());
    }
    v
}

struct Outcome {
    name: String,
    result: Result<Duration, String>,
}

fn run_config(features: &str, workers: usize, seed: u64, dynamic: Option<Vec<String>>) -> Outcome {
    let name = format!(
        "features={features} workers={workers} seed={seed}{} profile={}",
        if dynamic.is_some() {
            " (dynamic set_features)"
        } else {
            ""
        },
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    let watchdog = Duration::from_secs(env_u64("FS_WATCHDOG", 60));
    let mut tr = Rng::new(seed ^ 0xb1d);
    let idle_spin = [0u64, 50, 1000][tr.below(3) as usize];
    let tick = [1000u64, 250, 4000][tr.below(3) as usize];
    let handoff = [Some(2000u64), None, Some(500)][tr.below(3) as usize];
    let pin = tr.chance(2);
    let name =
        format!("{name} idle_spin={idle_spin}us tick={tick}us handoff={handoff:?}us pin={pin}");
    let mut b = Builder::new().workers(workers).features(features);
    if std::env::var("FS_PLAIN").is_err() {
        b = b
            .idle_spin(Duration::from_micros(idle_spin))
            .tick(Duration::from_micros(tick))
            .handoff(handoff.map(Duration::from_micros))
            .pin_workers(pin);
    }
    let rt = match b.build() {
        Ok(rt) => Arc::new(rt),
        Err(e) => {
            return Outcome {
                name,
                result: Err(format!("build: {e:?}")),
            }
        }
    };
    // leaked on purpose: a hung configuration keeps referring to it
    let p: &'static Progress = Box::leak(Box::new(Progress::default()));
    let t0 = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    let rt2 = rt.clone();
    let driver = std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            workload(&rt2, seed, p, dynamic);
            // every task must have exited (the hog too)
            let t = Instant::now();
            while rt2.live_tasks() != 0 && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(rt2.live_tasks(), 0, "tasks left behind");
        }));
        let _ = tx.send(r.map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic".into())
        }));
    });
    let result = match rx.recv_timeout(watchdog) {
        Ok(Ok(())) => {
            driver.join().unwrap();
            // shutdown must complete too
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                drop(rt);
                let _ = tx.send(());
            });
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(()) => {
                    if std::env::var("FS_VERBOSE").is_ok() {
                        eprintln!("  progress: {}", p.snapshot());
                    }
                    Ok(t0.elapsed())
                }
                Err(_) => Err("runtime drop (shutdown) did not finish within 10 s".into()),
            }
        }
        Ok(Err(msg)) => Err(format!("panic: {msg}\nprogress: {}", p.snapshot())),
        Err(_) => {
            let msg = format!(
                "HANG: not finished within {watchdog:?}\nprogress: {}\ndebug_state:\n{}\nstats:\n{}",
                p.snapshot(),
                rt.debug_state(),
                rt.stats()
            );
            std::mem::forget(rt);
            Err(msg)
        }
    };
    Outcome { name, result }
}

fn matrix(workers: usize) {
    if let Ok(w) = std::env::var("FS_WORKERS") {
        if w.parse::<usize>().unwrap() != workers {
            return;
        }
    }
    let seed0 = env_u64("FS_SEED", 1);
    let repeat = env_u64("FS_REPEAT", 1);
    let sets = feature_sets();
    let t0 = Instant::now();
    let mut failures = Vec::new();
    let mut n = 0;
    for rep in 0..repeat {
        for (k, f) in sets.iter().enumerate() {
            let seed = seed0 + rep * 1000 + k as u64;
            let o = run_config(f, workers, seed, None);
            n += 1;
            match &o.result {
                Ok(d) => eprintln!("ok   {} in {:?}", o.name, d),
                Err(e) => {
                    eprintln!("FAIL {}\n{}", o.name, e);
                    failures.push(format!("{}: {}", o.name, e));
                }
            }
        }
    }
    eprintln!(
        "workers={workers}: {n} configurations, {} failed, {:?}",
        failures.len(),
        t0.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn feature_matrix_1_worker() {
    matrix(1);
}

#[test]
fn feature_matrix_2_workers() {
    matrix(2);
}

#[test]
fn feature_matrix_3_workers() {
    matrix(3);
}

/// Feature sets switched at random while the workload runs.
#[test]
fn feature_dynamic_switching() {
    if std::env::var("FS_ONLY").is_ok() {
        return;
    }
    let mut specs: Vec<String> = feature_sets();
    specs.retain(|s| s != "default");
    specs.push("default".into());
    let seed0 = env_u64("FS_SEED", 1);
    let mut failures = Vec::new();
    for workers in 1..=3 {
        if let Ok(w) = std::env::var("FS_WORKERS") {
            if w.parse::<usize>().unwrap() != workers {
                continue;
            }
        }
        for rep in 0..env_u64("FS_REPEAT", 1) {
            let o = run_config("default", workers, seed0 + 500 + rep, Some(specs.clone()));
            match &o.result {
                Ok(d) => eprintln!("ok   {} in {:?}", o.name, d),
                Err(e) => {
                    eprintln!("FAIL {}\n{}", o.name, e);
                    failures.push(format!("{}: {}", o.name, e));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
