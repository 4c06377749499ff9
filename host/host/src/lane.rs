//! The executor contract: one [`Lane`] trait behind which every kind of
//! tool implementation runs (a WASM component, an embedder's native code, a
//! hosted MCP server).
//!
//! Everything before a lane (lookup, authorization, approvals, the
//! credential precheck, building the call's egress session) and after it
//! (output bounding, the outcome) is lane-agnostic and lives in
//! `invoke.rs`. A lane gets a [`CallContext`] built by the host and returns a
//! [`LaneOutcome`]: output, usage, logs, or a [`LaneError`] with a stable code.
//!
//! # Where lanes are kept
//!
//! The registry never executes anything and cannot name this trait (it sits
//! below the host). Each registered tool's [`warden_registry::Executor`]
//! carries a typed [`warden_registry::LaneId`] the host assigned at install;
//! the [`crate::Location`] maps that id to the tool's bound lane, for as long
//! as the registration that published it is installed. No downcast anywhere:
//! a tool whose registration is gone (uninstalled or replaced after the
//! snapshot was taken) is `unknown_tool`, never the wrong code.

use std::error::Error;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use warden_core::content::ContentBlock;
use warden_core::lane::{LogEntry, LogSink, ProgressSink, Relay, Usage};
use warden_core::net::{BoxFuture, CallNetwork};
use warden_core::{ErrorCode, Origin};
use warden_manifest::{Implementation, Package};
use warden_runtime::RuntimeError;

use crate::error::HostError;
use crate::host::Shared;
use crate::location::Compile;
use crate::outcome::AuthDetails;

pub(crate) mod first_party;
pub(crate) mod mcp;
pub(crate) mod wasm;

pub use first_party::{
    CallHttp, CallHttpError, FirstPartyCall, FirstPartyError, FirstPartyService,
};

/// What runs the tools of one package capability. Implementations must not
/// reach the network except through [`CallContext::network`].
pub trait Lane: Send + Sync + std::fmt::Debug {
    /// Check `input` (JSON text) for `capability_id` before anyone is asked
    /// to approve the call; nothing of the tool runs.
    fn check_input(&self, capability_id: &str, input: &str) -> Result<(), Box<dyn LaneError>>;

    /// Whether the lane sends with the accounts of the caller each call is
    /// made for (the accounts staged for the call, or, for a hosted MCP
    /// server, a session per caller). A lane that says no runs a call made
    /// for a caller only where the operator shares every vendor it needs
    /// (`account_not_shared` otherwise).
    fn uses_call_accounts(&self) -> bool {
        true
    }

