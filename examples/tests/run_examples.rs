//! Runs every example binary briefly with small parameters and checks that
//! it exits 0 (and that bad input exits 2 with a message, not a panic).
//!
//! Finding the binaries: the examples are built by the same `cargo` that
//! runs this test, into `<target>/<profile>/examples/NAME`, next to this
//! test's own `<target>/<profile>/deps/` directory. `cargo test` builds
//! example targets, but only when no target filter is given (`cargo test
//! --test run_examples` builds just this file), and a filtered run could
//! find stale binaries. So before the first example runs, the test runs
//! `$CARGO build -p examples --examples` with this test's profile and
//! target directory (and `--target` triple, if any): a no-op when `cargo
//! test` has just built them, a build otherwise. Cargo does not hold the
//! build lock while tests run, so the nested build cannot deadlock.
//!
//! The examples run one at a time (they pin their runtimes' workers to the
//! same cores); the whole file takes a few seconds.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// Where the example binaries are, built and fresh.
fn examples_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        // <target>[/<triple>]/<profile>/deps/run_examples-HASH
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary lives in <profile>/deps");
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a profile directory name");
        let up = profile_dir.parent().expect("a target directory");
        let (target_dir, triple) = if up.join("CACHEDIR.TAG").exists() {
            (up, None)
        } else {
            let triple = up.file_name().and_then(|n| n.to_str()).map(str::to_owned);
            (
                up.parent().expect("a target directory above the triple"),
                triple,
            )
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "examples", "--examples"])
            .arg("--target-dir")
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        match profile {
            "debug" => {}
            "release" => {
                cmd.arg("--release");
            }
            other => {
                cmd.args(["--profile", other]);
            }
        }
        if let Some(t) = triple {
            cmd.args(["--target", &t]);
        }
        let out = cmd.output().expect("running cargo build for the examples");
        assert!(
            out.status.success(),
            "building the examples failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        profile_dir.join("examples")
    })
}

