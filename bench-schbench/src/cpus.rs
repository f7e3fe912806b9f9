//! CPU sets: the `-M`/`-W` list syntax, the CPUs this process may use, pinning the
//! calling thread, and `sched_getcpu`.
//!
//! This module owns every affinity system call of the crate. It must not decide who
//! runs where: mapping message threads and workers to CPUs is `opts`' job.

use std::fmt;
use std::io;

/// Largest CPU count a `cpu_set_t` describes (`CPU_SETSIZE`); CPU ids are below it.
pub const MAX_CPUS: usize = libc::CPU_SETSIZE as usize;

/// A set of CPU ids, kept sorted and free of duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuSet {
    cpus: Vec<usize>,
}

impl CpuSet {
    /// The set holding exactly `cpus` (any order, duplicates allowed).
    pub fn from_cpus(cpus: impl IntoIterator<Item = usize>) -> Self {
        let mut cpus: Vec<usize> = cpus.into_iter().collect();
        cpus.sort_unstable();
        cpus.dedup();
        CpuSet { cpus }
    }

    /// Parses the kernel's list syntax: comma-separated ids and inclusive ranges,
    /// e.g. `0-3,8,10-11`.
    ///
    /// ```
    /// use bench_schbench::cpus::CpuSet;
    /// assert_eq!(CpuSet::parse_list("0-2,5").unwrap().as_slice(), &[0, 1, 2, 5]);
    /// assert!(CpuSet::parse_list("3-1").is_err());
    /// ```
    pub fn parse_list(list: &str) -> Result<Self, String> {
        if list.is_empty() {
            return Err("empty CPU list".into());
        }
        let mut cpus = Vec::new();
        for item in list.split(',') {
            let (lo, hi) = match item.split_once('-') {
                Some((lo, hi)) => (parse_cpu(lo, list)?, parse_cpu(hi, list)?),
                None => {
                    let cpu = parse_cpu(item, list)?;
                    (cpu, cpu)
                }
            };
            if lo > hi {
                return Err(format!(
                    "bad CPU range `{item}` in `{list}` (start above end)"
                ));
            }
            cpus.extend(lo..=hi);
        }
        Ok(Self::from_cpus(cpus))
    }

    /// The CPU ids in ascending order.
    pub fn as_slice(&self) -> &[usize] {
        &self.cpus
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.cpus.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_empty()
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.cpus.binary_search(&cpu).is_ok()
    }

    /// The CPUs of `self` that are not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet {
            cpus: self
                .cpus
                .iter()
                .copied()
                .filter(|&c| !other.contains(c))
                .collect(),
        }
    }

    /// The CPUs the calling thread may run on (its affinity, through
    /// `core_affinity`).
    pub fn allowed() -> io::Result<CpuSet> {
        let ids = core_affinity::get_core_ids()
            .ok_or_else(|| io::Error::other("cannot read the thread's CPU affinity"))?;
        Ok(Self::from_cpus(
            ids.into_iter().map(|c| c.id).filter(|&c| c < MAX_CPUS),
        ))
    }

    /// Restricts the calling thread to this set (`sched_setaffinity`).
    /// A one-CPU set goes through `core_affinity`; a larger one needs the
    /// raw call, since `core_affinity` can only pin a thread to one core
    /// and `-M`/`-W` give workers a set to share.
    pub fn pin_current_thread(&self) -> io::Result<()> {
        if let [cpu] = self.cpus[..] {
            return if core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            };
        }
        // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in &self.cpus {
            // SAFETY: ids are below CPU_SETSIZE by construction (`parse_cpu`, `allowed`).
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        // SAFETY: the pointer and size describe `set`, which outlives the call.
        let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// Prints the set in list syntax with ranges collapsed (`0-3,8`).
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.cpus.as_slice();
        let mut first = true;
        while let Some(&lo) = rest.first() {
            let run = rest
                .iter()
                .enumerate()
                .take_while(|&(k, &c)| c == lo + k)
                .count();
            let hi = rest[run - 1];
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if hi == lo {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
            rest = &rest[run..];
        }
        Ok(())
    }
}

fn parse_cpu(text: &str, list: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(cpu) if cpu < MAX_CPUS => Ok(cpu),
        Ok(cpu) => Err(format!(
            "CPU {cpu} in `{list}` is beyond the largest possible id {}",
            MAX_CPUS - 1
        )),
        Err(_) => Err(format!(
            "bad CPU id `{text}` in `{list}` (expected e.g. 0-3,5)"
        )),
    }
}

/// The CPU the calling thread runs on (`sched_getcpu`); 0 if the call fails.
#[inline]
pub fn current_cpu() -> usize {
    // SAFETY: no arguments, no memory touched.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).unwrap_or(0)
}

/// Number of CPU ids the kernel may report (`_SC_NPROCESSORS_CONF`), at least 1.
pub fn configured_cpus() -> usize {
    // SAFETY: sysconf reads a constant.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    usize::try_from(n).unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_and_ranges() {
        assert_eq!(CpuSet::parse_list("0").unwrap().as_slice(), &[0]);
        assert_eq!(
            CpuSet::parse_list("3,1,2-2,1").unwrap().as_slice(),
            &[1, 2, 3]
        );
        assert_eq!(CpuSet::parse_list("0-3,8,10-11").unwrap().len(), 7);
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "", ",", "a", "1-", "-1", "2-1", "1,,2", "0x1", "1 ,2", "99999",
        ] {
            assert!(CpuSet::parse_list(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn displays_collapsed_ranges() {
        let set = CpuSet::from_cpus([0, 1, 2, 3, 5, 7, 8]);
        assert_eq!(set.to_string(), "0-3,5,7-8");
        assert_eq!(CpuSet::parse_list(&set.to_string()).unwrap(), set);
        assert_eq!(CpuSet::default().to_string(), "");
    }

    #[test]
    fn difference_and_contains() {
        let all = CpuSet::from_cpus(0..4);
        let msg = CpuSet::from_cpus([0, 2]);
        assert_eq!(all.difference(&msg).as_slice(), &[1, 3]);
        assert!(all.contains(3) && !msg.contains(1));
    }

    #[test]
    fn allowed_set_is_nonempty_and_pinnable() {
        let allowed = CpuSet::allowed().unwrap();
        assert!(!allowed.is_empty());
        std::thread::spawn(move || {
            allowed.pin_current_thread().unwrap();
            assert!(allowed.contains(current_cpu()));
        })
        .join()
        .unwrap();
    }
}
