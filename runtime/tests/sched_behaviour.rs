//! Behaviour tests of the EEVDF run queue: deterministic simulations of a
//! worker with a 1 ms tick, checking what docs/eevdf.md promises — CPU shares
//! proportional to weight, placement of new tasks, PREEMPT_SHORT and slice
//! protection, delayed dequeue with DELAY_ZERO, RUN_TO_PARITY, TICK_ELIGIBLE,
//! the policy rules of wakeup preemption, yield, stealing — and clear
//! errors on bad input.

use eevdf_rt::sched::vtime::vdiff;
use eevdf_rt::sched::{
    Dequeue, DequeueFlags, EnqueueFlags, Entity, Feature, Features, Params, Pick, Policy, Resched,
    RunQueue, Slot, WakeFlags,
};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
const TICK: u64 = MS;

/// One simulated worker: it runs the current entity, ticks every 1 ms and
/// switches whenever a reschedule is pending or nothing runs.
struct World {
    rq: RunQueue<usize>,
    now: u64,
    switches: u64,
    finished_delayed: Vec<(Entity, usize)>,
}

impl World {
    fn new(features: Features) -> Self {
        World {
            rq: RunQueue::new(Params::default(), features),
            now: 0,
            switches: 0,
            finished_delayed: Vec::new(),
        }
    }

    fn spawn(&mut self, id: usize, nice: i32, slice: Option<u64>) -> Slot {
        let e = Entity::new(nice).unwrap().with_slice(slice).unwrap();
        let s = self.rq.enqueue(e, id, EnqueueFlags::INITIAL, self.now);
        self.rq.wakeup_preempt(s, WakeFlags::FORK, self.now);
        s
    }

    /// The switch path: pick (finishing delayed entities) and set_curr.
    fn switch(&mut self) -> Option<Slot> {
        loop {
            match self.rq.pick_next(self.now) {
                Pick::Run(s) => {
                    if self.rq.curr() != Some(s) {
                        self.switches += 1;
                    }
                    self.rq.set_curr(s, self.now);
                    self.rq.clear_resched();
                    return Some(s);
                }
                Pick::FinishedDelayed(e, id) => self.finished_delayed.push((e, id)),
                Pick::Empty => return None,
            }
        }
    }

    /// One tick period of the worker loop.
    fn step(&mut self) {
        if self.rq.curr().is_none() || self.rq.resched() != Resched::None {
            self.switch();
        }
        self.now += TICK;
        self.rq.tick(self.now);
    }

    fn run_ms(&mut self, ms: u64) {
        for _ in 0..ms {
            self.step();
            debug_assert!(self.rq.check_invariants().is_ok());
        }
    }

    /// Time passes without a tick; the current entity is charged.
    fn advance(&mut self, dt: u64) {
        self.now += dt;
        self.rq.charge_current(self.now);
    }
}

/// Runs always-runnable tasks of the given nice levels for `secs` simulated
/// seconds and returns (share, expected share) per task.
fn shares(nices: &[i32], secs: u64) -> Vec<(f64, f64)> {
    let mut w = World::new(Features::default());
    let slots: Vec<Slot> = nices
        .iter()
        .enumerate()
        .map(|(i, &n)| w.spawn(i, n, None))
        .collect();
    w.run_ms(secs * 1000);
    w.rq.check_invariants().unwrap();
    let total: u64 = slots.iter().map(|&s| w.rq.entity(s).sum_exec()).sum();
    let wsum: u64 = slots.iter().map(|&s| w.rq.entity(s).weight() as u64).sum();
    assert_eq!(total, secs * 1000 * MS, "the worker was never idle");
    slots
        .iter()
        .map(|&s| {
            let e = w.rq.entity(s);
            (
                e.sum_exec() as f64 / total as f64,
                e.weight() as f64 / wsum as f64,
            )
        })
        .collect()
}

#[test]
fn shares_follow_weights_nice_0_0_5() {
    // 1024 : 1024 : 335, each share within 1 % (relative) of its weight share
    for (share, expect) in shares(&[0, 0, 5], 10) {
        assert!(
            (share / expect - 1.0).abs() < 0.01,
            "share {share:.5}, expected {expect:.5}"
        );
    }
}

#[test]
fn shares_follow_weights_nice_minus_10_and_10() {
    // 9548 : 110: the nice-10 task gets about 1.14 % of the CPU
    for (share, expect) in shares(&[-10, 10], 10) {
        assert!(
            (share / expect - 1.0).abs() < 0.01,
            "share {share:.5}, expected {expect:.5}"
        );
    }
}

