//! The streamable HTTP transport, served by hyper at `/mcp`.

use std::{convert::Infallible, net::SocketAddr, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, combinators::BoxBody};
use hyper::{Request, Response, StatusCode, body::Incoming, server::conn::http1};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::{Backend, Error, WardenServer};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// A running streamable HTTP server. Dropping it stops the server.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl HttpServer {
    /// The address the server is bound to (with the real port when `:0`
    /// was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint URL, e.g. `http://127.0.0.1:8765/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.addr)
    }

    /// Stops accepting connections, ends every session, and waits for the
    /// accept loop to finish.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves MCP over streamable HTTP at `http://{addr}/mcp`.
///
/// Only loopback `Host` headers (and the bound address itself) are accepted,
/// against DNS rebinding; bind to `127.0.0.1:0` to pick a free port.
pub async fn serve_http<B: Backend>(
    backend: Arc<B>,
    addr: SocketAddr,
) -> Result<HttpServer, Error> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| Error::Bind { addr, source })?;
    let stop = CancellationToken::new();
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    if !addr.ip().is_loopback() {
        config.allowed_hosts.push(addr.ip().to_string());
    }
    let server = WardenServer::new(backend);
    let service: StreamableHttpService<WardenServer<B>, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let task = tokio::spawn(accept(listener, service, stop.clone()));
    Ok(HttpServer {
        addr,
        stop,
        task: Some(task),
    })
}

async fn accept<B: Backend>(
    listener: TcpListener,
    service: StreamableHttpService<WardenServer<B>, LocalSessionManager>,
    stop: CancellationToken,
) {
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "accepting an MCP HTTP connection failed");
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                async move { Ok::<_, Infallible>(route(&service, request).await) }
            });
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), handler);
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

async fn route<B: Backend>(
    service: &StreamableHttpService<WardenServer<B>, LocalSessionManager>,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>> {
    if request.uri().path() != MCP_PATH {
        let mut response = Response::new(Empty::new().boxed());
        *response.status_mut() = StatusCode::NOT_FOUND;
        return response;
    }
    service.handle(request).await
}
