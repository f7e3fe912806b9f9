//! Command-line conventions shared by the examples: usage errors (clap's
//! own, and the checks an example adds) print one clear line and exit with
//! status 2; help exits 0. No example panics on bad input.

use std::fmt::Display;
use std::process::ExitCode;

/// Parses the arguments with clap; on a usage error prints clap's message
/// and exits with status 2 (help and version print and exit 0).
pub fn parse<P: clap::Parser>() -> P {
    P::try_parse().unwrap_or_else(|e| e.exit())
}

/// An input error: prints `NAME: MSG` to stderr and returns exit status 2.
pub fn usage_error(example: &str, msg: impl Display) -> ExitCode {
    eprintln!("{example}: {msg}");
    ExitCode::from(2)
}

/// Checks that `v` is in `range`, naming the option in the error.
pub fn check_range<T: PartialOrd + Display>(
    option: &str,
    v: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<T, String> {
    if range.contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{option} {v} is out of range ({} ..= {})",
            range.start(),
            range.end()
        ))
    }
}

/// A green thread's slice option in µs: `0` is `None` (the runtime's base
/// slice), anything else must lie in the runtime's 100 ..= 100000 µs clamp.
pub fn optional_slice_us(option: &str, us: u64) -> Result<Option<std::time::Duration>, String> {
    match us {
        0 => Ok(None),
        100..=100_000 => Ok(Some(std::time::Duration::from_micros(us))),
        _ => Err(format!(
            "{option} {us} is out of range (100 ..= 100000, or 0 for the base slice)"
        )),
    }
}

/// Parses a positive, finite number of seconds (`--duration 1.5`).
pub fn parse_secs(s: &str) -> Result<std::time::Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(v.is_finite() && v > 0.0 && v <= 3600.0) {
        return Err(format!("`{s}`: seconds must be in (0, 3600]"));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

/// `--trace FILE`: record the eevdf-rt runtime's scheduling trace and write
/// it as Chrome trace-event JSON (open it in ui.perfetto.dev). Flatten it
/// into an example's arguments; call [`TraceOpt::start`] after building
/// the runtime and [`TraceOpt::finish`] before shutting it down.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TraceOpt {
    /// Write the runtime's scheduling trace (Chrome JSON, for ui.perfetto.dev) to this file
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<std::path::PathBuf>,
    /// Events kept per runtime worker by --trace (the last ones; 32 bytes each)
    #[arg(long, value_name = "N", default_value_t = 1 << 20)]
    pub trace_capacity: usize,
}

impl TraceOpt {
    /// Checks the options before anything runs (a usage error otherwise):
    /// the capacity's range, and that the file can be created.
    pub fn check(&self) -> Result<(), String> {
        check_range(
            "--trace-capacity",
            self.trace_capacity,
            1..=eevdf_rt::trace::MAX_CAPACITY,
        )?;
        if let Some(path) = &self.trace {
            std::fs::File::create(path).map_err(|e| format!("--trace {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// Checks the file can be written and starts recording on `rt`.
    pub fn start(&self, rt: &eevdf_rt::Runtime) -> Result<(), String> {
        if let Some(path) = &self.trace {
            std::fs::File::create(path).map_err(|e| format!("--trace {}: {e}", path.display()))?;
            rt.trace_start(self.trace_capacity)
                .map_err(|e| format!("--trace-capacity: {e}"))?;
        }
        Ok(())
    }

    /// Stops recording and writes the file, printing a one-line summary.
    pub fn finish(&self, rt: &eevdf_rt::Runtime) -> Result<(), String> {
        if let Some(path) = &self.trace {
            let t = rt.trace_stop();
            t.save(path)
                .map_err(|e| format!("--trace {}: {e}", path.display()))?;
            println!(
                "trace: {} events ({} task runs, {} dropped) written to {}",
                t.len(),
                t.runs().len(),
                t.dropped(),
                path.display()
            );
        }
        Ok(())
    }
}

/// Parses `--io auto|uring|epoll` (the runtime's I/O driver); `uring` is
/// refused here, with the kernel's reason, where io_uring is unavailable.
pub fn parse_io(s: &str) -> Result<eevdf_rt::io::IoDriver, String> {
    let d: eevdf_rt::io::IoDriver = s.parse().map_err(|e: eevdf_rt::Error| e.to_string())?;
    d.resolve().map_err(|e| e.to_string())?;
    Ok(d)
}
