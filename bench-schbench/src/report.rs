//! Text output: the backend header line, the original's percentile blocks (byte for
//! byte in format), the `average rps` line and the cross-backend comparison table.
//!
//! This module owns every printed format. It must not compute statistics beyond
//! reading percentiles off a histogram, and must not decide when to print (the driver
//! does).
//!
//! Block format, as the original prints it:
//! ```text
//! Wakeup Latencies percentiles (usec) runtime 10 (s) (172769 total samples)
//! \t  50.0th: 20         (49410 samples)
//! \t* 99.0th: 72         (15506 samples)
//! \t  min=1, max=2058
//! ```
//! i.e. `\t` + (`* ` or two spaces) + `%2.1fth: %-10u (%lu samples)`, then
//! `\t  min=%u, max=%u`.

use std::io::{self, Write};

use crate::hist::{Histogram, Percentile, LATENCY_PERCENTILES, RPS_PERCENTILES};
use crate::stats::Snapshot;

/// Index of the starred latency percentile (99.0).
const LATENCY_STAR: usize = 2;
/// Index of the starred RPS percentile (50.0).
const RPS_STAR: usize = 1;

/// The line that opens a backend's output: `=== backend NAME (DETAILS) ===`.
pub fn header(name: &str, details: &str) -> String {
    if details.is_empty() {
        format!("=== backend {name} ===")
    } else {
        format!("=== backend {name} ({details}) ===")
    }
}

fn write_block(
    out: &mut dyn Write,
    title: &str,
    units: &str,
    runtime: u64,
    hist: &Histogram,
    pcts: &[f64],
    star: usize,
) -> io::Result<()> {
    writeln!(
        out,
        "{title} percentiles ({units}) runtime {runtime} (s) ({} total samples)",
        hist.total()
    )?;
    for (
        i,
        Percentile {
            pct,
            value,
            samples,
        },
    ) in hist.percentiles(pcts).into_iter().enumerate()
    {
        let mark = if i == star { "* " } else { "  " };
        writeln!(out, "\t{mark}{pct:2.1}th: {value:<10} ({samples} samples)")?;
    }
    writeln!(out, "\t  min={}, max={}", hist.min(), hist.max())
}

/// The three blocks of a report: wakeup and request latencies (µs) and RPS.
pub fn write_blocks(
    out: &mut dyn Write,
    runtime: u64,
    latencies: &Snapshot,
    rps: &Histogram,
) -> io::Result<()> {
    write_block(
        out,
        "Wakeup Latencies",
        "usec",
        runtime,
        &latencies.wakeup,
        &LATENCY_PERCENTILES,
        LATENCY_STAR,
    )?;
    write_block(
        out,
        "Request Latencies",
        "usec",
        runtime,
        &latencies.request,
        &LATENCY_PERCENTILES,
        LATENCY_STAR,
    )?;
    write_block(
        out,
        "RPS",
        "requests",
        runtime,
        rps,
        &RPS_PERCENTILES,
        RPS_STAR,
    )
}

/// The last line of an interim report: the last one-second RPS sample.
pub fn write_current_rps(out: &mut dyn Write, rps: u64) -> io::Result<()> {
    writeln!(out, "current rps: {:.2}", rps as f64)
}

/// The last line of a final report.
pub fn write_average_rps(out: &mut dyn Write, average: f64) -> io::Result<()> {
    writeln!(out, "average rps: {average:.2}")
}

/// One backend's figures for the comparison table.
#[derive(Clone, Debug)]
pub struct Row<'a> {
    /// Backend name.
    pub backend: &'a str,
    /// Its `average rps`.
    pub average_rps: f64,
    /// Final latency histograms.
    pub latencies: &'a Snapshot,
}

