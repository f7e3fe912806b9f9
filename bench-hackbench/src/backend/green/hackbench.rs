//! Green hackbench: senders and receivers as eevdf-rt green threads.
//!
//! Owns: starting a green hackbench on a runtime (fixed `-l` loops, or
//! open-ended as the latency mode's load), the green sender and receiver
//! loops over [`super::endpoint`]'s writers and readers, stopping
//! it and collecting the counts for `verify`. Must not: build the runtime
//! (the caller does, so the latency mode can share it), block a worker, or
//! allocate per message.
//!
//! Each sender writes one `s`-byte message to every receiver of its group
//! per loop; each receiver reads the rest of its current message per read
//! (`read(buf[done..s])`, as hackbench) until end of stream. The last
//! sender of a group to finish drops the group's writers, which closes the
//! fds (or disconnects the channels): that is the receivers' end of file.

use super::endpoint::{self, Msg, Reader, Writer};
use super::gate::GreenGate;
use super::{build_runtime, joined, save_trace, start_trace, stats_lines};
use crate::backend::{BackendKind, HackbenchBackend, HackbenchConfig, HackbenchRun};
use crate::error::BenchError;
use crate::verify::{verify_groups, GroupOutcome, Received};
use crate::workload::Loops;
use eevdf_rt::{JoinHandle, Runtime};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The green hackbench backend.
pub struct GreenHackbench;

impl HackbenchBackend for GreenHackbench {
    fn kind(&self) -> BackendKind {
        BackendKind::Green
    }

    fn run(&self, cfg: &HackbenchConfig) -> Result<HackbenchRun, BenchError> {
        run_fixed(cfg, send_messages)
    }
}

