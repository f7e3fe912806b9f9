//! Adversarial randomized stress of the wake paths that
//! `sync_adversarial.rs` leaves out: the futex's wake counts under racing
//! timeouts and spurious wakes, `park`/`unpark` tokens, `spawn_blocking`
//! (result delivery, panics, shutdown with jobs queued and running), and
//! the futures interop (`block_on_future`, `spawn_future`, awaiting a
//! `JoinHandle`, wakers called many times, from anywhere, and late).
//!
//! Green threads on 2-4 workers and plain OS threads mix as wakers and
//! sleepers; very short timeouts race wakeups; hand-offs, nice/slice
//! changes and yields disturb the schedule. Every run checks exact
//! invariants (counts that must match, results delivered exactly once)
//! and is bounded by a watchdog that aborts the process with the seed and
//! configuration: a hang is a lost wakeup.
//!
//! Env: ADV_ITERS (iterations per test, default 4), ADV_SEED (base seed,
//! default 1), ADV_FEATURES (one feature string; default: rotate through
//! FEATURES), ADV_WATCHDOG_SECS (default 60), ADV_HANG_WAIT=1 (on a hang,
//! print and sleep instead of aborting, so
//! `gdb -p PID -batch -ex 'thread apply all bt'` can attach).
//!
//! Run: cargo test -p eevdf-rt --release --test wake_adversarial -- --test-threads=1 --nocapture

mod common;
use common::adversarial::*;
use common::{burn, Rng};
use eevdf_rt::sync::channel::{self, RecvTimeoutError};
use eevdf_rt::sync::{Futex, Semaphore};
use eevdf_rt::{Cancelled, JoinHandle, Runtime, Task};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// Yields the green thread or the OS thread (for polling loops).
fn relax(green: bool) {
    if green {
        eevdf_rt::yield_now()
    } else {
        std::thread::yield_now()
    }
}

fn nap(green: bool, d: Duration) {
    if green {
        eevdf_rt::sleep(d)
    } else {
        std::thread::sleep(d)
    }
}

/// Polls `cond` until it holds: a few yields, then short naps (a busy
/// poll would starve the thread it waits for under a CPU hog).
fn wait_until(green: bool, cond: impl Fn() -> bool) {
    let mut i = 0u32;
    while !cond() {
        if i < 16 {
            relax(green);
        } else {
            nap(green, Duration::from_micros(20));
        }
        i += 1;
    }
}

/// Who runs an actor: a green thread, or an OS thread (which may use the
/// runtime by reference).
#[derive(Clone, Copy)]
enum Who<'a> {
    Green,
    Os(&'a Runtime),
}
impl Who<'_> {
    fn green(self) -> bool {
        matches!(self, Who::Green)
    }
    fn spawn_blocking<T: Send + 'static>(
        self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> JoinHandle<T> {
        match self {
            Who::Green => eevdf_rt::task::spawn_blocking(f),
            Who::Os(rt) => rt.spawn_blocking(f),
        }
    }
}

/// Spawns `n` actors, each green or an OS thread at random (actor 0 is
/// always green), and joins them.
fn actors<F>(rt: &Runtime, rng: &mut Rng, n: usize, f: F)
where
    F: for<'a> Fn(usize, Rng, Who<'a>) + Send + Sync + 'static,
{
    let f = Arc::new(f);
    std::thread::scope(|s| {
        let mut greens = Vec::new();
        let mut oss = Vec::new();
        for i in 0..n {
            let seed = rng.next();
            let f = f.clone();
            if i == 0 || rng.below(3) != 0 {
                greens.push(rt.spawn(move || f(i, Rng::new(seed), Who::Green)));
            } else {
                oss.push(s.spawn(move || f(i, Rng::new(seed), Who::Os(rt))));
            }
        }
        for g in greens {
            g.join().unwrap();
        }
        for o in oss {
            o.join().unwrap();
        }
    });
}

fn counters(n: usize) -> Arc<Vec<AtomicUsize>> {
    Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect())
}

fn flags(n: usize) -> Arc<Vec<AtomicU8>> {
    Arc::new((0..n).map(|_| AtomicU8::new(0)).collect())
}

fn once(seen: &[AtomicU8], id: usize, what: &str) {
    let prev = seen[id].fetch_add(1, SeqCst);
    assert_eq!(prev, 0, "{what}: id {id} twice");
}

// ---------------------------------------------------------------- futex

