//! Latency histograms (hdrhistogram, nanoseconds) and the way the examples
//! print them.

pub use hdrhistogram::Histogram;
use std::time::Duration;

/// A histogram of nanoseconds from 1 ns to 100 s at 3 significant digits.
pub fn new() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

/// Records `d` (saturating at the histogram's bound).
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record(d.as_nanos().clamp(1, u64::MAX as u128) as u64);
}

/// Merges histograms made by [`new`].
pub fn merge<'a>(hs: impl IntoIterator<Item = &'a Histogram<u64>>) -> Histogram<u64> {
    let mut all = new();
    for h in hs {
        all.add(h)
            .expect("histograms made by hist::new have the same bounds");
    }
    all
}

/// The value at `q` (0..=1) in µs; NaN for an empty histogram.
pub fn quantile_us(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.value_at_quantile(q) as f64 / 1e3
    }
}

/// The largest value in µs; NaN for an empty histogram.
pub fn max_us(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        f64::NAN
    } else {
        h.max() as f64 / 1e3
    }
}

/// Formats microseconds for a table: `41.3 µs`, `1.25 ms`, `-` for NaN.
pub fn fmt_us(us: f64) -> String {
    if us.is_nan() {
        "-".into()
    } else if us < 1_000.0 {
        format!("{us:.1} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// `a / b` formatted as a ratio (`3.7×`), `-` when undefined.
pub fn fmt_ratio(a: f64, b: f64) -> String {
    let r = a / b;
    if r.is_finite() && r > 0.0 {
        format!("{r:.2}×")
    } else {
        "-".into()
    }
}
