//! The MCP backend of `warden serve`: the host's Location as MCP tools.
//!
//! Calls arrive from a model, so their origin is `loop_run`. A call that
//! needs approval is persisted in the approval store (nothing is kept in
//! memory): the client's elicitation answer resumes it from the stored
//! request, and a client that cannot be asked repeats the identical call once
//! a person approved it out of band, which claims that approval. An
//! authenticated HTTP caller's calls run in the session `caller:<subject>`,
//! so one caller's approval is never claimed by another, and the grant an
//! "approve always" answer makes covers that caller's calls only: the
//! answer comes from the caller's own client, which speaks for no one else.
//! (A grant for every caller is the operator's: `warden approvals approve
//! --grant`.)

use std::collections::HashMap;
use std::time::Duration;
use warden_core::ErrorCode;

use serde_json::Value;
use warden_core::Origin;
use warden_core::spec::AuthRecipe;
use warden_host::{
    ApprovalId, Catalog, ConnectOptions, Host, HostError, InstalledPackage, Invocation,
    InvokeOutcome, Location, Resolution,
};
use warden_mcp::{
    ApprovalAnswer, Backend, BoxFuture, CallResult, CallSignals, Caller, OAuthCallback, OAuthStart,
    ToolEntry, ToolHints, UrlConnect,
};
use warden_registry::{ApprovalError, GrantTerms};

use crate::settings::OAuthClients;

/// How often a waiting call looks at its approval.
const APPROVAL_POLL: Duration = Duration::from_millis(500);

/// The host and Location behind an MCP server.
pub(crate) struct HostBackend {
    /// The Location's host (kept for as long as the server runs).
    host: Host,
    location: Location,
    /// The operator's OAuth clients, for connecting accounts by URL.
    clients: OAuthClients,
    /// How long a call that needs approval waits for a person to decide
    /// elsewhere, when its client cannot be asked (`serve --approval-wait`).
    approval_wait: Duration,
}

impl HostBackend {
    pub(crate) fn new(
        host: Host,
        location: Location,
        clients: OAuthClients,
        approval_wait: Duration,
    ) -> std::sync::Arc<Self> {
        std::sync::Arc::new(HostBackend {
            host,
            location,
            clients,
            approval_wait,
        })
    }
}