/// A green sender's loop: writes `msg` once to every writer per loop and
/// returns the loops completed. A plain function so tests can substitute
/// a broken one.
pub type GreenSendFn = fn(&[Writer], &Msg, Loops<'_>) -> io::Result<u64>;

/// A fixed `-l` run with the given sender loop, on a runtime of its own.
pub(crate) fn run_fixed(
    cfg: &HackbenchConfig,
    send: GreenSendFn,
) -> Result<HackbenchRun, BenchError> {
    let rt = build_runtime(&cfg.runtime, None)?;
    start_trace(&rt, &cfg.runtime)?;
    let load = Load::start(&rt, cfg, Some(cfg.loops), send)?;
    let start = load.start;
    let before = load.stats_at_go.clone();
    let messages = load.finish()?;
    let elapsed = start.elapsed();
    let mut details = match before {
        Some(b) => stats_lines("from go to the end", &rt.stats().since(&b)),
        None => Vec::new(),
    };
    details.extend(save_trace(&rt, &cfg.runtime)?);
    Ok(HackbenchRun {
        elapsed,
        messages,
        details,
    })
}

/// The real sender: each loop writes `msg` to every writer, then offers
/// the worker to others if a reschedule is pending.
pub fn send_messages(writers: &[Writer], msg: &Msg, loops: Loops<'_>) -> io::Result<u64> {
    let mut done = 0u64;
    loop {
        match loops {
            Loops::Fixed(n) if done == n => break,
            Loops::UntilStopped(stop) if stop.load(Ordering::Relaxed) => break,
            _ => {}
        }
        for w in writers {
            w.send(msg)?;
            eevdf_rt::preempt_point();
        }
        done += 1;
    }
    Ok(done)
}

/// The receiver: reads `buf.len()`-byte messages until end of stream,
/// each read asking for the rest of the current message (as hackbench).
pub fn receive_messages(reader: &mut Reader, buf: &mut [u8]) -> io::Result<Received> {
    let size = buf.len();
    let mut got = Received::default();
    loop {
        let n = reader.read(&mut buf[got.partial_bytes..])?;
        if n == 0 {
            return Ok(got);
        }
        got.add(n, size);
        eevdf_rt::preempt_point();
    }
}

struct Group {
    senders: Vec<JoinHandle<io::Result<u64>>>,
    receivers: Vec<JoinHandle<io::Result<Received>>>,
}

/// A green hackbench whose tasks have been released from the start gate.
pub(crate) struct Load {
    /// When the gate opened.
    pub start: Instant,
    /// The runtime's counters just before the gate opened (with `--stats`).
    pub stats_at_go: Option<eevdf_rt::Stats>,
    stop: Arc<AtomicBool>,
    expected_loops: Option<u64>,
    datasize: usize,
    groups: Vec<Group>,
}

impl Load {
    /// Creates every channel and green thread on `rt`, waits until all of
    /// them are at the gate, then opens it. `loops = None` runs until
    /// [`Load::stop`]. Called from an OS thread (the coordinator).
    pub(crate) fn start(
        rt: &Runtime,
        cfg: &HackbenchConfig,
        loops: Option<u64>,
        send: GreenSendFn,
    ) -> Result<Load, BenchError> {
        let gate = Arc::new(GreenGate::new(cfg.tasks()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut groups: Vec<Group> = Vec::with_capacity(cfg.groups);
        let spawn_err = |e| BenchError::io("spawning a green thread", e);
        let result = (|| {
            for g in 0..cfg.groups {
                let (writers, readers) = endpoint::make(cfg.transport, cfg.fds, cfg.datasize)
                    .map_err(|e| BenchError::io(format!("group {g}: creating channels"), e))?;
                let mut grp = Group {
                    senders: Vec::with_capacity(cfg.fds),
                    receivers: Vec::with_capacity(cfg.fds),
                };
                for mut reader in readers {
                    let gate = Arc::clone(&gate);
                    let mut buf = vec![0u8; cfg.datasize];
                    let h = eevdf_rt::task::Builder::new()
                        .spawn_on(rt, move || {
                            if !gate.arrive() {
                                return Ok(Received::default());
                            }
                            receive_messages(&mut reader, &mut buf)
                        })
                        .map_err(spawn_err)?;
                    grp.receivers.push(h);
                }
                let writers = Arc::new(writers);
                for _ in 0..cfg.fds {
                    let (gate, stop, writers) =
                        (Arc::clone(&gate), Arc::clone(&stop), Arc::clone(&writers));
                    let msg: Msg = vec![0x5au8; cfg.datasize].into();
                    let h = eevdf_rt::task::Builder::new()
                        .spawn_on(rt, move || {
                            if !gate.arrive() {
                                return Ok(0);
                            }
                            let l = match loops {
                                Some(n) => Loops::Fixed(n),
                                None => Loops::UntilStopped(&stop),
                            };
                            send(&writers, &msg, l)
                            // `writers` drops here; the last sender's drop
                            // closes the group's channels: end of file.
                        })
                        .map_err(spawn_err)?;
                    grp.senders.push(h);
                }
                groups.push(grp);
            }
            Ok(())
        })();
        if let Err(e) = result {
            gate.abort();
            for g in groups {
                g.senders.into_iter().for_each(|h| drop(h.join()));
                g.receivers.into_iter().for_each(|h| drop(h.join()));
            }
            return Err(e);
        }
        gate.wait_ready();
        let stats_at_go = cfg.runtime.stats.then(|| rt.stats());
        let start = Instant::now();
        gate.open();
        Ok(Load {
            start,
            stats_at_go,
            stop,
            expected_loops: loops,
            datasize: cfg.datasize,
            groups,
        })
    }

    /// Asks an open-ended load's senders to stop after their current loop.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Joins every green thread and checks every group; returns the
    /// messages verified.
    pub(crate) fn finish(self) -> Result<u64, BenchError> {
        let groups = self
            .groups
            .into_iter()
            .enumerate()
            .map(|(gi, g)| GroupOutcome {
                sent: (g.senders.into_iter().enumerate())
                    .map(|(i, h)| joined(h.join(), || format!("group {gi} sender {i}: write")))
                    .collect(),
                received: (g.receivers.into_iter().enumerate())
                    .map(|(i, h)| joined(h.join(), || format!("group {gi} receiver {i}: read")))
                    .collect(),
            })
            .collect();
        verify_groups(groups, self.datasize, self.expected_loops)
    }
}
