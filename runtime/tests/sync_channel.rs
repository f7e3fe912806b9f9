//! `eevdf_rt::sync::channel`: MPMC delivery exactly once (bounded,
//! unbounded, rendezvous), crossbeam's disconnection rules, timeouts, and
//! green thread <-> OS thread ping-pong.

use eevdf_rt::sync::channel::{
    bounded, unbounded, Receiver, RecvError, RecvTimeoutError, SendError, SendTimeoutError, Sender,
    TryRecvError, TrySendError,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::within;

fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

/// Heavy tests of this file run one at a time: each builds a runtime
/// whose workers are pinned to the same cores, and contention tests
/// measure nothing useful while another runtime's workers share them.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `producers` green threads each send `per` distinct numbers; `consumers`
/// green threads receive until disconnected. Every number must arrive
/// exactly once.
fn mpmc(make: fn() -> (Sender<u32>, Receiver<u32>), producers: u32, consumers: u32, per: u32) {
    let rt = rt();
    let (tx, rx) = make();
    let start = Instant::now();
    let ps: Vec<_> = (0..producers)
        .map(|p| {
            let tx = tx.clone();
            rt.spawn(move || {
                for i in 0..per {
                    tx.send(p * per + i).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let cs: Vec<_> = (0..consumers)
        .map(|_| {
            let rx = rx.clone();
            rt.spawn(move || rx.iter().collect::<Vec<u32>>())
        })
        .collect();
    drop(rx);
    for p in ps {
        p.join().unwrap();
    }
    let total = (producers * per) as usize;
    let mut seen = vec![false; total];
    let (mut count, mut sum) = (0usize, 0u64);
    for c in cs {
        let got = c.join().unwrap();
        // Per consumer, each producer's messages arrive in send order.
        let mut last = vec![None::<u32>; producers as usize];
        for v in got {
            assert!(!seen[v as usize], "message {v} received twice");
            seen[v as usize] = true;
            count += 1;
            sum += v as u64;
            let p = (v / per) as usize;
            assert!(
                last[p].is_none_or(|l| l < v),
                "FIFO broken for producer {p}"
            );
            last[p] = Some(v);
        }
    }
    assert_eq!(count, total);
    assert_eq!(sum, (total as u64) * (total as u64 - 1) / 2);
    assert!(seen.iter().all(|&s| s));
    eprintln!("{producers}x{consumers}x{per}: {:?}", start.elapsed());
}

#[test]
fn mpmc_8x8_100k_unbounded() {
    let _serial = serial();
    within(Duration::from_secs(120), || mpmc(unbounded, 8, 8, 100_000));
}

#[test]
fn mpmc_8x8_100k_bounded() {
    let _serial = serial();
    within(Duration::from_secs(120), || {
        mpmc(|| bounded(64), 8, 8, 100_000)
    });
}

#[test]
fn mpmc_8x8_rendezvous() {
    let _serial = serial();
    within(Duration::from_secs(120), || {
        mpmc(|| bounded(0), 8, 8, 5_000)
    });
}

#[test]
fn mpmc_with_os_threads_too() {
    let _serial = serial();
    within(Duration::from_secs(60), || {
        let rt = rt();
        let (tx, rx) = bounded::<u64>(4);
        let n = 20_000u64;
        let g = {
            let tx = tx.clone();
            rt.spawn(move || (0..n).for_each(|i| tx.send(i).unwrap()))
        };
        let o = {
            let tx = tx.clone();
            std::thread::spawn(move || (0..n).for_each(|i| tx.send(i).unwrap()))
        };
        drop(tx);
        let rx2 = rx.clone();
        let gc = rt.spawn(move || rx2.iter().sum::<u64>());
        let oc = std::thread::spawn(move || rx.iter().sum::<u64>());
        g.join().unwrap();
        o.join().unwrap();
        assert_eq!(gc.join().unwrap() + oc.join().unwrap(), n * (n - 1));
    });
}

#[test]
fn ping_pong_green_and_os_thread_1000_round_trips() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (to_green, from_os) = bounded::<u32>(0);
        let (to_os, from_green) = unbounded::<u32>();
        let echo = rt.spawn(move || {
            for v in from_os.iter() {
                to_os.send(v + 1).unwrap();
            }
        });
        let start = Instant::now();
        for i in 0..1000 {
            to_green.send(i).unwrap();
            assert_eq!(from_green.recv(), Ok(i + 1));
        }
        let rtt = start.elapsed() / 1000;
        drop(to_green);
        echo.join().unwrap();
        assert_eq!(from_green.recv(), Err(RecvError));
        eprintln!("green <-> OS round trip: {rtt:?}");
    });
}

#[test]
fn ping_pong_between_green_threads() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        for pin in [false, true] {
            let (a_tx, a_rx) = bounded::<u32>(1);
            let (b_tx, b_rx) = bounded::<u32>(1);
            let mut b = eevdf_rt::task::Builder::new();
            if pin {
                b = b.pin(0);
            }
            let echo = b
                .spawn_on(&rt, move || {
                    while let Ok(v) = a_rx.recv() {
                        b_tx.send(v).unwrap();
                    }
                })
                .unwrap();
            let mut b = eevdf_rt::task::Builder::new();
            if pin {
                b = b.pin(0);
            }
            let driver = b
                .spawn_on(&rt, move || {
                    for i in 0..10_000 {
                        a_tx.send(i).unwrap();
                        assert_eq!(b_rx.recv(), Ok(i));
                    }
                })
                .unwrap();
            driver.join().unwrap();
            echo.join().unwrap();
        }
    });
}

