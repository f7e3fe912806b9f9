//! Flags of enqueue, dequeue and wakeup operations (docs/eevdf.md §8, §11.5).
//!
//! Owns: small copyable flag sets. Must not: carry state.

macro_rules! flag_set {
    ($(#[$doc:meta])* $name:ident { $( $(#[$fdoc:meta])* $flag:ident = $bit:expr, )* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(u8);

        impl $name {
            /// No flag set.
            pub const NONE: $name = $name(0);
            $( $(#[$fdoc])* pub const $flag: $name = $name($bit); )*

            /// Whether every flag in `other` is set.
            #[inline]
            pub const fn contains(self, other: $name) -> bool {
                self.0 & other.0 == other.0
            }
            /// The union of two flag sets.
            #[inline]
            pub const fn union(self, other: $name) -> $name {
                $name(self.0 | other.0)
            }
        }

        impl std::ops::BitOr for $name {
            type Output = $name;
            fn bitor(self, rhs: $name) -> $name { self.union(rhs) }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut names = Vec::new();
                $( if self.contains($name::$flag) && $bit != 0 { names.push(stringify!($flag)); } )*
                write!(f, "{}({})", stringify!($name), names.join("|"))
            }
        }
    };
}

flag_set! {
    /// How an entity joins a run queue.
    EnqueueFlags {
        /// A wakeup of a sleeping entity.
        WAKEUP = 1,
        /// The first enqueue of a new entity (fork): PLACE_DEADLINE_INITIAL applies.
        INITIAL = 2,
        /// The entity comes from another run queue (its cache-hotness is forgotten).
        MIGRATED = 4,
    }
}

flag_set! {
    /// How an entity leaves a run queue. No flag: a migration or an attribute change.
    DequeueFlags {
        /// The entity blocks (sleeps): it may be delayed.
        SLEEP = 1,
        /// The entity exits or stops: it is never delayed.
        SPECIAL = 2,
    }
}

flag_set! {
    /// Flags of a wakeup, passed to the wakeup-preemption decision.
    WakeFlags {
        /// First wakeup of a new entity.
        FORK = 1,
        /// The waker will sleep soon.
        SYNC = 2,
    }
}
