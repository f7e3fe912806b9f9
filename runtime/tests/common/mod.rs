//! Helpers shared by the runtime's integration tests.
#![allow(dead_code)]

use std::sync::mpsc;
use std::time::Duration;

/// Runs `f` on a helper thread and fails the test (instead of hanging) if it
/// does not finish within `secs` seconds.
pub fn with_timeout<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(v)) => v,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("{what}: did not finish within {secs} s (hang or lost wakeup)"),
    }
}

pub mod adversarial;

/// A small deterministic PRNG (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    /// A generator for `seed`, scrambled so that nearby seeds diverge (and
    /// never zero, which xorshift would keep).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// True once in `one_in` draws on average.
    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    /// A very short timeout: 0, 1 µs, 10 µs, 50 µs, 200 µs or 1 ms.
    pub fn timeout(&mut self) -> Duration {
        const T: [u64; 6] = [0, 1, 10, 50, 200, 1000];
        Duration::from_micros(T[self.below(6) as usize])
    }
}

/// Parks the calling green thread for good (only shutdown ends it).
pub fn park_forever() -> ! {
    loop {
        eevdf_rt::park();
    }
}

/// Runs its closure when dropped (a destructor for tests to observe).
pub struct OnDrop<F: FnMut()>(pub F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// Spins for about `d` of CPU time without any preemption point.
pub fn burn(d: Duration) {
    let t = std::time::Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Runs `f` on a helper thread; fails the test if it does not finish
/// within `limit`, and re-raises its panic if it panicked.
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(h.join().expect_err("no result, no panic"))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("test did not finish within {limit:?}"),
    }
}

/// A green thread or an OS thread of a test (an OS thread must never be
/// joined from a green thread: that would block a worker).
pub enum H {
    Green(eevdf_rt::JoinHandle<()>),
    Os(std::thread::JoinHandle<()>),
}

impl H {
    pub fn join(self) {
        match self {
            H::Green(h) => h.join().unwrap(),
            H::Os(h) => h.join().unwrap(),
        }
    }
}

/// Time (ns) this process's threads whose names start with `prefix` have
/// spent runnable but waiting for a CPU (`/proc/<pid>/task/*/schedstat`,
/// second field): time the kernel gave their CPU to another thread.
pub fn run_delay_of(prefix: &str) -> u64 {
    let mut sum = 0;
    for e in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.starts_with(prefix) {
            let st = std::fs::read_to_string(e.path().join("schedstat")).unwrap_or_default();
            sum += st
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    sum
}

/// The machine's steal time so far (ns, all CPUs): time the hypervisor ran
/// something else while this guest's vCPUs wanted to run (`/proc/stat`,
/// the eighth field of the `cpu` line, in clock ticks).
pub fn steal_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .and_then(|l| l.split_whitespace().nth(8))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    // /proc/stat counts in USER_HZ ticks, which the kernel ABI fixes at 100.
    ticks * 10_000_000
}

/// Measures how much CPU time a runtime's worker threads were denied: the
/// time they waited runnable for a CPU (`run_delay_of`) plus the machine's
/// steal time, as a share of `workers` × the elapsed time. On a quiet
/// 2-vCPU VM a busy worker loses ~3% (the test's own OS threads share its
/// CPU); beside one CPU hog, ~30%.
pub struct CpuLoss {
    prefix: String,
    workers: u32,
    start: std::time::Instant,
    delay0: u64,
    steal0: u64,
}

impl CpuLoss {
    /// Starts measuring the threads named `prefix`… (a runtime built with
    /// `Builder::thread_name(name)` names its workers `name-w0`, `name-w1`…).
    pub fn start(prefix: &str, workers: u32) -> CpuLoss {
        CpuLoss {
            prefix: prefix.to_string(),
            workers,
            start: std::time::Instant::now(),
            delay0: run_delay_of(prefix),
            steal0: steal_ns(),
        }
    }

