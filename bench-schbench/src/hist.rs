//! schbench's histogram: values below 512 are counted exactly, larger ones in 256
//! buckets per power of two; percentiles are read off it as the original prints them.
//!
//! This module owns the bucket math, percentile selection and the single-writer atomic
//! histogram each worker records into. It must not format output (`report`), read
//! clocks, or know what is being measured.
//!
//! Bucket math: for `v < 512` the index is `v`. Otherwise, with `msb` the index of the
//! highest set bit, the bucket width is `2^(msb-8)` and the index is
//! `(msb - 7) * 256 + (v >> (msb - 8)) % 256`. A bucket is reported by its midpoint.
//! There are 19 groups of 256 buckets, so values up to `2^26 - 1` (67 s in µs, 67 M
//! requests/s) are resolved; larger values land in the last bucket.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// log2 of the number of buckets per power of two.
pub const PLAT_BITS: u32 = 8;
/// Buckets per power of two (256).
pub const PLAT_VAL: usize = 1 << PLAT_BITS;
/// Number of 256-bucket groups.
pub const PLAT_GROUP_NR: usize = 19;
/// Total number of buckets.
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL;
/// Values below this are counted exactly (one bucket per value).
pub const EXACT_LIMIT: u64 = 2 * PLAT_VAL as u64;

/// Percentiles of a latency block; the starred one (index 2) is 99.0.
pub const LATENCY_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];
/// Percentiles of the RPS block; the starred one (index 1) is 50.0.
pub const RPS_PERCENTILES: [f64; 3] = [20.0, 50.0, 90.0];

/// The bucket a value falls in.
///
/// ```
/// use bench_schbench::hist::bucket_index;
/// assert_eq!(bucket_index(511), 511);
/// assert_eq!(bucket_index(512), 512);
/// assert_eq!(bucket_index(513), 512); // buckets are 2 wide in [512, 1024)
/// ```
#[inline]
pub fn bucket_index(value: u64) -> usize {
    if value < EXACT_LIMIT {
        return value as usize;
    }
    let msb = 63 - value.leading_zeros();
    let error_bits = msb - PLAT_BITS;
    let base = (error_bits as usize + 1) << PLAT_BITS;
    let offset = (value >> error_bits) as usize & (PLAT_VAL - 1);
    (base + offset).min(PLAT_NR - 1)
}

/// The value a bucket is reported as: the value itself below 512, else the midpoint.
///
/// ```
/// use bench_schbench::hist::bucket_value;
/// assert_eq!(bucket_value(300), 300);
/// assert_eq!(bucket_value(512), 513); // bucket [512, 513]
/// ```
pub fn bucket_value(index: usize) -> u64 {
    if index < EXACT_LIMIT as usize {
        return index as u64;
    }
    let error_bits = (index >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (index & (PLAT_VAL - 1)) as u64;
    // Midpoint of [base + k·w, base + (k+1)·w - 1] with w = 2^error_bits, rounded down.
    base + (k << error_bits) + ((1u64 << error_bits) >> 1)
}

/// One printed percentile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Percentile {
    /// The percentile asked for, e.g. 99.0.
    pub pct: f64,
    /// The bucket value it falls in.
    pub value: u64,
    /// Samples between the previous printed percentile's bucket (exclusive) and this
    /// one's (inclusive); for the first, all samples up to its bucket.
    pub samples: u64,
}

