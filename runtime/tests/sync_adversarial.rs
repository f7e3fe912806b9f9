//! Adversarial randomized stress of the blocking primitives: green threads
//! on 2-4 workers and plain OS threads sharing one Mutex / Condvar /
//! Semaphore / RwLock / channel, with very short timeouts racing wakeups,
//! disconnects mid-flight, hand-offs (std::thread::sleep / spins of 3-10 ms
//! inside green threads), nice/slice changes and yields.
//!
//! Every run checks exact invariants and is bounded by a watchdog that
//! aborts the process with the seed and configuration (a hang is a finding).
//!
//! Env: ADV_ITERS (iterations per test, default 4), ADV_SEED (base seed,
//! default 1), ADV_FEATURES (one feature string; default: rotate through
//! FEATURES), ADV_HANG_WAIT=1 (on a hang, print and sleep instead of
//! aborting, so `gdb -p PID -batch -ex 'thread apply all bt'` can attach).
//!
//! Run: cargo test -p eevdf-rt --release --test sync_adversarial -- --test-threads=1 --nocapture

mod common;
use common::adversarial::*;
use common::Rng;
use eevdf_rt::sync::channel::{
    self, RecvTimeoutError, SendTimeoutError, TryRecvError, TrySendError,
};
use eevdf_rt::sync::{Condvar, Mutex, RwLock, Semaphore};
use eevdf_rt::Runtime;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Spawns `n` actors, each green or an OS thread at random, and joins them.
fn actors<F>(rt: &Runtime, rng: &mut Rng, n: usize, f: F)
where
    F: Fn(usize, Rng, bool) + Send + Sync + 'static,
{
    let f = Arc::new(f);
    let mut greens = Vec::new();
    let mut oss = Vec::new();
    for i in 0..n {
        let seed = rng.next();
        let f = f.clone();
        if i == 0 || rng.below(3) != 0 {
            greens.push(rt.spawn(move || f(i, Rng::new(seed), true)));
        } else {
            oss.push(std::thread::spawn(move || f(i, Rng::new(seed), false)));
        }
    }
    for g in greens {
        g.join().unwrap();
    }
    for o in oss {
        o.join().unwrap();
    }
}

struct Cs(AtomicUsize);
impl Cs {
    fn enter(&self, max: usize, what: &str) {
        let n = self.0.fetch_add(1, SeqCst);
        assert!(n < max, "{what}: {} inside, at most {max} allowed", n + 1);
    }
    fn leave(&self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

fn seen_once(seen: &[AtomicU8], id: usize, what: &str) {
    let prev = seen[id].fetch_add(1, SeqCst);
    assert_eq!(prev, 0, "{what}: id {id} delivered twice");
}

// ---------------------------------------------------------------- mutex + condvar

#[test]
fn mutex_condvar_queue() {
    each("mutex_condvar_queue", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed);
        let producers = 2 + rng.below(4) as usize;
        let consumers = 2 + rng.below(5) as usize;
        let per = 300 + rng.below(700) as usize;
        let total = producers * per;
        struct St {
            q: VecDeque<usize>,
            done: usize,
        }
        let m = Arc::new(Mutex::new(St {
            q: VecDeque::new(),
            done: 0,
        }));
        let cv = Arc::new(Condvar::new());
        let cs = Arc::new(Cs(AtomicUsize::new(0)));
        let seen: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
        let got = Arc::new(AtomicUsize::new(0));
        let (m2, cv2, cs2, seen2, got2) =
            (m.clone(), cv.clone(), cs.clone(), seen.clone(), got.clone());
        actors(
            rt,
            &mut rng,
            producers + consumers,
            move |i, mut r, green| {
                let (m, cv, cs) = (&m2, &cv2, &cs2);
                if i < producers {
                    for k in 0..per {
                        let id = i * per + k;
                        {
                            let mut g = m.lock();
                            cs.enter(1, "mutex");
                            g.q.push_back(id);
                            let notify_inside = r.chance(2);
                            if notify_inside {
                                if r.chance(10) {
                                    cv.notify_all()
                                } else {
                                    cv.notify_one()
                                }
                            }
                            cs.leave();
                            drop(g);
                            if !notify_inside {
                                if r.chance(10) {
                                    cv.notify_all()
                                } else {
                                    cv.notify_one()
                                }
                            }
                        }
                        chaos(&mut r, green);
                    }
                    let mut g = m.lock();
                    g.done += 1;
                    drop(g);
                    cv.notify_all();
                } else {
                    loop {
                        let mut g = m.lock();
                        cs.enter(1, "mutex");
                        loop {
                            if !g.q.is_empty() || g.done == producers {
                                break;
                            }
                            cs.leave();
                            g = if r.chance(2) {
                                cv.wait(g)
                            } else {
                                cv.wait_timeout(g, r.timeout()).0
                            };
                            cs.enter(1, "mutex after wait");
                        }
                        let item = g.q.pop_front();
                        cs.leave();
                        drop(g);
                        match item {
                            Some(id) => {
                                seen_once(&seen2, id, "condvar queue");
                                got2.fetch_add(1, SeqCst);
                            }
                            None => break,
                        }
                        chaos(&mut r, green);
                    }
                }
            },
        );
        assert_eq!(got.load(SeqCst), total, "condvar queue: items lost");
        assert!(seen.iter().all(|s| s.load(SeqCst) == 1));
    });
}

