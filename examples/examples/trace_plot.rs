//! Records a scheduling trace of a small, explainable workload and draws
//! its first milliseconds as an SVG timeline (one row per worker, one bar
//! per task run), and optionally writes the trace as Chrome JSON.
//!
//! The workload, on two workers: on worker 0, two CPU hogs at nice 0 and
//! nice 5 share the CPU in the ratio of their weights (1024 : 335); on
//! worker 1, a hog at nice 0 and a "request" task with a 100 µs slice that
//! wakes every 300 µs and preempts the hog at once (PREEMPT_SHORT).
//!
//! ```sh
//! cargo run --release -p examples --example trace_plot -- --svg results/trace/timeline.svg
//! ```

use bench_common::outln;
use clap::Parser;
use examples::{cli, plot};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "Draw the first milliseconds of a scheduling trace as an SVG timeline")]
struct Args {
    /// SVG file to draw (must end in .svg; checked, like --json, before the run)
    #[arg(long, value_name = "FILE.svg", default_value = "trace-timeline.svg")]
    svg: std::path::PathBuf,
    /// Milliseconds of the trace to draw (1 ..= 1000)
    #[arg(long, default_value_t = 6)]
    window_ms: u64,
    /// Also write the whole trace as Chrome JSON (for ui.perfetto.dev)
    #[arg(long, value_name = "FILE.json")]
    json: Option<std::path::PathBuf>,
}

/// Burns CPU until `until`, honouring preemption.
fn hog(until: Instant) {
    while Instant::now() < until {
        for _ in 0..100 {
            std::hint::spin_loop();
        }
        eevdf_rt::preempt_point();
    }
}

fn run(args: &Args) -> Result<(), String> {
    let rt = eevdf_rt::Builder::new()
        .workers(2)
        .build()
        .map_err(|e| e.to_string())?;
    let err = |e: std::io::Error| e.to_string();
    rt.trace_start(1 << 18).map_err(|e| e.to_string())?;
    let until = Instant::now() + Duration::from_millis(args.window_ms + 20);
    let mut handles = Vec::new();
    for (name, nice, worker) in [("hog-a", 0, 0), ("hog-b", 5, 0), ("hog-c", 0, 1)] {
        let h = eevdf_rt::task::Builder::new()
            .name(name)
            .nice(nice)
            .pin(worker)
            .spawn_on(&rt, move || hog(until))
            .map_err(err)?;
        handles.push(h);
    }
    let request = eevdf_rt::task::Builder::new()
        .name("request")
        .slice(Duration::from_micros(100))
        .pin(1)
        .spawn_on(&rt, move || {
            while Instant::now() < until {
                eevdf_rt::sleep(Duration::from_micros(300));
                // 50 µs of work per request.
                let t = Instant::now();
                while t.elapsed() < Duration::from_micros(50) {
                    std::hint::spin_loop();
                }
            }
        })
        .map_err(err)?;
    handles.push(request);
    for h in handles {
        h.join().map_err(|_| "a task panicked")?;
    }
    let trace = rt.trace_stop();
    let title = format!(
        "eevdf-rt trace, first {} ms: worker 0 = nice 0 and nice 5 hogs; worker 1 = hog and a 100 µs-slice request task",
        args.window_ms
    );
    plot::trace_timeline(
        &args.svg,
        &title,
        &trace,
        Duration::from_millis(args.window_ms),
    )?;
    outln!(
        "{} task runs, {} wakeups; timeline written to {}",
        trace.runs().len(),
        trace.wakeups(),
        args.svg.display()
    );
    if let Some(path) = &args.json {
        trace
            .save(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        outln!("trace written to {}", path.display());
    }
    Ok(())
}

/// Checks the options before anything runs.
fn check(args: &Args) -> Result<(), String> {
    cli::check_range("--window-ms", args.window_ms, 1..=1000)?;
    cli::check_output_file_ext("--svg", &args.svg, "svg")?;
    if let Some(path) = &args.json {
        cli::check_output_file("--json", path)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Args = cli::parse();
    if let Err(e) = check(&args) {
        return cli::usage_error("trace_plot", e);
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trace_plot: {e}");
            ExitCode::FAILURE
        }
    }
}
