//! What the benchmark ports and the examples share, so that each exists once:
//! latency histograms and the way they are printed ([`hist`]), every SVG
//! plot they draw ([`plot`]), and writing the report to stdout ([`mod@out`]:
//! a closed reader ends the program with status 141, not a panic).
//!
//! Owns: no workload and no measurement; only turning numbers into text and
//! pictures. (schbench keeps its own bucketed histogram in `bench-schbench`:
//! its bucket layout *is* the original tool's output format.)

pub mod hist;
pub mod out;
pub mod plot;
