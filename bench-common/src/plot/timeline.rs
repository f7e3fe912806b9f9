//! A scheduling trace's task runs as a timeline: one row per worker, one
//! bar per run, a colour per task.

use plotters::prelude::*;
use std::path::Path;

/// Draws a scheduling trace's task runs as a timeline: one row per worker,
/// one bar per run, a colour per task (with a legend), over the first
/// `window` of the trace.
pub fn trace_timeline(
    path: &Path,
    title: &str,
    trace: &eevdf_rt::Trace,
    window: std::time::Duration,
) -> Result<(), String> {
    draw_timeline(path, title, trace, window).map_err(|e| format!("{}: {e}", path.display()))
}

fn draw_timeline(
    path: &Path,
    title: &str,
    trace: &eevdf_rt::Trace,
    window: std::time::Duration,
) -> Result<(), Box<dyn std::error::Error>> {
    let end_us = window.as_secs_f64() * 1e6;
    let runs: Vec<_> = trace
        .runs()
        .into_iter()
        .filter(|r| r.start.as_secs_f64() * 1e6 < end_us)
        .collect();
    let mut tasks: Vec<(u64, String)> = Vec::new();
    for r in &runs {
        if !tasks.iter().any(|(id, _)| *id == r.task) {
            let name = r.name.clone().unwrap_or_else(|| format!("task#{}", r.task));
            tasks.push((r.task, format!("{name} (nice {})", r.nice)));
        }
    }
    let workers = trace.workers();
    let root = SVGBackend::new(path, (1100, 160 + 70 * workers as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 18))?;
    let mut chart = ChartBuilder::on(&root)
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..end_us, 0f64..workers as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(workers + 1)
        .y_label_formatter(&|y| {
            let w = y.floor() as usize;
            if (*y - w as f64 - 0.5).abs() < 0.5 && w < workers {
                format!("worker {w}")
            } else {
                String::new()
            }
        })
        .x_desc("µs since the trace started")
        .draw()?;
    let colour = |i: usize| Palette99::pick(i).to_rgba();
    for (i, (id, label)) in tasks.iter().enumerate() {
        let bars = runs.iter().filter(|r| r.task == *id).map(|r| {
            let x0 = r.start.as_secs_f64() * 1e6;
            let x1 = (x0 + r.duration.as_secs_f64() * 1e6).min(end_us);
            let y = r.worker as f64;
            Rectangle::new(
                [(x0, y + 0.15), (x1.max(x0 + 0.5), y + 0.85)],
                colour(i).filled(),
            )
        });
        chart
            .draw_series(bars)?
            .label(label.clone())
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour(i).filled())
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
