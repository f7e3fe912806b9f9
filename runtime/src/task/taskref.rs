//! `TaskRef`: the runtime's own counted reference to a task control block.
//!
//! Owns: the task block's allocation (one reference count and the [`Tcb`]
//! in one block), its counting and its freeing, and the per-thread cache
//! of free blocks. Must not: know the Tcb's fields, or allocate anywhere
//! but in [`TaskRef::try_new`].
//!
//! # Why not `Arc<Tcb>`
//!
//! `Arc::new` aborts the process when the allocator fails, and a spawn must
//! report running out of memory as an error instead ([`TaskRef::try_new`]
//! returns one). Stable Rust has no fallible `Arc` constructor and no
//! `Arc` over a custom allocator, so the block and its count are ours. The
//! header is one word (`Arc` keeps a weak count as well, which the runtime
//! never uses), so the Tcb's first line holds 8 more bytes of it.
//!
//! # The count
//!
//! The same protocol as `Arc`'s strong count:
//! * a clone adds one with `Relaxed`: the clone is made from a reference
//!   that is already counted, so no other thread can free the block in
//!   between, and nothing is published by the increment;
//! * a drop subtracts one with `Release`, so that every use of the block
//!   through this reference happens-before the free; the drop that takes
//!   the count to zero then issues an `Acquire` fence, which synchronises
//!   with every earlier `Release` decrement, before it drops the Tcb and
//!   frees the block;
//! * a count above `isize::MAX` aborts (as `Arc` does): only a leak of
//!   references in a loop can get there, and a wrapped count would free a
//!   live block.
//!
//! A new block starts with as many references as its creator asks for
//! ([`TaskRef::try_new`]'s `N`): the spawn hands one each to the spawner,
//! the result guard, the join handle and the registry, with one plain
//! store instead of three locked increments on the line it has just
//! written.
//!
//! # The block cache
//!
//! A freed block goes to a small cache of the thread that freed it (at
//! most [`CACHED_BLOCKS`]), and a spawn on that thread takes its block
//! from there before it asks the allocator. A task is usually spawned,
//! run, finished and joined on one worker, so the block comes back to the
//! thread that will spawn the next one. The cache holds raw memory only:
//! a block's Tcb is dropped before the block enters it. A thread's cached
//! blocks go back to the allocator when the thread exits; a block freed
//! while that happens goes straight back too. A thread that frees blocks
//! but never spawns (one that drops the last handle of tasks spawned
//! elsewhere) keeps at most [`CACHED_BLOCKS`] of them until it exits.

use super::Tcb;
use std::alloc::{self, Layout};
use std::io;
use std::marker::PhantomData;
use std::mem::{self, offset_of};
use std::ops::Deref;
use std::ptr::{self, NonNull};
use std::sync::atomic::{fence, AtomicUsize, Ordering};

/// The allocation: the count, then the control block.
#[repr(C)]
struct TaskBox {
    refs: AtomicUsize,
    tcb: Tcb,
}

/// Bytes between the start of the allocation and the [`Tcb`] (for layout
/// tests that place the Tcb's fields on cache lines).
pub(crate) const HEADER: usize = offset_of!(TaskBox, tcb);

/// Counts above this abort (see the module docs).
const MAX_REFS: usize = isize::MAX as usize;

/// Free blocks a thread keeps (about 14 KiB with a 448-byte block).
pub(crate) const CACHED_BLOCKS: usize = 32;

/// A thread's free blocks: allocated with `TaskBox`'s layout, holding no
/// Tcb.
struct BlockCache {
    len: usize,
    blocks: [*mut TaskBox; CACHED_BLOCKS],
}

impl Drop for BlockCache {
    fn drop(&mut self) {
        for &b in &self.blocks[..self.len] {
            // SAFETY: every cached block was allocated with this layout and
            // holds no live value (see `BlockCache`).
            unsafe { alloc::dealloc(b as *mut u8, Layout::new::<TaskBox>()) };
        }
    }
}

