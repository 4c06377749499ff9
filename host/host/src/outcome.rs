//! What an invocation asks for and what it ends with.

use std::sync::Arc;
use warden_core::ErrorCode;
use warden_core::content::ContentBlock;
use warden_core::lane::{LogSink, ProgressSink, Relay};

use serde_json::Value;
pub use tokio_util::sync::CancellationToken;
use warden_core::Origin;
use warden_egress::AuthRequired;
use warden_egress::secrets::AuthReason;
use warden_egress::tape::{Recorder, Replay};
use warden_registry::{ApprovalError, ApprovalId, ApprovalRequest, Rule, ToolFailure, Truncation};
use warden_runtime::{LogEntry, RuntimeError, Usage};

use crate::lane::LaneError;

/// One call of a tool, as a model or product makes it.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The model-facing name (`github_get_repo`) or the capability id (`github.get_repo`).
    pub tool: String,
    /// The input JSON.
    pub input: Value,
    /// Who calls.
    pub origin: Origin,
    /// The session within the Location, scoping grants; `None` for Location-wide.
    pub session: Option<String>,
    /// The caller's id for this call (a fresh one is made when `None`).
    pub call_id: Option<String>,
    /// Record the call's host-mediated HTTP, or answer it from a tape.
    pub tape: Option<TapeMode>,
    /// Where the running call's progress goes (a lane that reports none
    /// never calls it).
    pub progress: Option<ProgressSink>,
    /// Where the call's log entries go as it runs (a hosted server's
    /// messages as they come, a guest's when it ends); they are in the
    /// outcome as well.
    pub logs: Option<LogSink>,
    /// Cancelled by the caller: the running call is stopped (its lane's
    /// future dropped: a hosted server is sent `notifications/cancelled`, a
    /// guest's instance is torn down) and ends `cancelled`, audited.
    pub cancel: Option<CancellationToken>,
    /// What the caller's client may be asked on the call's behalf: a
    /// hosted server's elicitation and sampling are relayed through it,
    /// within the call (without one they are refused as not supported).
    pub relay: Option<Arc<dyn Relay>>,
    /// The caller's trace context: the call's span is its child (when the
    /// host traces calls).
    pub trace_parent: Option<crate::TraceParent>,
    /// The authenticated caller the call is made for (a JWT subject): its
    /// own accounts serve the call, and the deployment's only for the
    /// vendors the operator shares. `None`: the deployment's accounts.
    pub caller: Option<String>,
}

/// What to do with a call's host-mediated HTTP besides sending it
/// ([`warden_egress::tape`]).
#[derive(Debug, Clone)]
pub enum TapeMode {
    /// Send through egress as usual and write every exchange down (redacted).
    Record(Arc<Recorder>),
    /// Send nothing: answer from the tape; no account is needed. Check
    /// [`Replay::finish`] after the call.
    Replay(Arc<Replay>),
}

impl Invocation {
    /// A call of `tool` with `input` from `origin`, Location-wide.
    pub fn new(tool: impl Into<String>, input: Value, origin: Origin) -> Self {
        Invocation {
            tool: tool.into(),
            input,
            origin,
            session: None,
            call_id: None,
            tape: None,
            progress: None,
            logs: None,
            cancel: None,
            relay: None,
            trace_parent: None,
            caller: None,
        }
    }

    /// This call made for the authenticated caller `subject`, with that
    /// caller's own accounts (see [`Invocation::caller`]).
    pub fn for_caller(mut self, subject: impl Into<String>) -> Self {
        self.caller = Some(subject.into());
        self
    }

    /// This call traced as a child of the caller's `parent`.
    pub fn traced_under(mut self, parent: crate::TraceParent) -> Self {
        self.trace_parent = Some(parent);
        self
    }

