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
//! The tree keeps its own copy of each member's `vdl`, `vrt` and `slice`
//! (taken at insertion): the descent of the pick then touches only this
//! compact array. A member's keys must not change while it is in the tree
//! (docs/eevdf.md §3.4); the run queue brackets every change with remove/insert
//! and its invariant check compares the copies with the entities.
//!
//! Must not: know about eligibility, weights, entities or payloads; the
//! pick's descent lives in the run queue and only walks this tree through
//! [`AugTree::root`], [`AugTree::left`], [`AugTree::right`] and the node keys.

use super::vtime::{vdiff, vmin};

/// "No node": the null link.
pub(crate) const NIL: u32 = u32::MAX;

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

/// An AVL tree over arena indexes, ordered by virtual deadline and augmented
/// with the subtree minima of `vrt` and `slice`.
#[derive(Clone, Debug, Default)]
pub(crate) struct AugTree {
    nodes: Vec<Node>,
    root: u32,
    leftmost: u32,
    len: u32,
}

impl AugTree {
    /// An empty tree.
    pub(crate) fn new() -> Self {
        AugTree {
            nodes: Vec::new(),
            root: NIL,
            leftmost: NIL,
            len: 0,
        }
    }

    /// Number of members.
    #[inline]
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// The root, if any.
    #[inline]
    pub(crate) fn root(&self) -> Option<u32> {
        (self.root != NIL).then_some(self.root)
    }

    /// The member with the earliest deadline (cached), if any.
    #[inline]
    pub(crate) fn leftmost(&self) -> Option<u32> {
        (self.leftmost != NIL).then_some(self.leftmost)
    }

    /// Left child of member `i`.
    #[inline]
    pub(crate) fn left(&self, i: u32) -> Option<u32> {
        let l = self.nodes[i as usize].left;
        (l != NIL).then_some(l)
    }

    /// Right child of member `i`.
    #[inline]
    pub(crate) fn right(&self, i: u32) -> Option<u32> {
        let r = self.nodes[i as usize].right;
        (r != NIL).then_some(r)
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
            self.len == 1 && self.root == out,
            "tree: replace_sole of {out}, which is not the only member"
        );
        let idx = i as usize;
        if idx >= self.nodes.len() {
            self.nodes.resize(idx + 1, EMPTY);
        }
        assert!(!self.nodes[idx].linked, "tree: index {i} inserted twice");
        self.nodes[out as usize] = EMPTY;
        self.nodes[idx] = Node::leaf(vdl, vrt, slice);
        self.root = i;
        self.leftmost = i;
    }

    /// The member following `i` in deadline order.
    pub(crate) fn next(&self, i: u32) -> Option<u32> {
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
        // order: non-decreasing deadlines along the in-order walk
        let order = self.in_order();
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
        assert_eq!(t.root(), None);
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
            let r = t.node(t.root().unwrap());
            assert_eq!(r.sub_min_vrt, 500 - i as u64);
            assert_eq!(r.sub_min_slice, 1000 - i as u64);
            assert_eq!(t.leftmost(), Some(0));
        }
        // balanced: height ≤ 1.44 log2(n+2)
        assert!(t.node(t.root().unwrap()).height <= 10);
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
        assert_eq!(t.node(t.root().unwrap()).sub_min_vrt, base.wrapping_add(3));
    }

    #[test]
    fn random_operations_match_reference() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..20 {
            let base = if round % 2 == 0 {
                0u64.wrapping_sub(1 << 20)
            } else {
                rng.next()
            };
            let mut t = AugTree::new();
            let mut members: Vec<(u32, u64, u64)> = Vec::new();
            let mut seq = 0u64;
            for _ in 0..600 {
                let insert = members.len() < 5 || !rng.next().is_multiple_of(3);
                if insert && members.len() < 200 {
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
                assert_eq!(t.len() as usize, members.len());
                assert_eq!(t.in_order(), reference_order(&members, base));
                if let Some(r) = t.root() {
                    let min_slice = members
                        .iter()
                        .map(|&(i, _, _)| t.node(i).slice)
                        .min()
                        .unwrap();
                    assert_eq!(t.node(r).sub_min_slice, min_slice);
                    let min_vrt = members
                        .iter()
                        .map(|&(i, _, _)| t.node(i).vrt)
                        .reduce(vmin)
                        .unwrap();
                    assert_eq!(t.node(r).sub_min_vrt, min_vrt);
                }
            }
        }
    }
}
