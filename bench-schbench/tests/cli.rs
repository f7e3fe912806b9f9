//! End-to-end tests of the `schbench` binary: bad input exits 2 with a message, and
//! short runs print reports that parse back and add up.

use std::path::PathBuf;
use std::process::{Command, Output};

use bench_schbench::cpus::CpuSet;
use bench_schbench::hist::bucket_index;

fn schbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schbench"))
        .args(args)
        .output()
        .expect("run schbench")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("utf-8 stderr")
}

#[test]
fn bad_input_exits_2_with_a_message() {
    for (args, needle) in [
        (&["--bogus"][..], "--bogus"),
        (&["-m", "0"], "-m/--message-threads"),
        (&["-t", "0"], "-t/--threads"),
        (&["-M", "1023"], "CPU(s) 1023"),
        (&["-W", "0,1023"], "CPU(s) 1023"),
        (&["-M", "x-y"], "bad CPU id"),
        (&["-p", "1048577"], "1 MiB"),
        (&["--backend", "fibers"], "fibers"),
        (&["--workers", "0"], "--workers"),
        (
            &["--backend", "green", "--features", "NO_SUCH_SWITCH"],
            "SUCH_SWITCH",
        ),
        (&["--features", "BOGUS,RUN_TO_PARITY"], "BOGUS"),
        (&["-r", "0"], "-r/--runtime"),
        (
            &["--backend", "green", "-r", "18446744073709551615"],
            "-r/--runtime must be 1..=86400",
        ),
        (&["-r", "1000000000000"], "-r/--runtime must be 1..=86400"),
        (&["-i", "86401"], "-i/--intervaltime must be 1..=86400"),
        (&["-z", "86401"], "-z/--zerotime must be at most 86400"),
        (
            &["-r", "1", "-s", "100000000"],
            "-s/--sleeptime must be at most",
        ),
        (
            &["-r", "1", "-n", "999999999999"],
            "-n/--operations must be at most",
        ),
        (
            &["-r", "1", "-F", "65536", "-n", "5"],
            "-n/--operations × side³",
        ),
        (
            &["--backend", "tokio", "--workers", "40000"],
            "--workers must be 1..=256",
        ),
        (
            &["-j", "/nonexistent-dir/x.json", "-r", "1"],
            "-j file /nonexistent-dir/x.json",
        ),
        (
            &["--trace", "/nonexistent-dir/t.json", "-r", "1"],
            "--trace",
        ),
        (&["--backend", "threads", "--trace", "t.json"], "--trace"),
        (&["--trace-capacity", "0"], "--trace-capacity"),
    ] {
        let out = schbench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{args:?}");
        assert!(stdout(&out).is_empty(), "{args:?} ran anyway");
    }
}

#[test]
fn help_documents_auto_pinning() {
    let out = schbench(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    for needle in [
        "--message-threads",
        "--cache_footprint",
        "--auto-rps",
        "differs from the original",
        "--backend",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}

/// One parsed percentile block.
#[derive(Debug)]
struct Block {
    title: String,
    runtime: u64,
    total: u64,
    rows: Vec<(f64, u64, u64, bool)>,
    min: u64,
    max: u64,
}

fn parse_block<'a>(lines: &mut impl Iterator<Item = &'a str>, pcts: &[f64], star: usize) -> Block {
    let head = lines.next().expect("block header");
    let (title, rest) = head.split_once(" percentiles (").expect(head);
    let units = if title == "RPS" { "requests" } else { "usec" };
    let rest = rest
        .strip_prefix(&format!("{units}) runtime "))
        .expect(head);
    let (runtime, rest) = rest.split_once(" (s) (").expect(head);
    let total = rest.strip_suffix(" total samples)").expect(head);
    let (runtime, total): (u64, u64) = (runtime.parse().unwrap(), total.parse().unwrap());
    let mut rows = Vec::new();
    for (i, &pct) in pcts.iter().enumerate() {
        let line = lines.next().expect("percentile line");
        let body = line.strip_prefix('\t').expect(line);
        let starred = body.starts_with("* ");
        let (value, samples) = body[2..]
            .strip_prefix(&format!("{pct:2.1}th: "))
            .and_then(|r| r.split_once(" ("))
            .and_then(|(v, s)| {
                Some((
                    v.trim_end().parse().ok()?,
                    s.strip_suffix(" samples)")?.parse().ok()?,
                ))
            })
            .expect(line);
        // Byte-for-byte: re-render the original's `%2.1fth: %-10u (%lu samples)`.
        let mark = if i == star { "* " } else { "  " };
        assert_eq!(
            line,
            format!("\t{mark}{pct:2.1}th: {value:<10} ({samples} samples)")
        );
        rows.push((pct, value, samples, starred));
    }
    let line = lines.next().expect("min/max line");
    let (min, max) = line
        .strip_prefix("\t  min=")
        .and_then(|r| r.split_once(", max="))
        .map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap()))
        .expect(line);
    Block {
        title: title.to_string(),
        runtime,
        total,
        rows,
        min,
        max,
    }
}

