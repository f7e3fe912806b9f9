//! The few raw system calls the runtime makes besides futexes.
//!
//! Owns: thread tuning calls and socket sends through `libc` that have no
//! safe wrapper in the allowed crates. Must not: grow; prefer crates with safe APIs.

/// Sets the calling thread's timer slack to 1 ns, so its futex timeouts
/// (timers of a parked worker) fire when asked instead of up to 50 µs late.
pub(crate) fn set_min_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only affects
    // the calling thread; the unused arguments must be zero.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Offers the calling thread's CPU to any other thread the kernel has
/// runnable there (`sched_yield`); returns at once when there is none.
#[inline]
pub(crate) fn yield_cpu() {
    // SAFETY: sched_yield takes no arguments, touches no memory and cannot
    // fail on Linux.
    let _ = unsafe { libc::sched_yield() };
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

/// `send(2)` of `buf` on the socket `fd` with `MSG_NOSIGNAL`: a closed
/// peer is `EPIPE`, never `SIGPIPE`, whatever the process does with that
/// signal (std's `UnixStream` writes with plain `write(2)`, which raises it).
pub(crate) fn send(fd: std::os::fd::RawFd, buf: &[u8]) -> std::io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the whole
    // call; `send` only reads it and takes no other pointer.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// A `msghdr` that sends `bufs` (at most `UIO_MAXIOV` of them; a longer
/// list is a short write, which `Write` allows) to the connected peer. It
/// points into `bufs`: use it only while they are borrowed.
pub(crate) fn msghdr_of(bufs: &[std::io::IoSlice<'_>]) -> libc::msghdr {
    // SAFETY: all-zero bytes are a valid msghdr (no address, no control
    // data, no iovecs).
    let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
    // `IoSlice` is ABI-compatible with `iovec` on Unix; the kernel only
    // reads through this pointer for a send.
    hdr.msg_iov = bufs.as_ptr() as *mut libc::iovec;
    hdr.msg_iovlen = bufs.len().min(libc::UIO_MAXIOV as usize) as _;
    hdr
}

/// `sendmsg(2)` of `bufs` on the socket `fd` with `MSG_NOSIGNAL`: the
/// vectored [`send`] (std's `write_vectored` is `writev(2)`, which raises
/// `SIGPIPE` on a closed peer).
pub(crate) fn send_vectored(
    fd: std::os::fd::RawFd,
    bufs: &[std::io::IoSlice<'_>],
) -> std::io::Result<usize> {
    let hdr = msghdr_of(bufs);
    // SAFETY: `hdr` points at `bufs`' iovecs, which with the memory they
    // describe stay borrowed for the whole call; `sendmsg` only reads them.
    let n = unsafe { libc::sendmsg(fd, &hdr, libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
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

/// Sets the kernel's EEVDF slice (the request size of the fair class) of
/// thread `tid` of this process to `ns`, or back to the kernel's default
/// with 0, keeping its policy and nice value: `sched_setattr` with
/// `sched_runtime`, which Linux 6.12+ takes as a custom slice for the fair
/// policies (clamped by the kernel to 0.1–100 ms). Needs no privilege. A
/// shorter slice than another thread's on the same CPU lets this thread's
/// wakeups preempt that one (the kernel's PREEMPT_SHORT), at the same CPU
/// share. Fails with `Unsupported` for a real-time or deadline thread and
/// with the kernel's error otherwise; kernels before 6.12 accept the call
/// and ignore the value.
pub(crate) fn set_kernel_slice(tid: i32, ns: u64) -> std::io::Result<()> {
    let mut attr = kernel_sched_attr(tid)?;
    const FAIR: [u32; 3] = [
        libc::SCHED_OTHER as u32,
        libc::SCHED_BATCH as u32,
        libc::SCHED_IDLE as u32,
    ];
    if !FAIR.contains(&attr.sched_policy) {
        return Err(std::io::ErrorKind::Unsupported.into());
    }
    attr.sched_runtime = ns;
    // Only the flags that this structure's size can carry (not the
    // utilisation-clamp ones) and that leave the rest as it is.
    attr.sched_flags &= libc::SCHED_FLAG_RESET_ON_FORK as u64;
    attr.size = std::mem::size_of::<libc::sched_attr>() as u32;
    // SAFETY: `attr` is a valid, initialised `sched_attr` whose `size`
    // says how much of it the kernel may read.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            tid,
            &attr as *const libc::sched_attr,
            0,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The kernel's scheduling attributes of thread `tid` of this process
/// (`sched_getattr`; `sched_runtime` is its slice in ns on Linux 6.12+).
pub(crate) fn kernel_sched_attr(tid: i32) -> std::io::Result<libc::sched_attr> {
    let mut attr = libc::sched_attr {
        size: 0,
        sched_policy: 0,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: 0,
        sched_deadline: 0,
        sched_period: 0,
    };
    let size = std::mem::size_of::<libc::sched_attr>() as u32;
    // SAFETY: `attr` is writable and `size` bytes long; the kernel writes
    // at most that many.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut libc::sched_attr,
            size,
            0,
        )
    };
    if r == 0 {
        Ok(attr)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether the running kernel takes `sched_runtime` as a custom slice of
/// the fair class (Linux 6.12 and later), from `uname`'s release.
#[cfg(test)]
fn kernel_has_custom_slices() -> bool {
    let Ok(r) = std::fs::read_to_string("/proc/sys/kernel/osrelease") else {
        return false;
    };
    let mut parts = r.trim().split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (major, minor) >= (6, 12)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_thread_sets_and_resets_its_kernel_slice() {
        std::thread::spawn(|| {
            let tid = gettid();
            let before = kernel_sched_attr(tid).expect("sched_getattr");
            set_kernel_slice(tid, 100_000).expect("sched_setattr, no privilege needed");
            let short = kernel_sched_attr(tid).unwrap();
            assert_eq!(short.sched_policy, before.sched_policy);
            assert_eq!(short.sched_nice, before.sched_nice);
            if kernel_has_custom_slices() {
                assert_eq!(short.sched_runtime, 100_000);
            }
            set_kernel_slice(tid, 0).unwrap();
            let reset = kernel_sched_attr(tid).unwrap();
            if kernel_has_custom_slices() {
                assert_eq!(
                    reset.sched_runtime, before.sched_runtime,
                    "the default again"
                );
            }
        })
        .join()
        .unwrap();
    }
}

/// A kernel timer (`timerfd`, `CLOCK_MONOTONIC`) and a wake-up event
/// (`eventfd`) that one thread waits on together: the hand-off monitor's
/// dead-man switch (`worker::handoff`, "Workers watch each other"). Busy
/// workers keep pushing the timer back; the waiter wakes when they stop,
/// or when one of them calls [`DeadMan::wake`].
pub(crate) struct DeadMan {
    timer: std::os::fd::OwnedFd,
    event: std::os::fd::OwnedFd,
}

impl DeadMan {
    /// A disarmed timer and an empty event.
    pub(crate) fn new() -> std::io::Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain syscalls with constant flags; each returned fd is
        // owned by exactly one `OwnedFd` from here on.
        unsafe {
            let t = libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            );
            if t < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let timer = std::os::fd::OwnedFd::from_raw_fd(t);
            let e = libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC);
            if e < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(DeadMan {
                timer,
                event: std::os::fd::OwnedFd::from_raw_fd(e),
            })
        }
    }

    /// (Re)arms the timer to fire once, `after` from now.
    pub(crate) fn arm(&self, after: std::time::Duration) {
        use std::os::fd::AsRawFd;
        let after = after.max(std::time::Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: a valid timerfd and a valid, initialised itimerspec; the
        // old value is not asked for (null).
        unsafe {
            libc::timerfd_settime(self.timer.as_raw_fd(), 0, &spec, std::ptr::null_mut());
        }
    }

    /// Ends a [`DeadMan::wait`] now, or the next one if none is in progress.
    pub(crate) fn wake(&self) {
        use std::os::fd::AsRawFd;
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to a valid eventfd (a full
        // counter would fail with EAGAIN: still readable, so still a wake).
        unsafe {
            libc::write(
                self.event.as_raw_fd(),
                &one as *const u64 as *const libc::c_void,
                8,
            );
        }
    }

    /// Waits until the timer fires, [`DeadMan::wake`] is called, or `limit`
    /// passes, then clears both. Returns whether `wake` ended it.
    pub(crate) fn wait(&self, limit: std::time::Duration) -> bool {
        use std::os::fd::AsRawFd;
        let mut fds = [
            libc::pollfd {
                fd: self.timer.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.event.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ms = limit.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: `fds` is a live array of two initialised pollfds.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        let mut buf = 0u64;
        let woken = fds[1].revents & libc::POLLIN != 0;
        for fd in [&self.timer, &self.event] {
            // SAFETY: reads at most 8 bytes into a live u64 from a valid,
            // non-blocking fd (EAGAIN when there is nothing to clear).
            unsafe {
                libc::read(fd.as_raw_fd(), &mut buf as *mut u64 as *mut libc::c_void, 8);
            }
        }
        woken
    }
}
