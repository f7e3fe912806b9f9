//! The epoll reactor: readiness of registered file descriptors, and who
//! polls for it.
//!
//! Owns: one epoll instance per runtime (created lazily, at the first
//! registration), the per-descriptor readiness record ([`ScheduledIo`]:
//! readiness bits + a tick, and the green threads waiting to read and to
//! write), the poll itself (`epoll_pwait2`, nanosecond timeouts), the
//! dispatch of readiness to waiters (parked green or OS threads, and the
//! `Waker` of the future polling each direction: `io::poll`), and the
//! *poller role* — at most one worker at a time blocks in `epoll_pwait2`
//! instead of its futex. Must
//! not: switch, or hold its locks while a green thread could switch (only
//! wakes are issued under the poll lock, never a park).
//!
//! See the [`crate::io`] module docs for the design as a whole (who polls
//! when, the idle-protocol extension and the no-lost-wakeup argument).
//!
//! # Tokens and lifetimes
//!
//! The epoll token of a registration is the address of its
//! `Arc<ScheduledIo>` (the reactor's own waker uses token 0, which no
//! allocation has). An event is turned back into a reference under the
//! poll lock. That is sound because a deregistered record is not freed at
//! once: after `EPOLL_CTL_DEL` its `Arc` moves to the `release` list, which
//! is emptied only by a poller holding the poll lock *before* its next
//! `epoll_pwait2`. Every event that can carry the token was either returned
//! by a poll that finished (its dispatch ran under the lock, before the
//! release) or can no longer be returned (the `DEL` happened first).
//! Compared with a slab (token → index under a lock), this keeps a global
//! lock off the per-event path and off registration.
//!
//! # Readiness word
//!
//! `readiness` packs the readiness bits (low byte) and a tick (the number
//! of events dispatched to this record, from bit 16). An I/O operation
//! snapshots the word *before* trying the syscall; when the syscall says
//! `EAGAIN` it clears its direction's bits only if the word still equals
//! the snapshot (`compare_exchange`). An event that arrived in between
//! bumped the tick, so it cannot be erased (the ABA problem of clearing
//! edge-triggered readiness).

use crate::io::source::Direction;
use crate::shared::Shared;
use crate::task::TaskRef;
use crate::wake::waiter::Waiter;
use parking_lot::Mutex;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

/// Readiness bits of [`ScheduledIo::readiness`].
pub(crate) mod ready {
    /// `EPOLLIN` / `EPOLLPRI`.
    pub(crate) const READABLE: usize = 1;
    /// `EPOLLOUT`.
    pub(crate) const WRITABLE: usize = 2;
    /// The peer closed its writing half (`EPOLLHUP`, or `EPOLLIN|EPOLLRDHUP`).
    pub(crate) const READ_CLOSED: usize = 4;
    /// Writing can no longer succeed (`EPOLLHUP`, or `EPOLLERR` with/without `EPOLLOUT`).
    pub(crate) const WRITE_CLOSED: usize = 8;
    /// `EPOLLERR`.
    pub(crate) const ERROR: usize = 16;
    /// All readiness bits.
    pub(crate) const MASK: usize = 0xff;
    /// The tick lives above this many bits.
    pub(crate) const TICK_SHIFT: u32 = 16;
}

/// The token of the reactor's own waker (no `Arc` has address 0).
const WAKE_TOKEN: usize = 0;
/// Events fetched per `epoll_pwait2` (more stay queued in the kernel).
const EVENTS: usize = 256;
/// Deregistered records waiting for a poll before the reactor wakes its
/// blocked poller to free them.
const RELEASE_BATCH: usize = 64;

impl Direction {
    /// The bits that let a waiter of this direction retry.
    #[inline]
    pub(crate) fn ready_mask(self) -> usize {
        match self {
            Direction::Read => ready::READABLE | ready::READ_CLOSED | ready::ERROR,
            Direction::Write => ready::WRITABLE | ready::WRITE_CLOSED | ready::ERROR,
        }
    }
}

