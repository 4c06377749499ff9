//! An MCP server (stdio and streamable HTTP) over a Warden tool backend.
//!
//! The server speaks MCP with the official Rust SDK (`rmcp`) and knows nothing
//! of wasm, manifests or policy: it serves any [`Backend`]. `tools/list` comes
//! from [`Backend::tools`] (cached until [`Backend::changes`] ticks, which
//! also sends `notifications/tools/list_changed`); `tools/call` goes to
//! [`Backend::call`]. A call that needs approval is put to the person through
//! MCP elicitation when the client supports it, then resumed once with
//! [`Backend::resolve`]; otherwise the model gets a tool error carrying the
//! approval id and how to approve.
//!
//! Over HTTP, [`serve_http_with`] authenticates every request ([`HttpAuth`]: a
//! static bearer token, or OAuth 2.1 JWT access tokens with protected-resource
//! metadata) and refuses to serve a non-loopback address without it; the
//! authenticated [`Caller`] is handed to [`Backend::call`].
//!
//! The smallest use, serving a backend on stdio until the client hangs up:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # async fn run(backend: Arc<impl warden_mcp::Backend>) -> Result<(), warden_mcp::Error> {
//! warden_mcp::serve_stdio(backend).await
//! # }
//! ```
//!
//! Or over streamable HTTP on loopback:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # async fn run(backend: Arc<impl warden_mcp::Backend>) -> Result<(), warden_mcp::Error> {
//! let server = warden_mcp::serve_http(backend, warden_mcp::DEFAULT_HTTP_ADDR).await?;
//! println!("MCP endpoint: {}", server.url());
//! tokio::signal::ctrl_c().await.ok();
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod approval;
mod auth;
mod backend;
mod catalog;
mod connect;
/// Entry points for the fuzz targets in `tests/fuzz` (feature `fuzzing`,
/// off by default): the line framing, the message guards and the token
/// checks are crate-private, and reaching them through a server would cost
/// a connection per input.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod guard;
mod http;
mod lines;
mod owners;
mod parse;
mod peers;
mod relay;
mod reports;
mod result;
mod server;
mod stdio;
pub mod tls;
mod trace_context;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

pub use auth::{
    AuthConfigError, BearerToken, Caller, HttpAuth, JwksSource, JwtAuth, KEY_MAX_AGE,
    KEY_REFETCH_INTERVAL, LEEWAY_SECS, METADATA_PATH, MIN_TOKEN_LEN, STREAM_RECHECK_INTERVAL,
};
pub use backend::{
    ApprovalAnswer, Backend, BoxFuture, CallResult, CallSignals, OAuthCallback, OAuthStart,
    ToolEntry, ToolHints, UrlConnect,
};
pub use http::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_PEER, HttpConfig,
    HttpServer, MCP_PATH, METRICS_PATH, MetricsServer, SessionCount, Sessions, escape_html,
    serve_http, serve_http_with, serve_metrics,
};
pub use result::{APPROVAL_REQUIRED, META_APPROVAL_ID, META_AUTH, META_ERROR_CODE};
pub use server::WardenServer;
pub use stdio::{serve_io, serve_stdio};

/// The default streamable HTTP address: loopback only.
pub const DEFAULT_HTTP_ADDR: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8765));

/// Why serving MCP failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The HTTP listener could not bind its address.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// HTTP on a non-loopback address was asked for without authentication.
    #[error(
        "refusing to serve MCP on {addr} without authentication: it is not a loopback address; configure a bearer token (`--auth-token-file`) or bind 127.0.0.1"
    )]
    Unauthenticated {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// HTTP on every address (`0.0.0.0`, `::`) was asked for without naming
    /// a `Host` its clients use: only loopback names would be accepted, so
    /// every remote client would get `403`.
    #[error(
        "serving MCP on {addr} (every address) accepts only the Host names given to it, and none is: name the one clients reach it by (`--allowed-host`, or the host of `--oauth-audience`)"
    )]
    NoAllowedHost {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The client's `initialize` handshake failed or the connection closed
    /// before it completed.
    #[error("MCP handshake failed")]
    Handshake(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The connection's serving task panicked or was aborted.
    #[error("MCP service task failed")]
    Task(#[source] tokio::task::JoinError),
}