#[test]
fn a_single_task_is_never_asked_to_switch() {
    let mut w = World::new(Features::default());
    let a = w.spawn(0, 0, None);
    w.run_ms(1000);
    assert_eq!(w.switches, 1);
    assert_eq!(w.rq.resched(), Resched::None);
    let c = w.rq.counters();
    assert_eq!(
        c.resched_slice + c.resched_protection + c.resched_ineligible,
        0
    );
    assert_eq!(w.rq.entity(a).sum_exec(), 1000 * MS);
    // the base follows the only vruntime
    assert_eq!(w.rq.base(), w.rq.entity(a).vruntime());
}

#[test]
fn a_new_task_starts_within_half_a_slice_of_v() {
    let mut w = World::new(Features::default());
    for i in 0..3 {
        w.spawn(i, 0, None);
    }
    w.run_ms(50);
    let v_before = w.rq.avg_vruntime();
    let new = w.spawn(9, 0, None);
    let e = w.rq.entity(new);
    // placed at V (lag 0) with half a request (PLACE_DEADLINE_INITIAL)
    assert_eq!(e.vruntime(), v_before);
    let half = e.fair_delta(e.slice()) / 2;
    assert_eq!(vdiff(e.deadline(), e.vruntime()), half as i64);
    // it runs soon, and when it first runs it is within half a slice of V
    for _ in 0..5 {
        if w.rq.resched() != Resched::None || w.rq.curr().is_none() {
            w.switch();
        }
        if w.rq.curr() == Some(new) {
            let lag = w.rq.lag(new);
            assert!(lag.unsigned_abs() <= half, "lag at first pick {lag}");
            return;
        }
        w.now += TICK;
        w.rq.tick(w.now);
    }
    panic!("the new task did not run within 5 ticks");
}

/// A hog with a 3 ms slice running alone and protected, at `nice`.
fn protected_hog(features: Features, nice: i32) -> (World, Slot) {
    let mut w = World::new(features);
    let e = Entity::new(nice).unwrap().with_slice(Some(3 * MS)).unwrap();
    // WAKEUP: a full first request (vdl = vrt + 3 ms·1024/w)
    let hog = w.rq.enqueue(e, 0, EnqueueFlags::WAKEUP, w.now);
    assert_eq!(w.switch(), Some(hog));
    let e = w.rq.entity(hog);
    assert_eq!(
        e.vprot(),
        e.deadline(),
        "alone: protected up to its deadline"
    );
    (w, hog)
}

#[test]
fn short_wakee_preempts_an_eligible_protected_hog() {
    let (mut w, hog) = protected_hog(Features::default(), 0);
    w.advance(MS);
    // a fresh 100 µs wakee lands at V with lag 0: eligible, earlier deadline
    let e = Entity::new(0).unwrap().with_slice(Some(100 * US)).unwrap();
    let p = w.rq.enqueue(e, 1, EnqueueFlags::WAKEUP, w.now);
    assert!(w.rq.is_eligible(p));
    assert!(w.rq.wakeup_preempt(p, WakeFlags::NONE, w.now));
    assert_eq!(w.rq.resched(), Resched::Lazy);
    // the hog forfeits its protection
    let h = w.rq.entity(hog);
    assert_eq!(h.vprot(), h.vruntime());
    assert_eq!(w.rq.counters().wakeup_preemptions, 1);
    assert_eq!(w.switch(), Some(p));
}

#[test]
fn without_preempt_short_protection_shields_the_hog() {
    let (mut w, hog) = protected_hog(Features::default().with(Feature::PreemptShort, false), 0);
    w.advance(MS);
    let e = Entity::new(0).unwrap().with_slice(Some(100 * US)).unwrap();
    let p = w.rq.enqueue(e, 1, EnqueueFlags::WAKEUP, w.now);
    assert!(!w.rq.wakeup_preempt(p, WakeFlags::NONE, w.now));
    assert_eq!(w.rq.resched(), Resched::None);
    assert_eq!(w.rq.pick_eevdf(true), Some(hog));
    // unprotected, the wakee would be the EEVDF choice
    assert_eq!(w.rq.pick_eevdf(false), Some(p));
}

/// A 100 µs entity that ran and left with negative lag (a sleeper that
/// owes service).
fn indebted_short_wakee(w: &mut World, hog: Slot) -> Entity {
    let e = Entity::new(0).unwrap().with_slice(Some(100 * US)).unwrap();
    let p = w.rq.enqueue(e, 1, EnqueueFlags::WAKEUP, w.now);
    w.rq.set_curr(p, w.now);
    w.advance(MS); // it runs 1 ms: ineligible
    assert!(!w.rq.is_eligible(p));
    let Dequeue::Removed(e, _) = w.rq.dequeue(p, DequeueFlags::NONE, w.now) else {
        panic!("a migration is never delayed");
    };
    assert!(e.vlag() < 0);
    w.rq.set_curr(hog, w.now);
    w.advance(200 * US);
    e
}

