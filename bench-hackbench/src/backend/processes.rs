//! The `processes` backend: `fork()`ed children blocking on real fds
//! (rt-tests' default, `-P`).
//!
//! Owns: forking hackbench children into their own process group, the
//! pipe-based start barrier (each child writes one byte to a "ready" pipe,
//! the parent closes the "go" pipe to release everyone at once), reaping
//! (all children, only ours, killing the rest when one fails), the shared
//! memory where children leave their counts for `verify`, and the spawn
//! step (`fork` + `waitpid`, child `_exit(0)`, at most one `fork` per CPU
//! in flight: [`ForkSlots`]).
//!
//! Must not: let a child run any of the parent's code after `fork` other
//! than the async-signal-safe loops in `workload` (no allocation, no locks,
//! no destructors, no unwinding into the parent's frames); a child always
//! leaves through `_exit`. Must not reap children that are not its own
//! (`waitpid` only on its process group or on a known pid), because other
//! code in the same process (tests) may have children too.

use super::{BackendKind, HackbenchConfig, HackbenchRun, SpawnBackend, SpawnConfig, SpawnRun};
use crate::error::BenchError;
use crate::policy::KernelPolicy;
use crate::spawn::Go;
use crate::transport::{make_channels, pipe, read_some, write_all};
use crate::verify::{check_receiver, Received, VerifyError};
use crate::workload::{receive_messages, Loops, SendFn};
use std::fmt::{self, Write as _};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Instant;

/// Child exit code: an I/O error.
const EXIT_IO: i32 = 1;
/// Child exit code: a receiver's count did not match.
const EXIT_COUNT: i32 = 3;
/// Child exit code: the child's code panicked.
const EXIT_PANIC: i32 = 101;
/// Slot value meaning "never reported".
const UNREPORTED: u64 = u64::MAX;

/// The `processes` backend (hackbench and spawn modes).
pub struct Processes;

/// A fixed `-l` run with the given sender loop (tests pass broken ones).
pub(crate) fn run_fixed(
    cfg: &HackbenchConfig,
    send: SendFn<OwnedFd>,
) -> Result<HackbenchRun, BenchError> {
    crate::transport::require_fds(cfg.transport, "processes")?;
    let (f, s) = (cfg.fds, cfg.datasize);
    // Two slots per task: senders store loops done; receivers store
    // messages and partial bytes. Task t of group g: senders first.
    let slots = SharedSlots::new(2 * cfg.tasks()).map_err(|e| BenchError::io("mmap", e))?;
    let (ready_r, ready_w) = pipe().map_err(|e| BenchError::io("creating the ready pipe", e))?;
    let (go_r, go_w) = pipe().map_err(|e| BenchError::io("creating the go pipe", e))?;
    let msg = vec![0x5au8; s];
    let mut buf = vec![0u8; s];
    let mut kids = Children::with_capacity(cfg.tasks());
    // The children inherit the policy from this thread while it forks them.
    let policy = KernelPolicy::for_tasks(cfg.policy)?;
    let barrier = ChildBarrier {
        ready_w: ready_w.as_fd(),
        go_r: go_r.as_fd(),
    };
    let loops = cfg.loops;
    let expected = cfg.messages_per_receiver();

    for g in 0..cfg.groups {
        let (writers, readers): (Vec<OwnedFd>, Vec<OwnedFd>) = make_channels(cfg.transport, f)
            .map_err(|e| BenchError::io(format!("group {g}: creating channels"), e))?
            .into_iter()
            .map(|c| (c.tx, c.rx))
            .unzip();
        let mut sender_keep: Vec<RawFd> = writers.iter().map(|w| w.as_raw_fd()).collect();
        sender_keep.extend([barrier.ready_w.as_raw_fd(), barrier.go_r.as_raw_fd()]);
        sender_keep.sort_unstable();

        for (i, rx) in readers.iter().enumerate() {
            let slot = 2 * (g * 2 * f + f + i);
            let mut rx = rx.as_fd();
            let mut keep = [
                rx.as_raw_fd(),
                barrier.ready_w.as_raw_fd(),
                barrier.go_r.as_raw_fd(),
            ];
            keep.sort_unstable();
            let buf = &mut buf;
            let slots = &slots;
            kids.fork(Role::Receiver(g, i), &keep, move || {
                if !barrier.wait() {
                    return EXIT_IO;
                }
                match receive_messages(&mut rx, buf) {
                    Ok(r) => {
                        slots.set(slot, r.messages);
                        slots.set(slot + 1, r.partial_bytes as u64);
                        if r.messages == expected && r.partial_bytes == 0 {
                            0
                        } else {
                            EXIT_COUNT
                        }
                    }
                    Err(e) => {
                        complain(format_args!("group {g} receiver {i}: read failed"), &e);
                        EXIT_IO
                    }
                }
            })?;
        }
        for i in 0..f {
            let slot = 2 * (g * 2 * f + i);
            let (writers, msg, slots) = (&writers, &msg, &slots);
            kids.fork(Role::Sender(g, i), &sender_keep, move || {
                if !barrier.wait() {
                    return EXIT_IO;
                }
                match send(writers, msg, Loops::Fixed(loops)) {
                    Ok(n) => {
                        slots.set(slot, n);
                        0
                    }
                    Err(e) => {
                        complain(format_args!("group {g} sender {i}: write failed"), &e);
                        EXIT_IO
                    }
                }
            })?;
        }
        // The parent's copies close here; only the children hold the group's fds.
    }
    drop(policy);
    drop(ready_w);
    let mut ready = 0usize;
    let mut sink = [0u8; 256];
    while ready < cfg.tasks() {
        match read_some(ready_r.as_fd(), &mut sink) {
            Ok(0) => {
                let failure = kids.wait_all();
                return Err(failure.unwrap_or_else(|| {
                    BenchError::Task("children exited before the start barrier".into())
                }));
            }
            Ok(n) => ready += n,
            Err(e) => return Err(BenchError::io("reading the ready pipe", e)),
        }
    }
    let start = Instant::now();
    drop(go_w); // every child's read of the go pipe returns end of file: go
    let failure = kids.wait_all();
    let elapsed = start.elapsed();

    let verified = verify_slots(cfg, &slots);
    match (failure, verified) {
        (None, Ok(messages)) => Ok(HackbenchRun {
            elapsed,
            messages,
            details: Vec::new(),
        }),
        // A count mismatch explains a failed child best.
        (
            _,
            Err(
                e @ (VerifyError::Lost { .. }
                | VerifyError::Extra { .. }
                | VerifyError::Short { .. }),
            ),
        )
        | (None, Err(e)) => Err(e.into()),
        (Some(f), _) => Err(f),
    }
}