thread_local! {
    static CACHE: std::cell::RefCell<BlockCache> = const {
        std::cell::RefCell::new(BlockCache { len: 0, blocks: [ptr::null_mut(); CACHED_BLOCKS] })
    };
}

/// A free block from this thread's cache. Never inlined: a thread-local
/// access in green code must not be (see `task::current`).
#[inline(never)]
fn cached_block() -> Option<NonNull<TaskBox>> {
    CACHE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            if c.len == 0 {
                return None;
            }
            c.len -= 1;
            let i = c.len;
            NonNull::new(c.blocks[i])
        })
        .ok()
        .flatten()
}

/// Returns a block whose Tcb has been dropped: to this thread's cache, or
/// to the allocator when the cache is full or gone (thread exit).
#[inline(never)]
fn free_block(b: NonNull<TaskBox>) {
    let kept = CACHE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            if c.len == CACHED_BLOCKS {
                return false;
            }
            let i = c.len;
            c.blocks[i] = b.as_ptr();
            c.len += 1;
            true
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: allocated in `try_new` with this layout; its Tcb is dropped.
        unsafe { alloc::dealloc(b.as_ptr() as *mut u8, Layout::new::<TaskBox>()) };
    }
}

/// A strong reference to a task control block; dereferences to the [`Tcb`].
pub(crate) struct TaskRef {
    ptr: NonNull<TaskBox>,
    /// The reference owns a share of a `TaskBox` (drop check, variance).
    _owns: PhantomData<TaskBox>,
}

// SAFETY: a `TaskRef` gives shared access to a `Tcb` from any thread and may
// drop it on any thread, which is what `Arc<Tcb>` allows when `Tcb` is
// `Send + Sync`; the assertions below keep that premise checked.
unsafe impl Send for TaskRef {}
// SAFETY: as above.
unsafe impl Sync for TaskRef {}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Tcb>();
};

