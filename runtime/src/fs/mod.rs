//! Files whose operations do not block the worker: [`File`].
//!
//! Owns: the green-aware file type and the choice, per call, between the
//! io_uring driver and a plain system call. Must not: keep buffers of its
//! own (every operation reads into or writes from the caller's buffer).
//!
//! Regular files are always "ready" to epoll, so readiness cannot help
//! with them. Under the **io_uring driver** (see
//! [`IoDriver`](crate::io::IoDriver)) a green thread's `open`, `read`,
//! `write`, `read_at`, `write_at` and `sync_all` are submitted to its
//! worker's ring and the green thread parks until the completion: a read
//! that misses the page cache, or an `fsync`, waits in the kernel (which
//! runs it in its own worker threads) while the worker runs other green
//! threads. Under the **epoll driver**, and on OS threads, the same calls
//! are the plain system calls: a green thread then holds its worker for
//! the duration of the call (microseconds for the page cache, a disk
//! access otherwise) — the behaviour of `std::fs` inside any green-thread
//! or async runtime without io_uring.

use crate::io::uring;
use io_uring::{opcode, types};
use std::ffi::CString;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// An open file, like `std::fs::File`, whose operations park only the
/// calling green thread under the io_uring driver (module docs).
///
/// `Read`, `Write` and `Seek` are implemented for `File` and `&File`; the
/// positional [`read_at`](Self::read_at) and [`write_at`](Self::write_at)
/// take `&self`, so several green threads can share one file.
///
/// ```
/// use std::io::{Read, Write};
/// let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
/// let path = std::env::temp_dir().join(format!("eevdf-rt-doc-file-{}", std::process::id()));
/// let p = path.clone();
/// let text = rt.block_on(move || -> std::io::Result<String> {
///     let mut f = eevdf_rt::fs::File::create(&p)?;
///     f.write_all(b"hello, ")?;
///     f.write_at(b"file", 7)?;
///     f.sync_all()?;
///     let mut s = String::new();
///     eevdf_rt::fs::File::open(&p)?.read_to_string(&mut s)?;
///     Ok(s)
/// })?;
/// assert_eq!(text, "hello, file");
/// std::fs::remove_file(path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct File {
    inner: std::fs::File,
}

/// A path as a C string (an interior NUL is `InvalidInput`, like std).
fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "file name contained an unexpected NUL byte",
        )
    })
}

/// Runs a file operation through the ring (`None`: no ring here).
///
/// # Safety
///
/// The pointers in `entry` must be valid until this returns (it returns
/// after the completion).
unsafe fn ring(entry: io_uring::squeue::Entry) -> Option<io::Result<usize>> {
    if !uring::active() {
        return None;
    }
    loop {
        // SAFETY: forwarded to the caller; no deadline, so never cancelled.
        let r = unsafe { uring::submit(entry.clone(), None) }?;
        match r {
            Ok(res) if res == -libc::EINTR => continue,
            Ok(res) => return Some(uring::cvt(res)),
            Err(uring::TimedOut) => unreachable!("file operations have no deadline"),
        }
    }
}

/// The io_uring offset meaning "the file position" (`-1`).
const CURRENT_POSITION: u64 = u64::MAX;

impl File {
    fn open_flags(
        path: &Path,
        flags: libc::c_int,
        std_open: impl FnOnce() -> io::Result<std::fs::File>,
    ) -> io::Result<File> {
        if uring::active() {
            let c = c_path(path)?;
            let e = opcode::OpenAt::new(types::Fd(libc::AT_FDCWD), c.as_ptr())
                .flags(flags | libc::O_CLOEXEC)
                .mode(0o666)
                .build();
            // SAFETY: `c` lives until `ring` returns.
            if let Some(r) = unsafe { ring(e) } {
                let fd = r? as RawFd;
                // SAFETY: a successful openat returned a new descriptor.
                let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                return Ok(File {
                    inner: std::fs::File::from(owned),
                });
            }
        }
        Ok(File { inner: std_open()? })
    }

    /// Opens a file for reading, like `std::fs::File::open`.
    ///
    /// ```
    /// let err = eevdf_rt::fs::File::open("/no/such/file").unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    /// ```
    pub fn open<P: AsRef<Path>>(path: P) -> io::Result<File> {
        let p = path.as_ref();
        File::open_flags(p, libc::O_RDONLY, || std::fs::File::open(p))
    }