/// Checks the counts the children left behind. Receivers are checked
/// first, so a lost or short message is named even if the parent killed
/// other children before they reported.
fn verify_slots(cfg: &HackbenchConfig, slots: &SharedSlots) -> Result<u64, VerifyError> {
    let f = cfg.fds;
    let expected = cfg.messages_per_receiver();
    for g in 0..cfg.groups {
        for i in 0..f {
            let slot = 2 * (g * 2 * f + f + i);
            let messages = slots.get(slot);
            if messages != UNREPORTED {
                let r = Received {
                    messages,
                    partial_bytes: slots.get(slot + 1) as usize,
                };
                check_receiver(g, i, cfg.datasize, expected, r)?;
            }
        }
    }
    for g in 0..cfg.groups {
        for (role, base) in [("sender", 0), ("receiver", f)] {
            for i in 0..f {
                let v = slots.get(2 * (g * 2 * f + base + i));
                if v == UNREPORTED {
                    return Err(VerifyError::Missing {
                        group: g,
                        role,
                        index: i,
                    });
                }
                if role == "sender" && v != cfg.loops {
                    return Err(VerifyError::SenderIncomplete {
                        group: g,
                        sender: i,
                        loops: v,
                        expected: cfg.loops,
                    });
                }
            }
        }
    }
    Ok(expected * (cfg.groups * f) as u64)
}

/// The child side of the start barrier (only fds; `Copy` into each child).
#[derive(Clone, Copy)]
struct ChildBarrier<'a> {
    ready_w: BorrowedFd<'a>,
    go_r: BorrowedFd<'a>,
}

impl ChildBarrier<'_> {
    /// Says "ready", closes the ready end, blocks until the parent closes
    /// the go pipe. `false` if the parent went away without saying go.
    fn wait(self) -> bool {
        if write_all(self.ready_w, &[1]).is_err() {
            return false;
        }
        // SAFETY: this child owns its copy of the fd and never uses it again.
        unsafe { libc::close(self.ready_w.as_raw_fd()) };
        let mut b = [0u8; 1];
        matches!(read_some(self.go_r, &mut b), Ok(0))
    }
}

/// Which task a child is, for error messages.
#[derive(Clone, Copy, Debug)]
enum Role {
    Sender(usize, usize),
    Receiver(usize, usize),
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Role::Sender(g, i) => write!(f, "group {g} sender {i}"),
            Role::Receiver(g, i) => write!(f, "group {g} receiver {i}"),
        }
    }
}

