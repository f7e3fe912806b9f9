//! An untyped cell for one green thread's result, so that the result can
//! live inside the task control block (one allocation per spawn).
//!
//! Owns: moving a `std::thread::Result<T>` into a fixed-size cell that does
//! not name `T`, moving it back out as the same `T`, and dropping it if
//! nobody takes it. A result that fits ([`INLINE_BYTES`], alignment at most
//! a word's) is stored in the cell itself — `()`, integers, pointers,
//! `String`, `Vec` and a panic's `Box<dyn Any>` all do; a larger one is
//! boxed and the cell holds the box. Must not: synchronise. The join
//! packet's protocol (`runtime::join`) decides who may touch the cell when.
//!
//! # Type safety
//!
//! The cell records how to drop what it holds (a function pointer
//! monomorphised for the stored type) and, in debug builds, the type's
//! name, which `take` checks. A [`JoinHandle<T>`](crate::JoinHandle) and the green thread's
//! completion guard are created together for the same `T`, and they are the
//! only code that stores into or takes from a given cell, so a value is
//! always taken out as the type it was stored as.

use std::any::Any;
use std::mem::{align_of, size_of, MaybeUninit};
use std::thread;

/// Words of inline storage.
const WORDS: usize = 4;

/// Bytes of inline storage: a result up to this size (and word alignment)
/// needs no allocation of its own.
pub(crate) const INLINE_BYTES: usize = WORDS * size_of::<usize>();

/// What a green thread returns, with its panic payload: `thread::Result<T>`.
type Outcome<T> = thread::Result<T>;

/// Whether an `Outcome<T>` is stored in the cell itself.
const fn fits<T>() -> bool {
    size_of::<Outcome<T>>() <= INLINE_BYTES && align_of::<Outcome<T>>() <= align_of::<usize>()
}

/// The untyped cell. Empty until [`put`](Self::put), empty again after
/// [`take`](Self::take).
pub(crate) struct ResultSlot {
    words: MaybeUninit<[usize; WORDS]>,
    /// Drops the stored value in place; `None` while the cell holds none.
    drop_fn: Option<unsafe fn(*mut [usize; WORDS])>,
    /// Holds `Err(Cancelled)` for whatever type is asked ([`put_cancelled`](Self::put_cancelled)).
    cancelled: bool,
    #[cfg(debug_assertions)]
    type_name: &'static str,
}

// SAFETY: `put` accepts only `T: Send`, so whatever the cell holds may be
// moved to (and dropped on) another thread; the cell itself is only
// touched under the join packet's protocol, which makes every access
// exclusive.
unsafe impl Send for ResultSlot {}

impl ResultSlot {
    /// An empty cell.
    pub(crate) const fn new() -> Self {
        ResultSlot {
            words: MaybeUninit::uninit(),
            drop_fn: None,
            cancelled: false,
            #[cfg(debug_assertions)]
            type_name: "",
        }
    }

    /// Whether a result is stored.
    #[cfg(test)]
    pub(crate) fn is_full(&self) -> bool {
        self.drop_fn.is_some() || self.cancelled
    }

    /// Stores `Err(Cancelled)` without naming the result's type, for a
    /// green thread whose own completion will never run (shutdown gave up
    /// on it, its stack left as it was): `take` makes the error for the
    /// type it is asked for.
    pub(crate) fn put_cancelled(&mut self) {
        self.clear();
        self.cancelled = true;
    }

    /// Stores `r`. A result already stored is dropped first (the protocol
    /// never does this; it keeps the cell from leaking if it did).
    pub(crate) fn put<T: Send>(&mut self, r: Outcome<T>) {
        self.clear();
        let at = self.words.as_mut_ptr();
        if fits::<T>() {
            // SAFETY: `fits` checked the size and alignment of `Outcome<T>`
            // against the cell's words, and the cell is empty (cleared).
            unsafe { at.cast::<Outcome<T>>().write(r) };
            self.drop_fn = Some(drop_inline::<T>);
        } else {
            // SAFETY: a `Box` is one word, word-aligned; the cell is empty.
            unsafe { at.cast::<Box<Outcome<T>>>().write(Box::new(r)) };
            self.drop_fn = Some(drop_boxed::<T>);
        }
        #[cfg(debug_assertions)]
        {
            self.type_name = std::any::type_name::<T>();
        }
    }

