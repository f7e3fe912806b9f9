//! Request pacing: the fixed-rate schedule of `-R` that message threads follow, and
//! the once-a-second controller of `-A` that moves the rate toward a CPU busy target.
//!
//! This module owns the arithmetic of "how many requests are due now" and the reading
//! of `/proc/stat`. It must not wake or wait: message loops ask it how many workers to
//! wake and how long to wait, the driver asks it for the next rate.
//!
//! Schedule: the rate is that of all message threads together: request `k` (1, 2, …)
//! falls due `k / rate` seconds after the schedule's base, and the requests are dealt
//! round robin, so message thread `i` of `n` owns requests `i + 1`, `i + 1 + n`, ….
//! With `D = ⌊(now − base) · rate⌋` requests due in all, thread `i` owes
//! `backlog + ⌈(D − i) / n⌉ − issued` (0 while `D ≤ i`). The shares add up to `D`
//! exactly, so a rate below `n` (`-R 1 -m 2`, or `-A` steering low) still issues its
//! requests, the threads taking turns, instead of leaving some threads a share of 0.
//! When the rate changes, what is owed so far becomes the backlog and the schedule
//! restarts at `now`, so no request is forgotten or invented by a rate change.
//! Requests that find no free worker stay owed (open loop: a slow system sees a burst
//! when workers return, as a real fixed-rate load would give it).

use crate::cpus::CpuSet;

const NS_PER_S: u128 = 1_000_000_000;

/// One message thread's share of the fixed-rate schedule.
#[derive(Clone, Debug)]
pub struct Pacer {
    rate: u64,
    index: u64,
    threads: u64,
    base_ns: u64,
    backlog: u64,
    issued: u64,
}

impl Pacer {
    /// A schedule of `rate` requests/s starting at `now_ns`, all of it this thread's.
    pub fn new(rate: u64, now_ns: u64) -> Self {
        Pacer {
            rate,
            index: 0,
            threads: 1,
            base_ns: now_ns,
            backlog: 0,
            issued: 0,
        }
    }

    /// Message thread `index`'s share of a schedule that `threads` message threads
    /// issue together (every `threads`-th request, from request `index + 1`).
    ///
    /// # Panics
    /// If `index >= threads`.
    pub fn share(mut self, index: usize, threads: usize) -> Self {
        assert!(index < threads, "message thread {index} of {threads}");
        (self.index, self.threads) = (index as u64, threads as u64);
        self
    }

    /// Switches to `rate` from `now_ns` on, keeping what is owed.
    pub fn retarget(&mut self, rate: u64, now_ns: u64) {
        if rate != self.rate {
            self.backlog = self.due(now_ns);
            self.rate = rate;
            self.base_ns = now_ns;
            self.issued = 0;
        }
    }

    /// Requests owed at `now_ns`.
    pub fn due(&self, now_ns: u64) -> u64 {
        let elapsed = u128::from(now_ns.saturating_sub(self.base_ns));
        let all = elapsed * u128::from(self.rate) / NS_PER_S;
        let mine = all
            .saturating_sub(u128::from(self.index))
            .div_ceil(u128::from(self.threads));
        let scheduled = mine.min(u128::from(u64::MAX)) as u64;
        self.backlog
            .saturating_add(scheduled)
            .saturating_sub(self.issued)
    }

    /// Records `n` requests handed to workers.
    pub fn issued(&mut self, n: u64) {
        self.issued = self.issued.saturating_add(n);
    }

    /// Nanoseconds from `now_ns` until the next request falls due: `Some(0)` if one is
    /// owed already, `None` at rate 0.
    pub fn wait_ns(&self, now_ns: u64) -> Option<u64> {
        if self.due(now_ns) > 0 {
            return Some(0);
        }
        if self.rate == 0 {
            return None;
        }
        // This thread's next request is its c-th, c = issued − backlog + 1: request
        // k = (c − 1)·threads + index + 1 of the whole schedule, due at the smallest
        // elapsed time e with ⌊e · rate / 1 s⌋ ≥ k.
        let c = u128::from(self.issued.saturating_sub(self.backlog)) + 1;
        let k = (c - 1) * u128::from(self.threads) + u128::from(self.index) + 1;
        let at = (k * NS_PER_S).div_ceil(u128::from(self.rate));
        let at_ns = u128::from(self.base_ns) + at;
        Some((at_ns.saturating_sub(u128::from(now_ns))).min(u128::from(u64::MAX)) as u64)
    }
}

/// Busy and total jiffies of a set of CPUs, from `/proc/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CpuTimes {
    busy: u64,
    total: u64,
}

/// Parses `/proc/stat` text: sums the per-CPU lines of `cpus`, or takes the aggregate
/// `cpu` line when `cpus` is `None`. Idle is `idle + iowait`; guest time is already in
/// `user`, so only the first eight fields count.
fn parse_proc_stat(text: &str, cpus: Option<&CpuSet>) -> Option<CpuTimes> {
    let mut times = CpuTimes { busy: 0, total: 0 };
    let mut found = false;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(name) = fields.next() else { continue };
        let Some(id) = name.strip_prefix("cpu") else {
            continue;
        };
        let wanted = match cpus {
            None => id.is_empty(),
            Some(set) => id.parse::<usize>().is_ok_and(|c| set.contains(c)),
        };
        if !wanted {
            continue;
        }
        let values: Vec<u64> = fields.take(8).map(|f| f.parse().unwrap_or(0)).collect();
        let total: u64 = values.iter().sum();
        let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
        times.busy += total - idle;
        times.total += total;
        found = true;
    }
    found.then_some(times)
}

