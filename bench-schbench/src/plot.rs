//! `--plot FILE.svg`: two panels side by side — latency percentiles per backend on a
//! log scale (wakeup solid, request dashed), and the one-second RPS samples of each
//! backend over time.
//!
//! This module owns the drawing (plotters, SVG backend, no system libraries). It must
//! not compute statistics beyond reading percentiles off the final histograms.

use std::path::Path;

use plotters::prelude::*;

use crate::driver::Outcome;
use crate::hist::LATENCY_PERCENTILES;

const LABELS: [&str; 4] = ["p50", "p90", "p99", "p99.9"];

/// Draws the outcomes into an SVG file at `path`.
pub fn draw(path: &Path, outcomes: &[Outcome]) -> Result<(), String> {
    draw_inner(path, outcomes).map_err(|e| format!("cannot draw {}: {e}", path.display()))
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw_inner(path: &Path, outcomes: &[Outcome]) -> DrawResult {
    let root = SVGBackend::new(path, (1200, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(600);
    latency_panel(&left, outcomes)?;
    rps_panel(&right, outcomes)?;
    root.present()?;
    Ok(())
}

fn latency_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    outcomes: &[Outcome],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let series: Vec<(&str, [u64; 4], [u64; 4])> = outcomes
        .iter()
        .map(|o| {
            let values = |h: &crate::hist::Histogram| {
                let p = h.percentiles(&LATENCY_PERCENTILES);
                [p[0].value, p[1].value, p[2].value, p[3].value].map(|v| v.max(1))
            };
            (
                o.backend,
                values(&o.latencies.wakeup),
                values(&o.latencies.request),
            )
        })
        .collect();
    let top = series
        .iter()
        .flat_map(|(_, w, r)| w.iter().chain(r))
        .copied()
        .max()
        .unwrap_or(1);
    let mut chart = ChartBuilder::on(area)
        .caption("latency percentiles (usec, log scale)", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.3f64..3.3f64, (1u64..top.saturating_mul(2)).log_scale())?;
    chart
        .configure_mesh()
        .x_labels(LABELS.len())
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && (0.0..4.0).contains(&i) {
                LABELS[i as usize].to_string()
            } else {
                String::new()
            }
        })
        .y_desc("usec")
        .draw()?;
    for (i, (name, wakeup, request)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points = |v: &[u64; 4]| {
            v.iter()
                .enumerate()
                .map(|(x, &y)| (x as f64, y))
                .collect::<Vec<_>>()
        };
        chart
            .draw_series(LineSeries::new(points(wakeup), color.stroke_width(2)).point_size(3))?
            .label(format!("{name} wakeup"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
        chart
            .draw_series(DashedLineSeries::new(
                points(request),
                6,
                4,
                color.stroke_width(1),
            ))?
            .label(format!("{name} request"))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(1)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn rps_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    outcomes: &[Outcome],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let seconds = outcomes
        .iter()
        .map(|o| o.rps_series.len())
        .max()
        .unwrap_or(1)
        .max(1) as u64;
    let top = outcomes
        .iter()
        .flat_map(|o| o.rps_series.iter())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1);
    let mut chart = ChartBuilder::on(area)
        .caption("requests per second", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0u64..seconds, 0u64..top + top / 10)?;
    chart
        .configure_mesh()
        .x_desc("second")
        .y_desc("rps")
        .draw()?;
    for (i, o) in outcomes.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points = o
            .rps_series
            .iter()
            .enumerate()
            .map(|(k, &v)| (k as u64 + 1, v));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)).point_size(3))?
            .label(format!("{} (average {:.0})", o.backend, o.average_rps))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
