//! Nice levels, weights and the real → virtual time conversion.
//!
//! Owns: the kernel's 40-entry nice → weight table and its 2^32-scaled
//! inverse (docs/eevdf.md §2.2, facts, not code), and `fair_delta` (§2.5), the
//! fixed-point `Δ·1024/w` every charge and every slice goes through. Must
//! not: hold state.

use crate::error::Error;

/// Weight of a nice-0 entity.
pub const NICE_0_WEIGHT: u32 = 1024;
/// Lowest (most favoured) nice level.
pub const NICE_MIN: i32 = -20;
/// Highest (least favoured) nice level.
pub const NICE_MAX: i32 = 19;
/// Weight of the idle scheduling policy (SCHED_IDLE equivalent).
pub const IDLE_POLICY_WEIGHT: u32 = 3;
/// Inverse weight of the idle scheduling policy.
pub const IDLE_POLICY_INV_WEIGHT: u32 = 1_431_655_765;

/// `WEIGHTS[nice + 20]`: the kernel's `sched_prio_to_weight` values.
pub const WEIGHTS: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, // -20 .. -11
    9548, 7620, 6100, 4904, 3906, 3121, 2501, 1991, 1586, 1277, // -10 .. -1
    1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, // 0 .. 9
    110, 87, 70, 56, 45, 36, 29, 23, 18, 15, // 10 .. 19
];

/// `INV_WEIGHTS[nice + 20] ≈ 2^32 / WEIGHTS[nice + 20]`.
pub const INV_WEIGHTS: [u32; 40] = [
    48388, 59856, 76040, 92818, 118348, 147320, 184698, 229616, 287308, 360437, // -20 .. -11
    449829, 563644, 704093, 875809, 1099582, 1376151, 1717300, 2157191, 2708050,
    3363326, // -10 .. -1
    4194304, 5237765, 6557202, 8165337, 10153587, 12820798, 15790321, 19976592, 24970740,
    31350126, // 0 .. 9
    39045157, 49367440, 61356676, 76695844, 95443717, 119304647, 148102320, 186737708, 238609294,
    286331153, // 10 .. 19
];

/// Checks a nice level, returning it as an index into the tables.
pub fn nice_index(nice: i32) -> Result<usize, Error> {
    if (NICE_MIN..=NICE_MAX).contains(&nice) {
        Ok((nice - NICE_MIN) as usize)
    } else {
        Err(Error::invalid("nice", nice, "-20..=19"))
    }
}

/// The weight of a nice level.
///
/// ```
/// use eevdf_rt::sched::weight::weight_of_nice;
/// assert_eq!(weight_of_nice(0).unwrap(), 1024);
/// assert_eq!(weight_of_nice(5).unwrap(), 335);
/// assert!(weight_of_nice(20).is_err());
/// ```
pub fn weight_of_nice(nice: i32) -> Result<u32, Error> {
    Ok(WEIGHTS[nice_index(nice)?])
}

/// The 2^32-scaled inverse of an arbitrary weight: the table value when the
/// weight is in the table, otherwise `⌊(2^32 − 1)/w⌋` (§2.5).
pub fn inverse_weight(w: u32) -> u32 {
    if let Some(i) = WEIGHTS.iter().position(|&x| x == w) {
        return INV_WEIGHTS[i];
    }
    if w == IDLE_POLICY_WEIGHT {
        return IDLE_POLICY_INV_WEIGHT;
    }
    match w {
        0 => u32::MAX,
        u32::MAX => 1,
        _ => u32::MAX / w,
    }
}

/// Converts `delta` real nanoseconds into virtual nanoseconds for an entity
/// of weight `weight` with inverse `inv_weight`: `Δ·1024/w`, computed in the
/// kernel's fixed point with the 32-bit reciprocal so traces match bit for
/// bit (docs/eevdf.md §2.5). A nice-0 entity gets `delta` unchanged. A
/// result beyond `u64::MAX` (a `delta` of centuries at a low weight)
/// saturates instead of wrapping.
///
/// ```
/// use eevdf_rt::sched::weight::{fair_delta, weight_of_nice, inverse_weight};
/// let w = weight_of_nice(5).unwrap();
/// // a nice-5 task's virtual time runs 1024/335 ≈ 3.06 times faster
/// let v = fair_delta(1_000_000, w, inverse_weight(w));
/// assert!((3_055_000..3_058_000).contains(&v));
/// ```
#[inline]
pub fn fair_delta(delta: u64, weight: u32, inv_weight: u32) -> u64 {
    if weight == NICE_0_WEIGHT {
        return delta;
    }
    let mut factor: u64 = NICE_0_WEIGHT as u64 * inv_weight as u64;
    let mut shift: u32 = 32;
    let hi = (factor >> 32) as u32;
    if hi != 0 {
        // squeeze the factor back into 32 bits, tracking the shift
        let bits = 32 - hi.leading_zeros();
        factor >>= bits;
        shift -= bits;
    }
    ((delta as u128 * factor as u128) >> shift).min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_table_matches_weights() {
        for (w, inv) in WEIGHTS.iter().zip(INV_WEIGHTS.iter()) {
            let exact = ((1u64 << 32) as f64 / *w as f64).round() as i64;
            assert!((exact - *inv as i64).abs() <= 1, "w={w}");
        }
    }

    #[test]
    fn fair_delta_close_to_exact() {
        for (i, w) in WEIGHTS.iter().enumerate() {
            let d = 2_800_000u64;
            let exact = (d as u128 * 1024 / *w as u128) as i64;
            let got = fair_delta(d, *w, INV_WEIGHTS[i]) as i64;
            assert!(
                (exact - got).abs() <= 1,
                "nice {} exact {exact} got {got}",
                i as i32 - 20
            );
        }
    }

    #[test]
    fn nice_out_of_range_is_an_error() {
        assert!(weight_of_nice(-21).is_err());
        assert!(weight_of_nice(20).is_err());
        let msg = weight_of_nice(40).unwrap_err().to_string();
        assert!(msg.contains("-20..=19"), "{msg}");
    }
}
