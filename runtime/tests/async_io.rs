//! Async I/O on the runtime's reactor (features `tokio-io`, `futures-io`):
//! readiness wakes futures with no lost wakeup and no busy polling,
//! cancellation mid-read loses nothing, and `AsyncFd` works for any fd.
#![cfg(feature = "tokio-io")]

use eevdf_rt::io::{pipe, AsyncFd};
use eevdf_rt::net::{TcpListener, TcpStream, UnixStream};
use eevdf_rt::time::timeout;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

mod common;
use common::within;

const LIMIT: Duration = Duration::from_secs(90);

fn rt() -> eevdf_rt::Runtime {
    eevdf_rt::Builder::new().workers(2).build().unwrap()
}

fn tcp_pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    c.set_nodelay(true).unwrap();
    s.set_nodelay(true).unwrap();
    (c, s)
}

/// Round trips between two future tasks: every message must come back, in
/// order; a lost wakeup hangs (caught by `within`).
fn ping_pong<S>(a: S, b: S, rounds: u32)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut a, mut b) = (a, b);
    let echo = eevdf_rt::spawn_future(async move {
        let mut buf = [0u8; 4];
        for _ in 0..rounds {
            b.read_exact(&mut buf).await.unwrap();
            b.write_all(&buf).await.unwrap();
        }
    });
    let pinger = eevdf_rt::spawn_future(async move {
        let mut buf = [0u8; 4];
        for i in 0..rounds {
            a.write_all(&i.to_le_bytes()).await.unwrap();
            a.read_exact(&mut buf).await.unwrap();
            assert_eq!(u32::from_le_bytes(buf), i);
        }
    });
    pinger.join().unwrap();
    echo.join().unwrap();
}

#[test]
fn tcp_ping_pong_stress() {
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let (a, b) = tcp_pair();
                    eevdf_rt::spawn(move || ping_pong(a, b, 3000))
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
        });
    });
}

#[test]
fn unix_ping_pong_stress() {
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let (a, b) = UnixStream::pair().unwrap();
                    eevdf_rt::spawn(move || ping_pong(a, b, 3000))
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
        });
    });
}

#[test]
fn pipe_bulk_transfer_waits_on_both_ends() {
    // 8 MiB through a 64 KiB pipe in odd-sized chunks: the writer waits for
    // writability and the reader for readability, thousands of times.
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            let (mut r, mut w) = pipe().unwrap();
            const N: usize = 8 << 20;
            let writer = eevdf_rt::spawn_future(async move {
                let data: Vec<u8> = (0..N).map(|i| (i % 251) as u8).collect();
                for chunk in data.chunks(7919) {
                    w.write_all(chunk).await.unwrap();
                }
                // dropping `w` closes the pipe: the reader sees EOF
            });
            let reader = eevdf_rt::spawn_future(async move {
                let mut got = 0usize;
                let mut buf = vec![0u8; 5003];
                loop {
                    let n = r.read(&mut buf).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    for (k, &b) in buf[..n].iter().enumerate() {
                        assert_eq!(b, ((got + k) % 251) as u8, "byte {}", got + k);
                    }
                    got += n;
                }
                got
            });
            writer.join().unwrap();
            assert_eq!(reader.join().unwrap(), N);
        });
    });
}

/// Counts how often the wrapped future is polled.
struct Counted<F> {
    polls: Arc<AtomicUsize>,
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, Ordering::Relaxed);
        self.inner.as_mut().poll(cx)
    }
}

#[test]
fn a_read_waits_without_busy_polling() {
    within(LIMIT, || {
        let rt = rt();
        let polls = rt.block_on(|| {
            let (mut a, b) = UnixStream::pair().unwrap();
            let writer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                std::io::Write::write_all(&mut &b, b"x").unwrap();
                b
            });
            let polls = Arc::new(AtomicUsize::new(0));
            let fut = Counted {
                polls: polls.clone(),
                inner: Box::pin(async move {
                    let mut buf = [0u8; 1];
                    a.read_exact(&mut buf).await.unwrap();
                    buf[0]
                }),
            };
            assert_eq!(eevdf_rt::block_on_future(fut), b'x');
            // Not joined from the green thread: it is done by now anyway.
            drop(writer);
            polls.load(Ordering::Relaxed)
        });
        // First poll (Pending), the readiness wake, maybe one spurious;
        // on a loaded host a few more, where a stalled worker thread finds
        // its slice over and a poll yields (Pending, self-woken) instead of
        // switching. Polling at every tick would be 50 or more.
        assert!(polls <= 16, "the read was polled {polls} times in 200 ms");
    });
}

