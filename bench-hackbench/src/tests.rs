//! Cross-module tests: every backend completes tiny runs in every mode and
//! on every transport, and a deliberately broken sender is caught.
//!
//! Owns: nothing but tests. Must not: take more than a few seconds.

use crate::backend::{
    self, BackendKind, HackbenchConfig, LatencyColumn, LatencyConfig, RuntimeOpts, SpawnConfig,
    SpawnLimit,
};
use crate::error::BenchError;
use crate::transport::{write_all, TransportKind};
use crate::verify::VerifyError;
use crate::workload::{Loops, SendFn};
use std::io;
use std::os::fd::BorrowedFd;
use std::time::Duration;

const TRANSPORTS: [TransportKind; 3] = [
    TransportKind::UnixSocket,
    TransportKind::Pipe,
    TransportKind::Tcp,
];
const AVAILABLE: [BackendKind; 3] = [
    BackendKind::Processes,
    BackendKind::Threads,
    BackendKind::Tokio,
];

fn tiny(transport: TransportKind) -> HackbenchConfig {
    HackbenchConfig {
        groups: 1,
        fds: 2,
        loops: 10,
        datasize: 100,
        transport,
        runtime: RuntimeOpts {
            workers: 2,
            features: None,
            stats: true,
        },
    }
}

#[test]
fn every_backend_completes_a_tiny_hackbench_on_every_transport() {
    for kind in AVAILABLE {
        let b = backend::hackbench(kind).unwrap();
        assert_eq!(b.kind(), kind);
        for t in TRANSPORTS {
            let mut cfg = tiny(t);
            cfg.groups = 2;
            let run = b
                .run(&cfg)
                .unwrap_or_else(|e| panic!("{kind:?} {t:?}: {e}"));
            // 2 groups x 2 receivers x (2 senders x 10 loops)
            assert_eq!(run.messages, 80, "{kind:?} {t:?}");
        }
    }
}

#[test]
fn green_says_not_yet_available() {
    assert!(matches!(
        backend::hackbench(BackendKind::Green).err(),
        Some(backend::Missing::NotYetAvailable)
    ));
    assert!(backend::latency(BackendKind::Green).is_err());
    assert!(backend::spawn(BackendKind::Green).is_err());
    assert!(matches!(
        backend::latency(BackendKind::Processes).err(),
        Some(backend::Missing::Unsupported)
    ));
}

/// Skips the first message to the first receiver but claims every loop.
fn skip_one(writers: &[BorrowedFd<'_>], msg: &[u8], loops: Loops<'_>) -> io::Result<u64> {
    let Loops::Fixed(n) = loops else {
        unreachable!()
    };
    for l in 0..n {
        for (i, &w) in writers.iter().enumerate() {
            if !(l == 0 && i == 0) {
                write_all(w, msg)?;
            }
        }
    }
    Ok(n)
}

/// Writes the first message to the first receiver one byte short.
fn short_one(writers: &[BorrowedFd<'_>], msg: &[u8], loops: Loops<'_>) -> io::Result<u64> {
    let Loops::Fixed(n) = loops else {
        unreachable!()
    };
    for l in 0..n {
        for (i, &w) in writers.iter().enumerate() {
            let m = if l == 0 && i == 0 {
                &msg[..msg.len() - 1]
            } else {
                msg
            };
            write_all(w, m)?;
        }
    }
    Ok(n)
}

/// Sends one message too many to every receiver.
fn one_extra(writers: &[BorrowedFd<'_>], msg: &[u8], loops: Loops<'_>) -> io::Result<u64> {
    let Loops::Fixed(n) = loops else {
        unreachable!()
    };
    crate::workload::send_messages(writers, msg, Loops::Fixed(n + 1))?;
    Ok(n)
}

/// A broken sender, its name, and the verification error it must cause.
type BrokenRun = (&'static str, SendFn, fn(&VerifyError) -> bool);

fn broken_runs() -> Vec<BrokenRun> {
    vec![
        ("skip", skip_one, |e| {
            matches!(e, VerifyError::Lost { receiver: 0, .. })
        }),
        ("short", short_one, |e| {
            matches!(e, VerifyError::Short { receiver: 0, .. })
        }),
        ("extra", one_extra, |e| {
            matches!(e, VerifyError::Extra { .. })
        }),
    ]
}

#[test]
fn threads_backend_reports_a_broken_sender() {
    for t in TRANSPORTS {
        for (name, send, want) in broken_runs() {
            match backend::threads::run_fixed(&tiny(t), send) {
                Err(BenchError::Verify(e)) => assert!(want(&e), "{t:?} {name}: {e}"),
                other => panic!("{t:?} {name}: expected a verification error, got {other:?}"),
            }
        }
    }
}

#[test]
fn processes_backend_reports_a_broken_sender() {
    for t in TRANSPORTS {
        for (name, send, want) in broken_runs() {
            match backend::processes::run_fixed(&tiny(t), send) {
                Err(BenchError::Verify(e)) => assert!(want(&e), "{t:?} {name}: {e}"),
                other => panic!("{t:?} {name}: expected a verification error, got {other:?}"),
            }
        }
    }
}

#[test]
fn latency_mode_completes_a_tiny_run_per_backend() {
    for kind in [BackendKind::Threads, BackendKind::Tokio] {
        let cfg = LatencyConfig {
            load: tiny(TransportKind::UnixSocket),
            interval: Duration::from_millis(1),
            duration: Duration::from_millis(300),
            nice_levels: vec![-19, 0, 19],
        };
        let b = backend::latency(kind).unwrap();
        let run = b
            .run(&cfg, &LatencyColumn::default_column())
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(run.probes.len(), 3);
        for (p, nice) in run.probes.iter().zip([-19, 0, 19]) {
            assert_eq!(p.nice, nice);
            assert!(p.cycles > 0, "{kind:?}: {p:?}");
            assert!(p.cycles + p.overruns <= 300, "{kind:?}: {p:?}");
            assert!(p.min_ns <= p.p50_ns && p.p50_ns <= p.p99_ns && p.p99_ns <= p.max_ns);
        }
        assert!(run.load_messages > 0, "{kind:?}: the load moved nothing");
        let green_only = LatencyColumn {
            features: Some("TICK_ELIGIBLE".into()),
            ..LatencyColumn::default_column()
        };
        assert!(b.run(&cfg, &green_only).is_err());
    }
}

#[test]
fn spawn_mode_completes_tiny_runs_per_backend() {
    for kind in AVAILABLE {
        let b = backend::spawn(kind).unwrap();
        for (spawners, limit) in [
            (2, SpawnLimit::Duration(Duration::from_millis(300))),
            (3, SpawnLimit::Iterations(20)),
        ] {
            let cfg = SpawnConfig {
                spawners,
                limit,
                runtime: tiny(TransportKind::Pipe).runtime,
            };
            let run = b.run(&cfg).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            match limit {
                SpawnLimit::Iterations(n) => assert_eq!(run.spawns, n * spawners as u64),
                SpawnLimit::Duration(_) => assert!(run.spawns > 0, "{kind:?}"),
            }
            assert!(run.rate() > 0.0);
        }
    }
}
