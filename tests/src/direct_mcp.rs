//! The baseline of the hosted-lane benchmark: rmcp's own client reaching an
//! [`RmcpServer`] directly, over one kept HTTPS connection of plain hyper —
//! no policy, no credential staging, no redaction, no authorization.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper::header::{HeaderName, HeaderValue};
use hyper_util::rt::TokioIo;
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use rustls_pki_types::ServerName;
use sse_stream::{Sse, SseStream};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio_rustls::TlsConnector;

use crate::rmcp_mcp::{HOST, RmcpServer, URL};

/// What can go wrong in the baseline client.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DirectError(String);

fn failed(e: impl std::fmt::Display) -> StreamableHttpError<DirectError> {
    StreamableHttpError::Client(DirectError(e.to_string()))
}

/// A hyper HTTP/1.1 connection over TLS to one server, reopened when closed.
#[derive(Clone)]
pub struct DirectHttp {
    addr: SocketAddr,
    tls: TlsConnector,
    connection: Arc<Mutex<Option<http1::SendRequest<Full<Bytes>>>>>,
}

impl std::fmt::Debug for DirectHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectHttp")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl DirectHttp {
    /// A client for `server`, trusting `ca`.
    pub fn new(server: &RmcpServer) -> Self {
        Self {
            addr: server.addr(),
            tls: crate::tls::connector(server.ca()),
            connection: Arc::default(),
        }
    }

    async fn send(
        &self,
        request: hyper::Request<Full<Bytes>>,
    ) -> Result<(hyper::http::response::Parts, Bytes), StreamableHttpError<DirectError>> {
        let mut connection = self.connection.lock().await;
        if connection.as_ref().is_none_or(|c| c.is_closed()) {
            let tcp = TcpStream::connect(self.addr).await.map_err(failed)?;
            tcp.set_nodelay(true).map_err(failed)?;
            let name = ServerName::try_from(HOST.to_owned()).map_err(failed)?;
            let tls = self.tls.connect(name, tcp).await.map_err(failed)?;
            let (sender, driver) = http1::handshake(TokioIo::new(tls)).await.map_err(failed)?;
            tokio::spawn(driver);
            *connection = Some(sender);
        }
        let sender = connection.as_mut().expect("connected");
        sender.ready().await.map_err(failed)?;
        let response = sender.send_request(request).await.map_err(failed)?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await.map_err(failed)?.to_bytes();
        Ok((parts, body))
    }
}

fn header<'a>(parts: &'a hyper::http::response::Parts, name: &str) -> Option<&'a str> {
    parts.headers.get(name).and_then(|v| v.to_str().ok())
}

impl StreamableHttpClient for DirectHttp {
    type Error = DirectError;

    async fn post_message(
        &self,
        _uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<DirectError>> {
        let body = serde_json::to_vec(&message)?;
        let mut request = hyper::Request::post("/mcp")
            .header("host", HOST)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = &session_id {
            request = request.header("mcp-session-id", id.as_ref());
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        let request = request.body(Full::new(Bytes::from(body))).map_err(failed)?;
        let (parts, body) = self.send(request).await?;
        let status = parts.status.as_u16();
        if matches!(status, 202 | 204) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == 404 && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !parts.status.is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}"),
            )));
        }
        let session = header(&parts, "mcp-session-id").map(str::to_owned);
        let content_type = header(&parts, "content-type").unwrap_or_default();
        if content_type.starts_with("text/event-stream") {
            let chunks = futures::stream::iter([Ok::<Bytes, std::io::Error>(body)]);
            return Ok(StreamableHttpPostResponse::Sse(
                SseStream::from_bytes_stream(chunks).boxed(),
                session,
            ));
        }
        if !matches!(message, ClientJsonRpcMessage::Request(_)) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let parsed: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
        Ok(StreamableHttpPostResponse::Json(parsed, session))
    }

    async fn delete_session(
        &self,
        _uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        _custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<DirectError>> {
        let request = hyper::Request::delete("/mcp")
            .header("host", HOST)
            .header("mcp-session-id", session_id.as_ref())
            .body(Full::new(Bytes::new()))
            .map_err(failed)?;
        self.send(request).await.map(|_| ())
    }

    async fn get_stream(
        &self,
        _uri: Arc<str>,
        _session_id: Option<Arc<str>>,
        _last_event_id: Option<String>,
        _auth_header: Option<String>,
        _custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<DirectError>> {
        Err(StreamableHttpError::ServerDoesNotSupportSse)
    }
}

/// A direct client's MCP session.
pub type Session = RunningService<RoleClient, ()>;

/// An initialized rmcp client session with `server`.
pub async fn connect(server: &RmcpServer) -> Session {
    let config = StreamableHttpClientTransportConfig::with_uri(URL);
    let transport = StreamableHttpClientTransport::with_client(DirectHttp::new(server), config);
    ().serve(transport)
        .await
        .expect("initialize the direct client")
}

/// Call `name` with `arguments` on a session from [`connect`]; the result
/// as JSON.
pub async fn call(client: &Session, name: &str, arguments: serde_json::Value) -> serde_json::Value {
    let serde_json::Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    let params = rmcp::model::CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
    let result = client.peer().call_tool(params).await.expect("direct call");
    serde_json::to_value(result).expect("result as JSON")
}