#[test]
fn mutex_counter_mixed() {
    each("mutex_counter_mixed", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed);
        let n = 3 + rng.below(6) as usize;
        let per = 2000 + rng.below(3000) as usize;
        let m = Arc::new(Mutex::new(0u64));
        let cs = Arc::new(Cs(AtomicUsize::new(0)));
        let (m2, cs2) = (m.clone(), cs.clone());
        actors(rt, &mut rng, n, move |_, mut r, green| {
            for _ in 0..per {
                let mut g = loop {
                    if r.chance(4) {
                        if let Some(g) = m2.try_lock() {
                            break g;
                        }
                        chaos(&mut r, green);
                    } else {
                        break m2.lock();
                    }
                };
                cs2.enter(1, "mutex");
                *g += 1;
                if r.chance(200) {
                    chaos(&mut r, green); // hand-off / yield while holding
                }
                cs2.leave();
                drop(g);
                chaos(&mut r, green);
            }
        });
        assert_eq!(*m.lock(), (n * per) as u64);
    });
}

// ---------------------------------------------------------------- semaphore

#[test]
fn semaphore_limit_and_tokens() {
    each("semaphore", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed);
        // (a) at most k inside
        let k = 1 + rng.below(3) as usize;
        let sem = Arc::new(Semaphore::new(k));
        let cs = Arc::new(Cs(AtomicUsize::new(0)));
        let n = 3 + rng.below(6) as usize;
        let per = 500 + rng.below(1000) as usize;
        let (s2, cs2) = (sem.clone(), cs.clone());
        let done = Arc::new(AtomicU64::new(0));
        let d2 = done.clone();
        actors(rt, &mut rng, n, move |_, mut r, green| {
            let mut ok = 0;
            while ok < per {
                let p = match r.below(3) {
                    0 => Some(s2.acquire()),
                    1 => s2.acquire_timeout(r.timeout()),
                    _ => s2.try_acquire(),
                };
                let Some(p) = p else {
                    chaos(&mut r, green);
                    continue;
                };
                cs2.enter(k, "semaphore");
                if r.chance(100) {
                    chaos(&mut r, green);
                }
                cs2.leave();
                if r.chance(5) {
                    p.forget();
                    s2.release();
                } else {
                    drop(p);
                }
                ok += 1;
                d2.fetch_add(1, SeqCst);
                chaos(&mut r, green);
            }
        });
        assert_eq!(done.load(SeqCst), (n * per) as u64);
        assert_eq!(
            sem.available_permits(),
            k,
            "semaphore: permits lost or created"
        );

        // (b) tokens: producers release exactly N, consumers take exactly N
        // with racing short timeouts; a swallowed permit hangs, an extra
        // one shows in available_permits.
        let sem = Arc::new(Semaphore::new(0));
        let prod = 1 + rng.below(3) as usize;
        let cons = 2 + rng.below(5) as usize;
        let per = 500 + rng.below(1500) as usize;
        let total = prod * per;
        let taken = Arc::new(AtomicUsize::new(0));
        let (s2, t2) = (sem.clone(), taken.clone());
        actors(rt, &mut rng, prod + cons, move |i, mut r, green| {
            if i < prod {
                for _ in 0..per {
                    s2.release();
                    chaos(&mut r, green);
                }
            } else {
                loop {
                    if t2.load(SeqCst) >= total {
                        break;
                    }
                    let p = match r.below(3) {
                        0 => s2.acquire_timeout(r.timeout()),
                        1 => s2.acquire_timeout(Duration::from_millis(5)),
                        _ => s2.try_acquire(),
                    };
                    match p {
                        Some(p) => {
                            p.forget();
                            let n = t2.fetch_add(1, SeqCst);
                            assert!(n < total, "semaphore: more permits taken than released");
                        }
                        None => chaos(&mut r, green),
                    }
                }
            }
        });
        assert_eq!(taken.load(SeqCst), total);
        assert_eq!(sem.available_permits(), 0, "semaphore: extra permit");
    });
}