/// Guards `Futex::wake`'s exact count when timeouts race wakes and green
/// sleepers get spurious (unpark) wakes: on words whose values never
/// change, every wait that returns "woken" (untimed, or timed returning
/// `false`) must have been counted by exactly one `wake`, so per word the
/// sum of `wake` results equals the waits that report woken; no call
/// reports more than asked. 300 words share 256 buckets, so a wake that
/// took a sleeper of another word in its bucket shows too. A lost wake of
/// an untimed sleeper hangs (watchdog). (Counting every untimed return as
/// woken relies on `Futex::wait`'s documented implementation property,
/// "only returns on a wake or a changed value"; the contract itself would
/// allow spurious returns.)
#[test]
fn futex_wake_counts_exact() {
    const WORDS: usize = 300; // > 256 buckets: some words share one
    const HOT: usize = 6;
    each("futex_wake_counts_exact", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed ^ 0xfe);
        let waiters = 2 + rng.below(5) as usize;
        let wakers = 1 + rng.below(2) as usize;
        let per = 150 + rng.below(250) as usize;
        let val = |w: usize| (w as u32).wrapping_mul(0x9e37_79b9);
        let words: Arc<Vec<AtomicU32>> =
            Arc::new((0..WORDS).map(|w| AtomicU32::new(val(w))).collect());
        let reported = counters(WORDS);
        let woken = counters(WORDS);
        let timed_out = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let tasks: Arc<Vec<Mutex<Option<Task>>>> =
            Arc::new((0..waiters).map(|_| Mutex::new(None)).collect());
        let (words2, rep2, wok2, to2, done2) = (
            words.clone(),
            reported.clone(),
            woken.clone(),
            timed_out.clone(),
            done.clone(),
        );
        actors(rt, &mut rng, waiters + wakers + 1, move |i, mut r, who| {
            let green = who.green();
            if i < waiters {
                if green {
                    *tasks[i].lock().unwrap() = Some(eevdf_rt::current());
                }
                for _ in 0..per {
                    // untimed waits only on hot words (the wakers cycle them)
                    let (w, timed) = if r.chance(4) {
                        (HOT + r.below((WORDS - HOT) as u64) as usize, true)
                    } else {
                        (r.below(HOT as u64) as usize, r.chance(2))
                    };
                    let out = if timed {
                        Futex::wait_timeout(&words2[w], val(w), r.timeout())
                    } else {
                        Futex::wait(&words2[w], val(w));
                        false
                    };
                    if out {
                        to2.fetch_add(1, SeqCst);
                    } else {
                        wok2[w].fetch_add(1, SeqCst);
                    }
                    chaos(&mut r, green);
                }
                done2.fetch_add(1, SeqCst);
            } else if i < waiters + wakers {
                let mut k = 0;
                while done2.load(SeqCst) < waiters {
                    let w = if r.chance(6) {
                        HOT + r.below((WORDS - HOT) as u64) as usize
                    } else {
                        k += 1;
                        k % HOT
                    };
                    let n = match r.below(5) {
                        0 | 1 => 1,
                        2 => 2,
                        3 => 1 + r.below(5) as usize,
                        _ => usize::MAX,
                    };
                    let got = if n == usize::MAX && r.chance(2) {
                        Futex::wake_all(&words2[w])
                    } else {
                        Futex::wake(&words2[w], n)
                    };
                    assert!(got <= n, "wake({n}) reported {got}");
                    rep2[w].fetch_add(got, SeqCst);
                    chaos(&mut r, green);
                    if got == 0 && r.chance(4) {
                        relax(green);
                    }
                }
            } else {
                // spurious wakes: unpark green sleepers at random
                while done2.load(SeqCst) < waiters {
                    let t = tasks[r.below(waiters as u64) as usize]
                        .lock()
                        .unwrap()
                        .clone();
                    if let Some(t) = t {
                        t.unpark();
                    }
                    chaos(&mut r, green);
                    relax(green);
                }
            }
        });
        for (w, word) in words.iter().enumerate() {
            assert_eq!(Futex::wake(word, usize::MAX), 0, "word {w}: a sleeper left");
            assert_eq!(word.load(SeqCst), val(w));
            assert_eq!(
                reported[w].load(SeqCst),
                woken[w].load(SeqCst),
                "word {w}: wake() counted {} sleepers but {} waits returned woken \
                 ({} timed out in all)",
                reported[w].load(SeqCst),
                woken[w].load(SeqCst),
                timed_out.load(SeqCst),
            );
        }
        let total: usize = woken.iter().map(|c| c.load(SeqCst)).sum();
        assert_eq!(total + timed_out.load(SeqCst), waiters * per);
        eprintln!(
            "  {total} waits woken, {} timed out",
            timed_out.load(SeqCst)
        );
    });
}

