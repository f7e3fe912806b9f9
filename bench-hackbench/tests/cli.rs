//! The `hackbench` binary as a user runs it: exit codes, messages, and tiny
//! runs of every mode through the command line.

use std::path::Path;
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hackbench"))
        .args(args)
        .output()
        .expect("the hackbench binary runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs `hackbench` with the words of `line` followed by each `(flag,
/// path)` of `files`, asserts that it succeeded and returns its stdout.
fn succeeds(line: &str, files: &[(&str, &Path)]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hackbench"));
    cmd.args(line.split_whitespace());
    for (flag, path) in files {
        cmd.arg(flag).arg(path);
    }
    let o = cmd.output().expect("the hackbench binary runs");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{line}\n{out}\n{err}");
    out
}

/// Asserts exit code 2, a message on stderr containing `needle`, and no panic.
fn rejects(args: &[&str], needle: &str) {
    let o = run(args);
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{args:?}\nstdout: {out}\nstderr: {err}"
    );
    assert!(
        err.contains(needle),
        "{args:?}: stderr lacks {needle:?}: {err}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn bad_input_exits_2_with_a_message() {
    rejects(&["--no-such-option"], "--no-such-option");
    rejects(&["-g", "0"], "--groups");
    rejects(&["-f", "0"], "--fds");
    rejects(&["-s", "0"], "--datasize");
    rejects(&["-g", "many"], "many");
    rejects(&["-p", "-i"], "cannot be used with");
    rejects(&["-T", "-P"], "cannot be used with");
    rejects(&["--backend", "fibers"], "fibers");
    rejects(
        &["-T", "--backend", "tokio"],
        "-T selects the threads backend",
    );
    rejects(&["--workers", "2"], "--workers");
    rejects(&["--latency", "-l", "10"], "-l");
    rejects(&["--latency", "--backend", "processes"], "processes");
    rejects(&["--latency", "--columns", "bg3"], "green");
    rejects(&["--latency", "--nice-levels", "-30"], "-30");
    rejects(&["--spawn", "--duration", "soon"], "soon");
    rejects(&["-T", "--trace", "t.json"], "--trace");
    rejects(
        &["--backend", "green", "--spawn", "--trace", "t.json"],
        "--trace",
    );
    rejects(&["-T", "--json", "/nonexistent-dir/x.json"], "--json");
    // The channel transport is green-only.
    for backend in [
        &["-T"][..],
        &["-P"],
        &["--backend", "tokio"],
        &["--latency"],
    ] {
        let mut args = vec!["--transport", "channel", "-g", "1", "-f", "2", "-l", "10"];
        if backend == ["--latency"] {
            args.truncate(6);
        }
        args.extend(backend);
        rejects(&args, "green");
    }
    rejects(&["--transport", "pigeon"], "pigeon");
    rejects(&["--transport", "pipe", "-i"], "cannot be used with");
    // Feature lists are validated before anything runs.
    rejects(
        &["--backend", "green", "--features", "NO_SUCH_THING"],
        "SUCH_THING",
    );
    rejects(
        &["--spawn", "--backend", "green", "--features", "FAST"],
        "FAST",
    );
    rejects(
        &[
            "--latency",
            "--backend",
            "green",
            "--columns",
            "default;BOGUS",
        ],
        "BOGUS",
    );
    rejects(&["--backend", "green", "--workers", "300"], "workers");
}

/// Each rejection happens before anything runs: nothing on stdout (no
/// "Running ..." banner, no table of zeros).
fn rejects_up_front(line: &str, needle: &str) {
    let args: Vec<&str> = line.split_whitespace().collect();
    rejects(&args, needle);
    let (out, _) = text(&run(&args));
    assert!(out.is_empty(), "{line}: printed {out}");
}

#[test]
fn latency_runs_need_one_cycle_and_one_interval_range() {
    for line in [
        "--latency -g 1 -f 1 --duration 0.3s --interval 10s",
        "--latency -g 1 -f 1 --duration 0.5ms",
        "--latency -g 1 -f 1 --duration 1ns",
    ] {
        rejects_up_front(line, "--duration");
    }
    for v in ["0", "1ns", "11s"] {
        rejects_up_front(
            &format!("--latency --interval {v}"),
            "must be between 1us and 10s",
        );
    }
}

#[test]
fn options_of_another_mode_are_usage_errors() {
    for (line, needle) in [
        ("--spawn -l 1 -g 5", "-g/--groups"),
        ("--spawn -l 1 -s 500", "-s/--datasize"),
        ("--spawn -l 1 -p", "-p/--pipe"),
        ("--spawn -l 1 --transport tcp", "--transport"),
        (
            "--spawn -l 1 --interval 5ms",
            "--interval applies to --latency only",
        ),
        ("--spawn -l 1 --nice-levels 0", "--nice-levels"),
        ("--spawn -l 1 --columns default", "--columns"),
        ("--spawn -l 1 --probe-slice 1ms", "--probe-slice"),
        (
            "--latency --duration 0.01 --spawners 4",
            "--spawners applies to --spawn only",
        ),
    ] {
        rejects_up_front(line, needle);
    }
}

#[test]
fn green_workers_beyond_the_runtime_maximum_fail_before_running() {
    rejects_up_front(
        "--backend green --workers 257 -g 1 -f 1 -l 1",
        "1..=256 for the green backend",
    );
    rejects_up_front("-l 0", "1..=18446744073709551615");
}

/// More OS threads than `vm.max_map_count` leaves room for (2 × -f per group
/// on the threads backend): std aborts the process when it cannot map a new
/// thread's signal stack, so the options are refused up front (exit 2). Run
/// under `ulimit -v`, so that a missing check fails at once instead of
/// starting threads by the thousand.
#[test]
fn threads_beyond_the_mapping_limit_fail_before_running() {
    let Some(max) = bench_common::limits::max_map_count() else {
        return;
    };
    // -g 10000 -f 1000: 20,000,000 threads.
    if bench_common::limits::os_thread_capacity(max, 0) >= 20_000_000 {
        return;
    }
    for args in [
        "-T -g 10000 -f 1000 -l 1",
        "--latency -T -g 10000 -f 1000 --duration 1ms",
    ] {
        let o = Command::new("sh")
            .args(["-c", "ulimit -v 1048576 && exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_hackbench"))
            .args(args.split_whitespace())
            .output()
            .expect("sh runs hackbench");
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args}\n{out}\n{err}");
        assert!(err.contains("vm.max_map_count"), "{args}: {err}");
        assert!(!err.contains("panicked"), "{args}: {err}");
    }
}