// ---------------------------------------------------------------- rwlock

#[test]
fn rwlock_mixed() {
    each("rwlock", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed);
        let n = 3 + rng.below(6) as usize;
        let per = 1000 + rng.below(2000) as usize;
        let l = Arc::new(RwLock::new(0u64));
        // readers << 1 | writer
        let st = Arc::new(AtomicUsize::new(0));
        let writes = Arc::new(AtomicU64::new(0));
        let (l2, st2, w2) = (l.clone(), st.clone(), writes.clone());
        actors(rt, &mut rng, n, move |_, mut r, green| {
            for _ in 0..per {
                if r.chance(3) {
                    let g = if r.chance(4) {
                        l2.try_write()
                    } else {
                        Some(l2.write())
                    };
                    if let Some(mut g) = g {
                        let prev = st2.fetch_or(1, SeqCst);
                        assert_eq!(
                            prev, 0,
                            "rwlock: writer entered with others inside ({prev:#x})"
                        );
                        *g += 1;
                        if r.chance(200) {
                            chaos(&mut r, green);
                        }
                        st2.fetch_and(!1, SeqCst);
                        drop(g);
                        w2.fetch_add(1, SeqCst);
                    }
                } else {
                    let g = if r.chance(4) {
                        l2.try_read()
                    } else {
                        Some(l2.read())
                    };
                    if let Some(g) = g {
                        let prev = st2.fetch_add(2, SeqCst);
                        assert_eq!(prev & 1, 0, "rwlock: reader entered with a writer inside");
                        let _v = *g;
                        if r.chance(200) {
                            chaos(&mut r, green);
                        }
                        st2.fetch_sub(2, SeqCst);
                        drop(g);
                    }
                }
                chaos(&mut r, green);
            }
        });
        assert_eq!(*l.read(), writes.load(SeqCst));
        assert_eq!(st.load(SeqCst), 0);
        assert!(l.try_write().is_some(), "rwlock: left locked");
    });
}

// ---------------------------------------------------------------- channels

/// A message that records its drop, so loss (never dropped) and
/// duplication (dropped twice / delivered twice) both show.
struct Msg {
    id: usize,
    drops: Arc<Vec<AtomicU8>>,
}
impl Drop for Msg {
    fn drop(&mut self) {
        self.drops[self.id].fetch_add(1, SeqCst);
    }
}

fn make_chan<T>(kind: u64) -> (channel::Sender<T>, channel::Receiver<T>, &'static str) {
    match kind {
        0 => {
            let (a, b) = channel::bounded(0);
            (a, b, "rendezvous")
        }
        1 => {
            let (a, b) = channel::bounded(1);
            (a, b, "bounded(1)")
        }
        2 => {
            let (a, b) = channel::bounded(4);
            (a, b, "bounded(4)")
        }
        _ => {
            let (a, b) = channel::unbounded();
            (a, b, "unbounded")
        }
    }
}