/// The comparison table printed after `--backend all`: average RPS, wakeup and request
/// p50/p99 (µs; `-` for a histogram without samples), and RPS as a ratio to `threads`
/// (`-` when threads did not run or did no requests).
pub fn write_comparison(out: &mut dyn Write, rows: &[Row<'_>]) -> io::Result<()> {
    let base = rows
        .iter()
        .find(|r| r.backend == "threads")
        .map(|r| r.average_rps)
        .filter(|&r| r > 0.0);
    writeln!(out, "=== comparison ===")?;
    writeln!(
        out,
        "{:<10} {:>14} {:>10} {:>10} {:>10} {:>10} {:>11}",
        "backend", "average rps", "wake p50", "wake p99", "req p50", "req p99", "vs threads"
    )?;
    for row in rows {
        let p50_p99 = |h: &Histogram| -> [String; 2] {
            if h.total() == 0 {
                return ["-".into(), "-".into()];
            }
            let p = h.percentiles(&[50.0, 99.0]);
            [p[0].value.to_string(), p[1].value.to_string()]
        };
        let (wake, req) = (
            p50_p99(&row.latencies.wakeup),
            p50_p99(&row.latencies.request),
        );
        let ratio = base.map_or_else(
            || "-".to_string(),
            |b| format!("{:.2}", row.average_rps / b),
        );
        writeln!(
            out,
            "{:<10} {:>14.2} {:>10} {:>10} {:>10} {:>10} {:>11}",
            row.backend, row.average_rps, wake[0], wake[1], req[0], req[1], ratio
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
        let mut buf = Vec::new();
        f(&mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn rps_block_matches_the_original_layout() {
        // The example in docs/benchmarks.md ("Output format"): 11 samples whose 20/50/90th fall in these buckets.
        let mut rps = Histogram::new();
        for v in [
            16273, 16300, 16864, 17000, 17100, 17184, 17500, 17600, 17700, 17888, 18045,
        ] {
            rps.record(v);
        }
        let out = text(|w| write_block(w, "RPS", "requests", 10, &rps, &RPS_PERCENTILES, RPS_STAR));
        assert_eq!(
            out,
            "RPS percentiles (requests) runtime 10 (s) (11 total samples)\n\
             \t  20.0th: 16864      (3 samples)\n\
             \t* 50.0th: 17184      (3 samples)\n\
             \t  90.0th: 17888      (4 samples)\n\
             \t  min=16273, max=18045\n"
        );
    }

    #[test]
    fn latency_blocks_star_the_99th() {
        let mut snap = Snapshot::default();
        (1..=100).for_each(|v| snap.wakeup.record(v));
        snap.request.record(185);
        let out = text(|w| write_blocks(w, 3, &snap, &Histogram::new()));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "Wakeup Latencies percentiles (usec) runtime 3 (s) (100 total samples)"
        );
        assert_eq!(lines[1], "\t  50.0th: 50         (50 samples)");
        assert_eq!(lines[3], "\t* 99.0th: 99         (9 samples)");
        assert_eq!(lines[4], "\t  99.9th: 100        (1 samples)");
        assert_eq!(lines[5], "\t  min=1, max=100");
        assert_eq!(
            lines[6],
            "Request Latencies percentiles (usec) runtime 3 (s) (1 total samples)"
        );
        assert_eq!(
            lines[12],
            "RPS percentiles (requests) runtime 3 (s) (0 total samples)"
        );
        assert_eq!(lines[16], "\t  min=0, max=0");
        assert_eq!(
            text(|w| write_average_rps(w, 17353.0)),
            "average rps: 17353.00\n"
        );
    }

    #[test]
    fn comparison_ratios_to_threads() {
        let snap = Snapshot::default();
        let rows = [
            Row {
                backend: "threads",
                average_rps: 1000.0,
                latencies: &snap,
            },
            Row {
                backend: "tokio",
                average_rps: 500.0,
                latencies: &snap,
            },
        ];
        let out = text(|w| write_comparison(w, &rows));
        assert!(out.lines().nth(2).unwrap().ends_with("1.00"));
        assert!(out.lines().nth(3).unwrap().ends_with("0.50"));
        let no_samples: Vec<&str> = out.lines().nth(3).unwrap().split_whitespace().collect();
        assert_eq!(no_samples[2..6], ["-", "-", "-", "-"], "empty, not 0");
        assert_eq!(
            header("tokio", "workers 2"),
            "=== backend tokio (workers 2) ==="
        );
    }
}
