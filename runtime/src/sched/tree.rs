//! The augmented, deadline-ordered balanced search tree of a run queue.
//!
//! Owns: the shape of the tree (an AVL tree whose nodes live in an
//! index-based arena: node `i` is the entity in slot `i` of the run queue),
//! its order (virtual deadline, compared by signed difference; equal keys
//! keep insertion order, the newcomer after the existing ones), the cached
//! leftmost node, and the two augmented values every node carries for its
//! whole subtree (docs/eevdf.md §3.4):
//!
//! ```text
//! sub_min_vrt(n)   = vmin(n.vrt,   sub_min_vrt(n.left),   sub_min_vrt(n.right))
//! sub_min_slice(n) =  min(n.slice, sub_min_slice(n.left), sub_min_slice(n.right))
//! ```
//!
//! They are recomputed bottom-up along the insertion / removal path (until
//! nothing changes any more) and for both nodes of every rotation, so every
//! operation is O(log n).
//!
//! **Flat mode.** A run queue usually holds a handful of entities, and for
//! those the tree's links, heights, rotations and augmentation cost more
//! than they save (an insert or a removal ran ~200 instructions with four
//! members). Up to [`FLAT_MAX`] members therefore live in a small array in
//! deadline order instead: an insert shifts the later members up, a removal
//! shifts them down, the two minima are kept beside the array (a removal
//! that takes one away rescans), and the pick scans for the first eligible
//! member in order. The array becomes a tree when an
//! insert would exceed [`FLAT_MAX`] and goes back to an array when a
//! removal leaves [`FLAT_BACK`] members, so a queue that hovers at the
//! boundary does not convert at every step. Both layouts give the same
//! order, ties included, and the same answers.
//!
//! The tree keeps its own copy of each member's `vdl`, `vrt` and `slice`
//! (taken at insertion): the descent of the pick then touches only this
//! compact array. A member's keys must not change while it is in the tree
//! (docs/eevdf.md §3.4); the run queue brackets every change with remove/insert
//! and its invariant check compares the copies with the entities.
//!
//! Must not: know about eligibility, weights, entities or payloads. The
//! pick's query, [`AugTree::first_where`], takes the eligibility test as a
//! predicate on `vrt` that the run queue supplies.

use super::vtime::{vdiff, vmin};

/// "No node": the null link.
pub(crate) const NIL: u32 = u32::MAX;

/// Most members kept in flat mode (a sorted array); one more makes a tree.
pub(crate) const FLAT_MAX: usize = 8;

/// A tree that a removal leaves with this many members goes back to flat
/// mode (below [`FLAT_MAX`], so the layout does not flip at every step).
pub(crate) const FLAT_BACK: usize = 4;

/// One node of the tree: links, AVL height, keys and augmentation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    left: u32,
    right: u32,
    parent: u32,
    /// Height of the subtree rooted here (a leaf has height 1); 0 when not linked.
    height: u8,
    /// The node is a member of the tree.
    linked: bool,
    /// Virtual deadline: the order key.
    pub(crate) vdl: u64,
    /// Virtual runtime of the member.
    pub(crate) vrt: u64,
    /// Slice of the member (real ns).
    pub(crate) slice: u64,
    /// Earliest `vrt` in this subtree (signed comparison).
    pub(crate) sub_min_vrt: u64,
    /// Smallest `slice` in this subtree.
    pub(crate) sub_min_slice: u64,
}

impl Node {
    /// A linked node with no children: its subtree is itself.
    fn leaf(vdl: u64, vrt: u64, slice: u64) -> Node {
        Node {
            left: NIL,
            right: NIL,
            parent: NIL,
            height: 1,
            linked: true,
            vdl,
            vrt,
            slice,
            sub_min_vrt: vrt,
            sub_min_slice: slice,
        }
    }
}

const EMPTY: Node = Node {
    left: NIL,
    right: NIL,
    parent: NIL,
    height: 0,
    linked: false,
    vdl: 0,
    vrt: 0,
    slice: 0,
    sub_min_vrt: 0,
    sub_min_slice: 0,
};

