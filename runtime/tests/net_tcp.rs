//! TCP through the reactor: an echo server under many concurrent clients,
//! errors and timeouts, OS threads, and runtime shutdown with green
//! threads blocked in `accept`/`read`.
//!
//! The suite runs once per I/O driver: `epoll::*` and `uring::*`
//! (`suites/drivers.rs`).

mod common;

include!("suites/drivers.rs");
for_each_driver!("net_tcp.rs");