#[test]
fn losing_short_wakee_shrinks_the_hogs_protection() {
    for nice in [0, 5] {
        let (mut w, hog) = protected_hog(Features::default(), nice);
        w.advance(MS);
        let e = indebted_short_wakee(&mut w, hog);
        let h = w.rq.entity(hog);
        assert_eq!(
            h.vprot(),
            h.deadline(),
            "fresh protection up to the deadline"
        );
        let p = w.rq.enqueue(e, 1, EnqueueFlags::WAKEUP, w.now);
        assert!(!w.rq.is_eligible(p), "placed with its negative lag");
        assert!(!w.rq.wakeup_preempt(p, WakeFlags::NONE, w.now));
        // protection cut to 100 µs·1024/w from now
        let h = w.rq.entity(hog);
        assert_eq!(
            vdiff(h.vprot(), h.vruntime()),
            h.fair_delta(100 * US) as i64,
            "nice {nice}"
        );
        assert_eq!(w.rq.counters().protection_shortened, 1);
        if nice == 0 {
            assert_eq!(vdiff(h.vprot(), h.vruntime()), 100_000);
        } else {
            assert_eq!(vdiff(h.vprot(), h.vruntime()), 305_671); // 100 µs·1024/335
        }
        // the hog is asked to switch once it passes 100 µs·1024/w
        w.advance(150 * US * 1024 / h.weight() as u64);
        assert_eq!(w.rq.resched(), Resched::Lazy);
    }
}

/// Two nice-0 tasks; the current one runs 2 ms (ineligible afterwards).
fn two_tasks_first_ran(features: Features) -> (World, Slot, Slot) {
    let mut w = World::new(features);
    let a = w.spawn(0, 0, None);
    let b = w.spawn(1, 0, None);
    let first = w.switch().unwrap();
    let other = if first == a { b } else { a };
    w.advance(2 * MS);
    assert!(!w.rq.is_eligible(first));
    assert!(w.rq.is_eligible(other));
    (w, first, other)
}

#[test]
fn an_ineligible_sleeper_stays_queued_until_picked() {
    let (mut w, x, y) = two_tasks_first_ran(Features::default());
    let x_id = *w.rq.payload(x);
    let Dequeue::Delayed = w.rq.dequeue(x, DequeueFlags::SLEEP, w.now) else {
        panic!("an ineligible sleeper must be delayed");
    };
    // still counted in V, W, load and nr_queued, not runnable
    assert_eq!(w.rq.nr_queued(), 2);
    assert_eq!(w.rq.nr_runnable(), 1);
    assert_eq!(w.rq.nr_delayed(), 1);
    assert_eq!(w.rq.load(), 2048);
    assert!(w.rq.entity(x).is_delayed());
    assert_eq!(w.rq.curr(), Some(x), "delayed, not yet switched out");
    assert_eq!(w.rq.counters().delayed_dequeues, 1);
    // the pick runs y; x waits in the tree, delayed, never current
    assert_eq!(w.switch(), Some(y));
    w.rq.check_invariants().unwrap();
    // y runs; once V passes x, x is picked and its dequeue completes
    for _ in 0..20 {
        w.step();
        assert_ne!(w.rq.curr(), Some(x), "a delayed task never runs");
        if !w.finished_delayed.is_empty() {
            break;
        }
    }
    assert_eq!(w.finished_delayed.len(), 1);
    let (e, id) = &w.finished_delayed[0];
    assert_eq!(*id, x_id);
    assert!(!e.is_queued() && !e.is_delayed());
    assert_eq!(e.vlag(), 0, "DELAY_ZERO: no positive lag out of the delay");
    assert_eq!(w.rq.nr_queued(), 1);
    assert_eq!(w.rq.nr_runnable(), 1);
    assert_eq!(w.rq.counters().delayed_finished_at_pick, 1);
}

#[test]
fn a_positive_lag_sleeper_is_never_delayed() {
    let (mut w, _x, y) = two_tasks_first_ran(Features::default());
    assert!(w.rq.lag(y) > 0);
    let Dequeue::Removed(e, _) = w.rq.dequeue(y, DequeueFlags::SLEEP, w.now) else {
        panic!("an eligible sleeper leaves at once");
    };
    assert!(
        e.vlag() > 0,
        "it keeps its positive lag (PLACE_LAG will use it)"
    );
    assert_eq!(w.rq.counters().delayed_dequeues, 0);
}

