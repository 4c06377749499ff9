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

use warden_core::net::BoxFuture;
use warden_hosted::{HostedError, HostedServer, InputCheck};
use warden_runtime::Usage;

use super::{CallContext, Lane, LaneError, LaneOutcome};

/// One remote tool of a hosted server.
#[derive(Debug)]
pub(crate) struct McpLane {
    pub(crate) server: Arc<HostedServer>,
    /// The server's name for the tool.
    pub(crate) remote_name: String,
    pub(crate) input: InputCheck,
}

impl Lane for McpLane {
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
            let call = self.server.call(&self.remote_name, arguments);
            let result = match tokio::time::timeout(remaining, call).await {
                Err(_) => Err(HostedError::Timeout(
                    u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX),
                )),
                Ok(result) => result,
            };
            match result {
                Ok(out) => LaneOutcome {
                    result: Ok(out.output),
                    usage: Usage::default(),
                    logs: Vec::new(),
                },
                Err(error) => LaneOutcome::failed(error),
            }
        })
    }
}

/// The hosted-MCP lane's errors are `warden-hosted`'s, with its codes.
impl LaneError for HostedError {
    fn code(&self) -> &'static str {
        HostedError::code(self)
    }
}
