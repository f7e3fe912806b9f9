//! Unit tests of the run queue's formulas (V, eligibility, base, min_slice,
//! charging, the pick's descent). Behaviour and property tests live in
//! `runtime/tests/sched_*.rs`.

use super::super::entity::Entity;
use super::super::features::{Feature, Features};
use super::super::flags::{DequeueFlags, EnqueueFlags};
use super::super::vtime::vdiff;
use super::{Params, Queued, Resched, RunQueue, Slot};

/// A tiny deterministic PRNG (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

impl RunQueue<u32> {
    /// Queues an entity with the given keys as they are, bypassing
    /// placement (tests of the pick and of V only).
    fn insert_raw(&mut self, nice: i32, vrt: u64, vdl: u64, slice: Option<u64>) -> Slot {
        let mut e = Entity::new(nice).unwrap().with_slice(slice).unwrap();
        e.vrt = vrt;
        e.vdl = vdl;
        e.queued = true;
        let w = e.weight as u64;
        let i = self.arena.alloc(Queued {
            entity: e,
            payload: 0,
        });
        self.load += w;
        self.nr_queued += 1;
        self.nr_runnable += 1;
        self.lru.push_front(i);
        self.tree_insert(i);
        Slot(i)
    }
}

fn rq_at(base: u64) -> RunQueue<u32> {
    RunQueue::with_base(Params::default(), Features::default(), base)
}

#[test]
fn v_is_the_floored_weighted_mean() {
    let base = u64::MAX - 10;
    let mut rq = rq_at(base);
    assert_eq!(rq.avg_vruntime(), base, "empty: V = base");
    // keys −3 (w 1024) and 0 (w 335): S = −3072, W = 1359, S/W = −2.26 → −3
    let a = rq.insert_raw(0, base.wrapping_sub(3), 0, None);
    let b = rq.insert_raw(5, base, 0, None);
    assert_eq!(rq.avg_vruntime(), base.wrapping_sub(3));
    // floor, not truncation: the entity at V is eligible, one above is not
    assert!(rq.is_eligible(a));
    assert!(!rq.is_eligible(b));
    rq.check_invariants().unwrap();
}

#[test]
fn eligibility_is_exact_at_the_boundary() {
    let mut rq = rq_at(1000);
    // keys 0 and 3, equal weights: V = 1.5 → floor 1; v = 1 eligible (1·2 ≤ 3), v = 2 not
    rq.insert_raw(0, 1000, 5000, None);
    rq.insert_raw(0, 1003, 5000, None);
    let (s, w) = rq.totals();
    assert_eq!((s, w), (3 * 1024, 2048));
    assert!(RunQueue::<u32>::vrt_eligible(1001, 1000, s, w));
    assert!(!RunQueue::<u32>::vrt_eligible(1002, 1000, s, w));
    assert_eq!(rq.avg_vruntime(), 1001);
}

#[test]
fn advancing_the_base_changes_nothing_real() {
    let mut rq = rq_at(0);
    let a = rq.insert_raw(0, 500, 9000, None);
    rq.insert_raw(-3, 800, 9100, None);
    rq.insert_raw(7, 1200, 9200, None);
    let v = rq.avg_vruntime();
    let elig: Vec<bool> = rq.iter().map(|(s, _, _)| rq.is_eligible(s)).collect();
    rq.advance_base();
    assert_eq!(rq.base(), 500, "the smallest vruntime (root's sub_min_vrt)");
    assert_eq!(rq.avg_vruntime(), v);
    let elig2: Vec<bool> = rq.iter().map(|(s, _, _)| rq.is_eligible(s)).collect();
    assert_eq!(elig, elig2);
    rq.check_invariants().unwrap();
    // monotonic: removing the minimum moves it on, nothing moves it back
    let _ = rq.dequeue(a, DequeueFlags::NONE, 0);
    assert_eq!(rq.base(), 800);
    rq.insert_raw(0, 100, 9000, None);
    rq.advance_base();
    assert_eq!(rq.base(), 800);
    rq.check_invariants().unwrap();
}

#[test]
fn min_slice_covers_the_tree_and_curr() {
    let mut rq = rq_at(0);
    assert_eq!(rq.min_slice(), None);
    let a = rq.insert_raw(0, 0, 10, Some(300_000));
    rq.insert_raw(0, 0, 20, Some(2_000_000));
    assert_eq!(rq.min_slice(), Some(300_000));
    rq.set_curr(a, 0);
    assert_eq!(rq.min_slice(), Some(300_000), "curr counts");
    rq.insert_raw(0, 0, 30, Some(100_000));
    assert_eq!(rq.min_slice(), Some(100_000));
}

#[test]
fn charging_converts_real_to_virtual_time() {
    let mut rq = rq_at(0);
    let e = Entity::new(5).unwrap();
    let a = rq.enqueue(e, 0, EnqueueFlags::WAKEUP, 0);
    rq.set_curr(a, 1_000);
    let vrt0 = rq.entity(a).vrt;
    rq.charge_current(1_001_000);
    let e = rq.entity(a);
    assert_eq!(e.sum_exec, 1_000_000);
    assert_eq!(e.vrt - vrt0, e.fair_delta(1_000_000));
    // a clock going backwards or standing still is ignored
    rq.charge_current(500_000);
    rq.charge_current(1_001_000);
    assert_eq!(rq.entity(a).sum_exec, 1_000_000);
}