#[test]
fn channel_exact_delivery() {
    each("channel_exact_delivery", |rt, cfg| {
        for kind in 0..4u64 {
            let mut rng = Rng::new(cfg.seed ^ (kind << 32));
            let (tx, rx, kname) = make_chan::<Msg>(kind);
            let prod = 1 + rng.below(4) as usize;
            let cons = 1 + rng.below(4) as usize;
            let per = 300 + rng.below(700) as usize;
            let total = prod * per;
            let drops: Arc<Vec<AtomicU8>> =
                Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
            let seen: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
            let txs: Arc<std::sync::Mutex<Vec<Option<channel::Sender<Msg>>>>> = Arc::new(
                std::sync::Mutex::new((0..prod).map(|_| Some(tx.clone())).collect()),
            );
            drop(tx);
            let rxs: Arc<std::sync::Mutex<Vec<Option<channel::Receiver<Msg>>>>> = Arc::new(
                std::sync::Mutex::new((0..cons).map(|_| Some(rx.clone())).collect()),
            );
            drop(rx);
            let (d2, s2) = (drops.clone(), seen.clone());
            actors(rt, &mut rng, prod + cons, move |i, mut r, green| {
                if i < prod {
                    let tx = txs.lock().unwrap()[i].take().unwrap();
                    for k in 0..per {
                        let mut m = Msg {
                            id: i * per + k,
                            drops: d2.clone(),
                        };
                        loop {
                            match r.below(3) {
                                0 => {
                                    tx.send(m).expect("receivers alive");
                                    break;
                                }
                                1 => match tx.send_timeout(m, r.timeout()) {
                                    Ok(()) => break,
                                    Err(SendTimeoutError::Timeout(back)) => m = back,
                                    Err(e) => panic!("{kname}: send_timeout: {e:?}"),
                                },
                                _ => match tx.try_send(m) {
                                    Ok(()) => break,
                                    Err(TrySendError::Full(back)) => m = back,
                                    Err(e) => panic!("{kname}: try_send: {e:?}"),
                                },
                            }
                            chaos(&mut r, green);
                        }
                        chaos(&mut r, green);
                    }
                    drop(tx); // the last one disconnects the consumers
                } else {
                    let rx = rxs.lock().unwrap()[i - prod].take().unwrap();
                    loop {
                        let m = match r.below(3) {
                            0 => match rx.recv() {
                                Ok(m) => m,
                                Err(_) => break,
                            },
                            1 => match rx.recv_timeout(r.timeout()) {
                                Ok(m) => m,
                                Err(RecvTimeoutError::Timeout) => {
                                    chaos(&mut r, green);
                                    continue;
                                }
                                Err(RecvTimeoutError::Disconnected) => break,
                            },
                            _ => match rx.try_recv() {
                                Ok(m) => m,
                                Err(TryRecvError::Empty) => {
                                    chaos(&mut r, green);
                                    continue;
                                }
                                Err(TryRecvError::Disconnected) => break,
                            },
                        };
                        seen_once(&s2, m.id, kname);
                        drop(m);
                        chaos(&mut r, green);
                    }
                }
            });
            for id in 0..total {
                assert_eq!(
                    seen[id].load(SeqCst),
                    1,
                    "{kname}: id {id} not received exactly once"
                );
                assert_eq!(
                    drops[id].load(SeqCst),
                    1,
                    "{kname}: id {id} dropped {} times",
                    drops[id].load(SeqCst)
                );
            }
        }
    });
}

