//! Spawning green threads.
//!
//! Owns: building a task (entity, control block, context on a pooled
//! stack, result packet), registering it, and placing it: enqueued directly
//! on the spawner's own worker (SPAWN_LOCAL) under its lock, or handed to
//! another worker's wakelist and kicked. Must not: wait for the task.

use super::join::{JoinHandle, PacketGuard, PacketRef};
use crate::context::{self, GreenContext};
use crate::error::Error;
use crate::sched::{EnqueueFlags, Entity, WakeFlags};
use crate::shared::Shared;
use crate::stats::Counter;
use crate::task::builder::SpawnOpts;
use crate::task::registry::Refused;
use crate::task::state::QUEUED;
use crate::task::tcb::activation;
use crate::task::{TaskRef, Tcb};
use crate::time::clock;
use crate::wake::{self, placement};
use crate::worker::tls;
use std::io;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The runtime of the calling green thread (or of the blocking-pool
/// thread running the caller: see `runtime::blocking`).
pub(crate) fn current_shared() -> Option<CurrentShared<'static>> {
    match tls::current() {
        Some(t) => Some(CurrentShared::Borrowed(&t.shared)),
        None => super::blocking::current_shared().map(CurrentShared::Owned),
    }
}

/// A runtime reference that is borrowed where it can be: [`current_shared`]
/// borrows the running green thread's, whose task outlives every call the
/// green thread makes, so a spawn costs no reference-count round trip on
/// the runtime; a blocking-pool thread gets its own reference. Like
/// `tls::current`'s `&'static`, a borrowed one is only valid while the
/// green thread that took it runs: use it for the call at hand, and clone
/// the `Arc` to keep the runtime.
pub(crate) enum CurrentShared<'a> {
    /// Borrowed (from the running task, or from the caller).
    Borrowed(&'a Arc<Shared>),
    /// Owned.
    Owned(Arc<Shared>),
}

impl std::ops::Deref for CurrentShared<'_> {
    type Target = Arc<Shared>;
    #[inline]
    fn deref(&self) -> &Arc<Shared> {
        match self {
            CurrentShared::Borrowed(sh) => sh,
            CurrentShared::Owned(sh) => sh,
        }
    }
}

/// Spawns `f` as a green thread on `sh`, then, called from a green
/// thread, passes a preemption point.
///
/// That is the kernel's behaviour too (a fork returns to user space, where
/// the parent may be preempted by the child, a tick or a timer), and it is
/// what keeps a loop of spawns from being a loop without preemption
/// points: without it such a loop holds its worker until it ends, and the
/// hand-off monitor has to replace the worker's thread. Callers that may
/// run under a lock they do not own (a library's executor hook) use
/// [`spawn_green_no_preempt`].
pub(crate) fn spawn_green<F, T>(
    sh: &Arc<Shared>,
    opts: SpawnOpts,
    f: F,
) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (h, now) = spawn_green_inner(sh, opts, f)?;
    crate::runtime::api::preempt_point_at(now);
    Ok(h)
}

/// [`spawn_green`] without the preemption point: the caller keeps running.
/// For spawns from code that may hold a plain lock across the call (hyper's
/// connection pool calls its executor under a `std::sync::Mutex`): a
/// switch there could leave another green thread of the same worker
/// blocking the worker's OS thread on that lock while its holder waits in
/// the queue behind it.
pub(crate) fn spawn_green_no_preempt<F, T>(
    sh: &Arc<Shared>,
    opts: SpawnOpts,
    f: F,
) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_green_inner(sh, opts, f).map(|(h, _)| h)
}