#[test]
fn special_dequeues_are_never_delayed() {
    let (mut w, x, _y) = two_tasks_first_ran(Features::default());
    let r =
        w.rq.dequeue(x, DequeueFlags::SLEEP | DequeueFlags::SPECIAL, w.now);
    assert!(matches!(r, Dequeue::Removed(..)));
    assert_eq!(w.rq.curr(), None);
}

#[test]
fn the_last_delayed_tasks_are_finished_by_the_pick_and_the_queue_empties() {
    let (mut w, x, y) = two_tasks_first_ran(Features::default());
    assert!(matches!(
        w.rq.dequeue(x, DequeueFlags::SLEEP, w.now),
        Dequeue::Delayed
    ));
    assert_eq!(w.switch(), Some(y));
    w.advance(3 * MS); // y ineligible now
    assert!(matches!(
        w.rq.dequeue(y, DequeueFlags::SLEEP, w.now),
        Dequeue::Delayed
    ));
    assert_eq!(w.rq.nr_runnable(), 0);
    assert_eq!(w.switch(), None);
    assert_eq!(w.finished_delayed.len(), 2);
    assert_eq!(w.rq.nr_queued(), 0);
    assert_eq!(w.rq.curr(), None);
    assert_eq!(w.rq.load(), 0);
}

/// x delayed, then y runs until x's lag is positive, without a pick.
fn delayed_then_owed(features: Features) -> (World, Slot) {
    let (mut w, x, y) = two_tasks_first_ran(features);
    assert!(matches!(
        w.rq.dequeue(x, DequeueFlags::SLEEP, w.now),
        Dequeue::Delayed
    ));
    w.rq.set_curr(y, w.now);
    w.advance(6 * MS);
    assert!(w.rq.lag(x) > 0, "V has passed the delayed entity");
    (w, x)
}

#[test]
fn delay_zero_restarts_a_woken_delayed_task_at_lag_zero() {
    let (mut w, x) = delayed_then_owed(Features::default());
    w.rq.requeue_delayed(x, w.now);
    let e = w.rq.entity(x);
    assert!(!e.is_delayed());
    assert_eq!(w.rq.lag(x), 0);
    assert_eq!(
        vdiff(e.deadline(), e.vruntime()),
        e.fair_delta(e.slice()) as i64,
        "a fresh request"
    );
    assert_eq!(w.rq.nr_runnable(), 2);
    assert_eq!(w.rq.counters().delayed_requeues, 1);
}

#[test]
fn without_delay_zero_the_delay_banks_credit() {
    let (mut w, x) = delayed_then_owed(Features::default().with(Feature::DelayZero, false));
    let lag = w.rq.lag(x);
    w.rq.requeue_delayed(x, w.now);
    assert_eq!(w.rq.lag(x), lag, "kept where it was");
    assert!(lag > 0);
}

#[test]
fn delay_zero_clips_the_lag_of_a_delay_finished_at_pick() {
    for delay_zero in [true, false] {
        let (mut w, x) =
            delayed_then_owed(Features::default().with(Feature::DelayZero, delay_zero));
        let x_id = *w.rq.payload(x);
        // y blocks too (it is ineligible now): the pick finishes both delays
        let y = w.rq.curr().unwrap();
        assert!(matches!(
            w.rq.dequeue(y, DequeueFlags::SLEEP, w.now),
            Dequeue::Delayed
        ));
        assert_eq!(w.switch(), None);
        let (ex, _) = w
            .finished_delayed
            .iter()
            .find(|(_, id)| *id == x_id)
            .unwrap();
        if delay_zero {
            assert_eq!(ex.vlag(), 0);
        } else {
            assert!(ex.vlag() > 0);
        }
    }
}

#[test]
fn no_delay_dequeue_disables_delays() {
    let (mut w, x, _) = two_tasks_first_ran(Features::default().with(Feature::DelayDequeue, false));
    let Dequeue::Removed(e, _) = w.rq.dequeue(x, DequeueFlags::SLEEP, w.now) else {
        panic!("NO_DELAY_DEQUEUE: never delayed");
    };
    assert!(e.vlag() < 0, "it leaves with its debt");
    // and a whole block/wake workload never delays anything
    let mut w = World::new(Features::default().with(Feature::DelayDequeue, false));
    for i in 0..4 {
        w.spawn(i, 0, None);
    }
    let mut asleep = Vec::new();
    for k in 0..2000u64 {
        w.step();
        if k % 3 == 0 {
            if let Some(c) = w.rq.curr() {
                match w.rq.dequeue(c, DequeueFlags::SLEEP, w.now) {
                    Dequeue::Removed(e, id) => asleep.push((e, id)),
                    Dequeue::Delayed => panic!("delayed with NO_DELAY_DEQUEUE"),
                }
            }
        }
        if k % 3 == 1 {
            if let Some((e, id)) = asleep.pop() {
                let s = w.rq.enqueue(e, id, EnqueueFlags::WAKEUP, w.now);
                w.rq.wakeup_preempt(s, WakeFlags::NONE, w.now);
            }
        }
        w.rq.check_invariants().unwrap();
    }
    assert_eq!(w.rq.counters().delayed_dequeues, 0);
    assert_eq!(w.rq.nr_delayed(), 0);
}

