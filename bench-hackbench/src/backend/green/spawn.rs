//! Green spawn test: green spawners that spawn an empty green thread and
//! join it, over and over.
//!
//! Owns: the green spawn step (`eevdf_rt::spawn(|| ())` + `join()`), run
//! by `spawn`'s driver on green spawners, and the placement counters of
//! the measured window (`Stats::spawned_local` / `spawned_remote`). Must
//! not: choose the placement policy (that is the runtime's SPAWN_LOCAL
//! switch, set by the caller through the features) or print.

use super::{build_runtime, stats_lines, GreenTasks};
use crate::backend::{BackendKind, RuntimeOpts, SpawnBackend, SpawnConfig, SpawnRun};
use crate::error::BenchError;
use crate::spawn::Spawners;
use std::io;

/// The green spawn backend.
pub struct GreenSpawn;

impl SpawnBackend for GreenSpawn {
    fn kind(&self) -> BackendKind {
        BackendKind::Green
    }

    fn run(&self, cfg: &SpawnConfig) -> Result<SpawnRun, BenchError> {
        let rt = build_runtime(&cfg.runtime, None)?;
        let spawners = Spawners::start(&GreenTasks::on(&rt), cfg, spawn_and_join, "spawn")?;
        let before = rt.stats();
        let (spawns, elapsed) = spawners.run()?;
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

/// One spawn step: an empty green thread, then `join`.
fn spawn_and_join(_: &crate::spawn::Go) -> io::Result<bool> {
    eevdf_rt::spawn(|| ())
        .join()
        .map_err(|_| io::Error::other("a spawned green thread failed"))?;
    Ok(true)
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
