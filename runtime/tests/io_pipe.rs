//! Pipes through the reactor: 100 MB with a checksum between two green
//! threads, green ↔ OS thread, EOF and broken pipes.
//!
//! The suite runs once per I/O driver: `epoll::*` and `uring::*`
//! (`suites/drivers.rs`).

include!("suites/drivers.rs");
for_each_driver!("io_pipe.rs");
