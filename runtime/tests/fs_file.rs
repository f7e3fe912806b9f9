//! Files through the I/O driver: concurrent positional writes and reads,
//! sequential access, errors, and OS threads.
//!
//! The suite runs once per I/O driver: `epoll::*` and `uring::*`
//! (`suites/drivers.rs`).

include!("suites/drivers.rs");
for_each_driver!("fs_file.rs");
