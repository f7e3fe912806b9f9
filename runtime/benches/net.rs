//! TCP echo round trip on loopback: one connection, 64-byte messages.
//!
//! * `green-{epoll,uring}/2w` — client and server are green threads on a
//!   2-worker eevdf-rt runtime (placement decides where they run), with
//!   each I/O driver (uring only where the kernel allows it);
//! * `green-*/same-worker`, `green-*/cross-worker` — the same, both pinned
//!   to worker 0, or client on worker 0 and server on worker 1;
//! * `tokio/2w` — client and server are tasks on a 2-worker multi-thread
//!   tokio runtime;
//! * `os-threads` — `std::net`, blocking: the server on its own thread, the
//!   client on the bench thread.
//!
//! Each reports the time of one round trip (write 64 bytes, read them back).
//! Run: `cargo bench -p eevdf-rt --bench net` (short measurement time).

use criterion::{criterion_group, criterion_main, Criterion};
use eevdf_rt::io::IoDriver;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const MSG: usize = 64;

fn green_echo(s: &mut eevdf_rt::net::TcpStream) {
    let mut buf = [0u8; MSG];
    while s.read_exact(&mut buf).is_ok() {
        if s.write_all(&buf).is_err() {
            break;
        }
    }
}

/// A green client/server pair; `pins` = (client worker, server worker).
fn bench_green(c: &mut Criterion, driver: IoDriver, pins: Option<(usize, usize)>) {
    let name = &format!(
        "green-{driver}/{}",
        match pins {
            None => "2w",
            Some((0, 0)) => "same-worker",
            Some(_) => "cross-worker",
        }
    );
    let rt = eevdf_rt::Builder::new()
        .workers(2)
        .io_driver(driver)
        .build()
        .unwrap();
    let l = eevdf_rt::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let mut server = eevdf_rt::task::Builder::new().name("server");
    if let Some((_, s)) = pins {
        server = server.pin(s);
    }
    let _server = rt.block_on(move || {
        server
            .spawn(move || {
                let (mut s, _) = l.accept().unwrap();
                s.set_nodelay(true).unwrap();
                green_echo(&mut s);
            })
            .unwrap()
    });
    let mut client = Some(eevdf_rt::net::TcpStream::connect(addr).unwrap());
    client.as_ref().unwrap().set_nodelay(true).unwrap();
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut s = client.take().unwrap();
            let mut tb = eevdf_rt::task::Builder::new().name("client");
            if let Some((cl, _)) = pins {
                tb = tb.pin(cl);
            }
            let h = rt.block_on(move || {
                tb.spawn(move || {
                    let mut buf = [7u8; MSG];
                    let t = Instant::now();
                    for _ in 0..iters {
                        s.write_all(&buf).unwrap();
                        s.read_exact(&mut buf).unwrap();
                    }
                    (t.elapsed(), s)
                })
                .unwrap()
            });
            let (el, s) = h.join().unwrap();
            client = Some(s);
            el
        })
    });
    let t = rt.stats().total();
    println!(
        "{name}: context switches {}, kicks {}, parks {}, remote wakeups queued {} / inline {}",
        t.context_switches, t.kicks, t.parks, t.wakeups_remote_queued, t.wakeups_remote_inline
    );
}

fn bench_tokio(c: &mut Criterion) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut client = Some(rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            s.set_nodelay(true).unwrap();
            let mut buf = [0u8; MSG];
            while s.read_exact(&mut buf).await.is_ok() {
                if s.write_all(&buf).await.is_err() {
                    break;
                }
            }
        });
        let s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        s
    }));
    c.bench_function("tokio/2w", |b| {
        b.iter_custom(|iters| {
            let mut s = client.take().unwrap();
            // The client runs as a task on a worker, like the server.
            let (el, s) = rt
                .block_on(rt.spawn(async move {
                    let mut buf = [7u8; MSG];
                    let t = Instant::now();
                    for _ in 0..iters {
                        s.write_all(&buf).await.unwrap();
                        s.read_exact(&mut buf).await.unwrap();
                    }
                    (t.elapsed(), s)
                }))
                .unwrap();
            client = Some(s);
            el
        })
    });
}

fn bench_os_threads(c: &mut Criterion) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = [0u8; MSG];
        while s.read_exact(&mut buf).is_ok() {
            if s.write_all(&buf).is_err() {
                break;
            }
        }
    });
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    c.bench_function("os-threads", |b| {
        let mut buf = [7u8; MSG];
        b.iter(|| {
            s.write_all(&buf).unwrap();
            s.read_exact(&mut buf).unwrap();
        })
    });
    drop(s);
    server.join().unwrap();
}

fn benches(c: &mut Criterion) {
    let mut drivers = vec![IoDriver::Epoll];
    match IoDriver::Uring.resolve() {
        Ok(_) => drivers.push(IoDriver::Uring),
        Err(e) => println!("no io_uring benches: {e}"),
    }
    for d in drivers {
        bench_green(c, d, None);
        bench_green(c, d, Some((0, 0)));
        bench_green(c, d, Some((0, 1)));
    }
    bench_tokio(c);
    bench_os_threads(c);
}

criterion_group! {
    name = net;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(net);