/// A plain histogram: merged snapshots and the driver's RPS samples.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Box<[u64]>,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            counts: vec![0; PLAT_NR].into_boxed_slice(),
            min: u64::MAX,
            max: 0,
        }
    }

    /// Counts one sample.
    pub fn record(&mut self, value: u64) {
        self.counts[bucket_index(value)] += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        self.counts.fill(0);
        self.min = u64::MAX;
        self.max = 0;
    }

    /// Adds `other`'s samples.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Number of samples.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Smallest sample (exact), 0 when empty.
    pub fn min(&self) -> u64 {
        if self.min > self.max {
            0
        } else {
            self.min
        }
    }

    /// Largest sample (exact), 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The percentiles in `pcts` (ascending). The value for `p` is the first bucket at
    /// which the running count reaches `p/100 · total`, reported as the bucket's value
    /// clamped to the exact `[min, max]` (a bucket's midpoint may lie outside the
    /// samples it holds, e.g. 911 for a bucket holding only 910); an empty histogram
    /// gives zeros.
    ///
    /// ```
    /// use bench_schbench::hist::Histogram;
    /// let mut h = Histogram::new();
    /// (1..=10).for_each(|v| h.record(v));
    /// let p = h.percentiles(&[50.0, 90.0]);
    /// assert_eq!((p[0].value, p[0].samples), (5, 5));
    /// assert_eq!((p[1].value, p[1].samples), (9, 4));
    /// ```
    pub fn percentiles(&self, pcts: &[f64]) -> Vec<Percentile> {
        let total = self.total();
        let mut out: Vec<Percentile> = pcts
            .iter()
            .map(|&pct| Percentile {
                pct,
                value: 0,
                samples: 0,
            })
            .collect();
        if total == 0 {
            return out;
        }
        let (mut running, mut reported, mut next) = (0u64, 0u64, 0usize);
        for (index, &count) in self.counts.iter().enumerate() {
            running += count;
            while next < out.len() && running as f64 >= out[next].pct / 100.0 * total as f64 {
                out[next].value = bucket_value(index).clamp(self.min, self.max);
                out[next].samples = running - reported;
                reported = running;
                next += 1;
            }
            if next == out.len() {
                break;
            }
        }
        out
    }
}

/// A histogram written by exactly one thread (its worker) and read by any.
///
/// The owner counts with a relaxed load and store (no locked instruction: nobody else
/// writes). Readers take relaxed loads and may see a snapshot that is not a single
/// instant; that only shifts samples between adjacent reports. The total is derived from
/// the buckets, so a snapshot's percentile counts always add up.
#[derive(Debug)]
pub struct AtomicHistogram {
    counts: Box<[AtomicU64]>,
    min: AtomicU64,
    max: AtomicU64,
}

