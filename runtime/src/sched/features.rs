//! Scheduler feature switches, like the kernel's `sched_features`.
//!
//! Owns: the list of switches (the policy's, from docs/eevdf.md §14, and the
//! runtime's own), the runtime's defaults and the kernel's 6.17 defaults
//! (the `kernel` preset; `docs/features.md` lists where they differ and
//! why), and the kernel's text syntax (`NO_DELAY_DEQUEUE,RUN_TO_PARITY`). Must not: decide anything; the policy
//! (`sched::rq`) and the runtime (`worker`, `wake`) read these bits.

use crate::error::Error;
use std::fmt;

macro_rules! features {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, default $default:literal, source $source:literal; )*) => {
        /// One scheduler feature switch.
        ///
        /// The kernel's switches keep their kernel names; the runtime's own
        /// switches say so in their documentation and in [`Feature::source`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Feature {
            $( $(#[$doc])* $variant, )*
        }

        impl Feature {
            /// Every feature, in display order.
            pub const ALL: &'static [Feature] = &[ $( Feature::$variant, )* ];

            /// The feature's name in `sched_features` syntax (`DELAY_DEQUEUE`).
            pub const fn name(self) -> &'static str {
                match self { $( Feature::$variant => $name, )* }
            }

            /// Whether the feature is on in the runtime's default set (see
            /// [`Features::kernel`] for the kernel's 6.17 defaults).
            pub const fn default_enabled(self) -> bool {
                match self { $( Feature::$variant => $default, )* }
            }

            /// Where the switch comes from: a kernel version or discussion, or "runtime".
            pub const fn source(self) -> &'static str {
                match self { $( Feature::$variant => $source, )* }
            }
        }
    };
}

