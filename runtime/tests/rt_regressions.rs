//! Regression tests for bugs found by the benchmark ports (each was a
//! reproduction first; see `bench-hackbench/README.md`).

mod common;

use common::with_timeout;
use std::time::{Duration, Instant};

/// `join` from a green thread on a freshly spawned local child takes a
/// directed yield (`Switch::YieldTo`); an idle second worker may steal the
/// child at the same time (`wake::balance::newidle`). The balancer used to
/// release the source lock before recording the child's new worker and slot,
/// so the joiner's worker could pass a stale slot to `yield_to` and panic.
#[test]
fn join_directed_yield_survives_newidle_steals() {
    let n = with_timeout(60, "spawn/join under stealing", || {
        let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
        rt.block_on(|| {
            let end = Instant::now() + Duration::from_millis(800);
            let mut n = 0u64;
            while Instant::now() < end {
                eevdf_rt::spawn(|| ()).join().unwrap();
                n += 1;
            }
            n
        })
    });
    assert!(n > 0);
}

/// The same race with idlest-worker placement and two spawners.
#[test]
fn join_directed_yield_survives_steals_without_spawn_local() {
    let n = with_timeout(60, "spawn/join, NO_SPAWN_LOCAL", || {
        let rt = eevdf_rt::Builder::new()
            .workers(2)
            .features("NO_SPAWN_LOCAL")
            .build()
            .unwrap();
        let spawners: Vec<_> = (0..2)
            .map(|_| {
                rt.spawn(|| {
                    let end = Instant::now() + Duration::from_millis(800);
                    let mut n = 0u64;
                    while Instant::now() < end {
                        eevdf_rt::spawn(|| ()).join().unwrap();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        spawners.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert!(n > 0);
}

/// A successful read or write is a preemption point: a green thread whose
/// I/O never blocks must not keep its worker. On one worker, a 1 ms sleeper
/// used to wake only when a 300 ms loop of socket writes and reads ended.
#[test]
fn successful_io_is_a_preemption_point() {
    use std::io::{Read, Write};
    let late = with_timeout(60, "I/O preemption", || {
        let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        rt.block_on(|| {
            let sleeper = eevdf_rt::spawn(|| {
                let deadline = Instant::now() + Duration::from_millis(1);
                eevdf_rt::sleep_until(deadline);
                Instant::now() - deadline
            });
            eevdf_rt::yield_now(); // let the sleeper arm its timer
            let (mut a, mut b) = eevdf_rt::net::UnixStream::pair().unwrap();
            let end = Instant::now() + Duration::from_millis(300);
            let mut buf = [0u8; 100];
            while Instant::now() < end {
                a.write_all(&buf).unwrap(); // never blocks: b drains it
                b.read_exact(&mut buf).unwrap();
            }
            sleeper.join().unwrap()
        })
    });
    // Without the preemption point the sleeper waits for the whole loop.
    assert!(
        late < Duration::from_millis(150),
        "the sleeper woke {late:?} late: the I/O loop was never preempted"
    );
}