    /// This call with its progress reported to `sink`.
    pub fn reporting(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// This call with its log entries passed to `sink` as they come.
    pub fn logging(mut self, sink: LogSink) -> Self {
        self.logs = Some(sink);
        self
    }

    /// This call's server requests (elicitation, sampling) relayed by `relay`.
    pub fn relaying(mut self, relay: Arc<dyn Relay>) -> Self {
        self.relay = Some(relay);
        self
    }

    /// This call stopped (`cancelled`) when `token` is cancelled.
    pub fn cancelled_by(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// This call with its HTTP recorded into `recorder`.
    pub fn recording(mut self, recorder: Arc<Recorder>) -> Self {
        self.tape = Some(TapeMode::Record(recorder));
        self
    }

    /// This call answered from `replay` instead of the network.
    pub fn replaying(mut self, replay: Arc<Replay>) -> Self {
        self.tape = Some(TapeMode::Replay(replay));
        self
    }
}

/// How an invocation ended. Host defects are not here: they are the `Err` of
/// [`crate::Location::invoke`].
#[derive(Debug)]
pub enum InvokeOutcome {
    /// The tool ran and returned valid output.
    Completed(Completed),
    /// A person must approve first; resume with [`crate::Location::resume`].
    NeedsApproval(Box<ApprovalRequest>),
    /// The call was refused or the tool failed; the model sees the code and message.
    Failed(CallFailure),
}

impl InvokeOutcome {
    /// `ok`, `approval_required`, or the failure's stable code: one
    /// spelling for the audit log, the metrics and the traces.
    pub fn code(&self) -> &'static str {
        match self {
            InvokeOutcome::Completed(_) => "ok",
            InvokeOutcome::NeedsApproval(_) => ErrorCode::ApprovalRequired.as_str(),
            InvokeOutcome::Failed(failure) => failure.code().as_str(),
        }
    }
}

/// A successful call.
#[derive(Debug)]
pub struct Completed {
    /// The capability that ran.
    pub capability_id: String,
    /// The output JSON, validated against the output schema; `null` when
    /// the tool returned only `content`.
    pub output: Value,
    /// Content blocks the tool returned beside its output (text, images,
    /// audio, resources; redacted and bounded); empty when it returned JSON
    /// only. A surface that can show blocks shows these rather than `text`.
    pub content: Vec<ContentBlock>,
    /// The output as text for a model, bounded (head + tail when cut): the
    /// output JSON, or the content described when the output is `null`
    /// ([`warden_core::content::describe`]).
    pub text: String,
    /// Set when `text` was cut; says where the full output was kept.
    pub truncation: Option<Truncation>,
    /// What the call consumed.
    pub usage: Usage,
    /// Guest log entries (redacted, bounded).
    pub logs: Vec<LogEntry>,
    /// What let it run: the authorization rule, or the approval a person gave.
    pub authorized_by: AuthorizedBy,
}

/// What let a call run.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthorizedBy {
    /// Authorization allowed it outright (the rule says which clause).
    Rule(Rule),
    /// A person approved it; the lease of this approval was claimed.
    Approval(ApprovalId),
}

/// Why a call produced no output.
#[derive(Debug)]
#[non_exhaustive]
pub enum CallFailure {
    /// No tool of that name in the snapshot.
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// Authorization or the approval refused the call (denied, declined,
    /// dismissed, input changed, expired).
    Refused(ToolFailure),
    /// The approval named on a resume cannot be used: unknown, not yet
    /// answered, or already used by the one dispatch it allows.
    Approval(ApprovalError),
    /// A required credential has no account this extension may use toward
    /// its audience; the host refused before the guest started (nothing ran,
    /// nothing was sent).
    AuthRequired(AuthRequired),
    /// The caller cancelled the call while it ran ([`Invocation::cancel`]);
    /// it was stopped.
    Cancelled,
    /// The tool's lane refused the input or the tool failed (for the WASM
    /// lane, a [`RuntimeError`]: see [`CallFailure::runtime_error`]); usage
    /// is still reported.
    Runtime {
        /// The lane's typed error.
        error: Box<dyn LaneError>,
        /// What the call consumed.
        usage: Usage,
        /// Guest log entries.
        logs: Vec<LogEntry>,
    },
}

