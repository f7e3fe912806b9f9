// The net_unix suite, included once per I/O driver by `tests/net_unix.rs`
// (each inclusion defines `builder()`).

use eevdf_rt::net::{UnixListener, UnixStream};
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
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
