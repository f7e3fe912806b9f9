//! Scheduler statistics (schedstat-like counters).
//!
//! Owns: the per-worker counters, their snapshot types ([`Stats`],
//! [`WorkerStats`]) and the table `Display` prints. Counters live on the
//! worker they describe and are written only by that worker's own OS thread
//! (its scheduler or the green thread it runs), so an increment is a plain
//! relaxed load and store — no shared cache line, no locked instruction on
//! the hot path. Events caused by threads outside the runtime go to one
//! shared "external" row with atomic adds. The policy's own decision
//! counters are read from each run queue at snapshot time. Must not: make
//! decisions.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident, )*) => {
        /// One worker's counters (or the sum over workers), a snapshot.
        ///
        /// ```
        /// let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
        /// rt.block_on(|| eevdf_rt::yield_now());
        /// let s = rt.stats();
        /// assert!(s.total().picks >= 1);
        /// println!("{s}");
        /// ```
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct WorkerStats {
            $( $(#[$doc])* pub $name: u64, )*
        }

        impl WorkerStats {
            /// Field names and values, in declaration order.
            pub fn fields(&self) -> Vec<(&'static str, u64)> {
                vec![ $( (stringify!($name), self.$name), )* ]
            }

            /// Adds `other` field by field (saturating at `u64::MAX`).
            pub fn add(&mut self, other: &WorkerStats) {
                $( self.$name = self.$name.saturating_add(other.$name); )*
            }

            /// `self − earlier`, field by field (saturating), for measuring an interval.
            pub fn since(&self, earlier: &WorkerStats) -> WorkerStats {
                WorkerStats { $( $name: self.$name.saturating_sub(earlier.$name), )* }
            }
        }

        /// Which counter to bump.
        #[derive(Clone, Copy, Debug)]
        #[allow(non_camel_case_types)]
        #[repr(usize)]
        pub(crate) enum Counter { $( $name, )* }

        const NR_COUNTERS: usize = [ $( stringify!($name), )* ].len();

        impl Counters {
            /// Snapshot (relaxed reads).
            pub(crate) fn snapshot(&self) -> WorkerStats {
                WorkerStats { $( $name: self.c[Counter::$name as usize].load(Ordering::Relaxed), )* }
            }
        }
    };
}

counters! {
    /// Switches to a different green thread than the one that ran before (`nr_switches`).
    context_switches,
    /// Picks that chose a task to run (including the same one again).
    picks,
    /// Wakeups done by this worker into its own run queue.
    wakeups_local,
    /// Wakeups this worker (or the external row) sent through another worker's wakelist.
    wakeups_remote_queued,
    /// Wakeups this worker did inline under another worker's run-queue lock.
    wakeups_remote_inline,
    /// Wake syscalls made to parked workers.
    kicks,
    /// Tasks this worker pulled from another worker while idle (newidle balance).
    steals,
    /// Tasks that changed worker at a wakeup or a steal, counted by the worker that moved them.
    migrations,
    /// Blocks that stayed queued as delayed (DELAY_DEQUEUE).
    delayed_dequeues,
    /// Wakeups of delayed tasks (un-delayed in place).
    delayed_wakeups,
    /// Delayed tasks whose dequeue was completed when picked.
    delayed_finished_at_pick,
    /// Involuntary switches: a preemption point gave the worker to another task.
    preemptions,
    /// Preemptions that followed a tick (slice or protection end, TICK_ELIGIBLE).
    tick_preemptions,
    /// Wakeups whose preemption check asked the running task to reschedule.
    wakeup_preemptions,
    /// `yield_now` calls.
    yields,
    /// Times this worker parked on its futex.
    parks,
    /// Idle-worker probes made by wake and spawn placement.
    idle_probes,
    /// Green threads spawned onto the spawner's own worker.
    spawned_local,
    /// Green threads spawned onto another worker (or from outside the runtime).
    spawned_remote,
    /// Expired timers that woke a task.
    timers_fired,
    /// Reschedules requested because a slice expired (policy).
    resched_slice,
    /// Reschedules requested because slice protection ended (policy).
    resched_protection,
    /// Reschedules requested because the running task became ineligible (TICK_ELIGIBLE).
    resched_ineligible,
    /// Shortest-slice wakeups that only shortened the running task's protection (policy).
    protection_shortened,
    /// Times this worker was taken from an OS thread stuck in one green thread
    /// and given to a standby thread (hand-off; counted by the monitor).
    handoffs,
    /// `io_uring_enter` calls of this worker's ring (the io_uring I/O driver).
    io_uring_enters,
    /// I/O operations completed through this worker's ring.
    io_uring_completions,
    /// Stream operations that went straight to the ring without trying the
    /// nonblocking call first, because the descriptor's recent calls kept
    /// finding nothing to do (the io_uring driver's try-first rule).
    io_tries_skipped,
}

