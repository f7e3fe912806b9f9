//! Lock-free building blocks that know nothing about tasks or workers.
//!
//! Owns: [`wakelist`], the intrusive multi-producer, single-consumer stack
//! the wake protocol hands tasks over with. Must not: import any layer of
//! the runtime above it (task, worker, wake); the layers use it, not the
//! other way round.

pub(crate) mod wakelist;
