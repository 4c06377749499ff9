//! `warden serve`: its options and the HTTP endpoint's authentication.

use clap::{Args, ValueEnum};

/// `warden serve`'s options.
#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Serve streamable HTTP on this address instead of stdio (e.g. 127.0.0.1:8765).
    #[arg(long)]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// Worker threads serving calls. Default: 1 over stdio (one client:
    /// calls waiting on the network still overlap, and no call pays a
    /// cross-thread wake-up); one per core over HTTP, where several
    /// clients connect.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) workers: Option<u16>,
    /// Threads of the long-call lane: a call still burning CPU after a
    /// few epoch ticks finishes there, so new calls never queue behind
    /// it. `0` keeps every call on the workers (CPU-bound calls then share
    /// them in epoch slices). Default: one per core, at a lower priority
    /// than the workers.
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub(crate) long_call_threads: Option<u16>,
    /// Seconds a call that needs approval waits for a person to decide it
    /// elsewhere (the web console, `warden approvals approve`, another
    /// host) when its MCP client cannot be asked (no elicitation); it then
    /// runs, or ends with the refusal. `0` (the default) answers at once
    /// with the approval id, and the client repeats the call once approved.
    #[arg(long, value_name = "SECS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub(crate) approval_wait: u64,
    /// Memory all running calls may reserve together (each reserves its
    /// tool's memory limit; calls that do not fit wait), e.g. `8GiB`,
    /// `512MiB` or bytes. Default: 8 GiB.
    #[arg(long, value_parser = crate::commands::serve::parse_memory_budget)]
    pub(crate) memory_budget: Option<u64>,
    /// Count calls, authorization decisions, approvals waiting and
    /// egress, and serve them in the Prometheus text format: at
    /// `/metrics` on the `--http` endpoint (behind its authentication)
    /// and, given an address, on a listener of its own for a scraper
    /// (e.g. `--metrics 127.0.0.1:9464`).
    #[arg(long, value_name = "ADDR", num_args = 0..=1)]
    pub(crate) metrics: Option<Option<std::net::SocketAddr>>,
    /// Trace every call (a span for it, its authorization, its lane's
    /// run and each egress request) and export the spans over
    /// OTLP/HTTP to this collector (e.g. `http://127.0.0.1:4318`;
    /// `/v1/traces` is appended). A client's W3C trace context in the
    /// request's `_meta` (`traceparent`) is the call's parent.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// The origin people reach this server at (e.g.
    /// `https://warden.example.com`): an account a person connects from
    /// their client (an OAuth authorize URL it opens) returns to
    /// `<URL>/oauth/callback` here, and is stored as that caller's own.
    #[arg(long, value_name = "URL", requires = "http")]
    pub(crate) public_url: Option<String>,
    /// How HTTP callers authenticate (required off loopback).
    #[command(flatten)]
    pub(crate) auth: ServeAuthArgs,
}

/// Authentication of `serve --http`: a static bearer token, or OAuth 2.1
/// JWT access tokens from an issuer. One of them is required to serve on
/// anything but a loopback address.
#[derive(Args, Debug, Default)]
pub(crate) struct ServeAuthArgs {
    /// HTTP callers must send `Authorization: Bearer <token>` with the token
    /// in this file (at least 32 characters).
    #[arg(
        long,
        value_name = "PATH",
        requires = "http",
        conflicts_with = "oauth_issuer"
    )]
    pub(crate) auth_token_file: Option<std::path::PathBuf>,
    /// Accept JWT access tokens from this OAuth issuer (its `iss`).
    #[arg(
        long,
        value_name = "URL",
        requires_all = ["http", "oauth_audience"]
    )]
    pub(crate) oauth_issuer: Option<String>,
    /// This server's resource URL: tokens must name it in `aud`
    /// (e.g. `https://warden.example.com/mcp`).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub(crate) oauth_audience: Option<String>,
    /// The issuer's signing keys (a JWKS JSON document). Without it they
    /// are fetched at start from the issuer's metadata (`jwks_uri`, https,
    /// through egress).
    #[arg(long, value_name = "PATH", requires = "oauth_issuer")]
    pub(crate) oauth_jwks_file: Option<std::path::PathBuf>,
    /// A scope every token must carry (repeatable); otherwise `403`.
    #[arg(long, value_name = "SCOPE", requires = "oauth_issuer")]
    pub(crate) oauth_scope: Vec<String>,
    /// Also accept this `Host` header (e.g. the name a load balancer
    /// forwards); repeatable.
    #[arg(long, value_name = "HOST", requires = "http")]
    pub(crate) allowed_host: Vec<String>,
    /// Serve HTTPS with this certificate chain (PEM, leaf first), for
    /// direct exposure without a TLS-terminating proxy.
    #[arg(long, value_name = "PATH", requires_all = ["http", "tls_key"])]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// The private key of `--tls-cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// Which clients get a server-side MCP session: `all`; `elicitation`
    /// (only clients that can be asked for approvals mid-call); `none`
    /// (every request stands alone, so any host behind a load balancer
    /// answers it; approvals are "approve, then call again").
    #[arg(long, value_enum, default_value = "all", requires = "http")]
    pub(crate) sessions: SessionsArg,
    /// Connections open at once; at the cap, further clients wait (in the
    /// listen backlog) until one closes. Raise `ulimit -n` with it.
    /// Default: 512.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        requires = "http"
    )]
    pub(crate) max_connections: Option<usize>,
    /// Connections one peer (an IPv4 address, an IPv6 /64) may hold; one
    /// past its share is closed at once. Behind a proxy every client is the
    /// proxy: set it to --max-connections there. Default: 128.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        requires = "http"
    )]
    pub(crate) max_connections_per_peer: Option<usize>,
}

/// `serve --sessions`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum SessionsArg {
    /// Every client.
    #[default]
    All,
    /// Clients that declare elicitation.
    Elicitation,
    /// None: stateless.
    None,
}

impl From<SessionsArg> for warden_mcp::Sessions {
    fn from(arg: SessionsArg) -> Self {
        match arg {
            SessionsArg::All => warden_mcp::Sessions::All,
            SessionsArg::Elicitation => warden_mcp::Sessions::Elicitation,
            SessionsArg::None => warden_mcp::Sessions::None,
        }
    }
}