impl Default for AtomicHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl AtomicHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        AtomicHistogram {
            counts: (0..PLAT_NR).map(|_| AtomicU64::new(0)).collect(),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
        }
    }

    /// Counts one sample. Only the owning thread may call this (or `clear`).
    #[inline]
    pub fn record(&self, value: u64) {
        let slot = &self.counts[bucket_index(value)];
        slot.store(slot.load(Relaxed) + 1, Relaxed);
        if value < self.min.load(Relaxed) {
            self.min.store(value, Relaxed);
        }
        if value > self.max.load(Relaxed) {
            self.max.store(value, Relaxed);
        }
    }

    /// Forgets every sample. Only the owning thread may call this (or `record`).
    /// Touches only the buckets between the current min and max.
    pub fn clear(&self) {
        let (min, max) = (self.min.load(Relaxed), self.max.load(Relaxed));
        if min <= max {
            for slot in &self.counts[bucket_index(min)..=bucket_index(max)] {
                slot.store(0, Relaxed);
            }
        }
        self.min.store(u64::MAX, Relaxed);
        self.max.store(0, Relaxed);
    }

    /// Adds a snapshot of this histogram to `into`.
    pub fn add_to(&self, into: &mut Histogram) {
        let (min, max) = (self.min.load(Relaxed), self.max.load(Relaxed));
        if min > max {
            return; // empty (or cleared while we looked)
        }
        for (a, b) in into.counts[bucket_index(min)..=bucket_index(max)]
            .iter_mut()
            .zip(&self.counts[bucket_index(min)..=bucket_index(max)])
        {
            *a += b.load(Relaxed);
        }
        into.min = into.min.min(min);
        into.max = into.max.max(max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_512() {
        for v in 0..EXACT_LIMIT {
            assert_eq!(bucket_index(v), v as usize);
            assert_eq!(bucket_value(v as usize), v);
        }
    }

    #[test]
    fn buckets_per_power_of_two() {
        for msb in 9..(PLAT_GROUP_NR as u32 + 7) {
            let lo = 1u64 << msb;
            let width = lo >> PLAT_BITS;
            let first = bucket_index(lo);
            assert_eq!(first, (msb as usize - 7) * PLAT_VAL, "group of 2^{msb}");
            assert_eq!(bucket_index(2 * lo - 1), first + PLAT_VAL - 1);
            assert_eq!(bucket_index(lo + width - 1), first);
            assert_eq!(bucket_index(lo + width), first + 1);
        }
    }

    #[test]
    fn buckets_are_monotonic_and_contiguous() {
        let mut prev = 0;
        for v in 1..(1u64 << 20) {
            let i = bucket_index(v);
            assert!(i == prev || i == prev + 1, "gap at {v}");
            prev = i;
        }
    }

    #[test]
    fn midpoint_lies_inside_its_bucket() {
        for index in EXACT_LIMIT as usize..PLAT_NR {
            let v = bucket_value(index);
            assert_eq!(bucket_index(v), index, "midpoint of {index} is {v}");
        }
        // Bucket [1024, 1027] (width 4): midpoint 1026.
        assert_eq!(bucket_value(bucket_index(1024)), 1026);
        // The RPS figures of the example in docs/benchmarks.md ("Output format") are midpoints of 64-wide buckets.
        for printed in [16864, 17184, 17888] {
            assert_eq!(bucket_value(bucket_index(printed)), printed);
        }
    }

    #[test]
    fn huge_values_clamp_to_last_bucket() {
        assert_eq!(bucket_index(u64::MAX), PLAT_NR - 1);
        assert_eq!(bucket_index(1 << 26), PLAT_NR - 1);
        assert_eq!(bucket_index((1 << 26) - 1), PLAT_NR - 1);
    }

    #[test]
    fn percentile_counts_are_since_previous() {
        let mut h = Histogram::new();
        for v in 1..=1000 {
            h.record(v);
        }
        let p = h.percentiles(&LATENCY_PERCENTILES);
        assert_eq!(p[0].value, 500);
        assert_eq!(p[0].samples, 500);
        assert_eq!(p[1].samples, p[1].value - 500); // buckets above 512 hold 2 values
        let sum: u64 = p.iter().map(|p| p.samples).sum();
        assert!((999..=1000).contains(&sum));
        assert!(p.windows(2).all(|w| w[0].value <= w[1].value));
    }

    #[test]
    fn percentiles_sharing_a_bucket_get_zero_samples() {
        let mut h = Histogram::new();
        (0..100).for_each(|_| h.record(7));
        let p = h.percentiles(&RPS_PERCENTILES);
        assert_eq!(
            p.iter().map(|p| (p.value, p.samples)).collect::<Vec<_>>(),
            [(7, 100), (7, 0), (7, 0)]
        );
    }

    #[test]
    fn percentiles_stay_within_min_and_max() {
        // 910 lies in the bucket [910, 911], whose midpoint is 911.
        let mut h = Histogram::new();
        (0..5).for_each(|_| h.record(910));
        assert_eq!(bucket_value(bucket_index(910)), 911);
        let p = h.percentiles(&RPS_PERCENTILES);
        assert!(p.iter().all(|p| p.value == 910), "{p:?}");
        let mut wide = Histogram::new();
        [100_000, 100_100].iter().for_each(|&v| wide.record(v));
        for p in wide.percentiles(&LATENCY_PERCENTILES) {
            assert!((100_000..=100_100).contains(&p.value), "{p:?}");
        }
    }

    #[test]
    fn empty_histogram_reports_zeros() {
        let h = Histogram::new();
        assert_eq!((h.total(), h.min(), h.max()), (0, 0, 0));
        assert!(h
            .percentiles(&RPS_PERCENTILES)
            .iter()
            .all(|p| p.value == 0 && p.samples == 0));
    }

    #[test]
    fn atomic_snapshot_matches_plain() {
        let (a, mut plain) = (AtomicHistogram::new(), Histogram::new());
        for v in [3, 700, 700, 1 << 20, 42] {
            a.record(v);
            plain.record(v);
        }
        let mut snap = Histogram::new();
        a.add_to(&mut snap);
        assert_eq!((snap.total(), snap.min(), snap.max()), (5, 3, 1 << 20));
        assert_eq!(
            snap.percentiles(&LATENCY_PERCENTILES),
            plain.percentiles(&LATENCY_PERCENTILES)
        );
        a.clear();
        let mut empty = Histogram::new();
        a.add_to(&mut empty);
        assert_eq!(empty.total(), 0);
        a.record(9);
        a.add_to(&mut empty);
        assert_eq!((empty.total(), empty.min(), empty.max()), (1, 9, 9));
    }
}
