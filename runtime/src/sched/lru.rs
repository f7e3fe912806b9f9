//! The recency list of a run queue (the kernel's `rq->cfs_tasks`).
//!
//! Owns: an intrusive doubly linked list over arena indexes holding every
//! queued entity, the most recently started one at the front. Newidle
//! balancing walks it from the back, where the entities that ran least
//! recently (the coldest caches) are (docs/eevdf.md §13). Every operation is
//! O(1). Must not: know about entities, time or the tree.

use super::tree::NIL;

#[derive(Clone, Copy, Debug)]
struct Links {
    prev: u32,
    next: u32,
    linked: bool,
}

const UNLINKED: Links = Links {
    prev: NIL,
    next: NIL,
    linked: false,
};

/// A doubly linked list of arena indexes.
#[derive(Clone, Debug)]
pub(crate) struct Lru {
    links: Vec<Links>,
    head: u32,
    tail: u32,
    len: u32,
}

impl Lru {
    /// An empty list.
    pub(crate) fn new() -> Self {
        Lru {
            links: Vec::new(),
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    /// Makes room for the links of indexes below `total`, so that adding
    /// them never allocates (see [`super::arena::Arena::try_reserve`]).
    pub(crate) fn try_reserve(
        &mut self,
        total: usize,
    ) -> Result<(), std::collections::TryReserveError> {
        super::arena::reserve_total(&mut self.links, total)
    }

    /// The number of indexes whose links fit without allocating.
    pub(crate) fn capacity(&self) -> usize {
        self.links.capacity()
    }

    /// Number of members.
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// Whether `i` is a member.
    pub(crate) fn contains(&self, i: u32) -> bool {
        self.links.get(i as usize).is_some_and(|l| l.linked)
    }

    /// Adds `i` at the front (most recent).
    pub(crate) fn push_front(&mut self, i: u32) {
        let idx = i as usize;
        if idx >= self.links.len() {
            self.links.resize(idx + 1, UNLINKED);
        }
        assert!(!self.links[idx].linked, "lru: index {i} added twice");
        self.links[idx] = Links {
            prev: NIL,
            next: self.head,
            linked: true,
        };
        if self.head != NIL {
            self.links[self.head as usize].prev = i;
        } else {
            self.tail = i;
        }
        self.head = i;
        self.len += 1;
    }

    /// Unlinks `i`.
    pub(crate) fn remove(&mut self, i: u32) {
        assert!(self.contains(i), "lru: index {i} is not a member");
        let Links { prev, next, .. } = self.links[i as usize];
        if prev != NIL {
            self.links[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.links[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
        self.links[i as usize] = UNLINKED;
        self.len -= 1;
    }

    /// Moves member `i` to the front: one relink, on every switch.
    #[inline]
    pub(crate) fn move_to_front(&mut self, i: u32) {
        let head = self.head;
        if head == i {
            return;
        }
        debug_assert!(self.contains(i), "lru: index {i} is not a member");
        let Links { prev, next, .. } = self.links[i as usize];
        // `i` is a member but not the head, so it has a predecessor and
        // the head is another member.
        self.links[prev as usize].next = next;
        if next != NIL {
            self.links[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
        let l = &mut self.links[i as usize];
        l.prev = NIL;
        l.next = head;
        self.links[head as usize].prev = i;
        self.head = i;
    }

    /// Members from the back (least recently started) to the front.
    pub(crate) fn iter_from_back(&self) -> impl Iterator<Item = u32> + '_ {
        let mut cur = self.tail;
        std::iter::from_fn(move || {
            if cur == NIL {
                return None;
            }
            let i = cur;
            cur = self.links[i as usize].prev;
            Some(i)
        })
    }

    /// Members from the front (most recent) to the back.
    pub(crate) fn iter_from_front(&self) -> impl Iterator<Item = u32> + '_ {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            if cur == NIL {
                return None;
            }
            let i = cur;
            cur = self.links[i as usize].next;
            Some(i)
        })
    }

    /// Verifies the links in O(n): both directions agree, the count is
    /// right and nothing unlinked is reachable.
    pub(crate) fn check(&self) -> Result<(), String> {
        let fwd: Vec<u32> = self.iter_from_front().take(self.len as usize + 1).collect();
        if fwd.len() != self.len as usize {
            return Err(format!(
                "lru: {} members reachable from the front, len {}",
                fwd.len(),
                self.len
            ));
        }
        let mut back: Vec<u32> = self.iter_from_back().take(self.len as usize + 1).collect();
        back.reverse();
        if fwd != back {
            return Err("lru: forward and backward walks differ".into());
        }
        if fwd.iter().any(|&i| !self.links[i as usize].linked) {
            return Err("lru: an unlinked index is reachable".into());
        }
        let linked = self.links.iter().filter(|l| l.linked).count();
        if linked != self.len as usize {
            return Err(format!("lru: {linked} linked indexes, len {}", self.len));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_remove_move() {
        let mut l = Lru::new();
        for i in 0..5 {
            l.push_front(i);
        }
        l.check().unwrap();
        assert_eq!(l.iter_from_back().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
        l.move_to_front(0);
        assert_eq!(l.iter_from_front().collect::<Vec<_>>(), vec![0, 4, 3, 2, 1]);
        l.remove(3);
        l.remove(1);
        l.check().unwrap();
        assert_eq!(l.iter_from_back().collect::<Vec<_>>(), vec![2, 4, 0]);
        assert!(!l.contains(3));
        l.remove(0);
        l.remove(2);
        l.remove(4);
        l.check().unwrap();
        assert_eq!(l.len(), 0);
        assert_eq!(l.iter_from_back().next(), None);
    }

    #[test]
    fn move_to_front_relinks_the_middle_the_tail_and_a_pair() {
        let mut l = Lru::new();
        for i in 0..4 {
            l.push_front(i);
        }
        // front to back: 3 2 1 0
        l.move_to_front(2); // a middle member
        l.check().unwrap();
        assert_eq!(l.iter_from_front().collect::<Vec<_>>(), vec![2, 3, 1, 0]);
        l.move_to_front(0); // the tail
        l.check().unwrap();
        assert_eq!(l.iter_from_front().collect::<Vec<_>>(), vec![0, 2, 3, 1]);
        assert_eq!(l.iter_from_back().collect::<Vec<_>>(), vec![1, 3, 2, 0]);
        l.move_to_front(0); // the head: unchanged
        l.check().unwrap();
        let mut p = Lru::new();
        p.push_front(7);
        p.push_front(9);
        for want in [[7, 9], [9, 7], [7, 9]] {
            p.move_to_front(want[0]);
            p.check().unwrap();
            assert_eq!(p.iter_from_front().collect::<Vec<_>>(), want.to_vec());
            assert_eq!(p.len(), 2);
        }
    }
}
