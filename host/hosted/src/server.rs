//! [`HostedServer`]: one MCP session per server, kept and reused, its
//! catalog, and calls.
//!
//! The session is opened on first use and reused by every call; when the
//! server drops it (HTTP 404 on the session id) rmcp's transport
//! re-initializes it once and retries the request; when the connection is
//! gone the next use opens a new one. A `notifications/tools/list_changed`
//! from the server ticks [`HostedServer::changes`] and marks the catalog
//! stale; [`HostedServer::catalog`] then lists again. So does a catalog
//! older than [`LaneLimits::refresh_interval`]: a server whose
//! announcements never arrive (rmcp opens the standalone GET stream, read
//! by [`crate::EgressHttp`], only once the server gives a session id, and a
//! server may not serve one) is still picked up.

use crate::size;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, RequestId, ServerResult,
};
use rmcp::service::{
    ClientInitializeError, Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::sync::watch;
use warden_core::content::ContentBlock;
use warden_core::schema::{Formats, SchemaCheck};
use warden_egress::Egress;
use warden_egress::secrets::Requester;

use crate::calls::{Calls, RunningCall};
use crate::discovery::{Bounds, RemoteTool};
use crate::endpoint::Endpoint;
use crate::error::HostedError;
use crate::listener::Listener;
use crate::transport::EgressHttp;

mod catalog;
mod settings;

pub use settings::{DEFAULT_REFRESH_INTERVAL, LaneLimits, Reporting, ServerSettings, ServerSpec};

/// Oldest protocol version the lane accepts: `2025-03-26` is still widely
/// deployed, and the SDKs' clients still speak it.
const OLDEST: &str = "2025-03-26";
/// Newest protocol version the lane accepts.
const NEWEST: &str = "2026-07-28";

/// What a call returned.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutput {
    /// `structuredContent` when the server sent it (checked against the
    /// tool's `outputSchema`).
    pub structured: Option<Value>,
    /// The result's content blocks, secrets redacted (a binary block that
    /// carried one withheld) and bounded ([`warden_core::content::bound`]).
    pub content: Vec<ContentBlock>,
    /// Bytes of the result as JSON (as the server would have written it).
    pub bytes: usize,
}

impl CallOutput {
    /// The result as one JSON value: the structured output when there is
    /// one, else `{"content": [...]}` (MCP content blocks).
    pub fn to_json(&self) -> Value {
        match &self.structured {
            Some(structured) => structured.clone(),
            None => {
                let blocks: Vec<Value> = self.content.iter().map(ContentBlock::to_mcp).collect();
                serde_json::json!({ "content": blocks })
            }
        }
    }
}

type Running = RunningService<RoleClient, Listener>;

/// An accepted catalog and when this process listed it (`None`: restored
/// from a saved catalog, not listed yet).
type Accepted = (Arc<Vec<RemoteTool>>, Option<Instant>);

/// The compiled `outputSchema`s of one accepted catalog, by tool name,
/// compiled at a tool's first call (`None`: the schema does not compile).
#[derive(Default)]
struct OutputChecks {
    catalog: Option<Arc<Vec<RemoteTool>>>,
    by_tool: std::collections::HashMap<String, Option<Arc<SchemaCheck>>>,
}

impl std::fmt::Debug for OutputChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputChecks")
            .field("compiled", &self.by_tool.len())
            .finish()
    }
}

/// One hosted MCP server, reached through egress.
#[derive(Debug)]
pub struct HostedServer {
    http: EgressHttp,
    /// How long a call may go without an answer or progress.
    call_timeout: Duration,
    bounds: Bounds,
    limits: LaneLimits,
    listener: Listener,
    running: tokio::sync::Mutex<Option<Running>>,
    /// The accepted catalog and when it was listed.
    catalog: Mutex<Option<Accepted>>,
    /// One listing at a time: two running together could store the older
    /// listing after the newer one (see [`HostedServer::refresh`]).
    listing: tokio::sync::Mutex<()>,
    /// The current catalog's output checks, compiled once per tool.
    outputs: Mutex<OutputChecks>,
    /// This server as each caller reaches it with their own accounts
    /// ([`HostedServer::for_caller`]), by subject; at most
    /// [`MAX_CALLER_SESSIONS`].
    callers: Mutex<std::collections::HashMap<String, Arc<HostedServer>>>,
}

/// At most this many callers' own sessions are kept per server; past it,
/// one is dropped (its next call opens a session again).
const MAX_CALLER_SESSIONS: usize = 256;