/// Two always-runnable nice-0 tasks with 3 ms slices for one second.
fn parity_switches(features: Features) -> (u64, World) {
    let mut w = World::new(features);
    w.spawn(0, 0, Some(3 * MS));
    w.spawn(1, 0, Some(3 * MS));
    w.run_ms(1000);
    (w.switches, w)
}

#[test]
fn run_to_parity_sets_how_long_curr_is_protected() {
    // the horizon at the switch
    for rtp in [true, false] {
        let mut w = World::new(Features::default().with(Feature::RunToParity, rtp));
        w.spawn(0, 0, Some(3 * MS));
        w.spawn(1, 0, Some(3 * MS));
        w.run_ms(20);
        // a fresh switch, and the horizon it sets
        w.rq.put_prev(w.now);
        let s = w.switch().unwrap();
        let e = w.rq.entity(s);
        let remaining = vdiff(e.deadline(), e.vruntime());
        let prot = vdiff(e.vprot(), e.vruntime());
        if rtp {
            // the shortest other slice is 3 ms = its own: up to its deadline
            assert_eq!(e.vprot(), e.deadline());
        } else {
            // the unscaled 700 µs minimum quantum
            assert_eq!(prot, remaining.min(700 * US as i64));
        }
    }
    // and over a second: ~3 ms turns with it, a switch every tick without
    let (on, _) = parity_switches(Features::default());
    let (off, _) = parity_switches(Features::default().with(Feature::RunToParity, false));
    assert!((300..=400).contains(&on), "RUN_TO_PARITY: {on} switches");
    assert!(off >= 900, "NO_RUN_TO_PARITY: {off} switches");
}

#[test]
fn tick_eligible_reschedules_an_ineligible_protected_curr() {
    for te in [false, true] {
        let mut w = World::new(Features::default().with(Feature::TickEligible, te));
        let _a = w.spawn(0, 0, Some(3 * MS));
        let _b = w.spawn(1, 0, Some(3 * MS));
        w.run_ms(10);
        // a fresh turn: c is protected until its deadline
        w.rq.put_prev(w.now);
        let c = w.switch().unwrap();
        let e = w.rq.entity(c);
        assert!(vdiff(e.deadline(), e.vruntime()) > TICK as i64);
        let before = w.rq.counters().resched_ineligible;
        w.now += TICK;
        let pending = w.rq.tick(w.now);
        let e = w.rq.entity(c);
        assert!(!w.rq.is_eligible(c), "ran a tick while the other waited");
        assert!(vdiff(e.vruntime(), e.vprot()) < 0, "still protected");
        assert_eq!(pending, te);
        assert_eq!(w.rq.counters().resched_ineligible - before, u64::from(te));
    }
    // Over a second: without it ~3 ms turns (≈333 switches). With it a
    // task is switched out at the first tick where it is ineligible: a task
    // resuming with lag +0.5 ms is still eligible (lag 0) after one tick and
    // ineligible after two, so turns last 1–2 ms (≈667 switches, measured).
    let (te, _) = parity_switches(Features::default().with(Feature::TickEligible, true));
    assert!((600..=700).contains(&te), "TICK_ELIGIBLE: {te} switches");
}

#[test]
fn tick_eligible_lets_any_eligible_wakee_preempt_an_ineligible_curr() {
    for te in [false, true] {
        let mut w = World::new(Features::default().with(Feature::TickEligible, te));
        w.spawn(0, 0, Some(3 * MS));
        w.spawn(1, 0, Some(3 * MS));
        let c = w.switch().unwrap();
        w.advance(2 * MS);
        // the task that waited is the EEVDF choice; a new 3 ms wakee is
        // eligible but has the latest deadline, so it only wins by TICK_ELIGIBLE
        let e = Entity::new(0).unwrap().with_slice(Some(3 * MS)).unwrap();
        let p = w.rq.enqueue(e, 2, EnqueueFlags::WAKEUP, w.now);
        assert!(w.rq.is_eligible(p) && !w.rq.is_eligible(c));
        assert_ne!(w.rq.pick_eevdf(false), Some(p));
        assert_eq!(w.rq.wakeup_preempt(p, WakeFlags::NONE, w.now), te);
    }
}

