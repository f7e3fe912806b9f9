//! Files whose operations do not block the worker: [`File`].
//!
//! Owns: the green-aware file type and the choice, per call, between the
//! io_uring driver, the blocking pool and a plain system call. Must not:
//! keep buffers beyond a call (the ring and the page-cache read use the
//! caller's buffer; only a read that goes to the pool has one of its own,
//! for that call).
//!
//! Regular files are always "ready" to epoll, so readiness cannot help
//! with them. Under the **io_uring driver** (see
//! [`IoDriver`](crate::io::IoDriver)) a green thread's `open`, `read`,
//! `write`, `read_at`, `write_at` and `sync_all` are submitted to its
//! worker's ring and the green thread parks until the completion: a read
//! that misses the page cache, or an `fsync`, waits in the kernel (which
//! runs it in its own worker threads) while the worker runs other green
//! threads.
//!
//! Under the **epoll driver** a green thread's file calls that can wait
//! for the device go to the runtime's blocking pool
//! ([`task::spawn_blocking`](crate::task::spawn_blocking)), and the green
//! thread parks until they return, as `tokio::fs` does:
//! * `open`, `create`, `sync_all` and `sync_data` always;
//! * `read` and `read_at` only when the data is not in the page cache: they
//!   first try `preadv2` with `RWF_NOWAIT` on the worker, which returns
//!   at once with the data or with `EAGAIN`. A read that goes to the pool
//!   reads at most [`POOL_READ_MAX`] bytes into a buffer of the pool's and
//!   copies them into the caller's (a short read, as `Read` allows).
//!
//! Writes stay on the worker under epoll: a buffered write copies into the
//! page cache and returns (ext4 refuses `RWF_NOWAIT` for buffered writes,
//! so a write cannot be tried without waiting). If one is held up — by
//! dirty-page throttling, say — the hand-off of stuck workers
//! ([`Builder::handoff`](crate::Builder::handoff)) lets the worker's other
//! green threads run. On OS threads (and pool threads) every call is the
//! plain system call.
//!
//! Details of the epoll path:
//! * A file call never queues behind user jobs in the pool (that could
//!   deadlock with a job that waits for the calling green thread): when no
//!   pool thread can take it at once, or the runtime shuts down, it runs
//!   on the worker, as before files used the pool.
//! * Files that refuse `RWF_NOWAIT` (FUSE, procfs and sysfs, ttys,
//!   descriptors in nonblocking mode from [`File::from_std`]) send every
//!   read to the pool: correct, but a pool round trip (~10 µs) each.
//!   `O_DIRECT` files read on the worker: `RWF_NOWAIT` does not keep their
//!   reads from waiting, and the pool's buffer lacks their alignment.
//! * A green thread that holds a `std::sync::Mutex` across an `open`, a
//!   sync or an uncached read can now be switched out while holding it
//!   (under io_uring it always could): use the runtime's own locks there.
//! * Runtime shutdown unwinds a green thread that waits for the pool
//!   without waiting for the pool's call. An uncached read at the file
//!   position that was under way then still moves the position, and its
//!   bytes are dropped with the thread: another holder of the same open
//!   file (an OS thread that outlives the runtime) does not see them.
//!   `read_at` has no such effect, and the io_uring driver waits for its
//!   reads before it unwinds anyone.
//!
//! Reads, writes and seeks at the file position through one `File` happen
//! one at a time, in some order, as the kernel orders them for system
//! calls: green threads that share a `&File` each read different bytes.
//! Under io_uring the kernel does not order a ring operation at the
//! position with others, so `File` does, with a green-aware lock of its
//! own; operations through another descriptor of the same open file (a
//! `dup`, a std clone) are not ordered with it. Sharers that need no
//! order use [`File::read_at`] / [`File::write_at`], which take no lock.
//!
//! One difference from `std` under io_uring: the kernel performs a ring
//! `openat` without blocking where it can, so opening a FIFO returns at
//! once instead of waiting for the other end (reads and writes on it then
//! wait as usual).