impl Backend for HostBackend {
    fn metrics(&self, sessions: Option<usize>) -> BoxFuture<'static, Option<String>> {
        let host = self.host.clone();
        Box::pin(async move {
            if let (Some(metrics), Some(open)) = (host.metrics(), sessions) {
                metrics.set_mcp_sessions(open);
            }
            host.render_metrics().await
        })
    }

    fn tools(&self) -> Vec<ToolEntry> {
        let packages: HashMap<String, InstalledPackage> = self
            .location
            .installed()
            .into_iter()
            .map(|p| (p.package.id.clone(), p))
            .collect();
        let snapshot = self.location.snapshot();
        Catalog::from_snapshot(&snapshot)
            .entries()
            .iter()
            .map(|entry| {
                let package = snapshot
                    .lookup(&entry.name)
                    .and_then(|t| t.def().namespace.as_ref())
                    .and_then(|id| packages.get(id));
                let tool = ToolEntry::new(
                    entry.name.clone(),
                    entry.description.clone(),
                    entry.input_schema.clone(),
                )
                .with_hints(ToolHints {
                    read_only: entry.read_only,
                    destructive: entry.destructive,
                    open_world: entry.open_world,
                    idempotent: false,
                });
                let tool = match package {
                    Some(package) => tool.with_meta(trust_meta(package)),
                    None => tool,
                };
                match &entry.output_schema {
                    Some(schema) => tool.with_output_schema(schema.clone()),
                    None => tool,
                }
            })
            .collect()
    }

    fn call(
        &self,
        name: String,
        arguments: Value,
        caller: Option<Caller>,
        signals: CallSignals,
    ) -> BoxFuture<'static, CallResult> {
        let location = self.location.clone();
        Box::pin(async move {
            let mut invocation = Invocation::new(name, arguments, Origin::LoopRun);
            invocation.caller = caller.as_ref().and_then(account_owner);
            invocation.session = caller.map(caller_session);
            let invocation = with_signals(invocation, signals);
            match location.invoke(invocation).await {
                Ok(InvokeOutcome::NeedsApproval(request)) => {
                    let id = request.id.to_string();
                    CallResult::NeedsApproval {
                        summary: format!(
                            "`{}` needs approval ({})",
                            request.capability_id, request.rule
                        ),
                        how_to_approve: format!(
                            "run `warden approvals approve {id}`, then make the identical call again, or answer the approval prompt"
                        ),
                        approval_id: id,
                    }
                }
                Ok(outcome) => result(outcome),
                Err(error) => CallResult::Protocol(format!("host error: {error}")),
            }
        })
    }

    fn await_decision(
        &self,
        approval_id: String,
        caller: Option<Caller>,
        signals: CallSignals,
    ) -> BoxFuture<'static, Option<CallResult>> {
        let (host, location, wait) = (self.host.clone(), self.location.clone(), self.approval_wait);
        Box::pin(async move {
            if wait.is_zero() {
                return None;
            }
            let id = ApprovalId(approval_id);
            let deadline = tokio::time::Instant::now() + wait;
            let mut polls = 0u32;
            loop {
                let approval = host.approvals().store().approval(&id).await.ok()??;
                if approval.state != warden_registry::ApprovalState::Pending {
                    break;
                }
                let cancelled = signals.cancel.as_ref().is_some_and(|c| c.is_cancelled());
                if cancelled || tokio::time::Instant::now() >= deadline {
                    return None;
                }
                // Every few seconds, a progress report keeps a client that
                // asked for progress from timing the call out.
                if polls.is_multiple_of(10)
                    && let Some(progress) = &signals.progress
                {
                    progress.report(warden_core::lane::Progress {
                        progress: f64::from(polls),
                        total: None,
                        message: Some(format!(
                            "waiting for a person to approve `{}` ({id})",
                            approval.capability_id
                        )),
                    });
                }
                polls += 1;
                tokio::time::sleep(APPROVAL_POLL).await;
            }
            // Decided: the same call resumes once (ran, or refused).
            let mut invocation = location.asking_invocation(&id).await.ok()?;
            // The session is the asking call's, as stored; the caller is
            // whose accounts it uses (as when a client answers itself).
            invocation.caller = caller.as_ref().and_then(account_owner);
            let invocation = with_signals(invocation, signals);
            Some(match location.resume(&id, invocation).await {
                Ok(outcome) => result(outcome),
                Err(error) => CallResult::Protocol(format!("resuming the approved call: {error}")),
            })
        })
    }

    fn resolve(
        &self,
        approval_id: String,
        answer: ApprovalAnswer,
        caller: Option<Caller>,
        signals: CallSignals,
    ) -> BoxFuture<'static, CallResult> {
        let location = self.location.clone();
        Box::pin(async move {
            let resolution = match answer {
                ApprovalAnswer::ApproveOnce => Resolution::ApproveOnce,
                // Scoped to the call's session by the host when it has one.
                ApprovalAnswer::ApproveAndGrant => {
                    Resolution::ApproveAndGrant(GrantTerms::default())
                }
                ApprovalAnswer::Deny => Resolution::Deny,
                ApprovalAnswer::DenyWithFeedback(text) => Resolution::DenyWithFeedback(text),
            };
            // A denial comes back as a typed failure the model sees. The
            // resumed call reports, stops and relays as the call that asked.
            let id = ApprovalId(approval_id);
            let answered = match location.asking_invocation(&id).await {
                Ok(mut invocation) => {
                    invocation.caller = caller.as_ref().and_then(account_owner);
                    let invocation = with_signals(invocation, signals);
                    location
                        .answer_and_resume(&id, resolution, invocation)
                        .await
                }
                Err(error) => Err(error),
            };
            match answered {
                Ok(outcome) => result(outcome),
                Err(HostError::Approval(ApprovalError::NotFound(id))) => {
                    CallResult::Protocol(format!("no pending call for approval `{id}`"))
                }
                Err(error) => CallResult::Protocol(format!("answering the approval: {error}")),
            }
        })
    }

    fn connect_by_url(
        &self,
        details: &Value,
        caller: Option<&Caller>,
    ) -> BoxFuture<'static, Option<UrlConnect>> {
        // With a public URL every connection returns through the server
        // (the person's browser may be anywhere), a person's as their own
        // account. Without one, a loopback listener here takes it: never
        // for a person, whose account it would not be.
        let through_server = self.host.oauth_redirect_uri().is_some();
        let owner = caller.and_then(account_owner);
        if owner.is_some() && !through_server {
            return Box::pin(async { None });
        }
        let options = match owner {
            Some(owner) => ConnectOptions::for_caller(owner),
            None => {
                let mut options = ConnectOptions::default();
                options.through_server = through_server;
                options
            }
        };
        let (location, clients, details) =
            (self.location.clone(), self.clients.clone(), details.clone());
        Box::pin(async move { connect_by_url(&location, &clients, &details, options).await })
    }

    fn oauth_start(&self, query: &str) -> BoxFuture<'static, Option<OAuthStart>> {
        let (host, query) = (self.host.clone(), query.to_owned());
        Box::pin(async move {
            let page = host.oauth_start_page(&query).await?;
            Some(OAuthStart {
                authorize_url: page.authorize_url,
                vendor: page.vendor,
                owner: page.owner,
                extensions: page.extensions,
            })
        })
    }

    fn oauth_callback(&self, query: &str) -> BoxFuture<'static, Option<OAuthCallback>> {
        use warden_egress::auth::server_callback::Delivered;
        let (host, query) = (self.host.clone(), query.to_owned());
        Box::pin(async move {
            Some(match host.deliver_oauth_callback(&query).await? {
                Delivered::Completed => OAuthCallback::Completed,
                Delivered::Refused => OAuthCallback::Refused,
                Delivered::Unknown => OAuthCallback::Unknown,
            })
        })
    }

    fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.location.changes()
    }
}

