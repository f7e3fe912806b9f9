//! What only the io_uring driver does: operations really go through the
//! workers' rings (the counters say so), a timed-out read is cancelled
//! without losing data, and asking for io_uring where the kernel refuses
//! it is a clear error. Tests that need io_uring print why they skip.

use eevdf_rt::io::IoDriver;
use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

/// A runtime on io_uring, or `None` (with the reason printed).
fn uring_rt(workers: usize) -> Option<eevdf_rt::Runtime> {
    match IoDriver::Uring.resolve() {
        Ok(_) => Some(
            eevdf_rt::Builder::new()
                .workers(workers)
                .io_driver(IoDriver::Uring)
                .build()
                .unwrap(),
        ),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// A green thread reads a pipe before anything is written, so the read
/// must wait: under io_uring it completes through the ring.
fn blocked_pipe_read(rt: &eevdf_rt::Runtime) {
    let (mut r, mut w) = eevdf_rt::io::pipe().unwrap();
    let reader = rt.spawn(move || {
        let mut b = [0u8; 5];
        r.read_exact(&mut b).unwrap();
        b
    });
    std::thread::sleep(Duration::from_millis(20));
    w.write_all(b"ring!").unwrap();
    assert_eq!(&reader.join().unwrap(), b"ring!");
}

#[test]
fn operations_go_through_the_rings() {
    let Some(rt) = uring_rt(2) else { return };
    assert_eq!(rt.io_driver(), IoDriver::Uring);
    blocked_pipe_read(&rt);
    let t = rt.stats().total();
    assert!(t.io_uring_completions >= 1, "{t:?}");
    assert!(t.io_uring_enters >= 1, "{t:?}");
}

#[test]
fn epoll_runtimes_have_no_rings() {
    let rt = eevdf_rt::Builder::new()
        .workers(2)
        .io_driver(IoDriver::Epoll)
        .build()
        .unwrap();
    assert_eq!(rt.io_driver(), IoDriver::Epoll);
    blocked_pipe_read(&rt);
    let t = rt.stats().total();
    assert_eq!((t.io_uring_completions, t.io_uring_enters), (0, 0));
}

#[test]
fn a_timed_out_read_is_cancelled_and_later_data_is_not_lost() {
    let Some(rt) = uring_rt(2) else { return };
    let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
    let a = eevdf_rt::net::UnixStream::from_std(a).unwrap();
    a.set_read_timeout(Some(Duration::from_millis(30))).unwrap();
    let reader = rt.spawn(move || {
        let mut a = a;
        let mut buf = [0u8; 16];
        // Nothing arrives: the ring read is cancelled at the deadline.
        for _ in 0..3 {
            let e = a.read(&mut buf).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::WouldBlock);
        }
        a.set_read_timeout(None).unwrap();
        let mut got = Vec::new();
        while got.len() < 9 {
            let n = a.read(&mut buf).unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    std::thread::sleep(Duration::from_millis(150));
    b.write_all(b"after-all").unwrap();
    assert_eq!(reader.join().unwrap(), b"after-all");
    assert!(rt.stats().total().io_uring_completions >= 3);
}

#[test]
fn shutdown_cancels_ring_operations_of_parked_green_threads() {
    let Some(rt) = uring_rt(2) else { return };
    let mut keep = Vec::new();
    for _ in 0..8 {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let a = eevdf_rt::net::UnixStream::from_std(a).unwrap();
        rt.spawn(move || {
            let mut a = a;
            let mut buf = [0u8; 64];
            let _ = a.read(&mut buf); // parks in a ring read forever
        });
        keep.push(b);
    }
    std::thread::sleep(Duration::from_millis(50));
    let t = std::time::Instant::now();
    drop(rt); // joins the workers (their rings cancel and reap), then unwinds
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn asking_for_uring_where_it_is_refused_names_the_reason() {
    match IoDriver::Uring.resolve() {
        Ok(d) => assert_eq!(d, IoDriver::Uring),
        Err(e) => {
            let err = eevdf_rt::Builder::new()
                .io_driver(IoDriver::Uring)
                .build()
                .unwrap_err();
            assert!(err.to_string().contains("io_uring"), "{err}");
            assert_eq!(err.to_string(), e.to_string());
        }
    }
    assert!("sometimes".parse::<IoDriver>().is_err());
}

#[test]
fn a_worker_parked_in_its_ring_is_woken_by_a_kick() {
    // One worker: once it has a ring it parks in it (a futex wait op on its
    // idle word). A plain wakeup from an OS thread must still reach it.
    let Some(rt) = uring_rt(1) else { return };
    blocked_pipe_read(&rt); // creates worker 0's ring
    let (tx, rx) = eevdf_rt::sync::channel::bounded::<u32>(1);
    let h = rt.spawn(move || rx.recv().unwrap());
    std::thread::sleep(Duration::from_millis(50));
    let t = std::time::Instant::now();
    tx.send(7).unwrap();
    assert_eq!(h.join().unwrap(), 7);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // Parked again and woken again, many times.
    for i in 0..50u32 {
        let (tx, rx) = eevdf_rt::sync::channel::bounded::<u32>(1);
        let h = rt.spawn(move || rx.recv().unwrap());
        std::thread::sleep(Duration::from_millis(1));
        tx.send(i).unwrap();
        assert_eq!(h.join().unwrap(), i);
    }
}

/// A worker is handed off (`Builder::handoff`) while another green thread
/// of it waits for a read on the old thread's ring: when the old thread
/// comes back it cancels that read, and the reader submits it again on
/// the ring of the worker it runs on next. Every byte arrives once.
#[test]
fn a_read_in_flight_survives_a_hand_off_of_its_worker() {
    let Some(rt) = uring_rt(1) else { return };
    let (mut tx, rx) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut rx = eevdf_rt::net::UnixStream::from_std(rx).unwrap();
    let reader = rt.spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while got.len() < 8 {
            let n = rx.read(&mut buf).unwrap();
            assert!(n > 0, "early end of stream");
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    // Let the reader submit its read on the worker's ring.
    std::thread::sleep(Duration::from_millis(20));
    // A green thread blocks the worker's thread in the kernel, while a
    // sleeper waits behind it: the worker is handed off.
    let blocker = rt.spawn(|| std::thread::sleep(Duration::from_millis(80)));
    let sleeper = rt.spawn(|| eevdf_rt::sleep(Duration::from_millis(1)));
    sleeper.join().unwrap();
    tx.write_all(b"abcd").unwrap();
    blocker.join().unwrap();
    tx.write_all(b"efgh").unwrap();
    assert_eq!(reader.join().unwrap(), b"abcdefgh");
    assert!(rt.stats().total().handoffs >= 1, "{}", rt.stats());
}

/// A request/response stream whose reads keep finding nothing to read
/// (each side waits for the other's message) stops trying the
/// nonblocking read first and goes straight to the ring, except for one
/// probe in eight; a stream whose reads find data is always tried first.
/// Every byte arrives either way.
#[test]
fn a_stream_that_keeps_waiting_skips_the_nonblocking_try() {
    let Some(rt) = uring_rt(1) else { return };
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut a = eevdf_rt::net::UnixStream::from_std(a).unwrap();
    let mut b = eevdf_rt::net::UnixStream::from_std(b).unwrap();
    const ROUNDS: u32 = 400;
    let echo = rt.spawn(move || {
        let mut buf = [0u8; 4];
        for _ in 0..ROUNDS {
            b.read_exact(&mut buf).unwrap();
            b.write_all(&buf).unwrap();
        }
    });
    let client = rt.spawn(move || {
        for i in 0..ROUNDS {
            a.write_all(&i.to_le_bytes()).unwrap();
            let mut buf = [0u8; 4];
            a.read_exact(&mut buf).unwrap();
            assert_eq!(u32::from_le_bytes(buf), i);
        }
    });
    client.join().unwrap();
    echo.join().unwrap();
    let skipped = rt.stats().total().io_tries_skipped;
    // Both sides wait on nearly every read: about 7 of 8 of the 800 reads
    // skip the try. A driver that always tried first would skip none.
    assert!(skipped >= 400, "skipped {skipped} of 800 reads");

    // A reader that always finds data never skips.
    let (mut w, r) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut r = eevdf_rt::net::UnixStream::from_std(r).unwrap();
    w.write_all(&[7u8; 4096]).unwrap();
    let before = rt.stats().total().io_tries_skipped;
    let reader = rt.spawn(move || {
        let mut buf = [0u8; 16];
        for _ in 0..256 {
            r.read_exact(&mut buf).unwrap();
            assert_eq!(buf, [7u8; 16]);
        }
    });
    reader.join().unwrap();
    assert_eq!(rt.stats().total().io_tries_skipped, before);
}