fn check_block(b: &Block) {
    let sum: u64 = b.rows.iter().map(|r| r.2).sum();
    let last = b.rows.last().unwrap().0;
    assert!(sum <= b.total, "{b:?}: percentile counts exceed the total");
    // Counts run up to the bucket of the last printed percentile, so they cover at least
    // that share of the samples, and everything but the samples above it.
    assert!(
        sum as f64 >= (last / 100.0 * b.total as f64).ceil(),
        "{b:?}: counts too small"
    );
    assert!(
        b.rows.windows(2).all(|w| w[0].1 <= w[1].1),
        "{b:?}: percentiles not monotonic"
    );
    if b.total > 0 {
        assert!(b.min <= b.max);
        // Values are bucket midpoints; compare buckets (exact below 512).
        assert!(
            bucket_index(b.min) <= bucket_index(b.rows[0].1),
            "{b:?}: min above p-first"
        );
        assert!(
            bucket_index(b.rows.last().unwrap().1) <= bucket_index(b.max),
            "{b:?}: max below p-last"
        );
    } else {
        assert!(
            b.rows.iter().all(|r| r.1 == 0 && r.2 == 0) && b.min == 0 && b.max == 0,
            "{b:?}"
        );
    }
}

/// A report: wakeup, request, RPS blocks and the closing line's number.
struct Report {
    blocks: [Block; 3],
    closing: (String, f64),
}

fn parse_reports(text: &str, backend: &str) -> Vec<Report> {
    let mut lines = text.lines();
    let header = lines.next().expect("header");
    assert!(
        header.starts_with(&format!("=== backend {backend}")) && header.ends_with(" ==="),
        "{header}"
    );
    let mut reports = Vec::new();
    loop {
        let mut peek = lines.clone();
        match peek.next() {
            Some(l) if l.starts_with("Wakeup Latencies") => {}
            _ => break,
        }
        let lat = [50.0, 90.0, 99.0, 99.9];
        let blocks = [
            parse_block(&mut lines, &lat, 2),
            parse_block(&mut lines, &lat, 2),
            parse_block(&mut lines, &[20.0, 50.0, 90.0], 1),
        ];
        let closing = lines.next().expect("closing line");
        let (label, value) = closing.split_once(": ").expect(closing);
        assert!(
            value.split_once('.').is_some_and(|(_, d)| d.len() == 2),
            "%.2f: {closing}"
        );
        reports.push(Report {
            blocks,
            closing: (label.to_string(), value.parse().unwrap()),
        });
    }
    reports
}

