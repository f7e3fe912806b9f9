//! Loom models of the `sync` wait-list protocol: the futex bucket
//! (value check under the bucket lock, the waiter count with its two
//! `SeqCst` fences, the token handshake, timeouts racing wakes), and the
//! primitives built on it (mutex handoff, channel handoff and
//! disconnection, condvar, semaphore).
//!
//! Owns: the models only. Must not: run in a normal build (it is
//! `cfg(all(test, loom))`).
//!
//! Run (a separate target dir keeps the normal build's cache):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p eevdf-rt --release --lib sync::loom_tests
//! ```
//!
//! Under loom, `platform` swaps the internal lock for `loom::sync::Mutex`,
//! the atomics and fences for loom's, and parking for
//! `loom::thread::park`/`unpark`; a deadline counts as already passed (a
//! timed waiter gives up right after queueing, racing any waker). A lost
//! wakeup shows up as a deadlock loom reports (every thread parked).

use super::channel;
use super::futex::FutexTable;
use super::{Barrier, Condvar, Mutex, RwLock, Semaphore};
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::time::Instant;

const KEY: usize = 0x1000;

fn table() -> Arc<FutexTable<2>> {
    Arc::new(FutexTable::new())
}

/// The value changes and a wake follows; the waiter loops until it sees
/// the change. Any interleaving of the waiter's count/fence/lock/check/
/// park with the waker's store/fence/count check must end.
#[test]
fn futex_wake_between_check_and_park_is_not_lost() {
    loom::model(|| {
        let t = table();
        let v = Arc::new(AtomicU32::new(0));
        let (t2, v2) = (t.clone(), v.clone());
        let waiter = thread::spawn(move || {
            while v2.load(Ordering::SeqCst) == 0 {
                t2.wait(KEY, || v2.load(Ordering::SeqCst) == 0, None);
            }
        });
        v.store(1, Ordering::SeqCst);
        t.wake(KEY, 1);
        waiter.join().unwrap();
    });
}

/// A store with `Relaxed` ordering by the caller is still not lost: the
/// fences in wait/wake carry the ordering (as in the kernel).
#[test]
fn futex_relaxed_caller_store_is_not_lost() {
    loom::model(|| {
        let t = table();
        let v = Arc::new(AtomicU32::new(0));
        let (t2, v2) = (t.clone(), v.clone());
        let waiter = thread::spawn(move || {
            while v2.load(Ordering::Relaxed) == 0 {
                t2.wait(KEY, || v2.load(Ordering::Relaxed) == 0, None);
            }
        });
        v.store(1, Ordering::Relaxed);
        t.wake(KEY, 1);
        waiter.join().unwrap();
    });
}

/// schbench's one-token semaphore: post = CAS 0→1 then wake(1) if it
/// succeeded; wait = CAS 1→0, else futex-wait while 0. Two posts, two
/// waits: both waits complete.
#[test]
fn futex_one_token_semaphore() {
    fn post(t: &FutexTable<2>, w: &AtomicU32) {
        if w.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            t.wake(KEY, 1);
        }
    }
    fn wait(t: &FutexTable<2>, w: &AtomicU32) {
        while w
            .compare_exchange(1, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            t.wait(KEY, || w.load(Ordering::SeqCst) == 0, None);
        }
    }
    loom::model(|| {
        let t = table();
        let w = Arc::new(AtomicU32::new(0));
        let ack = Arc::new(AtomicU32::new(0));
        let (t2, w2, a2) = (t.clone(), w.clone(), ack.clone());
        let h = thread::spawn(move || {
            wait(&t2, &w2);
            post(&t2, &a2);
        });
        post(&t, &w);
        wait(&t, &ack);
        h.join().unwrap();
    });
}

