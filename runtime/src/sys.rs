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

    /// Wakes every waiter sleeping on `word`. A worker's idle word has one
    /// sleeping thread, but after a hand-off (`worker::handoff`) the old
    /// thread's io_uring ring may still hold a futex wait armed on it; waking
    /// one could wake that stale wait instead of the worker.
    pub(crate) fn wake(word: &AtomicU32) {
        let _ = AsFutex::<Private>::as_futex(word).wake(i32::MAX);
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

/// The calling thread's kernel thread id.
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The calling thread's CPU-time clock id (for [`cpu_clock_ns`] from any
/// thread of the process).
pub(crate) fn thread_cpu_clock() -> libc::clockid_t {
    let mut id: libc::clockid_t = 0;
    // SAFETY: `pthread_self()` is the calling, live thread and `id` is a
    // valid place for the result.
    let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    if r == 0 {
        id
    } else {
        libc::CLOCK_THREAD_CPUTIME_ID
    }
}

/// The time on `clock` in ns (a thread's CPU-time clock); 0 on error.
pub(crate) fn cpu_clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; an invalid clock id (a
    // thread that has exited) only makes the call fail with EINVAL.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Whether thread `tid` of this process is runnable (state `R`: running or
/// waiting for a CPU), from `/proc/self/task/<tid>/stat`. `false` if it is
/// sleeping or the file cannot be read.
pub(crate) fn thread_runnable(tid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses and may
    // itself contain spaces or parentheses: take the last ')'.
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next())
        .is_some_and(|s| s == "R")
}
