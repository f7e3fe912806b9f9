use std::time::Instant;
fn main() {
    let n = 10_000_000u64;
    let s = Instant::now();
    let mut acc = 0u128;
    for _ in 0..n {
        acc += Instant::now().elapsed().as_nanos();
    }
    println!(
        "Instant::now x2: {:.1} ns ({acc})",
        s.elapsed().as_nanos() as f64 / n as f64
    );
    let m = parking_lot::Mutex::new(0u64);
    let s = Instant::now();
    for _ in 0..n {
        *m.lock() += 1;
    }
    println!(
        "parking_lot lock+unlock: {:.1} ns",
        s.elapsed().as_nanos() as f64 / n as f64
    );
    let mut co = corosensei::Coroutine::new(|y: &corosensei::Yielder<(), ()>, ()| loop {
        y.suspend(())
    });
    let s = Instant::now();
    for _ in 0..n {
        co.resume(());
    }
    println!(
        "corosensei resume+suspend: {:.1} ns",
        s.elapsed().as_nanos() as f64 / n as f64
    );
}
