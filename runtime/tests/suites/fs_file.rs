// The fs_file suite, included once per I/O driver by `tests/fs_file.rs`
// (each inclusion defines `builder()`).

use eevdf_rt::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "eevdf-rt-fs-{}-{name}-{}",
        module_path!().replace("::", "-"),
        std::process::id()
    ))
}

#[test]
fn many_green_threads_write_and_read_disjoint_blocks() {
    let rt = builder().workers(2).build().unwrap();
    let path = tmp("blocks");
    let p = path.clone();
    let ok = rt.block_on(move || {
        let f = std::sync::Arc::new(File::create(&p).unwrap());
        let writers: Vec<_> = (0..16u8)
            .map(|i| {
                let f = f.clone();
                eevdf_rt::spawn(move || {
                    let block = vec![i; 4096];
                    let mut off = 0;
                    while off < block.len() {
                        off += f.write_at(&block[off..], u64::from(i) * 4096 + off as u64).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        f.sync_all().unwrap();
        let r = std::sync::Arc::new(File::open(&p).unwrap());
        let readers: Vec<_> = (0..16u8)
            .map(|i| {
                let r = r.clone();
                eevdf_rt::spawn(move || {
                    let mut b = vec![0u8; 4096];
                    let n = r.read_at(&mut b, u64::from(i) * 4096).unwrap();
                    n == 4096 && b.iter().all(|&x| x == i)
                })
            })
            .collect();
        readers.into_iter().all(|h| h.join().unwrap())
    });
    assert!(ok);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 16 * 4096);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn sequential_read_write_seek_and_errors() {
    let rt = builder().workers(1).build().unwrap();
    let path = tmp("seq");
    let p = path.clone();
    rt.block_on(move || {
        let err = File::open(p.with_extension("missing")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
        let mut f = File::create(&p).unwrap();
        f.write_all(b"hello ").unwrap();
        f.write_all(b"world").unwrap();
        f.sync_data().unwrap();
        let mut f = File::open(&p).unwrap();
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello world");
        f.seek(SeekFrom::Start(6)).unwrap();
        let mut w = [0u8; 5];
        f.read_exact(&mut w).unwrap();
        assert_eq!(&w, b"world");
        assert_eq!(f.read(&mut w).unwrap(), 0, "end of file");
        // A read-only file refuses writes.
        assert!(f.write(b"x").is_err());
        // An offset past i64::MAX is EINVAL on every path (on the ring,
        // u64::MAX would otherwise mean "the file position").
        let f = File::open(&p).unwrap();
        for off in [u64::MAX, 1 << 63] {
            let mut b = [0u8; 1];
            assert_eq!(f.read_at(&mut b, off).unwrap_err().raw_os_error(), Some(libc::EINVAL));
            assert_eq!(f.write_at(b"x", off).unwrap_err().raw_os_error(), Some(libc::EINVAL));
        }
        // create truncates.
        drop(File::create(&p).unwrap());
        assert_eq!(File::open(&p).unwrap().metadata().unwrap().len(), 0);
    });
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_file_works_on_os_threads_too() {
    let path = tmp("os");
    let f = File::create(&path).unwrap();
    assert_eq!(f.write_at(b"abc", 0).unwrap(), 3);
    f.sync_all().unwrap();
    let mut b = [0u8; 3];
    assert_eq!(File::open(&path).unwrap().read_at(&mut b, 0).unwrap(), 3);
    assert_eq!(&b, b"abc");
    std::fs::remove_file(path).unwrap();
}

/// An `open` and a `read` that wait — here on a FIFO, which `open` blocks
/// until a writer opens (under epoll; the ring's `openat` returns at once,
/// module docs of `fs`) and `read` until data comes — park only their
/// green thread: on one worker, with the hand-off of stuck workers off,
/// the green thread that opens the writing end still runs. If a wait held
/// the worker instead, a watchdog OS thread opens the FIFO after 10 s to
/// free it, and the test fails.
#[test]
fn an_open_and_a_read_that_wait_park_only_their_green_thread() {
    let path = tmp("fifo");
    let _ = std::fs::remove_file(&path);
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let rt = builder().workers(1).handoff(None).build().unwrap();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let rescued = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let (path, rescued) = (path.clone(), rescued.clone());
        std::thread::spawn(move || {
            if done_rx.recv_timeout(std::time::Duration::from_secs(10)).is_err() {
                rescued.store(true, std::sync::atomic::Ordering::SeqCst);
                // Both ends at once (a FIFO opened read-write never
                // blocks): frees the reader's open and read, and lets the
                // writer's open through; kept open until the run ends.
                let mut both = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open(&path)
                    .unwrap();
                let _ = both.write_all(b"rescue");
                let _ = done_rx.recv();
            }
        })
    };
    let p = path.clone();
    let got = rt.block_on(move || {
        let reader = {
            let p = p.clone();
            eevdf_rt::spawn(move || {
                let mut f = File::open(&p).unwrap();
                let mut b = [0u8; 6];
                f.read_exact(&mut b).unwrap();
                b
            })
        };
        // Let the reader block in its open first.
        eevdf_rt::sleep(std::time::Duration::from_millis(20));
        let mut w = File::create(&p).unwrap();
        w.write_all(b"hello!").unwrap();
        reader.join().unwrap()
    });
    let _ = done_tx.send(());
    watchdog.join().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(
        !rescued.load(std::sync::atomic::Ordering::SeqCst),
        "the waiting open or read held the only worker"
    );
    assert_eq!(&got, b"hello!");
}

/// A file call does not queue behind user jobs in the blocking pool: with
/// its one thread taken by a job that waits for this green thread, the
/// green thread's open and sync still complete (on the worker, if the pool
/// cannot take them at once), and the job sees its signal. Queued behind
/// the job, they would wait for it and it for them: the job gives up after
/// 10 s, and the test fails.
#[test]
fn file_calls_do_not_wait_behind_a_full_blocking_pool() {
    let rt = builder().workers(1).max_blocking_threads(1).build().unwrap();
    let path = tmp("full-pool");
    let p = path.clone();
    let job_saw_signal = rt.block_on(move || {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started_rx) = eevdf_rt::sync::channel::bounded::<()>(1);
        let job = eevdf_rt::task::spawn_blocking(move || {
            started_tx.send(()).unwrap();
            rx.recv_timeout(std::time::Duration::from_secs(10)).is_ok()
        });
        started_rx.recv().unwrap(); // the pool's one thread is busy now
        let f = File::create(&p).unwrap();
        f.write_at(b"x", 0).unwrap();
        f.sync_all().unwrap();
        drop(File::open(&p).unwrap());
        tx.send(()).unwrap();
        job.join().unwrap()
    });
    std::fs::remove_file(path).unwrap();
    assert!(job_saw_signal, "a file call waited behind the pool's busy thread");
}

/// Green threads that share one `&File` and read at its position each get
/// different blocks, every block once, as with `read(2)` on OS threads,
/// also when the reads miss the page cache (under io_uring two reads in
/// flight at once would both take the same position).
#[test]
fn shared_reads_at_the_position_read_every_block_once() {
    use std::os::fd::AsRawFd;
    use std::sync::Arc;
    const BLOCK: usize = 4096;
    const BLOCKS: usize = 2048;
    let path = tmp("shared-position");
    {
        let mut f = std::fs::File::create(&path).unwrap();
        let mut b = vec![0u8; BLOCK];
        for i in 0..BLOCKS {
            b[..8].copy_from_slice(&(i as u64).to_le_bytes());
            f.write_all(&b).unwrap();
        }
        f.sync_all().unwrap();
    }
    let rt = builder().workers(1).build().unwrap();
    for round in 0..2 {
        // Out of the page cache, so that reads wait for the device and
        // overlap (the kernel may keep some pages; the test still holds).
        let f = std::fs::File::open(&path).unwrap();
        // SAFETY: advice on a descriptor we hold open; it reads no memory.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        drop(f);
        let p = path.clone();
        let mut seen = rt.block_on(move || {
            let f = Arc::new(File::open(&p).unwrap());
            let readers: Vec<_> = (0..8)
                .map(|_| {
                    let f = f.clone();
                    eevdf_rt::spawn(move || {
                        let mut got = Vec::new();
                        let mut b = vec![0u8; BLOCK];
                        loop {
                            let n = (&*f).read(&mut b).unwrap();
                            if n == 0 {
                                return got;
                            }
                            assert_eq!(n, BLOCK, "short read");
                            got.push(u64::from_le_bytes(b[..8].try_into().unwrap()));
                        }
                    })
                })
                .collect();
            readers
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect::<Vec<u64>>()
        });
        seen.sort_unstable();
        let all: Vec<u64> = (0..BLOCKS as u64).collect();
        assert_eq!(seen.len(), BLOCKS, "round {round}: blocks read twice or lost");
        assert_eq!(seen, all, "round {round}");
    }
    std::fs::remove_file(&path).unwrap();
}