/// Receivers go away mid-flight while senders block: every message ends up
/// exactly once either received, returned to its sender in the error, or
/// dropped with the channel's buffer — never lost, never duplicated — and
/// blocked senders are released.
#[test]
fn channel_disconnect_midflight() {
    each("channel_disconnect_midflight", |rt, cfg| {
        for kind in 0..4u64 {
            let mut rng = Rng::new(cfg.seed ^ (kind << 40) ^ 0x55);
            let (tx, rx, kname) = make_chan::<Msg>(kind);
            let prod = 1 + rng.below(4) as usize;
            let cons = 1 + rng.below(3) as usize;
            let per = 200 + rng.below(500) as usize;
            let total = prod * per;
            let drops: Arc<Vec<AtomicU8>> =
                Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
            let seen: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
            let returned = Arc::new(AtomicUsize::new(0));
            let received = Arc::new(AtomicUsize::new(0));
            let txs: Arc<std::sync::Mutex<Vec<Option<channel::Sender<Msg>>>>> = Arc::new(
                std::sync::Mutex::new((0..prod).map(|_| Some(tx.clone())).collect()),
            );
            drop(tx);
            let rxs: Arc<std::sync::Mutex<Vec<Option<channel::Receiver<Msg>>>>> = Arc::new(
                std::sync::Mutex::new((0..cons).map(|_| Some(rx.clone())).collect()),
            );
            drop(rx);
            let (d2, s2, ret2, rec2) = (
                drops.clone(),
                seen.clone(),
                returned.clone(),
                received.clone(),
            );
            // each consumer takes a random number then drops its receiver
            let quota: Vec<usize> = (0..cons)
                .map(|_| rng.below(total as u64 / cons as u64 + 1) as usize)
                .collect();
            let quota = Arc::new(quota);
            actors(rt, &mut rng, prod + cons, move |i, mut r, green| {
                if i < prod {
                    let tx = txs.lock().unwrap()[i].take().unwrap();
                    let mut dead = false;
                    for k in 0..per {
                        let id = i * per + k;
                        let mut m = Msg {
                            id,
                            drops: d2.clone(),
                        };
                        if dead {
                            drop(m); // never sent
                            ret2.fetch_add(1, SeqCst);
                            continue;
                        }
                        loop {
                            let res = match r.below(3) {
                                0 => tx.send(m).map_err(|e| Some(e.into_inner())),
                                1 => match tx.send_timeout(m, r.timeout()) {
                                    Ok(()) => Ok(()),
                                    Err(SendTimeoutError::Timeout(back)) => {
                                        m = back;
                                        chaos(&mut r, green);
                                        continue;
                                    }
                                    Err(SendTimeoutError::Disconnected(back)) => Err(Some(back)),
                                },
                                _ => match tx.try_send(m) {
                                    Ok(()) => Ok(()),
                                    Err(TrySendError::Full(back)) => {
                                        m = back;
                                        chaos(&mut r, green);
                                        continue;
                                    }
                                    Err(TrySendError::Disconnected(back)) => Err(Some(back)),
                                },
                            };
                            if let Err(Some(back)) = res {
                                assert_eq!(back.id, id, "{kname}: returned the wrong message");
                                drop(back);
                                ret2.fetch_add(1, SeqCst);
                                dead = true;
                            }
                            break;
                        }
                        chaos(&mut r, green);
                    }
                } else {
                    let rx = rxs.lock().unwrap()[i - prod].take().unwrap();
                    let mut n = 0;
                    while n < quota[i - prod] {
                        let m = match r.below(3) {
                            0 => match rx.recv() {
                                Ok(m) => m,
                                Err(_) => break,
                            },
                            1 => match rx.recv_timeout(r.timeout()) {
                                Ok(m) => m,
                                Err(RecvTimeoutError::Timeout) => continue,
                                Err(RecvTimeoutError::Disconnected) => break,
                            },
                            _ => match rx.try_recv() {
                                Ok(m) => m,
                                Err(TryRecvError::Empty) => {
                                    chaos(&mut r, green);
                                    continue;
                                }
                                Err(TryRecvError::Disconnected) => break,
                            },
                        };
                        seen_once(&s2, m.id, kname);
                        rec2.fetch_add(1, SeqCst);
                        drop(m);
                        n += 1;
                        chaos(&mut r, green);
                    }
                    drop(rx);
                }
            });
            for id in 0..total {
                assert_eq!(
                    drops[id].load(SeqCst),
                    1,
                    "{kname}: id {id} dropped {} times (0 = lost)",
                    drops[id].load(SeqCst)
                );
            }
            let (rec, ret) = (received.load(SeqCst), returned.load(SeqCst));
            assert!(
                rec + ret <= total,
                "{kname}: received {rec} + returned {ret} > {total}"
            );
        }
    });
}

/// Senders go away while receivers block: receivers drain everything and
/// then all see Disconnected (none stays blocked).
#[test]
fn channel_sender_drop_wakes_receivers() {
    each("channel_sender_drop", |rt, cfg| {
        for kind in 0..4u64 {
            let mut rng = Rng::new(cfg.seed ^ (kind << 20) ^ 0x77);
            let (tx, rx, kname) = make_chan::<usize>(kind);
            let cons = 2 + rng.below(5) as usize;
            let prod = 1 + rng.below(3) as usize;
            let per = 50 + rng.below(200) as usize;
            let sum = Arc::new(AtomicUsize::new(0));
            let cnt = Arc::new(AtomicUsize::new(0));
            let txs: Arc<std::sync::Mutex<Vec<Option<channel::Sender<usize>>>>> = Arc::new(
                std::sync::Mutex::new((0..prod).map(|_| Some(tx.clone())).collect()),
            );
            drop(tx);
            let (s2, c2) = (sum.clone(), cnt.clone());
            actors(rt, &mut rng, prod + cons, move |i, mut r, green| {
                if i < prod {
                    let t = txs.lock().unwrap()[i].take().unwrap();
                    for k in 0..per {
                        t.send(i * per + k).expect("receivers alive");
                        chaos(&mut r, green);
                    }
                    drop(t); // the last one wakes every blocked receiver
                } else {
                    let rx = rx.clone();
                    loop {
                        let v = if r.chance(2) {
                            match rx.recv() {
                                Ok(v) => v,
                                Err(_) => break,
                            }
                        } else {
                            match rx.recv_timeout(r.timeout()) {
                                Ok(v) => v,
                                Err(RecvTimeoutError::Timeout) => continue,
                                Err(RecvTimeoutError::Disconnected) => break,
                            }
                        };
                        s2.fetch_add(v, SeqCst);
                        c2.fetch_add(1, SeqCst);
                    }
                }
            });
            let total = prod * per;
            assert_eq!(cnt.load(SeqCst), total, "{kname}: count");
            assert_eq!(sum.load(SeqCst), total * (total - 1) / 2, "{kname}: sum");
        }
    });
}

