// The io_pipe suite, included once per I/O driver by `tests/io_pipe.rs`
// (each inclusion defines `builder()`).

use std::io::{ErrorKind, Read, Write};
use std::time::Instant;

const TOTAL: usize = 100_000_000;

/// 1 MiB of pseudo-random bytes (xorshift), written in chunks of varying size.
fn block() -> Vec<u8> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Order-sensitive checksum over a stream of chunks (FNV-1a style on u64 words
/// would need aligned input; this works on any split).
#[derive(Default)]
struct Sum {
    h: u64,
    n: u64,
}

impl Sum {
    fn add(&mut self, bytes: &[u8]) {
        let mut h = self.h;
        for &b in bytes {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
        self.h = h;
        self.n += bytes.len() as u64;
    }
}

#[test]
fn pipe_100_mb_between_green_threads() {
    let rt = builder().workers(2).build().unwrap();
    let t0 = Instant::now();
    let (w_sum, r_sum) = rt.block_on(|| {
        let (mut r, mut w) = eevdf_rt::io::pipe().unwrap();
        let writer = eevdf_rt::spawn(move || {
            let data = block();
            let mut sum = Sum::default();
            let mut left = TOTAL;
            let mut k = 0usize;
            while left > 0 {
                // 1 .. 256 KiB, from a moving offset.
                let len = (1 + (k * 7919) % (256 << 10)).min(left);
                let off = (k * 104_729) % (data.len() - len + 1);
                let chunk = &data[off..off + len];
                w.write_all(chunk).unwrap();
                sum.add(chunk);
                left -= len;
                k += 1;
            }
            (sum.h, sum.n)
        });
        let reader = eevdf_rt::spawn(move || {
            let mut buf = vec![0u8; 100 << 10];
            let mut sum = Sum::default();
            loop {
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    return (sum.h, sum.n);
                }
                sum.add(&buf[..n]);
            }
        });
        (writer.join().unwrap(), reader.join().unwrap())
    });
    assert_eq!(w_sum.1, TOTAL as u64);
    assert_eq!(w_sum, r_sum);
    println!(
        "100 MB through a pipe in {:?}\n{}",
        t0.elapsed(),
        rt.stats()
    );
}

#[test]
fn pipe_between_green_and_os_threads() {
    let rt = builder().workers(2).build().unwrap();
    // Green writer, OS-thread reader; then OS-thread writer, green reader.
    let (mut r, w) = eevdf_rt::io::pipe().unwrap();
    let g = rt.spawn(move || {
        let mut w = w;
        for i in 0..1000u32 {
            w.write_all(&i.to_le_bytes()).unwrap();
            if i % 100 == 0 {
                eevdf_rt::sleep(std::time::Duration::from_millis(1));
            }
        }
    });
    let mut v = Vec::new();
    r.read_to_end(&mut v).unwrap(); // blocks this OS thread until EOF
    g.join().unwrap();
    assert_eq!(v.len(), 4000);
    assert!(v
        .chunks(4)
        .enumerate()
        .all(|(i, c)| u32::from_le_bytes(c.try_into().unwrap()) == i as u32));

    let (r, mut w) = eevdf_rt::io::pipe().unwrap();
    let g = rt.spawn(move || {
        let mut r = r;
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        v.len()
    });
    let big = vec![7u8; 1 << 20];
    w.write_all(&big).unwrap(); // fills the pipe: this thread blocks in ppoll
    drop(w);
    assert_eq!(g.join().unwrap(), 1 << 20);
}

#[test]
fn pipe_eof_and_broken_pipe() {
    let rt = builder().workers(1).build().unwrap();
    rt.block_on(|| {
        let (mut r, w) = eevdf_rt::io::pipe().unwrap();
        let w2 = w.try_clone().unwrap();
        drop(w);
        (&w2).write_all(b"last").unwrap();
        drop(w2);
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "last");
        let (r, mut w) = eevdf_rt::io::pipe().unwrap();
        drop(r);
        assert_eq!(w.write(b"x").unwrap_err().kind(), ErrorKind::BrokenPipe);
    });
}

#[test]
fn io_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<eevdf_rt::io::PipeReader>();
    check::<eevdf_rt::io::PipeWriter>();
    check::<eevdf_rt::net::TcpListener>();
    check::<eevdf_rt::net::TcpStream>();
    check::<eevdf_rt::net::UnixListener>();
    check::<eevdf_rt::net::UnixStream>();
}
