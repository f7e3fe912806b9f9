use std::time::Duration;

#[test]
fn block_on_and_spawn() {
    let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
    assert_eq!(rt.block_on(|| 40 + 2), 42);
    let h = rt.spawn(|| (0..10u64).sum::<u64>());
    assert_eq!(h.join().unwrap(), 45);
    let v = rt.block_on(|| {
        let hs: Vec<_> = (0..100u64).map(|i| eevdf_rt::spawn(move || i)).collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    assert_eq!(v, 4950);
    rt.block_on(|| {
        eevdf_rt::sleep(Duration::from_millis(5));
        eevdf_rt::yield_now();
    });
    println!("{}", rt.stats());
}
