//! Shared helpers for the example programs.