#[test]
fn a_read_cancelled_midway_loses_nothing() {
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            let (mut a, mut b) = tcp_pair();
            eevdf_rt::block_on_future(async {
                let mut buf = [0u8; 16];
                // Registered for readiness, then dropped by the timeout.
                let r = timeout(Duration::from_millis(20), a.read(&mut buf)).await;
                assert!(r.is_err(), "nothing was sent: the read must time out");
                // Dropped by hand after one Pending poll, too.
                {
                    let mut fut = Box::pin(a.read(&mut buf));
                    let w = std::task::Waker::noop();
                    assert!(fut.as_mut().poll(&mut Context::from_waker(w)).is_pending());
                }
                // The data sent after the cancellations all arrives, and a
                // new reader (a new waker) is woken for it.
                let sender = eevdf_rt::spawn_future(async move {
                    eevdf_rt::time::sleep(Duration::from_millis(10)).await;
                    b.write_all(b"hello world").await.unwrap();
                    AsyncWriteExt::shutdown(&mut b).await.unwrap();
                    b
                });
                let mut got = Vec::new();
                a.read_to_end(&mut got).await.unwrap();
                assert_eq!(got, b"hello world");
                drop(sender.join().unwrap());
            });
        });
    });
}

#[test]
fn a_write_cancelled_midway_keeps_the_stream_usable() {
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            let (mut a, mut b) = UnixStream::pair().unwrap();
            eevdf_rt::block_on_future(async move {
                // Fill the socket buffer until a write has to wait, then
                // give up on it.
                let chunk = vec![7u8; 64 * 1024];
                let mut sent = 0usize;
                while let Ok(n) = timeout(Duration::from_millis(20), a.write(&chunk)).await {
                    sent += n.unwrap();
                }
                assert!(sent > 0);
                AsyncWriteExt::shutdown(&mut a).await.unwrap();
                let mut got = 0usize;
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = b.read(&mut buf).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    assert!(buf[..n].iter().all(|&x| x == 7));
                    got += n;
                }
                assert_eq!(got, sent, "every byte a write reported arrived");
            });
        });
    });
}

#[test]
fn an_unregistered_object_polled_outside_a_runtime_is_an_error_not_a_hang() {
    within(LIMIT, || {
        let (mut a, _b) = UnixStream::pair().unwrap();
        let mut buf = [0u8; 1];
        let e = eevdf_rt::block_on_future(a.read(&mut buf)).unwrap_err();
        assert!(e.to_string().contains("green thread"), "{e}");
    });
}

#[test]
fn a_registered_object_can_be_awaited_on_an_os_thread() {
    within(LIMIT, || {
        let rt = rt();
        let (mut a, b) = UnixStream::pair().unwrap();
        // Registered by a wait inside the runtime.
        let a = rt.block_on(move || {
            let mut buf = [0u8; 1];
            let r = eevdf_rt::block_on_future(timeout(Duration::from_millis(5), a.read(&mut buf)));
            assert!(r.is_err());
            a
        });
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            std::io::Write::write_all(&mut &b, b"z").unwrap();
            b
        });
        let mut a = a;
        let mut buf = [0u8; 1];
        eevdf_rt::block_on_future(a.read_exact(&mut buf)).unwrap();
        assert_eq!(&buf, b"z");
        drop(t.join().unwrap());
        drop(rt);
    });
}

#[test]
fn async_fd_reads_a_foreign_descriptor() {
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            let (x, y) = std::os::unix::net::UnixStream::pair().unwrap();
            x.set_nonblocking(true).unwrap();
            let x = AsyncFd::new(x).unwrap();
            let writer = eevdf_rt::spawn(move || {
                for i in 0..200u8 {
                    std::io::Write::write_all(&mut &y, &[i]).unwrap();
                    if i % 16 == 0 {
                        eevdf_rt::sleep(Duration::from_micros(300));
                    }
                }
                y
            });
            eevdf_rt::block_on_future(async {
                let mut next = 0u8;
                while next < 200 {
                    let mut guard = x.readable().await.unwrap();
                    let mut buf = [0u8; 64];
                    match guard.try_io(|s| std::io::Read::read(&mut &*s, &mut buf)) {
                        Ok(r) => {
                            for &b in &buf[..r.unwrap()] {
                                assert_eq!(b, next);
                                next += 1;
                            }
                        }
                        Err(_would_block) => continue,
                    }
                }
                let w = x.writable().await.unwrap();
                assert!(w.get_inner().peer_addr().is_ok());
            });
            drop(writer.join().unwrap());
        });
    });
}

#[cfg(feature = "futures-io")]
#[test]
fn futures_io_traits_work_on_a_pipe() {
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            let (mut r, mut w) = pipe().unwrap();
            let writer = eevdf_rt::spawn_future(async move {
                for i in 0..1000u32 {
                    futures::io::AsyncWriteExt::write_all(&mut w, &i.to_le_bytes())
                        .await
                        .unwrap();
                }
                futures::io::AsyncWriteExt::close(&mut w).await.unwrap();
            });
            let mut all = Vec::new();
            eevdf_rt::block_on_future(futures::io::AsyncReadExt::read_to_end(&mut r, &mut all))
                .unwrap();
            assert_eq!(all.len(), 4000);
            for (i, c) in all.chunks(4).enumerate() {
                assert_eq!(u32::from_le_bytes(c.try_into().unwrap()), i as u32);
            }
            writer.join().unwrap();
        });
    });
}