/// Live counters of one worker (or the external row).
pub(crate) struct Counters {
    c: [AtomicU64; NR_COUNTERS],
}

impl Counters {
    pub(crate) fn new() -> Self {
        Counters {
            c: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Increments by the single writer (the owning worker's OS thread).
    #[inline]
    pub(crate) fn inc(&self, which: Counter) {
        self.add(which, 1)
    }

    /// Adds `n` by the single writer.
    #[inline]
    pub(crate) fn add(&self, which: Counter, n: u64) {
        let c = &self.c[which as usize];
        c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    /// Increments from any thread (the external row).
    #[inline]
    pub(crate) fn inc_shared(&self, which: Counter) {
        self.c[which as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// A snapshot of every worker's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// One entry per worker, by index.
    pub workers: Vec<WorkerStats>,
    /// Events caused by threads outside the runtime (wakeups and spawns from OS threads).
    pub external: WorkerStats,
}

impl Stats {
    /// The sum over all workers and the external row.
    pub fn total(&self) -> WorkerStats {
        let mut t = self.external;
        for w in &self.workers {
            t.add(w);
        }
        t
    }

    /// `self − earlier`, per worker (for measuring an interval).
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            workers: self
                .workers
                .iter()
                .zip(
                    earlier
                        .workers
                        .iter()
                        .chain(std::iter::repeat(&WorkerStats::default())),
                )
                .map(|(a, b)| a.since(b))
                .collect(),
            external: self.external.since(&earlier.external),
        }
    }
}

impl fmt::Display for Stats {
    /// One row per counter, one column per worker, then `ext` and `total`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total();
        let rows = total.fields();
        let name_w = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        let mut cols: Vec<(String, Vec<(&'static str, u64)>)> = self
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| (format!("w{i}"), w.fields()))
            .collect();
        cols.push(("ext".into(), self.external.fields()));
        cols.push(("total".into(), rows.clone()));
        let col_w: Vec<usize> = cols
            .iter()
            .map(|(h, v)| {
                v.iter()
                    .map(|(_, x)| x.to_string().len())
                    .max()
                    .unwrap_or(0)
                    .max(h.len())
            })
            .collect();
        write!(f, "{:name_w$}", "counter")?;
        for ((h, _), w) in cols.iter().zip(&col_w) {
            write!(f, "  {h:>w$}")?;
        }
        writeln!(f)?;
        for (r, (name, _)) in rows.iter().enumerate() {
            write!(f, "{name:name_w$}")?;
            for ((_, v), w) in cols.iter().zip(&col_w) {
                write!(f, "  {:>w$}", v[r].1)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_table() {
        let c = Counters::new();
        c.inc(Counter::kicks);
        c.add(Counter::picks, 5);
        c.inc_shared(Counter::kicks);
        let s = c.snapshot();
        assert_eq!(s.kicks, 2);
        assert_eq!(s.picks, 5);
        let stats = Stats {
            workers: vec![s, s],
            external: WorkerStats::default(),
        };
        assert_eq!(stats.total().picks, 10);
        let table = stats.to_string();
        assert!(table.contains("kicks") && table.contains("total") && table.contains("w1"));
        assert_eq!(stats.since(&stats).total(), WorkerStats::default());
    }
}