/// The spawn itself; also returns the clock reading a local enqueue made,
/// for the spawner's preemption point.
#[inline]
fn spawn_green_inner<F, T>(
    sh: &Arc<Shared>,
    opts: SpawnOpts,
    f: F,
) -> io::Result<(JoinHandle<T>, Option<u64>)>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if sh.is_shutdown() {
        return Err(io::Error::other(Error::Shutdown));
    }
    let mask = opts.mask(sh.workers.len())?;
    let entity = Entity::new(opts.nice)?
        .with_slice(opts.slice)?
        .with_policy(opts.policy);
    let here = wake::waker_index(sh);
    let target = placement::select_spawn_worker(sh, &mask, here);
    // The spawner's, the guard's, the handle's and the registry's
    // references, counted at once.
    let [tcb, for_guard, for_handle, for_registry] = TaskRef::try_new(|| {
        Tcb::new(
            crate::task::id::next_id(),
            opts.name,
            sh.clone(),
            entity,
            mask,
            target,
        )
    })?;
    // The packet is in the task block: the guard and the handle each hold
    // a reference to the task.
    let guard = PacketGuard::new(PacketRef::Task(for_guard));
    let handle = JoinHandle::with_packet(&guard, PacketRef::Task(for_handle));
    let body = green_body(f, guard);
    let stack_size = opts.stack_size.unwrap_or(sh.config.stack_size);
    // The stack outside any run-queue lock (it may map a slab).
    let stack = match here {
        Some(i) => sh.workers[i].stacks.lock().get(stack_size)?,
        None => context::stack::alloc_one(stack_size, &sh.config.stack_guard)?,
    };
    tcb.install_context(GreenContext::with_slot(stack, &tcb.suspend, body));
    if let Err(why) = sh.registry.insert(here.unwrap_or(target), for_registry) {
        // Shutdown drained the registry after our check above (a spawn
        // from outside the workers), or the registry could not grow:
        // nobody would ever run or unwind this task.
        drop_unpublished_body(&tcb);
        return Err(match why {
            Refused::Closed => io::Error::other(Error::Shutdown),
            // `From<ErrorKind>` does not allocate.
            Refused::NoMemory => io::ErrorKind::OutOfMemory.into(),
        });
    }
    // Every worker must have room for every task before this one is
    // published: past this point a wakeup or a timer has no way to fail.
    let tasks = sh.registry.slots();
    if !sh.room.covers(tasks) {
        if let Err(e) = crate::worker::room::make(sh, tasks) {
            let Some(registered) = sh.registry.remove(&tcb) else {
                // Shutdown drained the registry after we registered: the
                // task is shutdown's, which unwinds it.
                return Err(io::Error::other(Error::Shutdown));
            };
            drop(registered);
            drop_unpublished_body(&tcb);
            return Err(e);
        }
    }
    // Traced once the spawn can no longer fail, before anyone can run it.
    crate::trace::spawned(sh, &tcb);

    let mut clock_read = None;
    if Some(target) == here {
        // Local: enqueue under our own lock.
        let w = &sh.workers[target];
        let now = clock::now();
        clock_read = Some(now);
        let mut rq = w.lock_rq(sh, now);
        // SAFETY: the task is not published yet: the spawner owns it.
        let entity = unsafe { tcb.take_entity() };
        // The queue takes the spawner's reference (no count round trip).
        let slot = rq.q.enqueue(entity, tcb, EnqueueFlags::INITIAL, now);
        let t = rq.q.payload(slot);
        t.set_slot(slot);
        t.st.set_on_rq(QUEUED);
        crate::task::stats::runnable(&t.acct, now);
        if rq.q.wakeup_preempt(slot, WakeFlags::FORK, now) {
            rq.request_resched();
        }
        drop(rq);
        w.stats.inc(Counter::spawned_local);
    } else {
        tcb.activation.store(activation::NEW, Ordering::Relaxed);
        let w = &sh.workers[target];
        wake::count(sh, here, Counter::spawned_remote);
        if w.post(tcb) {
            wake::count(sh, here, Counter::kicks);
        }
        if sh.is_shutdown() && sh.registry.is_closed(here.unwrap_or(target)) {
            // Shutdown drained the registry after we registered (it took
            // this task and cancelled it), and its workers may have
            // stopped and emptied their wakelists before our push: nobody
            // drains them now. Empty this one (taking from a wakelist is
            // safe for any number of takers), or the task would keep the
            // runtime alive through its reference to it.
            for t in w.wakelist().take_all() {
                drop(t);
            }
        }
    }
    Ok((handle, clock_read))
}

/// Drops the body of a task whose spawn failed before it was published
/// (not enqueued, not registered): the guard in it delivers `Cancelled` to
/// the handle, which the caller never sees.
fn drop_unpublished_body(tcb: &Tcb) {
    // SAFETY: the task is not published and not registered: only the
    // spawner can reach its context.
    if let Some(mut ctx) = unsafe { tcb.context_mut() }.take() {
        let _ = catch_unwind(AssertUnwindSafe(|| ctx.force_unwind()));
    }
}

/// The code a green thread runs: the user's closure, with its panic caught
/// and its result delivered to the join packet.
fn green_body<F, T>(f: F, guard: PacketGuard<T>) -> impl FnOnce() + Send + 'static
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let parts = Unstarted(Some((f, guard)));
    move || {
        let mut parts = parts;
        let Some((f, guard)) = parts.0.take() else {
            return;
        };
        let result = catch_unwind(AssertUnwindSafe(f));
        if let Err(payload) = result {
            // Shutdown's cancellation (runtime::shutdown) keeps unwinding to the
            // coroutine's root; the guard then reports `Cancelled`.
            if tls::current().is_some_and(|t| t.cancelled.load(Ordering::Relaxed)) {
                resume_unwind(payload);
            }
            guard.complete(Err(payload));
        } else {
            guard.complete(result);
        }
    }
}

/// The closure and the completion guard of a green thread that has not
/// started. Dropped without it ever running (shutdown, or a spawn that
/// shutdown refused), it drops them without letting a panic escape: a
/// captured value whose destructor panics must not unwind out of the
/// coroutine's drop of its never-started body, which would then drop the
/// body a second time. The guard still delivers `Cancelled`; the panic's
/// message has been printed by the panic hook.
struct Unstarted<F, T: Send>(Option<(F, PacketGuard<T>)>);

impl<F, T: Send> Drop for Unstarted<F, T> {
    fn drop(&mut self) {
        if let Some(parts) = self.0.take() {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(parts)));
        }
    }
}