/// Guards "value change + wake is never lost": tokens travel round a
/// ring, each actor sleeping on its own word (untimed or with a short
/// timeout) until its count passes what it consumed, then bumping the
/// next word and waking it (wake(1), wake(k) or wake_all, plus stray
/// wakes of other words). Only the owner sleeps on a word, so no wake may
/// report more than one. A lost wake hangs; the final counts are exact.
#[test]
fn futex_token_ring() {
    each("futex_token_ring", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed ^ 0x7e);
        let n = 2 + rng.below(6) as usize;
        let tokens = 1 + rng.below(3) as u32;
        let rounds = 200 + rng.below(400) as u32;
        let words: Arc<Vec<AtomicU32>> = Arc::new((0..n).map(|_| AtomicU32::new(0)).collect());
        words[0].store(tokens, SeqCst);
        let consumed: Arc<Vec<AtomicU32>> = Arc::new((0..n).map(|_| AtomicU32::new(0)).collect());
        let (words2, cons2) = (words.clone(), consumed.clone());
        actors(rt, &mut rng, n, move |i, mut r, who| {
            let green = who.green();
            let me = &words2[i];
            let next = &words2[(i + 1) % n];
            let mut seen = 0u32;
            for _ in 0..rounds {
                loop {
                    let v = me.load(SeqCst);
                    if v > seen {
                        break;
                    }
                    if r.chance(3) {
                        let _ = Futex::wait_timeout(me, v, r.timeout());
                    } else {
                        Futex::wait(me, v);
                    }
                }
                seen += 1;
                chaos(&mut r, green);
                next.fetch_add(1, SeqCst);
                let woke = match r.below(3) {
                    0 => Futex::wake(next, 1),
                    1 => Futex::wake_all(next),
                    _ => Futex::wake(next, 1 + r.below(3) as usize),
                };
                assert!(
                    woke <= 1,
                    "woke {woke} sleepers of a word only its owner waits on"
                );
                if r.chance(20) {
                    let stray = &words2[r.below(n as u64) as usize];
                    assert!(Futex::wake(stray, 1) <= 1);
                }
            }
            cons2[i].store(seen, SeqCst);
        });
        for i in 0..n {
            let extra = if i == 0 { tokens } else { 0 };
            assert_eq!(words[i].load(SeqCst), rounds + extra, "ring word {i}");
            assert_eq!(consumed[i].load(SeqCst), rounds, "ring actor {i}");
        }
    });
}

// ---------------------------------------------------------------- park / unpark

/// Guards the park token: (a) counters handed to green consumers with
/// `unpark` from green threads on other workers and OS threads, the
/// consumers mixing `park` and `park_timeout`: a lost unpark hangs an
/// untimed park; (b) a handshake where the unpark is made strictly after
/// the consumer's last `park_timeout` returned (racing a burst of unparks
/// during those timeouts), sometimes before the next `park`, sometimes
/// while it sleeps: that `park` must return; (c) an unpark of a task
/// that has not run yet makes its first `park` return, and an unpark
/// after it finished is harmless.
#[test]
fn park_unpark_tokens() {
    each("park_unpark_tokens", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed ^ 0x9a);

        // (a) counters
        let nc = 1 + rng.below(3) as usize;
        let np = 2 + rng.below(4) as usize;
        let per = 300 + rng.below(500);
        let avail: Arc<Vec<AtomicU64>> = Arc::new((0..nc).map(|_| AtomicU64::new(0)).collect());
        let prod_done = Arc::new(AtomicUsize::new(0));
        let mut cons = Vec::new();
        for c in 0..nc {
            let (avail, prod_done) = (avail.clone(), prod_done.clone());
            let mut r = Rng::new(rng.next());
            cons.push(rt.spawn(move || {
                let mut seen = 0u64;
                loop {
                    let a = avail[c].load(SeqCst);
                    assert!(a >= seen);
                    if a > seen {
                        seen = a;
                        chaos(&mut r, true);
                        continue;
                    }
                    if prod_done.load(SeqCst) == np && avail[c].load(SeqCst) == seen {
                        return seen;
                    }
                    if r.chance(2) {
                        eevdf_rt::park();
                    } else {
                        eevdf_rt::park_timeout(r.timeout());
                    }
                }
            }));
        }
        let targets: Arc<Vec<Task>> = Arc::new(cons.iter().map(|h| h.task()).collect());
        let (av2, pd2, t2) = (avail.clone(), prod_done.clone(), targets.clone());
        actors(rt, &mut rng, np, move |_, mut r, who| {
            for _ in 0..per {
                let c = r.below(nc as u64) as usize;
                av2[c].fetch_add(1, SeqCst);
                t2[c].unpark();
                if r.chance(5) {
                    t2[r.below(nc as u64) as usize].unpark(); // an extra token
                }
                chaos(&mut r, who.green());
            }
            pd2.fetch_add(1, SeqCst);
            for t in t2.iter() {
                t.unpark();
            }
        });
        let got: u64 = cons.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(got, np as u64 * per, "park counters: items lost");

        // (b) handshake rounds between a green consumer and a green or OS
        // partner. Per round: the consumer's timed parks race a burst of
        // unparks; the partner stops the burst (`calm`), the consumer drains
        // a stale token (park_timeout(0)) and says `ready`; the partner sets
        // `ack`, unparks once and says `unparked`. That single unpark must
        // end the consumer's next park, whether it lands before the park
        // (the consumer waits for `unparked` first) or during it.
        let pairs = 1 + rng.below(3) as usize;
        let rounds = 60 + rng.below(90);
        let words =
            |n| -> Arc<Vec<AtomicU64>> { Arc::new((0..n).map(|_| AtomicU64::new(0)).collect()) };
        let (quiet, calm, ready, ack, unparked) = (
            words(pairs),
            words(pairs),
            words(pairs),
            words(pairs),
            words(pairs),
        );
        let mut cons = Vec::new();
        for p in 0..pairs {
            let (quiet, calm, ready, ack, unparked) = (
                quiet.clone(),
                calm.clone(),
                ready.clone(),
                ack.clone(),
                unparked.clone(),
            );
            let mut r = Rng::new(rng.next());
            cons.push(rt.spawn(move || {
                let wait_for = |w: &AtomicU64, k: u64| wait_until(true, || w.load(SeqCst) >= k);
                for k in 1..=rounds {
                    for _ in 0..r.below(4) {
                        eevdf_rt::park_timeout(r.timeout()); // races the burst
                    }
                    quiet[p].store(k, SeqCst);
                    wait_for(&calm[p], k);
                    eevdf_rt::park_timeout(Duration::ZERO); // drain a stale token
                    ready[p].store(k, SeqCst);
                    if r.chance(2) {
                        // the unpark lands before the park: it returns at once
                        wait_for(&unparked[p], k);
                        chaos(&mut r, true);
                        eevdf_rt::park(); // a lost token hangs here
                    } else {
                        while ack[p].load(SeqCst) < k {
                            eevdf_rt::park(); // or here
                        }
                    }
                    wait_for(&unparked[p], k);
                }
            }));
        }
        let targets: Arc<Vec<Task>> = Arc::new(cons.iter().map(|h| h.task()).collect());
        let t2 = targets.clone();
        actors(rt, &mut rng, pairs, move |p, mut r, who| {
            let green = who.green();
            for k in 1..=rounds {
                let mut i = 0;
                while quiet[p].load(SeqCst) < k {
                    if r.chance(3) {
                        t2[p].unpark(); // burst: races the consumer's timeouts
                    }
                    chaos(&mut r, green);
                    if i < 16 {
                        relax(green);
                    } else {
                        nap(green, Duration::from_micros(20));
                    }
                    i += 1;
                }
                calm[p].store(k, SeqCst);
                wait_until(green, || ready[p].load(SeqCst) >= k);
                if r.chance(3) {
                    nap(green, r.timeout()); // let the consumer reach its park (or not)
                }
                ack[p].store(k, SeqCst);
                t2[p].unpark();
                unparked[p].store(k, SeqCst);
            }
        });
        for h in cons {
            h.join().unwrap();
        }

        // (c) unpark before the first run, and after the end
        let m = 20 + rng.below(40) as usize;
        let s = rng.next();
        let finished = rt.spawn(move || {
            let mut r = Rng::new(s);
            let mut hs = Vec::new();
            for i in 0..m {
                let h = eevdf_rt::spawn(move || {
                    eevdf_rt::park();
                    i
                });
                h.task().unpark();
                if r.chance(2) {
                    eevdf_rt::yield_now();
                }
                hs.push(h);
            }
            let mut done = Vec::new();
            for (i, h) in hs.into_iter().enumerate() {
                let t = h.task();
                assert_eq!(h.join().unwrap(), i);
                t.unpark(); // finished: harmless
                done.push(t);
            }
            done
        });
        for i in 0..m {
            let h = rt.spawn(move || {
                eevdf_rt::park();
                i
            });
            h.task().unpark(); // from an OS thread, likely before it ran
            assert_eq!(h.join().unwrap(), i);
        }
        for t in finished.join().unwrap() {
            t.unpark();
            assert!(t.is_finished());
        }
    });
}

