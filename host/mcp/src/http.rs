//! The streamable HTTP transport, served by hyper at `/mcp`.

use std::{convert::Infallible, net::SocketAddr, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full, combinators::BoxBody};
use hyper::{Method, Request, Response, StatusCode, body::Incoming, server::conn::http1};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio::{net::TcpListener, sync::Semaphore, task::JoinHandle};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

mod callback;
pub use callback::escape_html;
mod expiry;
mod metrics;
pub(crate) mod services;

use callback::{CALLBACK_PATH, START_PATH, callback_page, start_page};
use services::Services;

pub use metrics::{METRICS_PATH, MetricsServer, SessionCount, serve_metrics};

use crate::peers::Peers;
use crate::{
    Backend, Error, WardenServer,
    auth::{HttpAuth, METADATA_PATH, Rejection},
    guard::{self, MAX_DEPTH, MAX_MESSAGE_BYTES, Refusal},
};

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The default of [`HttpConfig::max_connections`]: half the usual soft
/// limit on open files (`ulimit -n`, 1024 on most Linux systems), leaving
/// the other half to what else the process opens (the data dir's databases
/// and audit log, the compile cache, egress connections).
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The default of [`HttpConfig::max_connections_per_peer`]: a quarter of
/// [`DEFAULT_MAX_CONNECTIONS`], so it takes four peers to hold them all.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = DEFAULT_MAX_CONNECTIONS / 4;

/// A running streamable HTTP server. Dropping it stops the server.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    /// `https` with TLS, else `http`.
    scheme: &'static str,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
    /// The sessions of the stateful service.
    manager: Arc<LocalSessionManager>,
}

impl HttpServer {
    /// What counts the MCP sessions this server holds (for the metrics).
    pub fn sessions(&self) -> SessionCount {
        SessionCount(self.manager.clone())
    }

    /// The address the server is bound to (with the real port when `:0`
    /// was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint URL, e.g. `http://127.0.0.1:8765/mcp` (`https`
    /// with TLS).
    pub fn url(&self) -> String {
        format!("{}://{}{MCP_PATH}", self.scheme, self.addr)
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

/// How the HTTP endpoint is exposed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// How callers authenticate; required unless the address is loopback.
    pub auth: Option<HttpAuth>,
    /// `Host` header values accepted besides loopback names and the bound
    /// address (e.g. the name a load balancer forwards), against DNS rebinding.
    pub allowed_hosts: Vec<String>,
    /// Serve HTTPS with this configuration (see [`crate::tls::server_config`]).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Which clients get a server-side MCP session.
    pub sessions: Sessions,
    /// How many connections may be open at once, TLS handshakes included
    /// (at least 1; default [`DEFAULT_MAX_CONNECTIONS`]). At the cap no more
    /// are accepted until one closes: further clients wait in the kernel's
    /// listen backlog.
    pub max_connections: usize,
    /// How many of them one peer (an IPv4 address, an IPv6 /64) may hold
    /// (at least 1; default [`DEFAULT_MAX_CONNECTIONS_PER_PEER`]). A
    /// connection past its peer's share is closed at once. Behind a proxy
    /// every client is the proxy: set it to `max_connections` there.
    pub max_connections_per_peer: usize,
    /// How long a caller may take to send a request's body, once its head
    /// is in (default [`DEFAULT_BODY_TIMEOUT`]); then it is answered `408`
    /// and the connection closed.
    pub body_timeout: std::time::Duration,
}

/// The default of [`HttpConfig::body_timeout`]: a message is at most
/// [`MAX_MESSAGE_BYTES`], which any client sends well within it.
pub const DEFAULT_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            auth: None,
            allowed_hosts: Vec::new(),
            tls: None,
            sessions: Sessions::default(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_CONNECTIONS_PER_PEER,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        }
    }
}

/// Which clients get a server-side MCP session (`warden serve --sessions`).
///
/// A session ties a client to the host that holds it; without one, every
/// request is served on its own (the SDK's stateless mode), so any host
/// behind a load balancer answers any request. Approvals, grants and
/// leases live in the shared store either way; what needs a session is
/// elicitation (the server asks the client in the middle of a call), so a
/// stateless client gets "approve, then call again" instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sessions {
    /// Every client (the default).
    #[default]
    All,
    /// Only clients that declare the elicitation capability at
    /// `initialize`; every other request is stateless.
    Elicitation,
    /// No client: every request is stateless.
    None,
}