#[test]
fn send_without_receivers_returns_the_message() {
    let (tx, rx) = unbounded::<String>();
    let rx2 = rx.clone();
    drop(rx);
    tx.send("still one".into()).unwrap();
    drop(rx2);
    let e = tx.send("x".into()).unwrap_err();
    assert_eq!(e, SendError("x".to_string()));
    assert_eq!(e.into_inner(), "x");
    assert_eq!(
        tx.try_send("y".into()),
        Err(TrySendError::Disconnected("y".into()))
    );
    assert_eq!(
        tx.send_timeout("z".into(), Duration::from_millis(1)),
        Err(SendTimeoutError::Disconnected("z".into()))
    );
    // A full bounded channel with no receivers reports disconnection, not fullness.
    let (tx, rx) = bounded(1);
    tx.send(1).unwrap();
    drop(rx);
    assert_eq!(tx.try_send(2), Err(TrySendError::Disconnected(2)));
}

#[test]
fn receivers_drain_after_senders_are_gone() {
    let (tx, rx) = bounded(3);
    let tx2 = tx.clone();
    tx.send(1).unwrap();
    tx2.send(2).unwrap();
    drop(tx);
    assert_eq!(rx.try_recv(), Ok(1)); // a sender still lives
    tx2.send(3).unwrap();
    drop(tx2);
    assert_eq!(rx.recv(), Ok(2));
    assert_eq!(rx.recv_timeout(Duration::from_secs(1)), Ok(3));
    assert_eq!(rx.recv(), Err(RecvError));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(1)),
        Err(RecvTimeoutError::Disconnected)
    );
}

#[test]
fn blocked_receiver_is_woken_by_the_last_sender_leaving() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (tx, rx) = unbounded::<u8>();
        let tx2 = tx.clone();
        let h = rt.spawn(move || rx.recv());
        std::thread::sleep(Duration::from_millis(10));
        drop(tx);
        std::thread::sleep(Duration::from_millis(10));
        assert!(!h.is_finished(), "one sender is left");
        drop(tx2);
        assert_eq!(h.join().unwrap(), Err(RecvError));
    });
}

#[test]
fn blocked_sender_gets_its_message_back_when_receivers_leave() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        for cap in [0, 1] {
            let (tx, rx) = bounded::<u32>(cap);
            if cap == 1 {
                tx.send(0).unwrap();
            }
            let h = rt.spawn(move || tx.send(42));
            std::thread::sleep(Duration::from_millis(10));
            assert!(!h.is_finished());
            drop(rx);
            assert_eq!(h.join().unwrap(), Err(SendError(42)));
        }
    });
}

#[test]
fn dropping_the_last_receiver_drops_buffered_messages() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = unbounded();
    for _ in 0..3 {
        tx.send(Counted(drops.clone())).unwrap();
    }
    drop(rx);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    drop(tx);
}