/// A `poll_read` that completes while shutdown is under way returns its
/// bytes or leaves them in the socket, never consumes them and unwinds.
#[test]
fn a_poll_read_completed_as_the_runtime_shuts_down_loses_no_bytes() {
    use std::io::{Read, Write};
    within(LIMIT, || {
        let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        let (a, b) = UnixStream::pair().unwrap();
        let mut a2 = a.try_clone().unwrap();
        let got = Arc::new(AtomicUsize::new(0));
        let g2 = got.clone();
        drop(rt.spawn(move || {
            // Busy without preemption points while shutdown asks to stop.
            common::burn(Duration::from_millis(100));
            let mut buf = [0u8; 16];
            let r = eevdf_rt::block_on_future(std::future::poll_fn(|cx| {
                let mut rb = tokio::io::ReadBuf::new(&mut buf);
                Pin::new(&mut a2)
                    .poll_read(cx, &mut rb)
                    .map_ok(|()| rb.filled().len())
            }));
            if let Ok(n) = r {
                g2.fetch_add(n, Ordering::SeqCst);
            }
        }));
        std::thread::sleep(Duration::from_millis(20));
        (&b).write_all(b"x").unwrap();
        rt.shutdown();
        drop(rt);
        a.set_read_timeout(Some(Duration::from_millis(10))).unwrap();
        let left = (&a).read(&mut [0u8; 16]).unwrap_or(0);
        assert_eq!(
            got.load(Ordering::SeqCst) + left,
            1,
            "the byte was consumed by a poll_read whose result was dropped"
        );
    });
}

/// An async read into an empty buffer is ready at once with 0 on an idle
/// connection, as the blocking read is (no wait for data that it could
/// not hold anyway).
#[test]
fn an_async_read_into_an_empty_buffer_is_ready_at_once() {
    within(LIMIT, || {
        let rt = rt();
        rt.block_on(|| {
            let (mut c, _s) = tcp_pair();
            let n = eevdf_rt::block_on_future(timeout(Duration::from_secs(10), async {
                c.read(&mut []).await
            }))
            .expect("an empty read waited for data")
            .unwrap();
            assert_eq!(n, 0);
        });
    });
}

/// An async write or vectored write to a closed peer is an `EPIPE` error,
/// not a `SIGPIPE` that kills the process, as for the blocking writes
/// (child process with the signal at its default action).
#[test]
fn an_async_write_to_a_closed_peer_is_epipe_not_sigpipe() {
    common::in_child_with_sigpipe_default(
        "an_async_write_to_a_closed_peer_is_epipe_not_sigpipe",
        || {
            within(LIMIT, || {
                let rt = rt();
                rt.block_on(|| {
                    for vectored in [false, true] {
                        let (mut a, b) = UnixStream::pair().unwrap();
                        drop(b);
                        let e = eevdf_rt::block_on_future(async {
                            let buf = [7u8; 4096];
                            for _ in 0..1000 {
                                let r = if vectored {
                                    let bufs = [std::io::IoSlice::new(&buf)];
                                    a.write_vectored(&bufs).await
                                } else {
                                    a.write(&buf).await
                                };
                                if let Err(e) = r {
                                    return e;
                                }
                            }
                            panic!("1,000 writes to a closed peer succeeded");
                        });
                        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
                    }
                });
            });
        },
    );
}

/// A stream whose first `poll_read` in a green thread returned `Pending`
/// is registered with the runtime's reactor, whatever that `Pending` came
/// from (a due preemption makes the poll yield before any call), so it can
/// go on being polled from an OS thread.
#[test]
fn a_pending_poll_in_a_green_thread_leaves_the_stream_registered() {
    within(LIMIT, || {
        let rt = rt();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        for round in 0..20 {
            let (mut s, pending) = rt.block_on(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                let mut pending = false;
                eevdf_rt::block_on_future(std::future::poll_fn(|cx| {
                    let mut b = [0u8; 1];
                    let mut rb = tokio::io::ReadBuf::new(&mut b);
                    pending = Pin::new(&mut s).poll_read(cx, &mut rb).is_pending();
                    Poll::Ready(())
                }));
                (s, pending)
            });
            let _peer = l.accept().unwrap();
            if !pending {
                continue;
            }
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);
            let mut b = [0u8; 1];
            let mut rb = tokio::io::ReadBuf::new(&mut b);
            if let Poll::Ready(Err(e)) = Pin::new(&mut s).poll_read(&mut cx, &mut rb) {
                panic!("round {round}: {e}");
            }
        }
    });
}