impl HostedServer {
    /// A server from its spec; nothing is sent until the first use.
    pub fn new(egress: Egress, spec: &ServerSpec, limits: LaneLimits) -> Result<Self, HostedError> {
        let endpoint = Endpoint::parse_with(&spec.server, spec.loopback_http)?;
        let http = EgressHttp::new(
            egress,
            endpoint,
            Requester::of(&spec.extension_id, spec.content.as_deref()),
            spec.credentials.clone(),
            limits.max_response_bytes,
            // A request may last as long as a call can (its answer streams
            // progress first); the call's own timers stop it sooner.
            limits.max_call_timeout,
        );
        let call_timeout = spec
            .settings
            .call_timeout
            .unwrap_or(limits.call_timeout)
            .min(limits.max_call_timeout);
        Ok(Self {
            http,
            call_timeout,
            bounds: Bounds::with_max_tools(spec.max_tools),
            limits,
            listener: Listener {
                stale: Arc::new(AtomicBool::new(true)),
                changes: Arc::new(watch::channel(0).0),
                calls: Calls::default(),
                relay: !spec.settings.no_relay,
            },
            running: tokio::sync::Mutex::new(None),
            catalog: Mutex::new(None),
            listing: tokio::sync::Mutex::new(()),
            outputs: Mutex::default(),
            callers: Mutex::default(),
        })
    }

    /// This server as caller `owner` reaches it: the same endpoint and
    /// limits, sending `owner`'s accounts (and the deployment's of the
    /// `shared` vendors) over an MCP session of its own. It lists nothing:
    /// a call takes the catalog it checks against from this (deployment)
    /// server ([`HostedServer::call_as`]).
    pub fn for_caller(&self, owner: &str, shared: &[String]) -> HostedServer {
        HostedServer {
            http: self.http.for_caller(owner, shared),
            call_timeout: self.call_timeout,
            bounds: self.bounds,
            limits: self.limits,
            listener: Listener {
                stale: Arc::new(AtomicBool::new(false)),
                changes: Arc::new(watch::channel(0).0),
                calls: Calls::default(),
                relay: self.listener.relay,
            },
            running: tokio::sync::Mutex::new(None),
            catalog: Mutex::new(None),
            listing: tokio::sync::Mutex::new(()),
            outputs: Mutex::default(),
            callers: Mutex::default(),
        }
    }

    /// [`HostedServer::call_reporting`] for caller `owner`, on their own
    /// session with their own accounts (the deployment's only of the
    /// `shared` vendors), checked against this server's catalog.
    pub async fn call_as(
        &self,
        owner: &str,
        shared: &[String],
        name: &str,
        arguments: Value,
        reporting: Reporting,
    ) -> Result<CallOutput, HostedError> {
        let caller = {
            let mut callers = self.callers.lock().unwrap_or_else(|e| e.into_inner());
            if !callers.contains_key(owner)
                && callers.len() >= MAX_CALLER_SESSIONS
                && let Some(any) = callers.keys().next().cloned()
            {
                callers.remove(&any);
            }
            callers
                .entry(owner.to_owned())
                .or_insert_with(|| Arc::new(self.for_caller(owner, shared)))
                .clone()
        };
        let catalog = self
            .catalog
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        *caller.catalog.lock().unwrap_or_else(|e| e.into_inner()) = catalog;
        caller.call_reporting(name, arguments, reporting).await
    }

