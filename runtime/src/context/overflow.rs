//! Stack overflow in a green thread: a message instead of a bare SIGSEGV.
//!
//! Owns: the process's SIGSEGV/SIGBUS handler (installed once, chained to
//! whatever handler was there before, usually std's), the alternate signal
//! stack of each worker thread, and the abort with a message for a guard
//! page hit or a smashed canary. Must not: allocate, lock or do anything
//! but atomic loads and `write(2)` inside the handler.
//!
//! The handler runs on the worker's alternate signal stack (the green
//! thread's own stack is exhausted). It looks the fault address up in the
//! slab table (`slab::TABLE`, append-only, atomics only). A hit on a guard
//! page means a green thread overflowed: the handler writes
//!
//! ```text
//! thread '<name>' (green task <id>) has overflowed its stack (stack size <N> KiB)
//! fatal runtime error: stack overflow, aborting
//! ```
//!
//! and aborts. Any other fault goes to the previous handler (std's, which
//! reports overflows of OS threads' own stacks), or, if there was none,
//! the default disposition is restored and the handler returns, so the
//! faulting instruction runs again and the fault takes its normal course.

use super::slab::TABLE;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Once, OnceLock};

/// The green thread running on this OS thread, for the message: its name
/// (if it has one) and its id. The task layer supplies it when the handler
/// is installed (this layer knows no tasks); it must be async-signal-safe
/// (a thread-local read, no allocation, no lock).
pub(crate) type CurrentTask = fn() -> Option<(Option<&'static str>, u64)>;

/// Set once by [`install_handler`]; read in the handler (an atomic load).
static CURRENT_TASK: OnceLock<CurrentTask> = OnceLock::new();

/// The handlers that were installed before ours (SIGSEGV, SIGBUS).
static OLD_SEGV: AtomicPtr<libc::sigaction> = AtomicPtr::new(ptr::null_mut());
static OLD_BUS: AtomicPtr<libc::sigaction> = AtomicPtr::new(ptr::null_mut());

/// Installs the overflow handler for the process (idempotent); `current`
/// names the running green thread in the message.
pub(crate) fn install_handler(current: CurrentTask) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = CURRENT_TASK.set(current);
        for (sig, old) in [(libc::SIGSEGV, &OLD_SEGV), (libc::SIGBUS, &OLD_BUS)] {
            // SAFETY: plain sigaction calls with zero-initialised structs
            // (valid for this C type); the old action is leaked so the
            // handler can read it for the life of the process.
            unsafe {
                let prev: &'static mut libc::sigaction = Box::leak(Box::new(std::mem::zeroed()));
                if libc::sigaction(sig, ptr::null(), prev) != 0 {
                    continue;
                }
                old.store(prev, Ordering::Release);
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = handler as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(sig, &act, ptr::null_mut());
            }
        }
    });
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some(hit) = TABLE.guard_hit(addr) {
        report_and_abort(hit.stack_size, "");
    }
    let old = if sig == libc::SIGBUS {
        &OLD_BUS
    } else {
        &OLD_SEGV
    };
    let prev = old.load(Ordering::Acquire);
    // SAFETY: `prev` is null or a leaked, never-written-again sigaction.
    let Some(prev) = (unsafe { prev.as_ref() }) else {
        return restore_default(sig);
    };
    let f = prev.sa_sigaction;
    if f == libc::SIG_DFL || f == libc::SIG_IGN {
        // Ignoring a fault would loop forever: take the default action.
        return restore_default(sig);
    }
    if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed as a three-argument
        // SA_SIGINFO handler; we pass it our own arguments unchanged.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(f) };
        f(sig, info, ctx);
    } else {
        // SAFETY: a one-argument handler, as installed by its owner.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(f) };
        f(sig);
    }
}

fn restore_default(sig: libc::c_int) {
    // SAFETY: sigaction is async-signal-safe; a zeroed struct is SIG_DFL
    // with an empty mask. Returning re-executes the faulting instruction,
    // which now takes the default action.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &act, ptr::null_mut());
    }
}