/// Ping-pong through two rendezvous channels between a green thread and
/// an OS thread while other green threads hog their workers (hand-offs).
#[test]
fn pingpong_with_handoffs() {
    each("pingpong_with_handoffs", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed ^ 0x99);
        let rounds = 2000 + rng.below(3000) as usize;
        let (atx, arx) = channel::bounded::<usize>(0);
        let (btx, brx) = channel::bounded::<usize>(rng.below(2) as usize);
        let stop = Arc::new(AtomicBool::new(false));
        let mut hogs = Vec::new();
        for h in 0..cfg.workers {
            let stop = stop.clone();
            let s = rng.next();
            hogs.push(rt.spawn(move || {
                let mut r = Rng::new(s ^ h as u64);
                while !stop.load(Relaxed) {
                    if r.chance(2) {
                        std::thread::sleep(Duration::from_millis(3 + r.below(8)));
                    } else {
                        let until = Instant::now() + Duration::from_millis(3 + r.below(8));
                        while Instant::now() < until {
                            std::hint::spin_loop();
                        }
                    }
                    eevdf_rt::yield_now();
                }
            }));
        }
        let s = rng.next();
        let g = rt.spawn(move || {
            let mut r = Rng::new(s);
            for i in 0..rounds {
                atx.send(i).unwrap();
                let v = if r.chance(2) {
                    brx.recv().unwrap()
                } else {
                    loop {
                        match brx.recv_timeout(r.timeout()) {
                            Ok(v) => break v,
                            Err(RecvTimeoutError::Timeout) => continue,
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                };
                assert_eq!(v, i + 1);
                chaos(&mut r, true);
            }
        });
        for i in 0..rounds {
            let v = arx.recv().unwrap();
            assert_eq!(v, i);
            btx.send(v + 1).unwrap();
        }
        g.join().unwrap();
        stop.store(true, Relaxed);
        for h in hogs {
            h.join().unwrap();
        }
    });
}

// ---------------------------------------------------------------- barrier, futex

/// Rounds of a barrier shared by green and OS threads: exactly one leader
/// per round, nobody passes early.
#[test]
fn barrier_rounds() {
    each("barrier_rounds", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed ^ 0xba);
        let n = 2 + rng.below(7) as usize;
        let rounds = 100 + rng.below(300) as usize;
        let b = Arc::new(eevdf_rt::sync::Barrier::new(n));
        let leaders = Arc::new(AtomicUsize::new(0));
        let arrived: Arc<Vec<AtomicUsize>> =
            Arc::new((0..rounds).map(|_| AtomicUsize::new(0)).collect());
        let (b2, l2, a2) = (b.clone(), leaders.clone(), arrived.clone());
        actors(rt, &mut rng, n, move |_, mut r, green| {
            for k in 0..rounds {
                a2[k].fetch_add(1, SeqCst);
                chaos(&mut r, green);
                if b2.wait().is_leader() {
                    l2.fetch_add(1, SeqCst);
                }
                assert_eq!(a2[k].load(SeqCst), n, "barrier: passed round {k} early");
            }
        });
        assert_eq!(leaders.load(SeqCst), rounds, "barrier: leaders");
    });
}

