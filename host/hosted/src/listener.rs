//! The lane's MCP client handler: what a server sends the host unasked.
//!
//! - `notifications/tools/list_changed` marks the catalog stale;
//! - `notifications/progress` goes to the running call it names;
//! - `notifications/message` (a log line) goes to the running call's log
//!   sink when exactly one call is running (the message names no call, so
//!   with several it could belong to another caller's; it then goes to the
//!   host's own log only);
//! - `elicitation/create` and `sampling/createMessage` made on a call's
//!   answer stream are relayed to the client of whoever made that call
//!   (its [`Relay`](warden_core::lane::Relay)), within the call; one made
//!   on the server's standalone stream (many SDK servers send a tool's
//!   requests there) goes to the call running when there is exactly one,
//!   as a log message does. A request
//!   tied to no running call, a call whose caller gave no relay, a server
//!   whose relaying the operator turned off, or a client that declared no
//!   such capability get MCP's standard refusal at once (`-32601`), so the
//!   server can fall back instead of waiting.
//!
//! The host declares both capabilities (form and URL elicitation, sampling)
//! because it can relay them; whether a given call can is the caller's
//! client's to say. What is relayed was redacted with the rest of the
//! stream; a message shown to a person is put on bounded lines first.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestMethod, ElicitRequestParams,
    ElicitResult, ElicitationCreateRequestMethod, Implementation, ProgressNotificationParam,
    ProtocolVersion,
};
#[expect(
    deprecated,
    reason = "sampling is deprecated by a protocol after 2025-11-25, which servers still use"
)]
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext, RoleClient};
use serde_json::Value;
use tokio::sync::watch;
use warden_core::lane::{LogLevel, RelayError};

use crate::calls::{Calls, RunningCall};

/// Longest elicitation message passed on, in characters.
const MAX_ELICIT_MESSAGE_CHARS: usize = 2000;

/// The client handler of one server's session.
#[derive(Debug, Clone)]
pub(crate) struct Listener {
    pub(crate) stale: Arc<AtomicBool>,
    pub(crate) changes: Arc<watch::Sender<u64>>,
    pub(crate) calls: Calls,
    /// The operator allows relaying this server's requests.
    pub(crate) relay: bool,
}

impl Listener {
    /// The running call a server request was made for, when it may be
    /// relayed.
    fn call_of(&self, context: &RequestContext<RoleClient>) -> Option<Arc<RunningCall>> {
        if !self.relay {
            return None;
        }
        match context.extensions.get::<InboundStreamOrigin>()? {
            InboundStreamOrigin::OutboundRequest(id) => self.calls.by_request(id),
            InboundStreamOrigin::Unassociated => self.calls.sole(),
        }
    }
}

/// Which request of the caller's client.
#[derive(Debug, Clone, Copy)]
enum Ask {
    Elicit,
    Sample,
}

impl Listener {
    /// Relay `request` (method `M`) to the client of the call it was made
    /// for; the client's answer, or MCP's refusal.
    async fn relayed<M, P, R>(
        &self,
        context: &RequestContext<RoleClient>,
        request: &P,
        ask: Ask,
    ) -> Result<R, ErrorData>
    where
        M: rmcp::model::ConstString,
        P: serde::Serialize,
        R: serde::de::DeserializeOwned,
    {
        let call = self.call_of(context);
        let Some((call, relay)) = call.and_then(|c| c.relay().map(|r| (c, r))) else {
            return Err(ErrorData::method_not_found::<M>());
        };
        let params = serde_json::to_value(request).map_err(|e| {
            ErrorData::internal_error(format!("the request could not be relayed: {e}"), None)
        })?;
        let _asking = call.asking();
        let answer = match ask {
            Ask::Elicit => relay.elicit(shown(params)).await,
            Ask::Sample => relay.sample(params).await,
        }
        .map_err(refusal::<M>)?;
        serde_json::from_value(answer).map_err(|e| {
            ErrorData::internal_error(format!("the client's answer is not valid: {e}"), None)
        })
    }
}

/// A relay's failure as the server sees it: not supported (`-32601`, fall
/// back), or the client's failure (an internal error naming it).
fn refusal<M: rmcp::model::ConstString>(error: RelayError) -> ErrorData {
    match error {
        RelayError::Unsupported => ErrorData::method_not_found::<M>(),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

/// `params` with its message (shown to a person) on bounded lines.
fn shown(mut params: Value) -> Value {
    if let Some(Value::String(message)) = params.get_mut("message") {
        *message = message
            .chars()
            .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
            .take(MAX_ELICIT_MESSAGE_CHARS)
            .collect();
    }
    params
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = serde_json::from_value(serde_json::json!({
            "elicitation": {"form": {}, "url": {}},
            "sampling": {},
        }))
        .unwrap_or_default();
        ClientConfig::new(
            capabilities,
            Implementation::new("warden", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::SeqCst);
        self.changes.send_modify(|n| *n += 1);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.calls.report(params);
    }

    #[expect(
        deprecated,
        reason = "logging is deprecated by a protocol after 2025-11-25, which servers still use"
    )]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        use rmcp::model::LoggingLevel;
        let level = match params.level {
            LoggingLevel::Debug => LogLevel::Debug,
            LoggingLevel::Info | LoggingLevel::Notice => LogLevel::Info,
            LoggingLevel::Warning => LogLevel::Warn,
            _ => LogLevel::Error,
        };
        let data = match &params.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let message = match &params.logger {
            Some(logger) => format!("{logger}: {data}"),
            None => data,
        };
        match self.calls.sole() {
            Some(call) => call.log(level, &message),
            None => tracing::debug!(
                message = %crate::calls::one_line(&message),
                "a hosted server's log message"
            ),
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.relayed::<ElicitationCreateRequestMethod, _, _>(&context, &request, Ask::Elicit)
            .await
    }

    #[expect(
        deprecated,
        reason = "sampling is deprecated by a protocol after 2025-11-25, which servers still use"
    )]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.relayed::<CreateMessageRequestMethod, _, _>(&context, &params, Ask::Sample)
            .await
    }
}