use crate::io::uring;
use crate::sync::Mutex;
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
    /// Held across each read, write and seek at the file position. The
    /// kernel orders those for plain system calls (its per-file position
    /// lock), but an io_uring read or write at the position takes the
    /// position when it starts and stores it back when it completes,
    /// without that lock: two in flight at once would both read the same
    /// bytes, or write over each other, and a seek meanwhile would be
    /// undone. A green-aware lock, so waiting parks only the green thread.
    position: Mutex<()>,
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

/// The most a read that goes to the blocking pool reads at once (the pool
/// reads into a buffer of its own, then copies).
pub const POOL_READ_MAX: usize = 2 << 20;

/// Runs a file operation that may wait for the device: on a green thread
/// in the runtime's blocking pool, parking only the green thread; on any
/// other thread right here. Also right here when no pool thread can take
/// it at once (all busy at the bound: waiting behind user jobs could
/// deadlock with one that waits for this green thread), when the runtime
/// shuts down, or when the pool drops the job unrun: the worker is then
/// held for the call, as it was before files used the pool.
fn off_worker<T: Send + 'static>(
    op: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    if !crate::in_green_thread() {
        return op();
    }
    let Some(sh) = crate::runtime::spawn::current_shared() else {
        return op();
    };
    // The operation waits in a slot that both sides can take it from, so
    // that whichever way the pool fails us, it still runs (exactly once).
    let slot = std::sync::Arc::new(parking_lot::Mutex::new(Some(op)));
    let job = {
        let slot = slot.clone();
        move || {
            let op = slot.lock().take();
            op.map(|op| op())
        }
    };
    let here = || {
        let op = slot.lock().take();
        op.map_or_else(|| Err(io::Error::other("file operation lost")), |op| op())
    };
    match crate::runtime::blocking::spawn_blocking_now(&sh, job) {
        Ok(h) => match h.join() {
            Ok(Some(r)) => r,
            // The slot is taken once: by the job or, below, by us.
            Ok(None) => Err(io::Error::other("file operation lost")),
            // Dropped unrun (shutdown): do it here.
            Err(p) if p.is::<crate::Cancelled>() => here(),
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(_) => here(),
    }
}

/// A positional offset must fit the kernel's signed `loff_t`: a larger one
/// is `EINVAL`, as `std`'s `pread` reports (and must not reach the ring,
/// where `u64::MAX` means "the file position").
fn check_offset(offset: u64) -> io::Result<()> {
    if i64::try_from(offset).is_err() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(())
}

/// The plain system call: `pread` at `offset`, or `read` at the file
/// position (`None`).
fn plain_read(f: &std::fs::File, buf: &mut [u8], offset: Option<u64>) -> io::Result<usize> {
    match offset {
        Some(off) => f.read_at(buf, off),
        None => (&*f).read(buf),
    }
}

/// What a `preadv2(…, RWF_NOWAIT)` said.
enum NoWait {
    /// It read this much (or failed for a reason of its own).
    Done(io::Result<usize>),
    /// The data is not in the page cache, or the file refuses `RWF_NOWAIT`.
    WouldWait,
}