/// A futex gate: waiters (untimed and with short timeouts) sleep while the
/// word holds the round they saw; the opener bumps it and wakes all. A lost
/// wake of an untimed waiter hangs (watchdog).
#[test]
fn futex_gate() {
    use eevdf_rt::sync::Futex;
    use std::sync::atomic::AtomicU32;
    each("futex_gate", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed ^ 0xf0);
        let n = 2 + rng.below(6) as usize;
        let rounds = 300 + rng.below(700) as u32;
        let word = Arc::new(AtomicU32::new(0));
        let passed = Arc::new(AtomicUsize::new(0));
        let (w2, p2) = (word.clone(), passed.clone());
        actors(rt, &mut rng, n + 1, move |i, mut r, green| {
            if i == n {
                // opener: wait until all n waiters passed the round, bump
                for k in 0..rounds {
                    while p2.load(SeqCst) < (k as usize) * n {
                        if green {
                            eevdf_rt::yield_now()
                        } else {
                            std::thread::yield_now()
                        }
                    }
                    chaos(&mut r, green);
                    w2.store(k + 1, SeqCst);
                    if r.chance(3) {
                        for _ in 0..n {
                            Futex::wake(&w2, 1);
                        }
                    } else {
                        Futex::wake_all(&w2);
                    }
                }
            } else {
                for k in 0..rounds {
                    while w2.load(SeqCst) == k {
                        if r.chance(2) {
                            Futex::wait(&w2, k);
                        } else {
                            let _ = Futex::wait_timeout(&w2, k, r.timeout());
                        }
                    }
                    p2.fetch_add(1, SeqCst);
                    chaos(&mut r, green);
                }
            }
        });
        assert_eq!(passed.load(SeqCst), n * rounds as usize);
    });
}

// ---------------------------------------------------------------- hand-offs

/// Green threads that block their worker for 3-6 ms (std::thread::sleep or
/// a spin: the worker is handed to another OS thread) and then at once
/// block/wake on a semaphore, a channel and a condvar shared with others.
#[test]
fn handoff_then_block() {
    each("handoff_then_block", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed ^ 0x4a4a);
        let n = 4 + rng.below(6) as usize;
        let per = 40 + rng.below(60) as usize;
        let sem = Arc::new(Semaphore::new(0));
        let (tx, rx) = channel::bounded::<usize>(rng.below(3) as usize);
        let m = Arc::new(Mutex::new(0usize));
        let cv = Arc::new(Condvar::new());
        let got = Arc::new(AtomicUsize::new(0));
        let sent = Arc::new(AtomicUsize::new(0));
        let taken = Arc::new(AtomicUsize::new(0));
        let (s2, m2, cv2, g2, se2, t2) = (
            sem.clone(),
            m.clone(),
            cv.clone(),
            got.clone(),
            sent.clone(),
            taken.clone(),
        );
        // half the actors are producers (release, send, bump+notify), half consumers
        actors(rt, &mut rng, 2 * n, move |i, mut r, _green| {
            let stuck = |r: &mut Rng| {
                let d = Duration::from_millis(3 + r.below(4));
                if r.chance(2) {
                    std::thread::sleep(d);
                } else {
                    let until = Instant::now() + d;
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                }
            };
            if i % 2 == 0 {
                let tx = tx.clone();
                for k in 0..per {
                    if r.chance(2) {
                        stuck(&mut r);
                    }
                    s2.release();
                    if r.chance(2) {
                        stuck(&mut r);
                    }
                    tx.send(k).unwrap();
                    se2.fetch_add(1, SeqCst);
                    *m2.lock() += 1;
                    cv2.notify_one();
                }
            } else {
                for _ in 0..per {
                    if r.chance(2) {
                        stuck(&mut r);
                    }
                    loop {
                        match s2.acquire_timeout(r.timeout()) {
                            Some(p) => {
                                p.forget();
                                t2.fetch_add(1, SeqCst);
                                break;
                            }
                            None => {
                                if r.chance(3) {
                                    stuck(&mut r)
                                }
                            }
                        }
                    }
                    if r.chance(2) {
                        stuck(&mut r);
                    }
                    loop {
                        match rx.recv_timeout(r.timeout()) {
                            Ok(_) => {
                                g2.fetch_add(1, SeqCst);
                                break;
                            }
                            Err(RecvTimeoutError::Timeout) => continue,
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                    let mut g = m2.lock();
                    while *g == 0 {
                        g = if r.chance(2) {
                            cv2.wait(g)
                        } else {
                            cv2.wait_timeout(g, r.timeout()).0
                        };
                    }
                    *g -= 1;
                }
            }
        });
        let total = n * per;
        assert_eq!(taken.load(SeqCst), total);
        assert_eq!(sem.available_permits(), 0);
        assert_eq!(got.load(SeqCst), total);
        assert_eq!(sent.load(SeqCst), total);
        assert_eq!(*m.lock(), 0);
    });
}
