//! Per-worker measurements: wakeup and request latency histograms and the request
//! count, written by each worker alone and read by the driver.
//!
//! This module owns how samples are recorded (µs, truncated: every request gives one
//! wakeup and one request sample, a sub-µs one as 0 µs) and how statistics are zeroed
//! (`-w`, `-z`) without a second writer. It must not read clocks, print, or know any
//! backend.
//!
//! Sub-µs samples: the original reads `gettimeofday` (µs) and skips a delta of 0, which
//! only happens when both reads fall in the same µs tick. This port subtracts ns clock
//! reads, so skipping `delta / 1000 == 0` would drop *every* sub-µs wakeup: tokio's
//! hand-off to a task on the same runtime thread (about 100 ns) would leave no wakeup
//! samples at all, and any backend's fastest wakeups would vanish from its
//! percentiles. So they are counted, in the 0 µs bucket.
//!
//! Zeroing is lazy: the driver bumps a generation number; each worker compares it with
//! the one it last saw before recording, and clears its own histograms when it changed.
//! So every histogram keeps a single writer, and no sample that ends after the zero
//! point is lost. A worker that has recorded nothing since the zero still holds the
//! samples from before it, so a snapshot leaves out every worker whose last seen
//! generation is older than the board's. The request counts are never cleared: the
//! driver differences them.

use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use crate::hist::{AtomicHistogram, Histogram};

/// One worker's measurements. Aligned so that workers do not share cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WorkerStats {
    wakeup: AtomicHistogram,
    request: AtomicHistogram,
    requests: AtomicU64,
    /// The generation the histograms belong to: stored (Release) after the
    /// worker cleared them for it.
    seen: AtomicU64,
}

/// The measurements of all workers of one run, indexed by worker id.
#[derive(Debug)]
pub struct StatsBoard {
    workers: Box<[WorkerStats]>,
    generation: AtomicU64,
}

/// Merged latency histograms of all workers at one moment.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Wakeup latencies (µs).
    pub wakeup: Histogram,
    /// Request latencies (µs).
    pub request: Histogram,
}

impl StatsBoard {
    /// A board for `workers` workers.
    pub fn new(workers: usize) -> Self {
        StatsBoard {
            workers: (0..workers).map(|_| WorkerStats::default()).collect(),
            generation: AtomicU64::new(0),
        }
    }

    /// The recording handle of worker `id`; hand it to that worker only.
    pub fn recorder(&self, id: usize) -> Recorder<'_> {
        let stats = &self.workers[id];
        let generation = self.generation.load(Relaxed);
        stats.seen.store(generation, Release);
        Recorder {
            stats,
            board: self,
            generation,
        }
    }

    /// Asks every worker to clear its histograms before its next sample.
    pub fn zero(&self) {
        // Relaxed: the generation publishes no other data; a worker that sees the
        // bump late only keeps a few samples that ended around the zero point.
        self.generation.fetch_add(1, Relaxed);
    }

    /// Requests completed by all workers so far (never reset).
    pub fn requests(&self) -> u64 {
        self.workers.iter().map(|w| w.requests.load(Relaxed)).sum()
    }

    /// Merges the histograms of every worker that has recorded since the last zero
    /// (the others hold only samples from before it).
    pub fn snapshot(&self) -> Snapshot {
        let generation = self.generation.load(Relaxed);
        let mut snap = Snapshot::default();
        // Acquire: a worker seen at this generation cleared its histograms before.
        for w in self
            .workers
            .iter()
            .filter(|w| w.seen.load(Acquire) == generation)
        {
            w.wakeup.add_to(&mut snap.wakeup);
            w.request.add_to(&mut snap.request);
        }
        snap
    }
}

/// A worker's handle for recording its own samples.
#[derive(Debug)]
pub struct Recorder<'a> {
    stats: &'a WorkerStats,
    board: &'a StatsBoard,
    generation: u64,
}

impl Recorder<'_> {
    /// Records one request: its wakeup and request latencies in nanoseconds (as whole
    /// µs, truncated; under 1 µs counts as 0 µs) and one more completed request.
    #[inline]
    pub fn record(&mut self, wakeup_ns: u64, request_ns: u64) {
        let generation = self.board.generation.load(Relaxed);
        if generation != self.generation {
            self.generation = generation;
            self.stats.wakeup.clear();
            self.stats.request.clear();
            self.stats.seen.store(generation, Release);
        }
        self.stats.wakeup.record(wakeup_ns / 1000);
        self.stats.request.record(request_ns / 1000);
        // Single writer: a load and a store, no locked instruction.
        let requests = &self.stats.requests;
        requests.store(requests.load(Relaxed) + 1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_microseconds_and_keeps_sub_microsecond_samples() {
        let board = StatsBoard::new(2);
        let mut r = board.recorder(1);
        r.record(999, 1000); // wakeup under 1 µs: a 0 µs sample; request 1 µs
        r.record(100, 0); // a same-thread hand-off (tokio): still a sample
        r.record(20_500, 185_000);
        let snap = board.snapshot();
        assert_eq!((snap.wakeup.total(), snap.request.total()), (3, 3));
        assert_eq!((snap.wakeup.min(), snap.wakeup.max()), (0, 20));
        assert_eq!((snap.request.min(), snap.request.max()), (0, 185));
        assert_eq!(snap.wakeup.percentiles(&[50.0])[0].value, 0);
        assert_eq!(board.requests(), 3);
    }

    #[test]
    fn zero_is_applied_by_the_worker_before_its_next_sample() {
        let board = StatsBoard::new(1);
        let mut r = board.recorder(0);
        r.record(5_000, 5_000);
        board.zero();
        assert_eq!(
            board.snapshot().wakeup.total(),
            0,
            "a worker that has not recorded since the zero shows nothing"
        );
        r.record(7_000, 7_000);
        let snap = board.snapshot();
        assert_eq!((snap.wakeup.total(), snap.wakeup.min()), (1, 7));
        assert_eq!(board.requests(), 2, "request counts are never cleared");
    }

    #[test]
    fn a_worker_idle_since_the_zero_shows_no_old_samples() {
        let board = StatsBoard::new(2);
        let (mut a, mut b) = (board.recorder(0), board.recorder(1));
        a.record(1_000, 2_500_000_000);
        b.record(1_000, 2_500_000_000);
        board.zero();
        b.record(3_000, 4_000);
        let snap = board.snapshot();
        assert_eq!(snap.request.total(), 1, "worker 0's warmup sample leaked");
        assert_eq!(snap.request.max(), 4);
    }
}