/// A timed waiter (it gives up right after queueing) races a waker: the
/// wake count and the waiter's verdict agree, and the waiter's node is
/// gone either way (a second wake finds nobody).
#[test]
fn futex_timeout_races_wake_exactly() {
    loom::model(|| {
        let t = table();
        let v = Arc::new(AtomicU32::new(0));
        let (t2, v2) = (t.clone(), v.clone());
        let waiter = thread::spawn(move || {
            t2.wait(KEY, || v2.load(Ordering::SeqCst) == 0, Some(Instant::now()))
        });
        let woken = t.wake(KEY, 1);
        let timed_out = waiter.join().unwrap();
        assert!(woken <= 1);
        if woken == 1 {
            assert!(!timed_out, "a waiter counted by wake reported a timeout");
        }
        assert_eq!(t.wake(KEY, 1), 0, "a node was left behind");
    });
}

/// Two waiters sleep on a value that never changes, so only a wake can
/// release them; the waker calls wake(1) until it has counted two. If a
/// wake ever counted a waiter it did not release (or released one it did
/// not count), a join below deadlocks or the final count is wrong.
#[test]
fn futex_wake_counts_are_exact() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(|| {
        let t = table();
        let v = Arc::new(AtomicU32::new(0));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (t2, v2) = (t.clone(), v.clone());
                thread::spawn(move || {
                    assert!(!t2.wait(KEY, || v2.load(Ordering::SeqCst) == 0, None));
                })
            })
            .collect();
        let mut total = 0;
        while total < 2 {
            let k = t.wake(KEY, 1);
            assert!(k <= 1);
            total += k;
            if k == 0 {
                thread::yield_now();
            }
        }
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(t.wake(KEY, 2), 0);
    });
}

/// Two keys that share a bucket: a wake on one never takes the other's waiter.
#[test]
fn futex_wake_respects_the_key() {
    loom::model(|| {
        let t = table();
        let v = Arc::new(AtomicU32::new(0));
        let (t2, v2) = (t.clone(), v.clone());
        let waiter = thread::spawn(move || {
            while v2.load(Ordering::SeqCst) == 0 {
                t2.wait(KEY, || v2.load(Ordering::SeqCst) == 0, None);
            }
        });
        assert_eq!(t.wake(KEY + 4096, 1), 0);
        v.store(1, Ordering::SeqCst);
        t.wake(KEY, 1);
        waiter.join().unwrap();
    });
}

/// Mutex: two threads increment under the lock; the handoff/retry paths
/// never lose a sleeper or admit two owners.
#[test]
fn mutex_two_threads() {
    loom::model(|| {
        let m = Arc::new(Mutex::new(0u32));
        let m2 = m.clone();
        let h = thread::spawn(move || {
            for _ in 0..2 {
                *m2.lock() += 1;
            }
        });
        *m.lock() += 1;
        h.join().unwrap();
        assert_eq!(*m.lock(), 3);
    });
}

/// Mutex with three contenders (bounded preemptions keep it quick).
#[test]
fn mutex_three_threads() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(|| {
        let m = Arc::new(Mutex::new(0u32));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || *m.lock() += 1)
            })
            .collect();
        *m.lock() += 1;
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*m.lock(), 3);
    });
}

/// Condvar: the notify after a state change under the mutex is not lost.
#[test]
fn condvar_notify_is_not_lost() {
    loom::model(|| {
        let p = Arc::new((Mutex::new(false), Condvar::new()));
        let p2 = p.clone();
        let h = thread::spawn(move || {
            let (m, cv) = &*p2;
            let mut g = m.lock();
            while !*g {
                g = cv.wait(g);
            }
        });
        {
            let (m, cv) = &*p;
            *m.lock() = true;
            cv.notify_one();
        }
        h.join().unwrap();
    });
}

/// Rendezvous channel: the send completes with the receiver holding the
/// message; then the sender's drop disconnects the receiver.
#[test]
fn channel_rendezvous_and_disconnect() {
    loom::model(|| {
        let (tx, rx) = channel::bounded::<u32>(0);
        let h = thread::spawn(move || {
            tx.send(7).unwrap();
        });
        assert_eq!(rx.recv(), Ok(7));
        assert_eq!(rx.recv(), Err(channel::RecvError));
        h.join().unwrap();
    });
}

