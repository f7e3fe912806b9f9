//! Cost of one scheduling cycle of the EEVDF run queue, by queue size.
//!
//! For each size N (1, 16, 256, 4096, 65536 entities already queued) the
//! queue is built once, then every iteration is one cycle of a worker:
//!
//! 1. a task wakes: `enqueue(WAKEUP)` of the entity that blocked in the
//!    previous iteration (a fresh one the first time);
//! 2. the switch: `pick_next` and `set_curr` on whatever EEVDF chooses
//!    (the wakee or any of the N others);
//! 3. the chosen entity runs 50 µs (charged at the dequeue) and blocks:
//!    `dequeue(SLEEP)`.
//!
//! The queue holds N entities between iterations and N + 1 during one, so
//! its size is constant. The benchmark runs with NO_DELAY_DEQUEUE: with
//! delayed dequeue a blocked entity that is ineligible would stay queued
//! until picked and the size would drift; everything else is the 6.17
//! default. The entity that blocks is the one that runs, so over many
//! iterations the entities rotate, vruntimes spread and the pick uses both
//! its leftmost fast path and the tree descent.
//!
//! Run: `cargo bench -p eevdf-rt --bench sched` (2 s of measurement and
//! 1 s of warm-up per size are configured below).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use eevdf_rt::sched::{
    Dequeue, DequeueFlags, EnqueueFlags, Entity, Feature, Features, Params, Pick, RunQueue,
};
use std::hint::black_box;
use std::time::Duration;

const RUN: u64 = 50_000;

/// A queue with `n` entities of mixed nice levels and slices.
fn build(n: usize) -> (RunQueue<u32>, u64) {
    let features = Features::default().with(Feature::DelayDequeue, false);
    let mut rq = RunQueue::new(Params::default(), features);
    let mut now = 0;
    for i in 0..n {
        let nice = (i % 11) as i32 - 5;
        let slice = (i % 4 == 0).then_some(100_000 + (i as u64 % 7) * 400_000);
        let e = Entity::new(nice).unwrap().with_slice(slice).unwrap();
        rq.enqueue(e, i as u32, EnqueueFlags::INITIAL, now);
        now += 1_000;
    }
    (rq, now)
}

/// One wake → pick → switch → run → block cycle; returns the entity that
/// blocked, to be woken in the next cycle.
#[inline]
fn cycle(rq: &mut RunQueue<u32>, now: &mut u64, wakee: (Entity, u32)) -> (Entity, u32) {
    rq.enqueue(wakee.0, wakee.1, EnqueueFlags::WAKEUP, *now);
    let slot = match rq.pick_next(*now) {
        Pick::Run(s) => s,
        _ => unreachable!("no delayed entities with NO_DELAY_DEQUEUE"),
    };
    rq.set_curr(slot, *now);
    *now += RUN;
    match rq.dequeue(slot, DequeueFlags::SLEEP, *now) {
        Dequeue::Removed(e, id) => (e, id),
        Dequeue::Delayed => unreachable!("NO_DELAY_DEQUEUE"),
    }
}

fn bench_cycle(c: &mut Criterion) {
    let mut group = c.benchmark_group("enqueue+pick+switch+dequeue");
    group.throughput(Throughput::Elements(1));
    for n in [1usize, 16, 256, 4096, 65536] {
        let (mut rq, mut now) = build(n);
        let mut wakee = Some((Entity::new(0).unwrap(), u32::MAX));
        // warm the state: let entities rotate and vruntimes spread
        for _ in 0..(4 * n).min(200_000) {
            let w = wakee.take().unwrap();
            wakee = Some(cycle(&mut rq, &mut now, w));
        }
        rq.check_invariants().unwrap();
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                let w = wakee.take().unwrap();
                wakee = Some(black_box(cycle(&mut rq, &mut now, w)));
            })
        });
        assert_eq!(rq.nr_queued() as usize, n, "the queue size stayed constant");
        rq.check_invariants().unwrap();
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_secs(1))
        .sample_size(50);
    targets = bench_cycle
}
criterion_main!(benches);