/// Aborts because the canary below the running green thread's stack (at
/// `canary`) was overwritten: it overflowed its stack.
#[cold]
#[inline(never)]
pub(crate) fn canary_smashed(canary: usize) -> ! {
    let size = TABLE.stack_size_at(canary).unwrap_or(0);
    report_and_abort(size, "; found by its stack canary at a switch or yield");
}

/// Writes the overflow message for the running green thread (if any) and
/// aborts. Async-signal-safe: no allocation, no locks, `write(2)` only.
fn report_and_abort(stack_size: usize, how: &str) -> ! {
    let mut m = Msg::new();
    m.push("\nthread '");
    match CURRENT_TASK.get().and_then(|current| current()) {
        Some((name, id)) => {
            m.push(name.unwrap_or("<unnamed>"));
            m.push("' (green task ");
            m.push_u64(id);
            m.push(")");
        }
        None => m.push("<unknown>' (a green thread)"),
    }
    m.push(" has overflowed its stack (stack size ");
    m.push_u64((stack_size / 1024) as u64);
    m.push(" KiB");
    m.push(how);
    m.push(")\nfatal runtime error: stack overflow, aborting\n");
    m.write_stderr();
    // SAFETY: abort is async-signal-safe and does not return.
    unsafe { libc::abort() }
}

/// A fixed-size message buffer (no allocation).
struct Msg {
    buf: [u8; 512],
    len: usize,
}

impl Msg {
    fn new() -> Self {
        Msg {
            buf: [0; 512],
            len: 0,
        }
    }

    fn push(&mut self, s: &str) {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
    }

    fn push_u64(&mut self, mut v: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        // Digits are ASCII.
        self.push(std::str::from_utf8(&digits[i..]).unwrap_or("?"));
    }

    fn write_stderr(&self) {
        let mut off = 0;
        while off < self.len {
            // SAFETY: writing bytes of our own buffer to fd 2.
            let r =
                unsafe { libc::write(2, self.buf[off..self.len].as_ptr().cast(), self.len - off) };
            if r <= 0 {
                break;
            }
            off += r as usize;
        }
    }
}

/// An alternate signal stack for the calling thread, if it has none yet
/// (std gives its own threads one when its overflow handler is installed);
/// removed and freed when dropped. Worker threads hold one while they run.
pub(crate) struct AltStack {
    mapped: Option<(usize, usize)>,
}

/// Bytes of an alternate signal stack we map (plus a guard page).
const ALT_STACK_BYTES: usize = 64 * 1024;

impl AltStack {
    /// Makes sure the calling thread has an alternate signal stack.
    pub(crate) fn ensure() -> AltStack {
        let page = super::slab::page_size();
        // SAFETY: sigaltstack/mmap/mprotect calls on a fresh private mapping
        // that only this thread's signal delivery uses; the zeroed
        // stack_t is a valid "query" argument.
        unsafe {
            let mut cur: libc::stack_t = std::mem::zeroed();
            if libc::sigaltstack(ptr::null(), &mut cur) == 0 && cur.ss_flags & libc::SS_DISABLE == 0
            {
                return AltStack { mapped: None };
            }
            let len = ALT_STACK_BYTES + page;
            let p = libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return AltStack { mapped: None };
            }
            libc::mprotect(p, page, libc::PROT_NONE);
            let st = libc::stack_t {
                ss_sp: p.cast::<u8>().add(page).cast(),
                ss_flags: 0,
                ss_size: ALT_STACK_BYTES,
            };
            if libc::sigaltstack(&st, ptr::null_mut()) != 0 {
                libc::munmap(p, len);
                return AltStack { mapped: None };
            }
            AltStack {
                mapped: Some((p as usize, len)),
            }
        }
    }
}

impl Drop for AltStack {
    fn drop(&mut self) {
        if let Some((p, len)) = self.mapped.take() {
            // SAFETY: disable our alternate stack (no signal handler is
            // running on it: we are in ordinary code), then unmap it.
            unsafe {
                let st = libc::stack_t {
                    ss_sp: ptr::null_mut(),
                    ss_flags: libc::SS_DISABLE,
                    ss_size: 0,
                };
                libc::sigaltstack(&st, ptr::null_mut());
                libc::munmap(p as *mut _, len);
            }
        }
    }
}