/// The children of one run, all in one process group.
struct Children {
    kids: Vec<(libc::pid_t, Role)>,
    pgid: libc::pid_t,
    reaped: usize,
}

impl Children {
    fn with_capacity(n: usize) -> Self {
        Children {
            kids: Vec::with_capacity(n),
            pgid: 0,
            reaped: 0,
        }
    }

    /// Forks a child that closes every fd except 0-2 and `keep` (sorted),
    /// joins the run's process group, runs `body` and `_exit`s with its
    /// return value. Returns in the parent only.
    fn fork(
        &mut self,
        role: Role,
        keep: &[RawFd],
        body: impl FnOnce() -> i32,
    ) -> Result<(), BenchError> {
        // Grow before forking, never after: the child must not allocate.
        self.kids.reserve(1);
        // SAFETY: getpid/fork have no preconditions; the child below only
        // makes async-signal-safe calls and leaves through _exit.
        let parent = unsafe { libc::getpid() };
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(BenchError::io(
                format!("fork ({role})"),
                io::Error::last_os_error(),
            ));
        }
        if pid == 0 {
            // Child.
            // SAFETY: async-signal-safe calls only; never returns.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                if libc::getppid() != parent {
                    libc::_exit(EXIT_IO);
                }
                libc::setpgid(0, self.pgid);
                close_all_except(keep);
                let code = catch_unwind(AssertUnwindSafe(body)).unwrap_or(EXIT_PANIC);
                libc::_exit(code);
            }
        }
        // Parent: also set the group, whichever of us runs first.
        let group = if self.pgid == 0 { pid } else { self.pgid };
        // SAFETY: plain syscall on our own child.
        unsafe { libc::setpgid(pid, group) };
        self.pgid = group;
        self.kids.push((pid, role));
        Ok(())
    }

    /// Reaps every child. On the first one that did not exit 0, kills the
    /// rest (they would fail or hang anyway) and keeps reaping. Returns that
    /// first failure.
    fn wait_all(&mut self) -> Option<BenchError> {
        let mut failure = None;
        while self.reaped < self.kids.len() {
            let mut status = 0;
            // SAFETY: waits only for children in our own process group.
            let pid = unsafe { libc::waitpid(-self.pgid, &mut status, 0) };
            if pid < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                failure.get_or_insert(BenchError::io("waitpid", e));
                break;
            }
            self.reaped += 1;
            let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
            if !ok && failure.is_none() {
                let role = self
                    .kids
                    .iter()
                    .find(|k| k.0 == pid)
                    .map_or_else(|| format!("pid {pid}"), |k| k.1.to_string());
                let how = if libc::WIFEXITED(status) {
                    format!("exited with status {}", libc::WEXITSTATUS(status))
                } else if libc::WIFSIGNALED(status) {
                    format!("was killed by signal {}", libc::WTERMSIG(status))
                } else {
                    format!("ended with wait status {status:#x}")
                };
                failure = Some(BenchError::Task(format!("child process ({role}) {how}")));
                self.kill_all();
            }
        }
        failure
    }

    fn kill_all(&self) {
        if self.pgid > 0 {
            // SAFETY: signals only our own process group.
            unsafe { libc::kill(-self.pgid, libc::SIGKILL) };
        }
    }
}

impl Drop for Children {
    /// On any early return: no child outlives the run, no zombie is left.
    fn drop(&mut self) {
        if self.reaped < self.kids.len() {
            self.kill_all();
            let _ = self.wait_all();
        }
    }
}

/// Closes every fd above 2 that is not in `keep` (sorted ascending).
/// Async-signal-safe: `close_range(2)`, falling back to `close` in a loop.
fn close_all_except(keep: &[RawFd]) {
    let mut lo: u32 = 3;
    for &fd in keep {
        let fd = fd as u32;
        if fd < lo {
            continue;
        }
        if fd > lo {
            close_range(lo, fd - 1);
        }
        lo = fd + 1;
    }
    close_range(lo, u32::MAX);
}

fn close_range(lo: u32, hi: u32) {
    // SAFETY: closing fds this (child) process does not use.
    let r = unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) };
    if r != 0 {
        for fd in lo..=hi.min(65_535) {
            // SAFETY: as above.
            unsafe { libc::close(fd as RawFd) };
        }
    }
}

/// Writes `hackbench: WHAT: ERROR` to stderr without allocating.
fn complain(what: fmt::Arguments<'_>, e: &io::Error) {
    let mut m = StackMsg::default();
    let _ = write!(m, "hackbench: {what}: {:?}", e.kind());
    if let Some(code) = e.raw_os_error() {
        let _ = write!(m, " (os error {code})");
    }
    let _ = m.write_str("\n");
    // SAFETY: the buffer is valid for `len` bytes.
    unsafe { libc::write(2, m.buf.as_ptr().cast(), m.len) };
}