    /// Creates (or truncates) a file for writing, like
    /// `std::fs::File::create` (mode `0o666` before the umask).
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-create-{}", std::process::id()));
    /// let f = eevdf_rt::fs::File::create(&p)?;
    /// assert_eq!(f.metadata()?.len(), 0);
    /// std::fs::remove_file(p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn create<P: AsRef<Path>>(path: P) -> io::Result<File> {
        let p = path.as_ref();
        File::open_flags(p, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, || {
            std::fs::File::create(p)
        })
    }

    /// Wraps a file opened with `std` (any `OpenOptions`).
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-std-{}", std::process::id()));
    /// let std_f = std::fs::OpenOptions::new().create(true).append(true).open(&p)?;
    /// let f = eevdf_rt::fs::File::from_std(std_f);
    /// # drop(f);
    /// std::fs::remove_file(p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn from_std(f: std::fs::File) -> File {
        File { inner: f }
    }

    /// The `std` file inside.
    pub fn into_std(self) -> std::fs::File {
        self.inner
    }

    /// Reads at `offset` without moving the file position (`pread`).
    /// Returns how many bytes were read: fewer than asked near the end of
    /// the file, 0 at or past it.
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-rat-{}", std::process::id()));
    /// std::fs::write(&p, b"0123456789")?;
    /// let f = eevdf_rt::fs::File::open(&p)?;
    /// let mut b = [0u8; 4];
    /// assert_eq!(f.read_at(&mut b, 3)?, 4);
    /// assert_eq!(&b, b"3456");
    /// assert_eq!(f.read_at(&mut b, 8)?, 2);
    /// std::fs::remove_file(p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let fd = self.inner.as_raw_fd();
        let len = buf.len().min(u32::MAX as usize) as u32;
        let e = opcode::Read::new(types::Fd(fd), buf.as_mut_ptr(), len)
            .offset(offset)
            .build();
        // SAFETY: `buf` is borrowed until `ring` returns.
        match unsafe { ring(e) } {
            Some(r) => r,
            None => self.inner.read_at(buf, offset),
        }
    }

    /// Writes at `offset` without moving the file position (`pwrite`).
    /// Returns how many bytes were written (possibly fewer than `buf.len()`;
    /// see `write_all_at` on `std::os::unix::fs::FileExt`, which `File` also
    /// implements).
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-wat-{}", std::process::id()));
    /// let f = eevdf_rt::fs::File::create(&p)?;
    /// assert_eq!(f.write_at(b"xyz", 5)?, 3);
    /// assert_eq!(std::fs::read(&p)?, b"\0\0\0\0\0xyz");
    /// std::fs::remove_file(p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        let fd = self.inner.as_raw_fd();
        let len = buf.len().min(u32::MAX as usize) as u32;
        let e = opcode::Write::new(types::Fd(fd), buf.as_ptr(), len)
            .offset(offset)
            .build();
        // SAFETY: `buf` is borrowed until `ring` returns.
        match unsafe { ring(e) } {
            Some(r) => r,
            None => self.inner.write_at(buf, offset),
        }
    }

    /// Flushes data and metadata to the device (`fsync`).
    ///
    /// ```
    /// let p = std::env::temp_dir().join(format!("eevdf-rt-doc-sync-{}", std::process::id()));
    /// let f = eevdf_rt::fs::File::create(&p)?;
    /// f.write_at(b"durable", 0)?;
    /// f.sync_all()?;
    /// std::fs::remove_file(p)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn sync_all(&self) -> io::Result<()> {
        let e = opcode::Fsync::new(types::Fd(self.inner.as_raw_fd())).build();
        // SAFETY: an fsync points to no memory.
        match unsafe { ring(e) } {
            Some(r) => r.map(|_| ()),
            None => self.inner.sync_all(),
        }
    }

    /// Flushes data (not all metadata) to the device (`fdatasync`).
    pub fn sync_data(&self) -> io::Result<()> {
        let e = opcode::Fsync::new(types::Fd(self.inner.as_raw_fd()))
            .flags(types::FsyncFlags::DATASYNC)
            .build();
        // SAFETY: an fsync points to no memory.
        match unsafe { ring(e) } {
            Some(r) => r.map(|_| ()),
            None => self.inner.sync_data(),
        }
    }

    /// The file's metadata (`fstat`, a plain system call: it never waits
    /// for the device).
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        self.inner.metadata()
    }

    /// Truncates or extends the file (`ftruncate`, a plain system call).
    pub fn set_len(&self, size: u64) -> io::Result<()> {
        self.inner.set_len(size)
    }
}

impl Read for &File {
    /// Reads at the file position and advances it.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let fd = self.inner.as_raw_fd();
        let len = buf.len().min(u32::MAX as usize) as u32;
        let e = opcode::Read::new(types::Fd(fd), buf.as_mut_ptr(), len)
            .offset(CURRENT_POSITION)
            .build();
        // SAFETY: `buf` is borrowed until `ring` returns.
        match unsafe { ring(e) } {
            Some(r) => r,
            None => (&self.inner).read(buf),
        }
    }
}

impl Write for &File {
    /// Writes at the file position (the end, for files opened to append)
    /// and advances it.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let fd = self.inner.as_raw_fd();
        let len = buf.len().min(u32::MAX as usize) as u32;
        let e = opcode::Write::new(types::Fd(fd), buf.as_ptr(), len)
            .offset(CURRENT_POSITION)
            .build();
        // SAFETY: `buf` is borrowed until `ring` returns.
        match unsafe { ring(e) } {
            Some(r) => r,
            None => (&self.inner).write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for &File {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        (&self.inner).seek(pos)
    }
}

impl Read for File {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self).read(buf)
    }
}

impl Write for File {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (&*self).write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for File {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        (&*self).seek(pos)
    }
}

impl FileExt for File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        File::read_at(self, buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        File::write_at(self, buf, offset)
    }
}

impl AsRawFd for File {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.as_raw_fd()
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.as_fd()
    }
}

impl From<std::fs::File> for File {
    fn from(f: std::fs::File) -> File {
        File::from_std(f)
    }
}