/// The `-A` controller.
#[derive(Debug)]
pub struct AutoRps {
    target_pct: u32,
    cpus: Option<CpuSet>,
    last: Option<CpuTimes>,
}

impl AutoRps {
    /// A controller aiming at `target_pct` % busy on `cpus` (all CPUs when `None`).
    pub fn new(target_pct: u32, cpus: Option<CpuSet>) -> Self {
        let last = Self::read(cpus.as_ref());
        AutoRps {
            target_pct,
            cpus,
            last,
        }
    }

    fn read(cpus: Option<&CpuSet>) -> Option<CpuTimes> {
        parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?, cpus)
    }

    /// Called once a second with the current rate; returns the next one.
    pub fn step(&mut self, rate: u64) -> u64 {
        let now = Self::read(self.cpus.as_ref());
        let next = match (self.last, now) {
            (Some(a), Some(b)) if b.total > a.total => {
                let busy_pct = 100.0 * (b.busy - a.busy) as f64 / (b.total - a.total) as f64;
                next_rate(rate, self.target_pct, busy_pct)
            }
            _ => rate,
        };
        self.last = now;
        next
    }
}

/// Scales `rate` by `target / busy`, at most halving or doubling per step.
fn next_rate(rate: u64, target_pct: u32, busy_pct: f64) -> u64 {
    let factor = (f64::from(target_pct) / busy_pct.max(1.0)).clamp(0.5, 2.0);
    ((rate as f64 * factor).round() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn schedule_owes_rate_times_elapsed() {
        let mut p = Pacer::new(1000, 5 * MS);
        assert_eq!(p.due(5 * MS), 0);
        assert_eq!(p.wait_ns(5 * MS), Some(MS));
        assert_eq!(p.due(15 * MS), 10);
        p.issued(4);
        assert_eq!(p.due(15 * MS), 6);
        assert_eq!(p.wait_ns(15 * MS), Some(0));
        p.issued(6);
        assert_eq!(p.wait_ns(15 * MS), Some(MS));
        assert_eq!(p.wait_ns(15 * MS + MS / 2), Some(MS / 2));
    }

    #[test]
    fn retarget_keeps_the_backlog() {
        let mut p = Pacer::new(1000, 0);
        p.issued(3);
        p.retarget(2000, 10 * MS); // 7 owed
        assert_eq!(p.due(10 * MS), 7);
        assert_eq!(p.due(11 * MS), 9);
        p.issued(9);
        assert_eq!(p.wait_ns(11 * MS), Some(MS / 2));
        assert_eq!(Pacer::new(0, 0).wait_ns(MS), None);
    }

    #[test]
    fn shares_add_up_and_take_turns_below_one_per_thread() {
        // -R 1 -m 2: one request a second in all, the two threads taking turns.
        let (a, b) = (Pacer::new(1, 0).share(0, 2), Pacer::new(1, 0).share(1, 2));
        let s = 1000 * MS;
        assert_eq!((a.due(s - 1), b.due(s - 1)), (0, 0));
        assert_eq!((a.due(s), b.due(s)), (1, 0));
        assert_eq!((a.due(2 * s), b.due(2 * s)), (1, 1));
        assert_eq!((a.due(3 * s), b.due(3 * s)), (2, 1));
        assert_eq!((a.wait_ns(0), b.wait_ns(0)), (Some(s), Some(2 * s)));
        let mut b2 = b.clone();
        b2.issued(1);
        assert_eq!(
            b2.wait_ns(2 * s),
            Some(2 * s),
            "its next is request 4, at 4 s"
        );
        // Any rate, any split: the shares add up to the whole schedule.
        for (rate, n) in [(7u64, 3usize), (1000, 7), (5, 64), (1, 1)] {
            for t in [0, 1, 333 * MS, 1000 * MS, 12_345 * MS] {
                let sum: u64 = (0..n).map(|i| Pacer::new(rate, 0).share(i, n).due(t)).sum();
                assert_eq!(
                    sum,
                    Pacer::new(rate, 0).due(t),
                    "rate {rate}, {n} threads, {t} ns"
                );
            }
        }
    }

    #[test]
    fn proc_stat_parsing() {
        let text = "cpu  100 0 50 800 50 0 0 0 7 0\n\
                    cpu0 60 0 20 400 20 0 0 0 7 0\n\
                    cpu1 40 0 30 400 30 0 0 0 0 0\n\
                    intr 1 2 3\n";
        assert_eq!(
            parse_proc_stat(text, None),
            Some(CpuTimes {
                busy: 150,
                total: 1000
            })
        );
        let one = CpuSet::from_cpus([1]);
        assert_eq!(
            parse_proc_stat(text, Some(&one)),
            Some(CpuTimes {
                busy: 70,
                total: 500
            })
        );
        assert_eq!(parse_proc_stat(text, Some(&CpuSet::from_cpus([5]))), None);
    }

    #[test]
    fn controller_moves_toward_target() {
        assert_eq!(next_rate(1000, 50, 25.0), 2000);
        assert_eq!(next_rate(1000, 50, 100.0), 500);
        assert_eq!(next_rate(1000, 50, 0.0), 2000);
        assert_eq!(next_rate(1000, 50, 40.0), 1250);
        assert_eq!(next_rate(1, 10, 100.0), 1);
    }
}
