//! The few raw system calls the runtime makes besides futexes.
//!
//! Owns: thread tuning calls through `libc` that have no safe wrapper in
//! the allowed crates. Must not: grow; prefer crates with safe APIs.

/// Sets the calling thread's timer slack to 1 ns, so its futex timeouts
/// (timers of a parked worker) fire when asked instead of up to 50 µs late.
pub(crate) fn set_min_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only affects
    // the calling thread; the unused arguments must be zero.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Futex wait and wake on a process-private word (linux-futex).
pub(crate) mod futex {
    use linux_futex::{AsFutex, Private};
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    /// Sleeps while `*word == expected` (spurious returns allowed).
    pub(crate) fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        let f = AsFutex::<Private>::as_futex(word);
        // Errors are all "return and let the caller re-check": the value
        // changed (WouldBlock), a signal (Interrupted), or the timeout.
        match timeout {
            Some(t) => {
                let _ = f.wait_for(expected, t);
            }
            None => {
                let _ = f.wait(expected);
            }
        }
    }

    /// Wakes one waiter sleeping on `word`.
    pub(crate) fn wake(word: &AtomicU32) {
        let _ = AsFutex::<Private>::as_futex(word).wake(1);
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds (the clock `Instant` uses), read
/// without `Instant`'s conversions: this is the one clock read of a switch.
#[inline]
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always
    // exists on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The time-stamp counter (`rdtsc`); 0 where there is none (callers check
/// [`has_tsc`] first).
#[inline]
pub(crate) fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no memory operands and is available on every
        // x86-64 CPU; it only reads the counter (not serialising: the
        // runtime's uses tolerate a few cycles of reordering).
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// Whether [`tsc`] reads a real counter on this architecture.
pub(crate) fn has_tsc() -> bool {
    cfg!(target_arch = "x86_64")
}

/// Number of CPUs this process may run on.
pub(crate) fn allowed_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