impl TaskRef {
    /// A new block holding the Tcb that `make` builds, and `N` references
    /// to it. Fails with [`io::ErrorKind::OutOfMemory`] (without calling
    /// `make`) when the allocator has no memory, instead of aborting as
    /// `Arc::new` would.
    ///
    /// `make` runs after the allocation so that the Tcb (over 400 bytes)
    /// is built in the block rather than built and then copied. The count
    /// starts at `N` (a plain store: nobody else can see the block yet),
    /// where `N − 1` clones would each be a locked read-modify-write on a
    /// line the Tcb's initialisation has just written; a spawn needs four.
    #[inline]
    pub(crate) fn try_new<const N: usize>(make: impl FnOnce() -> Tcb) -> io::Result<[TaskRef; N]> {
        const { assert!(N > 0, "at least one reference") };
        #[cfg(test)]
        if crate::task::fail_next::take(crate::task::fail_next::Alloc::TaskBlock) {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let ptr = match cached_block() {
            Some(b) => b,
            None => {
                // SAFETY: `TaskBox` is not zero-sized.
                let raw = unsafe { alloc::alloc(Layout::new::<TaskBox>()) } as *mut TaskBox;
                match NonNull::new(raw) {
                    Some(b) => b,
                    // `From<ErrorKind>` does not allocate.
                    None => return Err(io::ErrorKind::OutOfMemory.into()),
                }
            }
        };
        let p = ptr.as_ptr();
        // SAFETY: `p` is an allocation of `TaskBox`'s layout that holds no
        // value (fresh, or a cached block whose Tcb was dropped), so writing
        // each field is in bounds and aligned. If `make` panics, the block
        // leaks (nothing reads it).
        unsafe {
            ptr::addr_of_mut!((*p).refs).write(AtomicUsize::new(N));
            ptr::addr_of_mut!((*p).tcb).write(make());
        }
        // The `N` references the count was set to.
        Ok(std::array::from_fn(|_| TaskRef {
            ptr,
            _owns: PhantomData,
        }))
    }

    /// The block's header and control block.
    #[inline]
    fn inner(&self) -> &TaskBox {
        // SAFETY: this reference holds a count, so the block is alive.
        unsafe { self.ptr.as_ref() }
    }

    /// The address of the control block (what [`TaskRef::into_raw`] returns
    /// and the thread-local "current task" stores).
    #[inline]
    pub(crate) fn as_ptr(this: &TaskRef) -> *const Tcb {
        // SAFETY: in bounds of the live block; no reference is created.
        unsafe { ptr::addr_of!((*this.ptr.as_ptr()).tcb) }
    }

    /// Gives up this reference without dropping its count; the pointer
    /// goes back into a reference with [`TaskRef::from_raw`].
    #[inline]
    pub(crate) fn into_raw(this: TaskRef) -> *const Tcb {
        let p = TaskRef::as_ptr(&this);
        mem::forget(this);
        p
    }

    /// Takes back a reference given up by [`TaskRef::into_raw`].
    ///
    /// # Safety
    /// `p` must come from `into_raw`, and its count must not have been
    /// taken back already.
    #[inline]
    pub(crate) unsafe fn from_raw(p: *const Tcb) -> TaskRef {
        // SAFETY: `p` points at the `tcb` field of a live `TaskBox` (the
        // caller's contract), `HEADER` bytes after the block's start.
        let block = unsafe { p.byte_sub(HEADER) } as *mut TaskBox;
        TaskRef {
            // SAFETY: derived from a non-null block address.
            ptr: unsafe { NonNull::new_unchecked(block) },
            _owns: PhantomData,
        }
    }

    /// A new counted reference to the task at `p`, which someone else holds.
    ///
    /// # Safety
    /// `p` must be [`TaskRef::as_ptr`] of a task that a live `TaskRef`
    /// keeps alive for the whole call.
    #[inline]
    pub(crate) unsafe fn clone_from_ptr(p: *const Tcb) -> TaskRef {
        // SAFETY: the block is alive (the caller's contract), so this
        // temporary reference does not own a count: it is forgotten.
        let borrowed = mem::ManuallyDrop::new(unsafe { TaskRef::from_raw(p) });
        (*borrowed).clone()
    }

    /// Whether `a` and `b` refer to the same task.
    #[inline]
    pub(crate) fn ptr_eq(a: &TaskRef, b: &TaskRef) -> bool {
        a.ptr == b.ptr
    }

    /// The number of references (tests; racy while other threads hold some).
    #[cfg(test)]
    pub(crate) fn strong_count(this: &TaskRef) -> usize {
        this.inner().refs.load(Ordering::Relaxed)
    }
}

impl Clone for TaskRef {
    #[inline]
    fn clone(&self) -> TaskRef {
        // Relaxed: see the module docs ("The count").
        let old = self.inner().refs.fetch_add(1, Ordering::Relaxed);
        if old > MAX_REFS {
            std::process::abort();
        }
        TaskRef {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl Drop for TaskRef {
    #[inline]
    fn drop(&mut self) {
        // Release: see the module docs ("The count").
        if self.inner().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: the count reached zero, so this was the last reference:
        // nobody else can reach the block, and the fence orders every other
        // reference's last use before this point.
        unsafe { ptr::drop_in_place(ptr::addr_of_mut!((*self.ptr.as_ptr()).tcb)) };
        // The Tcb's drop may have dropped other tasks' references (a
        // waker in its join packet): the cache is touched only after it.
        free_block(self.ptr);
    }
}

impl Deref for TaskRef {
    type Target = Tcb;
    #[inline]
    fn deref(&self) -> &Tcb {
        &self.inner().tcb
    }
}

impl std::fmt::Debug for TaskRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// A task block of `rt` with id `id` that is never spawned (tests of the
/// structures that hold task references): nobody else counts it.
#[cfg(all(test, not(loom)))]
pub(crate) fn unspawned(rt: &crate::Runtime, id: u64) -> TaskRef {
    let sh = rt.shared().clone();
    let [t] = TaskRef::try_new(|| {
        Tcb::new(
            id,
            None,
            sh,
            crate::sched::Entity::new(0).unwrap(),
            crate::mask::WorkerMask::first(1),
            0,
        )
    })
    .unwrap();
    t
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::mask::WorkerMask;
    use crate::sched::Entity;
    use std::io::ErrorKind;

    fn lone_task(rt: &crate::Runtime) -> TaskRef {
        unspawned(rt, u64::MAX)
    }

    /// The references of one block start with its count (no clones).
    #[test]
    fn several_references_at_once_are_counted() {
        let rt = crate::Builder::new().workers(1).build().unwrap();
        let sh = rt.shared().clone();
        let [a, b, c] = TaskRef::try_new(|| {
            Tcb::new(
                7,
                None,
                sh,
                Entity::new(0).unwrap(),
                WorkerMask::first(1),
                0,
            )
        })
        .unwrap();
        assert!(TaskRef::ptr_eq(&a, &b) && TaskRef::ptr_eq(&b, &c));
        assert_eq!(TaskRef::strong_count(&a), 3);
        drop((b, c));
        assert_eq!(TaskRef::strong_count(&a), 1);
    }

    #[test]
    fn the_count_follows_clones_and_raw_round_trips() {
        let rt = crate::Builder::new().workers(1).build().unwrap();
        let t = lone_task(&rt);
        assert_eq!(TaskRef::strong_count(&t), 1);
        let c = t.clone();
        assert_eq!(TaskRef::strong_count(&t), 2);
        assert!(TaskRef::ptr_eq(&t, &c));
        let p = TaskRef::into_raw(c);
        assert_eq!(p, TaskRef::as_ptr(&t));
        assert_eq!(TaskRef::strong_count(&t), 2, "into_raw keeps the count");
        // SAFETY: `p` comes from `into_raw` just above, taken back once.
        let c = unsafe { TaskRef::from_raw(p) };
        // SAFETY: `t` keeps the task alive.
        let d = unsafe { TaskRef::clone_from_ptr(p) };
        assert_eq!(TaskRef::strong_count(&t), 3);
        assert_eq!(d.id, u64::MAX);
        drop((c, d));
        assert_eq!(TaskRef::strong_count(&t), 1);
    }

    /// The last reference's drop puts the block in this thread's cache,
    /// and the next task built on the thread gets it back; beyond the cap,
    /// freed blocks go back to the allocator (the cache keeps no more).
    #[test]
    fn a_freed_block_is_reused_and_the_cache_is_bounded() {
        let rt = crate::Builder::new().workers(1).build().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(cached_block().is_none(), "a new thread's cache is empty");
                let a = lone_task(&rt);
                let block = a.ptr;
                drop(a);
                let b = lone_task(&rt);
                assert_eq!(b.ptr, block, "the freed block is handed out again");
                drop(b);
                let many: Vec<TaskRef> = (0..CACHED_BLOCKS + 5).map(|_| lone_task(&rt)).collect();
                drop(many);
                let mut kept = Vec::new();
                while let Some(b) = cached_block() {
                    kept.push(b);
                }
                assert_eq!(kept.len(), CACHED_BLOCKS);
                kept.into_iter().for_each(free_block);
            });
        });
    }

    #[test]
    fn a_failed_task_allocation_is_a_spawn_error() {
        let rt = crate::Builder::new().workers(1).build().unwrap();
        // From an OS thread.
        crate::task::fail_next::arm(crate::task::fail_next::Alloc::TaskBlock);
        let err = crate::task::Builder::new()
            .spawn_on(&rt, || 1)
            .expect_err("the allocation was made to fail");
        assert_eq!(err.kind(), ErrorKind::OutOfMemory);
        // From a green thread (the spawner's worker path).
        let (kind, after) = rt.block_on(|| {
            crate::task::fail_next::arm(crate::task::fail_next::Alloc::TaskBlock);
            let kind = crate::task::Builder::new()
                .spawn(|| 2)
                .map(|_| ())
                .expect_err("the allocation was made to fail")
                .kind();
            (kind, crate::spawn(|| 3).join().unwrap())
        });
        assert_eq!(kind, ErrorKind::OutOfMemory);
        assert_eq!(after, 3, "the runtime goes on after a failed spawn");
        assert_eq!(rt.spawn(|| 4).join().unwrap(), 4);
    }
}
