//! Command-line conventions shared by the examples: usage errors (clap's
//! own, and the checks an example adds) print one clear line and exit with
//! status 2; help exits 0. No example panics on bad input. Also owns the
//! shared option checks: durations, `--features` specs, and output files
//! (checked before anything runs, written only at the end, never left
//! empty), and `--trace`.

use bench_common::{out, outln};
use std::fmt::Display;
use std::path::Path;
use std::process::ExitCode;

/// Parses the arguments with clap; on a usage error prints clap's message
/// and exits with status 2 (help and version print and exit 0, or 141 into
/// a closed pipe: `bench_common::out::exit_clap`).
pub fn parse<P: clap::Parser>() -> P {
    P::try_parse().unwrap_or_else(|e| out::exit_clap(e))
}

/// Parses like [`parse`] and also returns clap's matches, which tell an
/// option given on the command line from its default (see [`first_given`]).
pub fn parse_with_matches<P: clap::Parser>() -> (P, clap::ArgMatches) {
    let m = P::command()
        .try_get_matches()
        .unwrap_or_else(|e| out::exit_clap(e));
    let p = P::from_arg_matches(&m).unwrap_or_else(|e| out::exit_clap(e.format(&mut P::command())));
    (p, m)
}

/// The first of the options `ids` (clap's ids: the field names, such as
/// `handler_nice`) given on the command line, spelled as an option
/// (`--handler-nice`); `None` if all kept their defaults.
pub fn first_given(m: &clap::ArgMatches, ids: &[&str]) -> Option<String> {
    ids.iter()
        .find(|id| {
            m.try_get_raw(id).is_ok()
                && m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
        })
        .map(|id| format!("--{}", id.replace('_', "-")))
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

/// The shortest measured duration an example accepts: a rate over less
/// than this is noise (and over a nanosecond, absurd).
pub const MIN_MEASURED_SECS: f64 = 0.01;

/// The longest duration or warm-up an example accepts, seconds.
pub const MAX_SECS: f64 = 3600.0;

/// Parses a measured duration in seconds (`--duration 1.5`): a finite
/// number in [`MIN_MEASURED_SECS`] ..= [`MAX_SECS`] (10 ms ..= 1 h).
pub fn parse_secs(s: &str) -> Result<std::time::Duration, String> {
    parse_secs_in(s, MIN_MEASURED_SECS)
}

/// Parses a warm-up in seconds (`--warmup 0.2`): a finite number in
/// 0 ..= [`MAX_SECS`]; 0 means no warm-up.
pub fn parse_warmup_secs(s: &str) -> Result<std::time::Duration, String> {
    parse_secs_in(s, 0.0)
}

/// Seconds in `min ..= MAX_SECS`.
fn parse_secs_in(s: &str, min: f64) -> Result<std::time::Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(v.is_finite() && v >= min && v <= MAX_SECS) {
        return Err(format!("`{s}`: seconds must be in [{min}, {MAX_SECS}]"));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

/// Validates a scheduler feature spec (`sched_features` syntax; `""` and
/// `"default"` are the defaults, `"kernel"` the kernel's), naming the
/// option in the error. Every example parses `--features` with this.
pub fn check_features(option: &str, spec: &str) -> Result<eevdf_rt::sched::Features, String> {
    eevdf_rt::sched::Features::parse(spec).map_err(|e| format!("{option}: {e}"))
}

/// Checks, before anything runs, that the output file `path` of `option`
/// can be written — without leaving a file behind: an existing file is
/// opened for writing but not truncated; a new one is created and removed
/// again. The example writes the file only when it has its contents, so
/// no error path leaves an empty file.
pub fn check_output_file(option: &str, path: &Path) -> Result<(), String> {
    let err = |e: std::io::Error| format!("{option} {}: {e}", path.display());
    if path.as_os_str().is_empty() {
        return Err(format!("{option}: the file name is empty"));
    }
    if path.is_dir() {
        return Err(format!("{option} {}: is a directory", path.display()));
    }
    if path.exists() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map(drop)
            .map_err(err)
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(err)?;
        std::fs::remove_file(path).map_err(err)
    }
}

/// [`check_output_file`] for a file that must have extension `ext`
/// (`"svg"`, `"json"`; case-insensitive), so that `--svg out.png` does
/// not silently write SVG into a `.png`.
pub fn check_output_file_ext(option: &str, path: &Path, ext: &str) -> Result<(), String> {
    let ok = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case(ext));
    if !ok {
        return Err(format!(
            "{option} {}: the file name must end in .{ext} (it is written as {})",
            path.display(),
            ext.to_ascii_uppercase()
        ));
    }
    check_output_file(option, path)
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

/// Bytes of one `--trace` event: the runtime keeps `--trace-capacity` of them
/// per worker, allocated when the trace starts.
pub const TRACE_EVENT_BYTES: u64 = eevdf_rt::trace::EVENT_BYTES as u64;

impl TraceOpt {
    /// Checks the options before anything runs (a usage error otherwise):
    /// the capacity's range, that the trace of a runtime with `workers`
    /// workers fits in this machine's memory, and that the file can be
    /// written (nothing is created: see [`check_output_file`]).
    pub fn check(&self, workers: usize) -> Result<(), String> {
        check_range(
            "--trace-capacity",
            self.trace_capacity,
            1..=eevdf_rt::trace::MAX_CAPACITY,
        )?;
        if let Some(path) = &self.trace {
            let needed = self.trace_capacity as u128 * TRACE_EVENT_BYTES as u128 * workers as u128;
            if let Some(memory) = crate::os::physical_memory() {
                if needed > memory as u128 {
                    return Err(format!(
                        "--trace-capacity {} × {workers} workers needs {} MiB ({TRACE_EVENT_BYTES} \
                         bytes an event), more than this machine's {} MiB of memory",
                        self.trace_capacity,
                        needed >> 20,
                        memory >> 20
                    ));
                }
            }
            check_output_file("--trace", path)?;
        }
        Ok(())
    }

    /// Checks the file can still be written and starts recording on `rt`;
    /// the file itself is written by [`TraceOpt::finish`] only.
    pub fn start(&self, rt: &eevdf_rt::Runtime) -> Result<(), String> {
        if let Some(path) = &self.trace {
            check_output_file("--trace", path)?;
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
            outln!(
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_have_a_floor_and_warmups_may_be_zero() {
        assert_eq!(parse_secs("0.01"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_secs("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["1e-9", "0.001", "0", "-1", "3601", "nan", "inf", "x"] {
            assert!(parse_secs(bad).is_err(), "--duration {bad}");
        }
        assert_eq!(parse_warmup_secs("0"), Ok(Duration::ZERO));
        assert_eq!(parse_warmup_secs("0.001"), Ok(Duration::from_millis(1)));
        for bad in ["-0.1", "3601", "nan", "x"] {
            assert!(parse_warmup_secs(bad).is_err(), "--warmup {bad}");
        }
    }

    #[test]
    fn features_accept_the_empty_spec() {
        assert!(check_features("--features", "").is_ok());
        assert!(check_features("--features", "default").is_ok());
        let e = check_features("--features", "BOGUS").unwrap_err();
        assert!(e.starts_with("--features: "), "{e}");
    }

    #[test]
    fn output_checks_leave_no_file_behind() {
        let dir = std::env::temp_dir().join(format!("examples-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let new = dir.join("new.svg");
        check_output_file("--plot", &new).unwrap();
        assert!(!new.exists(), "the check created {}", new.display());
        // An existing file is kept as it is.
        let old = dir.join("old.json");
        std::fs::write(&old, "keep").unwrap();
        check_output_file("--trace", &old).unwrap();
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "keep");
        // A directory, a missing directory and an empty name are refused.
        assert!(check_output_file("--plot", &dir).is_err());
        let missing = dir.join("no-such-dir").join("x.svg");
        let e = check_output_file("--plot", &missing).unwrap_err();
        assert!(e.starts_with("--plot "), "{e}");
        assert!(check_output_file("--plot", Path::new("")).is_err());
        // The extension.
        assert!(check_output_file_ext("--svg", &dir.join("x.SVG"), "svg").is_ok());
        let e = check_output_file_ext("--svg", &dir.join("x.png"), "svg").unwrap_err();
        assert!(e.contains(".svg"), "{e}");
        assert!(check_output_file_ext("--svg", &dir.join("x"), "svg").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
