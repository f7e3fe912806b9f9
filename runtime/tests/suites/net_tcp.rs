// The net_tcp suite, included once per I/O driver by `tests/net_tcp.rs`
// (each inclusion defines `builder()`).

use eevdf_rt::net::{TcpListener, TcpStream};
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn rt(workers: usize) -> eevdf_rt::Runtime {
    builder().workers(workers).build().unwrap()
}

/// One green thread per connection; echoes until the peer closes.
fn echo_server(l: TcpListener) {
    for s in l.incoming() {
        let mut s = s.unwrap();
        eevdf_rt::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if s.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }
}

fn echo(clients: usize, rounds: usize, workers: usize) -> Duration {
    let rt = rt(workers);
    let t0 = Instant::now();
    let total = rt.block_on(move || {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        eevdf_rt::spawn(move || echo_server(l));
        let hs: Vec<_> = (0..clients)
            .map(|c| {
                eevdf_rt::spawn(move || {
                    let mut s = TcpStream::connect(addr).unwrap();
                    s.set_nodelay(true).unwrap();
                    let mut msg = [0u8; 64];
                    let mut back = [0u8; 64];
                    let mut bytes = 0u64;
                    for r in 0..rounds {
                        for (i, b) in msg.iter_mut().enumerate() {
                            *b = (c * 31 + r * 7 + i) as u8;
                        }
                        let len = 1 + (c + r) % 64;
                        s.write_all(&msg[..len]).unwrap();
                        s.read_exact(&mut back[..len]).unwrap();
                        assert_eq!(msg[..len], back[..len], "client {c} round {r}");
                        bytes += len as u64;
                    }
                    bytes
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    let expect: u64 = (0..clients)
        .flat_map(|c| (0..rounds).map(move |r| 1 + ((c + r) % 64) as u64))
        .sum();
    assert_eq!(total, expect);
    let el = t0.elapsed();
    println!(
        "{clients} clients x {rounds} round trips on {workers} workers: {el:?}\n{}",
        rt.stats()
    );
    el
}

#[test]
fn echo_100_clients_1000_round_trips() {
    echo(100, 1000, 2);
}

#[test]
fn echo_on_one_worker() {
    echo(10, 200, 1);
}

#[test]
fn refused_connection_is_prompt() {
    let rt = rt(2);
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (err, el) = rt.block_on(move || {
        let t = Instant::now();
        let e = TcpStream::connect(addr).unwrap_err();
        (e, t.elapsed())
    });
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    assert!(el < Duration::from_secs(1), "{el:?}");
    // And from an OS thread.
    let t = Instant::now();
    let e = TcpStream::connect(addr).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
    assert!(t.elapsed() < Duration::from_secs(1));
}

#[test]
fn read_timeout_fires_on_time() {
    let rt = rt(2);
    rt.block_on(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_s, _) = l.accept().unwrap();
        assert!(c.set_read_timeout(Some(Duration::ZERO)).is_err());
        let d = Duration::from_millis(50);
        c.set_read_timeout(Some(d)).unwrap();
        assert_eq!(c.read_timeout().unwrap(), Some(d));
        for _ in 0..3 {
            let t = Instant::now();
            let e = c.read(&mut [0u8; 16]).unwrap_err();
            let el = t.elapsed();
            assert!(
                matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
                "{e}"
            );
            assert!(el >= d, "{el:?}");
            assert!(el < d + Duration::from_millis(200), "{el:?}");
        }
    });
}

#[test]
fn closed_peer_reads_zero_and_shutdown_write_is_eof() {
    let rt = rt(2);
    rt.block_on(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        // Closed peer.
        let h = eevdf_rt::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            let mut buf = [0u8; 8];
            c.read(&mut buf).unwrap()
        });
        let (s, _) = l.accept().unwrap();
        eevdf_rt::sleep(Duration::from_millis(10)); // let the reader park first
        drop(s);
        assert_eq!(h.join().unwrap(), 0);
        // shutdown(Write): the peer reads EOF, and can still answer.
        let h = eevdf_rt::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(b"request").unwrap();
            c.shutdown(Shutdown::Write).unwrap();
            let mut v = Vec::new();
            c.read_to_end(&mut v).unwrap();
            v
        });
        let (mut s, _) = l.accept().unwrap();
        let mut req = Vec::new();
        s.read_to_end(&mut req).unwrap(); // ends at the client's shutdown
        assert_eq!(req, b"request");
        s.write_all(b"reply").unwrap();
        drop(s);
        assert_eq!(h.join().unwrap(), b"reply");
    });
}

