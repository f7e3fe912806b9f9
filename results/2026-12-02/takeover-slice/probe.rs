use std::time::{Duration, Instant};
fn main() {
    let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let spinner = rt.spawn(move || { while !s2.load(std::sync::atomic::Ordering::Relaxed) { std::hint::spin_loop(); } });
    let mut late = rt.spawn(|| {
        let mut v = Vec::new();
        for _ in 0..400 {
            let t = Instant::now();
            eevdf_rt::sleep(Duration::from_millis(1));
            v.push(t.elapsed().saturating_sub(Duration::from_millis(1)).as_micros() as u64);
        }
        v
    }).join().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinner.join().unwrap();
    late.drain(..50); // the takeover itself
    late.sort();
    let p = |q: f64| late[((late.len() - 1) as f64 * q) as usize];
    println!("sleeper lateness µs: p50 {} p90 {} p99 {} max {} handoffs {}", p(0.5), p(0.9), p(0.99), late[late.len()-1], rt.stats().total().handoffs);
}