#[test]
fn wakeup_preemption_policy_rules() {
    // a normal wakee always preempts an idle-policy task
    let mut w = World::new(Features::default());
    let e = Entity::new(0).unwrap().with_policy(Policy::Idle);
    let idle = w.rq.enqueue(e, 0, EnqueueFlags::WAKEUP, w.now);
    w.switch();
    w.advance(100 * US);
    let p =
        w.rq.enqueue(Entity::new(19).unwrap(), 1, EnqueueFlags::WAKEUP, w.now);
    assert!(w.rq.wakeup_preempt(p, WakeFlags::NONE, w.now));
    let e = w.rq.entity(idle);
    assert_eq!(e.vprot(), e.vruntime(), "its protection is cancelled");
    assert_eq!(w.rq.nr_idle(), 1);

    // idle-policy and batch wakees never preempt a normal task
    for policy in [Policy::Idle, Policy::Batch] {
        let mut w = World::new(Features::default());
        w.rq.enqueue(Entity::new(0).unwrap(), 0, EnqueueFlags::WAKEUP, w.now);
        w.switch();
        w.advance(2 * MS);
        let e = Entity::new(-20)
            .unwrap()
            .with_slice(Some(100 * US))
            .unwrap()
            .with_policy(policy);
        let p = w.rq.enqueue(e, 1, EnqueueFlags::WAKEUP, w.now);
        assert!(
            !w.rq.wakeup_preempt(p, WakeFlags::NONE, w.now),
            "{policy:?}"
        );
    }

    // NO_WAKEUP_PREEMPTION: nothing preempts
    let (mut w, _hog) = protected_hog(
        Features::default().with(Feature::WakeupPreemption, false),
        0,
    );
    w.advance(MS);
    let e = Entity::new(0).unwrap().with_slice(Some(100 * US)).unwrap();
    let p = w.rq.enqueue(e, 1, EnqueueFlags::WAKEUP, w.now);
    assert!(!w.rq.wakeup_preempt(p, WakeFlags::NONE, w.now));

    // an idle worker is woken at once
    let mut w = World::new(Features::default());
    let p =
        w.rq.enqueue(Entity::new(0).unwrap(), 0, EnqueueFlags::WAKEUP, w.now);
    assert!(w.rq.wakeup_preempt(p, WakeFlags::NONE, w.now));
    assert_eq!(w.rq.resched(), Resched::Now);
}

#[test]
fn next_buddy_is_set_by_wakeups_and_taken_by_the_pick() {
    let f = Features::default().with(Feature::NextBuddy, true);
    let (mut w, _, _) = two_tasks_first_ran(f);
    let e = Entity::new(0).unwrap();
    let p = w.rq.enqueue(e, 2, EnqueueFlags::WAKEUP, w.now);
    w.rq.wakeup_preempt(p, WakeFlags::NONE, w.now);
    assert_eq!(w.rq.next_buddy(), Some(p));
    // a fork does not set it
    let q =
        w.rq.enqueue(Entity::new(0).unwrap(), 3, EnqueueFlags::INITIAL, w.now);
    w.rq.wakeup_preempt(q, WakeFlags::FORK, w.now);
    assert_eq!(w.rq.next_buddy(), Some(p));
    // PICK_BUDDY: the eligible buddy is picked and the hint is cleared
    assert!(w.rq.is_eligible(p));
    assert_eq!(w.switch(), Some(p));
    assert_eq!(w.rq.next_buddy(), None);
    assert_eq!(w.rq.counters().buddy_picks, 1);
}

#[test]
fn yield_moves_the_deadline_back_and_lets_others_run() {
    let mut w = World::new(Features::default());
    let a = w.spawn(0, 0, Some(3 * MS));
    let b = w.spawn(1, 0, Some(3 * MS));
    let c = w.switch().unwrap();
    let other = if c == a { b } else { a };
    let before = w.rq.entity(c).deadline();
    w.rq.yield_current(w.now);
    let e = w.rq.entity(c);
    assert_eq!(e.deadline(), before + 3 * MS);
    assert_eq!(w.switch(), Some(other));
    // alone, a yield changes nothing
    let mut w = World::new(Features::default());
    let a = w.spawn(0, 0, None);
    w.switch();
    let before = w.rq.entity(a).deadline();
    w.rq.yield_current(w.now);
    assert_eq!(w.rq.entity(a).deadline(), before);
}

