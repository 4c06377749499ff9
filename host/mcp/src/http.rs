//! The streamable HTTP transport, served by hyper at `/mcp`.

use std::{convert::Infallible, net::SocketAddr, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full, combinators::BoxBody};
use hyper::{Method, Request, Response, StatusCode, body::Incoming, server::conn::http1};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::{
    Backend, Error, WardenServer,
    guard::{self, MAX_DEPTH, MAX_MESSAGE_BYTES, Refusal},
};

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
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.child_token())
        .with_max_request_body_bytes(MAX_MESSAGE_BYTES);
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

/// Serve `/mcp`. A POST body is read here first (at most
/// [`MAX_MESSAGE_BYTES`]) so that one too large or nested too deep is
/// answered with a JSON-RPC error carrying its id ([`guard`]) rather than the
/// SDK's bare status; such an answer holds nothing but the sender's own id.
/// Everything else, headers and sessions included, is the SDK's.
async fn route<B: Backend>(
    service: &StreamableHttpService<WardenServer<B>, LocalSessionManager>,
    request: Request<Incoming>,
) -> Answer {
    if request.uri().path() != MCP_PATH {
        return status(StatusCode::NOT_FOUND);
    }
    if request.method() != Method::POST {
        return service.handle(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match read_body(body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    if guard::too_deep(&body, MAX_DEPTH) {
        return refused(&body, Refusal::Unparsable, StatusCode::BAD_REQUEST);
    }
    service
        .handle(Request::from_parts(parts, Full::new(body)))
        .await
}

type Answer = Response<BoxBody<Bytes, Infallible>>;

/// The whole body of a POST, or the answer refusing it: past
/// [`MAX_MESSAGE_BYTES`] it is not read further and is answered with a
/// JSON-RPC error carrying the id found in what was read.
async fn read_body(mut body: Incoming) -> Result<Bytes, Answer> {
    let mut collected = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err(status(StatusCode::BAD_REQUEST));
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let room = MAX_MESSAGE_BYTES - collected.len();
        collected.extend_from_slice(&data[..data.len().min(room)]);
        if data.len() > room {
            return Err(refused(
                &collected,
                Refusal::TooLarge,
                StatusCode::PAYLOAD_TOO_LARGE,
            ));
        }
    }
    Ok(Bytes::from(collected))
}

/// A JSON-RPC error response for a refused message, or the bare `status`
/// when its id cannot be found.
fn refused(body: &[u8], refusal: Refusal, code: StatusCode) -> Answer {
    let Some(json) = guard::error_response(body, refusal) else {
        return status(code);
    };
    let mut response = Response::new(Full::new(Bytes::from(json)).boxed());
    *response.status_mut() = code;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn status(code: StatusCode) -> Answer {
    let mut response = Response::new(Empty::new().boxed());
    *response.status_mut() = code;
    response
}