/// Readiness bits of one epoll event (mio's interpretation, see
/// `mio::event::Event`).
fn from_epoll(ev: u32) -> usize {
    let ev = ev as libc::c_int;
    let mut r = 0;
    if ev & (libc::EPOLLIN | libc::EPOLLPRI) != 0 {
        r |= ready::READABLE;
    }
    if ev & libc::EPOLLOUT != 0 {
        r |= ready::WRITABLE;
    }
    if ev & libc::EPOLLHUP != 0 || (ev & libc::EPOLLIN != 0 && ev & libc::EPOLLRDHUP != 0) {
        r |= ready::READ_CLOSED;
    }
    if ev & libc::EPOLLHUP != 0 || ev & libc::EPOLLERR != 0 {
        r |= ready::WRITE_CLOSED;
    }
    if ev & libc::EPOLLERR != 0 {
        r |= ready::ERROR;
    }
    r
}

/// Green threads waiting on one descriptor, and the futures (their
/// [`Waker`]s) polling it: one per direction, the last one to poll, as
/// for any `AsyncRead`/`AsyncWrite` object.
#[derive(Default)]
struct Waiters {
    reader: Vec<Waiter>,
    writer: Vec<Waiter>,
    read_task: Option<Waker>,
    write_task: Option<Waker>,
}

impl Waiters {
    fn list(&mut self, dir: Direction) -> &mut Vec<Waiter> {
        match dir {
            Direction::Read => &mut self.reader,
            Direction::Write => &mut self.writer,
        }
    }

    fn task(&mut self, dir: Direction) -> &mut Option<Waker> {
        match dir {
            Direction::Read => &mut self.read_task,
            Direction::Write => &mut self.write_task,
        }
    }
}

/// Whether two waiters are the same green thread / OS thread.
fn same(a: &Waiter, b: &Waiter) -> bool {
    match (a, b) {
        (Waiter::Green(x), Waiter::Green(y)) => TaskRef::ptr_eq(x, y),
        (Waiter::Thread(x), Waiter::Thread(y)) => x.id() == y.id(),
        _ => false,
    }
}

/// The readiness record of one registered descriptor.
pub(crate) struct ScheduledIo {
    /// Readiness bits | tick << `TICK_SHIFT`.
    readiness: AtomicUsize,
    waiters: Mutex<Waiters>,
}

impl ScheduledIo {
    fn new() -> Self {
        ScheduledIo {
            readiness: AtomicUsize::new(0),
            waiters: Mutex::new(Waiters::default()),
        }
    }

    /// The readiness word, to pass to [`clear`](Self::clear) after an
    /// operation that would block. `SeqCst`: see [`is_ready`](Self::is_ready).
    #[inline]
    pub(crate) fn snapshot(&self) -> usize {
        self.readiness.load(Ordering::SeqCst)
    }

    /// Whether a waiter of `dir` should retry. `SeqCst`: the waiter
    /// evaluates this after marking itself blocked (`wake::waiter::park`);
    /// the reactor publishes readiness with a `SeqCst` RMW before it reads
    /// the waiter's state in `wake_task`, so one of the two sees the other.
    #[inline]
    pub(crate) fn is_ready(&self, dir: Direction) -> bool {
        self.readiness.load(Ordering::SeqCst) & dir.ready_mask() != 0
    }

    /// An operation in `dir` that started when the word was `snap` got
    /// `EAGAIN`: forget `dir`'s readiness unless an event arrived since.
    /// Returns whether `dir` should be retried at once (an event did arrive).
    ///
    /// All of `dir`'s bits are cleared, `*_CLOSED` and `ERROR` too: the
    /// kernel just said "not ready", and any later change of the file's
    /// state raises a new edge-triggered event.
    pub(crate) fn clear(&self, snap: usize, dir: Direction) -> bool {
        let cleared = snap & !dir.ready_mask();
        match self
            .readiness
            .compare_exchange(snap, cleared, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => false,
            Err(now) => now & dir.ready_mask() != 0,
        }
    }

    /// Adds `w` to `dir`'s waiters (once).
    pub(crate) fn add_waiter(&self, dir: Direction, w: Waiter) {
        let mut g = self.waiters.lock();
        let list = g.list(dir);
        if !list.iter().any(|x| same(x, &w)) {
            list.push(w);
        }
    }