#[test]
fn rendezvous_send_completes_only_with_a_receiver() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (tx, rx) = bounded::<u32>(0);
        assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
        assert_eq!(
            tx.send_timeout(2, Duration::from_millis(5)),
            Err(SendTimeoutError::Timeout(2))
        );
        assert!(tx.is_empty() && tx.is_full());
        assert_eq!(tx.capacity(), Some(0));
        let h = rt.spawn(move || {
            tx.send(3).unwrap();
            Instant::now()
        });
        std::thread::sleep(Duration::from_millis(20));
        assert!(!h.is_finished());
        let before = Instant::now();
        assert_eq!(rx.recv(), Ok(3));
        assert!(h.join().unwrap() >= before);
        // A receiver waiting makes try_send succeed.
        let (tx, rx) = bounded::<u32>(0);
        let h = rt.spawn(move || rx.recv());
        let t0 = Instant::now();
        loop {
            match tx.try_send(9) {
                Ok(()) => break,
                Err(TrySendError::Full(_)) => std::thread::sleep(Duration::from_millis(1)),
                Err(e) => panic!("{e}"),
            }
            assert!(t0.elapsed() < Duration::from_secs(10));
        }
        assert_eq!(h.join().unwrap(), Ok(9));
    });
}

#[test]
fn try_and_timeout_variants() {
    let (tx, rx) = bounded::<u32>(2);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    tx.try_send(1).unwrap();
    tx.try_send(2).unwrap();
    assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
    assert!(tx.is_full());
    assert_eq!(tx.len(), 2);
    assert_eq!(rx.len(), 2);
    let t = Instant::now();
    assert_eq!(
        tx.send_timeout(3, Duration::from_millis(20)),
        Err(SendTimeoutError::Timeout(3))
    );
    assert!(t.elapsed() >= Duration::from_millis(20));
    assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
    let t = Instant::now();
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(20)),
        Err(RecvTimeoutError::Timeout)
    );
    let e = t.elapsed();
    assert!(
        e >= Duration::from_millis(20) && e < Duration::from_secs(5),
        "{e:?}"
    );
    assert_eq!(
        rx.recv_deadline(Instant::now() + Duration::from_millis(1)),
        Err(RecvTimeoutError::Timeout)
    );
    assert_eq!(unbounded::<()>().0.capacity(), None);
    assert!(!unbounded::<()>().0.is_full());
}

#[test]
fn recv_timeout_in_a_green_thread_is_on_time() {
    within(Duration::from_secs(30), || {
        let rt = rt();
        let (tx, rx) = unbounded::<u8>();
        let e = rt.block_on(move || {
            let t = Instant::now();
            assert_eq!(
                rx.recv_timeout(Duration::from_millis(30)),
                Err(RecvTimeoutError::Timeout)
            );
            t.elapsed()
        });
        assert!(
            e >= Duration::from_millis(30) && e < Duration::from_secs(5),
            "{e:?}"
        );
        drop(tx);
    });
}

#[test]
fn iterators() {
    let (tx, rx) = unbounded();
    for i in 0..5 {
        tx.send(i).unwrap();
    }
    assert_eq!(rx.try_iter().take(2).collect::<Vec<_>>(), [0, 1]);
    let mut n = 0;
    for v in &rx {
        assert_eq!(v, 2 + n);
        n += 1;
        if n == 2 {
            break;
        }
    }
    drop(tx);
    assert_eq!(rx.into_iter().collect::<Vec<_>>(), [4]);
}

#[test]
fn clones_and_debug() {
    let (tx, rx) = unbounded::<u8>();
    let (tx2, rx2) = (tx.clone(), rx.clone());
    assert!(tx.same_channel(&tx2) && rx.same_channel(&rx2));
    assert!(!tx.same_channel(&unbounded().0));
    assert_eq!(format!("{tx:?} {rx:?}"), "Sender { .. } Receiver { .. }");
    assert_eq!(format!("{:?}", SendError(1)), "SendError { .. }");
    assert_eq!(format!("{:?}", TrySendError::Full(1)), "Full(..)");
    assert_eq!(
        RecvError.to_string(),
        "receiving on an empty and disconnected channel"
    );
}