#[test]
fn steal_candidate_walks_from_the_coldest_and_filters() {
    let mut w = World::new(Features::default());
    let s: Vec<Slot> = (0..4).map(|i| w.spawn(i, 0, None)).collect();
    // run each in turn, 1 ms apiece: s[0] is the coldest, s[3] current
    for &x in &s {
        w.rq.set_curr(x, w.now);
        w.advance(MS);
    }
    assert_eq!(w.rq.curr(), Some(s[3]));
    let all = |_: &usize| true;
    // s[0]..s[2] ran ≥ 1 ms ago: not cache-hot; the coldest eligible one wins
    let got = w.rq.steal_candidate(w.now, false, false, all).unwrap();
    assert_eq!(got, s[0]);
    // affinity
    let got =
        w.rq.steal_candidate(w.now, false, false, |id: &usize| *id != 0)
            .unwrap();
    assert_eq!(got, s[1]);
    // cache-hot: s[3] goes back to the tree (charged, so its clock is now)
    w.rq.set_curr(s[2], w.now);
    w.advance(200 * US);
    let got =
        w.rq.steal_candidate(w.now, false, false, |id: &usize| *id >= 3);
    assert_eq!(got, None, "s[3] ran 200 µs ago: cache-hot");
    let got =
        w.rq.steal_candidate(w.now, false, true, |id: &usize| *id >= 3);
    assert_eq!(got, Some(s[3]), "a failed balance ignores cache-hotness");
    // the current entity is never a candidate
    let got =
        w.rq.steal_candidate(w.now, false, true, |id: &usize| *id == 2);
    assert_eq!(got, None);
    // nor is a delayed one
    w.advance(2 * MS);
    assert!(matches!(
        w.rq.dequeue(s[2], DequeueFlags::SLEEP, w.now),
        Dequeue::Delayed
    ));
    w.rq.put_prev(w.now);
    let got =
        w.rq.steal_candidate(w.now, false, true, |id: &usize| *id == 2);
    assert_eq!(got, None);
    // at most 32 candidates are examined, from the coldest
    let mut w = World::new(Features::default());
    for i in 0..40 {
        w.spawn(i, 0, None); // each goes to the front: 0 is the coldest
    }
    w.now += 10 * MS;
    // only the 32 coldest (ids 0..32) are examined
    let front_only = |id: &usize| *id >= 32;
    assert_eq!(w.rq.steal_candidate(w.now, false, true, front_only), None);
    let got =
        w.rq.steal_candidate(w.now, false, true, |id: &usize| *id == 31);
    assert_eq!(got.map(|s| *w.rq.payload(s)), Some(31));
}

#[test]
fn reweight_conserves_lag_and_set_slice_keeps_the_slot() {
    let (mut w, x, y) = two_tasks_first_ran(Features::default());
    let lag = w.rq.lag(y);
    assert!(lag > 0);
    w.rq.reweight(y, 5, w.now).unwrap();
    let e = w.rq.entity(y);
    assert_eq!(e.weight(), 335);
    // w·vlag conserved: the virtual lag grows by 1024/335
    let expect = lag * 1024 / 335;
    assert!(
        (w.rq.lag(y) - expect).abs() <= 2,
        "{} vs {expect}",
        w.rq.lag(y)
    );
    // the current entity can be reweighted too
    w.rq.reweight(x, -5, w.now).unwrap();
    assert_eq!(w.rq.entity(x).weight(), 3121);
    w.rq.set_slice(y, Some(250 * US), w.now).unwrap();
    assert_eq!(w.rq.entity(y).slice(), 250 * US);
    assert!(w.rq.entity(y).has_custom_slice());
    w.rq.set_slice(y, None, w.now).unwrap();
    assert!(!w.rq.entity(y).has_custom_slice());
    assert_eq!(w.rq.entity(y).slice(), Params::default().base_slice);
    w.rq.check_invariants().unwrap();
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    // nice
    for nice in [-21, 20, i32::MIN, i32::MAX] {
        let err = Entity::new(nice).unwrap_err().to_string();
        assert!(err.contains("nice") && err.contains("-20..=19"), "{err}");
    }
    // slices
    for slice in [0, 99_999, 100_000_001, u64::MAX] {
        let err = Entity::new(0)
            .unwrap()
            .with_slice(Some(slice))
            .unwrap_err()
            .to_string();
        assert!(err.contains("slice"), "{err}");
    }
    // unknown features
    let err = Features::parse("RUN_TO_PARITY,NO_SUCH_FEATURE")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("NO_SUCH_FEATURE") || err.contains("SUCH_FEATURE"),
        "{err}"
    );
    assert!(
        err.contains("DELAY_DEQUEUE"),
        "lists the valid names: {err}"
    );
    assert!("BOGUS".parse::<Features>().is_err());
    // params
    assert!(Params::new(50 * US, MS).is_err());
    assert!(Params::new(700 * US, 0).is_err());
    // on a queue: refused, nothing changes
    let (mut w, x, _y) = two_tasks_first_ran(Features::default());
    let before = w.rq.entity(x).clone();
    let err = w.rq.reweight(x, 25, w.now).unwrap_err().to_string();
    assert!(err.contains("nice"), "{err}");
    let err =
        w.rq.set_slice(x, Some(200 * MS), w.now)
            .unwrap_err()
            .to_string();
    assert!(err.contains("slice") && err.contains("100 ms"), "{err}");
    assert_eq!(*w.rq.entity(x), before);
    w.rq.check_invariants().unwrap();
}