    /// Makes `waker` the future to wake at `dir`'s next readiness,
    /// replacing the previous one (the async-I/O contract: only the task
    /// that polled last is woken). Same protocol as
    /// [`add_waiter`](Self::add_waiter): the caller re-checks
    /// [`is_ready`](Self::is_ready) after this returns; the reactor
    /// publishes readiness before it takes the waker under this lock, so
    /// either the re-check sees the readiness or the reactor sees the waker.
    pub(crate) fn set_task_waker(&self, dir: Direction, waker: &Waker) {
        let old = {
            let mut g = self.waiters.lock();
            let slot = g.task(dir);
            match slot {
                Some(w) if w.will_wake(waker) => None,
                _ => slot.replace(waker.clone()),
            }
        };
        drop(old); // outside the lock: dropping a waker may run arbitrary code
    }

    /// Removes `w` from `dir`'s waiters (after a timeout).
    pub(crate) fn remove_waiter(&self, dir: Direction, w: &Waiter) {
        let removed = {
            let mut g = self.waiters.lock();
            let list = g.list(dir);
            list.iter()
                .position(|x| same(x, w))
                .map(|i| list.swap_remove(i))
        };
        drop(removed); // outside the lock
    }

    /// Publishes an event's readiness, then wakes the waiters it concerns
    /// (after releasing the waiter lock).
    fn dispatch(&self, bits: usize) {
        let mut cur = self.readiness.load(Ordering::Relaxed);
        loop {
            let tick = (cur >> ready::TICK_SHIFT).wrapping_add(1);
            let new = (tick << ready::TICK_SHIFT) | (cur & ready::MASK) | bits;
            match self.readiness.compare_exchange_weak(
                cur,
                new,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(c) => cur = c,
            }
        }
        if bits & Direction::Read.ready_mask() != 0 {
            self.wake(Direction::Read);
        }
        if bits & Direction::Write.ready_mask() != 0 {
            self.wake(Direction::Write);
        }
    }

    /// Wakes every waiter of `dir`, a few at a time, none under the lock.
    fn wake(&self, dir: Direction) {
        loop {
            let mut batch: [Option<Waiter>; 4] = Default::default();
            let (task, more) = {
                let mut g = self.waiters.lock();
                let task = g.task(dir).take();
                let list = g.list(dir);
                for slot in batch.iter_mut() {
                    *slot = list.pop();
                    if slot.is_none() {
                        break;
                    }
                }
                (task, !list.is_empty())
            };
            // Readiness wakeups may go to the polling worker (WA_IO).
            crate::wake::placement::io_wakeups(|| {
                if let Some(t) = task {
                    // A future's waker, maybe another executor's.
                    crate::wake::wake_foreign(t);
                }
                for w in batch.iter().flatten() {
                    w.wake();
                }
            });
            if !more {
                return;
            }
        }
    }

    /// Drops every waiter (deregistration): a released record must not keep
    /// tasks (and through them the runtime) alive.
    fn clear_waiters(&self) {
        let old = std::mem::take(&mut *self.waiters.lock());
        drop(old);
    }
}

/// What the poll lock guards.
struct PollState {
    events: Vec<libc::epoll_event>,
    /// Scratch list the release list is swapped into (keeps both buffers).
    spare: Vec<Arc<ScheduledIo>>,
}

/// A runtime's reactor.
pub(crate) struct Reactor {
    state: Mutex<PollState>,
    /// Owns the epoll fd (`epfd`), closed when the reactor is dropped.
    _poll: mio::Poll,
    epfd: RawFd,
    registry: mio::Registry,
    waker: Arc<mio::Waker>,
    /// A worker holds the poller role (blocks in epoll instead of its futex).
    poller: AtomicBool,
    /// Live registrations (idle polls are skipped when there are none).
    registered: AtomicUsize,
    /// Deregistered records waiting for the next poll (module docs).
    release: Mutex<Vec<Arc<ScheduledIo>>>,
    shutdown: AtomicBool,
}

