//! Latency percentile curves on log–log axes beside a bar chart of
//! throughput ([`latency_and_throughput`]), for the examples.

use hdrhistogram::Histogram;
use plotters::prelude::*;
use std::path::Path;

/// One runtime's result: its latency histogram (ns) and its throughput.
pub struct Side<'a> {
    /// Legend text.
    pub name: &'a str,
    /// Latencies in nanoseconds.
    pub latency: &'a Histogram<u64>,
    /// The value of the bar on the right.
    pub throughput: f64,
}

/// Draws, side by side, every side's latency percentiles (x: percentile on
/// a "nines" scale, p0 … p99.99; y: µs, log scale) and a bar per side of
/// `throughput_desc`.
pub fn latency_and_throughput(
    path: &Path,
    title: &str,
    throughput_desc: &str,
    sides: &[Side<'_>],
) -> Result<(), String> {
    draw(path, title, throughput_desc, sides).map_err(|e| format!("{}: {e}", path.display()))
}

fn draw(
    path: &Path,
    title: &str,
    throughput_desc: &str,
    sides: &[Side<'_>],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1100, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 20))?;
    let (left, right) = root.split_horizontally(760);

    // Curves on a "nines" axis (x = −log10(1 − q): p90 at 1, p99 at 2 …),
    // from p0 to the deepest percentile with at least ~10 samples beyond it.
    let max_nines = sides
        .iter()
        .map(|s| (s.latency.len().max(1) as f64 / 10.0).log10())
        .fold(1.0f64, f64::max)
        .clamp(1.0, 5.0);
    let x_lo = 0.0; // p0: the minimum
    let mut curves = Vec::new();
    for s in sides.iter().filter(|s| !s.latency.is_empty()) {
        let pts: Vec<(f64, f64)> = (0..=200)
            .map(|i| x_lo + (max_nines - x_lo) * i as f64 / 200.0)
            .map(|x| {
                let q = 1.0 - 10f64.powf(-x);
                (x, (s.latency.value_at_quantile(q) as f64 / 1e3).max(0.1))
            })
            .collect();
        curves.push((s.name, pts));
    }
    let (y_lo, y_hi) = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|&(_, y)| y))
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), y| {
            (lo.min(y), hi.max(y))
        });
    let (y_lo, y_hi) = if y_lo.is_finite() {
        (y_lo / 1.5, y_hi * 1.5)
    } else {
        (1.0, 10.0)
    };
    let mut chart = ChartBuilder::on(&left)
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .caption("request latency by percentile", ("sans-serif", 16))
        .build_cartesian_2d(x_lo..max_nines, (y_lo..y_hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("latency (µs, log scale)")
        .light_line_style(TRANSPARENT)
        .x_labels(max_nines.ceil() as usize + 1)
        .x_label_formatter(&|x: &f64| {
            // Whole numbers of nines: p0, p90, p99, p99.9 …
            match x.round() as i32 {
                _ if (x - x.round()).abs() > 1e-6 => String::new(),
                0 => "p0".into(),
                n => format!("p{}", 100.0 - 100.0 * 10f64.powi(-n)),
            }
        })
        .y_label_formatter(&|y: &f64| format!("{y:.0}"))
        .draw()?;
    for (i, (name, pts)) in curves.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;

    // Bars: throughput per side.
    let top = sides.iter().map(|s| s.throughput).fold(0.0, f64::max) * 1.15 + 1.0;
    let n = sides.len().max(1) as f64;
    let names: Vec<String> = sides.iter().map(|s| s.name.to_string()).collect();
    let mut bars = ChartBuilder::on(&right)
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .caption(throughput_desc, ("sans-serif", 16))
        .build_cartesian_2d(-0.5f64..n - 0.5, 0.0..top)?;
    bars.configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .x_labels(sides.len() * 2 + 1)
        .x_label_formatter(&super::category_labels(names))
        .y_label_formatter(&|y: &f64| format!("{y:.0}"))
        .draw()?;
    bars.draw_series(sides.iter().enumerate().map(|(i, s)| {
        let x = i as f64;
        Rectangle::new(
            [(x - 0.3, 0.0), (x + 0.3, s.throughput.max(0.0))],
            Palette99::pick(i).to_rgba().filled(),
        )
    }))?;
    root.present()?;
    Ok(())
}