    /// The locked endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        self.http.endpoint()
    }

    /// Ticks on every `notifications/tools/list_changed` from the server.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.listener.changes.subscribe()
    }

    /// The session's peer, opening (or reopening) the session when needed.
    async fn peer(&self) -> Result<Peer<RoleClient>, HostedError> {
        let mut running = self.running.lock().await;
        if let Some(service) = running.as_ref()
            && !service.is_transport_closed()
        {
            return Ok(service.peer().clone());
        }
        let config = StreamableHttpClientTransportConfig::with_uri(self.endpoint().url());
        let transport = StreamableHttpClientTransport::with_client(self.http.clone(), config);
        let connect = self.listener.clone().serve(transport);
        let service = match tokio::time::timeout(self.limits.call_timeout, connect).await {
            Err(_) => return Err(HostedError::Timeout(self.timeout_ms())),
            Ok(Err(error)) => return Err(self.failure(&initialize_text(&error))),
            Ok(Ok(service)) => service,
        };
        let version = service
            .peer_info()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_default();
        if version.as_str() < OLDEST || version.as_str() > NEWEST {
            return Err(HostedError::Protocol(version.chars().take(32).collect()));
        }
        let peer = service.peer().clone();
        *running = Some(service);
        Ok(peer)
    }

    fn timeout_ms(&self) -> u64 {
        u64::try_from(self.call_timeout.as_millis()).unwrap_or(u64::MAX)
    }

    /// A typed refusal the transport saw, or a connection failure whose
    /// text is bounded (rmcp's messages name no secret: egress redacted
    /// every body before rmcp saw it).
    fn failure(&self, text: &str) -> HostedError {
        match self.http.take_refusal() {
            Some(refusal) => refusal.into(),
            None => HostedError::Connect(sanitize(text)),
        }
    }

    fn service_error(&self, error: ServiceError) -> HostedError {
        match error {
            ServiceError::McpError(data) => {
                HostedError::Remote(format!("{} ({})", sanitize(&data.message), data.code.0))
            }
            ServiceError::Timeout { .. } => HostedError::Timeout(self.timeout_ms()),
            // What the transport said, without rmcp's Rust type names.
            ServiceError::TransportSend(error) => self.failure(&error.error.to_string()),
            other => self.failure(&other.to_string()),
        }
    }

    /// Call remote tool `name` with `arguments` (an object). The result is
    /// bounded; `structuredContent` is checked against the tool's
    /// `outputSchema` from the accepted catalog; a tool error comes back as
    /// [`HostedError::Remote`] with a bounded message.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<CallOutput, HostedError> {
        self.call_reporting(name, arguments, Reporting::default())
            .await
    }

    /// [`Self::call`], the server's progress reports and log messages for
    /// the call passed to `reporting`'s sinks, and its elicitation and
    /// sampling requests made for the call relayed by its relay. The call may go the server's call timeout without an
    /// answer or a report (and waits on no timer while the caller is being
    /// asked), and runs [`LaneLimits::max_call_timeout`] at most. Dropping
    /// the future cancels the call: the server is sent
    /// `notifications/cancelled`.
    pub async fn call_reporting(
        &self,
        name: &str,
        arguments: Value,
        reporting: Reporting,
    ) -> Result<CallOutput, HostedError> {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            _ => return Err(HostedError::Remote("the input is not a JSON object".into())),
        };
        if self.http.requires_task(name) {
            return Err(HostedError::TaskRequired(name.to_owned()));
        }
        let check = self.output_check(name);
        let peer = self.peer().await?;
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let running = Arc::new(RunningCall::new(reporting));
        let mut result = self.send_call(&peer, params, running).await?;
        // The base64 of images and audio, most of a large answer, is moved
        // out (and back into the blocks below) rather than copied.
        let (data, bytes) = size::take_data_and_measure(&mut result);
        if bytes > self.limits.max_result_bytes {
            return Err(HostedError::ResultTooLarge {
                limit: self.limits.max_result_bytes,
            });
        }
        if result.is_error == Some(true) {
            let text: Vec<String> = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            return Err(HostedError::Remote(sanitize(&text.join(" "))));
        }
        let structured = match (result.structured_content, check) {
            (Some(structured), Some(check)) => {
                check_output(check.as_deref(), &structured)?;
                Some(structured)
            }
            (structured, None) => structured,
            (None, Some(_)) => {
                return Err(HostedError::OutputSchema(
                    "the tool declares an outputSchema but sent no structuredContent".into(),
                ));
            }
        };
        let blocks: Vec<Value> = result
            .content
            .iter()
            .zip(data)
            .map(|(block, data)| {
                let mut block = serde_json::to_value(block).unwrap_or(Value::Null);
                if let (Value::Object(fields), Some(data)) = (&mut block, data) {
                    fields.insert("data".into(), Value::String(data));
                }
                block
            })
            .collect();
        let redactor = if crate::content::carries_binary(&blocks) {
            Some(self.http.redactor().await?)
        } else {
            None
        };
        let content = crate::content::received(&blocks, redactor.as_ref());
        Ok(CallOutput {
            structured,
            content,
            bytes,
        })
    }

    /// Send `tools/call` and wait for its result, routing to `running`
    /// what the server sends for it; refused as `timeout` when it goes
    /// quiet for the call timeout or runs past the maximum (the server is
    /// then told, as when the caller abandons the call).
    async fn send_call(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        running: Arc<RunningCall>,
    ) -> Result<CallToolResult, HostedError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.service_error(e))?;
        let _route = self.listener.calls.route(
            handle.progress_token.clone(),
            handle.id.clone(),
            running.clone(),
        );
        let mut abandoned = CancelOnDrop(Some((peer.clone(), handle.id.clone())));
        let total = tokio::time::Instant::now() + self.limits.max_call_timeout;
        let mut activity = running.watch();
        let answer = handle.await_response();
        tokio::pin!(answer);
        let answer = loop {
            let idle = running.idle_deadline(self.call_timeout);
            let (deadline, limit) = match idle {
                Some(idle) if idle < total => (idle, self.call_timeout),
                _ => (total, self.limits.max_call_timeout),
            };
            tokio::select! {
                answer = &mut answer => break answer,
                changed = activity.changed() => {
                    if changed.is_err() {
                        break answer.await;
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    // Told before the error returns: the process may end
                    // right after (`warden call`).
                    abandoned.send("the call timed out").await;
                    let ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
                    return Err(HostedError::Timeout(ms));
                }
            }
        };
        abandoned.0 = None;
        // rmcp hands notifications to tasks of their own and the answer to
        // this call directly: a report the server sent just before its
        // answer may still be on its way. Give those tasks their turn
        // before the route goes (best effort; a report that comes later is
        // dropped).
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        match answer.map_err(|e| self.service_error(e))? {
            ServerResult::CallToolResult(result) => Ok(result),
            _ => Err(HostedError::Remote(
                "the server answered tools/call with something other than a tool result".into(),
            )),
        }
    }

    /// The compiled `outputSchema` of tool `name` in the current catalog:
    /// `None` without one, `Some(None)` when it does not compile. Compiled
    /// at the tool's first call after each accepted listing, not per call.
    fn output_check(&self, name: &str) -> Option<Option<Arc<SchemaCheck>>> {
        let catalog = self.current()?;
        let schema = catalog
            .iter()
            .find(|t| t.name == name)?
            .output_schema
            .as_ref()?;
        let mut checks = self.outputs.lock().unwrap_or_else(|e| e.into_inner());
        if !checks
            .catalog
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(c, &catalog))
        {
            *checks = OutputChecks {
                catalog: Some(catalog.clone()),
                by_tool: Default::default(),
            };
        }
        let compiled = checks.by_tool.entry(name.to_owned()).or_insert_with(|| {
            SchemaCheck::compile(schema, Formats::Annotate)
                .ok()
                .map(Arc::new)
        });
        Some(compiled.clone())
    }

    /// Close the session (the server is told when it can be).
    pub async fn close(&self) {
        if let Some(service) = self.running.lock().await.take() {
            let _ = service.cancel().await;
        }
    }
}

