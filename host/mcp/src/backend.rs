//! The seam between the MCP protocol and whatever runs the tools.

use serde_json::Value;
use std::sync::Arc;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use warden_core::lane::{LogSink, ProgressSink, Relay};

use crate::Caller;

/// A boxed, sendable future, as returned by [`Backend`] methods.
pub use warden_core::net::BoxFuture;

/// What the MCP server needs from a tool host.
///
/// The `warden` binary implements it over the real host (registry snapshot,
/// authorization, approvals, runtime); tests implement it in memory.
pub trait Backend: Send + Sync + 'static {
    /// The current catalog, sorted and deterministic.
    ///
    /// Called only when the tool set changed (see [`Backend::changes`]): the
    /// server caches the converted list until the next tick.
    fn tools(&self) -> Vec<ToolEntry>;

    /// Runs one call that came from an MCP client (origin: MCP), made by
    /// `caller` when the transport authenticated one (HTTP with
    /// [`crate::HttpAuth`]); `None` over stdio and unauthenticated loopback.
    /// `signals` carries where the call's progress goes and its
    /// cancellation.
    fn call(
        &self,
        name: String,
        arguments: Value,
        caller: Option<Caller>,
        signals: CallSignals,
    ) -> BoxFuture<'static, CallResult>;

    /// Resolves a pending approval and, when approved, resumes that same call
    /// exactly once (with `signals`, as [`Backend::call`]), returning its
    /// result. `caller` is who answered: the caller of the call that asked.
    fn resolve(
        &self,
        approval_id: String,
        answer: ApprovalAnswer,
        caller: Option<Caller>,
        signals: CallSignals,
    ) -> BoxFuture<'static, CallResult>;

    /// Waits, for a client that cannot be asked (no elicitation), until a
    /// person decides pending approval `approval_id` elsewhere (the web
    /// console, `warden approvals approve`, another host), then resumes
    /// that same call once and returns its result: ran when approved, the
    /// typed refusal when denied. `None` (the default: no waiting) when it
    /// is still undecided after the backend's wait, or the call was
    /// cancelled; the client is then told how a person approves.
    fn await_decision(
        &self,
        approval_id: String,
        caller: Option<Caller>,
        signals: CallSignals,
    ) -> BoxFuture<'static, Option<CallResult>> {
        let _ = (approval_id, caller, signals);
        Box::pin(async { None })
    }

    /// Starts connecting the account an `auth_required` result names
    /// (`details`: its structured fields) when a person can do it by
    /// opening a URL (an OAuth recipe): the server then offers the URL
    /// through URL-mode elicitation and, once the account is stored, runs
    /// the call again. `None` (the default) when it cannot.
    /// `caller` is who would connect it (whose account it would be).
    fn connect_by_url(
        &self,
        details: &Value,
        caller: Option<&Caller>,
    ) -> BoxFuture<'static, Option<UrlConnect>> {
        let _ = (details, caller);
        Box::pin(async { None })
    }

    /// The host's metrics in the Prometheus text format, with `sessions`
    /// (the MCP sessions the server holds now, when it holds any) taken
    /// in; `None` (the default) when the host counts none, and `/metrics`
    /// is then not served.
    fn metrics(&self, sessions: Option<usize>) -> BoxFuture<'static, Option<String>> {
        let _ = sessions;
        Box::pin(async { None })
    }

    /// An OAuth callback a person's browser brought to the server's public
    /// origin (`GET /oauth/callback`, `query` its query string): handed to
    /// the connection waiting for it. `None` (the default): the server
    /// takes no callbacks, and the path is not served.
    fn oauth_callback(&self, query: &str) -> BoxFuture<'static, Option<OAuthCallback>> {
        let _ = query;
        Box::pin(async { None })
    }

    /// The page a connection's link opens (`GET /oauth/start`, `query` its
    /// query string): `None` when no connection waits for it.
    fn oauth_start(&self, query: &str) -> BoxFuture<'static, Option<OAuthStart>> {
        let _ = query;
        Box::pin(async { None })
    }

    /// A counter that bumps whenever the tool set changes.
    ///
    /// The server re-reads [`Backend::tools`] after a bump and sends
    /// `notifications/tools/list_changed` to every connected client.
    fn changes(&self) -> watch::Receiver<u64>;
}

/// A waiting connection's page ([`Backend::oauth_start`]).
#[derive(Debug, Clone)]
pub struct OAuthStart {
    /// Where to continue: the authorization server's authorize URL.
    pub authorize_url: String,
    /// The account's vendor.
    pub vendor: String,
    /// The caller the account becomes (`None`: the deployment's).
    pub owner: Option<String>,
    /// The packages it is connected for.
    pub extensions: Vec<String>,
}

/// What became of an OAuth callback ([`Backend::oauth_callback`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthCallback {
    /// It completed a waiting connection.
    Completed,
    /// The authorization server refused, or the callback carried no code.
    Refused,
    /// No connection waits for it.
    Unknown,
}

