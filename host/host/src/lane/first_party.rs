//! The first-party lane: native code the embedder registers for a
//! `[runtime] kind = "first_party"` package (see
//! [`crate::HostBuilder::first_party_service`]).
//!
//! The service gets the validated input and a [`FirstPartyCall`] whose only
//! way out is [`CallHttp`]: the call's egress session (network policy,
//! credential injection by handle, redaction). It never sees a secret and has
//! no client of its own. This adapter checks the input and output against the
//! manifest's schemas, bounds and redacts the output, enforces the deadline
//! and scrubs failure messages, so a service cannot skip any of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;
use warden_core::ErrorCode;
use warden_core::schema::{Formats, InputErrors, SchemaCheck, parse_json, render};

use serde_json::Value;
use warden_core::Origin;
use warden_core::net::{
    BoxFuture, CallNetwork, CredentialError, GuestRequest, GuestResponse, HttpError,
};
use warden_core::spec::CredentialSpec;
use warden_runtime::{InputError, Usage};

use super::{CallContext, Lane, LaneError, LaneOutcome};
use crate::outcome::AuthDetails;

/// Bytes kept of a failure message (after redaction).
const MAX_MESSAGE_BYTES: usize = 1024;

/// Native tools of one `first_party` service, registered on the host under
/// the name the manifest's `service` gives.
pub trait FirstPartyService: Send + Sync + std::fmt::Debug {
    /// Run capability `call.capability_id` with `input` (already checked
    /// against its input schema). The output is checked against the output
    /// schema and bounded after it returns.
    fn call(
        &self,
        call: FirstPartyCall,
        input: Value,
    ) -> BoxFuture<'_, Result<Value, FirstPartyError>>;

    /// Request headers the service sets that the rules for a guest's
    /// headers would refuse because their name looks like a credential's
    /// (MCP's `mcp-session-id`). The service is native code the host was
    /// built with, trusted as the host's own client; the capability's
    /// injection headers are refused whatever it says. Default: none.
    fn protocol_headers(&self) -> &'static [&'static str] {
        &[]
    }
}

/// One authorized call of a first-party tool.
#[derive(Debug)]
#[non_exhaustive]
pub struct FirstPartyCall {
    /// The capability to run (from the host, never the model's input).
    pub capability_id: String,
    /// Who calls.
    pub origin: Origin,
    /// This call's id.
    pub call_id: String,
    /// When the call must be over; the host stops waiting then.
    pub deadline: Instant,
    /// The only way out: the call's egress session.
    pub http: CallHttp,
    /// The credentials the capability declares (handle, vendor, scopes,
    /// audience): what [`FirstPartyCall::auth_required`] asks the user for.
    pub credentials: Arc<[CredentialSpec]>,
}

impl FirstPartyCall {
    /// The failure that asks the user to connect (or reconnect) the
    /// account of credential `handle` with the scopes the capability
    /// declares: for a provider's answer that the token is expired, revoked
    /// or lacks a scope. A handle the capability does not declare names no
    /// vendor and is a plain failure.
    pub fn auth_required(&self, handle: &str) -> FirstPartyError {
        match self.credentials.iter().find(|c| c.handle == handle) {
            Some(spec) => FirstPartyError::AuthRequired {
                vendor: spec.vendor.clone(),
                scopes: spec.scopes.clone(),
                extension: String::new(),
            },
            None => FirstPartyError::Failed {
                message: format!("`{}` declares no credential `{handle}`", self.capability_id),
            },
        }
    }
}

/// HTTP through the call's egress session: the capability's network policy
/// decides, egress injects the credential named by handle (the secret never
/// reaches the service) and redacts every staged secret from the response.
/// A call may send at most the host's `max_http_requests` (as a WASM tool).
#[derive(Clone)]
pub struct CallHttp {
    network: Arc<dyn CallNetwork>,
    deadline: Instant,
    /// Requests asked for so far (shared by clones), for usage and the limit.
    requests: Arc<AtomicU32>,
    max_requests: u32,
}

impl std::fmt::Debug for CallHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallHttp").finish_non_exhaustive()
    }
}

impl CallHttp {
    /// Send `request` with no credential.
    pub async fn send(&self, request: GuestRequest) -> Result<GuestResponse, CallHttpError> {
        self.send_inner(request, None).await
    }

    /// Send `request` with the credential the capability declares under
    /// `handle`, injected by egress if the request's audience matches.
    pub async fn send_with(
        &self,
        request: GuestRequest,
        handle: &str,
    ) -> Result<GuestResponse, CallHttpError> {
        self.network.acquire(handle)?;
        self.send_inner(request, Some(handle)).await
    }

    /// `text` with every staged secret replaced by `[REDACTED]`.
    pub fn redact(&self, text: &str) -> String {
        self.network.redact(text)
    }