/// The members of a run queue in virtual-deadline order: a sorted array of
/// at most [`FLAT_MAX`] arena indexes (flat mode), or an AVL tree over arena
/// indexes augmented with the subtree minima of `vrt` and `slice`.
#[derive(Clone, Debug)]
pub(crate) struct AugTree {
    nodes: Vec<Node>,
    /// Tree mode: the root. `NIL` when empty and in flat mode.
    root: u32,
    leftmost: u32,
    len: u32,
    /// Flat mode: the members are `order[..len]`, in deadline order, and
    /// their nodes carry keys but no links.
    flat: bool,
    order: [u32; FLAT_MAX],
    /// Flat mode, with members: their earliest `vrt` and smallest `slice`
    /// (what a tree's root aggregates), kept up to date by every change.
    flat_min_vrt: u64,
    flat_min_slice: u64,
}

impl Default for AugTree {
    fn default() -> Self {
        Self::new()
    }
}

impl AugTree {
    /// Makes room for the nodes of arena indexes below `total`, so that
    /// inserting them never allocates (see [`super::arena::Arena::try_reserve`]).
    pub(crate) fn try_reserve(
        &mut self,
        total: usize,
    ) -> Result<(), std::collections::TryReserveError> {
        super::arena::reserve_total(&mut self.nodes, total)
    }

    /// The number of arena indexes whose nodes fit without allocating.
    pub(crate) fn capacity(&self) -> usize {
        self.nodes.capacity()
    }

    /// An empty tree (in flat mode).
    pub(crate) fn new() -> Self {
        AugTree {
            nodes: Vec::new(),
            root: NIL,
            leftmost: NIL,
            len: 0,
            flat: true,
            order: [NIL; FLAT_MAX],
            flat_min_vrt: 0,
            flat_min_slice: 0,
        }
    }

    /// Number of members.
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// Whether the members are kept as a sorted array (flat mode).
    #[cfg(test)]
    pub(crate) fn is_flat(&self) -> bool {
        self.flat
    }

    /// The member with the earliest deadline (cached), if any.
    #[inline]
    pub(crate) fn leftmost(&self) -> Option<u32> {
        (self.leftmost != NIL).then_some(self.leftmost)
    }

    /// Flat mode: the members in deadline order.
    #[inline]
    fn flat_members(&self) -> &[u32] {
        &self.order[..self.len as usize]
    }

    /// The earliest `vrt` (by signed difference) and the smallest `slice` of
    /// all members, if any: the cached pair in flat mode, the root's
    /// aggregates in tree mode.
    #[inline]
    fn minima(&self) -> Option<(u64, u64)> {
        if self.len == 0 {
            None
        } else if self.flat {
            Some((self.flat_min_vrt, self.flat_min_slice))
        } else {
            let r = &self.nodes[self.root as usize];
            Some((r.sub_min_vrt, r.sub_min_slice))
        }
    }

    /// The earliest `vrt` of all members (by signed difference), if any.
    #[inline]
    pub(crate) fn min_vrt(&self) -> Option<u64> {
        self.minima().map(|(v, _)| v)
    }

    /// The smallest `slice` of all members, if any.
    #[inline]
    pub(crate) fn min_slice(&self) -> Option<u64> {
        self.minima().map(|(_, s)| s)
    }

    /// Flat mode: both minima of the members, recomputed by a scan (`(0, 0)`
    /// when there are none).
    fn scan_flat_minima(&self) -> (u64, u64) {
        let mut it = self.flat_members().iter().map(|&i| &self.nodes[i as usize]);
        let Some(first) = it.next() else {
            return (0, 0);
        };
        it.fold((first.vrt, first.slice), |(v, s), n| {
            (vmin(v, n.vrt), s.min(n.slice))
        })
    }

    /// Flat mode: refreshes the cached minima (after a removal took one of
    /// them away, or after a conversion).
    fn rescan_flat_minima(&mut self) {
        (self.flat_min_vrt, self.flat_min_slice) = self.scan_flat_minima();
    }

    /// The first member in deadline order whose `vrt` satisfies `pred`, which
    /// must be monotone: if it holds for some `v`, it holds for every `vrt`
    /// that compares earlier (the pick's eligibility, `(v − base)·W ≤ S`).
    ///
    /// The leftmost member is tried first (the common case, and the whole
    /// answer with one member). Then flat mode scans on in order, and tree
    /// mode descends ([`AugTree::descend_first_where`]). O(log n).
    #[inline(always)]
    pub(crate) fn first_where(&self, pred: impl Fn(u64) -> bool) -> Option<u32> {
        if self.leftmost == NIL {
            return None;
        }
        if pred(self.nodes[self.leftmost as usize].vrt) {
            return Some(self.leftmost);
        }
        if self.flat {
            self.flat_members()[1..]
                .iter()
                .copied()
                .find(|&i| pred(self.nodes[i as usize].vrt))
        } else {
            self.descend_first_where(&pred)
        }
    }