features! {
    /// Preserve lag across sleep and migration (docs/eevdf.md §7.2).
    PlaceLag = "PLACE_LAG", default true, source "kernel 6.6+";
    /// A newborn task's first deadline is half a slice away (§7.2).
    PlaceDeadlineInitial = "PLACE_DEADLINE_INITIAL", default true, source "kernel 6.6+";
    /// Non-sleep dequeues (migration, attribute changes) keep the remaining request (§8.2).
    PlaceRelDeadline = "PLACE_REL_DEADLINE", default true, source "kernel 6.12+";
    /// Slice protection: the running task keeps the worker until its protection horizon (§6.3).
    RunToParity = "RUN_TO_PARITY", default true, source "kernel 6.6+, 6.17 vprot";
    /// A waking task with a strictly shorter slice bypasses the current task's protection (§9).
    PreemptShort = "PREEMPT_SHORT", default true, source "kernel 6.12+";
    /// Wakeups make the wakee the next-buddy (§6.4).
    NextBuddy = "NEXT_BUDDY", default false, source "kernel";
    /// The pick honours an eligible next-buddy (§6.4).
    PickBuddy = "PICK_BUDDY", default true, source "kernel 6.14+";
    /// The next-buddy counts as cache-hot when balancing (§13).
    CacheHotBuddy = "CACHE_HOT_BUDDY", default true, source "kernel";
    /// Tasks that block while ineligible stay queued until picked (§8.3).
    DelayDequeue = "DELAY_DEQUEUE", default true, source "kernel 6.12+";
    /// Clip positive lag to zero when a delayed dequeue ends or a delayed task wakes (§8.3).
    DelayZero = "DELAY_ZERO", default true, source "kernel 6.12+";
    /// Wakeups may preempt the running task at all (§9).
    WakeupPreemption = "WAKEUP_PREEMPTION", default true, source "kernel";
    /// Reschedule a running task that is no longer eligible at the tick and at
    /// wakeup, even while protected ("Reschedule the cfs_rq when current is
    /// ineligible", docs/kernel-discussions.md §3). Not merged upstream; off by default.
    TickEligible = "TICK_ELIGIBLE", default false, source "proposed patch, 2024";
    /// Runtime's own (a `[D]` of docs/eevdf.md §5.4): a per-worker preemption timer
    /// fires when the running task's protection or slice ends, instead of
    /// waiting for the next tick. The kernel's HRTICK is off in 6.17 and on
    /// in later trees; a cooperative runtime needs it for short slices to
    /// mean anything at a coarse tick, so it is on by default here.
    Hrtick = "HRTICK", default true, source "runtime (kernel HRTICK, §5.4)";
    /// Remote wakeups to an idle worker go through its lock-free wakelist
    /// instead of taking its run-queue lock (§11.2).
    TtwuQueue = "TTWU_QUEUE", default true, source "kernel";
    /// Runtime's own: wakeups of delayed tasks also go through the owner's
    /// wakelist instead of being done inline under its lock (proposed for
    /// the kernel in 2025, docs/kernel-discussions.md §1). On by default here: on the
    /// scaled schbench regression workload it gave 1.20× the requests per
    /// second of inline delayed wakeups (median of 5 interleaved pairs on
    /// the Intel host of 2026-12-05, docs/features.md); neutral on schbench `-t 4 -s 0`, mixed on the
    /// `feature_ab` example (ping-pong round trips −18% to 0%).
    TtwuQueueDelayed = "TTWU_QUEUE_DELAYED", default true, source "runtime (proposed kernel switch)";
    /// Runtime's own: with TTWU_QUEUE, remote wakeups go through the
    /// target's wakelist even when the target is busy (the kernel queues
    /// only to an idle CPU and enqueues inline under a busy one's lock).
    /// Proposed for the kernel in 2025 ("all the work we can get away from
    /// those pinned message CPUs is a win", docs/kernel-discussions.md §1); on by default
    /// here from the schbench measurements (README).
    TtwuQueueDefault = "TTWU_QUEUE_DEFAULT", default true, source "runtime (proposed kernel switch)";
    /// Runtime's own: wake placement may move a wakee to an idle worker
    /// (prev, recently used, bounded bitmap scan; §12). Off: wake where it slept.
    WakeIdle = "WAKE_IDLE", default true, source "runtime (select_idle_sibling)";
    /// Runtime's own, after the kernel's `wake_affine()` and its `WF_SYNC`
    /// hint: a *sync* wakeup (a channel operation, whose caller usually
    /// blocks next, like a kernel pipe write) places the wakee on the
    /// waker's worker when the waker is the only task queued there — even
    /// if the wakee's previous worker is idle. The wakee then runs as soon
    /// as the waker blocks, on a warm cache, with no cross-worker wakeup.
    /// The kernel asks `select_idle_sibling` afterwards and so still prefers
    /// an idle previous CPU; this switch does not. Off: sync wakeups are
    /// placed like any other.
    WaSync = "WA_SYNC", default true, source "runtime (kernel wake_affine, WF_SYNC)";
    /// Runtime's own, after the kernel's `wake_affine()` for a wakeup from
    /// the CPU that took the interrupt (WA_WEIGHT, whose tie goes to the
    /// waking CPU): when no worker is idle, an I/O readiness wakeup (the
    /// reactor's dispatch, on a worker that polled it) places the wakee on
    /// the polling worker unless that one has more tasks queued than the
    /// wakee's previous worker and the previous worker is keeping up (it
    /// polled within the last 200 µs). Readiness is then served by a
    /// worker that is running, not queued behind one whose OS thread is
    /// preempted, and connection tasks spread over the workers. Off: I/O
    /// wakeups are placed like any other (previous worker when none is idle).
    WaIo = "WA_IO", default true, source "runtime (kernel wake_affine, WA_WEIGHT)";
    /// Runtime's own: when no worker is idle and the wakee's previous
    /// worker is not serving its queue — it has not reached a preemption
    /// point's slow path for 200 µs (four busy-poll intervals), because the
    /// host preempted its OS thread or a green thread runs without
    /// preemption points — the wakee goes to a worker that is: the waker's
    /// own, else the one with the fewest tasks queued among those keeping
    /// up; and a busy worker, at its tick, pulls the next task of such a
    /// worker (the one EEVDF would run next there, else the one that has
    /// waited longest). Without it a wakeup waits for the stalled worker,
    /// while tokio's other worker would take it from the shared queue. The kernel needs
    /// no such rule (a descheduled vCPU is the hypervisor's business), so
    /// the `kernel` preset turns it off. Off: the previous worker.
    WaStale = "WA_STALE", default true, source "runtime";
    /// Runtime's own: an idle worker pulls one task from the busiest worker (§13).
    NewidleBalance = "NEWIDLE_BALANCE", default true, source "runtime (sched_balance_newidle)";
    /// Runtime's own: a green thread spawned from a green thread starts on
    /// its parent's worker. Off: on the idlest worker, like the kernel's fork
    /// balancing (docs/kernel-discussions.md §4).
    SpawnLocal = "SPAWN_LOCAL", default true, source "runtime (docs/kernel-discussions.md §4)";
    /// Runtime's own, refining SPAWN_LOCAL: a spawn whose parent's worker
    /// already has eight tasks runnable (the parent and seven waiting) goes
    /// where it starts clearly sooner, as the kernel's fork balancing would
    /// place it: an idle worker, else the least loaded one if that one has
    /// at most half the load (with every worker as busy it stays). A
    /// spawn-and-join pair never builds a backlog and stays local; a loop of spawns fills the idle
    /// workers at once instead of leaving them to steal one task at a time
    /// from the spawner's queue. Off (or SPAWN_LOCAL off): SPAWN_LOCAL's
    /// placement alone.
    SpawnSpill = "SPAWN_SPILL", default true, source "runtime (kernel fork balancing)";
    /// Runtime's own: a busy worker gives the kernel a scheduling point
    /// at its paced poll (at most every 50 µs, at a switch or a preemption
    /// point's slow path): one `sched_yield`, about 150 ns when nothing
    /// else waits for its CPU, skipped when the poll has just given the
    /// worker a task to switch to (that task runs first). Another thread
    /// the kernel woke on that CPU — a client of the service, a sidecar,
    /// the runtime's own monitor — is often not the kernel's EEVDF pick at
    /// the moment of its wakeup (it has just run, or the worker's thread is
    /// inside its slice protection) and would otherwise wait for the next
    /// kernel tick or the next wakeup on that CPU, typically 0.3–4 ms; with
    /// the yield it waits at most about one poll interval. The time away is
    /// not charged to the green thread. A yield that kept the worker away
    /// for more than 200 µs (a thread that wants the whole CPU; since Linux
    /// 6.18 each such yield also forfeits the rest of the worker thread's
    /// kernel slice) stops the yields for a back-off of 10 ms, doubling to
    /// 1 s, so a CPU-bound neighbour still gets only its fair half. The
    /// kernel has no counterpart, so the `kernel` preset turns it off.
    /// Off: the worker's thread keeps its CPU until the kernel preempts it.
    OsYield = "OS_YIELD", default true, source "runtime";
}

