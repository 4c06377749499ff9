//! The hosted-MCP lane: a tool of an `[mcp]` package, run by the package's
//! [`HostedServer`] (one MCP session per server, shared by its tools).
//!
//! The host's own checks run first as for any lane (lookup, input check,
//! authorization, approvals, the required-credential precheck on the
//! call's egress session). The MCP session spans calls, so its HTTP goes
//! through per-request egress sessions built from the same declarations
//! (the endpoint's origin, `[[mcp.credentials]]` bound to it), never
//! through a client of its own.

use std::sync::Arc;
use warden_core::ErrorCode;

use warden_core::net::BoxFuture;
use warden_core::spec::CredentialSpec;
use warden_egress::secrets::AuthReason;
use warden_hosted::{HostedError, HostedServer, InputCheck, Reporting};
use warden_runtime::Usage;

use super::{CallContext, Lane, LaneError, LaneOutcome};
use crate::outcome::AuthDetails;

/// One remote tool of a hosted server.
#[derive(Debug)]
pub(crate) struct McpLane {
    pub(crate) server: Arc<HostedServer>,
    /// The server's name for the tool.
    pub(crate) remote_name: String,
    pub(crate) input: InputCheck,
    /// The package (an auth-required failure names it).
    pub(crate) extension: String,
    /// `[[mcp.credentials]]`: what a 401 or 403 asks the user to connect.
    pub(crate) credentials: Vec<CredentialSpec>,
    /// The vendors whose deployment accounts a caller's call may use
    /// ([`crate::HostConfig::shared_accounts`]).
    pub(crate) shared: Vec<String>,
}

/// What a server's refusal of authorization asks the user to connect: the
/// package's first `[[mcp.credentials]]` (no token sent is `missing`, a
/// refused token is `expired`; a
/// `403 insufficient_scope` adds the scopes the server named to the
/// declared ones). `None` for other errors, or when the package declares no
/// credential (there is nothing to connect).
pub(crate) fn auth_details(
    extension: &str,
    credentials: &[CredentialSpec],
    error: &HostedError,
) -> Option<AuthDetails> {
    let (reason, wanted) = match error {
        HostedError::Unauthorized {
            credential_sent: true,
            ..
        } => (AuthReason::Expired, &[][..]),
        HostedError::Unauthorized { .. } => (AuthReason::Missing, &[][..]),
        HostedError::InsufficientScope { scopes, .. } => {
            (AuthReason::InsufficientScope, scopes.as_slice())
        }
        _ => return None,
    };
    let credential = credentials.first()?;
    let mut scopes = credential.scopes.clone();
    for scope in wanted {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    Some(AuthDetails {
        vendor: Some(credential.vendor.clone()),
        scopes,
        extension: extension.to_owned(),
        handle: Some(credential.handle.clone()),
        reason: Some(reason),
    })
}

/// A server refused to list its tools for want of authorization: a call
/// of one of its (unlisted) tools reports what to connect instead of
/// `unknown_tool`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ListingRefused {
    pub(crate) message: String,
    pub(crate) auth: AuthDetails,
}

impl LaneError for ListingRefused {
    fn code(&self) -> ErrorCode {
        ErrorCode::AuthRequired
    }

    fn auth_details(&self) -> Option<AuthDetails> {
        Some(self.auth.clone())
    }
}

/// A hosted-lane failure, with what to connect when it is auth-required.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
struct McpFailure {
    error: HostedError,
    auth: Option<AuthDetails>,
}

impl LaneError for McpFailure {
    fn code(&self) -> ErrorCode {
        self.error.code()
    }

    fn auth_details(&self) -> Option<AuthDetails> {
        self.auth.clone()
    }
}

impl Lane for McpLane {
    fn kind(&self) -> &'static str {
        "mcp"
    }

    /// The server's MCP session is not the call's network service: its
    /// messages are neither recorded nor answered by a tape.
    fn tapeable(&self) -> bool {
        false
    }

    /// The operator's maximum: a call that reports progress may run that
    /// long; the server's own timeout (reset by progress) stops a silent
    /// one sooner.
    fn default_timeout(&self) -> Option<std::time::Duration> {
        Some(self.server.limits().max_call_timeout)
    }

    fn check_input(&self, _capability_id: &str, input: &str) -> Result<(), Box<dyn LaneError>> {
        self.input
            .check(input)
            .map_err(|e| Box::new(e) as Box<dyn LaneError>)
    }

    fn call(&self, context: CallContext, input: String) -> BoxFuture<'_, LaneOutcome> {
        Box::pin(async move {
            let remaining = context
                .deadline
                .saturating_duration_since(std::time::Instant::now());
            let arguments = serde_json::from_str(&input).unwrap_or_default();
            let reporting = Reporting {
                progress: context.progress,
                logs: context.logs,
                relay: context.relay,
            };
            // A caller's call goes over their own session, with their own
            // accounts; anyone else's over the deployment's.
            let call = async {
                match &context.caller {
                    Some(owner) => {
                        let (name, shared) = (&self.remote_name, &self.shared);
                        self.server
                            .call_as(owner, shared, name, arguments, reporting)
                            .await
                    }
                    None => {
                        self.server
                            .call_reporting(&self.remote_name, arguments, reporting)
                            .await
                    }
                }
            };
            let result = match tokio::time::timeout(remaining, call).await {
                Err(_) => Err(HostedError::Timeout(
                    u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX),
                )),
                Ok(result) => result,
            };
            match result {
                Ok(out) => LaneOutcome {
                    result: Ok(out.structured.unwrap_or(serde_json::Value::Null)),
                    content: out.content,
                    usage: Usage::default(),
                    logs: Vec::new(),
                },
                Err(error) => {
                    let auth = auth_details(&self.extension, &self.credentials, &error);
                    LaneOutcome::failed(McpFailure { error, auth })
                }
            }
        })
    }
}

/// The hosted-MCP lane's errors are `warden-hosted`'s, with its codes.
impl LaneError for HostedError {
    fn code(&self) -> ErrorCode {
        HostedError::code(self)
    }
}
