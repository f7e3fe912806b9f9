//! The scheduling policy of hackbench's senders and receivers (`--policy`).
//!
//! Owns: the [`LoadPolicy`] choice, its mapping to an eevdf-rt
//! [`Policy`](eevdf_rt::sched::Policy) for green threads, and
//! [`KernelPolicy`], which gives the calling OS thread the kernel policy
//! while a kernel backend (threads, processes) starts its tasks: threads
//! made by `pthread_create` and children made by `fork` inherit it. Must
//! not: change anything that outlives the guard, or touch the latency
//! probes (their policy is part of the latency table's design).
//!
//! `batch` is the kernel's SCHED_BATCH: the task never preempts another on
//! wakeup (it runs when the EEVDF pick reaches it at the next switch or
//! tick), which suits throughput work. eevdf-rt's `Policy::Batch` has the
//! same rule, so `--policy batch` compares the two schedulers under one
//! policy. SCHED_BATCH needs no privilege.

use crate::error::BenchError;
use clap::ValueEnum;
use std::fmt;
use std::io;

/// `--policy`: the scheduling policy of the load's tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LoadPolicy {
    /// SCHED_OTHER / `Policy::Normal`: wakeups may preempt (hackbench's default).
    #[default]
    Normal,
    /// SCHED_BATCH / `Policy::Batch`: wakeups never preempt.
    Batch,
}

impl LoadPolicy {
    /// The eevdf-rt policy of a green load task.
    pub fn green(self) -> eevdf_rt::sched::Policy {
        match self {
            LoadPolicy::Normal => eevdf_rt::sched::Policy::Normal,
            LoadPolicy::Batch => eevdf_rt::sched::Policy::Batch,
        }
    }

    /// The kernel's policy number.
    fn kernel(self) -> libc::c_int {
        match self {
            LoadPolicy::Normal => libc::SCHED_OTHER,
            LoadPolicy::Batch => libc::SCHED_BATCH,
        }
    }
}

impl fmt::Display for LoadPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoadPolicy::Normal => "normal",
            LoadPolicy::Batch => "batch",
        })
    }
}

/// The calling OS thread runs under a load policy until the guard drops,
/// then gets its previous policy back. Create it before a kernel backend
/// starts its tasks, which inherit the policy.
#[must_use = "the policy is restored when the guard drops"]
pub struct KernelPolicy {
    previous: Option<(libc::c_int, libc::sched_param)>,
}

impl KernelPolicy {
    /// Switches the calling thread to `policy` (nothing to do for
    /// `Normal` when it already is SCHED_OTHER). Fails with the kernel's
    /// error (for example, a thread under a real-time policy that may not
    /// leave it).
    pub fn enter(policy: LoadPolicy) -> io::Result<KernelPolicy> {
        // SAFETY: sched_getscheduler takes no pointer; 0 is this thread.
        let prev = unsafe { libc::sched_getscheduler(0) };
        if prev < 0 {
            return Err(io::Error::last_os_error());
        }
        if prev == policy.kernel() {
            return Ok(KernelPolicy { previous: None });
        }
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid sched_param for the call's duration.
        if unsafe { libc::sched_getparam(0, &mut param) } != 0 {
            return Err(io::Error::last_os_error());
        }
        set(policy.kernel(), &libc::sched_param { sched_priority: 0 })?;
        Ok(KernelPolicy {
            previous: Some((prev, param)),
        })
    }

    /// [`KernelPolicy::enter`] for a backend about to start its tasks, its
    /// error saying which policy could not be set.
    pub fn for_tasks(policy: LoadPolicy) -> Result<KernelPolicy, BenchError> {
        KernelPolicy::enter(policy)
            .map_err(|e| BenchError::io(format!("setting the {policy} policy"), e))
    }
}

impl Drop for KernelPolicy {
    fn drop(&mut self) {
        if let Some((policy, param)) = self.previous.take() {
            // Going back to the policy the thread had is always allowed
            // for SCHED_OTHER; a failure leaves the load's policy, which
            // only affects this thread's waiting.
            let _ = set(policy, &param);
        }
    }
}

fn set(policy: libc::c_int, param: &libc::sched_param) -> io::Result<()> {
    // SAFETY: `param` is a valid sched_param for the call's duration; 0 is
    // the calling thread.
    if unsafe { libc::sched_setscheduler(0, policy, param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current() -> libc::c_int {
        // SAFETY: no pointer; 0 is this thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn batch_is_inherited_by_new_threads_and_restored() {
        // A thread of its own, so the test runner's thread keeps its policy.
        std::thread::spawn(|| {
            assert_eq!(current(), libc::SCHED_OTHER);
            let guard = KernelPolicy::enter(LoadPolicy::Batch).unwrap();
            assert_eq!(current(), libc::SCHED_BATCH);
            let child = std::thread::spawn(current).join().unwrap();
            assert_eq!(child, libc::SCHED_BATCH, "a new thread inherits the policy");
            drop(guard);
            assert_eq!(current(), libc::SCHED_OTHER);
            let child = std::thread::spawn(current).join().unwrap();
            assert_eq!(child, libc::SCHED_OTHER);
            // Normal on a SCHED_OTHER thread changes nothing.
            drop(KernelPolicy::enter(LoadPolicy::Normal).unwrap());
            assert_eq!(current(), libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn names_and_green_policies() {
        assert_eq!(LoadPolicy::default(), LoadPolicy::Normal);
        assert_eq!(LoadPolicy::Batch.to_string(), "batch");
        assert_eq!(LoadPolicy::Batch.green(), eevdf_rt::sched::Policy::Batch);
        assert_eq!(LoadPolicy::Normal.green(), eevdf_rt::sched::Policy::Normal);
    }
}
