//! The state of one backend run that the driver and the backend's message threads and
//! workers share: the plan, the statistics, the clock, the stop flag and the current
//! request-rate target.
//!
//! This module owns the run's time base (one monotonic epoch, nanosecond `u64`
//! timestamps) and the stop signal. It must not wake anyone: stopping a backend's
//! loops is the backend's `finish` (see `backend`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use crate::opts::Plan;
use crate::stats::StatsBoard;

/// Request rate `-A` starts from when `-R` is not given (requests/s).
pub const AUTO_RPS_START: u64 = 1000;

/// What a running backend shares with the driver.
#[derive(Debug)]
pub struct Shared {
    /// The resolved options.
    pub plan: Plan,
    /// Per-worker measurements.
    pub stats: StatsBoard,
    epoch: Instant,
    stop: AtomicBool,
    rps_target: AtomicU64,
}

impl Shared {
    /// Fresh state for a run of `plan`; the clock starts now.
    pub fn new(plan: Plan) -> Self {
        let rps = match (plan.rps, plan.auto_rps) {
            (0, 0) => 0,
            (0, _) => AUTO_RPS_START,
            (rps, _) => rps,
        };
        Shared {
            stats: StatsBoard::new(plan.workers()),
            plan,
            epoch: Instant::now(),
            stop: AtomicBool::new(false),
            rps_target: AtomicU64::new(rps),
        }
    }

    /// Nanoseconds since the run's epoch: one `clock_gettime(CLOCK_MONOTONIC)`.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// The epoch, for absolute deadlines.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Whether the run is over. Loops check it once per round.
    #[inline]
    pub fn stopping(&self) -> bool {
        // Relaxed: the flag publishes nothing; exits are made safe by the board's
        // live count, not by this load.
        self.stop.load(Relaxed)
    }

    /// Ends the run (the driver calls this once, then the backend's `finish`).
    pub fn request_stop(&self) {
        self.stop.store(true, Relaxed);
    }

    /// The request rate message threads pace to, all together (0: unpaced).
    #[inline]
    pub fn rps_target(&self) -> u64 {
        self.rps_target.load(Relaxed)
    }

    /// Changes the request rate (auto-RPS).
    pub fn set_rps_target(&self, rps: u64) {
        // Relaxed: message loops re-read the rate every round and follow it from then
        // on; nothing else is published through it.
        self.rps_target.store(rps.max(1), Relaxed);
    }
}
