//! Storage of the entities queued on a run queue.
//!
//! Owns: a vector of slots with a free list. A queued entity and its payload
//! live in one slot from its enqueue to its dequeue; the slot's index is the
//! public [`Slot`](super::Slot) and the node index in the tree and the
//! recency list. Freed indexes are reused last-in first-out, so a busy queue
//! keeps touching the same memory. Room can be reserved ahead
//! ([`Arena::try_reserve`]), fallibly, so that storing never allocates.
//! Must not: know about the policy.

use std::collections::TryReserveError;

/// Grows `v`'s capacity to at least `total` elements, exactly, or fails
/// without changing it.
pub(crate) fn reserve_total<E>(v: &mut Vec<E>, total: usize) -> Result<(), TryReserveError> {
    match total.checked_sub(v.len()) {
        Some(more) if v.capacity() < total => v.try_reserve_exact(more),
        _ => Ok(()),
    }
}

/// A vector of optional values with O(1) allocation and release.
#[derive(Clone, Debug)]
pub(crate) struct Arena<V> {
    entries: Vec<Option<V>>,
    free: Vec<u32>,
    len: u32,
}

impl<V> Arena<V> {
    /// An empty arena.
    pub(crate) fn new() -> Self {
        Arena {
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }

    /// Number of occupied slots.
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// Makes room for `total` occupied slots at once: after `Ok`, storing
    /// and releasing never allocate while at most `total` slots are
    /// occupied (`entries` grows only when no freed index is left, so it
    /// holds at most `total` slots, and the free list never holds more
    /// indexes than there are slots). Reserves exactly; an error leaves
    /// the arena as it was, still usable.
    pub(crate) fn try_reserve(&mut self, total: usize) -> Result<(), TryReserveError> {
        reserve_total(&mut self.entries, total)?;
        reserve_total(&mut self.free, total)
    }

    /// The number of occupied slots that fit without allocating.
    pub(crate) fn capacity(&self) -> usize {
        self.entries.capacity().min(self.free.capacity())
    }

    /// Stores `v` and returns its index.
    pub(crate) fn alloc(&mut self, v: V) -> u32 {
        self.len += 1;
        if let Some(i) = self.free.pop() {
            debug_assert!(self.entries[i as usize].is_none());
            self.entries[i as usize] = Some(v);
            i
        } else {
            let i = u32::try_from(self.entries.len())
                .ok()
                .filter(|&i| i != u32::MAX)
                .expect("run queue: more than 2^32 - 1 queued entities");
            self.entries.push(Some(v));
            i
        }
    }

    /// Takes the value out of index `i`. Panics if `i` is not occupied.
    pub(crate) fn release(&mut self, i: u32) -> V {
        let v = self
            .entries
            .get_mut(i as usize)
            .and_then(Option::take)
            .unwrap_or_else(|| panic!("run queue: slot {i} is not queued"));
        self.free.push(i);
        self.len -= 1;
        v
    }

    /// The value at `i`. Panics if `i` is not occupied.
    #[inline]
    pub(crate) fn get(&self, i: u32) -> &V {
        match self.entries.get(i as usize) {
            Some(Some(v)) => v,
            _ => panic!("run queue: slot {i} is not queued"),
        }
    }

    /// The value at `i`, mutably. Panics if `i` is not occupied.
    #[inline]
    pub(crate) fn get_mut(&mut self, i: u32) -> &mut V {
        match self.entries.get_mut(i as usize) {
            Some(Some(v)) => v,
            _ => panic!("run queue: slot {i} is not queued"),
        }
    }

    /// The value at `i`, if occupied.
    #[inline]
    pub(crate) fn try_get(&self, i: u32) -> Option<&V> {
        self.entries.get(i as usize).and_then(Option::as_ref)
    }

    /// Whether index `i` is occupied.
    pub(crate) fn contains(&self, i: u32) -> bool {
        matches!(self.entries.get(i as usize), Some(Some(_)))
    }

    /// Occupied indexes with their values, in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, &V)> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (i as u32, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_slots_lifo() {
        let mut a = Arena::new();
        let x = a.alloc('x');
        let y = a.alloc('y');
        assert_eq!(a.len(), 2);
        assert_eq!(a.release(x), 'x');
        assert!(!a.contains(x));
        assert_eq!(a.alloc('z'), x);
        assert_eq!(*a.get(y), 'y');
        assert_eq!(a.iter().map(|(_, v)| *v).collect::<String>(), "zy");
    }

    #[test]
    fn reserved_room_is_used_without_reallocating() {
        let mut a = Arena::new();
        a.try_reserve(100).unwrap();
        assert!(a.capacity() >= 100);
        let (entries, free) = (a.entries.as_ptr(), a.free.as_ptr());
        let mut held: Vec<u32> = (0..100).map(|i| a.alloc(i)).collect();
        for _ in 0..3 {
            for i in held.drain(..) {
                a.release(i);
            }
            held = (0..100).map(|i| a.alloc(i)).collect();
        }
        assert_eq!((a.entries.as_ptr(), a.free.as_ptr()), (entries, free));
        // a smaller reservation changes nothing
        a.try_reserve(10).unwrap();
        assert_eq!(a.entries.as_ptr(), entries);
    }

    #[test]
    #[should_panic(expected = "not queued")]
    fn released_slot_panics() {
        let mut a = Arena::new();
        let x = a.alloc(1);
        a.release(x);
        a.get(x);
    }
}
