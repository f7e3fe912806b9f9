//! A grouped bar chart ([`grouped_bars`]): hackbench's time per backend,
//! latency avg/p99 per nice level (log scale) and spawns/s per backend.

use plotters::prelude::*;
use std::path::Path;

/// One coloured set of bars: a value (or a gap) per group.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// One value per group; `None` leaves a gap.
    pub values: Vec<Option<f64>>,
}

/// Draws `series` as bars grouped by `groups` into an SVG file. With
/// `log_y`, the axis is logarithmic (non-positive values are left out).
pub fn grouped_bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[Series],
    log_y: bool,
) -> Result<(), String> {
    draw(path, title, y_desc, groups, series, log_y).map_err(|e| format!("{}: {e}", path.display()))
}

fn draw(
    path: &Path,
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[Series],
    log_y: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let tf = |v: f64| if log_y { v.log10() } else { v };
    let vals: Vec<f64> = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied())
        .filter(|v| v.is_finite() && (!log_y || *v > 0.0))
        .collect();
    let (lo, hi) = if vals.is_empty() {
        (0.0, 1.0)
    } else if log_y {
        let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(0.0, f64::max);
        (tf(min).floor(), tf(max).ceil().max(tf(min).floor() + 1.0))
    } else {
        (
            0.0,
            vals.iter().copied().fold(0.0, f64::max) * 1.15 + f64::EPSILON,
        )
    };
    // Enough decimals to tell the linear axis' labels apart.
    let decimals = (2 - (hi - lo).log10().floor() as i32).clamp(0, 9) as usize;
    let width = 200 + 120 * groups.len().max(1) as u32 * series.len().clamp(1, 6) as u32 / 2;
    let root = SVGBackend::new(path, (width.clamp(640, 1600), 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = groups.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..n - 0.5, lo..hi)?;
    let names = groups.to_vec();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.len() * 2 + 1)
        .x_label_formatter(&super::category_labels(names))
        .y_desc(if log_y {
            format!("{y_desc} (log scale)")
        } else {
            y_desc.to_string()
        })
        .y_label_formatter(&move |y: &f64| {
            if log_y {
                // At most three significant digits: 100, 316, 1000 ...
                let v = 10f64.powf(*y);
                let digits = (3 - v.log10().floor() as i32 - 1).max(0) as usize;
                format!("{v:.digits$}")
            } else {
                format!("{y:.decimals$}")
            }
        })
        .draw()?;
    let w = 0.8 / series.len().max(1) as f64;
    for (j, s) in series.iter().enumerate() {
        let color = Palette99::pick(j).to_rgba();
        let bars = s.values.iter().enumerate().filter_map(|(i, v)| {
            let v = (*v)?;
            if !v.is_finite() || (log_y && v <= 0.0) {
                return None;
            }
            let x0 = i as f64 - 0.4 + j as f64 * w;
            Some(Rectangle::new(
                [(x0, lo), (x0 + w * 0.9, tf(v))],
                color.filled(),
            ))
        });
        chart
            .draw_series(bars)?
            .label(s.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    if series.len() < 2 {
        root.present()?;
        return Ok(());
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
