//! `warden serve`: the tools over MCP.
//!
//! Calls run under the runtime's per-call limits and share one host-wide
//! memory budget (`--memory-budget`, default
//! [`warden_runtime::DEFAULT_MEMORY_BUDGET`], 8 GiB): each running call
//! reserves its tool's whole memory limit, so a burst of calls of a tool
//! declaring 512 MiB holds at most 16 at once by default and the rest wait in
//! the queue; a tool whose limit alone exceeds the budget is refused with
//! `memory_budget_exceeded`.
//!
//! The catalog is live: packages another `warden` process installs,
//! upgrades or uninstalls are picked up and announced (see [`live`]).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use warden_mcp::{BearerToken, HttpAuth, HttpConfig, JwksSource, JwtAuth};

use super::Context;
use crate::cli::ServeAuthArgs;

mod changes;
mod live;
mod otlp;

/// What watches the server: `--metrics` and `--otlp-endpoint`.
pub(crate) struct Observe {
    /// `--metrics ADDR`: a listener of their own.
    pub(crate) metrics_at: Option<SocketAddr>,
    /// `--otlp-endpoint URL`.
    pub(crate) otlp_endpoint: Option<String>,
}

/// Serve stdio (default) or streamable HTTP; over HTTP, callers authenticate
/// as `auth` says (required off loopback).
pub(crate) async fn run(
    cx: &Context,
    http: Option<SocketAddr>,
    observe: Observe,
    auth: ServeAuthArgs,
    approval_wait: std::time::Duration,
) -> Result<ExitCode> {
    let metrics_at = observe.metrics_at;
    if cx.metrics && http.is_none() && metrics_at.is_none() {
        anyhow::bail!(
            "--metrics without an address serves them on the --http endpoint; over stdio, give \
             it an address of its own (e.g. --metrics 127.0.0.1:9464)"
        );
    }
    // Authentication is settled before the host opens: a refused setting
    // never leaves a half-started server.
    let (mut config, discover) = http_config(auth)?;
    if let Some(addr) = http
        && config.auth.is_none()
        && discover.is_none()
        && !addr.ip().is_loopback()
    {
        return Err(warden_mcp::Error::Unauthenticated { addr }.into());
    }
    // Installed before the host opens, so its first call is traced.
    let exporter = match &observe.otlp_endpoint {
        Some(endpoint) => Some(otlp::install(endpoint)?),
        None => None,
    };
    // Seen before opening, so a change made while the Location opens is
    // applied on the first check.
    let seen = live::signature(&cx.packages_dir());
    let seen_mcp = live::signature(&cx.mcp_dir());
    let (host, location) = cx.open()?;
    if let Some(issuer) = discover {
        let keys = host
            .issuer_jwks(&issuer.issuer)
            .await
            .with_context(|| format!("fetching the signing keys of {}", issuer.issuer))?;
        let source = Arc::new(IssuerKeys {
            host: host.clone(),
            issuer: issuer.issuer.clone(),
        });
        let jwt = JwtAuth::new(issuer.issuer, issuer.audience, &keys, issuer.scopes)
            .context("the --oauth-* settings")?
            .with_rotation(source);
        config = config.with_auth(HttpAuth::Jwt(jwt));
    }
    // Hosted servers are listed in the background (a slow or unreachable
    // server never delays the others); each republish is announced with
    // tools/list_changed, as are the servers' own list_changed.
    let follower = location.clone();
    tokio::spawn(async move { follower.follow_hosted().await });
    // Components compile in the background, one at a time, while the
    // catalog (from the manifests) is already served; a call arriving first
    // compiles its own component.
    let warming = location.clone();
    tokio::spawn(async move { warming.warm_up().await });
    // The store forgets what is settled past the retention, now and hourly.
    let pruning = host.clone();
    tokio::spawn(async move {
        let mut hourly = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            hourly.tick().await;
            match pruning.prune_store().await {
                Ok(0) => {}
                Ok(rows) => tracing::info!(rows, "pruned the approval store"),
                Err(error) => tracing::warn!(%error, "could not prune the approval store"),
            }
        }
    });
    let watcher = live::spawn(location.clone(), cx.packages_dir(), seen);
    let mcp_watcher = live::spawn_for(location.clone(), cx.mcp_dir(), seen_mcp, live::Kind::User);
    let backend = crate::backend::HostBackend::new(
        host,
        location,
        cx.settings.oauth_clients()?,
        approval_wait,
    );
    // With a shared store, this host follows the deployment's package set
    // (installing into its data directory, which the watcher publishes).
    let following = async {
        match &cx.package_set {
            Some(set) => super::package_set::follow(cx, set.clone()).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(following);
    match http {
        None => {
            let _metrics = serve_metrics(&backend, metrics_at, None).await?;
            tokio::select! {
                served = warden_mcp::serve_stdio(backend) => served?,
                () = &mut following => {}
            }
        }
        Some(addr) => {
            let server = warden_mcp::serve_http_with(backend.clone(), addr, config).await?;
            say!(
                "warden: MCP over streamable HTTP at {} (Ctrl-C stops)",
                server.url()
            );
            let metrics = serve_metrics(&backend, metrics_at, Some(server.sessions())).await?;
            tokio::select! {
                stopped = tokio::signal::ctrl_c() => stopped?,
                () = &mut following => {}
            }
            if let Some(metrics) = metrics {
                metrics.shutdown().await;
            }
            server.shutdown().await;
        }
    }
    watcher.abort();
    mcp_watcher.abort();
    if let Some(exporter) = exporter {
        exporter.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--metrics ADDR`: the metrics on a listener of their own.
async fn serve_metrics(
    backend: &Arc<crate::backend::HostBackend>,
    at: Option<SocketAddr>,
    sessions: Option<warden_mcp::SessionCount>,
) -> Result<Option<warden_mcp::MetricsServer>> {
    let Some(addr) = at else {
        return Ok(None);
    };
    let server = warden_mcp::serve_metrics(backend.clone(), addr, sessions)
        .await
        .with_context(|| format!("--metrics {addr}"))?;
    say!("warden: metrics at {}", server.url());
    Ok(Some(server))
}

/// The issuer's signing keys, fetched again through the host's egress when
/// a token names a key not yet known (the issuer rotated its keys).
#[derive(Debug)]
struct IssuerKeys {
    host: warden_host::Host,
    issuer: String,
}

#[async_trait::async_trait]
impl JwksSource for IssuerKeys {
    async fn fetch(&self) -> Result<String, String> {
        self.host
            .issuer_jwks(&self.issuer)
            .await
            .map_err(|e| format!("{e:#}"))
    }
}

/// `--oauth-jwks-file`, read again when a token names a key not yet known
/// (the operator replaced the file).
#[derive(Debug)]
struct JwksFile(std::path::PathBuf);

#[async_trait::async_trait]
impl JwksSource for JwksFile {
    async fn fetch(&self) -> Result<String, String> {
        tokio::fs::read_to_string(&self.0)
            .await
            .map_err(|e| format!("{}: {e}", self.0.display()))
    }
}

/// An OAuth issuer whose signing keys are fetched once the host is open.
struct IssuerToDiscover {
    issuer: String,
    audience: String,
    scopes: Vec<String>,
}

/// The HTTP endpoint's settings from the command line, and the issuer whose
/// keys must still be fetched (`--oauth-issuer` without `--oauth-jwks-file`).
fn http_config(auth: ServeAuthArgs) -> Result<(HttpConfig, Option<IssuerToDiscover>)> {
    let mut config = HttpConfig::default();
    let mut discover = None;
    if let Some(path) = &auth.auth_token_file {
        let token = BearerToken::from_file(path)
            .with_context(|| format!("--auth-token-file {}", path.display()))?;
        config = config.with_auth(HttpAuth::Bearer(token));
    }
    if let (Some(issuer), Some(audience)) = (auth.oauth_issuer, auth.oauth_audience) {
        // The audience is this server's own URL (RFC 8707): the Host its
        // clients send.
        if let Some(host) = audience_host(&audience) {
            config = config.allow_host(host);
        }
        match &auth.oauth_jwks_file {
            Some(jwks) => {
                let keys = std::fs::read_to_string(jwks)
                    .with_context(|| format!("--oauth-jwks-file {}", jwks.display()))?;
                let jwt = JwtAuth::new(issuer, audience, &keys, auth.oauth_scope)
                    .context("the --oauth-* settings")?
                    .with_rotation(Arc::new(JwksFile(jwks.clone())));
                config = config.with_auth(HttpAuth::Jwt(jwt));
            }
            None => {
                discover = Some(IssuerToDiscover {
                    issuer,
                    audience,
                    scopes: auth.oauth_scope,
                })
            }
        }
    }
    for host in auth.allowed_host {
        config = config.allow_host(host);
    }
    config = config.with_sessions(auth.sessions.into());
    if let Some(max) = auth.max_connections {
        config = config.with_max_connections(max);
    }
    if let Some(max) = auth.max_connections_per_peer {
        config = config.with_max_connections_per_peer(max);
    }
    if let (Some(cert), Some(key)) = (&auth.tls_cert, &auth.tls_key) {
        let read = |path: &std::path::Path, flag: &str| {
            std::fs::read(path).with_context(|| format!("{flag} {}", path.display()))
        };
        let tls =
            warden_mcp::tls::server_config(&read(cert, "--tls-cert")?, &read(key, "--tls-key")?)
                .with_context(|| {
                    format!(
                        "--tls-cert {} / --tls-key {}",
                        cert.display(),
                        key.display()
                    )
                })?;
        config = config.with_tls(tls);
    }
    Ok((config, discover))
}

/// The host of `--oauth-audience`, when it is a URL with one.
fn audience_host(audience: &str) -> Option<String> {
    let url = url::Url::parse(audience).ok()?;
    Some(url.host_str()?.trim_matches(['[', ']']).to_owned())
}

/// Parse `--memory-budget`: bytes, or a number with `KiB`, `MiB` or `GiB`;
/// at least the default per-call memory limit (one call must fit).
pub(crate) fn parse_memory_budget(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, ""), |at| text.split_at(at));
    let scale: u64 = match unit.trim() {
        "" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        other => return Err(format!("unknown unit `{other}`: use KiB, MiB or GiB")),
    };
    let bytes = digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("`{text}` is not a size in bytes, KiB, MiB or GiB"))?;
    let one_call = warden_runtime::Limits::DEFAULT.memory_bytes;
    if bytes < one_call {
        return Err(format!(
            "{bytes} bytes is less than one call's default memory limit ({} MiB)",
            one_call >> 20
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::audience_host;

    #[test]
    fn the_audience_names_the_host_clients_send() {
        assert_eq!(
            audience_host("https://mcp.example.com/mcp").as_deref(),
            Some("mcp.example.com")
        );
        assert_eq!(
            audience_host("https://[2001:db8::1]:8443/mcp").as_deref(),
            Some("2001:db8::1")
        );
        assert_eq!(audience_host("urn:warden:mcp"), None);
    }
}