#[test]
fn os_thread_blocks_and_talks_to_green_threads() {
    let rt = rt(2);
    // OS thread accepts and reads; a green thread connects and writes late.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let g = rt.spawn(move || {
        eevdf_rt::sleep(Duration::from_millis(30));
        let mut c = TcpStream::connect(addr).unwrap();
        eevdf_rt::sleep(Duration::from_millis(30));
        c.write_all(b"late").unwrap();
        let mut b = [0u8; 3];
        c.read_exact(&mut b).unwrap(); // parks until the OS thread answers
        b
    });
    let t = Instant::now();
    let (mut s, _) = l.accept().unwrap(); // blocks this OS thread
    let mut b = [0u8; 4];
    s.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"late");
    assert!(t.elapsed() >= Duration::from_millis(50));
    std::thread::sleep(Duration::from_millis(20));
    s.write_all(b"ack").unwrap();
    assert_eq!(&g.join().unwrap(), b"ack");
    // Without any runtime: a plain OS-thread pair.
    drop(rt);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let t = std::thread::spawn(move || {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"plain").unwrap();
    });
    let (mut s, _) = l.accept().unwrap();
    let mut v = Vec::new();
    s.read_to_end(&mut v).unwrap();
    assert_eq!(v, b"plain");
    t.join().unwrap();
}

#[test]
fn readiness_reaches_busy_workers() {
    // Both workers run CPU hogs (cooperative: preempt_point only); a green
    // thread blocked in `read` must still be woken (by the busy workers'
    // paced polls) promptly when an OS thread writes.
    let rt = rt(2);
    let stop = Arc::new(AtomicBool::new(false));
    let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
    let a = eevdf_rt::net::UnixStream::from_std(a).unwrap();
    let reader = rt.spawn(move || {
        let mut a = a;
        let mut buf = [0u8; 1];
        a.read_exact(&mut buf).unwrap();
        Instant::now()
    });
    std::thread::sleep(Duration::from_millis(20));
    let hogs: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            rt.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    eevdf_rt::preempt_point();
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    let sent = Instant::now();
    b.write_all(b"x").unwrap();
    let got = reader.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    for h in hogs {
        h.join().unwrap();
    }
    let lat = got.duration_since(sent);
    println!("wake latency under full load: {lat:?}");
    assert!(lat < Duration::from_millis(100), "{lat:?}");
}

#[test]
fn shared_stream_and_listener_have_many_waiters() {
    let rt = rt(2);
    rt.block_on(|| {
        let l = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
        let addr = l.local_addr().unwrap();
        // Four green threads block in accept on one listener.
        let acceptors: Vec<_> = (0..4)
            .map(|_| {
                let l = l.clone();
                eevdf_rt::spawn(move || {
                    let (s, _) = l.accept().unwrap();
                    let s = Arc::new(s);
                    // Two green threads read the same stream concurrently.
                    let readers: Vec<_> = (0..2)
                        .map(|_| {
                            let s = s.clone();
                            eevdf_rt::spawn(move || {
                                let mut b = [0u8; 1];
                                (&*s).read_exact(&mut b).unwrap();
                                b[0]
                            })
                        })
                        .collect();
                    readers
                        .into_iter()
                        .map(|h| h.join().unwrap() as u32)
                        .sum::<u32>()
                })
            })
            .collect();
        eevdf_rt::sleep(Duration::from_millis(20));
        let cs: Vec<_> = (0..4)
            .map(|_| {
                let mut c = TcpStream::connect(addr).unwrap();
                eevdf_rt::sleep(Duration::from_millis(5));
                c.write_all(&[1]).unwrap();
                eevdf_rt::sleep(Duration::from_millis(5));
                c.write_all(&[2]).unwrap();
                c
            })
            .collect();
        let sum: u32 = acceptors.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(sum, 12);
        drop(cs);
    });
}

