//! What the lane is told about one server and about itself: the server's
//! spec and the operator's settings for it, where a call's reports go, and
//! the lane's limits.

use std::sync::Arc;
use std::time::Duration;

use warden_core::lane::{LogSink, ProgressSink, Relay};
use warden_core::spec::CredentialSpec;

#[cfg(doc)]
use crate::endpoint::Endpoint;

/// How often a catalog is listed again when the server announces nothing.
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(600);

/// What the lane needs to reach one hosted server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// The extension the server implements (`notion`).
    pub extension_id: String,
    /// The content of the package it comes from (its digest, or
    /// [`BUNDLED`](warden_egress::secrets::BUNDLED)): the user's consent
    /// to its accounts is pinned to it. `None` for a server no package
    /// declares (a probe).
    pub content: Option<String>,
    /// The manifest's `[mcp] server`.
    pub server: String,
    /// `[[mcp.credentials]]`.
    pub credentials: Vec<CredentialSpec>,
    /// The manifest's `max_tools`.
    pub max_tools: usize,
    /// Accept a plain-`http` loopback endpoint (see [`Endpoint::parse_with`]);
    /// never set for a package.
    pub loopback_http: bool,
    /// The operator's settings for this server.
    pub settings: ServerSettings,
}

/// Where what the server sends for one call goes while it runs.
#[derive(Debug, Clone, Default)]
pub struct Reporting {
    /// Its progress reports.
    pub progress: Option<ProgressSink>,
    /// Its log messages (`notifications/message`), as log entries.
    pub logs: Option<LogSink>,
    /// The caller's client, for its elicitation and sampling requests.
    pub relay: Option<Arc<dyn Relay>>,
}

/// One server's own settings, from the operator (by package id).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerSettings {
    /// Its call timeout (`warden mcp add --timeout`), in place of
    /// [`LaneLimits::call_timeout`]; never above
    /// [`LaneLimits::max_call_timeout`].
    pub call_timeout: Option<Duration>,
    /// Never relay its elicitation and sampling requests to the caller's
    /// client: they are answered "not supported" at once.
    pub no_relay: bool,
}

/// Limits of the lane, per host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneLimits {
    /// How long one call may go without an answer or a progress report
    /// (progress resets it), and the deadline of one listing. A server's
    /// own [`ServerSettings::call_timeout`] replaces it for that server.
    pub call_timeout: Duration,
    /// The operator's maximum: no call runs longer, whatever its progress,
    /// and no server's own timeout is longer.
    pub max_call_timeout: Duration,
    /// Bytes one HTTP response may have.
    pub max_response_bytes: u64,
    /// Bytes of one call's result.
    pub max_result_bytes: usize,
    /// Age after which an accepted catalog is listed again on next use.
    pub refresh_interval: Duration,
}

impl Default for LaneLimits {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(60),
            max_call_timeout: Duration::from_secs(600),
            // A result's content may hold 8 MiB of data
            // (`warden_core::content::MAX_CONTENT_BYTES`), a third larger
            // in base64, framed as JSON and SSE.
            max_response_bytes: 16 << 20,
            max_result_bytes: 12 << 20,
            refresh_interval: DEFAULT_REFRESH_INTERVAL,
        }
    }
}