#[test]
#[should_panic(expected = "not queued")]
fn a_stale_slot_is_a_caller_bug() {
    let mut w = World::new(Features::default());
    let a = w.spawn(0, 0, None);
    let _ = w.rq.dequeue(a, DequeueFlags::SLEEP, w.now);
    w.rq.entity(a);
}

#[test]
fn the_base_is_monotonic_and_wraps() {
    // the default base is 2^64 − 2^20: it wraps within the first 2 ms
    let mut w = World::new(Features::default());
    let start = w.rq.base();
    assert_eq!(start, 0u64.wrapping_sub(1 << 20));
    w.spawn(0, 0, None);
    w.spawn(1, 3, None);
    let mut last = w.rq.base();
    for _ in 0..100 {
        w.step();
        let b = w.rq.base();
        assert!(vdiff(b, last) >= 0, "the base went backwards");
        last = b;
    }
    assert!(last < start, "the base wrapped past zero");
    w.rq.check_invariants().unwrap();
}

#[test]
fn huge_clock_steps_do_not_overflow() {
    // `now` is a wrapping clock: every step below is a valid forward move
    // (< 2^63), but the run time they add up to passes u64::MAX. (One
    // entity alone: virtual times of several would drift beyond the
    // 2^63 window that wrapping comparison needs.)
    let mut w = World::new(Features::default());
    w.spawn(0, 0, None);
    let c = w.switch().unwrap();
    for _ in 0..8 {
        w.now = w.now.wrapping_add(1 << 62);
        w.rq.tick(w.now);
        w.rq.check_invariants().unwrap();
    }
    assert_eq!(w.rq.entity(c).sum_exec(), u64::MAX, "sum_exec saturates");
}

#[test]
fn fair_delta_saturates_instead_of_wrapping() {
    use eevdf_rt::sched::weight::{fair_delta, inverse_weight, weight_of_nice};
    let w = weight_of_nice(19).unwrap();
    assert_eq!(fair_delta(u64::MAX, w, inverse_weight(w)), u64::MAX);
    assert_eq!(fair_delta(u64::MAX / 4, 3, inverse_weight(3)), u64::MAX);
    // Monotonic in delta, also near the top.
    let near = fair_delta(u64::MAX / 100, w, inverse_weight(w));
    assert!(near <= fair_delta(u64::MAX / 50, w, inverse_weight(w)));
}

#[test]
fn extreme_params_do_not_panic() {
    // Params has public fields: even absurd values must not overflow
    for params in [
        Params {
            base_slice: 0,
            tick: 0,
        },
        Params {
            base_slice: u64::MAX,
            tick: u64::MAX,
        },
    ] {
        let mut w = World::new(Features::default());
        w.rq.set_params(params);
        let a = w.spawn(0, 19, None);
        w.spawn(1, -20, None);
        w.run_ms(50);
        let _ = w.rq.dequeue(a, DequeueFlags::SLEEP, w.now);
        w.run_ms(5);
        w.rq.check_invariants().unwrap();
    }
}

/// A clone of a queued entity is still marked queued: changing its nice
/// level as if it were saved is a clear panic, not a silent change of a
/// copy (a queued entity is reweighted through its run queue).
#[test]
#[should_panic(expected = "set_nice_unqueued: the entity is queued")]
fn set_nice_unqueued_on_a_queued_entity_panics_clearly() {
    use eevdf_rt::sched::{EnqueueFlags, Entity, Features, Params, RunQueue};
    let mut rq: RunQueue<()> = RunQueue::new(Params::default(), Features::default());
    let slot = rq.enqueue(Entity::new(0).unwrap(), (), EnqueueFlags::INITIAL, 0);
    let mut copy = rq.entity(slot).clone();
    let _ = copy.set_nice_unqueued(5);
}
