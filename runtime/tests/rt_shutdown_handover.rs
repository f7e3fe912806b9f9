//! Nothing handed to a sleeping green thread is lost when shutdown unwinds
//! it: a lock, a permit, a message or a notification a thread unwound
//! earlier released to it is used and given back (or passed on), so OS
//! threads waiting behind it still get it; and a sleeper unwound before
//! anything was handed to it leaves no trace in the primitive's state.
//!
//! Shutdown unwinds green threads in turns, in the order they were
//! spawned, so each test spawns the thread that releases first.

mod common;

use common::{park_forever, with_timeout, OnDrop};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(1).build().unwrap()
}

/// Spawns `f` on `rt` and gives it time to block.
fn spawn_and_settle(rt: &eevdf_rt::Runtime, f: impl FnOnce() + Send + 'static) {
    drop(rt.spawn(f));
    std::thread::sleep(Duration::from_millis(30));
}

/// Starts an OS thread running `f` and gives it time to block.
fn os_thread(f: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    let t = std::thread::spawn(f);
    std::thread::sleep(Duration::from_millis(30));
    t
}

/// Whether `t` finishes within 10 s (a lost hand-over makes it wait for
/// good).
fn finishes(t: std::thread::JoinHandle<()>) -> bool {
    let start = Instant::now();
    while !t.is_finished() {
        if start.elapsed() > Duration::from_secs(10) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    t.join().unwrap();
    true
}

#[test]
fn a_mutex_handed_to_a_sleeper_being_unwound_reaches_the_next_waiter() {
    with_timeout(60, "mutex hand-over", || {
        let rt = rt();
        let m = Arc::new(eevdf_rt::sync::Mutex::new(0u32));
        let m1 = m.clone();
        spawn_and_settle(&rt, move || {
            let _g = m1.lock();
            park_forever()
        });
        let m2 = m.clone();
        spawn_and_settle(&rt, move || {
            let _g = m2.lock(); // handed over when the first one unwinds
            park_forever()
        });
        let m3 = m.clone();
        let t = os_thread(move || *m3.lock() += 1);
        rt.shutdown();
        assert!(finishes(t), "an OS thread waits for a mutex nobody holds");
        assert_eq!(*m.lock(), 1);
    });
}

#[test]
fn a_permit_handed_to_a_sleeper_being_unwound_reaches_the_next_waiter() {
    with_timeout(60, "semaphore hand-over", || {
        let rt = rt();
        let s = Arc::new(eevdf_rt::sync::Semaphore::new(1));
        let s1 = s.clone();
        spawn_and_settle(&rt, move || {
            let _p = s1.acquire();
            park_forever()
        });
        let s2 = s.clone();
        spawn_and_settle(&rt, move || {
            let _p = s2.acquire();
            park_forever()
        });
        let s3 = s.clone();
        let t = os_thread(move || drop(s3.acquire()));
        rt.shutdown();
        assert!(finishes(t), "an OS thread waits for a permit nobody holds");
        assert_eq!(s.available_permits(), 1);
    });
}

#[test]
fn a_write_lock_handed_to_a_sleeper_being_unwound_reaches_the_next_waiter() {
    with_timeout(60, "rwlock hand-over", || {
        let rt = rt();
        let l = Arc::new(eevdf_rt::sync::RwLock::new(0u32));
        let l1 = l.clone();
        spawn_and_settle(&rt, move || {
            let _g = l1.write();
            park_forever()
        });
        let l2 = l.clone();
        spawn_and_settle(&rt, move || {
            let _g = l2.write();
            park_forever()
        });
        let l3 = l.clone();
        let t = os_thread(move || *l3.write() += 1);
        rt.shutdown();
        assert!(finishes(t), "an OS thread waits for a lock nobody holds");
        assert_eq!(*l.read(), 1);
    });
}

#[test]
fn a_writer_unwound_while_it_sleeps_leaves_the_lock_usable() {
    with_timeout(60, "rwlock stale writer", || {
        let rt = rt();
        let l = Arc::new(eevdf_rt::sync::RwLock::new(0u32));
        let r = l.read();
        let l2 = l.clone();
        spawn_and_settle(&rt, move || *l2.write() += 1);
        // A reader that queues behind the sleeping writer.
        let l3 = l.clone();
        let reader = os_thread(move || drop(l3.read()));
        rt.shutdown();
        // A reader arriving now is not kept out by the writer that is gone,
        // and lets in the one that queued behind it.
        let l6 = l.clone();
        assert!(finishes(os_thread(move || drop(l6.read()))));
        assert!(
            finishes(reader),
            "a reader waits behind a writer that is gone"
        );
        drop(r);
        let l4 = l.clone();
        let writer = os_thread(move || *l4.write() += 1);
        assert!(finishes(writer), "a writer waits for a lock nobody holds");
        let l5 = l.clone();
        assert!(finishes(os_thread(move || drop(l5.read()))));
        assert_eq!(*l.read(), 1);
    });
}

#[test]
fn a_barrier_waiter_unwound_while_it_sleeps_no_longer_counts() {
    with_timeout(60, "barrier", || {
        let rt = rt();
        let b = Arc::new(eevdf_rt::sync::Barrier::new(2));
        let b2 = b.clone();
        spawn_and_settle(&rt, move || {
            b2.wait();
        });
        rt.shutdown();
        let b3 = b.clone();
        let t = std::thread::spawn(move || {
            b3.wait();
        });
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !t.is_finished(),
            "a barrier of 2 released one thread: it still counted a waiter that is gone"
        );
        b.wait();
        t.join().unwrap();
    });
}