impl HttpConfig {
    /// Callers must authenticate with `auth`.
    pub fn with_auth(mut self, auth: HttpAuth) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Give server-side sessions to the clients `sessions` says.
    pub fn with_sessions(mut self, sessions: Sessions) -> Self {
        self.sessions = sessions;
        self
    }

    /// Serve HTTPS with `tls` instead of plain HTTP.
    pub fn with_tls(mut self, tls: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Keep at most `max` connections open at once (see
    /// [`HttpConfig::max_connections`]).
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max;
        self
    }

    /// Let one peer hold at most `max` connections (see
    /// [`HttpConfig::max_connections_per_peer`]).
    pub fn with_max_connections_per_peer(mut self, max: usize) -> Self {
        self.max_connections_per_peer = max;
        self
    }

    /// Give a caller `timeout` to send a request's body (see
    /// [`HttpConfig::body_timeout`]).
    pub fn with_body_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// Also accept requests whose `Host` header is `host`.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }
}

/// Serves MCP over streamable HTTP at `http://{addr}/mcp`, without
/// authentication: only a loopback `addr` is accepted (see
/// [`serve_http_with`]).
///
/// Only loopback `Host` headers (and the bound address itself) are accepted,
/// against DNS rebinding; bind to `127.0.0.1:0` to pick a free port. Bound to
/// every address (`0.0.0.0`), it needs the names clients use
/// ([`HttpConfig::allowed_hosts`]; [`Error::NoAllowedHost`] otherwise).
pub async fn serve_http<B: Backend>(
    backend: Arc<B>,
    addr: SocketAddr,
) -> Result<HttpServer, Error> {
    serve_http_with(backend, addr, HttpConfig::default()).await
}

/// Serves MCP over streamable HTTP at `http://{addr}/mcp` as `config` says.
///
/// On anything but a loopback address, an [`HttpAuth`] is required
/// ([`Error::Unauthenticated`] otherwise): the endpoint runs tools with the
/// host's credentials, so it is never open to whoever can reach the port.
/// Every request is authenticated before MCP sees it; the caller's identity
/// is attached to the request (see [`crate::Caller`]).
pub async fn serve_http_with<B: Backend>(
    backend: Arc<B>,
    addr: SocketAddr,
    config: HttpConfig,
) -> Result<HttpServer, Error> {
    if config.auth.is_none() && !addr.ip().is_loopback() {
        return Err(Error::Unauthenticated { addr });
    }
    if addr.ip().is_unspecified() && config.allowed_hosts.is_empty() {
        return Err(Error::NoAllowedHost { addr });
    }
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| Error::Bind { addr, source })?;
    let stop = CancellationToken::new();
    let mut sdk = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.child_token())
        .with_max_request_body_bytes(MAX_MESSAGE_BYTES);
    // A client may name the bound address itself; no client names `0.0.0.0`.
    if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
        sdk.allowed_hosts.push(addr.ip().to_string());
    }
    sdk.allowed_hosts.extend(config.allowed_hosts);
    let server = WardenServer::new(backend.clone());
    let stateless_sdk = sdk
        .clone()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let factory = server.clone();
    let manager = Arc::new(LocalSessionManager::default());
    let service = Services {
        stateful: StreamableHttpService::new(move || Ok(server.clone()), manager.clone(), sdk),
        stateless: StreamableHttpService::new(
            move || Ok(factory.clone()),
            Default::default(),
            stateless_sdk,
        ),
        sessions: config.sessions,
        owners: Arc::default(),
        manager: manager.clone(),
        body_timeout: config.body_timeout,
        backend,
    };
    let auth = config.auth.map(Arc::new);
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let tls = config.tls.map(TlsAcceptor::from);
    let slots = Semaphore::new(config.max_connections.clamp(1, Semaphore::MAX_PERMITS));
    let task = tokio::spawn(accept(
        listener,
        Arc::new(slots),
        Peers::new(config.max_connections_per_peer),
        service,
        auth,
        tls,
        stop.clone(),
    ));
    Ok(HttpServer {
        addr,
        scheme,
        stop,
        task: Some(task),
        manager,
    })
}