/// Guards the primitives against extra wakeups: green threads blocked in
/// a semaphore acquire, a channel recv and a join are unparked at random
/// from green and OS threads all the time. A spurious wake must neither
/// grant a permit, invent or lose a message, nor return a join early;
/// the counts at the end are exact.
#[test]
fn spurious_unparks_on_blocked_waiters() {
    each("spurious_unparks_on_blocked_waiters", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed ^ 0x5e);
        let waiters = 2 + rng.below(4) as usize;
        let per = 100 + rng.below(200) as usize;
        let spammers = 1 + rng.below(2) as usize;
        let feeders = 1 + rng.below(2) as usize;
        let total = waiters * per;
        let sem = Arc::new(Semaphore::new(0));
        let (tx, rx) = channel::bounded::<usize>(rng.below(3) as usize);
        let seen = flags(total);
        let taken = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        let tasks: Arc<Vec<Mutex<Option<Task>>>> =
            Arc::new((0..waiters).map(|_| Mutex::new(None)).collect());
        let (sem2, seen2, taken2, done2) = (sem.clone(), seen.clone(), taken.clone(), done.clone());
        let txs = Arc::new(Mutex::new(Some(tx)));
        actors(
            rt,
            &mut rng,
            waiters + spammers + feeders,
            move |i, mut r, who| {
                let green = who.green();
                if i < waiters {
                    if green {
                        *tasks[i].lock().unwrap() = Some(eevdf_rt::current());
                    }
                    for _ in 0..per {
                        sem2.acquire().forget();
                        let n = taken2.fetch_add(1, SeqCst);
                        assert!(n < total, "more permits taken than released");
                        let id = rx.recv().expect("feeders alive");
                        once(&seen2, id, "channel under unpark storm");
                        if green && r.chance(4) {
                            let flag = Arc::new(AtomicBool::new(false));
                            let f2 = flag.clone();
                            let d = r.below(200);
                            let h = eevdf_rt::spawn(move || {
                                eevdf_rt::sleep(Duration::from_micros(d));
                                f2.store(true, SeqCst);
                            });
                            h.join().unwrap();
                            assert!(flag.load(SeqCst), "join returned before the child finished");
                        }
                        chaos(&mut r, green);
                    }
                    done2.fetch_add(1, SeqCst);
                } else if i < waiters + spammers {
                    while done2.load(SeqCst) < waiters {
                        let t = tasks[r.below(waiters as u64) as usize]
                            .lock()
                            .unwrap()
                            .clone();
                        if let Some(t) = t {
                            t.unpark();
                        }
                        chaos(&mut r, green);
                        relax(green);
                    }
                } else {
                    let tx = txs.lock().unwrap().clone().unwrap();
                    let f = i - waiters - spammers;
                    let mut id = f;
                    while id < total {
                        sem2.release();
                        tx.send(id).unwrap();
                        id += feeders;
                        chaos(&mut r, green);
                    }
                }
            },
        );
        assert_eq!(taken.load(SeqCst), total);
        assert_eq!(sem.available_permits(), 0, "semaphore: extra permit");
        assert!(
            seen.iter().all(|s| s.load(SeqCst) == 1),
            "channel: lost item"
        );
    });
}