impl Reactor {
    fn new() -> io::Result<Reactor> {
        let poll = mio::Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Arc::new(mio::Waker::new(poll.registry(), mio::Token(WAKE_TOKEN))?);
        let epfd = poll.as_raw_fd();
        Ok(Reactor {
            state: Mutex::new(PollState {
                events: vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS],
                spare: Vec::new(),
            }),
            _poll: poll,
            epfd,
            registry,
            waker,
            poller: AtomicBool::new(false),
            registered: AtomicUsize::new(0),
            release: Mutex::new(Vec::new()),
            shutdown: AtomicBool::new(false),
        })
    }

    /// Registers `fd` (edge-triggered, once for its lifetime). If it is
    /// ready already, the kernel queues an event at once.
    pub(crate) fn register(
        &self,
        fd: RawFd,
        interest: mio::Interest,
    ) -> io::Result<Arc<ScheduledIo>> {
        if self.is_shutdown() {
            return Err(shutdown_error());
        }
        let sio = Arc::new(ScheduledIo::new());
        let token = mio::Token(Arc::as_ptr(&sio) as usize);
        self.registry
            .register(&mut mio::unix::SourceFd(&fd), token, interest)?;
        self.registered.fetch_add(1, Ordering::Relaxed);
        Ok(sio)
    }

    /// Deregisters `fd` (before it is closed) and retires its record.
    pub(crate) fn deregister(&self, fd: RawFd, sio: Arc<ScheduledIo>) {
        let _ = self.registry.deregister(&mut mio::unix::SourceFd(&fd));
        self.registered.fetch_sub(1, Ordering::Relaxed);
        sio.clear_waiters();
        if self.is_shutdown() {
            // No poll can run any more (the workers are
            // joined before `shutdown`), so no event can name it.
            drop(sio);
            return;
        }
        let n = {
            let mut rel = self.release.lock();
            rel.push(sio);
            rel.len()
        };
        if n >= RELEASE_BATCH && self.poller.load(Ordering::Relaxed) {
            // A blocked poller frees them when it wakes and polls again.
            let _ = self.waker.wake();
        }
    }

    /// Whether the runtime has shut down (no more polls).
    #[inline]
    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Polls without blocking, unless a poller is blocked in epoll (it gets
    /// the events itself), another thread is polling, or nothing is
    /// registered. Returns the number of I/O events dispatched.
    pub(crate) fn poll_now(&self) -> usize {
        if self.registered.load(Ordering::Relaxed) == 0
            || self.poller.load(Ordering::Relaxed)
            || self.is_shutdown()
        {
            return 0;
        }
        match self.state.try_lock() {
            Some(mut st) => self.turn(&mut st, Some(Duration::ZERO), || {}),
            None => 0,
        }
    }

    /// Whether any descriptor is registered.
    #[inline]
    pub(crate) fn has_registrations(&self) -> bool {
        self.registered.load(Ordering::Relaxed) > 0
    }

    /// Claims the poller role; at most one idle worker holds it.
    #[inline]
    pub(crate) fn try_claim_poller(&self) -> bool {
        !self.poller.load(Ordering::Relaxed)
            && self
                .poller
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Whether no worker holds the poller role (a parking worker's look,
    /// after its SeqCst fence: `worker::run::release_poller_role`).
    #[inline]
    pub(crate) fn poller_free(&self) -> bool {
        !self.poller.load(Ordering::Relaxed)
    }

    /// The epoll instance's fd (the io_uring driver's idle park polls it
    /// through the ring while it holds the poller role).
    #[inline]
    pub(crate) fn epoll_fd(&self) -> RawFd {
        self.epfd
    }

    /// Collects and dispatches the events epoll has now (waits for the
    /// poll lock, never for events). Only for the holder of the poller
    /// role that learned of readiness some other way (the io_uring
    /// driver's idle park): any other thread could wait here behind a
    /// poller blocked in `epoll_wait`, and must use [`poll_now`](Self::poll_now).
    pub(crate) fn dispatch_now(&self) -> usize {
        let mut st = self.state.lock();
        self.turn(&mut st, Some(Duration::ZERO), || {})
    }

    /// Gives the poller role back.
    #[inline]
    pub(crate) fn release_poller(&self) {
        self.poller.store(false, Ordering::Release);
    }

    /// The poller's park: blocks in epoll until an event, a kick (the
    /// reactor's waker) or `timeout`; calls `woken` as soon as the wait
    /// returns (before dispatching), then dispatches. Returns the number of
    /// I/O events dispatched. Call only while holding the poller role.
    ///
    /// `parked` is re-evaluated once the poll lock is held: if it is false
    /// (a kick already moved the worker's idle word off `PARKED_REACTOR`),
    /// the poll does not block. This closes a window: while the poller
    /// waits for the lock, an idle or busy poll holding it may consume the
    /// kick's eventfd event. The kick's CAS precedes its eventfd write,
    /// which precedes that consumption, which precedes the lock hand-over,
    /// so the re-check sees the kick; a kick after the re-check writes an
    /// event only the lock holder — the poller — can consume.
    pub(crate) fn park(
        &self,
        timeout: Option<Duration>,
        parked: impl Fn() -> bool,
        woken: impl FnOnce(),
    ) -> usize {
        let mut st = self.state.lock();
        let timeout = if parked() {
            timeout
        } else {
            Some(Duration::ZERO)
        };
        self.turn(&mut st, timeout, woken)
    }

    /// One poll under the poll lock: free retired records, wait, dispatch.
    fn turn(&self, st: &mut PollState, timeout: Option<Duration>, woken: impl FnOnce()) -> usize {
        {
            let mut rel = self.release.lock();
            if !rel.is_empty() {
                std::mem::swap(&mut *rel, &mut st.spare);
            }
        }
        st.spare.clear(); // outside the release lock
        let n = epoll_wait(self.epfd, &mut st.events, timeout);
        woken();
        let mut io = 0;
        for ev in &st.events[..n] {
            let (bits, token) = (ev.events, ev.u64 as usize);
            if token == WAKE_TOKEN {
                continue;
            }
            // SAFETY: a token other than WAKE_TOKEN is the address of an
            // `Arc<ScheduledIo>` registered by `register`; the record is
            // kept alive by its `Source`, or by the release list until a
            // poll that starts after its EPOLL_CTL_DEL (module docs). We
            // hold the poll lock, so no such poll has started.
            let sio = unsafe { &*(token as *const ScheduledIo) };
            sio.dispatch(from_epoll(bits));
            io += 1;
        }
        io
    }

    /// Marks the reactor shut down (after the workers are
    /// joined) and frees the retired records.
    pub(crate) fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
        let old = std::mem::take(&mut *self.release.lock());
        drop(old);
    }
}

/// The error a wait on a shut-down runtime's reactor returns.
pub(crate) fn shutdown_error() -> io::Error {
    io::Error::other("the eevdf-rt runtime this I/O object is registered with has shut down")
}

/// `epoll_pwait2` (nanosecond timeout; falls back to `epoll_wait`, whose
/// timeout is in milliseconds, rounded up, on kernels before 5.11).
/// Returns the number of events written to `buf` (0 on `EINTR`).
fn epoll_wait(epfd: RawFd, buf: &mut [libc::epoll_event], timeout: Option<Duration>) -> usize {
    use std::sync::atomic::AtomicBool;
    static NO_PWAIT2: AtomicBool = AtomicBool::new(false);
    let max = buf.len().min(libc::c_int::MAX as usize) as libc::c_int;
    #[cfg(target_pointer_width = "64")]
    if !NO_PWAIT2.load(Ordering::Relaxed) {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as _,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `buf` is valid for `max` events; `tsp` is null or points
        // to a timespec that outlives the call (on 64-bit targets
        // `libc::timespec` is the kernel's `__kernel_timespec`); a null
        // sigmask means "do not change the mask", so its size is ignored.
        let r = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                epfd,
                buf.as_mut_ptr(),
                max,
                tsp,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if r >= 0 {
            return r as usize;
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::ENOSYS) => NO_PWAIT2.store(true, Ordering::Relaxed),
            _ => return 0, // EINTR (or a bug): the caller re-checks and polls again
        }
    }
    let ms = match timeout {
        None => -1,
        Some(d) => d
            .checked_add(Duration::from_nanos(999_999))
            .unwrap_or(d)
            .as_millis()
            .min(libc::c_int::MAX as u128) as libc::c_int,
    };
    // SAFETY: `buf` is valid for `max` events.
    let r = unsafe { libc::epoll_wait(epfd, buf.as_mut_ptr(), max, ms) };
    r.max(0) as usize
}