    /// Takes the stored result out, leaving the cell empty; `None` if it is
    /// empty. `T` must be the type it was stored as (see the module docs).
    pub(crate) fn take<T>(&mut self) -> Option<Outcome<T>> {
        if std::mem::take(&mut self.cancelled) {
            return Some(Err(Box::new(crate::Cancelled)));
        }
        self.drop_fn?;
        #[cfg(debug_assertions)]
        assert_eq!(
            self.type_name,
            std::any::type_name::<T>(),
            "a result taken as another type than it was stored as"
        );
        self.drop_fn = None;
        let at = self.words.as_mut_ptr();
        if fits::<T>() {
            // SAFETY: the cell held a value (`drop_fn` was set) of type
            // `Outcome<T>` (module docs), written inline because it fits;
            // clearing `drop_fn` above moved its ownership to us.
            Some(unsafe { at.cast::<Outcome<T>>().read() })
        } else {
            // SAFETY: as above, stored as a box because it does not fit.
            Some(*unsafe { at.cast::<Box<Outcome<T>>>().read() })
        }
    }

    /// Drops a stored result, if any (nobody will take it: the handle is
    /// gone).
    pub(crate) fn clear(&mut self) {
        self.cancelled = false;
        if let Some(drop_fn) = self.drop_fn.take() {
            // SAFETY: `drop_fn` was made for the type stored in the cell,
            // which holds it until now; taking `drop_fn` marks it empty,
            // so it is dropped exactly once.
            unsafe { drop_fn(self.words.as_mut_ptr()) };
        }
    }
}

impl Drop for ResultSlot {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Drops an `Outcome<T>` stored in the cell.
///
/// # Safety
/// `at` holds an initialised `Outcome<T>` that nothing uses afterwards.
unsafe fn drop_inline<T>(at: *mut [usize; WORDS]) {
    // SAFETY: the caller's contract.
    unsafe { at.cast::<Outcome<T>>().drop_in_place() }
}

/// Drops a `Box<Outcome<T>>` stored in the cell.
///
/// # Safety
/// `at` holds an initialised `Box<Outcome<T>>` that nothing uses afterwards.
unsafe fn drop_boxed<T>(at: *mut [usize; WORDS]) {
    // SAFETY: the caller's contract.
    unsafe { at.cast::<Box<Outcome<T>>>().drop_in_place() }
}

// A panic payload (a fat `Box`) fits inline, so a panicking green
// thread's result needs no allocation beyond the payload itself.
const _: () = assert!(size_of::<Box<dyn Any + Send>>() <= INLINE_BYTES);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts its drops.
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn small_and_large_results_round_trip() {
        assert!(fits::<()>() && fits::<u64>() && fits::<String>() && fits::<Vec<u8>>());
        assert!(!fits::<[u64; 8]>());
        let mut s = ResultSlot::new();
        s.put::<u64>(Ok(42));
        assert!(s.is_full());
        assert_eq!(s.take::<u64>().unwrap().ok(), Some(42));
        assert!(!s.is_full());
        assert!(s.take::<u64>().is_none());
        s.put::<[u64; 8]>(Ok([7; 8]));
        assert_eq!(s.take::<[u64; 8]>().unwrap().ok(), Some([7; 8]));
        s.put::<String>(Ok("inline".to_string()));
        assert_eq!(s.take::<String>().unwrap().ok().as_deref(), Some("inline"));
    }

    #[test]
    fn a_cancelled_slot_gives_cancelled_as_any_type() {
        let mut s = ResultSlot::new();
        s.put::<u64>(Ok(1));
        s.put_cancelled();
        assert!(s.is_full());
        let err = s.take::<[u64; 8]>().unwrap().unwrap_err();
        assert!(err.is::<crate::Cancelled>());
        assert!(!s.is_full());
        assert!(s.take::<u64>().is_none());
    }

    #[test]
    fn a_panic_payload_round_trips() {
        let mut s = ResultSlot::new();
        s.put::<()>(Err(Box::new("boom")));
        let err = s.take::<()>().unwrap().unwrap_err();
        assert_eq!(err.downcast_ref::<&str>(), Some(&"boom"));
    }

    #[test]
    fn an_untaken_result_is_dropped_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        {
            let mut s = ResultSlot::new();
            s.put::<Counted>(Ok(Counted(drops.clone())));
        }
        assert_eq!(drops.load(Ordering::Relaxed), 1, "inline");
        {
            let mut s = ResultSlot::new();
            s.put::<(Counted, [u64; 8])>(Ok((Counted(drops.clone()), [0; 8])));
        }
        assert_eq!(drops.load(Ordering::Relaxed), 2, "boxed");
        let mut s = ResultSlot::new();
        s.put::<Counted>(Ok(Counted(drops.clone())));
        drop(s.take::<Counted>());
        drop(s);
        assert_eq!(
            drops.load(Ordering::Relaxed),
            3,
            "taken, then the cell dropped"
        );
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "another type")]
    fn taking_another_type_is_caught_in_debug_builds() {
        let mut s = ResultSlot::new();
        s.put::<u32>(Ok(1));
        let _ = s.take::<u64>();
    }
}