    /// What kind of lane this is, as metrics label its calls: `wasm`,
    /// `mcp`, `first_party`, or `native` (an embedder's own, the default).
    fn kind(&self) -> &'static str {
        "native"
    }

    /// Run an authorized call. The host calls it only with `input` that
    /// [`Self::check_input`] accepted in this process (before the call was
    /// approved, and again when an approval is resumed), so a lane need not
    /// check it again.
    fn call(&self, context: CallContext, input: String) -> BoxFuture<'_, LaneOutcome>;

    /// Whether everything this lane sends for a call goes through
    /// [`CallContext::network`], so a tape can record it or answer it.
    /// A lane that talks to its own endpoint over a session that spans
    /// calls (a hosted MCP server) says no: the host then refuses a call
    /// made under a tape (`tape_unsupported`) instead of letting an
    /// "offline" replay go live.
    fn tapeable(&self) -> bool {
        true
    }

    /// How long a call may take when the capability names no `timeout_ms`;
    /// `None`: the host's default tool deadline. A hosted server's lane has
    /// its own (its calls wait on a remote server, not on a sandboxed CPU).
    fn default_timeout(&self) -> Option<std::time::Duration> {
        None
    }

    /// The WIT world of the lane's component, for a WASM lane.
    fn world(&self) -> Option<warden_runtime::ComponentWorld> {
        None
    }

    /// Request headers the lane's own code sets that the guest header
    /// rules refuse (a first-party service's protocol headers, such as
    /// MCP's `mcp-session-id`); the capability's injection headers never pass.
    fn host_headers(&self) -> &'static [&'static str] {
        &[]
    }

    /// How long a cancelled call may run on to wind down by itself
    /// (it sees [`CallContext::cancel`]); the host then drops it. Zero (the
    /// default): dropped at once, which stops it (a hosted server is sent
    /// `notifications/cancelled`).
    fn cancel_grace(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Do now what the first call would otherwise wait for (a WASM lane
    /// installed lazily compiles its component). Failures are not returned:
    /// the calls report them.
    fn warm_up(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// What the host tells a lane about one authorized call.
#[derive(Clone)]
#[non_exhaustive]
pub struct CallContext {
    /// The capability to run (`<extension>.<tool>`), from the host's lookup,
    /// never from the model's input.
    pub capability_id: String,
    /// The package the capability belongs to.
    pub extension_id: String,
    /// Who calls.
    pub origin: Origin,
    /// This call's id.
    pub call_id: String,
    /// The session within the Location, when the caller gave one.
    pub session: Option<String>,
    /// When the call must be over (from the capability's `timeout_ms`, else
    /// the host default); the host stops waiting at this instant.
    pub deadline: Instant,
    /// The call's egress session: the only way out. It applies the
    /// capability's network policy, injects its staged credentials and
    /// redacts every staged secret from what comes back.
    pub network: Arc<dyn CallNetwork>,
    /// Where the call's progress goes, when the caller asked for it.
    pub progress: Option<ProgressSink>,
    /// Where log entries go as they come (a lane that keeps them until
    /// the end returns them in [`LaneOutcome::logs`]; the host passes
    /// those on).
    pub logs: Option<LogSink>,
    /// What the caller's client may be asked on the call's behalf (a
    /// hosted server's elicitation and sampling), when the caller can.
    pub relay: Option<Arc<dyn Relay>>,
    /// The caller's cancellation, for a lane whose calls wind down by
    /// themselves ([`Lane::cancel_grace`]).
    pub cancel: Option<tokio_util::sync::CancellationToken>,
    /// The authenticated caller the call is made for
    /// ([`crate::Invocation::caller`]): a lane that keeps its own
    /// connections (a hosted server) sends that caller's accounts.
    pub caller: Option<String>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("capability_id", &self.capability_id)
            .field("extension_id", &self.extension_id)
            .field("origin", &self.origin)
            .field("call_id", &self.call_id)
            .field("session", &self.session)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// What a lane returns: output or a typed error, plus usage and logs, always.
#[derive(Debug)]
pub struct LaneOutcome {
    /// The output JSON (checked against the output schema by the lane), or
    /// why there is none.
    pub result: Result<Value, Box<dyn LaneError>>,
    /// Content blocks the tool returned beside its output (bounded with
    /// [`warden_core::content::bound`], secrets redacted or the block
    /// withheld); empty when the tool returns JSON only. A lane whose tool
    /// returned only content sets `result` to `Ok(Value::Null)`.
    pub content: Vec<ContentBlock>,
    /// What the call consumed (the fields a lane does not measure stay 0).
    pub usage: Usage,
    /// Log entries kept for this call (redacted, bounded).
    pub logs: Vec<LogEntry>,
}

impl LaneOutcome {
    /// A failure with no usage and no logs.
    pub fn failed(error: impl LaneError) -> Self {
        LaneOutcome {
            result: Err(Box::new(error)),
            content: Vec::new(),
            usage: Usage::default(),
            logs: Vec::new(),
        }
    }
}

/// A lane's failure: a message fit for a model (its `Display`, already
/// scrubbed and bounded by the lane) and a stable snake_case code. Errors
/// specific to one lane stay that lane's type; callers that want the detail
/// downcast (`(&*error as &dyn Error).downcast_ref::<RuntimeError>()`).
pub trait LaneError: Error + Send + Sync + 'static {
    /// The stable machine code (`timeout`, `invalid_input`, …).
    fn code(&self) -> ErrorCode;

    /// What the user must connect, when the failure is `auth_required`.
    fn auth_details(&self) -> Option<AuthDetails> {
        None
    }
}

/// The WASM lane's errors are the runtime's.
impl LaneError for RuntimeError {
    fn code(&self) -> ErrorCode {
        RuntimeError::code(self)
    }

    fn auth_details(&self) -> Option<AuthDetails> {
        match self {
            RuntimeError::AuthRequired {
                vendor,
                scopes,
                extension,
            } => Some(AuthDetails {
                vendor: vendor.clone(),
                scopes: scopes.clone(),
                extension: extension.clone(),
                handle: None,
                reason: None,
            }),
            _ => None,
        }
    }
}

/// The lane of each of `package`'s capabilities, in the manifest's order.
/// The caller has checked [`Shared::lane_refusal`] already.
pub(crate) fn bind(
    shared: &Shared,
    package: &Package,
    module: Option<Vec<u8>>,
    compile: Compile,
    provenance: crate::source::Provenance,
) -> Result<Vec<Arc<dyn Lane>>, HostError> {
    let refuse = |reason: String| HostError::InvalidPackage {
        package: package.id.clone(),
        reason,
    };
    match (&package.implementation, module) {
        (Implementation::Wasm { .. }, Some(module)) => {
            let lane = wasm::install(shared, package, module, compile, provenance)?;
            Ok(vec![lane; package.capabilities.len()])
        }
        (Implementation::FirstParty { service }, _) => {
            let implementation = shared.first_party.get(service).ok_or_else(|| {
                refuse(format!(
                    "first_party service `{service}` has no implementation registered in this host"
                ))
            })?;
            let config = shared.runtime.config();
            package
                .capabilities
                .iter()
                .map(|cap| {
                    let requested = warden_runtime::LimitOverrides {
                        max_output_bytes: cap.limits.max_output_bytes,
                        ..Default::default()
                    };
                    let limits = config.defaults.with_overrides(&requested, &config.maxima);
                    let lane = first_party::FirstPartyLane::new(
                        implementation.clone(),
                        &package.id,
                        cap.input_schema.as_ref(),
                        cap.output_schema.as_ref(),
                        limits.max_output_bytes,
                        limits.max_http_requests,
                        &cap.credentials,
                    )
                    .map_err(|e| refuse(format!("`{}`: {e}", cap.id)))?;
                    Ok(Arc::new(lane) as Arc<dyn Lane>)
                })
                .collect()
        }
        _ => Err(refuse(
            "only `[runtime] kind = \"wasm\"` and registered `first_party` packages can run in this host"
                .into(),
        )),
    }
}