/// How long a client has to complete its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a client may take to send a request's head (hyper enforces it
/// only when given a timer: without one, a connection that trickled its
/// headers, before any authentication, was held open for ever). hyper 1.x
/// runs it whenever it waits for a head, so it also closes a connection
/// left idle that long, new or kept alive: an idle client holds one of the
/// `max_connections` slots for at most this long.
const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The pause after a failed `accept` (out of file descriptors, say), so
/// the loop waits for connections to close instead of spinning.
const ACCEPT_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Accept connections while `slots` has a permit for each: every
/// connection's task holds one until the connection closes, and a slot of
/// its peer's share (`peers`); one past that share is closed at once.
///
/// At the cap the loop stops accepting until a connection closes, leaving
/// further clients in the kernel's listen backlog (what tokio's example
/// server, mini-redis, does), rather than accepting and closing them at
/// once: a client that waits is served once there is room instead of
/// failing, and the backlog bounds how many wait.
async fn accept<B: Backend>(
    listener: TcpListener,
    slots: Arc<Semaphore>,
    peers: Arc<Peers>,
    service: Services<B>,
    auth: Option<Arc<HttpAuth>>,
    tls: Option<TlsAcceptor>,
    stop: CancellationToken,
) {
    loop {
        let slot = tokio::select! {
            () = stop.cancelled() => return,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_closed) => return,
            },
        };
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accepting an MCP HTTP connection failed");
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(ACCEPT_RETRY_PAUSE) => continue,
                    }
                }
            },
        };
        let Some(peer_slot) = peers.enter(peer.ip()) else {
            tracing::debug!(%peer, "closed: the peer holds its share of connections");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (service, auth) = (service.clone(), auth.clone());
        let (stop, tls) = (stop.clone(), tls.clone());
        tokio::spawn(async move {
            // The slots are freed when the connection is done.
            let _slots = (slot, peer_slot);
            let Some(tls) = tls else {
                return serve_connection(TokioIo::new(stream), service, auth, stop).await;
            };
            match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, tls.accept(stream)).await {
                Ok(Ok(stream)) => serve_connection(TokioIo::new(stream), service, auth, stop).await,
                Ok(Err(error)) => tracing::debug!(%error, "TLS handshake refused"),
                Err(_) => tracing::debug!("TLS handshake timed out"),
            }
        });
    }
}

/// Serve HTTP/1.1 on one connection until it closes or the server stops.
async fn serve_connection<B, I>(
    io: I,
    service: Services<B>,
    auth: Option<Arc<HttpAuth>>,
    stop: CancellationToken,
) where
    B: Backend,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (service, auth) = (service.clone(), auth.clone());
        async move { Ok::<_, Infallible>(route(&service, auth.as_deref(), request).await) }
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(io, handler);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// Serve `/mcp`. A POST body is read here first (at most
/// [`MAX_MESSAGE_BYTES`]) so that one too large or nested too deep is
/// answered with a JSON-RPC error carrying its id ([`guard`]) rather than the
/// SDK's bare status; such an answer holds nothing but the sender's own id.
/// Everything else, headers and sessions included, is the SDK's.
///
/// With `auth`, a request is authenticated before anything else is read, and
/// carries its [`crate::Caller`] in its extensions from there on; a session
/// is then usable only by the caller that opened it ([`SessionOwners`]).
async fn route<B: Backend>(
    services: &Services<B>,
    auth: Option<&HttpAuth>,
    mut request: Request<Incoming>,
) -> Answer {
    if !one_host(&request) {
        return status(StatusCode::BAD_REQUEST);
    }
    if let Some(HttpAuth::Jwt(jwt)) = auth
        && request.method() == Method::GET
        && [
            METADATA_PATH.to_owned(),
            format!("{METADATA_PATH}{MCP_PATH}"),
        ]
        .contains(&request.uri().path().to_owned())
    {
        return json(StatusCode::OK, jwt.metadata().to_string());
    }
    // A person's browser returning from an authorization server: no
    // bearer token comes with it; the `state` it carries is what binds it
    // to the connection (and the caller) that started it.
    if request.uri().path() == CALLBACK_PATH && request.method() == Method::GET {
        let query = request.uri().query().unwrap_or_default();
        return match services.backend.oauth_callback(query).await {
            None => status(StatusCode::NOT_FOUND),
            Some(outcome) => callback_page(outcome),
        };
    }
    // A connection's link: the page saying whose account it connects.
    if request.uri().path() == START_PATH && request.method() == Method::GET {
        let query = request.uri().query().unwrap_or_default();
        return start_page(services.backend.oauth_start(query).await);
    }
    // The host's metrics, behind the same authentication as MCP.
    let for_metrics = request.uri().path() == METRICS_PATH;
    if !for_metrics && request.uri().path() != MCP_PATH {
        return status(StatusCode::NOT_FOUND);
    }
    if let Some(auth) = auth {
        let mut authenticated = auth.authenticate(request.headers(), unix_now());
        // A token signed with a key the issuer added since the keys were read.
        if matches!(authenticated, Err(Rejection::InvalidToken))
            && auth.refresh_keys(request.headers()).await
        {
            authenticated = auth.authenticate(request.headers(), unix_now());
        }
        match authenticated {
            Ok(caller) => {
                request.extensions_mut().insert(caller);
            }
            Err(rejection) => return unauthorized(auth, rejection),
        }
    }
    if for_metrics {
        let sessions = SessionCount(services.manager.clone());
        return metrics::answer(&*services.backend, request.method(), Some(&sessions)).await;
    }
    let caller = request.extensions().get::<crate::Caller>().cloned();
    let Some(crate::Caller {
        subject,
        expires_at,
        ..
    }) = caller
    else {
        return dispatch(services, request).await;
    };
    let watch = auth.and_then(|auth| auth.stream_watch(request.headers()));
    // A session is its opener's: another caller is told it does not exist.
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .map(|id| String::from_utf8_lossy(id.as_bytes()).into_owned());
    if let Some(session) = &session
        && !services.owners.allows(session, &subject)
    {
        return status(StatusCode::NOT_FOUND);
    }
    let ending = request.method() == Method::DELETE;
    let answer = expiry::end_stream_at(dispatch(services, request).await, expires_at, watch);
    match session {
        None => {
            if let Some(opened) = answer.headers().get(SESSION_HEADER) {
                let opened = String::from_utf8_lossy(opened.as_bytes()).into_owned();
                services.make_room_for(&subject).await;
                services.owners.opened(opened, subject);
            }
        }
        Some(session) if ending && answer.status().is_success() => {
            services.owners.ended(&session);
        }
        Some(_) => {}
    }
    answer
}