/// How long a connection offered by URL waits for the person.
const URL_CONNECT_TIMEOUT: Duration = Duration::from_secs(300);

/// Start connecting the account an `auth_required` names, when its
/// extension's recipe for the vendor is `oauth2_code` (the same connection
/// `warden auth connect` runs; a 403's scopes are asked for as a step-up).
/// A consent refusal (`consent`, or `changed` for a package replaced since
/// it was allowed) is not a connection: it needs `warden secret allow`.
async fn connect_by_url(
    location: &Location,
    clients: &OAuthClients,
    details: &Value,
    options: ConnectOptions,
) -> Option<UrlConnect> {
    let extension = details["extension"].as_str()?;
    let vendor = details["vendor"].as_str()?;
    let reason = details["reason"].as_str();
    // Consent a person gives by connecting through this package: only for
    // an account of its vendor family, which it may connect again (see
    // `warden_host::Location::vendor_family`); any other is allowed by hand.
    if matches!(reason, Some("consent" | "changed")) && location.vendor_family(vendor).len() < 2 {
        return None;
    }
    let mut target = location.auth_target(extension, Some(vendor)).ok()?;
    if !matches!(target.recipe, AuthRecipe::Oauth2Code(_)) {
        return None;
    }
    if reason == Some("insufficient_scope") {
        target.step_up = details["scopes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }
    let client = match clients.prepare(&mut target) {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!(%vendor, error = %format!("{error:#}"), "no OAuth client to connect by URL");
            return None;
        }
    };
    let connect = match location.begin_oauth_with(&target, client, options).await {
        Ok(connect) => connect,
        Err(error) => {
            tracing::warn!(%vendor, %error, "could not start connecting by URL");
            return None;
        }
    };
    let scopes = target.requested_scopes().join(" ");
    Some(UrlConnect {
        url: connect.url().to_owned(),
        message: format!(
            "Connect a `{vendor}` account for `{extension}` (scopes: {}): open the URL and \
             authorize; the call then runs again.",
            if scopes.is_empty() { "none" } else { &scopes }
        ),
        done: Box::pin(async move {
            connect
                .finish(URL_CONNECT_TIMEOUT)
                .await
                .map(|_| ())
                .map_err(|error| error.to_string())
        }),
    })
}

/// Whose accounts serve an authenticated caller's calls: a person's (a JWT
/// subject) are their own; the static token stands for the deployment.
fn account_owner(caller: &Caller) -> Option<String> {
    caller.own_accounts.then(|| caller.subject.clone())
}

/// The session an authenticated caller's calls run in. The session is part
/// of an approval's fingerprint, so "approve, then call again" claims only the
/// same caller's approval, and a grant its client's "approve always" makes
/// covers that session only (see the module header).
fn caller_session(caller: Caller) -> String {
    format!("caller:{}", caller.subject)
}

/// The `_meta` of a tool: its package and the trust the host gave it.
fn trust_meta(package: &InstalledPackage) -> serde_json::Map<String, Value> {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "warden/package".into(),
        Value::from(package.package.id.as_str()),
    );
    meta.insert(
        "warden/package_digest".into(),
        Value::from(package.digest.as_str()),
    );
    meta.insert(
        "warden/provenance".into(),
        package.provenance.as_str().into(),
    );
    meta.insert("warden/trust".into(), package.trust.as_str().into());
    meta
}

