//! How many OS threads this process can start without aborting.
//!
//! Owns: the estimate of the OS threads the kernel's limit on memory mappings
//! (`vm.max_map_count`, 65530 by default) leaves room for. Every thread std
//! starts takes four mappings (its stack and guard page, the signal stack and
//! guard page std installs for stack-overflow reports). When they run out,
//! `pthread_create` may still succeed but std cannot map the new thread's
//! signal stack, and that failure panics in the new thread before any code of
//! ours runs: the process aborts, so a spawn error cannot be caught. The
//! benchmarks therefore check a thread count against this estimate while
//! validating their options. Must not: start threads, or check other limits
//! (`RLIMIT_NPROC` and `kernel.threads-max` make `pthread_create` fail
//! cleanly, which the backends already report).

/// Memory mappings each OS thread std starts takes: its stack and stack guard
/// page, and its signal stack and that stack's guard page.
pub const MAPS_PER_THREAD: u64 = 4;

/// Mappings set aside for everything but the counted threads: the program and
/// its libraries, malloc arenas, runtimes' stacks and buffers.
pub const RESERVED_MAPS: u64 = 1024;

/// glibc malloc's default `M_MMAP_THRESHOLD`: an allocation of at least this
/// many bytes may get a mapping of its own.
pub const MMAP_THRESHOLD: u64 = 128 * 1024;

/// The kernel's limit on memory mappings per process (`vm.max_map_count`),
/// or `None` where it cannot be read.
pub fn max_map_count() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Mappings a buffer of `bytes` bytes may need: one at or above
/// [`MMAP_THRESHOLD`], none below (it comes from a malloc arena).
pub fn buffer_maps(bytes: u64) -> u64 {
    u64::from(bytes >= MMAP_THRESHOLD)
}

/// The most OS threads a process limited to `max_map_count` mappings can
/// start when each also maps `extra_maps` buffers of its own (see
/// [`buffer_maps`]), after [`RESERVED_MAPS`].
///
/// ```
/// use bench_common::limits::os_thread_capacity;
/// assert_eq!(os_thread_capacity(65_530, 0), 16_126);
/// assert_eq!(os_thread_capacity(65_530, 1), 12_901);
/// assert_eq!(os_thread_capacity(100, 0), 0);
/// ```
pub fn os_thread_capacity(max_map_count: u64, extra_maps: u64) -> u64 {
    max_map_count.saturating_sub(RESERVED_MAPS) / (MAPS_PER_THREAD + extra_maps)
}

/// Checks that this process can start `threads` OS threads that each map
/// `extra_maps` buffers of their own. `Err` says why not, naming the limit
/// (`vm.max_map_count`), for the caller to put after its option names. Passes
/// where the limit cannot be read.
pub fn check_os_threads(threads: u64, extra_maps: u64) -> Result<(), String> {
    let Some(max) = max_map_count() else {
        return Ok(());
    };
    // glibc gives a process with many threads up to eight malloc arenas per
    // CPU, each a mapping or two: on a large machine that is more than
    // RESERVED_MAPS, so it is set aside on top.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let capacity = os_thread_capacity(max.saturating_sub(16 * cpus), extra_maps);
    if threads <= capacity {
        Ok(())
    } else {
        Err(format!(
            "{threads} OS threads need about {} memory mappings, but this system allows \
             about {capacity} threads (vm.max_map_count = {max}, {} mappings per thread)",
            threads.saturating_mul(MAPS_PER_THREAD + extra_maps),
            MAPS_PER_THREAD + extra_maps
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_below_the_threshold_take_no_mapping() {
        assert_eq!(buffer_maps(0), 0);
        assert_eq!(buffer_maps(MMAP_THRESHOLD - 1), 0);
        assert_eq!(buffer_maps(MMAP_THRESHOLD), 1);
        assert_eq!(buffer_maps(1 << 30), 1);
    }

    #[test]
    fn capacity_counts_every_mapping_of_a_thread() {
        assert_eq!(os_thread_capacity(1024 + 4 * 10, 0), 10);
        assert_eq!(os_thread_capacity(1024 + 6 * 10, 2), 10);
        assert_eq!(os_thread_capacity(0, 0), 0);
        assert_eq!(os_thread_capacity(u64::MAX, 0), (u64::MAX - 1024) / 4);
    }

    #[test]
    fn a_few_threads_always_fit() {
        assert!(check_os_threads(4, 3).is_ok());
        if let Some(max) = max_map_count() {
            let over = os_thread_capacity(max, 0) + 1;
            let e = check_os_threads(over, 0).unwrap_err();
            assert!(e.contains("vm.max_map_count"), "{e}");
        }
    }
}
