//! The `schbench` binary: parse options, run the chosen backends one after the other,
//! then print the comparison and write JSON and plots.
//!
//! Exit status: 0 on success, 2 on bad input (never a panic), 1 when a run fails.

use bench_common::out;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use bench_schbench::backend::{self, Backend};
use bench_schbench::cpus::CpuSet;
use bench_schbench::driver::{self, Outcome};
use bench_schbench::opts::{BackendChoice, ParseError, Plan, UsageError};
use bench_schbench::{json, plot, report};

fn main() -> ExitCode {
    let allowed = match CpuSet::allowed() {
        Ok(set) => set,
        Err(e) => return fail(1, &format!("cannot read this process's CPU affinity: {e}")),
    };
    let plan = match Plan::parse(std::env::args_os(), &allowed) {
        Ok(plan) => plan,
        Err(ParseError::Clap(clap_error)) => bench_common::out::exit_clap(clap_error),
        Err(ParseError::Usage(UsageError(msg))) => return usage_error(&msg),
    };
    let backends = match backend::select(&plan) {
        Ok(backends) => backends,
        Err(UsageError(msg)) => return usage_error(&msg),
    };
    for note in &plan.notes {
        eprintln!("schbench: note: {note}");
    }
    // Open output files before running, so a bad path fails in a second, not a run later.
    let json_file = match plan.json.as_ref().map(|path| (path, File::create(path))) {
        None => None,
        Some((_, Ok(file))) => Some(file),
        Some((path, Err(e))) => {
            return usage_error(&format!("cannot create -j file {}: {e}", path.display()))
        }
    };
    for (option, path) in [("--plot", &plan.plot), ("--trace", &plan.trace)] {
        if let Some(path) = path {
            if let Err(e) = File::create(path) {
                return usage_error(&format!(
                    "cannot create {option} file {}: {e}",
                    path.display()
                ));
            }
        }
    }
    match run(&plan, &backends, json_file) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => fail(1, &msg),
    }
}

fn run(plan: &Plan, backends: &[Box<dyn Backend>], json_file: Option<File>) -> Result<(), String> {
    // A closed reader (`schbench … | head`) ends the program quietly at the
    // failed write, with status 141 and the workers still running.
    let mut out = out::lock();
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(backends.len());
    for backend in backends {
        let outcome = driver::run(backend.as_ref(), plan, &mut out)
            .map_err(|e| format!("backend {}: {e}", backend.name()))?;
        outcomes.push(outcome);
    }
    if plan.backend == BackendChoice::All {
        let rows: Vec<report::Row<'_>> = outcomes
            .iter()
            .map(|o| report::Row {
                backend: o.backend,
                average_rps: o.average_rps,
                latencies: &o.latencies,
            })
            .collect();
        report::write_comparison(&mut out, &rows).map_err(|e| stdout_error(&e))?;
    }
    out.flush().map_err(|e| stdout_error(&e))?;
    if let Some(file) = json_file {
        json::write_lines(&mut BufWriter::new(file), &outcomes, plan)
            .map_err(|e| format!("writing JSON: {e}"))?;
    }
    if let Some(path) = &plan.plot {
        plot::draw(path, &outcomes)?;
    }
    Ok(())
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("schbench: error: {msg}\n\nFor more information, try '--help'.");
    ExitCode::from(2)
}

/// A failed write of the report other than a closed reader (that one ends
/// the program in `out::Stdout`).
fn stdout_error(e: &io::Error) -> String {
    format!("writing to standard output: {e}")
}

fn fail(code: u8, msg: &str) -> ExitCode {
    eprintln!("schbench: error: {msg}");
    ExitCode::from(code)
}