/// The runtime's reactor, if it has one yet (no syscall, one load).
#[inline]
pub(crate) fn get(sh: &Shared) -> Option<&Arc<Reactor>> {
    sh.reactor.get()
}

/// The runtime's reactor, created at the first registration. Creating it
/// hands every worker the reactor's waker, so a kick can interrupt a
/// worker that parks in epoll (`worker::idle`); the `OnceLock`
/// publication orders that before any worker can see the reactor.
pub(crate) fn get_or_init(sh: &Shared) -> io::Result<&Arc<Reactor>> {
    if let Some(r) = sh.reactor.get() {
        return Ok(r);
    }
    let _g = sh.reactor_init.lock();
    if let Some(r) = sh.reactor.get() {
        return Ok(r);
    }
    if sh.is_shutdown() {
        return Err(shutdown_error());
    }
    let r = Arc::new(Reactor::new()?);
    for w in sh.workers.iter() {
        w.idle().set_reactor_waker(r.waker.clone());
    }
    Ok(sh.reactor.get_or_init(|| r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoll_bits() {
        assert_eq!(from_epoll(libc::EPOLLIN as u32), ready::READABLE);
        assert_eq!(from_epoll(libc::EPOLLOUT as u32), ready::WRITABLE);
        let rdhup = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        assert_eq!(from_epoll(rdhup), ready::READABLE | ready::READ_CLOSED);
        let err = from_epoll(libc::EPOLLERR as u32);
        assert_eq!(err, ready::WRITE_CLOSED | ready::ERROR);
    }

    #[test]
    fn clear_respects_the_tick() {
        let s = ScheduledIo::new();
        s.dispatch(ready::READABLE);
        let snap = s.snapshot();
        assert!(s.is_ready(Direction::Read));
        // No event since the snapshot: cleared.
        assert!(!s.clear(snap, Direction::Read));
        assert!(!s.is_ready(Direction::Read));
        // An event after the snapshot survives the clear.
        let snap = s.snapshot();
        s.dispatch(ready::READABLE);
        assert!(s.clear(snap, Direction::Read));
        assert!(s.is_ready(Direction::Read));
        // Clearing reads leaves writes alone.
        s.dispatch(ready::WRITABLE);
        let snap = s.snapshot();
        assert!(!s.clear(snap, Direction::Read));
        assert!(s.is_ready(Direction::Write));
    }

    #[test]
    fn a_kick_consumed_by_another_poll_still_ends_the_park() {
        use crate::worker::idle::{IdleState, PARKED_REACTOR};
        let r = Reactor::new().unwrap();
        let idle = IdleState::new();
        idle.set_reactor_waker(r.waker.clone());
        // The poller announced itself, then waits for the poll lock while
        // another thread polls; a kick lands and that poll eats its event.
        idle.prepare_park_reactor();
        assert!(idle.kick());
        {
            let mut st = r.state.lock();
            r.turn(&mut st, Some(Duration::ZERO), || {});
        }
        let t = std::time::Instant::now();
        r.park(
            Some(Duration::from_secs(10)),
            || idle.get() == PARKED_REACTOR,
            || {},
        );
        assert!(t.elapsed() < Duration::from_secs(5), "the kick was lost");
    }

    #[test]
    fn readiness_wakes_thread_waiters() {
        let s = Arc::new(ScheduledIo::new());
        s.add_waiter(Direction::Read, Waiter::current());
        s.add_waiter(Direction::Read, Waiter::current());
        assert_eq!(s.waiters.lock().reader.len(), 1);
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.dispatch(ready::READABLE));
        while !s.is_ready(Direction::Read) {
            std::thread::park_timeout(Duration::from_millis(10));
        }
        t.join().unwrap();
        assert!(s.waiters.lock().reader.is_empty());
    }
}