/// `invocation` with what the MCP client attached to its call.
fn with_signals(mut invocation: Invocation, signals: CallSignals) -> Invocation {
    invocation.progress = signals.progress;
    invocation.logs = signals.logs;
    invocation.cancel = signals.cancel;
    invocation.relay = signals.relay;
    invocation.trace_parent = signals
        .trace
        .map(|(parent, state)| warden_host::TraceParent::new(parent, state));
    invocation
}

/// A finished outcome as an MCP result.
fn result(outcome: InvokeOutcome) -> CallResult {
    match outcome {
        InvokeOutcome::Completed(done) => CallResult::Output {
            structured: done.output,
            text: done.text,
            content: done.content,
        },
        InvokeOutcome::Failed(failure) => match failure.auth_details() {
            Some(auth) => CallResult::AuthRequired {
                message: failure.message(),
                details: auth.to_json(),
            },
            None => CallResult::ToolError {
                code: failure.code().to_string(),
                message: failure.message(),
            },
        },
        InvokeOutcome::NeedsApproval(request) => CallResult::ToolError {
            code: ErrorCode::ApprovalRequired.to_string(),
            message: format!(
                "`{}` needs a new approval (id {})",
                request.capability_id, request.id
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use warden_host::{HostConfig, PackageSource};

    use super::*;

    /// An HTTP caller answering "approve always" in its own client granted
    /// the tool to every caller (and to stdio clients): its grant covered
    /// the whole Location.
    #[tokio::test]
    async fn an_http_callers_approve_always_covers_that_caller_only() {
        let dir = tempfile::tempdir().unwrap();
        let config = HostConfig {
            data_dir: Some(dir.path().to_owned()),
            ..HostConfig::default()
        };
        let host = Host::builder(config).build().unwrap();
        let location = host.open_location("serve");
        // Installed, echo is third-party: its `ungated` loop_run asks.
        let echo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packages/echo");
        location.install(&PackageSource::from_path(echo)).unwrap();
        let clients = crate::settings::Settings::default()
            .oauth_clients()
            .unwrap();
        let backend = HostBackend::new(host, location, clients, Duration::ZERO);
        let call = |subject: Option<&str>| {
            let caller = subject.map(|s| Caller {
                subject: s.to_owned(),
                expires_at: None,
                own_accounts: true,
            });
            let signals = CallSignals::default();
            backend.call("echo_echo".into(), json!({ "text": "hi" }), caller, signals)
        };
        let CallResult::NeedsApproval { approval_id, .. } = call(Some("bob")).await else {
            panic!("a third-party tool asks at loop_run");
        };
        let resumed = backend
            .resolve(
                approval_id,
                ApprovalAnswer::ApproveAndGrant,
                Some(Caller {
                    subject: "bob".into(),
                    expires_at: None,
                    own_accounts: true,
                }),
                CallSignals::default(),
            )
            .await;
        assert!(matches!(resumed, CallResult::Output { .. }), "{resumed:?}");
        let again = call(Some("bob")).await;
        assert!(matches!(again, CallResult::Output { .. }), "{again:?}");
        for other in [Some("alice"), None] {
            let asked = call(other).await;
            assert!(
                matches!(asked, CallResult::NeedsApproval { .. }),
                "{other:?}: {asked:?}"
            );
        }
    }
}