#[test]
fn the_tick_promotes_a_lazy_request() {
    let mut rq = rq_at(0);
    let a = rq.enqueue(Entity::new(0).unwrap(), 0, EnqueueFlags::WAKEUP, 0);
    rq.enqueue(Entity::new(0).unwrap(), 1, EnqueueFlags::WAKEUP, 0);
    rq.set_curr(a, 0);
    // 0.7 ms slice: after 0.8 ms the deadline renews and a lazy request is made
    assert!(rq.charge_current(800_000));
    assert_eq!(rq.resched(), Resched::Lazy);
    assert_eq!(rq.counters().resched_slice, 1);
    assert!(rq.tick(900_000));
    assert_eq!(rq.resched(), Resched::Now);
    rq.clear_resched();
    assert_eq!(rq.resched(), Resched::None);
}

/// The pick's O(log n) descent against a linear scan on big random trees.
#[test]
fn descent_matches_a_linear_scan_on_large_trees() {
    let mut rng = Rng(0xDEAD_BEEF_1234_5678);
    for round in 0..6 {
        let base = rng.next();
        let mut rq = rq_at(base);
        let n = 500 + round * 300;
        for _ in 0..n {
            let nice = (rng.next() % 40) as i32 - 20;
            let key = rng.next() % 10_000_000;
            let vrt = base.wrapping_add(key);
            // deadlines anti-correlated with vruntimes: the earliest
            // deadlines belong to the ineligible entities
            let vdl = base.wrapping_add(20_000_000 - key + rng.next() % 2_000_000);
            rq.insert_raw(nice, vrt, vdl, None);
        }
        rq.check_invariants().unwrap();
        let got = rq.pick_eevdf(false).unwrap();
        let (s, w) = rq.totals();
        let best = rq
            .iter()
            .filter(|(_, e, _)| RunQueue::<u32>::vrt_eligible(e.vrt, rq.base, s, w))
            .map(|(_, e, _)| vdiff(e.vdl, base))
            .min()
            .unwrap();
        assert!(rq.is_eligible(got));
        assert_eq!(vdiff(rq.entity(got).vdl, base), best);
        // the leftmost is not eligible: the descent, not the fast path, found it
        let l = rq.tree.leftmost().unwrap();
        assert!(!rq.is_eligible(Slot(l)));
    }
}

#[test]
fn set_curr_takes_the_entity_out_of_the_tree_and_sets_protection() {
    let mut rq = rq_at(0);
    let a = rq.insert_raw(0, 0, 3_000_000, Some(3_000_000));
    let b = rq.insert_raw(0, 0, 200_000, Some(200_000));
    rq.set_curr(a, 10);
    assert!(!rq.tree.contains(a.0));
    let e = rq.entity(a);
    // RUN_TO_PARITY: protected for the shortest other slice (200 µs)
    assert_eq!(e.vprot, 200_000);
    assert_eq!(e.exec_start, 10);
    // switching to b puts a back
    rq.set_curr(b, 20);
    assert!(rq.tree.contains(a.0) && !rq.tree.contains(b.0));
    // b's own slice is the shortest: protected up to its deadline
    assert_eq!(rq.entity(b).vprot, rq.entity(b).vdl);
    // NO_RUN_TO_PARITY: min(700 µs, slice)
    rq.set_features(Features::default().with(Feature::RunToParity, false));
    rq.set_curr(a, 30);
    let e = rq.entity(a);
    assert_eq!(e.vprot, e.vrt + 700_000);
    rq.check_invariants().unwrap();
}

#[test]
fn forgiven_time_is_not_charged() {
    let mut rq = rq_at(0);
    let a = rq.insert_raw(0, 0, 3_000_000, Some(3_000_000));
    let _b = rq.insert_raw(0, 0, 3_000_000, Some(3_000_000));
    rq.set_curr(a, 0);
    // 1 ms of wall time, 600 µs of it on a descheduled thread.
    rq.forgive_current(600_000, 1_000_000);
    rq.charge_current(1_000_000);
    assert_eq!(rq.entity(a).sum_exec, 400_000);
    // More forgiven than has passed: nothing is charged, nothing goes back.
    rq.forgive_current(5_000_000, 1_200_000);
    rq.charge_current(1_200_000);
    assert_eq!(rq.entity(a).sum_exec, 400_000);
    assert_eq!(rq.entity(a).exec_start, 1_200_000);
    rq.check_invariants().unwrap();
}

/// After `try_reserve(n)`, a queue that holds at most `n` entities never
/// reallocates its storage: the runtime reserves at spawn, where running
/// out of memory is still an error, so wakeups never allocate.
#[test]
fn reserved_room_holds_the_queue_without_allocating() {
    let mut rq = rq_at(0);
    rq.try_reserve(300).unwrap();
    assert!(rq.capacity() >= 300);
    let storage = |rq: &RunQueue<u32>| (rq.arena.capacity(), rq.tree.capacity(), rq.lru.capacity());
    let before = storage(&rq);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut now = 1_000;
    let mut slots = Vec::new();
    for round in 0..20u32 {
        // fill up to the reservation, with entities of mixed weights
        while slots.len() < 300 {
            let nice = (rng.next() % 40) as i32 - 20;
            let e = Entity::new(nice).unwrap();
            slots.push(rq.enqueue(e, round, EnqueueFlags::INITIAL, now));
        }
        // run a few, then dequeue a random half for good
        for _ in 0..10 {
            now += 1 + rng.next() % 3_000_000;
            if let super::Pick::Run(s) = rq.pick_next(now) {
                rq.set_curr(s, now);
            }
        }
        let keep = slots.len() / 2;
        while slots.len() > keep {
            let i = (rng.next() % slots.len() as u64) as usize;
            let s = slots.swap_remove(i);
            let _ = rq.dequeue(s, DequeueFlags::SLEEP | DequeueFlags::SPECIAL, now);
        }
        rq.check_invariants().unwrap();
    }
    assert_eq!(storage(&rq), before, "the storage was reallocated");
}
