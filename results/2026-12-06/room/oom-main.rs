// Spawns parked green threads until a spawn fails; prints the error.
fn main() {
    let stack_kib: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(256);
    let rt = eevdf_rt::Builder::new().workers(2).stack_size(stack_kib * 1024).build().unwrap();
    let r = rt.block_on(|| {
        let (tx, rx) = eevdf_rt::sync::channel::unbounded::<()>();
        let mut hs = Vec::new();
        let err = loop {
            let rx = rx.clone();
            match eevdf_rt::task::Builder::new().spawn(move || rx.recv().is_ok()) {
                Ok(h) => hs.push(h),
                Err(e) => break e,
            }
        };
        let n = hs.len();
        for _ in 0..n { tx.send(()).unwrap(); }
        let ok = hs.into_iter().filter(|_| true).map(|h| h.join().unwrap()).filter(|&b| b).count();
        (n, ok, err)
    });
    println!("spawned {} joined {} then: {} (kind {:?})", r.0, r.1, r.2, r.2.kind());
}