/// A fixed-size, truncating text buffer for messages from forked children.
struct StackMsg {
    buf: [u8; 256],
    len: usize,
}

impl Default for StackMsg {
    fn default() -> Self {
        StackMsg {
            buf: [0; 256],
            len: 0,
        }
    }
}

impl fmt::Write for StackMsg {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// `u64` slots in anonymous shared memory, visible to the parent after the
/// children write them.
struct SharedSlots {
    ptr: *mut AtomicU64,
    len: usize,
}

impl SharedSlots {
    fn new(len: usize) -> io::Result<Self> {
        let bytes = len.max(1) * std::mem::size_of::<u64>();
        // SAFETY: anonymous shared mapping; checked for MAP_FAILED below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let s = SharedSlots { ptr: p.cast(), len };
        for i in 0..len {
            s.set(i, UNREPORTED);
        }
        Ok(s)
    }

    fn slot(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.len);
        // SAFETY: in bounds of a live, page-aligned mapping; AtomicU64 has
        // the layout of u64 and all access goes through atomics.
        unsafe { &*self.ptr.add(i) }
    }

    fn set(&self, i: usize, v: u64) {
        self.slot(i).store(v, Ordering::Release);
    }

    fn get(&self, i: usize) -> u64 {
        self.slot(i).load(Ordering::Acquire)
    }
}

impl Drop for SharedSlots {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping, size as mapped.
        unsafe {
            libc::munmap(
                self.ptr.cast(),
                self.len.max(1) * std::mem::size_of::<u64>(),
            )
        };
    }
}

impl SpawnBackend for Processes {
    fn kind(&self) -> BackendKind {
        BackendKind::Processes
    }

    fn run(&self, cfg: &SpawnConfig) -> Result<SpawnRun, BenchError> {
        super::threads::os_spawn_run(cfg, fork_and_wait, "fork/waitpid")
    }
}

/// The spawn test's `fork`s in flight at once: at most one per CPU.
///
/// Forks from one process take turns in the kernel (each copies the
/// parent's memory map under its lock), and each takes longer the more
/// threads (stacks) the process has, so with thousands of spawners the
/// forks already inside `fork()` when the `--duration` deadline passes
/// would run on for minutes (`--spawners 4096 --duration 1` took 126 s).
/// Spawners beyond the CPUs wait here instead, where they see the deadline
/// and give up. With at most one spawner per CPU no one ever waits.
struct ForkSlots {
    busy: Mutex<usize>,
    freed: Condvar,
}

static FORK_SLOTS: ForkSlots = ForkSlots {
    busy: Mutex::new(0),
    freed: Condvar::new(),
};

/// A taken fork slot; dropping it gives it back.
struct ForkSlot;

impl ForkSlots {
    /// The number of slots: the CPUs this process may run on.
    fn limit() -> usize {
        static LIMIT: OnceLock<usize> = OnceLock::new();
        *LIMIT.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        self.busy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a free slot while `go` is on; `None` once it is off.
    fn take(&self, go: &Go) -> Option<ForkSlot> {
        let mut busy = self.lock();
        loop {
            if !go.on() {
                drop(busy);
                // The wakeup that brought us here may have been meant
                // for a spawner that would take the slot: pass it on.
                self.freed.notify_one();
                return None;
            }
            if *busy < Self::limit() {
                *busy += 1;
                return Some(ForkSlot);
            }
            busy = self
                .freed
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Drop for ForkSlot {
    fn drop(&mut self) {
        *FORK_SLOTS.lock() -= 1;
        FORK_SLOTS.freed.notify_one();
    }
}

/// One spawn step: `fork` (once a fork slot is free, and only if the run
/// still wants spawns then), the child `_exit(0)`s at once, `waitpid` on it.
fn fork_and_wait(go: &Go) -> io::Result<bool> {
    let Some(slot) = FORK_SLOTS.take(go) else {
        return Ok(false);
    };
    // SAFETY: the child calls only _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // Not even the slot's drop: the child must not touch the lock.
        // SAFETY: _exit never returns and runs no destructors or atexit hooks.
        unsafe { libc::_exit(0) };
    }
    let fork_error = (pid < 0).then(io::Error::last_os_error);
    drop(slot);
    if let Some(e) = fork_error {
        return Err(e);
    }
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(true)
    } else {
        Err(io::Error::other(format!(
            "spawned child ended with wait status {status:#x}"
        )))
    }
}
