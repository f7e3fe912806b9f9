//! Thread tuning for load generators: timer slack and the kernel's
//! per-task slice (`sched_setattr`'s `sched_runtime` for SCHED_OTHER,
//! Linux 6.12+), the same latency request eevdf-rt's `task::Builder::slice`
//! makes for a green thread.

use std::io;
use std::time::Duration;

/// Sets the calling thread's timer slack to 1 ns, so its sleeps end when
/// asked instead of up to 50 µs late.
pub fn set_min_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and only affects
    // the calling thread; the unused arguments must be zero.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// The kernel's `struct sched_attr` (first version, 48 bytes).
#[repr(C)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Asks the kernel for a custom EEVDF slice for the calling thread
/// (SCHED_OTHER, nice unchanged): with PREEMPT_SHORT its wakeups preempt
/// longer-slice threads, so a load generator sends on time even while the
/// workers it feeds saturate every core. Unprivileged on Linux 6.12+;
/// older kernels ignore or reject it (an `Err` the caller may report).
pub fn set_kernel_slice(slice: Duration) -> io::Result<()> {
    // SAFETY: getpriority has no memory arguments; on Linux, who = 0 with
    // PRIO_PROCESS is the calling thread. Keep the current nice level.
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }.clamp(-20, 19);
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: libc::SCHED_OTHER as u32,
        sched_flags: 0,
        sched_nice: nice,
        sched_priority: 0,
        sched_runtime: slice.as_nanos() as u64,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: `attr` is a valid, initialised sched_attr whose `size` field
    // tells the kernel how much of it to read; pid 0 is the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Time the calling process's threads whose name starts with `prefix`
/// have spent runnable but waiting for a CPU on the kernel's run queues
/// (`/proc/self/task/*/schedstat`, second field), summed: how much the
/// rest of the machine (other processes, this process's other threads)
/// delayed them. `None` if schedstats are unavailable.
pub fn threads_run_delay(prefix: &str) -> Option<Duration> {
    threads_schedstat(prefix, 1)
}

/// CPU time the calling process's threads whose name starts with `prefix`
/// have used (`/proc/self/task/*/schedstat`, first field), summed.
pub fn threads_cpu_time(prefix: &str) -> Option<Duration> {
    threads_schedstat(prefix, 0)
}

/// Sums field `field` of `schedstat` over the matching threads.
fn threads_schedstat(prefix: &str, field: usize) -> Option<Duration> {
    let mut total = 0u64;
    let mut found = false;
    for entry in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let dir = entry.path();
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(dir.join("schedstat")) else {
            continue;
        };
        if let Some(v) = stat
            .split_whitespace()
            .nth(field)
            .and_then(|v| v.parse::<u64>().ok())
        {
            total += v;
            found = true;
        }
    }
    found.then(|| Duration::from_nanos(total))
}

/// The CPUs this process may run on, in ascending order (the calling
/// thread's affinity, through `core_affinity`).
pub fn allowed_cpus() -> Vec<usize> {
    let mut cpus: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    cpus.sort_unstable();
    cpus
}

/// Pins the calling thread to CPU `cpu` (as eevdf-rt pins its workers).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "cannot pin the thread to CPU {cpu}"
        )))
    }
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`, `VmPTE`, …) in KiB.
pub fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Number of memory mappings of this process (lines of `/proc/self/maps`).
pub fn mapping_count() -> Option<usize> {
    Some(
        std::fs::read_to_string("/proc/self/maps")
            .ok()?
            .lines()
            .count(),
    )
}

/// This machine's physical memory in bytes, if the system says.
pub fn physical_memory() -> Option<u64> {
    // SAFETY: sysconf only reads configuration values.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages > 0 && page > 0).then(|| (pages as u64).saturating_mul(page as u64))
}
