//! A local HTTPS server (HTTP/1.1 and HTTP/2) that records every request.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::TestCa;
use crate::resolve::OverrideResolver;

/// What the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// Method.
    pub method: String,
    /// Path and query.
    pub target: String,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
    /// TLS server name the client sent.
    pub server_name: Option<String>,
    /// Header fields, names lowercase.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the handler answers.
#[derive(Debug, Clone)]
pub struct TestResponse {
    /// Status code.
    pub status: u16,
    /// Header fields.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

impl TestResponse {
    /// `200` with `body`.
    pub fn ok(body: impl Into<Vec<u8>>) -> Self {
        Self::status(200).with_body(body)
    }

    /// An empty response with `status`.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// `200` with a JSON body.
    pub fn json(value: &serde_json::Value) -> Self {
        Self::ok(value.to_string()).with_header("content-type", "application/json")
    }

    /// A redirect to `location`.
    pub fn redirect(status: u16, location: &str) -> Self {
        Self::status(status).with_header("location", location)
    }

    /// Add a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Replace the body.
    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }
}

type Handler = Arc<dyn Fn(&RecordedRequest) -> TestResponse + Send + Sync>;

/// A running local HTTPS server on `127.0.0.1`; stops when dropped.
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<RecordedRequest>>>,
    connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// Serve `hostnames` (certificate from `ca`) with `handler`, over
    /// HTTP/2 or HTTP/1.1 as the client asks.
    pub async fn start(
        ca: &TestCa,
        hostnames: &[&str],
        handler: impl Fn(&RecordedRequest) -> TestResponse + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        Self::serve(ca.server_config(hostnames), Arc::new(handler)).await
    }

    /// [`TestServer::start`], over HTTP/1.1 only (as many MCP servers are).
    pub async fn start_http1(
        ca: &TestCa,
        hostnames: &[&str],
        handler: impl Fn(&RecordedRequest) -> TestResponse + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        let config = ca.server_config_alpn(hostnames, &[b"http/1.1"]);
        Self::serve(config, Arc::new(handler)).await
    }

    async fn serve(config: Arc<rustls::ServerConfig>, handler: Handler) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let task = tokio::spawn(accept_loop(
            listener,
            TlsAcceptor::from(config),
            Arc::clone(&log),
            Arc::clone(&connections),
            handler,
        ));
        Ok(Self {
            addr,
            log,
            connections,
            task,
        })
    }

    /// How many connections were accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Everything received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A resolver sending each of `hosts` to this server.
    pub fn resolver(&self, hosts: &[&str]) -> OverrideResolver {
        hosts.iter().fold(OverrideResolver::new(), |r, host| {
            r.with_socket(host, [self.addr])
        })
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    log: Arc<Mutex<Vec<RecordedRequest>>>,
    connections: Arc<AtomicUsize>,
    handler: Handler,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        connections.fetch_add(1, Ordering::Relaxed);
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let log = Arc::clone(&log);
        let handler = Arc::clone(&handler);
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let server_name = tls.get_ref().1.server_name().map(str::to_owned);
            let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let log = Arc::clone(&log);
                let handler = Arc::clone(&handler);
                let server_name = server_name.clone();
                async move {
                    let (parts, body) = request.into_parts();
                    let body = body
                        .collect()
                        .await
                        .map(|b| b.to_bytes().to_vec())
                        .unwrap_or_default();
                    let target = parts
                        .uri
                        .path_and_query()
                        .map_or("/".to_owned(), |p| p.to_string());
                    let recorded = RecordedRequest {
                        method: parts.method.to_string(),
                        target,
                        version: format!("{:?}", parts.version),
                        server_name,
                        headers: parts
                            .headers
                            .iter()
                            .map(|(n, v)| {
                                (
                                    n.to_string(),
                                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                                )
                            })
                            .collect(),
                        body,
                    };
                    let answer = handler(&recorded);
                    log.lock().unwrap_or_else(|e| e.into_inner()).push(recorded);
                    let mut response = hyper::Response::builder().status(answer.status);
                    for (name, value) in &answer.headers {
                        response = response.header(name, value);
                    }
                    let response = response
                        .body(Full::new(Bytes::from(answer.body)))
                        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())));
                    Ok::<_, Infallible>(response)
                }
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}