/// Reads from `fd` at `offset` (`-1`: the file position) without waiting
/// for the device.
fn read_nowait(fd: BorrowedFd<'_>, buf: &mut [u8], offset: i64) -> NoWait {
    // An offset the platform's `off_t` cannot hold: let the pool's pread say so.
    let Some(offset) = libc::off_t::try_from(offset).ok() else {
        return NoWait::WouldWait;
    };
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    loop {
        // SAFETY: `iov` describes `buf`, which is borrowed mutably for the
        // whole call; `fd` is borrowed, so it stays open for the call.
        let n = unsafe { libc::preadv2(fd.as_raw_fd(), &iov, 1, offset, libc::RWF_NOWAIT) };
        if n >= 0 {
            return NoWait::Done(Ok(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN | libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) => {
                return NoWait::WouldWait
            }
            _ => return NoWait::Done(Err(e)),
        }
    }
}

impl File {
    fn open_flags(
        path: &Path,
        flags: libc::c_int,
        options: std::fs::OpenOptions,
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
                return Ok(File::from_std(std::fs::File::from(owned)));
            }
        }
        let path = path.to_path_buf();
        Ok(File::from_std(off_worker(move || options.open(path))?))
    }

    /// Opens a file for reading, like `std::fs::File::open`.
    ///
    /// ```
    /// let err = eevdf_rt::fs::File::open("/no/such/file").unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    /// ```
    pub fn open<P: AsRef<Path>>(path: P) -> io::Result<File> {
        let mut o = std::fs::OpenOptions::new();
        o.read(true);
        File::open_flags(path.as_ref(), libc::O_RDONLY, o)
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
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create(true).truncate(true);
        File::open_flags(
            path.as_ref(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            o,
        )
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
        File {
            inner: f,
            position: Mutex::new(()),
        }
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
        check_offset(offset)?;
        let fd = self.inner.as_raw_fd();
        let len = buf.len().min(u32::MAX as usize) as u32;
        let e = opcode::Read::new(types::Fd(fd), buf.as_mut_ptr(), len)
            .offset(offset)
            .build();
        // SAFETY: `buf` is borrowed until `ring` returns.
        match unsafe { ring(e) } {
            Some(r) => r,
            None => self.read_off_ring(buf, Some(offset)),
        }
    }

    /// A read without the ring (`offset` `None`: at the file position): on
    /// a green thread, from the page cache if the data is there, else in
    /// the blocking pool (module docs); elsewhere the plain system call.
    fn read_off_ring(&self, buf: &mut [u8], offset: Option<u64>) -> io::Result<usize> {
        if !crate::in_green_thread() {
            return plain_read(&self.inner, buf, offset);
        }
        // `read_at` has refused offsets past i64::MAX, so the cast is exact.
        let at = offset.map_or(-1, |off| off as i64);
        if let NoWait::Done(r) = read_nowait(self.inner.as_fd(), buf, at) {
            return r;
        }
        // O_DIRECT (a file from `from_std`): RWF_NOWAIT does not keep such a
        // read from waiting for the device, and the pool's buffer would not
        // have the alignment it needs. Read here.
        if self.has_flag(libc::O_DIRECT) {
            return plain_read(&self.inner, buf, offset);
        }
        // The pool thread reads through its own descriptor for the same
        // open file (a `dup`: one file position, which `read` advances).
        // Without a descriptor to spare, read here.
        let Ok(file) = self.inner.try_clone() else {
            return plain_read(&self.inner, buf, offset);
        };
        let len = buf.len().min(POOL_READ_MAX);
        let data = off_worker(move || {
            let mut v = vec![0u8; len];
            let n = plain_read(&file, &mut v, offset)?;
            v.truncate(n);
            Ok(v)
        })?;
        buf[..data.len()].copy_from_slice(&data);
        Ok(data.len())
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
        check_offset(offset)?;
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
            None => self.sync_off_ring(std::fs::File::sync_all),
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
            None => self.sync_off_ring(std::fs::File::sync_data),
        }
    }

    /// `fsync` or `fdatasync` without the ring: in the blocking pool on a
    /// green thread (through a `dup` of the descriptor), here elsewhere
    /// (and when no descriptor is left for the `dup`).
    fn sync_off_ring(&self, sync: fn(&std::fs::File) -> io::Result<()>) -> io::Result<()> {
        if !crate::in_green_thread() {
            return sync(&self.inner);
        }
        match self.inner.try_clone() {
            Ok(file) => off_worker(move || sync(&file)),
            Err(_) => sync(&self.inner),
        }
    }

    /// Whether the file's status flags (`F_GETFL`) include `flag`.
    fn has_flag(&self, flag: libc::c_int) -> bool {
        // SAFETY: F_GETFL reads the flags of a descriptor we hold open.
        let flags = unsafe { libc::fcntl(self.inner.as_raw_fd(), libc::F_GETFL) };
        flags != -1 && flags & flag != 0
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
        let _at_position = self.position.lock();
        let fd = self.inner.as_raw_fd();
        let len = buf.len().min(u32::MAX as usize) as u32;
        let e = opcode::Read::new(types::Fd(fd), buf.as_mut_ptr(), len)
            .offset(CURRENT_POSITION)
            .build();
        // SAFETY: `buf` is borrowed until `ring` returns.
        match unsafe { ring(e) } {
            Some(r) => r,
            None => self.read_off_ring(buf, None),
        }
    }
}

impl Write for &File {
    /// Writes at the file position (the end, for files opened to append)
    /// and advances it.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _at_position = self.position.lock();
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
        let _at_position = self.position.lock();
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
