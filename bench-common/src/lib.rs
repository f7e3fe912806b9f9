//! What the benchmark ports and the examples share, so that each exists once:
//! latency histograms and the way they are printed ([`hist`]), every SVG
//! plot they draw ([`plot`]), and writing the report to stdout ([`mod@out`]:
//! a closed reader ends the program with status 141, not a panic), and the
//! estimate of how many OS threads a process can start ([`limits`]), which
//! the benchmarks check their thread counts against.
//!
//! Owns: no workload and no measurement; only turning numbers into text and
//! pictures, and that one limit. (schbench keeps its own bucketed histogram
//! in `bench-schbench`: its bucket layout *is* the original tool's output
//! format.)

pub mod hist;
pub mod limits;
pub mod out;
pub mod plot;