#[test]
fn connect_timeout_and_try_clone() {
    let rt = rt(2);
    rt.block_on(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        assert_eq!(
            TcpStream::connect_timeout(&addr, Duration::ZERO)
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidInput
        );
        let c = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
        let (s, peer) = l.accept().unwrap();
        assert_eq!(peer, c.local_addr().unwrap());
        assert_eq!(s.peer_addr().unwrap(), c.local_addr().unwrap());
        // A clone writes while the original reads, from two green threads.
        let w = c.try_clone().unwrap();
        let h = eevdf_rt::spawn(move || {
            let mut w = w;
            for i in 0..100u8 {
                w.write_all(&[i]).unwrap();
            }
        });
        let mut got = [0u8; 100];
        (&s).read_exact(&mut got).unwrap();
        h.join().unwrap();
        assert!(got.iter().enumerate().all(|(i, b)| *b == i as u8));
    });
}

#[test]
fn runtime_shutdown_frees_green_threads_blocked_in_io() {
    let rt = rt(2);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (a, _b) = eevdf_rt::net::UnixStream::pair().unwrap();
    let (pr, _pw) = eevdf_rt::io::pipe().unwrap();
    let accept = rt.spawn(move || l.accept().map(|_| ()));
    let read = rt.spawn(move || {
        let mut a = a;
        a.read(&mut [0u8; 8]).map(|_| ())
    });
    let pipe_read = rt.spawn(move || {
        let mut pr = pr;
        pr.read(&mut [0u8; 8]).map(|_| ())
    });
    std::thread::sleep(Duration::from_millis(50));
    // Block a connection read, too.
    let conn = rt.spawn(move || {
        let l2 = TcpListener::bind("127.0.0.1:0").unwrap();
        let c2 = std::net::TcpStream::connect(l2.local_addr().unwrap()).unwrap();
        let (mut s, _) = l2.accept().unwrap();
        let r = s.read(&mut [0u8; 8]);
        drop(c2);
        r.map(|_| ())
    });
    std::thread::sleep(Duration::from_millis(50));
    assert!(!accept.is_finished() && !read.is_finished() && !pipe_read.is_finished());
    let t = Instant::now();
    rt.shutdown();
    assert!(t.elapsed() < Duration::from_secs(5));
    for h in [accept, read, pipe_read] {
        let e = h.join().unwrap_err();
        assert!(e.downcast_ref::<eevdf_rt::Cancelled>().is_some());
    }
    assert!(conn.join().is_err());
    assert_eq!(rt.live_tasks(), 0);
    // The listener was dropped by the unwind: its port refuses now.
    let e = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
}

/// An accept that completes while shutdown is under way hands its
/// connection over or leaves it queued: it never accepts it and then
/// unwinds, closing it unseen.
#[test]
fn an_accept_completed_as_the_runtime_shuts_down_loses_no_connection() {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let rt = rt(1);
    let l = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
    let addr = l.local_addr().unwrap();
    let got = Arc::new(AtomicUsize::new(0));
    let (l2, g2) = (l.clone(), got.clone());
    drop(rt.spawn(move || {
        // Busy without preemption points while shutdown asks to stop.
        crate::common::burn(Duration::from_millis(100));
        if let Ok((s, _)) = l2.accept() {
            g2.fetch_add(1, SeqCst);
            std::mem::forget(s);
        }
    }));
    std::thread::sleep(Duration::from_millis(20));
    let _c = std::net::TcpStream::connect(addr).unwrap();
    rt.shutdown();
    drop(rt);
    // Still queued? (The listener is nonblocking.)
    // SAFETY: a plain accept4 on a listening socket we own; the returned
    // descriptor, if any, is closed at once.
    let fd = unsafe {
        libc::accept4(
            l.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC,
        )
    };
    let left = if fd >= 0 {
        // SAFETY: `fd` was just returned by accept4 and is ours.
        unsafe { libc::close(fd) };
        1
    } else {
        0
    };
    assert_eq!(
        got.load(SeqCst) + left,
        1,
        "the connection was accepted and dropped unseen"
    );
}

