// Does a sleeping thread pinned beside a busy pinned thread get the CPU
// promptly when its timer fires, without privilege? (kernel EEVDF wakeup
// preemption, with and without a custom slice via sched_setattr)
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn pin(cpu: usize) {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[repr(C)]
struct SchedAttr { size: u32, policy: u32, flags: u64, nice: i32, prio: u32, runtime: u64, deadline: u64, period: u64, util_min: u32, util_max: u32 }

fn set_slice(ns: u64) -> i64 {
    let a = SchedAttr { size: std::mem::size_of::<SchedAttr>() as u32, policy: 0, flags: 0, nice: 0, prio: 0, runtime: ns, deadline: 0, period: 0, util_min: 0, util_max: 0 };
    unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a as *const SchedAttr, 0) }
}

fn now() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn main() {
    let slice_us: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(0);
    let iters: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(2000);
    let busy_slice_us: u64 = std::env::args().nth(3).map(|s| s.parse().unwrap()).unwrap_or(0);
    let mode = std::env::args().nth(4).unwrap_or("timer".into());
    let spin = std::env::args().nth(5).map(|s| s != "nospin").unwrap_or(true);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let spinner = std::thread::spawn(move || {
        pin(1);
        if busy_slice_us > 0 { set_slice(busy_slice_us * 1000); }
        let mut x = 0u64;
        if !spin { return; }
        while !s2.load(Ordering::Relaxed) { x = x.wrapping_add(1); std::hint::black_box(x); }
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    pin(1);
    if slice_us > 0 {
        let r = set_slice(slice_us * 1000);
        if r != 0 { eprintln!("sched_setattr failed: {}", std::io::Error::last_os_error()); }
    }
    let tfd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, 0) };
    let mut lat = Vec::with_capacity(iters);
    if mode == "event" {
        let efd = unsafe { libc::eventfd(0, 0) };
        let sent = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (s3, stop3) = (sent.clone(), stop.clone());
        let waker = std::thread::spawn(move || {
            pin(0);
            while !stop3.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_micros(1000));
                s3.store(now(), Ordering::SeqCst);
                let one = 1u64;
                unsafe { libc::write(efd, &one as *const u64 as *const _, 8) };
            }
        });
        for _ in 0..iters {
            let mut buf = [0u8; 8];
            unsafe { libc::read(efd, buf.as_mut_ptr() as *mut _, 8) };
            lat.push(now().saturating_sub(sent.load(Ordering::SeqCst)));
        }
        stop.store(true, Ordering::Relaxed);
        let one = 1u64;
        unsafe { libc::write(efd, &one as *const u64 as *const _, 8) };
        waker.join().unwrap();
    }
    for _ in 0..(if mode == "event" { 0 } else { iters }) {
        let at = now() + 1_000_000;
        let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value: libc::timespec { tv_sec: (at / 1_000_000_000) as i64, tv_nsec: (at % 1_000_000_000) as i64 } };
        unsafe { libc::timerfd_settime(tfd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
        let mut buf = [0u8; 8];
        unsafe { libc::read(tfd, buf.as_mut_ptr() as *mut _, 8) };
        lat.push(now() - at);
    }
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    lat.sort();
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)] / 1000;
    println!("{mode} spin={spin} slice {slice_us} µs (busy {busy_slice_us}): wake-to-run p50 {} µs p90 {} p99 {} p99.9 {} max {}", p(0.5), p(0.9), p(0.99), p(0.999), lat[lat.len() - 1] / 1000);
}
