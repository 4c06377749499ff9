//! [`HostedError`]: every way the hosted-MCP lane fails, as a variant a
//! caller can match on.

use warden_core::ErrorCode;

/// Why a hosted-MCP operation failed. Messages never carry a remote body,
/// a secret or a backend's own error text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostedError {
    /// The manifest's `server` is not an endpoint the lane accepts.
    #[error("MCP endpoint `{url}` refused: {reason}")]
    Endpoint {
        /// The URL as written (bounded).
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The server answered with a redirect; the lane never follows one.
    #[error(
        "the MCP server answered with a redirect (HTTP {status}); the endpoint is locked, redirects are refused"
    )]
    Redirect {
        /// The redirect status.
        status: u16,
    },
    /// The server wants credentials the request did not carry, or refused
    /// the ones it carried (HTTP 401).
    #[error("the MCP server requires authorization (HTTP 401)")]
    Unauthorized {
        /// The `WWW-Authenticate` challenge, when the server sent one
        /// (bounded; it names the resource metadata for OAuth discovery).
        challenge: Option<String>,
        /// Whether the request carried a credential (refused: it expired or
        /// was revoked) or none (no account is connected).
        credential_sent: bool,
    },
    /// The token lacks scopes the request needs (HTTP 403 with
    /// `error="insufficient_scope"`): the account must be connected again
    /// with them (scope step-up).
    #[error("the MCP server needs more scopes ({})", scopes.join(" "))]
    InsufficientScope {
        /// The scopes the server's challenge names (possibly none).
        scopes: Vec<String>,
        /// The `WWW-Authenticate` challenge (bounded).
        challenge: String,
    },
    /// Egress refused the request (policy, address, limits).
    #[error("egress: {0}")]
    Egress(String),
    /// The server could not be reached: it is down or its name does not
    /// resolve (try again later).
    #[error("the MCP server is unavailable: {0}")]
    Unavailable(String),
    /// The MCP session could not be established or was lost.
    #[error("MCP connection failed: {0}")]
    Connect(String),
    /// The server negotiated a protocol version the lane does not speak.
    #[error("the MCP server speaks protocol `{0}`; this host speaks 2025-03-26 through 2026-07-28")]
    Protocol(String),
    /// The server runs this tool only as a task (MCP task augmentation,
    /// `execution.taskSupport = "required"`), which the lane does not do.
    #[error("`{0}` runs only as an MCP task (task augmentation), which this host does not support")]
    TaskRequired(String),
    /// The catalog the server offered breaks a discovery bound; the
    /// previous catalog stays.
    #[error("tools/list refused: {0}")]
    Discovery(#[from] crate::discovery::CatalogBoundError),
    /// A saved catalog could not be restored (it is ignored; the server is
    /// listed on first use).
    #[error("the saved catalog is not usable: {0}")]
    SavedCatalog(String),
    /// A call did not finish in time.
    #[error("the MCP call timed out after {0} ms")]
    Timeout(u64),
    /// The call's result is larger than the bound.
    #[error("the MCP result is larger than {limit} bytes")]
    ResultTooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// `structuredContent` does not match the tool's `outputSchema`.
    #[error("structuredContent does not match the tool's outputSchema: {0}")]
    OutputSchema(String),
    /// The input does not match the tool's input schema.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The server answered the request with an error (sanitized).
    #[error("the MCP server refused the request: {0}")]
    Remote(String),
}

impl HostedError {
    /// A stable snake_case code for the model and the CLI.
    pub fn code(&self) -> ErrorCode {
        match self {
            HostedError::Endpoint { .. } => ErrorCode::InvalidEndpoint,
            HostedError::Redirect { .. } | HostedError::Egress(_) => ErrorCode::NetworkDenied,
            HostedError::Unauthorized { .. } | HostedError::InsufficientScope { .. } => {
                ErrorCode::AuthRequired
            }
            HostedError::Connect(_) => ErrorCode::ConnectionFailed,
            HostedError::Unavailable(_) => ErrorCode::ServerUnavailable,
            HostedError::Protocol(_) | HostedError::TaskRequired(_) => {
                ErrorCode::ProtocolUnsupported
            }
            HostedError::Discovery(_) | HostedError::SavedCatalog(_) => ErrorCode::DiscoveryRefused,
            HostedError::Timeout(_) => ErrorCode::Timeout,
            HostedError::ResultTooLarge { .. } => ErrorCode::OutputTooLarge,
            HostedError::OutputSchema(_) => ErrorCode::InvalidOutput,
            HostedError::InvalidInput(_) => ErrorCode::InvalidInput,
            HostedError::Remote(_) => ErrorCode::ToolFailure,
        }
    }
}