/// Bounded(1): a sender sleeping on a full channel has its message moved
/// into the buffer by the receiver, in order.
#[test]
fn channel_bounded_handoff_keeps_order() {
    loom::model(|| {
        let (tx, rx) = channel::bounded::<u32>(1);
        let h = thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        assert_eq!(rx.recv(), Ok(1));
        assert_eq!(rx.recv(), Ok(2));
        h.join().unwrap();
    });
}

/// The last receiver going away wakes a sleeping sender with its message.
#[test]
fn channel_receiver_drop_returns_the_message() {
    loom::model(|| {
        let (tx, rx) = channel::bounded::<u32>(0);
        let h = thread::spawn(move || tx.send(5));
        drop(rx);
        assert_eq!(h.join().unwrap(), Err(channel::SendError(5)));
    });
}

/// A receive that times out (right after queueing) racing a send: the
/// message is either received or stays in the channel — never lost.
#[test]
fn channel_recv_timeout_races_send() {
    loom::model(|| {
        let (tx, rx) = channel::unbounded::<u32>();
        let h = thread::spawn(move || {
            tx.send(9).unwrap();
            tx
        });
        let got = rx.recv_deadline(Instant::now());
        let _tx = h.join().unwrap();
        match got {
            Ok(v) => assert_eq!(v, 9),
            Err(_) => assert_eq!(rx.try_recv(), Ok(9)),
        }
    });
}

/// Semaphore: a release hands its permit to a sleeper; the permit is never
/// lost or duplicated.
#[test]
fn semaphore_handoff() {
    loom::model(|| {
        let s = Arc::new(Semaphore::new(0));
        let s2 = s.clone();
        let h = thread::spawn(move || s2.acquire().forget());
        s.release();
        h.join().unwrap();
        assert_eq!(s.available_permits(), 0);
        assert!(s.try_acquire().is_none());
    });
}

/// Condvar wait_timeout (gives up right after queueing) racing a notify:
/// the waiter is either notified or times out, and the waiter count is
/// left consistent (a later notify finds nobody and does not hang).
#[test]
fn condvar_timeout_races_notify() {
    loom::model(|| {
        let p = Arc::new((Mutex::new(0u32), Condvar::new()));
        let p2 = p.clone();
        let h = thread::spawn(move || {
            let (m, cv) = &*p2;
            let g = m.lock();
            let (g, timed_out) = cv.wait_timeout(g, std::time::Duration::from_secs(1));
            (*g, timed_out)
        });
        {
            let (m, cv) = &*p;
            *m.lock() = 1;
            cv.notify_one();
        }
        let (_v, _timed_out) = h.join().unwrap();
        p.1.notify_all();
    });
}

/// RwLock: a writer parked behind a reader is handed the lock by the last
/// reader; a reader arriving behind the parked writer gets in after it.
#[test]
fn rwlock_reader_writer_handoff() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let l = Arc::new(RwLock::new(0u32));
        let r = l.read();
        let l2 = l.clone();
        let w = thread::spawn(move || *l2.write() += 1);
        let l3 = l.clone();
        let rd = thread::spawn(move || *l3.read());
        drop(r);
        w.join().unwrap();
        let seen = rd.join().unwrap();
        assert!(seen <= 1);
        assert_eq!(*l.read(), 1);
    });
}

/// Barrier of two, used twice: one leader per generation, nobody stuck.
#[test]
fn barrier_two_generations() {
    loom::model(|| {
        let b = Arc::new(Barrier::new(2));
        let b2 = b.clone();
        let h = thread::spawn(move || {
            let a = b2.wait().is_leader() as u32;
            a + b2.wait().is_leader() as u32
        });
        let mine = b.wait().is_leader() as u32 + b.wait().is_leader() as u32;
        assert_eq!(mine + h.join().unwrap(), 2);
    });
}