    /// Tree mode's search for [`AugTree::first_where`]: a left subtree whose
    /// `sub_min_vrt` satisfies `pred` holds the answer (by monotonicity some
    /// member in it does, and all of them come first); otherwise the node
    /// itself if it qualifies; otherwise the answer is in the right subtree.
    #[inline(never)]
    fn descend_first_where(&self, pred: &impl Fn(u64) -> bool) -> Option<u32> {
        let mut x = self.root;
        while x != NIL {
            let n = &self.nodes[x as usize];
            if n.left != NIL && pred(self.nodes[n.left as usize].sub_min_vrt) {
                x = n.left;
            } else if pred(n.vrt) {
                return Some(x);
            } else {
                x = n.right;
            }
        }
        None
    }

    /// Node `i` (keys and augmentation). Only meaningful for members.
    #[inline]
    pub(crate) fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    /// Whether index `i` is a member.
    #[inline]
    pub(crate) fn contains(&self, i: u32) -> bool {
        self.nodes.get(i as usize).is_some_and(|n| n.linked)
    }

    #[inline]
    fn height(&self, i: u32) -> u8 {
        if i == NIL {
            0
        } else {
            self.nodes[i as usize].height
        }
    }

    /// Recomputes height and augmentation of `i` from its children.
    /// Returns whether any of the three values changed, and the AVL
    /// balance `height(left) − height(right)`.
    #[inline]
    fn update(&mut self, i: u32) -> (bool, i32) {
        let (left, right, vrt, slice) = {
            let n = &self.nodes[i as usize];
            (n.left, n.right, n.vrt, n.slice)
        };
        let (mut hl, mut hr) = (0u8, 0u8);
        let mut min_vrt = vrt;
        let mut min_slice = slice;
        if left != NIL {
            let c = &self.nodes[left as usize];
            hl = c.height;
            min_vrt = vmin(min_vrt, c.sub_min_vrt);
            min_slice = min_slice.min(c.sub_min_slice);
        }
        if right != NIL {
            let c = &self.nodes[right as usize];
            hr = c.height;
            min_vrt = vmin(min_vrt, c.sub_min_vrt);
            min_slice = min_slice.min(c.sub_min_slice);
        }
        let height = hl.max(hr) + 1;
        let n = &mut self.nodes[i as usize];
        let changed =
            n.height != height || n.sub_min_vrt != min_vrt || n.sub_min_slice != min_slice;
        n.height = height;
        n.sub_min_vrt = min_vrt;
        n.sub_min_slice = min_slice;
        (changed, hl as i32 - hr as i32)
    }

