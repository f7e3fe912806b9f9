use std::time::Instant;
fn tokio_mode(mode: &str, n: u64) {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let d = rt.block_on(async move {
        match mode {
            "tokio-yield" => {
                let h = tokio::spawn(async move { for _ in 0..n { tokio::task::yield_now().await; } });
                let t = Instant::now();
                for _ in 0..n { tokio::task::yield_now().await; }
                h.await.unwrap();
                t.elapsed() / 2
            }
            "tokio-spawn" => {
                let t = Instant::now();
                for _ in 0..n { tokio::spawn(async {}).await.unwrap(); }
                t.elapsed()
            }
            "tokio-chan" => {
                let (tx1, mut rx1) = tokio::sync::mpsc::channel::<u64>(1);
                let (tx2, mut rx2) = tokio::sync::mpsc::channel::<u64>(1);
                let h = tokio::spawn(async move { while let Some(v) = rx1.recv().await { if tx2.send(v).await.is_err() { break; } } });
                let t = Instant::now();
                for i in 0..n { tx1.send(i).await.unwrap(); rx2.recv().await.unwrap(); }
                drop(tx1); h.await.unwrap();
                t.elapsed()
            }
            _ => panic!(),
        }
    });
    println!("{} ns/op", d.as_nanos() as f64 / n as f64);
}


