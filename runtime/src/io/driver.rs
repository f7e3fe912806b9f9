//! The choice of I/O driver: [`IoDriver`], and the probe that tells
//! whether this kernel lets the process use io_uring.
//!
//! Owns: the public enum, its parsing (`auto|uring|epoll`, for command
//! lines), and `probe` — one `io_uring_setup` plus an opcode probe, done
//! once per process and cached. Must not: keep rings (each worker owns
//! its own, `io::uring`).

use crate::error::Error;
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

/// Which kernel interface a runtime's green threads use for I/O.
///
/// * [`Uring`](IoDriver::Uring): every read, write, accept and connect of
///   a green thread (and every [`crate::fs::File`] operation) is submitted
///   to its worker's io_uring; the green thread parks until the completion
///   arrives. Submissions are batched per scheduling round. Needs Linux
///   6.7 or later (the idle park uses `IORING_OP_FUTEX_WAIT`), and a
///   process that is allowed to use io_uring (`kernel.io_uring_disabled`,
///   seccomp and container profiles can forbid it).
/// * [`Epoll`](IoDriver::Epoll): descriptors are nonblocking; an operation
///   that would block parks the green thread until the runtime's epoll
///   reactor reports readiness, then retries.
/// * [`Auto`](IoDriver::Auto) (the default): `Uring` when the probe
///   succeeds, otherwise `Epoll`.
///
/// OS threads (not green threads) always use plain nonblocking calls and
/// `ppoll`, whatever the driver, so objects keep working outside a runtime.
///
/// ```
/// use eevdf_rt::io::IoDriver;
/// let rt = eevdf_rt::Builder::new()
///     .workers(1)
///     .io_driver(IoDriver::Epoll)
///     .build()
///     .unwrap();
/// assert_eq!(rt.io_driver(), IoDriver::Epoll);
/// assert_eq!("uring".parse::<IoDriver>().unwrap(), IoDriver::Uring);
/// // Auto resolves to what this kernel allows.
/// let d = IoDriver::Auto.resolve().unwrap();
/// assert!(d == IoDriver::Uring || d == IoDriver::Epoll);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IoDriver {
    /// io_uring if the kernel allows it, else epoll.
    #[default]
    Auto,
    /// io_uring; building the runtime fails if the kernel refuses it.
    Uring,
    /// The epoll readiness reactor.
    Epoll,
}

impl IoDriver {
    /// The driver a runtime built with `self` uses: `Auto` becomes `Uring`
    /// or `Epoll`; `Uring` is an error (with the kernel's reason) when
    /// io_uring cannot be used.
    ///
    /// ```
    /// use eevdf_rt::io::IoDriver;
    /// assert_eq!(IoDriver::Epoll.resolve().unwrap(), IoDriver::Epoll);
    /// match IoDriver::Uring.resolve() {
    ///     Ok(d) => assert_eq!(d, IoDriver::Uring),
    ///     Err(e) => println!("no io_uring here: {e}"),
    /// }
    /// ```
    pub fn resolve(self) -> Result<IoDriver, Error> {
        match self {
            IoDriver::Epoll => Ok(IoDriver::Epoll),
            IoDriver::Auto => Ok(match probe() {
                Ok(()) => IoDriver::Uring,
                Err(_) => IoDriver::Epoll,
            }),
            IoDriver::Uring => match probe() {
                Ok(()) => Ok(IoDriver::Uring),
                Err(why) => Err(Error::Os {
                    context: "starting the io_uring I/O driver (io_driver(IoDriver::Uring); \
                              IoDriver::Auto or Epoll would use epoll)",
                    message: why.clone(),
                }),
            },
        }
    }

    /// The name used on command lines: `auto`, `uring` or `epoll`.
    pub fn name(self) -> &'static str {
        match self {
            IoDriver::Auto => "auto",
            IoDriver::Uring => "uring",
            IoDriver::Epoll => "epoll",
        }
    }
}

impl fmt::Display for IoDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for IoDriver {
    type Err = Error;

    /// Parses `auto`, `uring` (or `io_uring`) and `epoll`.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(IoDriver::Auto),
            "uring" | "io_uring" | "io-uring" => Ok(IoDriver::Uring),
            "epoll" => Ok(IoDriver::Epoll),
            _ => Err(Error::invalid("io_driver", s, "auto | uring | epoll")),
        }
    }
}

/// The opcodes the io_uring driver submits (all but the futex wait exist
/// since Linux 5.6; `IORING_OP_FUTEX_WAIT` since 6.7).
const NEEDED: [(u8, &str); 9] = [
    (io_uring::opcode::Read::CODE, "READ"),
    (io_uring::opcode::Write::CODE, "WRITE"),
    (io_uring::opcode::Readv::CODE, "READV"),
    (io_uring::opcode::Writev::CODE, "WRITEV"),
    (io_uring::opcode::Accept::CODE, "ACCEPT"),
    (io_uring::opcode::Connect::CODE, "CONNECT"),
    (io_uring::opcode::PollAdd::CODE, "POLL_ADD"),
    (io_uring::opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
    (io_uring::opcode::FutexWait::CODE, "FUTEX_WAIT (Linux 6.7)"),
];

/// Whether this process may use io_uring with everything the driver
/// needs; `Err` says why not. Probed once (a small ring is set up, asked
/// for its opcodes, and closed), then cached.
pub(crate) fn probe() -> &'static Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(|| {
        let ring = io_uring::IoUring::new(4).map_err(|e| {
            let hint = match e.raw_os_error() {
                Some(libc::EPERM) => {
                    " (forbidden: see sysctl kernel.io_uring_disabled, or a seccomp profile)"
                }
                Some(libc::ENOSYS) => {
                    " (this kernel has no io_uring, or a seccomp profile hides it)"
                }
                _ => "",
            };
            format!("io_uring_setup failed: {e}{hint}")
        })?;
        if !ring.params().is_feature_ext_arg() {
            return Err("io_uring lacks IORING_FEAT_EXT_ARG (needs Linux 5.11)".into());
        }
        let mut probe = io_uring::Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|e| format!("io_uring opcode probe failed: {e}"))?;
        let missing: Vec<&str> = NEEDED
            .iter()
            .filter(|(code, _)| !probe.is_supported(*code))
            .map(|(_, name)| *name)
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "io_uring lacks opcodes the driver needs: {}",
                missing.join(", ")
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        for d in [IoDriver::Auto, IoDriver::Uring, IoDriver::Epoll] {
            assert_eq!(d.to_string().parse::<IoDriver>().unwrap(), d);
        }
        let e = "kqueue".parse::<IoDriver>().unwrap_err();
        assert!(e.to_string().contains("auto | uring | epoll"), "{e}");
    }

    #[test]
    fn auto_resolves_to_a_concrete_driver() {
        let d = IoDriver::Auto.resolve().unwrap();
        assert_ne!(d, IoDriver::Auto);
        assert_eq!(d == IoDriver::Uring, probe().is_ok());
        if let Err(why) = probe() {
            let e = IoDriver::Uring.resolve().unwrap_err();
            assert!(e.to_string().contains(why.as_str()), "{e}");
        }
    }
}
