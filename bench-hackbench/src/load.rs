//! The hackbench load, written once for every backend whose tasks block
//! (`threads`, `green`).
//!
//! Owns: the run's skeleton: per group, make the channels, start one
//! receiver task per channel and `-f` sender tasks sharing the group's
//! writers, hold them all at a [`Gate`], release them ([`Ready::go`]), stop
//! an open-ended load ([`Load::stop`]), join every task and check the
//! counts ([`Load::finish`]). A backend supplies only [`HackbenchTasks`]:
//! how to start a task and what its channel ends are. Must not: build a
//! runtime, read runtime counters, or allocate per message (the loops are
//! `workload`'s).
//!
//! The last sender of a group to finish drops the group's writers, which
//! closes the fds (or disconnects the channels): that is the receivers'
//! end of file.

use crate::backend::HackbenchConfig;
use crate::error::BenchError;
use crate::gate::Gate;
use crate::tasks::{joined, start_all, Tasks};
use crate::verify::{verify_groups, GroupOutcome, Received};
use crate::workload::{receive_messages, Loops, SendFn, Sink, Source};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One group's channel ends: the writers and the readers, in the same order.
pub type Ends<W, R> = (Vec<W>, Vec<R>);

/// A blocking backend's tasks and channel ends.
pub trait HackbenchTasks: Tasks {
    /// The end a group's senders share, one per receiver.
    type Writer: Sink + Send + Sync + 'static;
    /// The end one receiver reads.
    type Reader: Source + Send + 'static;

    /// Makes one group's `cfg.fds` channels: writers and readers in the
    /// same order. Called from the coordinator's OS thread.
    fn channels(&self, cfg: &HackbenchConfig) -> io::Result<Ends<Self::Writer, Self::Reader>>;
}

/// The message a sender sends on `B`'s writers.
type MsgOf<B> = <<B as HackbenchTasks>::Writer as Sink>::Msg;

struct Group<B: HackbenchTasks> {
    senders: Vec<B::Handle<io::Result<u64>>>,
    receivers: Vec<B::Handle<io::Result<Received>>>,
}

/// A hackbench whose tasks all wait at the start gate.
pub struct Ready<B: HackbenchTasks> {
    gate: Arc<Gate>,
    /// `Some` until [`Ready::go`] hands it out.
    load: Option<Load<B>>,
}

/// A hackbench whose tasks have been released.
pub struct Load<B: HackbenchTasks> {
    /// When the gate opened.
    pub start: Instant,
    stop: Arc<AtomicBool>,
    expected_loops: Option<u64>,
    datasize: usize,
    groups: Vec<Group<B>>,
}

impl<B: HackbenchTasks> Load<B> {
    /// Creates every channel and task of `cfg` with `tasks`, and returns
    /// once all of them wait at the gate. Senders run `send` (tests pass
    /// broken ones); `loops = None` runs until [`Load::stop`]. Called from
    /// an OS thread (the coordinator). On an error every task already
    /// started is released with "aborted" and joined.
    pub fn start(
        tasks: &B,
        cfg: &HackbenchConfig,
        loops: Option<u64>,
        send: SendFn<B::Writer>,
    ) -> Result<Ready<B>, BenchError> {
        let gate = Arc::new(Gate::new(cfg.tasks()));
        let mut load = Load {
            start: Instant::now(),
            stop: Arc::new(AtomicBool::new(false)),
            expected_loops: loops,
            datasize: cfg.datasize,
            groups: Vec::with_capacity(cfg.groups),
        };
        for g in 0..cfg.groups {
            if let Err(e) = load.start_group(tasks, cfg, &gate, send) {
                gate.abort();
                for group in load.groups {
                    group.senders.into_iter().for_each(|h| drop(B::join(h)));
                    group.receivers.into_iter().for_each(|h| drop(B::join(h)));
                }
                return Err(match e {
                    BenchError::Io { context, source } => {
                        BenchError::io(format!("group {g}: {context}"), source)
                    }
                    e => e,
                });
            }
        }
        gate.wait_ready();
        Ok(Ready {
            gate,
            load: Some(load),
        })
    }

    /// Starts one group's receivers, then its senders, and adds the group
    /// as soon as its receivers run (so an error joins them too).
    fn start_group(
        &mut self,
        tasks: &B,
        cfg: &HackbenchConfig,
        gate: &Arc<Gate>,
        send: SendFn<B::Writer>,
    ) -> Result<(), BenchError> {
        let (writers, readers) = tasks
            .channels(cfg)
            .map_err(|e| BenchError::io("creating channels", e))?;
        let receivers = start_all::<B, _, _>(gate, readers, |mut reader| {
            let gate = Arc::clone(gate);
            let mut buf = vec![0u8; cfg.datasize];
            tasks.spawn(None, move || {
                if !gate.arrive() {
                    return Ok(Received::default());
                }
                receive_messages(&mut reader, &mut buf)
            })
        })?;
        self.groups.push(Group {
            senders: Vec::new(),
            receivers,
        });
        let writers = Arc::new(writers);
        let (loops, stop) = (self.expected_loops, &self.stop);
        let senders = start_all::<B, _, _>(gate, 0..cfg.fds, |_| {
            let (gate, stop, writers) = (Arc::clone(gate), Arc::clone(stop), Arc::clone(&writers));
            let msg = MsgOf::<B>::from(&vec![0x5au8; cfg.datasize][..]);
            tasks.spawn(None, move || {
                if !gate.arrive() {
                    return Ok(0);
                }
                send(&writers, &msg, Loops::new(loops, &stop))
                // `writers` drops here; the last sender's drop closes the
                // group's channels: end of file.
            })
        })?;
        if let Some(group) = self.groups.last_mut() {
            group.senders = senders;
        }
        Ok(())
    }

    /// Asks an open-ended load's senders to stop after their current loop.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Joins every task and checks every group; returns the messages verified.
    pub fn finish(self) -> Result<u64, BenchError> {
        let groups = self
            .groups
            .into_iter()
            .enumerate()
            .map(|(gi, g)| GroupOutcome {
                sent: (g.senders.into_iter().enumerate())
                    .map(|(i, h)| joined(B::join(h), || format!("group {gi} sender {i}: write")))
                    .collect(),
                received: (g.receivers.into_iter().enumerate())
                    .map(|(i, h)| joined(B::join(h), || format!("group {gi} receiver {i}: read")))
                    .collect(),
            })
            .collect();
        verify_groups(groups, self.datasize, self.expected_loops)
    }
}

impl<B: HackbenchTasks> Ready<B> {
    /// Stamps the start time and opens the gate.
    pub fn go(mut self) -> Load<B> {
        let mut load = self.load.take().expect("a Ready is opened once");
        load.start = Instant::now();
        self.gate.open();
        load
    }
}

impl<B: HackbenchTasks> Drop for Ready<B> {
    /// A `Ready` dropped without [`Ready::go`] releases its tasks with
    /// "aborted" (a no-op after `go`), so they end instead of waiting forever.
    fn drop(&mut self) {
        self.gate.abort();
    }
}