impl Feature {
    /// Looks a feature up by its `sched_features` name (case-insensitive).
    pub fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL
            .iter()
            .copied()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    const fn bit(self) -> u32 {
        1 << (self as u8)
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of feature switches.
///
/// `Display` prints every feature in `sched_features` syntax, comma
/// separated, so that the output parses back with [`Features::parse`].
///
/// ```
/// use eevdf_rt::sched::{Feature, Features};
/// let f = Features::parse("NO_DELAY_DEQUEUE,TICK_ELIGIBLE").unwrap();
/// assert!(!f.is_enabled(Feature::DelayDequeue));
/// assert!(f.is_enabled(Feature::TickEligible));
/// assert!(f.to_string().contains("NO_DELAY_DEQUEUE"));
/// assert_eq!(Features::parse(&f.to_string()).unwrap(), f);
/// assert!(Features::parse("NO_SUCH_THING").is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Features {
    bits: u32,
}

impl Default for Features {
    fn default() -> Self {
        let mut bits = 0;
        for f in Feature::ALL {
            if f.default_enabled() {
                bits |= f.bit();
            }
        }
        Features { bits }
    }
}

impl Features {
    /// The runtime's default set: the kernel's 6.17 defaults for every
    /// switch the kernel has, and seven switches on here that the kernel's
    /// set has off or lacks: HRTICK, TTWU_QUEUE_DEFAULT, TTWU_QUEUE_DELAYED,
    /// WA_SYNC, WA_STALE, SPAWN_LOCAL and OS_YIELD (see
    /// [`Features::kernel`] and `docs/features.md` for why).
    pub fn new() -> Self {
        Self::default()
    }

