//! SVG plots (plotters' SVG backend: no system libraries, text as SVG
//! `<text>`), shared by schbench, hackbench and the examples.
//!
//! Owns: the drawing. [`grouped_bars`] (hackbench: a value per backend or
//! per nice level), [`latency_and_throughput`] (the examples: full latency
//! percentile curves beside throughput bars), [`percentiles_and_series`]
//! (schbench: a few percentiles per backend, solid and dashed, beside a
//! time series per backend), [`trace_timeline`] (a scheduling trace's task
//! runs). Must not: compute statistics beyond reading the values it is
//! given.

mod bars;
mod latency;
mod lines;
mod timeline;

pub use bars::{grouped_bars, Series};
pub use latency::{latency_and_throughput, Side};
pub use lines::{percentiles_and_series, Line, TimeSeries};
pub use timeline::trace_timeline;

/// An x-axis label formatter for categories drawn at x = 0, 1, 2, …:
/// the name at each whole position, nothing between them.
fn category_labels(names: Vec<String>) -> impl Fn(&f64) -> String {
    move |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
            names[i as usize].clone()
        } else {
            String::new()
        }
    }
}
