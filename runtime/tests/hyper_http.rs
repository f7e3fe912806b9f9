//! hyper 1.x on green threads (feature `hyper`): HTTP/1.1 with 20
//! keep-alive clients where every response must arrive and match its
//! request, and HTTP/2 (which needs `compat::hyper::Executor`) with
//! concurrent streams on one connection.
#![cfg(feature = "hyper")]

use eevdf_rt::compat::hyper::{Executor, Timer};
use eevdf_rt::net::{TcpListener, TcpStream};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

mod common;
use common::within;

const LIMIT: Duration = Duration::from_secs(120);

/// Echoes the path and the body back.
async fn echo(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await.map(|c| c.to_bytes());
    let body = body.unwrap_or_default();
    let mut out = path.into_bytes();
    out.push(b'|');
    out.extend_from_slice(&body);
    Ok(Response::new(Full::new(Bytes::from(out))))
}

/// Accepts `conns` connections, each served by its own future task.
fn serve(l: TcpListener, conns: usize, http2: bool) -> eevdf_rt::JoinHandle<()> {
    eevdf_rt::spawn(move || {
        let mut tasks = Vec::new();
        for _ in 0..conns {
            let (s, _) = l.accept().unwrap();
            s.set_nodelay(true).unwrap();
            tasks.push(eevdf_rt::spawn_future(async move {
                let io = TokioIo::new(s);
                let svc = hyper::service::service_fn(echo);
                let r = if http2 {
                    hyper::server::conn::http2::Builder::new(Executor::new())
                        .timer(Timer)
                        .serve_connection(io, svc)
                        .await
                } else {
                    hyper::server::conn::http1::Builder::new()
                        .timer(Timer)
                        .header_read_timeout(Duration::from_secs(30))
                        .serve_connection(io, svc)
                        .await
                };
                r.unwrap();
            }));
        }
        for t in tasks {
            t.join().unwrap();
        }
    })
}

fn connect(addr: SocketAddr) -> TokioIo<TcpStream> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    TokioIo::new(s)
}

#[test]
fn http1_twenty_keep_alive_clients_get_every_response() {
    within(LIMIT, || {
        let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
        let answered = rt.block_on(|| {
            const CLIENTS: usize = 20;
            const REQUESTS: usize = 100;
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let server = serve(l, CLIENTS, false);
            let clients: Vec<_> = (0..CLIENTS)
                .map(|c| {
                    eevdf_rt::spawn_future(async move {
                        let (mut send, conn) = hyper::client::conn::http1::handshake(connect(addr))
                            .await
                            .unwrap();
                        let driver = eevdf_rt::spawn_future(conn);
                        let mut ok = 0;
                        for i in 0..REQUESTS {
                            let body = format!("{c}-{i}");
                            let req = Request::post(format!("/c{c}/r{i}"))
                                .body(Full::new(Bytes::from(body.clone())))
                                .unwrap();
                            // hyper's contract: wait until the connection can
                            // take the next request (its driver task may not
                            // have finished the previous exchange yet).
                            send.ready().await.unwrap();
                            let resp = send.send_request(req).await.unwrap();
                            assert_eq!(resp.status(), 200);
                            let got = resp.into_body().collect().await.unwrap().to_bytes();
                            assert_eq!(got, format!("/c{c}/r{i}|{body}").as_bytes());
                            ok += 1;
                        }
                        // Closing the client's side ends the connection
                        // (keep-alive until now: one connection per client).
                        drop(send);
                        driver.join().unwrap().unwrap();
                        ok
                    })
                })
                .collect();
            let answered: usize = clients.into_iter().map(|h| h.join().unwrap()).sum();
            server.join().unwrap();
            answered
        });
        assert_eq!(answered, 20 * 100);
    });
}

#[test]
fn http2_concurrent_streams_through_the_executor() {
    within(LIMIT, || {
        let rt = eevdf_rt::Builder::new().workers(2).build().unwrap();
        rt.block_on(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let server = serve(l, 1, true);
            eevdf_rt::block_on_future(async move {
                let (send, conn) =
                    hyper::client::conn::http2::handshake(Executor::new(), connect(addr))
                        .await
                        .unwrap();
                let driver = eevdf_rt::spawn_future(conn);
                // 50 requests in flight at once, each on its own task.
                let reqs: Vec<_> = (0..50)
                    .map(|i| {
                        let mut send = send.clone();
                        eevdf_rt::spawn_future(async move {
                            let req = Request::post(format!("/s{i}"))
                                .body(Full::new(Bytes::from(vec![b'a'; i * 100])))
                                .unwrap();
                            send.ready().await.unwrap();
                            let resp = send.send_request(req).await.unwrap();
                            let got = resp.into_body().collect().await.unwrap().to_bytes();
                            let mut want = format!("/s{i}|").into_bytes();
                            want.extend(std::iter::repeat_n(b'a', i * 100));
                            assert_eq!(got, want);
                        })
                    })
                    .collect();
                for r in reqs {
                    r.join().unwrap();
                }
                drop(send);
                driver.join().unwrap().unwrap();
            });
            server.join().unwrap();
        });
    });
}