    /// The kernel's 6.17 `sched_features` defaults (the `"kernel"`
    /// preset): the runtime's defaults with HRTICK, TTWU_QUEUE_DEFAULT and
    /// TTWU_QUEUE_DELAYED off (off or not merged in 6.17), SPAWN_LOCAL
    /// off (the kernel balances a new task onto the idlest CPU), and the
    /// runtime's own WA_SYNC, WA_STALE and OS_YIELD off. WAKE_IDLE,
    /// WA_IO and NEWIDLE_BALANCE stay on: they stand for the kernel's
    /// `select_idle_sibling`, `wake_affine` (WA_WEIGHT) and newidle
    /// balancing, which 6.17 does. SPAWN_SPILL stays on too: it only
    /// refines SPAWN_LOCAL, so it does nothing here unless SPAWN_LOCAL is
    /// turned back on (`kernel,SPAWN_LOCAL`).
    ///
    /// ```
    /// use eevdf_rt::sched::{Feature, Features};
    /// let k = Features::kernel();
    /// assert!(!k.is_enabled(Feature::Hrtick));
    /// assert!(k.is_enabled(Feature::DelayDequeue));
    /// assert_eq!(Features::parse("kernel").unwrap(), k);
    /// assert_eq!(k.diff_from_default(), "NO_HRTICK,NO_TTWU_QUEUE_DELAYED,NO_TTWU_QUEUE_DEFAULT,NO_WA_SYNC,NO_WA_STALE,NO_SPAWN_LOCAL,NO_OS_YIELD");
    /// ```
    pub fn kernel() -> Self {
        Self::default()
            .with(Feature::Hrtick, false)
            .with(Feature::TtwuQueueDefault, false)
            .with(Feature::TtwuQueueDelayed, false)
            .with(Feature::WaSync, false)
            .with(Feature::WaStale, false)
            .with(Feature::SpawnLocal, false)
            .with(Feature::OsYield, false)
    }

    /// Whether `f` is on.
    #[inline]
    pub const fn is_enabled(self, f: Feature) -> bool {
        self.bits & f.bit() != 0
    }

    /// Turns `f` on or off.
    pub fn set(&mut self, f: Feature, on: bool) {
        if on {
            self.bits |= f.bit();
        } else {
            self.bits &= !f.bit();
        }
    }

    /// The raw bit set (for storing in an atomic).
    pub const fn bits(self) -> u32 {
        self.bits
    }

    /// A set from [`Features::bits`] (unknown bits are dropped).
    pub const fn from_bits(bits: u32) -> Self {
        Features {
            bits: bits & ((1u32 << Feature::ALL.len()) - 1),
        }
    }

    /// Returns a copy with `f` set to `on`.
    pub fn with(mut self, f: Feature, on: bool) -> Self {
        self.set(f, on);
        self
    }

