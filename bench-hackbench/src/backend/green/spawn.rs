//! Green spawn test: green spawners that spawn an empty green thread and
//! join it, over and over.
//!
//! Owns: the green spawners (`eevdf_rt::spawn(|| ())` + `join()` per
//! step), their start gate and stop flag, and the placement counters of
//! the measured window (`Stats::spawned_local` / `spawned_remote`). Must
//! not: choose the placement policy (that is the runtime's SPAWN_LOCAL
//! switch, set by the caller through the features) or print.

use super::gate::GreenGate;
use super::{build_runtime, joined, stats_lines};
use crate::backend::{BackendKind, RuntimeOpts, SpawnBackend, SpawnConfig, SpawnLimit, SpawnRun};
use crate::error::BenchError;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The green spawn backend.
pub struct GreenSpawn;

impl SpawnBackend for GreenSpawn {
    fn kind(&self) -> BackendKind {
        BackendKind::Green
    }

    fn run(&self, cfg: &SpawnConfig) -> Result<SpawnRun, BenchError> {
        let rt = build_runtime(&cfg.runtime, None)?;
        let gate = Arc::new(GreenGate::new(cfg.spawners));
        let stop = Arc::new(AtomicBool::new(false));
        let max = match cfg.limit {
            SpawnLimit::Iterations(n) => n,
            SpawnLimit::Duration(_) => u64::MAX,
        };
        let mut handles = Vec::with_capacity(cfg.spawners);
        for i in 0..cfg.spawners {
            let (g, s) = (Arc::clone(&gate), Arc::clone(&stop));
            let h = eevdf_rt::task::Builder::new()
                .name(format!("spawner {i}"))
                .spawn_on(&rt, move || spawner(&g, &s, max));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    gate.abort();
                    handles.into_iter().for_each(|h| drop(h.join()));
                    return Err(BenchError::io("spawning a green spawner", e));
                }
            }
        }
        gate.wait_ready();
        let before = rt.stats();
        let start = Instant::now();
        gate.open();
        if let SpawnLimit::Duration(d) = cfg.limit {
            std::thread::sleep(d);
            stop.store(true, Ordering::Relaxed);
        }
        let mut spawns = 0;
        let mut first_err = None;
        for (i, h) in handles.into_iter().enumerate() {
            match joined(h.join(), || format!("spawner {i}")) {
                Ok(n) => spawns += n,
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    first_err.get_or_insert(e);
                }
            }
        }
        let elapsed = start.elapsed();
        if let Some(e) = first_err {
            return Err(e);
        }
        let window = rt.stats().since(&before);
        let t = window.total();
        let mut details = Vec::new();
        if cfg.runtime.stats {
            details.extend(stats_lines("from go to the end", &window));
        }
        Ok(SpawnRun {
            spawns,
            elapsed,
            counters: vec![
                ("spawned local".to_string(), t.spawned_local),
                ("spawned remote".to_string(), t.spawned_remote),
            ],
            details,
        })
    }
}

/// One spawner: spawn an empty green thread, wait for it, repeat.
fn spawner(gate: &GreenGate, stop: &AtomicBool, max: u64) -> io::Result<u64> {
    if !gate.arrive() {
        return Ok(0);
    }
    let mut n = 0;
    while n < max && !stop.load(Ordering::Relaxed) {
        let h = eevdf_rt::spawn(|| ());
        if h.join().is_err() {
            stop.store(true, Ordering::Relaxed);
            return Err(io::Error::other("a spawned green thread failed"));
        }
        n += 1;
    }
    Ok(n)
}

/// The green spawn rows to run: with the user's `--features` as given if
/// they set SPAWN_LOCAL either way, else two rows — local-first placement
/// (SPAWN_LOCAL, the default) and idlest-worker placement
/// (NO_SPAWN_LOCAL) — so both sides of docs/kernel-discussions.md §4 show. Each is a
/// row label and the runtime options for it.
pub fn placement_variants(opts: &RuntimeOpts) -> Vec<(String, RuntimeOpts)> {
    let names_spawn_local = opts.features.as_deref().is_some_and(|f| {
        f.split(|c: char| c == ',' || c.is_whitespace()).any(|t| {
            t.eq_ignore_ascii_case("SPAWN_LOCAL") || t.eq_ignore_ascii_case("NO_SPAWN_LOCAL")
        })
    });
    if names_spawn_local {
        let label = format!(
            "green {}",
            super::describe_features(opts.features.as_deref())
        );
        return vec![(label, opts.clone())];
    }
    ["SPAWN_LOCAL", "NO_SPAWN_LOCAL"]
        .into_iter()
        .map(|f| {
            let o = RuntimeOpts {
                features: super::feature_spec(opts, Some(f)),
                ..opts.clone()
            };
            (format!("green {f}"), o)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_placement_rows_unless_the_user_chose_one() {
        let mut o = RuntimeOpts {
            workers: 2,
            features: None,
            stats: false,
            trace: None,
            io: eevdf_rt::io::IoDriver::Auto,
        };
        let v = placement_variants(&o);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, "green SPAWN_LOCAL");
        assert_eq!(v[1].1.features.as_deref(), Some("NO_SPAWN_LOCAL"));
        o.features = Some("TICK_ELIGIBLE".into());
        assert_eq!(
            placement_variants(&o)[1].1.features.as_deref(),
            Some("TICK_ELIGIBLE,NO_SPAWN_LOCAL")
        );
        o.features = Some("no_spawn_local".into());
        let v = placement_variants(&o);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].1.features.as_deref(), Some("no_spawn_local"));
    }
}