fn check_output(schema: Option<&SchemaCheck>, value: &Value) -> Result<(), HostedError> {
    let schema = schema.ok_or_else(|| {
        HostedError::OutputSchema("the tool's outputSchema does not compile".into())
    })?;
    schema
        .check(value)
        .map_err(|refused| HostedError::OutputSchema(refused.to_string()))
}

/// Bounded, single-line text for messages built from remote input.
pub(crate) fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect()
}

/// Why a session could not be opened, in the user's terms. rmcp's own
/// message names its transport's Rust type (`Send message error Transport
/// [rmcp::transport::worker::WorkerTransport<…>] error: …`): what the
/// transport said, and what it was doing, is what went wrong.
fn initialize_text(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{} ({context})", error.error)
        }
        other => other.to_string(),
    }
}

/// Tells the server a call was abandoned (`notifications/cancelled`) when
/// dropped armed: the caller cancelled it, or its deadline passed.
struct CancelOnDrop(Option<(Peer<RoleClient>, RequestId)>);

impl CancelOnDrop {
    /// Tell the server now, for `reason`.
    async fn send(&mut self, reason: &str) {
        if let Some((peer, id)) = self.0.take() {
            let params = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
            let _ = peer.notify_cancelled(params).await;
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let reason = Some("the caller cancelled the call".to_owned());
            let _ = peer
                .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                .await;
        });
    }
}

/// Marks a catalog stale again when dropped, unless its listing was
/// accepted (and this emptied): refused, timed out, or dropped midway.
struct StaleUnlessListed<'a>(Option<&'a std::sync::atomic::AtomicBool>);

impl Drop for StaleUnlessListed<'_> {
    fn drop(&mut self) {
        if let Some(stale) = self.0 {
            stale.store(true, Ordering::SeqCst);
        }
    }
}
