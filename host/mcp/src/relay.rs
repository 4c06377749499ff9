//! The client of a `tools/call`, asked on the call's behalf: a hosted
//! server's elicitation and sampling requests reach the MCP client that
//! made the call, within that call.
//!
//! Only what the client declared is asked: form elicitation needs its
//! `elicitation` capability (an empty one means form), URL elicitation its
//! `elicitation.url`, sampling its `sampling`; anything else is
//! [`RelayError::Unsupported`], which the hosted lane answers with MCP's
//! standard refusal so the server can fall back. Each request is marked as
//! made for the client's call, so over HTTP it rides that call's event
//! stream (SEP-2260) rather than the standalone one. Sampling goes to the
//! client like any request: its own consent flow decides what its model
//! sees.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, GetExtensions, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, RequestContext};
use serde_json::Value;
use warden_core::lane::{Relay, RelayError};
use warden_core::net::BoxFuture;

/// How long a person (or the client's model) may take to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// The client that made one call.
#[derive(Debug)]
pub(crate) struct ClientRelay {
    peer: Peer<RoleServer>,
    capabilities: Option<ClientCapabilities>,
    call: RequestId,
}

impl ClientRelay {
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Self {
        Self {
            peer: context.peer.clone(),
            capabilities: context.client_capabilities(),
            call: context.id.clone(),
        }
    }

    /// Send `request` for the call and wait for the client's result.
    async fn ask(&self, mut request: ServerRequest) -> Result<Value, RelayError> {
        request
            .extensions_mut()
            .insert(OriginatingRequestId(self.call.clone()));
        let answer = tokio::time::timeout(ANSWER_TIMEOUT, self.peer.send_request(request))
            .await
            .map_err(|_| RelayError::Failed("no answer in time".into()))?
            .map_err(|error| RelayError::Failed(error.to_string()))?;
        serde_json::to_value(answer).map_err(|error| RelayError::Failed(error.to_string()))
    }
}

impl Relay for ClientRelay {
    fn elicit(&self, params: Value) -> BoxFuture<'_, Result<Value, RelayError>> {
        Box::pin(async move {
            let elicitation = self
                .capabilities
                .as_ref()
                .and_then(|c| c.elicitation.as_ref());
            let url_mode = params.get("mode").and_then(Value::as_str) == Some("url");
            let supported = match elicitation {
                None => false,
                Some(e) if url_mode => e.url.is_some(),
                Some(e) => e.form.is_some() || e.url.is_none(),
            };
            if !supported {
                return Err(RelayError::Unsupported);
            }
            let params: ElicitRequestParams = serde_json::from_value(params)
                .map_err(|error| RelayError::Failed(format!("not an elicitation: {error}")))?;
            self.ask(ServerRequest::ElicitRequest(ElicitRequest::new(params)))
                .await
        })
    }

    fn sample(&self, params: Value) -> BoxFuture<'_, Result<Value, RelayError>> {
        Box::pin(async move {
            if self
                .capabilities
                .as_ref()
                .and_then(|c| c.sampling.as_ref())
                .is_none()
            {
                return Err(RelayError::Unsupported);
            }
            let request = sampling_request(params)?;
            self.ask(request).await
        })
    }
}

#[expect(
    deprecated,
    reason = "sampling is deprecated by a protocol after 2025-11-25, which servers still use"
)]
fn sampling_request(params: Value) -> Result<ServerRequest, RelayError> {
    let params: rmcp::model::CreateMessageRequestParams = serde_json::from_value(params)
        .map_err(|error| RelayError::Failed(format!("not a sampling request: {error}")))?;
    Ok(ServerRequest::CreateMessageRequest(
        rmcp::model::CreateMessageRequest::new(params),
    ))
}