fn policy_mode(mode: &str, n: u64) {
    use eevdf_rt::sched::*;
    let mut rq: RunQueue<u8> = RunQueue::new(Params::default(), Features::default());
    let mut now: u64 = 1_000;
    match mode {
        "pyield" => {
            let a = rq.enqueue(Entity::new(0).unwrap(), 0, EnqueueFlags::INITIAL, now);
            let _b = rq.enqueue(Entity::new(0).unwrap(), 1, EnqueueFlags::INITIAL, now);
            rq.set_curr(a, now);
            for _ in 0..n {
                now += 60;
                rq.yield_current(now);
                match rq.pick_next(now) { Pick::Run(s) => { rq.set_curr(s, now); rq.clear_resched(); } _ => unreachable!() }
                std::hint::black_box(rq.time_to_preempt());
            }
        }
        "pping" => {
            // slots: Some(slot) while queued (maybe delayed); None with the saved entity
            let a = rq.enqueue(Entity::new(0).unwrap(), 0, EnqueueFlags::INITIAL, now);
            rq.set_curr(a, now);
            let mut cur: (u8, Slot) = (0, a);
            let mut other: (u8, Option<Slot>, Option<Entity>) = (1, None, Some(Entity::new(0).unwrap()));
            let mut first = true;
            for _ in 0..n {
                now += 150;
                // cur wakes other
                let os = match other.1 {
                    Some(s) if rq.entity(s).is_delayed() => { rq.requeue_delayed(s, now); s }
                    Some(s) => s,
                    None => rq.enqueue(other.2.take().unwrap(), other.0, if first { EnqueueFlags::INITIAL } else { EnqueueFlags::WAKEUP }, now),
                };
                first = false;
                rq.wakeup_preempt(os, WakeFlags::NONE, now);
                std::hint::black_box(rq.time_to_preempt());
                now += 50;
                // cur blocks
                let (cid, cs) = cur;
                let mut saved = None;
                let mut cslot = Some(cs);
                match rq.dequeue(cs, DequeueFlags::SLEEP, now) { Dequeue::Delayed => {}, Dequeue::Removed(e, _) => { saved = Some(e); cslot = None; } }
                // pick
                let next = loop {
                    match rq.pick_next(now) {
                        Pick::Run(s) => { rq.set_curr(s, now); rq.clear_resched(); break s; }
                        Pick::FinishedDelayed(e, id) => { if id == cid { saved = Some(e); cslot = None; } else { unreachable!() } }
                        Pick::Empty => unreachable!(),
                    }
                };
                std::hint::black_box(rq.time_to_preempt());
                assert_eq!(*rq.payload(next), other.0);
                cur = (other.0, next);
                other = (cid, cslot, saved);
            }
        }
        _ => panic!(),
    }
    println!("{}", rq.avg_vruntime());
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or("yield".into());
    let n: u64 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(20_000_000);
    if mode.starts_with("tokio-") { return tokio_mode(&mode, n); }
    if mode.starts_with('p') && (mode == "pyield" || mode == "pping") { return policy_mode(&mode, n); }
    let workers: usize = std::env::var("W").ok().map(|s| s.parse().unwrap()).unwrap_or(1);
    let ss: usize = std::env::var("SS").ok().map(|s| s.parse().unwrap()).unwrap_or(256); let rt = eevdf_rt::Builder::new().workers(workers).stack_size(ss * 1024).features(&std::env::var("F").unwrap_or_default()).build().unwrap();
    let d = rt.block_on(move || {
        match mode.as_str() {
            "yield" => {
                let h = eevdf_rt::spawn(move || for _ in 0..n { eevdf_rt::yield_now(); });
                let t = Instant::now();
                for _ in 0..n { eevdf_rt::yield_now(); }
                h.join().unwrap();
                t.elapsed() / 2
            }
            "lone" => {
                let t = Instant::now();
                for _ in 0..n { eevdf_rt::yield_now(); }
                t.elapsed()
            }
            "spawn" => {
                let t = Instant::now();
                for _ in 0..n { eevdf_rt::spawn(|| {}).join().unwrap(); }
                t.elapsed()
            }
            "chan" => {
                let (tx1, rx1) = eevdf_rt::sync::channel::bounded::<u64>(1);
                let (tx2, rx2) = eevdf_rt::sync::channel::bounded::<u64>(1);
                let h = eevdf_rt::spawn(move || { while let Ok(v) = rx1.recv() { if tx2.send(v).is_err() {break;} } });
                let t = Instant::now();
                for i in 0..n { tx1.send(i).unwrap(); rx2.recv().unwrap(); }
                drop(tx1); h.join().unwrap();
                t.elapsed()
            }
            "futex" => {
                use std::sync::atomic::{AtomicU32, Ordering};
                use std::sync::Arc;
                fn post(w: &AtomicU32) { if w.compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst).is_ok() { eevdf_rt::sync::Futex::wake(w, 1); } }
                fn wait(w: &AtomicU32) { while w.compare_exchange(1, 0, Ordering::SeqCst, Ordering::SeqCst).is_err() { eevdf_rt::sync::Futex::wait(w, 0); } }
                let a = Arc::new(AtomicU32::new(0)); let b = Arc::new(AtomicU32::new(0));
                let (a2, b2) = (a.clone(), b.clone());
                let h = eevdf_rt::spawn(move || for _ in 0..n { wait(&a2); post(&b2); });
                let t = Instant::now();
                for _ in 0..n { post(&a); wait(&b); }
                h.join().unwrap();
                t.elapsed()
            }
            "parkpp" => {
                use std::sync::atomic::{AtomicU32, Ordering};
                use std::sync::Arc;
                let a = Arc::new(AtomicU32::new(0)); let b = Arc::new(AtomicU32::new(0));
                let (a2, b2) = (a.clone(), b.clone());
                let me = eevdf_rt::current();
                let h = eevdf_rt::spawn(move || for _ in 0..n { while a2.swap(0, Ordering::AcqRel) == 0 { eevdf_rt::park(); } b2.store(1, Ordering::Release); me.unpark(); });
                let other = h.task();
                let t = Instant::now();
                for _ in 0..n { a.store(1, Ordering::Release); other.unpark(); while b.swap(0, Ordering::AcqRel) == 0 { eevdf_rt::park(); } }
                h.join().unwrap();
                t.elapsed()
            }
            "sleepers" => {
                let t = Instant::now();
                let hs: Vec<_> = (0..n).map(|_| eevdf_rt::spawn(|| eevdf_rt::sleep(std::time::Duration::from_millis(50)))).collect();
                let ts = t.elapsed();
                for h in hs { h.join().unwrap(); }
                eprintln!("spawn loop {:?}, total {:?}", ts, t.elapsed());
                t.elapsed()
            }
            "parked" => {
                let (tx, rx) = eevdf_rt::sync::channel::unbounded::<()>();
                let t = Instant::now();
                let hs: Vec<_> = (0..n).map(|_| { let rx = rx.clone(); eevdf_rt::spawn(move || rx.recv().is_ok()) }).collect();
                let ts = t.elapsed();
                for _ in 0..n { tx.send(()).unwrap(); }
                for h in hs { h.join().unwrap(); }
                eprintln!("spawn loop {:?} ({:.3} M/s), total {:?}", ts, n as f64 / ts.as_secs_f64() / 1e6, t.elapsed());
                t.elapsed()
            }
            _ => panic!(),
        }
    });
    println!("{} ns/op", d.as_nanos() as f64 / n as f64);
    if std::env::var_os("STATS").is_some() {
        let st = rt.stats();
        for w in &st.workers { eprintln!("worker handoffs {} steals {} spawned_local {} spawned_remote {} parks {}", w.handoffs, w.steals, w.spawned_local, w.spawned_remote, w.parks); }
        for (k, v) in st.workers[0].fields() { if v > 0 { println!("  {k}: {:.2}/op", v as f64 / n as f64); } }
    }
}