/// MPMC: two receivers, one sender that sends one message and leaves:
/// exactly one receiver gets it, the other sees the disconnection.
#[test]
fn channel_two_receivers_one_message() {
    loom::model(|| {
        let (tx, rx) = channel::unbounded::<u32>();
        let rx2 = rx.clone();
        let h = thread::spawn(move || rx2.recv().ok());
        let s = thread::spawn(move || tx.send(3).unwrap());
        let mine = rx.recv().ok();
        s.join().unwrap();
        let theirs = h.join().unwrap();
        assert_eq!(mine.into_iter().chain(theirs).collect::<Vec<_>>(), [3]);
    });
}

/// A timed acquire racing a release: the permit ends up either with the
/// waiter or back in the semaphore — never lost, never doubled.
#[test]
fn semaphore_timeout_races_release() {
    loom::model(|| {
        let s = Arc::new(Semaphore::new(0));
        let s2 = s.clone();
        let h =
            thread::spawn(
                move || match s2.acquire_timeout(std::time::Duration::from_secs(1)) {
                    Some(p) => {
                        p.forget();
                        true
                    }
                    None => false,
                },
            );
        s.release();
        let got = h.join().unwrap();
        assert_eq!(s.available_permits(), if got { 0 } else { 1 });
    });
}

/// The data a lock guards, for the happens-before models below: loom
/// reports a read and a write of it that no synchronisation orders.
struct Data(loom::cell::UnsafeCell<u32>);

// SAFETY: the models only touch the cell under the lock they test (that
// is what they check), and loom reports any access that lock fails to
// order.
unsafe impl Sync for Data {}

impl Data {
    fn new() -> Self {
        Data(loom::cell::UnsafeCell::new(0))
    }
    fn read(&self) -> u32 {
        // SAFETY: called with the lock held for reading (loom checks it).
        self.0.with(|p| unsafe { *p })
    }
    fn bump(&self) {
        // SAFETY: called with the lock held for writing (loom checks it).
        self.0.with_mut(|p| unsafe { *p += 1 })
    }
}

/// A writer's unlock that admits a parked reader lets new readers in on
/// the fast path too: they must see what the writer wrote (the admitting
/// store is a Release; it was Relaxed, and loom found the race).
#[test]
fn rwlock_write_happens_before_readers_that_enter_after() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let l = Arc::new((RwLock::new(()), Data::new()));
        let g = l.0.write();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let l = l.clone();
                thread::spawn(move || {
                    let _r = l.0.read();
                    l.1.read()
                })
            })
            .collect();
        l.1.bump();
        drop(g);
        for r in readers {
            r.join().unwrap();
        }
    });
}

/// Every reader's read happens before the write of the writer that the
/// last reader hands the lock to (the readers' decrement is AcqRel; with
/// Release alone, loom found an earlier reader's read racing the write).
#[test]
fn rwlock_reads_happen_before_the_writer_handed_the_lock() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let l = Arc::new((RwLock::new(()), Data::new()));
        let r = l.0.read();
        let l1 = l.clone();
        let reader = thread::spawn(move || {
            let _r = l1.0.read();
            l1.1.read()
        });
        let l2 = l.clone();
        let writer = thread::spawn(move || {
            let _w = l2.0.write();
            l2.1.bump();
        });
        drop(r);
        reader.join().unwrap();
        writer.join().unwrap();
    });
}

/// Three threads take the mutex in turn: each one's write happens before
/// the next one's (the fast path, the slow path and the hand-off).
#[test]
fn mutex_writes_happen_before_the_next_holder() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let m = Arc::new((Mutex::new(()), Data::new()));
        let others: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || {
                    let _g = m.0.lock();
                    m.1.bump();
                })
            })
            .collect();
        {
            let _g = m.0.lock();
            m.1.bump();
        }
        for h in others {
            h.join().unwrap();
        }
        let _g = m.0.lock();
        assert_eq!(m.1.read(), 3);
    });
}