/// Runs `backend` for 2 s with an interim report each second, parses everything back.
fn parse_back(backend: &str) {
    let out = schbench(&[
        "--backend",
        backend,
        "-m",
        "1",
        "-t",
        "2",
        "-r",
        "2",
        "-i",
        "1",
        "-s",
        "100",
        "-n",
        "1",
        "-F",
        "16",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let reports = parse_reports(&text, backend);
    assert_eq!(
        reports.len(),
        2,
        "one interim and one final report:\n{text}"
    );
    for (k, report) in reports.iter().enumerate() {
        let [wakeup, request, rps] = &report.blocks;
        assert_eq!(
            [
                wakeup.title.as_str(),
                request.title.as_str(),
                rps.title.as_str()
            ],
            ["Wakeup Latencies", "Request Latencies", "RPS"]
        );
        for b in &report.blocks {
            assert_eq!(b.runtime, k as u64 + 1);
            check_block(b);
            let stars: Vec<f64> = b.rows.iter().filter(|r| r.3).map(|r| r.0).collect();
            assert_eq!(stars, [if b.title == "RPS" { 50.0 } else { 99.0 }]);
        }
        assert_eq!(rps.total, k as u64 + 1, "one RPS sample per second");
        assert!(request.total > 0, "{backend}: no request samples");
        // Every request is a wakeup sample, sub-µs ones too (tokio hands off to a task
        // on the same runtime thread in about 100 ns: dropping sub-µs samples left it
        // with none at all).
        assert!(wakeup.total > 0, "{backend}: no wakeup samples:\n{text}");
    }
    let [interim, last] = &reports[..] else {
        unreachable!()
    };
    assert_eq!(interim.closing.0, "current rps");
    assert_eq!(last.closing.0, "average rps");
    let average = last.closing.1;
    assert!(average > 0.0);
    // Samples are requests (minus 0 µs ones): never more than average × runtime
    // (the average divides by the measured time since zeroing, which can be a
    // little longer than the nominal 2 s: allow 2 %).
    let requests = (average * 2.0 * 1.02).ceil() as u64 + 1;
    assert!(last.blocks[0].total <= requests && last.blocks[1].total <= requests);
    assert!(last.blocks[2].min as f64 <= average && average <= last.blocks[2].max as f64);
}

#[test]
fn threads_report_parses_back() {
    parse_back("threads");
}

#[test]
fn tokio_report_parses_back() {
    parse_back("tokio");
}

#[test]
fn green_report_parses_back() {
    parse_back("green");
}

fn temp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// `--trace` writes Chrome trace-event JSON: one named track per runtime
/// worker, a complete event per task run, wakeup instants with flow arrows.
#[test]
fn green_trace_is_chrome_trace_json() {
    let path = temp("schbench-trace.json");
    let out = schbench(
        &[
            "--backend",
            "green",
            "--workers",
            "2",
            "-L",
            "-m",
            "1",
            "-t",
            "4",
            "-n",
            "0",
            "-r",
            "1",
            "-w",
            "0",
            "--trace",
        ]
        .iter()
        .copied()
        .chain([path.to_str().unwrap()])
        .collect::<Vec<_>>(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("trace: "), "{}", stdout(&out));
    let text = std::fs::read_to_string(&path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let count = |ph: &str, cat: Option<&str>| {
        events
            .iter()
            .filter(|e| e["ph"] == ph && cat.is_none_or(|c| e["cat"] == c))
            .count()
    };
    let tracks: std::collections::BTreeSet<u64> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    assert_eq!(tracks.len(), 3, "two workers and the outside track");
    let runs = count("X", Some("run"));
    assert!(runs >= 1000, "{runs} run slices");
    assert!(count("i", Some("wakeup")) >= 1000);
    assert!(count("s", None) >= 1000 && count("f", None) >= 1000);
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert!(e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() >= 0.0);
        assert!(e["args"]["id"].is_u64() && e["args"]["nice"].is_i64());
        assert!(e["name"].as_str().unwrap().starts_with("schbench-"));
    }
}

#[test]
fn all_backends_complete_a_one_second_run_with_json_and_plot() {
    let (json, svg) = (temp("schbench-all.json"), temp("schbench-all.svg"));
    let out = schbench(&[
        "--backend",
        "all",
        "-m",
        "1",
        "-t",
        "2",
        "-r",
        "1",
        "-s",
        "0",
        "-L",
        "-n",
        "0",
        "-J",
        "ci",
        "-j",
        json.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for backend in ["threads", "green", "tokio"] {
        assert!(text.contains(&format!("=== backend {backend}")), "{text}");
    }
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "=== comparison ===")
        .collect();
    assert_eq!(table.len(), 5, "{text}");
    assert!(table[2].starts_with("threads") && table[2].ends_with("1.00"));
    assert!(table[3].starts_with("green"));
    assert!(table[4].starts_with("tokio"));

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 3);
    for (obj, backend) in lines.iter().zip(["threads", "green", "tokio"]) {
        assert_eq!(obj["backend"], backend);
        assert_eq!(obj["jobname"], "ci");
        if backend == "green" {
            assert_eq!(obj["features"], "default");
        } else {
            assert!(obj["features"].is_null());
        }
        assert!(obj["average_rps"].as_f64().unwrap() > 0.0);
        assert_eq!(obj["rps"]["total_samples"], 1);
        assert!(
            obj["wakeup_latency"]["total_samples"].as_u64().unwrap() > 0,
            "{backend}: no wakeup samples"
        );
        for key in ["p20", "p50", "p90"] {
            assert!(
                obj["rps"][key].as_u64().unwrap() <= obj["rps"]["max"].as_u64().unwrap(),
                "{backend}: rps {key} above max: {}",
                obj["rps"]
            );
        }
        for key in ["p50", "p90", "p99", "p99_9", "min", "max", "total_samples"] {
            assert!(obj["request_latency"][key].is_u64(), "{key}");
            assert!(obj["wakeup_latency"][key].is_u64(), "{key}");
        }
        assert_eq!(obj["options"]["threads"], 2);
        assert_eq!(obj["options"]["locking"], false);
    }
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.starts_with("<svg")
            && svg.contains("threads wakeup")
            && svg.contains("green")
            && svg.contains("tokio")
    );
}

#[test]
fn pipe_and_paced_modes_run() {
    let two_cpus = CpuSet::allowed().unwrap().len() >= 2; // -M auto needs one for workers
    let runs: Vec<(&[&str], std::process::Child)> = [
        &["--backend", "threads", "-t", "1", "-r", "1", "-p", "4096"][..],
        &["--backend", "tokio", "-t", "1", "-r", "1", "-p", "64"],
        &[
            "--backend",
            "threads",
            "-t",
            "2",
            "-r",
            "1",
            "-R",
            "2000",
            "-s",
            "0",
            "-n",
            "0",
        ],
        // A rate below -m: the message threads take turns (one request a second).
        &[
            "--backend",
            "threads",
            "-m",
            "2",
            "-t",
            "1",
            "-r",
            "2",
            "-R",
            "1",
            "-s",
            "0",
            "-n",
            "0",
        ],
        &[
            "--backend",
            "tokio",
            "-t",
            "2",
            "-r",
            "1",
            "-R",
            "500",
            "-s",
            "0",
            "-n",
            "0",
        ],
        &[
            "--backend",
            "threads",
            "-t",
            "2",
            "-r",
            "1",
            "-M",
            "auto",
            "-C",
            "-n",
            "1",
            "-F",
            "16",
        ],
        &[
            "--backend",
            "tokio",
            "-t",
            "2",
            "-r",
            "1",
            "-M",
            "auto",
            "-n",
            "1",
            "-F",
            "16",
        ],
    ]
    .into_iter()
    .filter(|args| two_cpus || !args.contains(&"auto"))
    .map(|args| {
        let child = Command::new(env!("CARGO_BIN_EXE_schbench"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn schbench");
        (args, child)
    })
    .collect();
    for (args, child) in runs {
        let out = child.wait_with_output().expect("wait for schbench");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let text = stdout(&out);
        let average: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("average rps: "))
            .and_then(|v| v.parse().ok())
            .expect("average rps line");
        assert!(average > 0.0, "{args:?}:\n{text}");
        if let Some(i) = args.iter().position(|a| *a == "-R") {
            let target: f64 = args[i + 1].parse().unwrap();
            assert!(
                average <= target * 1.2,
                "{args:?}: paced run exceeded its rate: {average}"
            );
        }
    }
}

/// Options a run ignores get a note on stderr (the run itself goes ahead).
#[test]
fn ignored_options_get_a_note() {
    let out = schbench(&[
        "--backend",
        "threads",
        "--workers",
        "4",
        "-J",
        "job",
        "--trace-capacity",
        "5",
        "-p",
        "64",
        "-L",
        "-C",
        "-n",
        "1",
        "-t",
        "1",
        "-r",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in [
        "note: --workers applies to the green and tokio backends only",
        "note: -J/--jobname",
        "note: --trace-capacity applies only with --trace",
        "note: -n, -L, -C do not apply in pipe mode",
    ] {
        assert!(err.contains(needle), "no {needle:?} in:\n{err}");
    }
}

/// When the OS refuses tokio a worker thread, tokio's runtime build panics and then
/// waits forever for the threads that did start: the run must end with a clean
/// error instead (address space limited so that 256 thread stacks do not fit).
#[test]
fn tokio_thread_spawn_failure_is_an_error_not_a_hang() {
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -v 262144 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_schbench"))
        .args([
            "--backend",
            "tokio",
            "--workers",
            "256",
            "-t",
            "1",
            "-r",
            "1",
            "-n",
            "0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("schbench hung after a failed tokio thread spawn");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    // tokio's own panic ("OS can't spawn worker thread", raised in tokio's source) must
    // never reach stderr.
    assert!(
        !err.lines()
            .any(|l| l.contains("panicked at") && l.contains("tokio-")),
        "{err}"
    );
    match out.status.code() {
        Some(0) => {} // the limit left room for every thread: the run simply succeeded
        Some(1) => assert!(err.contains("schbench: error: backend tokio: "), "{err}"),
        // The threads tokio did start may themselves hit the address-space limit, before
        // or after the error is printed (an allocation failure aborts): an artefact of
        // how this test starves the process, not of the error path.
        _ => assert!(
            ["allocat", "out of memory"]
                .iter()
                .any(|oom| err.contains(oom)),
            "{:?}: {err}",
            out.status
        ),
    }
}

/// Runs schbench with its address space limited to `kib` KiB (`ulimit -v`), so that a
/// run the options should have refused fails at once instead of filling the machine.
fn schbench_limited(kib: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .args(["-c", &format!("ulimit -v {kib} && exec \"$0\" \"$@\"")])
        .arg(env!("CARGO_BIN_EXE_schbench"))
        .args(args)
        .output()
        .expect("run schbench under sh")
}

/// The run was refused as bad input: exit 2, `needle` in the message, no panic.
fn assert_refused(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// This machine's memory in bytes (`MemTotal` of /proc/meminfo).
fn mem_total() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = info.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    Some(
        kib.trim()
            .trim_end_matches("kB")
            .trim()
            .parse::<u64>()
            .ok()?
            * 1024,
    )
}

/// More OS threads than `vm.max_map_count` leaves room for: std aborts the process
/// when it cannot map a new thread's signal stack, so the threads backend must be
/// refused before it starts (exit 2), not run into that abort.
#[test]
fn threads_beyond_the_mapping_limit_are_refused() {
    let Some(max) = bench_common::limits::max_map_count() else {
        return;
    };
    if bench_common::limits::os_thread_capacity(max, 0) > 65_537 {
        eprintln!("vm.max_map_count = {max} leaves room for 65537 threads: nothing to refuse");
        return;
    }
    let args = [
        "--backend",
        "threads",
        "-m",
        "1",
        "-t",
        "65536",
        "-F",
        "0",
        "-r",
        "1",
    ];
    // Without the check, the run would start threads until the address space runs out.
    assert_refused(&schbench_limited(1 << 20, &args), "vm.max_map_count");
}

/// `--trace-capacity` events of 32 bytes for each of `--workers` runtime workers are
/// allocated when the trace starts: more than the machine holds is bad input (exit 2),
/// not an allocation abort or the OOM killer.
#[test]
fn trace_beyond_memory_is_refused() {
    // 2^24 events × 32 bytes × 256 workers = 128 GiB.
    if mem_total().is_none_or(|m| m >= 128 << 30) {
        return;
    }
    let path = temp("huge-trace.json");
    let path = path.to_str().unwrap();
    let args = [
        "--backend",
        "green",
        "--trace",
        path,
        "--trace-capacity",
        "16777216",
        "--workers",
        "256",
        "-t",
        "1",
        "-r",
        "1",
    ];
    // Without the check, the first 512 MiB ring fails to allocate under this limit.
    assert_refused(
        &schbench_limited(4 << 20, &args),
        "--trace-capacity × --workers needs",
    );
    let _ = std::fs::remove_file(path);
}

/// A reader that goes away (`schbench … | head`) ends the run quietly with
/// status 141, as SIGPIPE ends a C tool, instead of a panic or an error.
#[test]
fn closed_stdout_exits_141_without_a_panic() {
    for backend in ["green", "all"] {
        let out = bench_common::out::run_with_stdout_gone(
            Command::new(env!("CARGO_BIN_EXE_schbench"))
                .args(["--backend", backend, "--workers", "1"])
                .args(["-L", "-m", "1", "-t", "1", "-n", "0", "-r", "1"]),
        )
        .expect("run schbench");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(141), "--backend {backend}: {err}");
        assert!(!err.contains("panicked"), "--backend {backend}: {err}");
    }
    // help is a report too (clap alone would exit 0 quietly)
    let out = bench_common::out::run_with_stdout_gone(
        Command::new(env!("CARGO_BIN_EXE_schbench")).arg("--help"),
    )
    .expect("run schbench --help");
    assert_eq!(out.status.code(), Some(141), "--help: {}", stderr(&out));
}

/// A reader that goes away mid-run (`schbench … | head -1`: the header was
/// read, the first interim report is not) ends the run at that report with
/// status 141, without waiting for the rest of `-r` or for the workers.
#[test]
fn stdout_closed_mid_run_exits_141_at_the_next_report() {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_schbench"))
        .args(["--backend", "green", "--workers", "1"])
        .args(["-L", "-m", "1", "-t", "1", "-n", "0", "-r", "60", "-i", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run schbench");
    let t0 = Instant::now();
    let mut header = String::new();
    BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut header)
        .expect("read the header");
    assert!(header.starts_with("=== backend green"), "{header}");
    let out = child.wait_with_output().expect("wait for schbench");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
}
