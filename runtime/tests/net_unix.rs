//! Unix domain sockets through the reactor: green ↔ green and green ↔ OS
//! thread pairs, a listener with many clients, timeouts and EOF.
//!
//! The suite runs once per I/O driver: `epoll::*` and `uring::*`
//! (`suites/drivers.rs`).

mod common;

include!("suites/drivers.rs");
for_each_driver!("net_unix.rs");