/// A read into an empty buffer returns `Ok(0)` at once on an idle
/// connection, as std's does, on both drivers: also once earlier reads that
/// found nothing made the io_uring driver skip its nonblocking try.
#[test]
fn an_empty_read_returns_at_once_on_an_idle_connection() {
    let rt = rt(1);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        for _ in 0..4 {
            let mut b = [0u8; 1];
            if s.read_exact(&mut b).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
            s.write_all(&b).unwrap();
        }
    });
    rt.block_on(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        for i in 0..4u8 {
            // Each reply comes 5 ms late: these reads wait.
            s.write_all(&[i]).unwrap();
            let mut b = [0u8; 1];
            s.read_exact(&mut b).unwrap();
            assert_eq!(b, [i]);
            let t = Instant::now();
            assert_eq!(s.read(&mut []).unwrap(), 0, "round {i}");
            assert!(t.elapsed() < Duration::from_secs(10), "round {i}: waited");
        }
    });
    peer.join().unwrap();
}

/// A write or vectored write to a closed peer is an error (`EPIPE` or
/// `ECONNRESET`), not a `SIGPIPE` that kills the process (child process
/// with the signal at its default action).
#[test]
fn a_write_to_a_closed_peer_is_an_error_not_sigpipe() {
    let path = module_path!().split_once("::").unwrap().1;
    let test = format!("{path}::a_write_to_a_closed_peer_is_an_error_not_sigpipe");
    crate::common::in_child_with_sigpipe_default(&test, || {
        let rt = rt(1);
        rt.block_on(|| {
            for vectored in [false, true] {
                let l = TcpListener::bind("127.0.0.1:0").unwrap();
                let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
                drop(l.accept().unwrap());
                let e = crate::common::write_until_error(&c, vectored);
                assert!(
                    matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
                    "vectored {vectored}: {e}"
                );
            }
        });
    });
}

/// `from_std` keeps the std socket's timeouts, and enforces the read one
/// (the kernel ignores it once the socket is nonblocking).
#[test]
fn from_std_keeps_the_timeouts() {
    let rt = rt(1);
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let _peer = l.accept().unwrap();
    let (r, w) = (Duration::from_millis(50), Duration::from_millis(70));
    c.set_read_timeout(Some(r)).unwrap();
    c.set_write_timeout(Some(w)).unwrap();
    // What the kernel keeps (rounded up to its clock ticks).
    let (r, w) = (c.read_timeout().unwrap().unwrap(), c.write_timeout().unwrap().unwrap());
    rt.block_on(move || {
        let c = TcpStream::from_std(c).unwrap();
        assert_eq!(c.read_timeout().unwrap(), Some(r));
        assert_eq!(c.write_timeout().unwrap(), Some(w));
        let t = Instant::now();
        let e = (&c).read(&mut [0u8; 8]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::WouldBlock, "{e}");
        assert!(t.elapsed() >= r, "{:?}", t.elapsed());
    });
}

/// A peek into an empty buffer returns at once on an idle connection, as
/// an empty read does.
#[test]
fn an_empty_peek_returns_at_once() {
    let rt = rt(1);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    rt.block_on(move || {
        let c = TcpStream::connect(addr).unwrap();
        let _peer = l.accept().unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let t = Instant::now();
        assert_eq!(c.peek(&mut []).unwrap(), 0);
        assert!(t.elapsed() < Duration::from_secs(10), "waited");
    });
}