#[test]
fn conflicting_columns_are_usage_errors() {
    for (cols, needle) in [
        ("slice=100us --probe-slice 1ms", "--probe-slice"),
        ("slice=100us,slice=200us", "slice twice"),
        ("NO_DELAY_DEQUEUE,DELAY_DEQUEUE", "DELAY_DEQUEUE twice"),
    ] {
        rejects_up_front(
            &format!("--latency --backend green -g 1 -f 1 --duration 0.01 --columns {cols}"),
            needle,
        );
    }
}

#[test]
fn an_uncreatable_plot_fails_before_running() {
    rejects_up_front("-T -g 1 -f 1 -l 1 --plot /nonexistent-dir/h.svg", "--plot");
}

#[test]
fn green_runs_every_transport_and_names_its_features() {
    for transport in ["", "-p", "-i", "--transport channel", "--transport unix"] {
        let out = succeeds(
            &format!(
                "--backend green -g 1 -f 2 -l 10 --workers 2 --features NO_RUN_TO_PARITY {transport}"
            ),
            &[],
        );
        assert!(out.contains("Running in green mode with 1 groups"), "{out}");
        assert!(
            out.contains("(2 worker threads, eevdf-rt features: NO_RUN_TO_PARITY"),
            "{out}"
        );
        assert_eq!(out.matches("Time: ").count(), 1, "{out}");
    }
    // `all` with channels runs green alone (the others have no channels),
    // with a note on stderr for each backend left out; stdout has none.
    let o = run(&[
        "--backend",
        "all",
        "--transport",
        "channel",
        "-g",
        "1",
        "-f",
        "2",
        "-l",
        "10",
        "--stats",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert_eq!(out.matches("Time: ").count(), 1, "{out}");
    assert!(!out.contains("note:"), "notes belong on stderr: {out}");
    for skipped in ["processes", "threads", "tokio"] {
        assert!(
            err.contains(&format!(
                "note: --transport channel does not apply to the {skipped} backend"
            )),
            "{err}"
        );
    }
    assert!(out.contains("eevdf-rt channels"), "{out}");
    assert!(out.contains("context_switches"), "--stats: {out}");
}

#[test]
fn help_documents_every_mode() {
    let o = run(&["--help"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0));
    for needle in [
        "--latency",
        "--spawn",
        "--backend",
        "--nice-levels",
        "--plot",
        "-T",
        // Ranges, mode rules and --columns conflicts are documented.
        "1us..=10s",
        "1..=256",
        "Options belong to modes",
        "slice= with --probe-slice",
        // What the comparison columns mean, and where notes go.
        "'vs tokio' columns are speed-ups",
        "above 1 = faster",
        "Notes (what --backend all leaves out) go to",
        // The spawn test's deadline.
        "deadline before every spawn, its first included",
    ] {
        assert!(out.contains(needle), "--help lacks {needle:?}");
    }
}

/// `--latency --backend all` leaves processes out with a note on stderr,
/// not in the report on stdout.
#[test]
fn notes_go_to_stderr() {
    let o = run(&[
        "--latency",
        "--backend",
        "all",
        "--duration",
        "0.02",
        "-g",
        "1",
        "-f",
        "1",
        "--nice-levels",
        "0",
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    assert!(
        err.contains("note: --latency does not apply to the processes backend"),
        "{err}"
    );
    assert!(!out.contains("does not apply to the processes"), "{out}");
}

/// Every "vs X" column is a speed-up (X's time / this time; above 1 =
/// faster), as the title line of the table says: the threads row is 1.00x
/// vs threads, and each row's "vs threads" is threads' time / its time.
#[test]
fn comparison_columns_are_speed_ups() {
    let out = succeeds("--backend all -g 1 -f 4 -l 3000", &[]);
    assert!(
        out.contains("; vs X = X's time / this time (speed-up: above 1 = faster than X)"),
        "{out}"
    );
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.starts_with("Comparison"))
        .skip(2)
        .take(4)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let time = |name: &str| -> f64 {
        rows.iter().find(|r| r[0] == name).unwrap()[1]
            .parse()
            .unwrap()
    };
    for r in &rows {
        let t: f64 = r[1].parse().unwrap();
        if t >= 0.02 && time("threads") >= 0.02 {
            // Printed to 3 decimals: compare loosely.
            let shown: f64 = r[2].trim_end_matches('x').parse().unwrap();
            let expected = time("threads") / t;
            assert!(
                (shown - expected).abs() <= 0.1 * expected + 0.02,
                "{}: {shown} vs {expected}\n{out}",
                r[0]
            );
        }
    }
    assert_eq!(rows.iter().find(|r| r[0] == "threads").unwrap()[2], "1.00x");
    assert_eq!(rows.iter().find(|r| r[0] == "tokio").unwrap()[3], "1.00x");
}

/// Durations are printed exactly, in the options' own syntax, not rounded
/// to 0.1 s or to whole microseconds.
#[test]
fn durations_print_exactly() {
    let out = succeeds(
        "--latency --backend threads --duration 0.03 --interval 1500ns -g 1 -f 1 --nice-levels 0",
        &[],
    );
    assert!(
        out.contains("1 probe(s), interval 1500ns, duration 30ms;"),
        "{out}"
    );
    let out = succeeds(
        "--latency --backend green --duration 0.05 -g 1 -f 1 --nice-levels 0 --workers 1",
        &[],
    );
    assert!(out.contains("interval 1ms, duration 50ms;"), "{out}");
    assert!(out.contains("probes every 1ms for 50ms under"), "{out}");
    let out = succeeds("--spawn --backend threads --duration 0.05", &[]);
    assert!(
        out.contains("Spawn test, threads backend: 1 spawner(s), duration 50ms\n"),
        "{out}"
    );
}

/// `--spawn --duration` ends near the deadline however many spawners fork:
/// each checks the deadline before every fork, the first included, and
/// waits for its turn where it can see it. 2048 spawners used to run their
/// first forks one after another, each slower for the 2048 threads (about
/// 30 s on a 2-CPU machine for a 0.1 s run); the bound here is generous.
#[test]
fn many_process_spawners_stop_near_the_deadline() {
    let started = std::time::Instant::now();
    let out = succeeds(
        "--spawn --backend processes --spawners 2048 --duration 0.1",
        &[],
    );
    let wall = started.elapsed();
    let measured: f64 = out
        .split(" spawns in ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no 'spawns in S s': {out}"));
    assert!(
        (0.1..10.0).contains(&measured),
        "measured {measured} s: {out}"
    );
    assert!(wall.as_secs() < 30, "{wall:?}: {out}");
}

#[test]
fn tiny_hackbench_on_every_backend_and_transport() {
    for transport in [None, Some("-p"), Some("-i")] {
        let mut args = vec!["--backend", "all", "-g", "1", "-f", "2", "-l", "10"];
        args.extend(transport);
        let o = run(&args);
        let (out, err) = text(&o);
        assert!(o.status.success(), "{args:?}\n{out}\n{err}");
        assert_eq!(out.matches("Time: ").count(), 4, "{out}");
        assert!(out.contains(
            "Running in process mode with 1 groups using 4 file descriptors each (== 4 tasks)"
        ));
        assert!(out.contains("Running in threaded mode"));
        assert!(out.contains("Each sender will pass 10 messages of 100 bytes"));
        assert!(out.contains("Running in green mode"), "{out}");
        assert!(
            out.contains("vs threads") && out.contains("vs tokio"),
            "{out}"
        );
    }
    let o = run(&["-T", "-g", "1", "-f", "2", "-l", "10"]);
    assert!(o.status.success());
    assert!(text(&o).0.contains("threaded mode"));
}

/// `--json` writes one object per report row; `--trace` a Chrome trace.
#[test]
fn json_rows_and_a_green_trace() {
    let dir = std::env::temp_dir().join(format!("hackbench-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, trace) = (dir.join("rows.json"), dir.join("trace.json"));
    succeeds(
        "--backend all -g 1 -f 2 -l 50",
        &[("--json", &json), ("--trace", &trace)],
    );
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let backends: Vec<&str> = rows
        .iter()
        .map(|r| r["backend"].as_str().unwrap())
        .collect();
    assert_eq!(backends, ["processes", "threads", "green", "tokio"]);
    for r in &rows {
        assert_eq!(r["mode"], "hackbench");
        assert_eq!(r["ok"], true);
        // 1 group of 2 senders and 2 receivers, 50 loops: 2·2·50 messages.
        assert_eq!(r["messages"], 200, "{r}");
        assert!(r["time_s"].as_f64().unwrap() > 0.0);
        let policy = if r["backend"] == "tokio" {
            serde_json::Value::Null
        } else {
            "normal".into()
        };
        assert_eq!(r["policy"], policy, "{r}");
        // Worker threads only for the runtimes; feature switches only for
        // green (default: null there too).
        let runtime = r["backend"] == "green" || r["backend"] == "tokio";
        assert_eq!(r["workers"].is_u64(), runtime, "{r}");
        assert!(r["features"].is_null(), "{r}");
    }
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["ph"] == "X"));
    assert!(events.iter().any(|e| e["cat"] == "wakeup"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn tiny_latency_and_spawn_runs_with_plots() {
    let dir = std::env::temp_dir().join(format!("hackbench-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lat_svg = dir.join("latency.svg");
    let out = succeeds(
        "--latency --backend all --duration 0.3 -g 1 -f 2",
        &[("--plot", &lat_svg)],
    );
    assert!(out.contains("Latency mode, threads backend"), "{out}");
    assert!(out.contains("Latency mode, tokio backend"), "{out}");
    assert!(out.contains("tokio has no task priorities"), "{out}");
    assert!(out.contains("Latency mode, green backend"), "{out}");
    assert!(out.contains("| nice | threads | green | tokio |"), "{out}");
    let svg = std::fs::read_to_string(&lat_svg).unwrap();
    assert!(svg.contains("<svg") && svg.contains("green"));

    // Green's feature columns: a Markdown table with one column each.
    let out = succeeds(
        "--latency --backend green --duration 0.3 -g 1 -f 2 \
         --columns default;TICK_ELIGIBLE;slice=100us",
        &[],
    );
    assert!(
        out.contains("| nice | default | TICK_ELIGIBLE | slice=100us |"),
        "{out}"
    );
    assert!(out.contains("| preemptions"), "{out}");

    // One column that is not the default is named in the table too.
    for col in ["NO_DELAY_DEQUEUE", "slice=100us"] {
        let out = succeeds(
            &format!("--latency --backend green --duration 0.05 -g 1 -f 1 --columns {col}"),
            &[],
        );
        assert!(out.contains(&format!("column '{col}'")), "{out}");
        assert!(out.contains(&format!("| nice | {col} |")), "{out}");
    }

    let spawn_svg = dir.join("spawn.svg");
    let out = succeeds(
        "--spawn --backend all --duration 0.3",
        &[("--plot", &spawn_svg)],
    );
    // 5 reports (green twice: SPAWN_LOCAL and NO_SPAWN_LOCAL), then the table.
    assert_eq!(out.matches(" spawns in ").count(), 5, "{out}");
    assert!(
        out.contains(
            "Comparison; vs X = this spawns/s / X's spawns/s (speed-up: above 1 = faster than X)"
        ),
        "{out}"
    );
    assert!(out.contains("green NO_SPAWN_LOCAL"), "{out}");
    assert!(out.contains("spawned remote"), "{out}");
    let svg = std::fs::read_to_string(&spawn_svg).unwrap();
    assert!(svg.contains("<svg") && svg.contains("green SPAWN_LOCAL"));

    let hb_svg = dir.join("hackbench.svg");
    succeeds("--backend all -g 1 -f 2 -l 10", &[("--plot", &hb_svg)]);
    let svg = std::fs::read_to_string(&hb_svg).unwrap();
    assert!(svg.contains("<svg") && svg.contains("green"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reader that goes away (`hackbench … | head`) ends the run quietly with
/// status 141, as SIGPIPE ends a C tool, instead of a panic.
#[test]
fn closed_stdout_exits_141_without_a_panic() {
    for args in ["--backend threads", "--backend all --workers 1", "--help"] {
        let out = bench_common::out::run_with_stdout_gone(
            Command::new(env!("CARGO_BIN_EXE_hackbench"))
                .args(["-g", "1", "-l", "10"])
                .args(args.split_whitespace()),
        )
        .expect("the hackbench binary runs");
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(141), "{args}: {err}");
        assert!(!err.contains("panicked"), "{args}: {err}");
    }
}
