// `for_each_driver!("suite.rs")`: includes `tests/suites/suite.rs` twice,
// as `mod epoll` and `mod uring`, each with its own `builder()`. The uring
// one falls back to epoll, saying why, where the kernel refuses io_uring.

macro_rules! for_each_driver {
    ($suite:literal) => {
        mod epoll {
            fn builder() -> eevdf_rt::Builder {
                eevdf_rt::Builder::new().io_driver(eevdf_rt::io::IoDriver::Epoll)
            }

            include!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/suites/", $suite));
        }

        mod uring {
            fn builder() -> eevdf_rt::Builder {
                use eevdf_rt::io::IoDriver;
                match IoDriver::Uring.resolve() {
                    Ok(_) => eevdf_rt::Builder::new().io_driver(IoDriver::Uring),
                    Err(e) => {
                        eprintln!("io_uring unavailable, running the uring suite on epoll: {e}");
                        eevdf_rt::Builder::new().io_driver(IoDriver::Epoll)
                    }
                }
            }

            #[test]
            fn the_driver_is_io_uring_where_the_kernel_allows_it() {
                let rt = builder().workers(1).build().unwrap();
                let expect = match eevdf_rt::io::IoDriver::Uring.resolve() {
                    Ok(_) => eevdf_rt::io::IoDriver::Uring,
                    Err(_) => eevdf_rt::io::IoDriver::Epoll,
                };
                assert_eq!(rt.io_driver(), expect);
            }

            include!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/suites/", $suite));
        }
    };
}