/// Whether `request` names one host: at most one `Host` field line (RFC
/// 9112 §3.2 asks a server to answer 400 to more), and an absolute-form
/// target (`POST https://other/mcp`) only with the authority its `Host`
/// names. The SDK checks the allowed hosts against the first `Host` line
/// alone; a second line, or an authority in the target that nobody checked,
/// named a host the check never saw.
fn one_host<T>(request: &Request<T>) -> bool {
    let mut hosts = request.headers().get_all(hyper::header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return false;
    }
    match (request.uri().authority(), host) {
        (None, _) => true,
        (Some(authority), Some(host)) => authority
            .as_str()
            .as_bytes()
            .eq_ignore_ascii_case(host.as_bytes()),
        (Some(_), None) => false,
    }
}

/// The header naming a request's MCP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Hand an authenticated request to the SDK (see [`route`]).
async fn dispatch<B: Backend>(services: &Services<B>, request: Request<Incoming>) -> Answer {
    let has_session = request.headers().contains_key(SESSION_HEADER);
    if request.method() == Method::DELETE {
        // The SDK answers an ended session `202 Accepted`; clients (the
        // Python SDK's among them) expect `200` or `204` and log a failure
        // otherwise. The session is ended by then: say so plainly.
        let mut answer = services.pick(has_session, None).handle(request).await;
        if answer.status() == StatusCode::ACCEPTED {
            *answer.status_mut() = StatusCode::OK;
        }
        return answer;
    }
    if request.method() != Method::POST {
        return services.pick(has_session, None).handle(request).await;
    }
    let (parts, body) = request.into_parts();
    // A body trickled without end held its connection (and a slot) for ever.
    let body = match tokio::time::timeout(services.body_timeout, read_body(body)).await {
        Ok(Ok(body)) => body,
        Ok(Err(response)) => return response,
        Err(_) => {
            let mut answer = status(StatusCode::REQUEST_TIMEOUT);
            answer.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            return answer;
        }
    };
    if guard::too_deep(&body, MAX_DEPTH) {
        return refused(&body, Refusal::Unparsable, StatusCode::BAD_REQUEST);
    }
    services
        .pick(has_session, Some(&body))
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

/// `401` (or `403`) with the challenge that says what was wrong.
fn unauthorized(auth: &HttpAuth, rejection: Rejection) -> Answer {
    let code = StatusCode::from_u16(rejection.status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut response = status(code);
    if let Ok(challenge) = hyper::header::HeaderValue::from_str(&auth.challenge(rejection)) {
        response
            .headers_mut()
            .insert(hyper::header::WWW_AUTHENTICATE, challenge);
    }
    response
}

fn json(code: StatusCode, body: String) -> Answer {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = code;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn status(code: StatusCode) -> Answer {
    let mut response = Response::new(Empty::new().boxed());
    *response.status_mut() = code;
    response
}