/// What an MCP client attached to a call besides its arguments.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallSignals {
    /// Where the call's progress goes, when the client sent a
    /// `progressToken` (each report becomes a `notifications/progress`).
    pub progress: Option<ProgressSink>,
    /// Where the call's log entries go, when the client set a level
    /// (`logging/setLevel`; each becomes a `notifications/message`).
    pub logs: Option<LogSink>,
    /// Cancelled when the client sends `notifications/cancelled` for the
    /// call (or its connection goes): the backend stops the call.
    pub cancel: Option<CancellationToken>,
    /// The client that made the call, to relay what the tool's server asks
    /// of it (elicitation, sampling) when it declared the capability.
    pub relay: Option<Arc<dyn Relay>>,
    /// The caller's W3C trace context, from the request's `_meta`
    /// (`traceparent`, with `tracestate` when sent), bounded in size and
    /// otherwise as received: the backend checks it before using it.
    pub trace: Option<(String, Option<String>)>,
}

/// An account connection a person completes by opening a URL.
pub struct UrlConnect {
    /// The URL to open (an authorization server's authorize URL).
    pub url: String,
    /// What is being connected, shown to the person.
    pub message: String,
    /// Completes when the account is stored (`Ok`) or the connection
    /// failed or timed out (`Err`, a message naming why). Dropping it
    /// abandons the connection.
    pub done: BoxFuture<'static, Result<(), String>>,
}

impl std::fmt::Debug for UrlConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlConnect")
            .field("url", &self.url)
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

/// One tool as advertised in `tools/list`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolEntry {
    /// The name a client calls, e.g. `github.get_repo`.
    pub name: String,
    /// A short human-readable title.
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON Schema of the arguments; must be an object schema.
    pub input_schema: Value,
    /// The JSON Schema of the output. When present, call results carry
    /// `structuredContent`.
    pub output_schema: Option<Value>,
    /// Behaviour hints, derived from the tool's declared effects.
    pub hints: ToolHints,
    /// The tool's `_meta` object (e.g. the package's effective trust).
    pub meta: Option<serde_json::Map<String, Value>>,
}

impl ToolEntry {
    /// A tool with a name, a description and an input schema, no output
    /// schema, and default (all `false`) hints.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema,
            output_schema: None,
            hints: ToolHints::default(),
            meta: None,
        }
    }

    /// Sets the human-readable title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, output_schema: Value) -> Self {
        self.output_schema = Some(output_schema);
        self
    }

    /// Sets the `_meta` object.
    pub fn with_meta(mut self, meta: serde_json::Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Sets the behaviour hints.
    pub fn with_hints(mut self, hints: ToolHints) -> Self {
        self.hints = hints;
        self
    }
}

/// MCP tool annotations (hints, not guarantees), derived from effects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolHints {
    /// No write effect: the tool does not modify its environment.
    pub read_only: bool,
    /// The tool may delete or overwrite (external write or delete effects).
    pub destructive: bool,
    /// The tool talks to the network (an open world of external entities).
    pub open_world: bool,
    /// Repeating a call with the same arguments has no further effect.
    pub idempotent: bool,
}

/// The outcome of [`Backend::call`] or [`Backend::resolve`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallResult {
    /// The tool ran and produced output.
    Output {
        /// The output value; sent as `structuredContent` when the tool has
        /// an output schema.
        structured: Value,
        /// The output as text (usually compact JSON), sent as a text block
        /// when `content` is empty.
        text: String,
        /// The tool's content blocks, sent as MCP content blocks (with
        /// `structured` beside them when the tool has an output schema).
        content: Vec<warden_core::content::ContentBlock>,
    },
    /// The tool ran (or was refused) with a failure the model can act on;
    /// sent as a result with `isError: true`. Both fields must already be
    /// sanitized and bounded.
    ToolError {
        /// A stable short code, e.g. `network-denied`.
        code: String,
        /// A human-readable message.
        message: String,
    },
    /// The call needs an account connected (or allowed) first; sent as a
    /// result with `isError: true` whose `structuredContent` and `_meta`
    /// carry `details` (`code`, `reason`, `vendor`, `scopes`, `extension`,
    /// `connect`).
    AuthRequired {
        /// A human-readable message (sanitized, bounded).
        message: String,
        /// The structured fields, a JSON object.
        details: serde_json::Value,
    },
    /// The call needs a person's approval before it runs.
    NeedsApproval {
        /// The id the approval store knows this pending call by.
        approval_id: String,
        /// What the call would do, shown to the person.
        summary: String,
        /// How to approve out of band, e.g. "run `warden approvals approve <id>`".
        how_to_approve: String,
    },
    /// The request itself is wrong (unknown tool, arguments not an object):
    /// answered with a JSON-RPC `invalid params` error.
    Protocol(String),
}

/// A person's answer to an approval request (a closed set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run this call, once.
    ApproveOnce,
    /// Run this call and grant the capability for later calls.
    ApproveAndGrant,
    /// Do not run the call.
    Deny,
    /// Do not run the call, and tell the model why.
    DenyWithFeedback(String),
}
