//! hyper's runtime traits on eevdf-rt (feature `hyper`): [`Executor`]
//! spawns hyper's background futures as green tasks, [`Timer`] gives it
//! the timer futures of [`crate::time`].
//!
//! Owns: the two adapter types. Must not: do I/O — hyper reads and writes
//! through `hyper_util::rt::TokioIo` around any `tokio::io` stream, which
//! the net types are with feature `tokio-io`.
//!
//! ```
//! use eevdf_rt::compat::hyper::{Executor, Timer};
//! use eevdf_rt::net::{TcpListener, TcpStream};
//! use http_body_util::{BodyExt, Empty, Full};
//! use hyper::body::Bytes;
//! use hyper_util::rt::TokioIo;
//!
//! let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
//! let body = rt.block_on(|| {
//!     let l = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = l.local_addr().unwrap();
//!     // The server: one green task per connection.
//!     eevdf_rt::spawn(move || {
//!         let (s, _) = l.accept().unwrap();
//!         let svc = hyper::service::service_fn(|_req| async {
//!             Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from("hi"))))
//!         });
//!         let conn = hyper::server::conn::http1::Builder::new()
//!             .timer(Timer)
//!             .serve_connection(TokioIo::new(s), svc);
//!         let _ = eevdf_rt::block_on_future(conn);
//!     });
//!     // The client.
//!     eevdf_rt::block_on_future(async move {
//!         let s = TcpStream::connect(addr).unwrap();
//!         let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(s)).await.unwrap();
//!         hyper::rt::Executor::execute(&Executor::new(), conn);
//!         let req = hyper::Request::get("/").body(Empty::<Bytes>::new()).unwrap();
//!         let resp = send.send_request(req).await.unwrap();
//!         resp.into_body().collect().await.unwrap().to_bytes()
//!     })
//! });
//! assert_eq!(&body[..], b"hi");
//! ```

use crate::runtime::spawn;
use crate::shared::Shared;
use crate::task;
use crate::{Error, Runtime};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs each future hyper hands it (connection tasks of HTTP/2, client
/// connection drivers) as its own green task, detached, like
/// [`spawn_future`](crate::spawn_future).
///
/// By default the task goes to the runtime of the green thread that calls
/// `execute`; [`Executor::on`] names a runtime (for `execute` from OS
/// threads), and [`Executor::with_builder`] gives every task the same
/// options (nice, slice, stack size, affinity). If the runtime is shut
/// down, or a stack cannot be allocated, the future is dropped (hyper's
/// `execute` cannot report an error; dropping the future closes the
/// connection it drives).
///
/// # Panics
/// `execute` outside a green thread on an `Executor` made with
/// [`new`](Executor::new) (there is no runtime to spawn on), like
/// [`crate::spawn`].
#[derive(Clone, Default)]
pub struct Executor {
    runtime: Option<Arc<Shared>>,
    builder: Option<task::Builder>,
}

impl Executor {
    /// Spawns on the runtime of the green thread that calls `execute`.
    pub fn new() -> Executor {
        Executor::default()
    }

    /// Spawns on `rt`, from any thread.
    pub fn on(rt: &Runtime) -> Executor {
        Executor {
            runtime: Some(rt.shared().clone()),
            builder: None,
        }
    }

    /// Spawns every future with `builder`'s options (its `name`, `nice`,
    /// `slice`, `affinity` and `stack_size`). Invalid options are an error
    /// here, not at `execute`.
    ///
    /// ```
    /// use eevdf_rt::compat::hyper::Executor;
    /// let b = eevdf_rt::task::Builder::new().nice(5);
    /// assert!(Executor::new().with_builder(b).is_ok());
    /// assert!(Executor::new().with_builder(eevdf_rt::task::Builder::new().nice(99)).is_err());
    /// ```
    pub fn with_builder(mut self, builder: task::Builder) -> Result<Executor, Error> {
        builder.clone().validate()?;
        self.builder = Some(builder);
        Ok(self)
    }
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("runtime", &self.runtime.as_ref().map(|_| "fixed"))
            .field("builder", &self.builder)
            .finish()
    }
}

impl<F> hyper::rt::Executor<F> for Executor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        let sh = match &self.runtime {
            Some(sh) => spawn::CurrentShared::Borrowed(sh),
            None => spawn::current_shared().unwrap_or_else(|| {
                panic!(
                    "eevdf_rt::compat::hyper::Executor::execute called outside a green thread; \
                     use Executor::on(&runtime)"
                )
            }),
        };
        let opts = match self.builder.clone().unwrap_or_default().validate() {
            Ok(o) => o,
            Err(_) => unreachable!("with_builder validated the options"),
        };
        // Detached: the JoinHandle is dropped, the task runs on. No
        // preemption point: hyper calls this under locks of its own (its
        // client pool's `std::sync::Mutex`), which a switch here could
        // leave held while another green thread of this worker blocks the
        // worker's OS thread on it.
        let _ = crate::future::spawn_future_on(&sh, opts, fut, false);
    }
}

/// hyper's timer: [`crate::time::sleep`] futures (header-read timeouts,
/// keep-alive timers of HTTP/2, the pool's idle timers).
#[derive(Clone, Copy, Debug, Default)]
pub struct Timer;

impl hyper::rt::Sleep for crate::time::Sleep {}

impl hyper::rt::Timer for Timer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(crate::time::sleep(duration))
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(crate::time::sleep_until(deadline))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<crate::time::Sleep>() {
            Some(s) => Pin::into_inner(s).reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}