// ---------------------------------------------------------------- spawn_blocking

/// A blocking job's panic payload.
struct JobPanic(usize);

/// Keeps the expected `JobPanic`s from printing a panic message each.
fn quiet_job_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<JobPanic>().is_none() {
                prev(info);
            }
        }));
    });
}

/// The bookkeeping of a set of blocking jobs: whether each ran, whether
/// its closure was dropped, and how its result was delivered.
struct Jobs {
    next: AtomicUsize,
    ran: Arc<Vec<AtomicU8>>,
    dropped: Arc<Vec<AtomicU8>>,
    delivered: Vec<AtomicU8>,
    panics: Vec<AtomicBool>,
    cancelled: Vec<AtomicBool>,
    detached: Vec<AtomicBool>,
}

/// Counts the drop of a job's closure (run or cancelled).
struct DropMark(usize, Arc<Vec<AtomicU8>>);
impl Drop for DropMark {
    fn drop(&mut self) {
        self.1[self.0].fetch_add(1, SeqCst);
    }
}

impl Jobs {
    fn new(cap: usize) -> Arc<Jobs> {
        Arc::new(Jobs {
            next: AtomicUsize::new(0),
            ran: flags(cap),
            dropped: flags(cap),
            delivered: (0..cap).map(|_| AtomicU8::new(0)).collect(),
            panics: (0..cap).map(|_| AtomicBool::new(false)).collect(),
            cancelled: (0..cap).map(|_| AtomicBool::new(false)).collect(),
            detached: (0..cap).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// A fresh job: its id and the closure to submit. It runs at most once
    /// (checked), works for a random short while, may panic, and returns
    /// `id * 3 + 1`.
    fn job(&self, r: &mut Rng, panics: bool) -> (usize, impl FnOnce() -> usize + Send + 'static) {
        let id = self.next.fetch_add(1, SeqCst);
        assert!(id < self.ran.len(), "too many jobs");
        self.panics[id].store(panics, SeqCst);
        let mark = DropMark(id, self.dropped.clone());
        let ran = self.ran.clone();
        let work = r.below(6);
        let d = r.below(300);
        (id, move || {
            let _mark = mark;
            once(&ran, id, "blocking job ran");
            match work {
                0 => std::thread::sleep(Duration::from_micros(d)),
                1 => burn(Duration::from_micros(d / 2)),
                2 => std::thread::yield_now(),
                _ => {}
            }
            if panics {
                std::panic::panic_any(JobPanic(id));
            }
            id * 3 + 1
        })
    }

    /// Records a joined result and checks it.
    fn deliver(&self, id: usize, res: std::thread::Result<usize>) {
        once(&self.delivered, id, "blocking job result delivered");
        match res {
            Ok(v) => {
                assert!(
                    !self.panics[id].load(SeqCst),
                    "job {id} panicked but joined Ok"
                );
                assert_eq!(v, id * 3 + 1, "job {id}: wrong result");
            }
            Err(e) => {
                let p = e.downcast_ref::<JobPanic>().unwrap_or_else(|| {
                    panic!(
                        "job {id}: unexpected Err (cancelled: {})",
                        e.is::<Cancelled>()
                    )
                });
                assert_eq!(p.0, id, "job {id}: another job's panic");
                assert!(
                    self.panics[id].load(SeqCst),
                    "job {id} Err but did not panic"
                );
            }
        }
    }

    /// [`deliver`](Self::deliver), also accepting `Err(Cancelled)` (a job
    /// queued at shutdown), which is recorded.
    fn deliver_at_shutdown(&self, id: usize, res: std::thread::Result<usize>) {
        match res {
            Err(e) if e.is::<Cancelled>() => {
                once(&self.delivered, id, "cancelled job delivered");
                self.cancelled[id].store(true, SeqCst);
            }
            res => self.deliver(id, res),
        }
    }

    fn all_dropped(&self) -> bool {
        let n = self.next.load(SeqCst);
        self.dropped[..n].iter().all(|d| d.load(SeqCst) != 0)
    }

    /// Waits until every job's closure has been dropped (run or not).
    fn settle(&self, green: bool) {
        let n = self.next.load(SeqCst);
        while self.dropped[..n].iter().any(|d| d.load(SeqCst) == 0) {
            if green {
                eevdf_rt::sleep(Duration::from_micros(200));
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

/// Guards `spawn_blocking`'s delivery: jobs submitted from green threads,
/// OS threads and from inside other jobs, to a small pool whose threads
/// exit after a very short keep-alive (a submit racing a thread's exit),
/// mixed with green work; each job runs exactly once, and each joined
/// result (joined by the submitter, by another green or OS thread through
/// a channel, or awaited as a future) arrives exactly once, with its
/// panic as `Err`. Detached jobs run too. Then a shutdown with jobs
/// running and queued: OS-thread joiners all return — `Ok` for a job
/// that ran, `Err(Cancelled)` for one that never did — and every closure
/// is dropped exactly once.
#[test]
fn spawn_blocking_exactly_once() {
    quiet_job_panics();
    each_with(
        "spawn_blocking_exactly_once",
        |b, r| {
            b.max_blocking_threads(1 + r.below(6) as usize)
                .blocking_keep_alive(Duration::from_micros(1000 + r.below(2000)))
        },
        |rt, cfg| {
            let mut rng = Rng::new(cfg.seed ^ 0xb1);
            let subs = 2 + rng.below(4) as usize;
            let joiners = 1 + rng.below(3) as usize;
            let per = 150 + rng.below(250) as usize;
            let jobs = Jobs::new(subs * per * 2);
            let (htx, hrx) = channel::unbounded::<(usize, JoinHandle<usize>)>();
            let subs_done = Arc::new(AtomicUsize::new(0));
            let (j2, sd2) = (jobs.clone(), subs_done.clone());
            actors(rt, &mut rng, subs + joiners, move |i, mut r, who| {
                let green = who.green();
                if i < subs {
                    let mut mine: Vec<(usize, JoinHandle<usize>)> = Vec::new();
                    for _ in 0..per {
                        let panics = r.chance(8);
                        let (id, f) = j2.job(&mut r, panics);
                        let h = if r.chance(6) {
                            // submitted from inside another job
                            // (its handle goes to the joiners: joining it in
                            // the outer job could wait for the outer's own
                            // pool thread)
                            let htx3 = htx.clone();
                            let (oid, of) = j2.job(&mut r, false);
                            let outer = who.spawn_blocking(move || {
                                let h = eevdf_rt::task::spawn_blocking(f);
                                htx3.send((id, h)).unwrap();
                                of()
                            });
                            mine.push((oid, outer));
                            continue;
                        } else {
                            who.spawn_blocking(f)
                        };
                        match r.below(5) {
                            0 => j2.deliver(id, h.join()),
                            1 => htx.send((id, h)).unwrap(),
                            2 => j2.deliver(id, eevdf_rt::block_on_future(h)),
                            3 if r.chance(3) => {
                                j2.detached[id].store(true, SeqCst);
                                drop(h);
                            }
                            _ => mine.push((id, h)),
                        }
                        if green && r.chance(4) {
                            // green work in between
                            let g = eevdf_rt::spawn(move || {
                                eevdf_rt::yield_now();
                                7
                            });
                            assert_eq!(g.join().unwrap(), 7);
                        }
                        chaos(&mut r, green);
                    }
                    for (id, h) in mine {
                        if r.chance(3) {
                            j2.deliver(id, eevdf_rt::block_on_future(h));
                        } else {
                            j2.deliver(id, h.join());
                        }
                    }
                    sd2.fetch_add(1, SeqCst);
                } else {
                    loop {
                        match hrx.recv_timeout(Duration::from_millis(1)) {
                            Ok((id, h)) => {
                                let res = if r.chance(3) {
                                    eevdf_rt::block_on_future(h)
                                } else {
                                    h.join()
                                };
                                j2.deliver(id, res);
                                chaos(&mut r, green);
                            }
                            Err(RecvTimeoutError::Timeout) => {
                                // all submitted, none in flight: done (jobs
                                // that send a handle finish before they drop)
                                if sd2.load(SeqCst) == subs && j2.all_dropped() && hrx.is_empty() {
                                    break;
                                }
                            }
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                }
            });
            jobs.settle(false);
            let n = jobs.next.load(SeqCst);
            for id in 0..n {
                assert_eq!(jobs.ran[id].load(SeqCst), 1, "job {id} did not run");
                assert_eq!(jobs.dropped[id].load(SeqCst), 1, "job {id} dropped twice");
                if !jobs.detached[id].load(SeqCst) {
                    assert_eq!(jobs.delivered[id].load(SeqCst), 1, "job {id}: result lost");
                }
            }

            // shutdown with jobs running and queued
            let jobs = Jobs::new(200);
            let batch = 60 + rng.below(140) as usize;
            let mut by_os: Vec<Vec<(usize, JoinHandle<usize>)>> =
                (0..3).map(|_| Vec::new()).collect();
            let mut green_joiners = Vec::new();
            for _ in 0..batch {
                let panics = rng.chance(8);
                let (id, f) = jobs.job(&mut rng, panics);
                let slow = rng.below(2000);
                let h = rt.spawn_blocking(move || {
                    std::thread::sleep(Duration::from_micros(slow));
                    f()
                });
                if rng.chance(3) {
                    let j = jobs.clone();
                    green_joiners.push(rt.spawn(move || j.deliver_at_shutdown(id, h.join())));
                } else {
                    by_os[rng.below(3) as usize].push((id, h));
                }
            }
            std::thread::scope(|s| {
                for hs in by_os {
                    let jobs = jobs.clone();
                    s.spawn(move || {
                        for (id, h) in hs {
                            jobs.deliver_at_shutdown(id, h.join());
                        }
                    });
                }
                std::thread::sleep(Duration::from_micros(rng.below(8000)));
                rt.shutdown();
            });
            assert!(
                rt.try_spawn_blocking(|| 0).is_err(),
                "spawn_blocking accepted after shutdown"
            );
            for g in green_joiners {
                match g.join() {
                    Ok(()) => {}
                    Err(e) => assert!(e.is::<Cancelled>(), "green joiner failed"),
                }
            }
            jobs.settle(false);
            let n = jobs.next.load(SeqCst);
            for id in 0..n {
                assert_eq!(jobs.dropped[id].load(SeqCst), 1, "job {id}: closure drops");
            }
            let cancelled = jobs.cancelled[..n]
                .iter()
                .filter(|c| c.load(SeqCst))
                .count();
            let ran = jobs.ran[..n].iter().filter(|c| c.load(SeqCst) == 1).count();
            eprintln!("  shutdown batch: {n} jobs, {ran} ran, {cancelled} joined Cancelled");
            for id in 0..n {
                if jobs.cancelled[id].load(SeqCst) {
                    assert_eq!(
                        jobs.ran[id].load(SeqCst),
                        0,
                        "job {id} ran but joined Cancelled"
                    );
                }
            }
        },
    );
}

// ---------------------------------------------------------------- futures

/// One gate's shared state: opened once by an opener, which then calls
/// the waker the poller registered.
struct GateSt {
    open: AtomicBool,
    waker: Mutex<Option<Waker>>,
    completed: AtomicU8,
}

/// A future that is ready once its gate is open; it may first wake itself
/// during a poll a few times (a wake before the park), and panics if
/// polled after it returned `Ready`.
struct Gate {
    st: Arc<GateSt>,
    self_wakes: u32,
    done: bool,
}

impl Future for Gate {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let me = self.get_mut();
        assert!(!me.done, "gate polled after it returned Ready");
        if me.self_wakes > 0 {
            me.self_wakes -= 1;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        // register, then check: an opener that stored `open` before our
        // check is seen; one after it finds the waker
        *me.st.waker.lock().unwrap() = Some(cx.waker().clone());
        if me.st.open.load(SeqCst) {
            me.done = true;
            me.st.completed.fetch_add(1, SeqCst);
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

/// Guards the futures interop: items (a chain of gates, sometimes a
/// nested `spawn_future` awaited by its `JoinHandle`) run by
/// `block_on_future` on green and OS threads and by `spawn_future`
/// (joined, or awaited from another `block_on_future`); openers on other
/// workers and OS threads open the gates and call the wakers one to four
/// times (`wake`, `wake_by_ref`, clones), and keep some wakers to call
/// long after their futures completed, while the runners sleep in an
/// exactly-counted futex wait. Every item completes exactly once, no gate
/// is polled after `Ready`, and no late wake shows up as a futex wake.
#[test]
fn futures_wakers_exactly_once() {
    each("futures_wakers_exactly_once", |rt, cfg| {
        let mut rng = Rng::new(cfg.seed ^ 0xf7);
        let runners = 2 + rng.below(4) as usize;
        let openers = 1 + rng.below(3) as usize;
        let items = runners * (150 + rng.below(250) as usize);
        let gates_of: Arc<Vec<u32>> =
            Arc::new((0..items).map(|_| 1 + rng.below(3) as u32).collect());
        let completed = flags(items);
        let (gtx, grx) = channel::unbounded::<Arc<GateSt>>();
        let all_gates = Arc::new(Mutex::new(Vec::<Arc<GateSt>>::new()));
        let late = Arc::new(Mutex::new(Vec::<Waker>::new()));
        let opened = Arc::new(AtomicUsize::new(0));
        const END_WAITS: usize = 3;
        let end_word = Arc::new(AtomicU32::new(0));
        let end_returns = Arc::new(AtomicUsize::new(0));
        let end_reported = Arc::new(AtomicUsize::new(0));
        let runners_done = Arc::new(AtomicUsize::new(0));
        let (comp2, all2, late2, op2, ew2, er2, ep2, rd2) = (
            completed.clone(),
            all_gates.clone(),
            late.clone(),
            opened.clone(),
            end_word.clone(),
            end_returns.clone(),
            end_reported.clone(),
            runners_done.clone(),
        );
        actors(rt, &mut rng, runners + openers + 1, move |i, mut r, who| {
            let green = who.green();
            if i < runners {
                let new_gate = |r: &mut Rng| {
                    let st = Arc::new(GateSt {
                        open: AtomicBool::new(false),
                        waker: Mutex::new(None),
                        completed: AtomicU8::new(0),
                    });
                    gtx.send(st.clone()).unwrap();
                    Gate {
                        st,
                        self_wakes: if r.chance(3) { r.below(3) as u32 } else { 0 },
                        done: false,
                    }
                };
                let mut spawned: Vec<(usize, JoinHandle<usize>)> = Vec::new();
                for id in (i..items).step_by(runners) {
                    let gates: Vec<Gate> = (0..gates_of[id]).map(|_| new_gate(&mut r)).collect();
                    let nested = if green && r.chance(4) {
                        let g = new_gate(&mut r);
                        Some(eevdf_rt::spawn_future(async move {
                            g.await;
                            id ^ 0x5555
                        }))
                    } else {
                        None
                    };
                    let fut = async move {
                        for g in gates {
                            g.await;
                        }
                        if let Some(h) = nested {
                            assert_eq!(h.await.unwrap(), id ^ 0x5555);
                        }
                        id
                    };
                    if green && r.chance(3) {
                        spawned.push((id, eevdf_rt::spawn_future(fut)));
                    } else {
                        let v = eevdf_rt::block_on_future(fut);
                        assert_eq!(v, id);
                        once(&comp2, id, "future completed");
                    }
                    chaos(&mut r, green);
                }
                for (id, h) in spawned {
                    let v = if r.chance(2) {
                        h.join().unwrap()
                    } else {
                        eevdf_rt::block_on_future(h).unwrap()
                    };
                    assert_eq!(v, id);
                    once(&comp2, id, "spawned future completed");
                }
                // late wakes now land on this thread's futex sleeps, which
                // only a futex wake may end
                for _ in 0..END_WAITS {
                    Futex::wait(&ew2, 0);
                    er2.fetch_add(1, SeqCst);
                }
                rd2.fetch_add(1, SeqCst);
            } else if i < runners + openers {
                loop {
                    match grx.recv_timeout(Duration::from_millis(1)) {
                        Ok(st) => {
                            chaos(&mut r, green);
                            st.open.store(true, SeqCst);
                            let w = st.waker.lock().unwrap().clone();
                            if let Some(w) = w {
                                for _ in 0..1 + r.below(4) {
                                    match r.below(3) {
                                        0 => w.wake_by_ref(),
                                        1 => {
                                            // the by-value wake (drops a reference)
                                            let owned = w.clone();
                                            owned.wake()
                                        }
                                        _ => {
                                            chaos(&mut r, green);
                                            w.wake_by_ref();
                                        }
                                    }
                                }
                                if r.chance(3) {
                                    late2.lock().unwrap().push(w);
                                }
                            }
                            all2.lock().unwrap().push(st);
                            op2.fetch_add(1, SeqCst);
                        }
                        Err(RecvTimeoutError::Timeout) => {
                            // runners finish only after all their gates opened
                            if rd2.load(SeqCst) == runners {
                                break;
                            }
                        }
                        Err(e) => panic!("{e:?}"),
                    }
                }
            } else {
                // late wakes, and the futex wakes that end the runners
                while rd2.load(SeqCst) < runners {
                    let w = {
                        let l = late2.lock().unwrap();
                        if l.is_empty() {
                            None
                        } else {
                            Some(l[r.below(l.len() as u64) as usize].clone())
                        }
                    };
                    if let Some(w) = w {
                        w.wake_by_ref();
                    }
                    if r.chance(8) {
                        ep2.fetch_add(Futex::wake(&ew2, 1), SeqCst);
                    }
                    chaos(&mut r, green);
                    relax(green);
                }
            }
        });
        assert!(
            completed.iter().all(|c| c.load(SeqCst) == 1),
            "an item did not complete"
        );
        let gates = all_gates.lock().unwrap();
        for g in gates.iter() {
            assert_eq!(
                g.completed.load(SeqCst),
                1,
                "a gate completed {} times",
                g.completed.load(SeqCst)
            );
        }
        assert_eq!(Futex::wake(&end_word, usize::MAX), 0);
        assert_eq!(end_returns.load(SeqCst), runners * END_WAITS);
        assert_eq!(
            end_reported.load(SeqCst),
            runners * END_WAITS,
            "a late future wake ended a futex wait"
        );
        eprintln!(
            "  {items} items, {} gates, {} wakers kept for late wakes",
            gates.len(),
            late.lock().unwrap().len()
        );
        drop(gates);
        // late wakes after every thread is gone
        for w in late.lock().unwrap().drain(..) {
            w.wake();
        }
    });
}
