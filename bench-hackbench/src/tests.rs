//! Cross-module tests: every backend completes tiny runs in every mode and
//! on every transport, and a deliberately broken sender is caught.
//!
//! Owns: nothing but tests. Must not: take more than a few seconds.

use crate::backend::{
    self, BackendKind, HackbenchConfig, LatencyColumn, LatencyConfig, RuntimeOpts, SpawnConfig,
    SpawnLimit,
};
use crate::error::BenchError;
use crate::opts;
use crate::transport::TransportKind;
use crate::verify::VerifyError;
use crate::workload::{send_messages, Loops, SendFn, Sink};
use std::io;
use std::time::Duration;

const TRANSPORTS: [TransportKind; 3] = [
    TransportKind::UnixSocket,
    TransportKind::Pipe,
    TransportKind::Tcp,
];
const AVAILABLE: [BackendKind; 4] = [
    BackendKind::Processes,
    BackendKind::Threads,
    BackendKind::Green,
    BackendKind::Tokio,
];

fn tiny(transport: TransportKind) -> HackbenchConfig {
    HackbenchConfig {
        groups: 1,
        fds: 2,
        loops: 10,
        datasize: 100,
        transport,
        policy: crate::policy::LoadPolicy::Normal,
        runtime: RuntimeOpts {
            workers: 2,
            features: None,
            stats: true,
            trace: None,
            io: eevdf_rt::io::IoDriver::Auto,
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
fn every_kernel_and_green_backend_completes_a_batch_run() {
    for kind in [
        BackendKind::Processes,
        BackendKind::Threads,
        BackendKind::Green,
    ] {
        let b = backend::hackbench(kind).unwrap();
        let mut cfg = tiny(TransportKind::Pipe);
        cfg.policy = crate::policy::LoadPolicy::Batch;
        let run = b.run(&cfg).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(run.messages, 40, "{kind:?}");
    }
    // The policy was the tasks', not this thread's.
    // SAFETY: no pointer; 0 is this thread.
    assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
}

#[test]
fn green_completes_a_tiny_hackbench_on_every_transport_including_channels() {
    let b = backend::hackbench(BackendKind::Green).unwrap();
    for t in TRANSPORTS.into_iter().chain([TransportKind::Channel]) {
        // -g 1 -f 2 -l 10, with --stats
        let run = b.run(&tiny(t)).unwrap_or_else(|e| panic!("{t:?}: {e}"));
        // 1 group x 2 receivers x (2 senders x 10 loops)
        assert_eq!(run.messages, 40, "{t:?}");
        assert!(
            run.details.iter().any(|l| l.contains("context_switches")),
            "{t:?}: --stats printed no counters: {:?}",
            run.details
        );
    }
}

#[test]
fn fd_backends_reject_the_channel_transport_as_bad_usage() {
    for kind in [
        BackendKind::Processes,
        BackendKind::Threads,
        BackendKind::Tokio,
    ] {
        let b = backend::hackbench(kind).unwrap();
        match b.run(&tiny(TransportKind::Channel)) {
            Err(e @ BenchError::Usage(_)) => assert_eq!(e.exit_code(), 2),
            other => panic!("{kind:?}: expected a usage error, got {other:?}"),
        }
    }
    assert!(matches!(
        backend::latency(BackendKind::Processes).err(),
        Some(backend::Missing::Unsupported)
    ));
}

/// The loop count of a fixed run (the broken senders run only those).
fn fixed(loops: Loops<'_>) -> u64 {
    let Loops::Fixed(n) = loops else {
        unreachable!("broken senders run fixed loops")
    };
    n
}

/// Skips the first message to the first receiver but claims every loop.
fn skip_one<W: Sink>(writers: &[W], msg: &W::Msg, loops: Loops<'_>) -> io::Result<u64> {
    let n = fixed(loops);
    for l in 0..n {
        for (i, w) in writers.iter().enumerate() {
            if !(l == 0 && i == 0) {
                w.send(msg)?;
            }
        }
    }
    Ok(n)
}

/// Writes the first message to the first receiver one byte short.
fn short_one<W: Sink>(writers: &[W], msg: &W::Msg, loops: Loops<'_>) -> io::Result<u64> {
    let n = fixed(loops);
    let short = W::Msg::from(&msg[..msg.len() - 1]);
    for l in 0..n {
        for (i, w) in writers.iter().enumerate() {
            w.send(if l == 0 && i == 0 { &short } else { msg })?;
        }
    }
    Ok(n)
}

/// Sends one message too many to every receiver.
fn one_extra<W: Sink>(writers: &[W], msg: &W::Msg, loops: Loops<'_>) -> io::Result<u64> {
    let n = fixed(loops);
    send_messages(writers, msg, Loops::Fixed(n + 1))?;
    Ok(n)
}

/// A broken sender, its name, and the verification error it must cause.
type BrokenRun<W> = (&'static str, SendFn<W>, fn(&VerifyError) -> bool);

fn broken_runs<W: Sink>() -> [BrokenRun<W>; 3] {
    [
        ("skip", skip_one::<W>, |e| {
            matches!(e, VerifyError::Lost { receiver: 0, .. })
        }),
        ("short", short_one::<W>, |e| {
            matches!(e, VerifyError::Short { receiver: 0, .. })
        }),
        ("extra", one_extra::<W>, |e| {
            matches!(e, VerifyError::Extra { .. })
        }),
    ]
}

/// Runs every broken sender with `run_fixed` on every transport in
/// `transports` and checks the verification error.
fn check_broken<W: Sink>(
    transports: &[TransportKind],
    run_fixed: fn(&HackbenchConfig, SendFn<W>) -> Result<backend::HackbenchRun, BenchError>,
) {
    for &t in transports {
        for (name, send, want) in broken_runs::<W>() {
            match run_fixed(&tiny(t), send) {
                Err(BenchError::Verify(e)) => assert!(want(&e), "{t:?} {name}: {e}"),
                other => panic!("{t:?} {name}: expected a verification error, got {other:?}"),
            }
        }
    }
}

#[test]
fn green_backend_reports_a_broken_sender() {
    let all = [TRANSPORTS.as_slice(), &[TransportKind::Channel]].concat();
    check_broken(&all, backend::green::hackbench::run_fixed);
}

#[test]
fn threads_backend_reports_a_broken_sender() {
    check_broken(&TRANSPORTS, backend::threads::run_fixed);
}

#[test]
fn processes_backend_reports_a_broken_sender() {
    check_broken(&TRANSPORTS, backend::processes::run_fixed);
}

fn tiny_latency() -> LatencyConfig {
    LatencyConfig {
        load: tiny(TransportKind::UnixSocket),
        interval: Duration::from_millis(1),
        duration: Duration::from_millis(300),
        nice_levels: vec![-19, 0, 19],
    }
}

fn check_probes(what: &str, run: &backend::LatencyRun) {
    assert_eq!(run.probes.len(), 3, "{what}");
    for (p, nice) in run.probes.iter().zip([-19, 0, 19]) {
        assert_eq!(p.nice, nice);
        assert!(p.cycles > 0, "{what}: {p:?}");
        assert!(p.cycles + p.overruns <= 300, "{what}: {p:?}");
        assert!(p.min_ns <= p.p50_ns && p.p50_ns <= p.p99_ns && p.p99_ns <= p.max_ns);
    }
    assert!(run.load_messages > 0, "{what}: the load moved nothing");
}

#[test]
fn latency_mode_completes_a_tiny_run_per_backend() {
    let cfg = tiny_latency();
    for kind in [BackendKind::Threads, BackendKind::Tokio] {
        let b = backend::latency(kind).unwrap();
        let run = b
            .run(&cfg, &LatencyColumn::default_column())
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        check_probes(&format!("{kind:?}"), &run);
        let green_only = LatencyColumn {
            features: Some("TICK_ELIGIBLE".into()),
            ..LatencyColumn::default_column()
        };
        assert!(b.run(&cfg, &green_only).is_err());
    }
}

#[test]
fn green_latency_runs_every_bg3_column() {
    let Ok(opts::Config {
        mode: opts::Mode::Latency { columns, .. },
        ..
    }) = opts::parse([
        "hackbench",
        "--latency",
        "--backend",
        "green",
        "--columns",
        "bg3",
    ])
    else {
        panic!("--columns bg3 did not parse")
    };
    assert_eq!(columns.len(), 5);
    let b = backend::latency(BackendKind::Green).unwrap();
    for load in [TransportKind::UnixSocket, TransportKind::Channel] {
        let mut cfg = tiny_latency();
        cfg.load.transport = load;
        for col in &columns {
            let run = b
                .run(&cfg, col)
                .unwrap_or_else(|e| panic!("{load:?} {}: {e}", col.label));
            check_probes(&format!("green {load:?} {}", col.label), &run);
            for name in ["preemptions", "tick preemptions", "wakeup preemptions"] {
                assert!(
                    run.counters.iter().any(|(n, _)| n == name),
                    "{}: no {name} counter",
                    col.label
                );
            }
        }
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

#[test]
fn green_spawn_counts_placement_under_both_policies() {
    let b = backend::spawn(BackendKind::Green).unwrap();
    let base = tiny(TransportKind::Pipe).runtime;
    let variants = backend::green::spawn::placement_variants(&base);
    assert_eq!(variants.len(), 2);
    for (label, runtime) in variants {
        for limit in [
            SpawnLimit::Duration(Duration::from_millis(300)),
            SpawnLimit::Iterations(50),
        ] {
            let cfg = SpawnConfig {
                spawners: 2,
                limit,
                runtime: runtime.clone(),
            };
            let run = b.run(&cfg).unwrap_or_else(|e| panic!("{label}: {e}"));
            let get = |name: &str| {
                run.counters
                    .iter()
                    .find(|(n, _)| n == name)
                    .unwrap_or_else(|| panic!("{label}: no {name}"))
                    .1
            };
            let (local, remote) = (get("spawned local"), get("spawned remote"));
            // Every spawn of the window is counted once, local or remote.
            assert_eq!(local + remote, run.spawns, "{label}");
            if let SpawnLimit::Iterations(n) = limit {
                assert_eq!(run.spawns, 2 * n, "{label}");
            }
            if label.ends_with(" SPAWN_LOCAL") {
                assert_eq!(remote, 0, "{label}: local-first placed a spawn elsewhere");
            }
        }
    }
}