impl CallFailure {
    /// A stable machine code.
    pub fn code(&self) -> ErrorCode {
        match self {
            CallFailure::UnknownTool { .. } => ErrorCode::UnknownTool,
            CallFailure::Refused(failure) => refusal_code(failure),
            CallFailure::Approval(error) => match error {
                ApprovalError::AlreadyDispatched(_) => ErrorCode::ApprovalAlreadyUsed,
                ApprovalError::Pending(_) => ErrorCode::ApprovalPending,
                ApprovalError::NotFound(_) => ErrorCode::ApprovalNotFound,
                _ => ErrorCode::ApprovalUnusable,
            },
            CallFailure::AuthRequired(_) => ErrorCode::AuthRequired,
            CallFailure::Cancelled => ErrorCode::Cancelled,
            CallFailure::Runtime { error, .. } => error.code(),
        }
    }

    /// The structured fields of an `auth_required` failure (from the host's
    /// precheck, or reported by the guest), for JSON output and MCP clients.
    pub fn auth_details(&self) -> Option<AuthDetails> {
        match self {
            CallFailure::AuthRequired(auth) => Some(AuthDetails {
                vendor: Some(auth.needed.vendor.clone()),
                scopes: auth.needed.scopes.clone(),
                extension: auth.extension_id.clone(),
                handle: Some(auth.handle.clone()),
                reason: Some(auth.reason),
            }),
            CallFailure::Runtime { error, .. } => error.auth_details(),
            _ => None,
        }
    }

    /// The WASM lane's typed error, when that is what failed.
    pub fn runtime_error(&self) -> Option<&RuntimeError> {
        match self {
            CallFailure::Runtime { error, .. } => {
                (&**error as &(dyn std::error::Error + 'static)).downcast_ref()
            }
            _ => None,
        }
    }

    /// A message fit for a model (no secrets, bounded by the layers below).
    pub fn message(&self) -> String {
        match self {
            CallFailure::UnknownTool { name } => format!("no tool named `{name}` is available"),
            CallFailure::Refused(failure) => match failure {
                ToolFailure::Declined {
                    feedback: Some(feedback),
                    ..
                } => {
                    format!("the user declined this call: {feedback}")
                }
                other => other.to_string(),
            },
            CallFailure::Approval(error) => error.to_string(),
            CallFailure::AuthRequired(auth) => auth.to_string(),
            CallFailure::Cancelled => "the caller cancelled the call; it was stopped".into(),
            CallFailure::Runtime { error, .. } => error.to_string(),
        }
    }
}

/// What an `auth_required` failure asks of the user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuthDetails {
    /// Credential authority (`github`), when known.
    pub vendor: Option<String>,
    /// Scopes the capability needs.
    pub scopes: Vec<String>,
    /// The extension asking.
    pub extension: String,
    /// The credential handle, when known.
    pub handle: Option<String>,
    /// Why: `missing`, `unbound`, `consent` or `audience`. `None` when the
    /// guest reported it (an optional credential it asked for); the host's
    /// precheck of required credentials always says why.
    pub reason: Option<AuthReason>,
}

pub(crate) fn refusal_code(failure: &ToolFailure) -> ErrorCode {
    match failure {
        ToolFailure::Denied { .. } => ErrorCode::NotPermitted,
        ToolFailure::Declined { .. } => ErrorCode::UserDeclined,
        ToolFailure::Dismissed { .. } => ErrorCode::UserDismissed,
        ToolFailure::InputChanged { .. } => ErrorCode::ApprovalInputChanged,
        ToolFailure::PackageChanged { .. } => ErrorCode::ApprovalPackageChanged,
        ToolFailure::ApprovalExpired { .. } => ErrorCode::ApprovalExpired,
        _ => ErrorCode::Refused,
    }
}

impl std::fmt::Display for CallFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}
