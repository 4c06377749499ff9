//! The host's metrics over HTTP: `GET /metrics` on the MCP endpoint (behind
//! its authentication), or on a listener of its own (`warden serve
//! --metrics ADDR`) for a Prometheus server to scrape.
//!
//! The text is [`Backend::metrics`]'s; a backend that counts nothing has no
//! `/metrics` (404). The own listener speaks plain HTTP/1.1, answers only
//! `GET /metrics`, and holds few connections: the metrics carry counts and
//! the names of installed capabilities, never an input, an output or a
//! secret, so it asks no credentials; bind it where only the scraper
//! reaches (loopback or the operator's network). Bound to a loopback
//! address it answers only requests naming a loopback host (`localhost`,
//! `127.0.0.1`, `[::1]`): a web page the operator opens cannot read it by
//! pointing a name of its own at 127.0.0.1 (DNS rebinding).

use std::{convert::Infallible, net::SocketAddr, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, Response, StatusCode, body::Incoming, server::conn::http1};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tokio::{net::TcpListener, sync::Semaphore, task::JoinHandle};
use tokio_util::sync::CancellationToken;

use super::{Answer, HEADER_READ_TIMEOUT, status};
use crate::{Backend, Error};

/// The path the metrics are served at.
pub const METRICS_PATH: &str = "/metrics";

/// The `Content-Type` of the Prometheus text format (version 0.0.4).
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How many scrapes the own listener serves at once; more wait in the
/// listen backlog.
const MAX_CONNECTIONS: usize = 8;

/// How many MCP sessions a streamable HTTP server holds now
/// ([`crate::HttpServer::sessions`]).
#[derive(Clone)]
pub struct SessionCount(pub(super) Arc<LocalSessionManager>);

impl std::fmt::Debug for SessionCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCount").finish_non_exhaustive()
    }
}

impl SessionCount {
    /// The sessions open now.
    pub async fn now(&self) -> usize {
        self.0.sessions.read().await.len()
    }
}

/// The answer to a request for the metrics: `GET` (or `HEAD`) only.
pub(super) async fn answer<B: Backend>(
    backend: &B,
    method: &Method,
    sessions: Option<&SessionCount>,
) -> Answer {
    if method != Method::GET && method != Method::HEAD {
        let mut refused = status(StatusCode::METHOD_NOT_ALLOWED);
        refused.headers_mut().insert(
            hyper::header::ALLOW,
            hyper::header::HeaderValue::from_static("GET, HEAD"),
        );
        return refused;
    }
    let open = match sessions {
        Some(sessions) => Some(sessions.now().await),
        None => None,
    };
    match backend.metrics(open).await {
        None => status(StatusCode::NOT_FOUND),
        Some(text) => {
            let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(TEXT_FORMAT),
            );
            response
        }
    }
}

/// Whether `request`'s `Host` names a loopback host (any port): what a
/// scraper of a loopback listener sends, and what a page whose own name
/// was pointed at 127.0.0.1 does not.
fn names_loopback(request: &Request<Incoming>) -> bool {
    let Some(host) = request
        .headers()
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
    else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        // `[::1]:9464`
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A running metrics listener. Dropping it stops it.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// The URL scrapers read, e.g. `http://127.0.0.1:9464/metrics`.
    pub fn url(&self) -> String {
        format!("http://{}{METRICS_PATH}", self.addr)
    }

    /// The address bound (with the real port when `:0` was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stop accepting and wait for the listener to finish.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serve `backend`'s metrics at `http://{addr}/metrics`, with the MCP
/// sessions `sessions` counts (none over stdio).
pub async fn serve_metrics<B: Backend>(
    backend: Arc<B>,
    addr: SocketAddr,
    sessions: Option<SessionCount>,
) -> Result<MetricsServer, Error> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| Error::Bind { addr, source })?;
    let stop = CancellationToken::new();
    let task = tokio::spawn(accept(listener, backend, sessions, stop.clone()));
    Ok(MetricsServer {
        addr,
        stop,
        task: Some(task),
    })
}

async fn accept<B: Backend>(
    listener: TcpListener,
    backend: Arc<B>,
    sessions: Option<SessionCount>,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let loopback = listener
        .local_addr()
        .is_ok_and(|addr| addr.ip().is_loopback());
    loop {
        let slot = tokio::select! {
            () = stop.cancelled() => return,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_closed) => return,
            },
        };
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "accepting a metrics connection failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let (backend, sessions, stop) = (backend.clone(), sessions.clone(), stop.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let (backend, sessions) = (backend.clone(), sessions.clone());
                async move {
                    let answer = match request.uri().path() {
                        _ if loopback && !names_loopback(&request) => {
                            status(StatusCode::MISDIRECTED_REQUEST)
                        }
                        METRICS_PATH => {
                            answer(&*backend, request.method(), sessions.as_ref()).await
                        }
                        _ => status(StatusCode::NOT_FOUND),
                    };
                    Ok::<_, Infallible>(answer)
                }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), handler);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
}
