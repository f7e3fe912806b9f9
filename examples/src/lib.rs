//! Shared helpers for the example programs: calibrated CPU work
//! ([`work`]), latency histograms and their printing ([`hist`], from
//! `bench-common`, as are the plots, [`plot`]), exiting
//! with a clear message on bad input ([`cli`]) and the few thread-tuning
//! system calls the load generators make ([`os`]).
//!
//! Nothing here knows about a particular runtime: every example uses the
//! same helpers for its eevdf-rt and its tokio (or OS-thread) side, so
//! the sides differ only in how they schedule.

pub mod cli;
pub mod os;
pub mod work;

pub use bench_common::{hist, plot};

/// The median of some values, ignoring NaNs (a measurement that was not
/// taken); NaN if none remain. With an even count, the mean of the middle
/// two.
///
/// ```
/// assert_eq!(examples::median([3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(examples::median([4.0, 1.0, f64::NAN, 2.0, 3.0]), 2.5);
/// assert!(examples::median(std::iter::empty()).is_nan());
/// ```
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
