use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let rt = eevdf_rt::Builder::new().workers(1).build().unwrap();
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(2_000_000);
    let t = rt.block_on(move || {
        let h = eevdf_rt::spawn(move || {
            for _ in 0..n {
                eevdf_rt::yield_now();
            }
        });
        let start = Instant::now();
        for _ in 0..n {
            eevdf_rt::yield_now();
        }
        h.join().unwrap();
        start.elapsed()
    });
    println!(
        "yield switch: {:.1} ns",
        t.as_nanos() as f64 / (2 * n) as f64
    );

    let m = 200_000u64;
    let t = rt.block_on(move || {
        let start = Instant::now();
        for _ in 0..m {
            eevdf_rt::spawn(|| ()).join().unwrap();
        }
        start.elapsed()
    });
    println!("spawn+join: {:.1} ns", t.as_nanos() as f64 / m as f64);
    drop(rt);

    let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
    let _ = Arc::new(AtomicU32::new(0));
    let k = 200_000u64;
    let t = eevdf_rt::task::Builder::new()
        .pin(0)
        .spawn_on(&rt, move || {
            let tx1 = Arc::new(AtomicU32::new(0));
            let flag = tx1.clone();
            let h = eevdf_rt::task::Builder::new()
                .pin(1)
                .spawn(move || {
                    for i in 0..k as u32 {
                        while flag.load(Ordering::Acquire) != 2 * i + 1 {
                            std::hint::spin_loop();
                        }
                        flag.store(2 * i + 2, Ordering::Release);
                    }
                })
                .unwrap();
            let start = Instant::now();
            for i in 0..k as u32 {
                tx1.store(2 * i + 1, Ordering::Release);
                while tx1.load(Ordering::Acquire) != 2 * i + 2 {
                    std::hint::spin_loop();
                }
            }
            h.join().unwrap();
            start.elapsed()
        })
        .unwrap()
        .join()
        .unwrap();
    println!(
        "cache-line round trip (spinning): {:.1} ns",
        t.as_nanos() as f64 / k as f64
    );
    println!("{}", rt.stats());
}