/// Runs example `name` with `args`, one example at a time.
fn run(name: &str, args: &[&str]) -> Output {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let dir = examples_dir();
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let t = Instant::now();
    let out = Command::new(dir.join(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", dir.join(name).display()));
    eprintln!("{name} {args:?}: {:?} in {:.2?}", out.status, t.elapsed());
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs and asserts exit 0; returns stdout.
fn run_ok(name: &str, args: &[&str]) -> String {
    let o = run(name, args);
    assert!(
        o.status.success(),
        "{name} {args:?} failed with {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    stdout(&o)
}

/// A duration as the examples print it (`87.8 µs`, `2.45 ms`, `1.20 s`), in µs.
fn duration_us(s: &str) -> Option<f64> {
    let (number, unit) = s.trim().split_once(' ')?;
    Some(number.parse::<f64>().ok()? * unit_us(unit)?)
}

/// µs per `unit` (`µs`, `ms`, `s`), as the examples print durations.
fn unit_us(unit: &str) -> Option<f64> {
    match unit {
        "µs" => Some(1.0),
        "ms" => Some(1e3),
        "s" => Some(1e6),
        _ => None,
    }
}

/// The values of a table row of `latency_service` (`label` then one column
/// per runtime, then the ratio), durations in µs (`87.8 µs`, `2.45 ms`,
/// `1.20 s`), counts as is, ratios (`0.56×`) as numbers.
fn row_values(out: &str, label: &str) -> Vec<f64> {
    let line = out
        .lines()
        .find(|l| l.starts_with(label) && l[label.len()..].starts_with(' '))
        .unwrap_or_else(|| panic!("no `{label}` row in:\n{out}"));
    let mut values = Vec::new();
    let mut words = line[label.len()..].split_whitespace().peekable();
    while let Some(w) = words.next() {
        let number: f64 = w
            .trim_end_matches(['×', '%'])
            .parse()
            .unwrap_or_else(|_| panic!("`{w}` in row `{line}` is not a number"));
        let Some(scale) = words.peek().and_then(|u| unit_us(u)) else {
            values.push(number);
            continue;
        };
        words.next();
        values.push(number * scale);
    }
    values
}

/// Checks the figures of `latency_service`'s table, not only its labels:
/// every request of the open-loop schedule was measured, the percentiles
/// are ordered and plausible, batch work ran, and the ratio column is the
/// ratio of the two columns.
fn check_latency_table(out: &str, expected_requests: f64) {
    let requests = row_values(out, "requests");
    assert_eq!(requests.len(), 3, "two runtimes and a ratio: {requests:?}");
    for &n in &requests[..2] {
        assert!(
            (n - expected_requests).abs() <= 0.25 * expected_requests,
            "measured {n} requests, the schedule sends {expected_requests}:\n{out}"
        );
    }
    let rows: Vec<Vec<f64>> = [
        "latency p50",
        "latency p90",
        "latency p99",
        "latency p99.9",
        "latency max",
    ]
    .iter()
    .map(|l| row_values(out, l))
    .collect();
    for side in 0..2 {
        let q: Vec<f64> = rows.iter().map(|r| r[side]).collect();
        assert!(
            q.windows(2).all(|w| w[0] <= w[1]),
            "percentiles out of order: {q:?}\n{out}"
        );
        // A request is 30 µs of work; nothing waits for 10 s in a 0.2 s run.
        assert!(
            q[0] >= 5.0 && q[4] < 10e6,
            "implausible latencies {q:?}\n{out}"
        );
    }
    let lag_max = row_values(out, "send lag max");
    assert!(
        lag_max[..2].iter().all(|&v| (0.0..10e6).contains(&v)),
        "send lag max {lag_max:?}:\n{out}"
    );
    let p99 = &rows[2];
    let want = p99[1] / p99[0];
    assert!(
        (p99[2] - want).abs() <= 0.02 * want + 0.01,
        "p99 ratio column {} is not tokio/green {want}:\n{out}",
        p99[2]
    );
    let batch = row_values(out, "batch units/s");
    assert!(
        batch[0] > 0.0 && batch[1] > 0.0,
        "no batch work ran:\n{out}"
    );
}

/// Runs and asserts exit 2 with a message on stderr and no panic; returns
/// stderr.
fn run_bad(name: &str, args: &[&str]) -> String {
    let o = run(name, args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{name} {args:?} should exit 2; stderr:\n{err}"
    );
    assert!(!err.trim().is_empty(), "{name} {args:?}: no message");
    assert!(
        !err.contains("panicked"),
        "{name} {args:?} panicked:\n{err}"
    );
    err.into_owned()
}

/// Fails unless `out` contains every one of `rows`.
fn assert_has_rows(out: &str, rows: &[&str]) {
    for row in rows {
        assert!(out.contains(row), "no `{row}` in:\n{out}");
    }
}

/// A closed stdout (`simulate | head`) ends an example quietly with status
/// 141 instead of a panic (`bench_common::out`).
#[test]
fn closed_stdout_exits_141_without_a_panic() {
    for args in [&["--ms", "20"][..], &["--help"]] {
        let out = bench_common::out::run_with_stdout_gone(
            Command::new(examples_dir().join("simulate")).args(args),
        )
        .expect("run simulate");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn simulate() {
    let out = run_ok("simulate", &["--ms", "50", "--timeline-ms", "2"]);
    assert!(out.contains("EEVDF simulation"), "{out}");
    run_bad("simulate", &["--task", "x"]);
    run_bad("simulate", &["--features", "NO_SUCH_FEATURE"]);
    // A negative nice is a value, not an option.
    let out = run_ok("simulate", &["--ms", "20", "--task", "-5", "--task", "0"]);
    assert!(out.contains("hog (75.3 %)"), "{out}");
    // Out of range: rejected at once, not wrapped, hung or replaced.
    for (option, value, range) in [
        ("--ms", "18446744073710", "1 ..= 600000"),
        ("--ms", "18446744073709551615", "1 ..= 600000"),
        ("--ms", "0", "1 ..= 600000"),
        ("--tick-us", "2305843009213694952", "10 ..= 1000000"),
        ("--tick-us", "18446744073709551615", "10 ..= 1000000"),
        ("--tick-us", "0", "10 ..= 1000000"),
        ("--tick-us", "1", "10 ..= 1000000"),
        ("--timeline-ms", "18446744073709551615", "0 ..= 600000"),
    ] {
        let err = run_bad("simulate", &[option, value]);
        assert!(
            err.contains(&format!("{option} {value} is out of range ({range})")),
            "{option} {value}: {err}"
        );
    }
    for task in [
        "0:100:18446744073709552:1000",
        "99",
        "0:50",
        "0:-5",
        "0:100:1000:5",
    ] {
        run_bad("simulate", &["--task", task]);
    }
    // One rule for periodic tasks: 10 <= BURST_US < PERIOD_US, so a zero
    // period is no longer a hog in disguise.
    for task in ["0:100:0:0", "0:100:10:20", "0:100:20:20"] {
        let err = run_bad("simulate", &["--task", task]);
        assert!(err.contains("10 <= BURST_US < PERIOD_US"), "{task}: {err}");
    }
}

#[test]
fn latency_service() {
    let svg = std::env::temp_dir().join(format!("latency_service-{}.svg", std::process::id()));
    let svg_arg = svg.to_str().expect("a UTF-8 temp path");
    let out = run_ok(
        "latency_service",
        &[
            "--rounds",
            "1",
            "--duration",
            "0.2",
            "--warmup",
            "0.05",
            "--rate",
            "1000",
            "--plot",
            svg_arg,
        ],
    );
    assert_has_rows(&out, &["latency p99", "batch units/s", "eevdf-rt", "tokio"]);
    check_latency_table(&out, 1000.0 * 0.2);
    let plot = std::fs::read_to_string(&svg).expect("the plot was written");
    let _ = std::fs::remove_file(&svg);
    assert!(plot.contains("<svg"), "not an SVG");
    let out = run_ok(
        "latency_service",
        &[
            "--runtime",
            "green",
            "--rounds",
            "2",
            "--duration",
            "0.1",
            "--warmup",
            "0.02",
            "--handler-slice-us",
            "0",
            "--handler-nice",
            "-5",
            "--features",
            "NO_PREEMPT_SHORT",
            "--batch-jobs",
            "0",
        ],
    );
    // Two rounds: each reported with its p99, OS wait and the generator's
    // worst send lag.
    let rounds = out
        .lines()
        .skip_while(|l| {
            !l.starts_with("per round: p99 (workers' OS wait; generator's worst send lag)")
        })
        .nth(1)
        .unwrap_or_else(|| panic!("no per-round line in:\n{out}"));
    assert!(
        rounds.trim_start().starts_with("eevdf-rt") && rounds.matches("; ").count() == 2,
        "{rounds}"
    );
    // The table's `send lag max` is the worst of the rounds' worst lags.
    let worst: Vec<f64> = rounds
        .split("; ")
        .skip(1)
        .map(|r| {
            let v = r.split(')').next().expect("a lag before `)`");
            duration_us(v).unwrap_or_else(|| panic!("bad lag `{v}` in {rounds}"))
        })
        .collect();
    let table = row_values(&out, "send lag max");
    assert!(
        worst.len() == 2 && worst.iter().copied().fold(0.0, f64::max) == table[0],
        "rounds' worst lags {worst:?} against the table's {table:?}:\n{out}"
    );
    run_ok(
        "latency_service",
        &[
            "--transport",
            "tcp",
            "--batch-slice-us",
            "100",
            "--tick-us",
            "200",
            "--no-pin",
            "--rounds",
            "2",
            "--duration",
            "0.1",
            "--warmup",
            "0.02",
            "--rate",
            "1000",
        ],
    );
    run_bad("latency_service", &["--features", "NO_SUCH_FEATURE"]);
    run_bad("latency_service", &["--tick-us", "10"]);
    run_bad("latency_service", &["--batch-slice-us", "50"]);
    run_bad("latency_service", &["--transport", "carrier-pigeon"]);
    run_bad("latency_service", &["--rate", "abc"]);
    run_bad("latency_service", &["--handler-slice-us", "5"]);
    run_bad("latency_service", &["--duration", "-1"]);
    run_bad("latency_service", &["--bogus"]);
    run_bad("latency_service", &["--duration", "1e-9"]);
}

/// `--runtime tokio` refuses the options only eevdf-rt reads (instead of
/// ignoring them, or writing an empty trace), and its header has no
/// eevdf-rt line; a bad --plot path fails before the run.
#[test]
fn latency_service_options_match_the_runtimes() {
    let dir = std::env::temp_dir().join(format!("latency_service_opts_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.json");
    for extra in [
        &["--trace", trace.to_str().unwrap()][..],
        &["--features", "NO_PREEMPT_SHORT"],
        &["--handler-nice", "0"],
        &["--handler-slice-us", "200"],
        &["--tick-us", "500"],
        &["--batch-nice", "0"],
        &["--io", "epoll"],
    ] {
        let mut args = vec!["--runtime", "tokio"];
        args.extend_from_slice(extra);
        let err = run_bad("latency_service", &args);
        assert!(
            err.contains(&format!("{} sets the eevdf-rt side", extra[0]))
                && err.contains("use --runtime green or both"),
            "{err}"
        );
    }
    assert!(!trace.exists(), "an empty trace was left behind");
    let out = run_ok(
        "latency_service",
        &[
            "--runtime",
            "tokio",
            "--rounds",
            "1",
            "--duration",
            "0.05",
            "--warmup",
            "0",
            "--rate",
            "1000",
            "--batch-jobs",
            "1",
        ],
    );
    assert!(
        !out.contains("eevdf-rt:"),
        "an eevdf-rt line for tokio alone:\n{out}"
    );
    assert!(out.contains("tokio:"), "{out}");
    let err = run_bad("latency_service", &["--plot", "/nonexistent-dir/l.svg"]);
    assert!(err.contains("--plot /nonexistent-dir/l.svg"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn echo_server() {
    let trace = std::env::temp_dir().join(format!("echo_server-{}.json", std::process::id()));
    let trace_arg = trace.to_str().expect("a UTF-8 temp path");
    let out = run_ok(
        "echo_server",
        &["--clients", "4", "--requests", "50", "--trace", trace_arg],
    );
    assert!(out.contains("every byte verified"), "{out}");
    assert!(out.contains("task runs"), "{out}");
    let json = std::fs::read_to_string(&trace).expect("the trace was written");
    let _ = std::fs::remove_file(&trace);
    assert!(json.starts_with("{\"traceEvents\":[") && json.contains("\"ph\":\"X\""));
    run_bad("echo_server", &["--trace", "/nonexistent-dir/t.json"]);
    run_ok(
        "echo_server",
        &[
            "--client-threads",
            "--clients",
            "3",
            "--requests",
            "20",
            "--size",
            "3000",
        ],
    );
    run_bad("echo_server", &["--size", "0"]);
    // "" is the defaults, as everywhere else.
    run_ok(
        "echo_server",
        &["--features", "", "--clients", "1", "--requests", "5"],
    );
    let err = run_bad("echo_server", &["--features", "BOGUS"]);
    assert!(err.starts_with("echo_server: --features: "), "{err}");
    run_bad("echo_server", &["--clients", "many"]);
    run_bad("echo_server", &["--connect", "not an address"]);
    run_bad(
        "echo_server",
        &["--listen", "127.0.0.1:0", "--connect", "127.0.0.1:1"],
    );
}

/// `--listen` with `--trace`, stopped by SIGINT (as the help says) and by
/// SIGTERM: exit 0 with the trace written; a failed bind leaves no file.
#[test]
fn echo_server_listen_stops_on_signals() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = std::env::temp_dir().join(format!("echo_server_listen_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.json");
    let trace_arg = trace.to_str().unwrap();
    let bin = examples_dir().join("echo_server");
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let _ = std::fs::remove_file(&trace);
        let mut child = Command::new(&bin)
            .args(["--listen", "127.0.0.1:0", "--workers", "1"])
            .args(["--trace", trace_arg])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start echo_server --listen");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addr = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in `{line}`"))
            .to_string();
        // One round trip, so the trace has task runs.
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.write_all(b"ping").unwrap();
        let mut back = [0u8; 4];
        s.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"ping");
        // SAFETY: kill has no memory arguments; the pid is our child's.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let t = Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if t.elapsed().as_secs() >= 10 {
                let _ = child.kill();
                panic!("echo_server --listen did not stop on signal {signal}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut rest = String::new();
        out.read_to_string(&mut rest).unwrap();
        assert!(status.success(), "signal {signal}: {status:?}\n{rest}");
        assert!(rest.contains("stopping the server"), "{rest}");
        let json = std::fs::read_to_string(&trace).expect("the trace was written");
        assert!(json.contains("\"ph\":\"X\""), "no task runs in the trace");
    }
    // A failed bind: an error, and no empty trace file left behind.
    let _ = std::fs::remove_file(&trace);
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = run("echo_server", &["--listen", &addr, "--trace", trace_arg]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(!trace.exists(), "a failed bind left {}", trace.display());
    // A bad --trace path: nothing created either.
    let missing = dir.join("no-such-dir").join("t.json");
    run_bad(
        "echo_server",
        &["--listen", &addr, "--trace", missing.to_str().unwrap()],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--connect` against an external echo server (std, on OS threads here).
#[test]
fn echo_server_connect() {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut r = &s;
                let mut w = &s;
                let _ = std::io::copy(&mut r, &mut w);
            });
        }
    });
    for extra in [&[][..], &["--client-threads"][..]] {
        let mut args = vec!["--connect", &addr, "--clients", "2", "--requests", "20"];
        args.extend_from_slice(extra);
        let out = run_ok("echo_server", &args);
        assert!(out.contains("every byte verified"), "{out}");
    }
}

#[test]
fn feature_ab() {
    let out = run_ok(
        "feature_ab",
        &[
            "--duration",
            "0.05",
            "--warmup",
            "0.02",
            "--sets",
            "default;NO_TTWU_QUEUE;NO_TTWU_QUEUE_DELAYED,NO_RUN_TO_PARITY",
        ],
    );
    assert_has_rows(
        &out,
        &["round trips/s", "wakeups_remote_queued", "NO_TTWU_QUEUE"],
    );
    run_bad("feature_ab", &["--sets", "default;NO_SUCH_FEATURE"]);
    run_bad("feature_ab", &["--sets", ";"]);
    run_bad(
        "feature_ab",
        &["--pairs", "0", "--sleepers", "0", "--hogs", "0"],
    );
    run_bad("feature_ab", &["--rounds", "0"]);
    // Two columns of the same experiment.
    for sets in [
        "default;default",
        "default;HRTICK",
        "NO_DELAY_DEQUEUE;no_delay_dequeue",
    ] {
        let err = run_bad("feature_ab", &["--sets", sets]);
        assert!(err.contains("are the same feature set"), "{sets}: {err}");
    }
    run_bad("feature_ab", &["--sets", "default", "--duration", "1e-9"]);
}

/// No warm-up, one worker (described as such), and with several sets and
/// --trace the header says which file holds which set.
#[test]
fn feature_ab_trace_files_and_one_worker() {
    let dir = std::env::temp_dir().join(format!("feature_ab_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.json");
    let out = run_ok(
        "feature_ab",
        &[
            "--workers",
            "1",
            "--warmup",
            "0",
            "--duration",
            "0.02",
            "--pairs",
            "1",
            "--sleepers",
            "1",
            "--hogs",
            "1",
            "--sets",
            "default;NO_DELAY_DEQUEUE",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert!(out.contains("1 ping-pong pairs on the one worker"), "{out}");
    for (set, file) in [("default", "t-1.json"), ("NO_DELAY_DEQUEUE", "t-2.json")] {
        let path = dir.join(file);
        let line = format!("{set} -> {}", path.display());
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") == line),
            "no `{line}` in:\n{out}"
        );
        assert!(path.exists(), "{} not written", path.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// trace_plot: output paths and the SVG's extension are checked before
/// the run, so a bad --json does not come after the SVG was written.
#[test]
fn trace_plot() {
    let dir = std::env::temp_dir().join(format!("trace_plot_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("t.svg");
    let json = dir.join("t.json");
    let out = run_ok(
        "trace_plot",
        &[
            "--window-ms",
            "2",
            "--svg",
            svg.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(out.contains("timeline written"), "{out}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    assert!(json.exists());
    let png = dir.join("t.png");
    let err = run_bad("trace_plot", &["--svg", png.to_str().unwrap()]);
    assert!(err.contains("must end in .svg"), "{err}");
    assert!(!png.exists());
    run_bad("trace_plot", &["--svg", "/nonexistent-dir/x.svg"]);
    let svg2 = dir.join("u.svg");
    run_bad(
        "trace_plot",
        &[
            "--svg",
            svg2.to_str().unwrap(),
            "--json",
            "/nonexistent-dir/x.json",
        ],
    );
    assert!(!svg2.exists(), "the SVG was written before --json failed");
    run_bad("trace_plot", &["--window-ms", "0"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stuck() {
    let out = run_ok(
        "stuck",
        &["--rounds", "1", "--block-ms", "40", "--spin-ms", "40"],
    );
    assert_has_rows(
        &out,
        &[
            "scenario=blocking handoff=on",
            "scenario=spinning handoff=off",
            "scenario=spawn_blocking handoff=on",
        ],
    );
    run_bad("stuck", &["--rounds", "0"]);
    run_bad("stuck", &["--block-ms", "0"]);
}

#[test]
fn fast_path() {
    let out = run_ok("fast_path", &["--rounds", "2", "--ops", "2000"]);
    for row in [
        "| yield switch",
        "| spawn + join an empty task |",
        "| channel ping-pong round trip |",
    ] {
        let line = out
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no `{row}` row in:\n{out}"));
        // four cells: eevdf-rt ns, tokio ns, ratio; all positive numbers
        let cells: Vec<f64> = line
            .split('|')
            .skip(2)
            .filter_map(|c| c.trim().trim_end_matches('×').parse().ok())
            .collect();
        assert!(
            cells.len() == 3 && cells.iter().all(|&v| v > 0.0),
            "bad row `{line}` in:\n{out}"
        );
    }
    run_bad("fast_path", &["--rounds", "0"]);
    run_bad("fast_path", &["--ops", "0"]);
    // 2^32 operations: once truncated to a u32 divisor of zero, a panic
    // after hours of work; now over the limit, refused at once.
    run_bad("fast_path", &["--rounds", "1", "--ops", "4294967296"]);
}

#[test]
fn cache_line() {
    let args = ["--round-trips", "200", "--samples", "3", "--pause-ms", "0"];
    if examples::os::allowed_cpus().len() < 2 {
        let err = run_bad("cache_line", &args);
        assert!(err.contains("needs two CPUs"), "{err}");
        return;
    }
    let out = run_ok("cache_line", &args);
    let samples: Vec<f64> = out
        .lines()
        .filter_map(|l| l.strip_prefix("sample "))
        .filter_map(|l| l.split(": ").nth(1)?.strip_suffix(" ns")?.parse().ok())
        .collect();
    assert!(
        samples.len() == 3 && samples.iter().all(|&ns| ns > 0.0),
        "{out}"
    );
    assert!(out.contains("median: "), "{out}");
    for (args, message) in [
        (vec!["--cpus", "0,0"], "must differ"),
        (vec!["--cpus", "0"], "expected two CPU numbers"),
        (vec!["--cpus", "0,x"], "is not a CPU number"),
        (
            vec!["--cpus", "0,18446744073709551615"],
            "not one this process may use",
        ),
        (vec!["--round-trips", "0"], "--round-trips"),
        (vec!["--samples", "0"], "--samples"),
        (vec!["--pause-ms", "10001"], "--pause-ms"),
    ] {
        let err = run_bad("cache_line", &args);
        assert!(err.contains(message), "{args:?}: {err}");
    }
}

#[test]
fn parked() {
    let out = run_ok("parked", &["--threads", "3000", "--workers", "2"]);
    assert!(
        out.contains("spawned=3000 ") && out.contains(" joined=3000 "),
        "{out}"
    );
    run_bad("parked", &["--threads", "0"]);
    run_bad("parked", &["--workers", "0"]);
    let err = run_bad("parked", &["--features", "NO_SUCH_FEATURE"]);
    assert!(err.starts_with("parked: --features: "), "{err}");
}

#[test]
fn sleepers() {
    let out = run_ok(
        "sleepers",
        &["--tasks", "2000", "--sleep-ms", "5", "--rounds", "1"],
    );
    assert_has_rows(
        &out,
        &[
            "round 1 eevdf: wall",
            "round 1 tokio: wall",
            "median eevdf:",
        ],
    );
    assert!(!out.contains("round 2"), "one round asked for:\n{out}");
    // With one round the ratio is that round's: eevdf-rt's wall over tokio's.
    let wall = |b: &str| -> f64 {
        let l = out
            .lines()
            .find(|l| l.starts_with(&format!("round 1 {b}: wall")))
            .unwrap_or_else(|| panic!("no round 1 {b} line in:\n{out}"));
        l.split_whitespace()
            .nth(4)
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    let ratio: f64 = out
        .split("ratio wall ")
        .nth(1)
        .and_then(|r| r.split('x').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no wall ratio in:\n{out}"));
    let want = wall("eevdf") / wall("tokio");
    assert!(
        (ratio - want).abs() <= 0.01 * want + 0.005,
        "{ratio} against {want}:\n{out}"
    );
    run_bad("sleepers", &["--rounds", "0"]);
    run_bad("sleepers", &["--tasks", "0"]);
    run_bad("sleepers", &["--workers", "0"]);
    let err = run_bad("sleepers", &["--child", "nope"]);
    assert!(err.starts_with("sleepers: --child: "), "{err}");
    // Checked in the parent, before the banner.
    let o = run("sleepers", &["--features", "NO_SUCH_FEATURE"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.starts_with("sleepers: --features: "), "{err}");
    assert!(stdout(&o).is_empty(), "a banner before the error");
    // eevdf-rt's options are not silently ignored by the tokio child.
    for extra in [&["--features", "NO_SPAWN_SPILL"][..], &["--stats"]] {
        let mut args = vec!["--child", "tokio"];
        args.extend_from_slice(extra);
        let err = run_bad("sleepers", &args);
        assert!(err.contains("applies to the eevdf-rt backend"), "{err}");
    }
    // --stats in the parent: the eevdf child's counters, after its round.
    let o = run(
        "sleepers",
        &[
            "--tasks",
            "100",
            "--sleep-ms",
            "1",
            "--rounds",
            "1",
            "--stats",
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("worker 0: WorkerStats"));
}

/// Runs `name args` under a virtual-memory limit (`ulimit -v`, KiB).
fn run_limited(kib: u64, name: &str, args: &[&str]) -> Output {
    let bin = examples_dir().join(name);
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(&bin)
        .args(args)
        .output()
        .expect("running sh")
}

/// Out of memory for stacks: sleepers reports the failed spawn and exits
/// 1, as parked does, instead of panicking or aborting.
#[test]
fn spawn_failure_is_reported() {
    for (name, args) in [
        (
            "sleepers",
            &["--child", "eevdf", "--tasks", "2000000", "--sleep-ms", "0"][..],
        ),
        ("parked", &["--threads", "2000000"][..]),
    ] {
        let o = run_limited(600_000, name, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {:?}\n{err}", o.status);
        assert!(
            err.starts_with(&format!("{name}: spawn #")),
            "{name}: {err}"
        );
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
}

/// `--trace-capacity` events of 32 bytes for each of `--workers` runtime
/// workers are allocated when the trace starts: more than the machine holds
/// is a usage error (exit 2) before anything runs, not an allocation abort
/// (under the address-space limit here) or the OOM killer.
#[test]
fn trace_beyond_memory_is_refused() {
    // 2^24 events × 32 bytes × 256 workers = 128 GiB.
    if examples::os::physical_memory().is_none_or(|m| m >= 128 << 30) {
        return;
    }
    let trace = std::env::temp_dir().join(format!("huge_trace_{}.json", std::process::id()));
    let trace = trace.to_str().unwrap();
    let big = [
        "--workers",
        "256",
        "--trace",
        trace,
        "--trace-capacity",
        "16777216",
    ];
    for (name, args) in [
        ("echo_server", &["--clients", "1", "--requests", "1"][..]),
        (
            "feature_ab",
            &["--sets", "default", "--duration", "0.01"][..],
        ),
    ] {
        let args: Vec<&str> = big.iter().chain(args).copied().collect();
        let o = run_limited(4 << 20, name, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {:?}\n{err}", o.status);
        assert!(
            err.contains("--trace-capacity 16777216 × 256 workers needs"),
            "{name}: {err}"
        );
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(!Path::new(trace).exists(), "{name} left {trace} behind");
    }
}

#[test]
fn http_service() {
    let dir = std::env::temp_dir().join(format!("http_service_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("http.svg");
    let trace = dir.join("http.json");
    let out = run_ok(
        "http_service",
        &[
            "--duration",
            "0.2",
            "--rounds",
            "1",
            "--clients",
            "4",
            "--heavy-clients",
            "2",
            "--heavy-us",
            "500",
            "--heavy-unit-us",
            "300",
            "--plot",
            svg.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
            "--features",
            "NO_WA_IO",
            "--io",
            "epoll",
        ],
    );
    assert!(out.contains("eevdf-rt: all"), "{out}");
    assert!(out.contains("eevdf-rt I/O driver: epoll"), "{out}");
    // 500 µs in 300 µs units: one whole unit and a shorter last one.
    assert!(out.contains("(500 µs: 1 × 300 µs + 200 µs"), "{out}");
    assert!(out.contains("tokio: all"), "{out}");
    assert!(out.contains("responses correct"), "{out}");
    assert!(out.contains("clients' send lag p99"), "{out}");
    // Every latency response carries the handler's stamp (the client
    // fails the request otherwise), and the server side is reported.
    assert!(out.contains("server side (from the write"), "{out}");
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.contains("<svg"), "not an SVG");
    // The eevdf-rt side's mixed phase, with its task runs.
    let json = std::fs::read_to_string(&trace).unwrap();
    assert!(json.contains("\"ph\":\"X\""), "no task runs in the trace");
    let _ = std::fs::remove_dir_all(&dir);
    run_bad("http_service", &["--workers", "0"]);
    run_bad("http_service", &["--features", "NO_SUCH_SWITCH"]);
    run_bad("http_service", &["--latency-slice-us", "5"]);
    run_bad("http_service", &["--heavy-nice", "30"]);
    run_bad("http_service", &["--heavy-slice-us", "50"]);
    run_bad("http_service", &["--clients", "many"]);
    run_bad("http_service", &["--bogus"]);
    run_bad("http_service", &["--io", "kqueue"]);
    run_bad("http_service", &["--split-cpus", "--no-pin"]);
    // Rates over a nanosecond are not measurements.
    run_bad("http_service", &["--rounds", "1", "--duration", "1e-9"]);
    // A unit larger than the whole heavy request.
    let err = run_bad(
        "http_service",
        &["--heavy-us", "10", "--heavy-unit-us", "5000"],
    );
    assert!(
        err.contains("--heavy-unit-us 5000 is larger than --heavy-us 10"),
        "{err}"
    );
    // Output paths are checked before the run.
    let err = run_bad("http_service", &["--plot", "/nonexistent-dir/x.svg"]);
    assert!(err.contains("--plot /nonexistent-dir/x.svg"), "{err}");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    run_bad(
        "http_service",
        &["--split-cpus", "--workers", &cpus.to_string()],
    );
    if cpus >= 2 {
        // The generator on the CPUs the worker leaves free: still every
        // response checked.
        let out = run_ok(
            "http_service",
            &[
                "--workers",
                "1",
                "--split-cpus",
                "--duration",
                "0.1",
                "--rounds",
                "1",
                "--clients",
                "2",
                "--heavy-clients",
                "1",
                "--heavy-us",
                "200",
            ],
        );
        assert!(out.contains("responses correct"), "{out}");
    }
}
