//! The rmcp [`ServerHandler`] over a [`Backend`].

use std::{
    borrow::Cow,
    sync::{Arc, OnceLock},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
        PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
    },
    service::{NotificationContext, RequestContext},
};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::{
    Caller, approval,
    backend::{Backend, CallResult, CallSignals},
    catalog::Catalog,
    connect, relay, reports,
    result::{self, Answer, PendingApproval},
};

/// The `instructions` sent to clients at initialization.
const INSTRUCTIONS: &str = "Warden runs sandboxed WebAssembly tools. Each tool's \
annotations say whether it reads only, writes, or reaches the network. A call that \
needs a person's approval either asks through your client (elicitation) or fails \
with code `approval_required`, an approval id, and how a person approves it.";

/// State shared by every connection of one server.
struct Shared<B> {
    backend: Arc<B>,
    catalog: Catalog,
    info: ServerConfig,
}

/// One MCP connection's handler. Cloning is cheap; each clone is a fresh
/// connection that shares the backend and the cached catalog.
pub struct WardenServer<B> {
    shared: Arc<Shared<B>>,
    /// Stops this connection's `list_changed` watcher when the handler drops.
    watcher: OnceLock<DropGuard>,
    /// The level this connection's client set (`logging/setLevel`).
    level: reports::Level,
}

impl<B> std::fmt::Debug for WardenServer<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WardenServer").finish_non_exhaustive()
    }
}

impl<B> Clone for WardenServer<B> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            watcher: OnceLock::new(),
            level: reports::Level::default(),
        }
    }
}

impl<B: Backend> WardenServer<B> {
    /// A server over `backend`.
    #[expect(
        deprecated,
        reason = "logging is deprecated by a protocol after 2025-11-25, which clients still use"
    )]
    pub fn new(backend: Arc<B>) -> Self {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let info = ServerConfig::new(capabilities)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(Implementation::new("warden", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS);
        let catalog = Catalog::new(backend.changes());
        Self {
            shared: Arc::new(Shared {
                backend,
                catalog,
                info,
            }),
            watcher: OnceLock::new(),
            level: reports::Level::default(),
        }
    }

    /// Runs one `tools/call` to a result.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let shared = &self.shared;
        let name = request.name.into_owned();
        let structured = shared
            .catalog
            .has_output_schema(shared.backend.as_ref(), &name);
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let caller = caller(&context).cloned();
        if let Some(caller) = &caller {
            tracing::info!(tool = %name, caller = %caller.subject, "tools/call");
        }
        let mut outcome = self.run(&name, &arguments, &caller, &context).await;
        // An account a person can connect by opening a URL: offer it
        // (URL-mode elicitation) and, once connected, run the call again
        // (once: a second refusal is answered as it is).
        if let Ok(CallResult::AuthRequired { details, .. }) = &outcome
            && connect::client_opens_urls(&context)
            && connect::by_url(shared.backend.as_ref(), details, caller.as_ref(), &context).await
        {
            outcome = self.run(&name, &arguments, &caller, &context).await;
        } else if let Ok(CallResult::AuthRequired { message, details }) = &mut outcome
            && !connect::client_opens_urls(&context)
        {
            // A client that cannot open it gets the link in the answer.
            connect::link(shared.backend.as_ref(), message, details, caller.as_ref()).await;
        }
        match outcome {
            Ok(outcome) => match result::answer(outcome, structured) {
                Answer::Done(result) => result,
                // A second approval for the same call: do not loop, let a
                // person resolve it out of band.
                Answer::Approval(again) => Ok(result::approval_pending(&again)),
            },
            Err(pending) => Ok(result::approval_pending(&pending)),
        }
    }

    /// One call to its outcome, asking for approval through the client when
    /// it can elicit and resuming the call with the person's answer; `Err`
    /// with the pending approval when nobody could be asked (the model is
    /// told how a person approves).
    async fn run(
        &self,
        name: &str,
        arguments: &Value,
        caller: &Option<Caller>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallResult, PendingApproval> {
        let backend = &self.shared.backend;
        let (progress, logs, reports) = reports::reports(context, &self.level);
        let signals = CallSignals {
            progress,
            logs,
            cancel: Some(context.ct.clone()),
            relay: Some(Arc::new(relay::ClientRelay::of(context))),
            trace: crate::trace_context::trace_context(context),
        };
        let call = backend.call(
            name.to_owned(),
            arguments.clone(),
            caller.clone(),
            signals.clone(),
        );
        let outcome = reports::beside(reports.as_ref(), call).await;
        let CallResult::NeedsApproval {
            approval_id,
            summary,
            how_to_approve,
        } = outcome
        else {
            return Ok(outcome);
        };
        let pending = PendingApproval {
            id: approval_id,
            summary,
            how_to_approve,
        };
        if !approval::client_can_elicit(context) {
            // A person may decide elsewhere (the console) while it waits.
            let decided = backend.await_decision(pending.id.clone(), caller.clone(), signals);
            return match reports::beside(reports.as_ref(), decided).await {
                Some(result) => Ok(result),
                None => Err(pending),
            };
        }
        let Some(answer) = approval::ask(context, &pending).await else {
            return Err(pending);
        };
        let resumed = backend.resolve(pending.id, answer, caller.clone(), signals);
        Ok(reports::beside(reports.as_ref(), resumed).await)
    }

    /// Sends `notifications/tools/list_changed` to this connection's client
    /// on every backend tick, until the handler is dropped.
    fn watch_changes(&self, context: &NotificationContext<RoleServer>) {
        let stop = CancellationToken::new();
        if self.watcher.set(stop.clone().drop_guard()).is_err() {
            return;
        }
        let mut changes = self.shared.backend.changes();
        changes.mark_unchanged();
        let peer = context.peer.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    changed = changes.changed() => {
                        if changed.is_err() || peer.notify_tool_list_changed().await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
}

/// The authenticated caller of an HTTP request (none over stdio, or on
/// loopback without authentication).
fn caller(context: &RequestContext<RoleServer>) -> Option<&Caller> {
    context
        .extensions
        .get::<hyper::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
}

impl<B: Backend> ServerHandler for WardenServer<B> {
    fn get_info(&self) -> ServerConfig {
        self.shared.info.clone()
    }

    /// The least severe level of log message this connection's client
    /// wants from its calls (none until it sets one).
    #[expect(
        deprecated,
        reason = "logging is deprecated by a protocol after 2025-11-25, which clients still use"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.level.lock().unwrap_or_else(|e| e.into_inner()) = Some(request.level);
        Ok(())
    }

    /// The `2026-07-28` lifecycle (no `initialize`, approvals as
    /// `InputRequiredResult`, `subscriptions/listen`) is not served yet.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.watch_changes(&context);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let shared = &self.shared;
        Ok(ListToolsResult::with_all_items(
            shared.catalog.tools(shared.backend.as_ref()),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let shared = &self.shared;
        shared.catalog.tool(shared.backend.as_ref(), name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Boxed: rmcp moves each request's future into a task of its own
        // (and moves it again as the task runs); the call's state machine,
        // elicitations included, is kilobytes that would be copied each time.
        Box::pin(self.call(request, context))
            .await
            .map(CallToolResponse::from)
    }
}