    /// The share of the workers' time lost so far.
    pub fn share(&self) -> f64 {
        let lost = run_delay_of(&self.prefix).saturating_sub(self.delay0)
            + steal_ns().saturating_sub(self.steal0);
        lost as f64 / (self.workers as f64 * self.start.elapsed().as_nanos().max(1) as f64)
    }
}

/// Runs a timing measurement until it passes, repeating the runs in which
/// the machine kept the workers off their CPUs (`lost` above 10%): those
/// measure the machine, not the runtime. Returns the first run that passes,
/// else the first run that was not contended, for the caller to assert on
/// (so a runtime that misses its bound on a quiet machine fails); `None`
/// if all `tries` runs were contended, after saying so on stderr: the
/// machine gave nothing to judge the runtime by.
pub fn unless_contended<T>(
    what: &str,
    tries: u32,
    mut run: impl FnMut() -> (T, f64),
    passes: impl Fn(&T) -> bool,
) -> Option<T> {
    let mut lost_shares = Vec::new();
    for _ in 0..tries {
        let (r, lost) = run();
        if passes(&r) || lost <= 0.10 {
            return Some(r);
        }
        lost_shares.push(format!("{:.0}%", lost * 100.0));
    }
    eprintln!(
        "{what}: not measured: in all {tries} runs the machine kept the workers off their \
         CPUs (CPU time lost: {lost_shares:?})"
    );
    None
}

/// Runs test `test` of this test binary again in a child process, alone,
/// with the environment variable `var` set to `value` (the test sees it and
/// plays the child's part), and returns what the child did. For tests that
/// must abort, or change process-wide limits, without taking the test
/// process with them.
pub fn run_test_in_child(test: &str, var: &str, value: &str) -> std::process::Output {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(var, value)
        .output()
        .unwrap()
}

/// Runs `test` (its path inside this test binary, e.g.
/// `uring::a_write_to_a_closed_peer_is_epipe`) again in a child process with
/// `SIGPIPE` at its default action (death), where `child` plays the part;
/// the parent asserts that the child lived and printed `child ok`. A
/// runtime write to a closed peer must be an `EPIPE` error, never the
/// signal, even in a program that did not ignore it as Rust's `main` does.
pub fn in_child_with_sigpipe_default(test: &str, child: impl FnOnce()) {
    const VAR: &str = "EEVDF_TEST_SIGPIPE_CHILD";
    if std::env::var_os(VAR).is_some() {
        // SAFETY: restoring a signal's default action; this child process
        // runs this one test alone.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        child();
        println!("child ok");
        return;
    }
    let out = run_test_in_child(test, VAR, "1");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("child ok"),
        "{:?} (a signal here is SIGPIPE's death)\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes to `w` until it fails (the peer is gone), `write` or
/// `write_vectored` as `vectored` says, and returns that error. Panics
/// after 1,000 successful writes.
pub fn write_until_error(mut w: impl std::io::Write, vectored: bool) -> std::io::Error {
    let buf = [7u8; 4096];
    for _ in 0..1000 {
        let r = if vectored {
            w.write_vectored(&[std::io::IoSlice::new(&buf), std::io::IoSlice::new(&buf)])
        } else {
            w.write(&buf)
        };
        if let Err(e) = r {
            return e;
        }
    }
    panic!("1,000 writes to a closed peer succeeded");
}

/// Counts green threads that reached a point a test must wait for (their
/// guards made, about to park), so that the test waits for them instead
/// of sleeping a guess that a loaded host can outlast: a shutdown before
/// a thread first runs drops its body unrun, and no destructor of it runs.
#[derive(Clone, Default)]
pub struct Arrivals(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Arrivals {
    pub fn new() -> Self {
        Self::default()
    }

    /// This thread has arrived.
    pub fn arrive(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Waits until `n` threads have arrived (panics after 60 s).
    pub fn wait_for(&self, n: usize) {
        let start = std::time::Instant::now();
        while self.0.load(std::sync::atomic::Ordering::SeqCst) < n {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "only {} of {n} threads arrived",
                self.0.load(std::sync::atomic::Ordering::SeqCst)
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}