    /// Makes `new` take `old`'s place under `parent` (or as the root).
    #[inline]
    fn replace_child(&mut self, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            self.root = new;
        } else if self.nodes[parent as usize].left == old {
            self.nodes[parent as usize].left = new;
        } else {
            debug_assert_eq!(self.nodes[parent as usize].right, old);
            self.nodes[parent as usize].right = new;
        }
        if new != NIL {
            self.nodes[new as usize].parent = parent;
        }
    }

    /// Rotates `x` down to the left; its right child `y` takes its place.
    /// Both are re-augmented (x first: it is now y's child). Returns `y`.
    fn rotate_left(&mut self, x: u32) -> u32 {
        let y = self.nodes[x as usize].right;
        let b = self.nodes[y as usize].left;
        let p = self.nodes[x as usize].parent;
        self.nodes[x as usize].right = b;
        if b != NIL {
            self.nodes[b as usize].parent = x;
        }
        self.nodes[y as usize].left = x;
        self.nodes[x as usize].parent = y;
        self.replace_child(p, x, y);
        self.update(x);
        self.update(y);
        y
    }

    /// Mirror image of [`AugTree::rotate_left`]. Returns the new subtree root.
    fn rotate_right(&mut self, x: u32) -> u32 {
        let y = self.nodes[x as usize].left;
        let b = self.nodes[y as usize].right;
        let p = self.nodes[x as usize].parent;
        self.nodes[x as usize].left = b;
        if b != NIL {
            self.nodes[b as usize].parent = x;
        }
        self.nodes[y as usize].right = x;
        self.nodes[x as usize].parent = y;
        self.replace_child(p, x, y);
        self.update(x);
        self.update(y);
        y
    }

    /// Restores the AVL balance at `i` (whose children are balanced and
    /// correctly augmented, `i` itself being off by two) and returns the
    /// root of the subtree afterwards.
    fn rebalance(&mut self, i: u32) -> u32 {
        let n = self.nodes[i as usize];
        let bal = self.height(n.left) as i32 - self.height(n.right) as i32;
        if bal > 1 {
            let l = self.nodes[n.left as usize];
            if self.height(l.left) < self.height(l.right) {
                self.rotate_left(n.left);
            }
            self.rotate_right(i)
        } else if bal < -1 {
            let r = self.nodes[n.right as usize];
            if self.height(r.right) < self.height(r.left) {
                self.rotate_right(n.right);
            }
            self.rotate_left(i)
        } else {
            i
        }
    }

    /// Re-augments and rebalances the nodes from `i` upwards.
    ///
    /// The walk stops early at a node that was not rotated and whose
    /// height and augmented values did not change: everything above it
    /// depends only on those values (docs/eevdf.md §3.4, "propagation stops
    /// early"). It never stops before visiting `must_visit` (the successor
    /// moved into a removed node's place, which sits higher on this same
    /// path and must be recomputed); pass `NIL` when there is none.
    fn fix_upwards(&mut self, mut i: u32, mut must_visit: u32) {
        while i != NIL {
            if i == must_visit {
                must_visit = NIL;
            }
            let (changed, balance) = self.update(i);
            let top = if balance.abs() > 1 {
                self.rebalance(i)
            } else {
                i
            };
            if top == i && !changed && must_visit == NIL {
                return;
            }
            i = self.nodes[top as usize].parent;
        }
    }

    /// Inserts index `i` with its keys. Equal deadlines go after the
    /// members already in the tree.
    pub(crate) fn insert(&mut self, i: u32, vdl: u64, vrt: u64, slice: u64) {
        let idx = i as usize;
        if idx >= self.nodes.len() {
            self.nodes.resize(idx + 1, EMPTY);
        }
        assert!(!self.nodes[idx].linked, "tree: index {i} inserted twice");
        self.nodes[idx] = Node::leaf(vdl, vrt, slice);
        if self.flat && self.len as usize == FLAT_MAX {
            self.grow_into_tree();
        }
        if self.flat {
            // shift the members with a later deadline up; an equal deadline
            // stays before the newcomer
            let mut p = self.len as usize;
            while p > 0 && vdiff(vdl, self.nodes[self.order[p - 1] as usize].vdl) < 0 {
                self.order[p] = self.order[p - 1];
                p -= 1;
            }
            self.order[p] = i;
            if self.len == 0 {
                (self.flat_min_vrt, self.flat_min_slice) = (vrt, slice);
            } else {
                self.flat_min_vrt = vmin(self.flat_min_vrt, vrt);
                self.flat_min_slice = self.flat_min_slice.min(slice);
            }
            self.len += 1;
            self.leftmost = self.order[0];
            return;
        }
        self.link(i);
    }

    /// Tree mode: links member `i`, whose node holds its keys as a leaf.
    fn link(&mut self, i: u32) {
        let idx = i as usize;
        let vdl = self.nodes[idx].vdl;
        self.len += 1;
        if self.root == NIL {
            self.root = i;
            self.leftmost = i;
            return;
        }
        let mut cur = self.root;
        let mut only_left = true;
        loop {
            let c = &self.nodes[cur as usize];
            // signed comparison; an equal key goes right (after existing ones)
            if vdiff(vdl, c.vdl) < 0 {
                if c.left == NIL {
                    self.nodes[cur as usize].left = i;
                    break;
                }
                cur = c.left;
            } else {
                only_left = false;
                if c.right == NIL {
                    self.nodes[cur as usize].right = i;
                    break;
                }
                cur = c.right;
            }
        }
        self.nodes[idx].parent = cur;
        if only_left {
            self.leftmost = i;
        }
        self.fix_upwards(cur, NIL);
    }

    /// Replaces the only member, `out`, by index `i` with its keys: the
    /// two-task switch (the next task leaves the tree, the previous one
    /// enters it) without a search or a rebalance. Panics unless `out` is
    /// the only member.
    pub(crate) fn replace_sole(&mut self, out: u32, i: u32, vdl: u64, vrt: u64, slice: u64) {
        assert!(
            self.len == 1 && self.leftmost == out,
            "tree: replace_sole of {out}, which is not the only member"
        );
        debug_assert!(self.flat, "a tree of one member is flat");
        let idx = i as usize;
        if idx >= self.nodes.len() {
            self.nodes.resize(idx + 1, EMPTY);
        }
        assert!(!self.nodes[idx].linked, "tree: index {i} inserted twice");
        self.nodes[out as usize] = EMPTY;
        self.nodes[idx] = Node::leaf(vdl, vrt, slice);
        self.order[0] = i;
        self.leftmost = i;
        (self.flat_min_vrt, self.flat_min_slice) = (vrt, slice);
    }

    /// Flat mode → tree mode: links the members one by one in order, so
    /// equal deadlines keep their order (an equal key goes right).
    fn grow_into_tree(&mut self) {
        let members = self.order;
        let n = self.len as usize;
        self.flat = false;
        self.len = 0;
        self.root = NIL;
        self.leftmost = NIL;
        for &i in &members[..n] {
            let k = &self.nodes[i as usize];
            self.nodes[i as usize] = Node::leaf(k.vdl, k.vrt, k.slice);
            self.link(i);
        }
    }

    /// Tree mode → flat mode (at most [`FLAT_MAX`] members): the in-order
    /// walk fills the array, and the nodes drop their links.
    fn shrink_into_array(&mut self) {
        debug_assert!(self.len as usize <= FLAT_MAX);
        let mut k = 0;
        let mut cur = self.leftmost;
        while cur != NIL {
            self.order[k] = cur;
            k += 1;
            cur = self.next(cur).unwrap_or(NIL);
        }
        for &i in &self.order[..k] {
            let n = &self.nodes[i as usize];
            self.nodes[i as usize] = Node::leaf(n.vdl, n.vrt, n.slice);
        }
        self.flat = true;
        self.root = NIL;
        self.rescan_flat_minima();
    }

    /// The member following `i` in deadline order.
    pub(crate) fn next(&self, i: u32) -> Option<u32> {
        if self.flat {
            let m = self.flat_members();
            let p = m.iter().position(|&x| x == i)?;
            return m.get(p + 1).copied();
        }
        let n = &self.nodes[i as usize];
        if n.right != NIL {
            return Some(self.min_of(n.right));
        }
        let mut child = i;
        let mut p = n.parent;
        while p != NIL && self.nodes[p as usize].right == child {
            child = p;
            p = self.nodes[p as usize].parent;
        }
        (p != NIL).then_some(p)
    }

    fn min_of(&self, mut i: u32) -> u32 {
        while self.nodes[i as usize].left != NIL {
            i = self.nodes[i as usize].left;
        }
        i
    }

    /// Removes member `i`.
    pub(crate) fn remove(&mut self, i: u32) {
        assert!(self.contains(i), "tree: index {i} is not a member");
        if self.flat {
            let n = self.len as usize;
            let p = self.order[..n]
                .iter()
                .position(|&x| x == i)
                .expect("tree: a flat member is in the array");
            self.order.copy_within(p + 1..n, p);
            self.order[n - 1] = NIL;
            self.len -= 1;
            self.leftmost = if self.len == 0 { NIL } else { self.order[0] };
            let gone = self.nodes[i as usize];
            self.nodes[i as usize] = EMPTY;
            if gone.vrt == self.flat_min_vrt || gone.slice == self.flat_min_slice {
                self.rescan_flat_minima();
            }
            return;
        }
        if self.leftmost == i {
            // the leftmost node has no left child: its successor is the
            // minimum of its right subtree, or its parent
            self.leftmost = self.next(i).unwrap_or(NIL);
        }
        let n = self.nodes[i as usize];
        if n.left != NIL && n.right != NIL {
            // Two children: the successor `s` (no left child) takes i's place.
            let s = self.min_of(n.right);
            let s_parent = self.nodes[s as usize].parent;
            let s_right = self.nodes[s as usize].right;
            let fix_from = if s_parent == i {
                s
            } else {
                // detach s, its right child moves up
                self.nodes[s_parent as usize].left = s_right;
                if s_right != NIL {
                    self.nodes[s_right as usize].parent = s_parent;
                }
                self.nodes[s as usize].right = n.right;
                self.nodes[n.right as usize].parent = s;
                s_parent
            };
            self.nodes[s as usize].left = n.left;
            self.nodes[n.left as usize].parent = s;
            self.replace_child(n.parent, i, s);
            // s now stands where i stood: give it i's old height and
            // augmentation, which is what i's parent aggregated, so the
            // early stop in fix_upwards compares against the right values
            let sn = &mut self.nodes[s as usize];
            sn.height = n.height;
            sn.sub_min_vrt = n.sub_min_vrt;
            sn.sub_min_slice = n.sub_min_slice;
            self.fix_upwards(fix_from, s);
        } else {
            let child = if n.left != NIL { n.left } else { n.right };
            self.replace_child(n.parent, i, child);
            self.fix_upwards(n.parent, NIL);
        }
        self.nodes[i as usize] = EMPTY;
        self.len -= 1;
        if self.len as usize <= FLAT_BACK {
            self.shrink_into_array();
        }
    }

    /// Members in deadline order (O(n); for checks and tests).
    pub(crate) fn in_order(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len as usize);
        let mut cur = self.leftmost();
        while let Some(i) = cur {
            out.push(i);
            cur = self.next(i);
        }
        out
    }

    /// Verifies the whole structure by O(n) recomputation: links, AVL
    /// balance, heights, order, augmentation, the leftmost cache and the
    /// member count. Returns the first violation.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.flat {
            return self.check_flat();
        }
        if (self.len as usize) <= FLAT_BACK {
            return Err(format!("tree: {} members in tree mode", self.len));
        }
        let mut count = 0u32;
        if self.root != NIL && self.nodes[self.root as usize].parent != NIL {
            return Err("tree: root has a parent".into());
        }
        // (height, sub_min_vrt, sub_min_slice) recomputed for each subtree
        fn walk(t: &AugTree, i: u32, count: &mut u32) -> Result<(u8, u64, u64), String> {
            let n = &t.nodes[i as usize];
            if !n.linked {
                return Err(format!("tree: node {i} reachable but not linked"));
            }
            *count += 1;
            let mut h = 0u8;
            let mut mv = n.vrt;
            let mut ms = n.slice;
            let mut hs = [0u8; 2];
            for (k, c) in [n.left, n.right].into_iter().enumerate() {
                if c == NIL {
                    continue;
                }
                if t.nodes[c as usize].parent != i {
                    return Err(format!("tree: node {c} has a wrong parent link"));
                }
                let (ch, cv, cs) = walk(t, c, count)?;
                hs[k] = ch;
                h = h.max(ch);
                mv = vmin(mv, cv);
                ms = ms.min(cs);
            }
            if (hs[0] as i32 - hs[1] as i32).abs() > 1 {
                return Err(format!("tree: node {i} is out of AVL balance"));
            }
            if n.height != h + 1 {
                return Err(format!("tree: node {i} height {} != {}", n.height, h + 1));
            }
            if n.sub_min_vrt != mv {
                return Err(format!(
                    "tree: node {i} sub_min_vrt {} != recomputed {mv}",
                    n.sub_min_vrt
                ));
            }
            if n.sub_min_slice != ms {
                return Err(format!(
                    "tree: node {i} sub_min_slice {} != recomputed {ms}",
                    n.sub_min_slice
                ));
            }
            Ok((h + 1, mv, ms))
        }
        if self.root != NIL {
            walk(self, self.root, &mut count)?;
        }
        if count != self.len {
            return Err(format!("tree: {count} reachable nodes, len {}", self.len));
        }
        let linked = self.nodes.iter().filter(|n| n.linked).count() as u32;
        if linked != self.len {
            return Err(format!("tree: {linked} linked nodes, len {}", self.len));
        }
        // leftmost cache
        let true_min = if self.root == NIL {
            NIL
        } else {
            self.min_of(self.root)
        };
        if true_min != self.leftmost {
            return Err(format!(
                "tree: cached leftmost {} != true leftmost {true_min}",
                self.leftmost
            ));
        }
        self.check_order(&self.in_order())
    }

    /// Non-decreasing deadlines along `order`.
    fn check_order(&self, order: &[u32]) -> Result<(), String> {
        for w in order.windows(2) {
            let (a, b) = (&self.nodes[w[0] as usize], &self.nodes[w[1] as usize]);
            if vdiff(b.vdl, a.vdl) < 0 {
                return Err(format!(
                    "tree: deadline order broken between {} and {}",
                    w[0], w[1]
                ));
            }
        }
        Ok(())
    }

    /// Flat mode's invariants: at most [`FLAT_MAX`] distinct linked members
    /// without links, no root, every other node unlinked, the cached minima
    /// and leftmost, and deadline order.
    fn check_flat(&self) -> Result<(), String> {
        let members = self
            .order
            .get(..self.len as usize)
            .ok_or_else(|| format!("tree: {} members in flat mode (most {FLAT_MAX})", self.len))?;
        if self.root != NIL {
            return Err("tree: a root in flat mode".into());
        }
        for (k, &i) in members.iter().enumerate() {
            let n = self
                .nodes
                .get(i as usize)
                .ok_or_else(|| format!("tree: flat member {i} has no node"))?;
            if !n.linked || members[..k].contains(&i) {
                return Err(format!("tree: flat member {i} unlinked or repeated"));
            }
            if n.left != NIL || n.right != NIL || n.parent != NIL {
                return Err(format!("tree: flat member {i} has tree links"));
            }
        }
        let linked = self.nodes.iter().filter(|n| n.linked).count() as u32;
        if linked != self.len {
            return Err(format!("tree: {linked} linked nodes, len {}", self.len));
        }
        if !members.is_empty() {
            let (v, sl) = self.scan_flat_minima();
            if (v, sl) != (self.flat_min_vrt, self.flat_min_slice) {
                return Err(format!(
                    "tree: flat minima ({}, {}) != recomputed ({v}, {sl})",
                    self.flat_min_vrt, self.flat_min_slice
                ));
            }
        }
        if self.leftmost != members.first().copied().unwrap_or(NIL) {
            return Err(format!(
                "tree: cached leftmost {} is not the first member",
                self.leftmost
            ));
        }
        self.check_order(members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic PRNG (xorshift) so the tests need no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Reference: members sorted by (deadline relative to `base`, insertion sequence).
    fn reference_order(members: &[(u32, u64, u64)], base: u64) -> Vec<u32> {
        let mut v = members.to_vec();
        v.sort_by_key(|&(_, vdl, seq)| (vdiff(vdl, base), seq));
        v.into_iter().map(|(i, _, _)| i).collect()
    }

    #[test]
    fn empty_tree() {
        let t = AugTree::new();
        assert_eq!(t.len(), 0);
        assert_eq!((t.min_vrt(), t.min_slice()), (None, None));
        assert_eq!(t.first_where(|_| true), None);
        assert_eq!(t.leftmost(), None);
        t.check().unwrap();
    }

    #[test]
    fn ascending_inserts_rotate_and_keep_augmentation() {
        let mut t = AugTree::new();
        // ascending deadlines force left rotations; vrt descending so the
        // minimum vrt is always the most recent node
        for i in 0..100u32 {
            t.insert(i, 1000 + i as u64, 500 - i as u64, 1000 - i as u64);
            t.check().unwrap();
            assert_eq!(t.min_vrt(), Some(500 - i as u64));
            assert_eq!(t.min_slice(), Some(1000 - i as u64));
            assert_eq!(t.leftmost(), Some(0));
            assert_eq!(t.is_flat(), i < FLAT_MAX as u32);
        }
        // balanced: height ≤ 1.44 log2(n+2)
        assert!(t.node(t.root).height <= 10);
        assert_eq!(t.in_order(), (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn descending_inserts_update_leftmost() {
        let mut t = AugTree::new();
        for i in 0..50u32 {
            t.insert(i, 1000 - i as u64, 0, 1);
            assert_eq!(t.leftmost(), Some(i));
            t.check().unwrap();
        }
        // remove the leftmost repeatedly: the cache follows
        for i in (0..50u32).rev() {
            assert_eq!(t.leftmost(), Some(i));
            t.remove(i);
            t.check().unwrap();
        }
        assert_eq!(t.leftmost(), None);
    }

    #[test]
    fn equal_keys_keep_insertion_order() {
        let mut t = AugTree::new();
        for i in 0..20u32 {
            t.insert(i, 7, i as u64, 1);
        }
        t.check().unwrap();
        assert_eq!(t.in_order(), (0..20).collect::<Vec<_>>());
        t.remove(0);
        t.insert(0, 7, 0, 1);
        let mut expect: Vec<u32> = (1..20).collect();
        expect.push(0);
        assert_eq!(t.in_order(), expect);
    }

    #[test]
    fn wrapping_deadlines_order_by_signed_difference() {
        let mut t = AugTree::new();
        let base = u64::MAX - 5;
        for (i, d) in [10u64, 0, 3, 20].into_iter().enumerate() {
            t.insert(i as u32, base.wrapping_add(d), base.wrapping_add(d), 1);
        }
        t.check().unwrap();
        // base+0 (index 1) is earliest even though the raw value is huge
        assert_eq!(t.in_order(), vec![1, 2, 0, 3]);
        // base+3 wraps past zero; it must still be the minimum vrt after index 1 leaves
        t.remove(1);
        assert_eq!(t.min_vrt(), Some(base.wrapping_add(3)));
    }

    /// Random inserts and removals against a sorted reference, in both
    /// layouts and across their conversions: half the rounds keep the
    /// queue around the flat/tree boundary (at most 12 members), the others
    /// let it grow to 200. Checks the order, the minima and the pick's
    /// query with a random eligibility threshold at every step.
    #[test]
    fn random_operations_match_reference() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut flat_steps, mut tree_steps) = (0, 0);
        for round in 0..20 {
            let base = if round % 2 == 0 {
                0u64.wrapping_sub(1 << 20)
            } else {
                rng.next()
            };
            let cap = if round % 4 < 2 { 12 } else { 200 };
            let mut t = AugTree::new();
            let mut members: Vec<(u32, u64, u64)> = Vec::new();
            let mut seq = 0u64;
            for _ in 0..600 {
                // a random walk around the boundary, or a drift upwards
                let insert = if cap == 12 {
                    rng.next().is_multiple_of(2)
                } else {
                    members.len() < 5 || !rng.next().is_multiple_of(3)
                };
                if insert && members.len() < cap {
                    // a free index
                    let i = (0..300u32)
                        .map(|_| (rng.next() % 300) as u32)
                        .find(|i| !t.contains(*i))
                        .unwrap();
                    // small deadline range so equal keys occur
                    let vdl = base.wrapping_add(rng.next() % 64);
                    let vrt = base.wrapping_add(rng.next() % 1000).wrapping_sub(500);
                    let slice = 100 + rng.next() % 1000;
                    t.insert(i, vdl, vrt, slice);
                    members.push((i, vdl, seq));
                    seq += 1;
                } else if !members.is_empty() {
                    let k = (rng.next() % members.len() as u64) as usize;
                    let (i, _, _) = members.swap_remove(k);
                    t.remove(i);
                }
                t.check().unwrap();
                if t.is_flat() {
                    flat_steps += 1;
                } else {
                    tree_steps += 1;
                }
                assert_eq!(t.len() as usize, members.len());
                let order = reference_order(&members, base);
                assert_eq!(t.in_order(), order);
                let min_slice = members.iter().map(|&(i, _, _)| t.node(i).slice).min();
                assert_eq!(t.min_slice(), min_slice);
                let min_vrt = members.iter().map(|&(i, _, _)| t.node(i).vrt).reduce(vmin);
                assert_eq!(t.min_vrt(), min_vrt);
                let limit = base.wrapping_add(rng.next() % 1000).wrapping_sub(500);
                let eligible = |v: u64| vdiff(v, limit) <= 0;
                let first = order.iter().copied().find(|&i| eligible(t.node(i).vrt));
                assert_eq!(t.first_where(eligible), first);
            }
        }
        assert!(
            flat_steps > 1000 && tree_steps > 1000,
            "{flat_steps} steps flat, {tree_steps} as a tree"
        );
    }
}
