//! The few raw system calls the runtime makes besides futexes.
//!
//! Owns: thread tuning calls through `libc` that have no safe wrapper in
//! the allowed crates. Must not: grow; prefer crates with safe APIs.

/// Sets the calling thread's timer slack to 1 ns, so its futex timeouts
/// (timers, the ticker) fire when asked instead of up to 50 µs late.
pub(crate) fn set_min_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only affects
    // the calling thread; the unused arguments must be zero.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Number of CPUs this process may run on.
pub(crate) fn allowed_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