    /// Applies a `sched_features`-style list on top of this set: names
    /// separated by commas or whitespace, each `NAME` (on) or `NO_NAME`
    /// (off), or a preset that replaces the whole set at that point —
    /// `kernel` ([`Features::kernel`]) or `default` — so that
    /// `"kernel,NO_DELAY_DEQUEUE"` is the kernel's set without delayed
    /// dequeue. Nothing is changed if any name is unknown.
    pub fn apply(&mut self, spec: &str) -> Result<(), Error> {
        let mut next = *self;
        for word in spec
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty())
        {
            if word.eq_ignore_ascii_case("kernel") {
                next = Features::kernel();
                continue;
            }
            if word.eq_ignore_ascii_case("default") {
                next = Features::default();
                continue;
            }
            let (name, on) = match word.get(..3) {
                Some(p) if p.eq_ignore_ascii_case("NO_") && Feature::from_name(word).is_none() => {
                    (&word[3..], false)
                }
                _ => (word, true),
            };
            let f = Feature::from_name(name).ok_or_else(|| Error::UnknownFeature {
                name: word.to_string(),
                valid: Feature::ALL.iter().map(|f| f.name()).collect(),
            })?;
            next.set(f, on);
        }
        *self = next;
        Ok(())
    }

    /// The default set with `spec` applied (see [`Features::apply`]).
    pub fn parse(spec: &str) -> Result<Self, Error> {
        let mut f = Features::default();
        f.apply(spec)?;
        Ok(f)
    }

    /// Only the switches that differ from the defaults, in `sched_features`
    /// syntax (`"NO_DELAY_DEQUEUE,TICK_ELIGIBLE"`), or `"default"`.
    pub fn diff_from_default(self) -> String {
        let d = Features::default();
        let parts: Vec<String> = Feature::ALL
            .iter()
            .filter(|f| self.is_enabled(**f) != d.is_enabled(**f))
            .map(|f| {
                if self.is_enabled(*f) {
                    f.name().to_string()
                } else {
                    format!("NO_{}", f.name())
                }
            })
            .collect();
        if parts.is_empty() {
            "default".to_string()
        } else {
            parts.join(",")
        }
    }
}

impl std::str::FromStr for Features {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Features::parse(s)
    }
}

impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for feat in Feature::ALL {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if !self.is_enabled(*feat) {
                f.write_str("NO_")?;
            }
            f.write_str(feat.name())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Features({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_6_17() {
        let f = Features::default();
        for on in [
            Feature::PlaceLag,
            Feature::PlaceDeadlineInitial,
            Feature::PlaceRelDeadline,
            Feature::RunToParity,
            Feature::PreemptShort,
            Feature::PickBuddy,
            Feature::DelayDequeue,
            Feature::DelayZero,
            Feature::WakeupPreemption,
            Feature::TtwuQueue,
        ] {
            assert!(f.is_enabled(on), "{on}");
        }
        assert!(!f.is_enabled(Feature::NextBuddy));
        assert!(!f.is_enabled(Feature::TickEligible));
        assert_eq!(f.diff_from_default(), "default");
    }

    #[test]
    fn parse_round_trips_and_rejects_unknown() {
        let f = Features::parse("NO_RUN_TO_PARITY, tick_eligible").unwrap();
        assert!(!f.is_enabled(Feature::RunToParity));
        assert!(f.is_enabled(Feature::TickEligible));
        assert_eq!(f.diff_from_default(), "NO_RUN_TO_PARITY,TICK_ELIGIBLE");
        assert_eq!(f.to_string().parse::<Features>().unwrap(), f);
        let err = Features::parse("RUN_TO_PARITY,BOGUS").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("BOGUS") && msg.contains("DELAY_DEQUEUE") && msg.contains("kernel"),
            "{msg}"
        );
        assert!(Features::parse("NO_").is_err());
        assert_eq!(Features::parse("").unwrap(), Features::default());
    }

    #[test]
    fn apply_is_atomic() {
        let mut f = Features::default();
        assert!(f.apply("NO_DELAY_DEQUEUE,NOPE").is_err());
        assert_eq!(f, Features::default());
    }
}