    async fn send_inner(
        &self,
        request: GuestRequest,
        handle: Option<&str>,
    ) -> Result<GuestResponse, CallHttpError> {
        let sent = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        if sent > self.max_requests {
            return Err(HttpError::LimitExceeded(format!(
                "a call may send at most {} requests",
                self.max_requests
            ))
            .into());
        }
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        Ok(self.network.send(request, handle, remaining).await?)
    }
}

/// Why a [`CallHttp`] request did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallHttpError {
    /// The credential handle is not declared or has no account.
    #[error(transparent)]
    Credential(#[from] CredentialError),
    /// Policy refused the request, or it failed.
    #[error(transparent)]
    Http(#[from] HttpError),
}

/// How a first-party call failed. Messages are redacted and bounded before
/// anyone sees them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FirstPartyError {
    /// The input is not JSON or does not match the input schema.
    #[error("invalid input: {}", render(errors, *omitted))]
    InvalidInput {
        /// The first errors, each naming a JSON pointer.
        errors: Vec<InputError>,
        /// How many further errors were left out.
        omitted: usize,
    },
    /// A credential must be connected first.
    #[error("authorization required: connect a `{vendor}` account for extension `{extension}`")]
    AuthRequired {
        /// Credential authority.
        vendor: String,
        /// Scopes needed.
        scopes: Vec<String>,
        /// The extension asking (filled in by the host).
        extension: String,
    },
    /// A request through egress was refused or failed.
    #[error("network: {0}")]
    Network(#[from] CallHttpError),
    /// The call did not finish by its deadline.
    #[error("the tool did not finish within {limit_ms} ms")]
    Timeout {
        /// The allowance in milliseconds.
        limit_ms: u64,
    },
    /// The output does not match the output schema.
    #[error("invalid output: {reason}")]
    InvalidOutput {
        /// Which part failed (never the value).
        reason: String,
    },
    /// The output is over the capability's `max_output_bytes`.
    #[error("the output is {actual} bytes, over the limit of {limit}")]
    OutputTooLarge {
        /// The cap in bytes.
        limit: u64,
        /// The output's size.
        actual: u64,
    },
    /// The tool failed; `message` is for the model.
    #[error("the tool failed: {message}")]
    Failed {
        /// What went wrong.
        message: String,
    },
}

impl LaneError for FirstPartyError {
    fn code(&self) -> ErrorCode {
        match self {
            FirstPartyError::InvalidInput { .. } => ErrorCode::InvalidInput,
            FirstPartyError::AuthRequired { .. } => ErrorCode::AuthRequired,
            FirstPartyError::Network(CallHttpError::Credential(_)) => ErrorCode::AuthRequired,
            FirstPartyError::Network(CallHttpError::Http(HttpError::Denied(_))) => {
                ErrorCode::NetworkDenied
            }
            FirstPartyError::Network(CallHttpError::Http(HttpError::LimitExceeded(_))) => {
                ErrorCode::RequestLimit
            }
            FirstPartyError::Network(_) => ErrorCode::NetworkError,
            FirstPartyError::Timeout { .. } => ErrorCode::Timeout,
            FirstPartyError::InvalidOutput { .. } => ErrorCode::InvalidOutput,
            FirstPartyError::OutputTooLarge { .. } => ErrorCode::OutputTooLarge,
            FirstPartyError::Failed { .. } => ErrorCode::ToolFailure,
        }
    }

    fn auth_details(&self) -> Option<AuthDetails> {
        match self {
            FirstPartyError::AuthRequired {
                vendor,
                scopes,
                extension,
            } => Some(AuthDetails {
                vendor: Some(vendor.clone()),
                scopes: scopes.clone(),
                extension: extension.clone(),
                handle: None,
                reason: None,
            }),
            FirstPartyError::Network(CallHttpError::Credential(
                CredentialError::NotConfigured(needed),
            )) => Some(AuthDetails {
                vendor: Some(needed.vendor.clone()),
                scopes: needed.scopes.clone(),
                extension: String::new(),
                handle: None,
                reason: None,
            }),
            _ => None,
        }
    }
}

/// One capability of a first-party package, bound to its service.
#[derive(Debug)]
pub(crate) struct FirstPartyLane {
    service: Arc<dyn FirstPartyService>,
    extension_id: String,
    input: Option<SchemaCheck>,
    output: Option<SchemaCheck>,
    max_output_bytes: u64,
    max_http_requests: u32,
    credentials: Arc<[CredentialSpec]>,
}

impl FirstPartyLane {
    /// Compile the capability's schemas (once, at install).
    pub(crate) fn new(
        service: Arc<dyn FirstPartyService>,
        extension_id: &str,
        input_schema: Option<&Value>,
        output_schema: Option<&Value>,
        max_output_bytes: u64,
        max_http_requests: u32,
        credentials: &[CredentialSpec],
    ) -> Result<Self, String> {
        let compile = |schema: Option<&Value>| {
            schema
                .map(|s| SchemaCheck::compile(s, Formats::Assert))
                .transpose()
        };
        Ok(FirstPartyLane {
            service,
            extension_id: extension_id.to_owned(),
            input: compile(input_schema).map_err(|e| format!("input schema: {e}"))?,
            output: compile(output_schema).map_err(|e| format!("output schema: {e}"))?,
            max_output_bytes,
            max_http_requests,
            credentials: credentials.into(),
        })
    }

    fn check(&self, input: &str) -> Result<Value, FirstPartyError> {
        let refuse = |refused: InputErrors| FirstPartyError::InvalidInput {
            errors: refused.errors,
            omitted: refused.omitted,
        };
        let value = parse_json(input).map_err(|e| refuse(InputErrors::one(e)))?;
        if let Some(schema) = &self.input {
            schema.check(&value).map_err(refuse)?;
        }
        Ok(value)
    }

    /// The output, bounded, redacted and checked, or why it is refused.
    /// Redacted as a guest's output is: the JSON text, before it is read
    /// again, so a service that undid a form of a secret the response's
    /// redaction did not know answers with the secret redacted.
    fn finish(&self, output: Value, network: &dyn CallNetwork) -> Result<Value, FirstPartyError> {
        let text = serde_json::to_string(&output).map_err(|e| FirstPartyError::InvalidOutput {
            reason: format!("it does not serialize: {e}"),
        })?;
        if text.len() as u64 > self.max_output_bytes {
            return Err(FirstPartyError::OutputTooLarge {
                limit: self.max_output_bytes,
                actual: text.len() as u64,
            });
        }
        let redacted = network.redact(&text);
        let output = if redacted == text {
            output
        } else {
            serde_json::from_str(&redacted).map_err(|_| FirstPartyError::InvalidOutput {
                reason: "it carried a staged secret and is not valid JSON once the secret is \
                         redacted"
                    .to_owned(),
            })?
        };
        if let Some(schema) = &self.output {
            schema
                .check(&output)
                .map_err(|refused| FirstPartyError::InvalidOutput {
                    reason: refused.to_string(),
                })?;
        }
        Ok(output)
    }

    /// A failure as the model may see it: the extension filled in, every
    /// staged secret redacted, messages bounded.
    fn scrub(&self, error: FirstPartyError, network: &dyn CallNetwork) -> FirstPartyError {
        let clean = |text: &str| {
            let mut text = network.redact(text);
            truncate(&mut text, MAX_MESSAGE_BYTES);
            text
        };
        match error {
            FirstPartyError::Failed { message } => FirstPartyError::Failed {
                message: clean(&message),
            },
            FirstPartyError::InvalidOutput { reason } => FirstPartyError::InvalidOutput {
                reason: clean(&reason),
            },
            FirstPartyError::AuthRequired { vendor, scopes, .. } => FirstPartyError::AuthRequired {
                vendor: clean(&vendor),
                scopes,
                extension: self.extension_id.clone(),
            },
            other => other,
        }
    }
}

impl Lane for FirstPartyLane {
    fn kind(&self) -> &'static str {
        "first_party"
    }

    fn check_input(&self, _capability_id: &str, input: &str) -> Result<(), Box<dyn LaneError>> {
        self.check(input).map(drop).map_err(|e| Box::new(e) as _)
    }

    fn host_headers(&self) -> &'static [&'static str] {
        self.service.protocol_headers()
    }

    fn call(&self, context: CallContext, input: String) -> BoxFuture<'_, LaneOutcome> {
        Box::pin(async move {
            let started = Instant::now();
            let network = context.network.clone();
            let requests = Arc::new(AtomicU32::new(0));
            let result = async {
                let input = self.check(&input)?;
                let call = FirstPartyCall {
                    capability_id: context.capability_id,
                    origin: context.origin,
                    call_id: context.call_id,
                    deadline: context.deadline,
                    http: CallHttp {
                        network: context.network,
                        deadline: context.deadline,
                        requests: requests.clone(),
                        max_requests: self.max_http_requests,
                    },
                    credentials: self.credentials.clone(),
                };
                let limit = context.deadline.saturating_duration_since(started);
                let output = tokio::time::timeout_at(
                    tokio::time::Instant::from_std(context.deadline),
                    self.service.call(call, input),
                )
                .await
                .map_err(|_| FirstPartyError::Timeout {
                    limit_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                })??;
                self.finish(output, &*network)
            }
            .await;
            LaneOutcome {
                result: result.map_err(|e| Box::new(self.scrub(e, &*network)) as _),
                content: Vec::new(),
                usage: Usage {
                    wall_time: started.elapsed(),
                    http_requests: requests.load(Ordering::Relaxed),
                    ..Usage::default()
                },
                logs: Vec::new(),
            }
        })
    }
}

/// Cut `text` to at most `max` bytes on a character boundary.
fn truncate(text: &mut String, max: usize) {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}
