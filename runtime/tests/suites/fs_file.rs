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
