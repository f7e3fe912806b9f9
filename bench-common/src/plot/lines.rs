//! A few percentiles per series as lines on a log scale, beside one time
//! series per series ([`percentiles_and_series`]): schbench's `--plot`.

use plotters::prelude::*;
use std::path::Path;

/// One percentile line of the left panel.
#[derive(Clone, Debug)]
pub struct Line {
    /// Legend text.
    pub name: String,
    /// One value per percentile label (µs); values below 1 are drawn at 1.
    pub values: Vec<u64>,
    /// Dashed (and thin) instead of solid.
    pub dashed: bool,
    /// Colour index: lines of one backend share it.
    pub colour: usize,
}

/// One time series of the right panel: a value per second.
#[derive(Clone, Debug)]
pub struct TimeSeries {
    /// Legend text.
    pub name: String,
    /// The values, one per second from second 1.
    pub values: Vec<u64>,
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Draws two panels into an SVG file: on the left `lines` over the
/// percentile `labels` (log scale, `left_caption`), on the right `series`
/// over time (`right_caption`, y axis `y_desc`).
pub fn percentiles_and_series(
    path: &Path,
    labels: &[&str],
    left_caption: &str,
    lines: &[Line],
    right_caption: &str,
    y_desc: &str,
    series: &[TimeSeries],
) -> Result<(), String> {
    let draw = || -> DrawResult {
        let root = SVGBackend::new(path, (1200, 480)).into_drawing_area();
        root.fill(&WHITE)?;
        let (left, right) = root.split_horizontally(600);
        percentile_panel(&left, labels, left_caption, lines)?;
        series_panel(&right, right_caption, y_desc, series)?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| format!("cannot draw {}: {e}", path.display()))
}

fn percentile_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    labels: &[&str],
    caption: &str,
    lines: &[Line],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let top = lines
        .iter()
        .flat_map(|l| l.values.iter())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1);
    let n = labels.len() as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.3f64..n - 0.7, (1u64..top.saturating_mul(2)).log_scale())?;
    let names: Vec<String> = labels.iter().map(|s| s.to_string()).collect();
    chart
        .configure_mesh()
        .x_labels(labels.len())
        .x_label_formatter(&super::category_labels(names))
        .y_desc("usec")
        .draw()?;
    for l in lines {
        let color = Palette99::pick(l.colour).to_rgba();
        let points: Vec<(f64, u64)> = l
            .values
            .iter()
            .enumerate()
            .map(|(x, &y)| (x as f64, y.max(1)))
            .collect();
        let width = if l.dashed { 1 } else { 2 };
        if l.dashed {
            chart
                .draw_series(DashedLineSeries::new(
                    points,
                    6,
                    4,
                    color.stroke_width(width),
                ))?
                .label(l.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(width))
                });
        } else {
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(width)).point_size(3))?
                .label(l.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(width))
                });
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn series_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    series: &[TimeSeries],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let seconds = series
        .iter()
        .map(|s| s.values.len())
        .max()
        .unwrap_or(1)
        .max(1) as u64;
    let top = series
        .iter()
        .flat_map(|s| s.values.iter())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0u64..seconds, 0u64..top + top / 10)?;
    chart
        .configure_mesh()
        .x_desc("second")
        .y_desc(y_desc)
        .draw()?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points = s.values.iter().enumerate().map(|(k, &v)| (k as u64 + 1, v));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)).point_size(3))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
