//! The cyclictest-style probe: its deadline schedule and its statistics.
//!
//! Owns: [`Schedule`] (absolute deadlines every interval, with the rule for
//! missed periods), [`ProbeRecorder`] (lateness histogram, exact min / max /
//! mean, cycle and overrun counts) and [`ProbeResult`], what a report prints
//! per probe, and [`nanos`], the one conversion of a `Duration` to the
//! nanoseconds these work in. Must not: sleep, read a clock, spawn or set
//! priorities; `probes` (threads, green) and the tokio backend do that with
//! their own primitives and feed the times in here, so all backends measure
//! lateness the same way.

use bench_common::hist::{self, Histogram};
use std::time::Duration;

/// `d` in nanoseconds, saturating at `u64::MAX` (584 years).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Absolute deadlines `base + k * interval`, `k = 1, 2, ...`, up to `base + duration`.
///
/// Times are nanoseconds after the probe's `base` instant. If a wake-up is so
/// late that the following deadline has already passed, the missed
/// deadlines are skipped (counted as overruns, not measured), as cyclictest
/// does: a probe measures how late each *wake-up* is, not a backlog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    interval_ns: u64,
    next_ns: u64,
    end_ns: u64,
}

impl Schedule {
    /// A schedule of period `interval_ns` for `duration_ns` (both > 0).
    pub fn new(interval_ns: u64, duration_ns: u64) -> Self {
        let interval_ns = interval_ns.max(1);
        Schedule {
            interval_ns,
            next_ns: interval_ns,
            end_ns: duration_ns,
        }
    }

    /// The next deadline, or `None` once the duration is over.
    pub fn next_deadline(&self) -> Option<u64> {
        (self.next_ns <= self.end_ns).then_some(self.next_ns)
    }

    /// Moves past the current deadline given the wake-up time `now_ns`;
    /// returns how many later deadlines were skipped because they had
    /// already passed.
    pub fn advance(&mut self, now_ns: u64) -> u64 {
        self.next_ns += self.interval_ns;
        if self.next_ns > now_ns {
            return 0;
        }
        let first_missed = self.next_ns;
        let missed = (now_ns - first_missed) / self.interval_ns + 1;
        self.next_ns += missed * self.interval_ns;
        // Deadlines after the end of the run were never due: not overruns.
        if first_missed > self.end_ns {
            0
        } else {
            missed.min((self.end_ns - first_missed) / self.interval_ns + 1)
        }
    }
}

/// Collects one probe's lateness samples (nanoseconds).
#[derive(Debug)]
pub struct ProbeRecorder {
    hist: Histogram<u64>,
    sum_ns: u128,
    min_ns: u64,
    max_ns: u64,
    overruns: u64,
}

impl Default for ProbeRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl ProbeRecorder {
    /// An empty recorder (`bench_common::hist`: 1 ns to 100 s, 3
    /// significant digits; the exact extremes are kept beside it).
    pub fn new() -> Self {
        ProbeRecorder {
            hist: hist::new(),
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            overruns: 0,
        }
    }

    /// Records one wake-up that came `lateness_ns` after its deadline.
    pub fn record(&mut self, lateness_ns: u64) {
        hist::record(&mut self.hist, std::time::Duration::from_nanos(lateness_ns));
        self.sum_ns += u128::from(lateness_ns);
        self.min_ns = self.min_ns.min(lateness_ns);
        self.max_ns = self.max_ns.max(lateness_ns);
    }

    /// Counts deadlines skipped because a wake-up came after them.
    pub fn add_overruns(&mut self, missed: u64) {
        self.overruns += missed;
    }

    /// The result for a probe that asked for `nice`.
    pub fn finish(self, nice: i32, priority: Priority) -> ProbeResult {
        let cycles = self.hist.len();
        let (min_ns, avg_ns, p50_ns, p99_ns) = if cycles == 0 {
            (0, 0, 0, 0)
        } else {
            (
                self.min_ns,
                (self.sum_ns / u128::from(cycles)) as u64,
                // The histogram reports a bucket's upper edge; keep it
                // inside the exact extremes.
                self.hist
                    .value_at_quantile(0.50)
                    .clamp(self.min_ns, self.max_ns),
                self.hist
                    .value_at_quantile(0.99)
                    .clamp(self.min_ns, self.max_ns),
            )
        };
        ProbeResult {
            nice,
            priority,
            cycles,
            overruns: self.overruns,
            min_ns,
            avg_ns,
            p50_ns,
            p99_ns,
            max_ns: self.max_ns,
        }
    }
}

/// Whether a probe's requested priority took effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Priority {
    /// The nice level is in force.
    Applied,
    /// Setting it failed (e.g. `EPERM` for a negative nice without
    /// privileges); the probe ran at the inherited priority.
    Failed(String),
    /// The backend has no priorities at all (tokio).
    Unsupported,
}

/// One probe's figures. Percentiles come from the histogram (3 significant
/// digits); min, max and the mean are exact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeResult {
    /// The nice level the probe asked for.
    pub nice: i32,
    /// Whether it got it.
    pub priority: Priority,
    /// Wake-ups measured.
    pub cycles: u64,
    /// Deadlines skipped after late wake-ups.
    pub overruns: u64,
    /// Smallest lateness, ns.
    pub min_ns: u64,
    /// Mean lateness, ns.
    pub avg_ns: u64,
    /// Median lateness, ns.
    pub p50_ns: u64,
    /// 99th percentile lateness, ns.
    pub p99_ns: u64,
    /// Largest lateness, ns.
    pub max_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_counts_deadlines_and_skips_missed_ones() {
        let mut s = Schedule::new(1_000, 5_000);
        let mut seen = Vec::new();
        while let Some(d) = s.next_deadline() {
            seen.push(d);
            // wake 10 ns late, except the second wake-up is 2.5 periods late
            let now = if d == 2_000 { 4_500 } else { d + 10 };
            s.advance(now);
        }
        assert_eq!(seen, vec![1_000, 2_000, 5_000]);
        let mut s = Schedule::new(1_000, 10_000);
        s.next_deadline();
        assert_eq!(s.advance(1_010), 0);
        assert_eq!(s.advance(4_500), 2); // deadlines 3000 and 4000 skipped
        assert_eq!(s.next_deadline(), Some(5_000));
        // Deadlines past the end are not counted as missed.
        assert_eq!(s.advance(50_000), 5);
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn recorder_reports_exact_extremes_and_percentiles() {
        let mut r = ProbeRecorder::new();
        for v in 1..=100u64 {
            r.record(v * 1_000);
        }
        r.add_overruns(3);
        let p = r.finish(-19, Priority::Applied);
        assert_eq!(p.cycles, 100);
        assert_eq!(p.overruns, 3);
        assert_eq!(p.min_ns, 1_000);
        assert_eq!(p.max_ns, 100_000);
        assert_eq!(p.avg_ns, 50_500);
        assert!((49_900..=50_100).contains(&p.p50_ns), "{}", p.p50_ns);
        assert!((98_900..=99_100).contains(&p.p99_ns), "{}", p.p99_ns);
        let empty = ProbeRecorder::new().finish(0, Priority::Unsupported);
        assert_eq!(empty.cycles, 0);
        assert_eq!(empty.max_ns, 0);
    }
}
