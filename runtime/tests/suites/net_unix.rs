// The net_unix suite, included once per I/O driver by `tests/net_unix.rs`
// (each inclusion defines `builder()`).

use eevdf_rt::net::{UnixListener, UnixStream};
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::future::Future;
use std::time::{Duration, Instant};

fn rt(workers: usize) -> eevdf_rt::Runtime {
    builder().workers(workers).build().unwrap()
}

fn tmp_path(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("eevdf-rt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

#[test]
fn green_to_green_ping_pong() {
    let rt = rt(2);
    let n = rt.block_on(|| {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let pong = eevdf_rt::spawn(move || {
            let mut x = [0u8; 8];
            let mut n = 0u64;
            loop {
                if b.read_exact(&mut x).is_err() {
                    return n;
                }
                let v = u64::from_le_bytes(x) + 1;
                b.write_all(&v.to_le_bytes()).unwrap();
                n += 1;
            }
        });
        let mut v = 0u64;
        for _ in 0..10_000 {
            a.write_all(&v.to_le_bytes()).unwrap();
            let mut x = [0u8; 8];
            a.read_exact(&mut x).unwrap();
            assert_eq!(u64::from_le_bytes(x), v + 1);
            v += 2;
        }
        drop(a);
        pong.join().unwrap()
    });
    assert_eq!(n, 10_000);
}

/// Bytes `0..len` of a deterministic pattern.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn green_and_os_thread_stream_both_ways() {
    // 4 MiB each way: both sides fill the socket buffers, so writers block
    // (green: parks; OS thread: ppoll) as well as readers.
    const LEN: usize = 4 << 20;
    let rt = rt(2);
    let (mut os_end, green_end) = UnixStream::pair().unwrap();
    let green = rt.spawn(move || {
        let w = green_end.try_clone().unwrap();
        let writer = eevdf_rt::spawn(move || {
            let mut w = w;
            w.write_all(&pattern(LEN)).unwrap();
            w.shutdown(Shutdown::Write).unwrap();
        });
        let mut got = Vec::new();
        (&green_end).read_to_end(&mut got).unwrap();
        writer.join().unwrap();
        got == pattern(LEN)
    });
    let mut w = os_end.try_clone().unwrap();
    let os_writer = std::thread::spawn(move || {
        w.write_all(&pattern(LEN)).unwrap();
        w.shutdown(Shutdown::Write).unwrap();
    });
    let mut got = Vec::new();
    os_end.read_to_end(&mut got).unwrap();
    os_writer.join().unwrap();
    assert!(got == pattern(LEN));
    assert!(green.join().unwrap());
}

#[test]
fn listener_with_many_green_clients() {
    let path = tmp_path("ul");
    let rt = rt(2);
    let p = path.clone();
    let sum = rt.block_on(move || {
        let l = UnixListener::bind(&p).unwrap();
        assert_eq!(l.local_addr().unwrap().as_pathname(), Some(p.as_path()));
        let server = eevdf_rt::spawn(move || {
            let mut hs = Vec::new();
            for s in l.incoming().take(50) {
                let mut s = s.unwrap();
                hs.push(eevdf_rt::spawn(move || {
                    let mut b = [0u8; 4];
                    s.read_exact(&mut b).unwrap();
                    let v = u32::from_le_bytes(b) * 2;
                    s.write_all(&v.to_le_bytes()).unwrap();
                }));
            }
            for h in hs {
                h.join().unwrap();
            }
        });
        let clients: Vec<_> = (0..50u32)
            .map(|i| {
                let p = p.clone();
                eevdf_rt::spawn(move || {
                    let mut c = UnixStream::connect(&p).unwrap();
                    c.write_all(&i.to_le_bytes()).unwrap();
                    let mut b = [0u8; 4];
                    c.read_exact(&mut b).unwrap();
                    u32::from_le_bytes(b)
                })
            })
            .collect();
        let sum: u32 = clients.into_iter().map(|h| h.join().unwrap()).sum();
        server.join().unwrap();
        sum
    });
    assert_eq!(sum, 2 * (0..50).sum::<u32>());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn timeouts_eof_and_errors() {
    let rt = rt(2);
    rt.block_on(|| {
        let (mut a, b) = UnixStream::pair().unwrap();
        // Read timeout, green.
        a.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
        let t = Instant::now();
        let e = a.read(&mut [0u8; 4]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WouldBlock);
        let el = t.elapsed();
        assert!(el >= Duration::from_millis(30) && el < Duration::from_millis(230));
        // Write timeout: fill the socket buffer.
        b.set_write_timeout(Some(Duration::from_millis(30)))
            .unwrap();
        let chunk = vec![0u8; 64 << 10];
        let e = loop {
            if let Err(e) = (&b).write(&chunk) {
                break e;
            }
        };
        assert_eq!(e.kind(), ErrorKind::WouldBlock);
        // EOF after the peer's shutdown(Write), then after close; write to a
        // closed peer fails.
        let (mut c, d) = UnixStream::pair().unwrap();
        d.shutdown(Shutdown::Write).unwrap();
        assert_eq!(c.read(&mut [0u8; 4]).unwrap(), 0);
        drop(d);
        assert_eq!(c.read(&mut [0u8; 4]).unwrap(), 0);
        let e = c.write_all(b"x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BrokenPipe);
        // Connecting to nothing.
        let e = UnixStream::connect(tmp_path("nothing-here")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    });
}

/// Workers that never spin park at once, so every wait goes through the
/// reactor's poller or the futex park: a lost wakeup shows as a hang, which
/// the watchdog turns into a failure.
#[test]
fn park_paths_do_not_lose_wakeups() {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for spin in [Duration::ZERO, Duration::from_micros(5)] {
            let rt = builder()
                .workers(2)
                .idle_spin(spin)
                .build()
                .unwrap();
            let rounds = rt.block_on(|| {
                let pairs: Vec<_> = (0..4u64)
                    .map(|p| {
                        let (mut a, mut b) = UnixStream::pair().unwrap();
                        let echo = eevdf_rt::spawn(move || {
                            let mut x = [0u8; 8];
                            while b.read_exact(&mut x).is_ok() {
                                b.write_all(&x).unwrap();
                            }
                        });
                        eevdf_rt::spawn(move || {
                            for i in 0..2000u64 {
                                if (i + p) % 7 == 0 {
                                    eevdf_rt::sleep(Duration::from_micros(50 * (i % 5)));
                                }
                                a.write_all(&i.to_le_bytes()).unwrap();
                                let mut x = [0u8; 8];
                                a.read_exact(&mut x).unwrap();
                                assert_eq!(u64::from_le_bytes(x), i);
                            }
                            drop(a);
                            echo.join().unwrap();
                            2000u64
                        })
                    })
                    .collect();
                pairs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
            });
            assert_eq!(rounds, 8000);
            println!("idle_spin {spin:?}:\n{}", rt.stats());
        }
        done_tx.send(()).unwrap();
    });
    done_rx
        .recv_timeout(Duration::from_secs(25))
        .expect("ping-pong failed, or stalled (a lost wakeup)");
}

/// A future whose waker, when called, records the moment before it wakes
/// the green thread (which may not run yet: its worker may be busy).
struct StampWake {
    inner: std::task::Waker,
    at: std::sync::Arc<std::sync::Mutex<Option<Instant>>>,
}

impl std::task::Wake for StampWake {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.at.lock().unwrap().get_or_insert_with(Instant::now);
        self.inner.wake_by_ref();
    }
}

/// The worker that holds the reactor's poller role (it parked last, after
/// a readiness waiter registered there) is woken to run a green thread
/// that loops without preemption points. It must hand the role to the
/// other, parked worker, so that readiness still reaches its waiter at
/// once: the waker must be called long before the loop ends. Under
/// io_uring the ring's park once gave the role up without kicking
/// anybody, and the waker was called only when the loop ended.
#[test]
fn readiness_is_noticed_while_the_poller_runs_a_loop_without_preemption_points() {
    const SPIN: Duration = Duration::from_millis(1500);
    let rt = rt(2);
    // Under io_uring, give each worker its ring (made at the first
    // operation that waits there): a worker with a ring parks in it.
    for worker in 0..2 {
        let (mut r, mut w) = eevdf_rt::io::pipe().unwrap();
        let reader = eevdf_rt::task::Builder::new()
            .pin(worker)
            .spawn_on(&rt, move || r.read_exact(&mut [0u8; 1]).unwrap())
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        w.write_all(b"x").unwrap();
        reader.join().unwrap();
    }
    for worker in 0..2 {
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let at = std::sync::Arc::new(std::sync::Mutex::new(None));
        let at2 = at.clone();
        // The waiter registers with the reactor on `worker`, then blocks
        // there; `worker` parks after it and so takes the poller role.
        let waiter = eevdf_rt::task::Builder::new()
            .pin(worker)
            .spawn_on(&rt, move || {
                let a = eevdf_rt::io::AsyncFd::new(a).unwrap();
                let mut buf = [0u8; 1];
                let mut read = Box::pin(a.read_with(|s| (&*s).read(&mut buf)));
                let n = eevdf_rt::block_on_future(std::future::poll_fn(|cx| {
                    let w = std::task::Waker::from(std::sync::Arc::new(StampWake {
                        inner: cx.waker().clone(),
                        at: at2.clone(),
                    }));
                    read.as_mut().poll(&mut std::task::Context::from_waker(&w))
                }))
                .unwrap();
                assert_eq!(n, 1);
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let spinner = eevdf_rt::task::Builder::new()
            .pin(worker)
            .spawn_on(&rt, move || {
                let t = Instant::now();
                while t.elapsed() < SPIN {
                    std::hint::spin_loop();
                }
            })
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let written = Instant::now();
        b.write_all(b"x").unwrap();
        let deadline = written + SPIN;
        while at.lock().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let woke = at.lock().unwrap().map(|t| t.saturating_duration_since(written));
        spinner.join().unwrap();
        waiter.join().unwrap();
        let woke = woke.expect("the waker was not called while the worker spun");
        assert!(
            woke < Duration::from_millis(500),
            "worker {worker}: the waker was called {woke:?} after the write, \
             while a loop without preemption points ran for {SPIN:?}"
        );
    }
}

/// A read that completes while shutdown is under way returns its bytes or
/// leaves them in the socket: it never consumes them and then unwinds. (Its
/// preemption point used to come after the call: the byte was read, then
/// the green thread was unwound there and the byte lost.)
#[test]
fn a_read_completed_as_the_runtime_shuts_down_loses_no_bytes() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    let rt = rt(1);
    let (a, b) = UnixStream::pair().unwrap();
    let a = Arc::new(a);
    let got = Arc::new(AtomicUsize::new(0));
    let (a2, g2) = (a.clone(), got.clone());
    drop(rt.spawn(move || {
        // Busy without preemption points while shutdown asks to stop.
        crate::common::burn(Duration::from_millis(100));
        let mut buf = [0u8; 16];
        if let Ok(n) = (&*a2).read(&mut buf) {
            g2.fetch_add(n, SeqCst);
        }
    }));
    std::thread::sleep(Duration::from_millis(20));
    (&b).write_all(b"x").unwrap();
    rt.shutdown();
    drop(rt);
    a.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
    let left = (&*a).read(&mut [0u8; 16]).unwrap_or(0);
    assert_eq!(
        got.load(SeqCst) + left,
        1,
        "the byte was consumed by a read whose result was dropped"
    );
}

/// A write or vectored write to a closed peer is an `EPIPE` error, not a
/// `SIGPIPE` that kills the process (child process with the signal at its
/// default action).
#[test]
fn a_write_to_a_closed_peer_is_epipe_not_sigpipe() {
    let path = module_path!().split_once("::").unwrap().1;
    let test = format!("{path}::a_write_to_a_closed_peer_is_epipe_not_sigpipe");
    crate::common::in_child_with_sigpipe_default(&test, || {
        let rt = rt(1);
        rt.block_on(|| {
            for vectored in [false, true] {
                let (a, b) = UnixStream::pair().unwrap();
                drop(b);
                let e = crate::common::write_until_error(&a, vectored);
                assert_eq!(e.kind(), ErrorKind::BrokenPipe, "vectored {vectored}: {e}");
            }
        });
    });
}

/// `from_std` keeps the std socket's timeouts, and enforces the read one
/// (the kernel ignores it once the socket is nonblocking).
#[test]
fn from_std_keeps_the_timeouts() {
    let rt = rt(1);
    let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    let (r, w) = (Duration::from_millis(50), Duration::from_millis(70));
    a.set_read_timeout(Some(r)).unwrap();
    a.set_write_timeout(Some(w)).unwrap();
    // What the kernel keeps (rounded up to its clock ticks).
    let (r, w) = (a.read_timeout().unwrap().unwrap(), a.write_timeout().unwrap().unwrap());
    rt.block_on(move || {
        let a = UnixStream::from_std(a).unwrap();
        assert_eq!(a.read_timeout().unwrap(), Some(r));
        assert_eq!(a.write_timeout().unwrap(), Some(w));
        let t = Instant::now();
        let e = (&a).read(&mut [0u8; 8]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WouldBlock, "{e}");
        assert!(t.elapsed() >= r, "{:?}", t.elapsed());
    });
}