#[test]
fn a_notification_taken_by_a_sleeper_being_unwound_is_passed_on() {
    with_timeout(60, "condvar", || {
        let rt = rt();
        let m = Arc::new(eevdf_rt::sync::Mutex::new(()));
        let cv = Arc::new(eevdf_rt::sync::Condvar::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (cv1, f1) = (cv.clone(), flag.clone());
        spawn_and_settle(&rt, move || {
            let _d = OnDrop(move || {
                f1.store(true, Ordering::SeqCst);
                cv1.notify_one();
            });
            park_forever()
        });
        let (m2, cv2, f2) = (m.clone(), cv.clone(), flag.clone());
        spawn_and_settle(&rt, move || {
            drop(cv2.wait_while(m2.lock(), |_| !f2.load(Ordering::SeqCst)));
        });
        let (m3, cv3, f3) = (m.clone(), cv.clone(), flag.clone());
        let t = os_thread(move || {
            drop(cv3.wait_while(m3.lock(), |_| !f3.load(Ordering::SeqCst)));
        });
        // The notified green thread cannot get the mutex back (we hold it)
        // before shutdown unwinds it: the notification must go on to the
        // OS thread.
        let held = m.lock();
        rt.shutdown();
        drop(held);
        assert!(finishes(t), "the notification died with the green thread");
    });
}

#[test]
fn a_message_handed_to_a_receiver_being_unwound_is_received() {
    with_timeout(60, "channel", || {
        let rt = rt();
        let (tx, rx) = eevdf_rt::sync::channel::bounded::<u32>(0);
        let got = Arc::new(AtomicBool::new(false));
        let tx1 = tx.clone();
        spawn_and_settle(&rt, move || {
            let _d = OnDrop(move || {
                let _ = tx1.try_send(7);
            });
            park_forever()
        });
        let g = got.clone();
        spawn_and_settle(&rt, move || {
            if rx.recv() == Ok(7) {
                g.store(true, Ordering::SeqCst);
            }
        });
        rt.shutdown();
        assert!(
            got.load(Ordering::SeqCst),
            "a message handed to a sleeping receiver was dropped at shutdown"
        );
        drop(tx);
    });
}
