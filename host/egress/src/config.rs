//! Host configuration of egress: timeouts, limits, trust roots and the
//! narrow, explicit exceptions a host operator may grant.

use std::time::Duration;

/// An exact `host:port` a host operator names in an exception.
///
/// There is no wildcard and no "any port": an exception covers one origin.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPort {
    /// Host name or IP literal, lowercase, as it appears in request URLs.
    pub host: String,
    /// Port as requests use it (the URL's port or the scheme default);
    /// 0 matches any port (see [`EgressConfig::allow_loopback_http`]).
    pub port: u16,
}

impl HostPort {
    /// A `host:port` exception (the host is lowercased).
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into().to_ascii_lowercase(),
            port,
        }
    }

    pub(crate) fn matches(&self, host: &str, port: u16) -> bool {
        (self.port == port || self.port == 0) && self.host == host
    }
}

/// The names [`EgressConfig::allow_loopback_http`] allows.
const LOOPBACK_NAMES: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

/// Host-wide egress settings; one per [`crate::Egress`].
#[derive(Debug, Clone)]
pub struct EgressConfig {
    /// Upper bound for DNS + TCP connect + TLS handshake.
    pub connect_timeout: Duration,
    /// Upper bound for waiting on the response head or any body chunk.
    pub read_timeout: Duration,
    /// Upper bound for one guest request including redirects.
    pub total_timeout: Duration,
    /// Largest request body a guest may send.
    pub max_request_body: usize,
    /// Largest response body the host reads; past it the request fails as too large.
    pub max_response_body: usize,
    /// Redirect hops the host follows for one guest request.
    pub max_redirects: usize,
    /// Requests (hops included) one call may send.
    pub max_requests_per_call: u32,
    /// Trust the Mozilla roots shipped by `webpki-roots`.
    pub webpki_roots: bool,
    /// Extra trusted roots, PEM text (private CAs, test CAs).
    pub extra_roots_pem: Vec<String>,
    /// Origins for which plain `http` is allowed (the target must also be declared `http`).
    pub plain_http_targets: Vec<HostPort>,
    /// Origins that may resolve to non-public addresses (loopback, private, ...).
    /// Unspecified, broadcast and multicast addresses stay refused even here.
    pub private_address_targets: Vec<HostPort>,
    /// Idle pooled connections older than this are dropped.
    pub pool_idle_timeout: Duration,
    /// Idle HTTP/1 connections kept per (address, server name).
    pub pool_max_idle_per_key: usize,
    /// `user-agent` sent when the guest sets none.
    pub user_agent: String,
}

impl Default for EgressConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(60),
            max_request_body: 8 << 20,
            max_response_body: 16 << 20,
            max_redirects: 5,
            max_requests_per_call: 64,
            webpki_roots: true,
            extra_roots_pem: Vec::new(),
            plain_http_targets: Vec::new(),
            private_address_targets: Vec::new(),
            pool_idle_timeout: Duration::from_secs(30),
            pool_max_idle_per_key: 8,
            user_agent: concat!("warden/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl EgressConfig {
    /// Trust an extra root certificate (PEM).
    pub fn with_extra_root_pem(mut self, pem: impl Into<String>) -> Self {
        self.extra_roots_pem.push(pem.into());
        self
    }

    /// Allow plain `http` for exactly `host:port`.
    pub fn allow_plain_http(mut self, host: &str, port: u16) -> Self {
        self.plain_http_targets.push(HostPort::new(host, port));
        self
    }

    /// Allow exactly `host:port` to resolve to non-public addresses.
    pub fn allow_private_address(mut self, host: &str, port: u16) -> Self {
        self.private_address_targets.push(HostPort::new(host, port));
        self
    }

    /// Allow plain `http` to the loopback names (`localhost`, `127.0.0.1`,
    /// `[::1]`) on any port, and let them resolve to loopback addresses: a
    /// local test server and the authorization server it names (the MCP
    /// conformance suite runs both on ephemeral ports). An operator's
    /// choice for one command (`warden mcp probe --loopback-http`), never a
    /// package's.
    pub fn allow_loopback_http(mut self) -> Self {
        for host in LOOPBACK_NAMES {
            self.plain_http_targets.push(HostPort::new(*host, 0));
            self.private_address_targets.push(HostPort::new(*host, 0));
        }
        self
    }

    /// Whether plain `http` to `host:port` is allowed.
    pub fn plain_http_allowed(&self, host: &str, port: u16) -> bool {
        self.plain_http_targets
            .iter()
            .any(|t| t.matches(host, port))
    }

    pub(crate) fn private_allowed(&self, host: &str, port: u16) -> bool {
        self.private_address_targets
            .iter()
            .any(|t| t.matches(host, port))
    }
}
