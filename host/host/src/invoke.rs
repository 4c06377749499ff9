//! One call, end to end: lookup -> input check -> authorize -> egress
//! session -> lane -> bound. Everything here is lane-agnostic; what runs the
//! tool is the [`crate::lane::Lane`] its registration bound.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use warden_core::net::{CallNetwork, DenyAll};
use warden_egress::tape::{Recording, Replaying};
use warden_registry::{
    ApprovalError, ApprovalId, Gate, GatedCall as Call, InvocationScope, PackageIdentity,
    RegisteredTool, Snapshot, ToolPolicy, now_millis,
};
use warden_runtime::{LimitOverrides, Limits, Unavailable};

use crate::audit::AuditEntry;
use crate::auth::refresh::NotStaged;
use crate::error::HostError;
use crate::lane::CallContext;
use crate::location::{Binding, Location};
use crate::outcome::{AuthorizedBy, CallFailure, Completed, Invocation, InvokeOutcome, TapeMode};
use crate::trace::CallTrace;

mod caller;
mod observe;
mod tape;

use tape::tape_refusal;

impl Location {
    /// Invoke a tool from a fresh snapshot.
    pub async fn invoke(&self, invocation: Invocation) -> Result<InvokeOutcome, HostError> {
        let snapshot = self.snapshot();
        self.invoke_in(&snapshot, invocation).await
    }

    /// Invoke a tool as `snapshot` captured it (the tools one model request
    /// advertised). Input is checked before anyone is asked to approve it.
    pub async fn invoke_in(
        &self,
        snapshot: &Snapshot,
        invocation: Invocation,
    ) -> Result<InvokeOutcome, HostError> {
        let Some((tool, binding)) = self.find(snapshot, &invocation.tool) else {
            let trace = self.trace(&invocation, None);
            let outcome = Ok(self.not_found(invocation.tool));
            self.observe(None, &outcome, trace);
            return outcome;
        };
        let trace = self.trace(&invocation, Some(&binding));
        let outcome = self
            .invoke_found(tool, &binding, invocation, trace.as_ref())
            .await;
        self.observe(Some(&binding), &outcome, trace);
        outcome
    }

    /// [`Location::invoke_in`] of the tool `snapshot` published, run by `binding`.
    async fn invoke_found(
        &self,
        tool: &RegisteredTool,
        binding: &Arc<Binding>,
        invocation: Invocation,
        trace: Option<&CallTrace>,
    ) -> Result<InvokeOutcome, HostError> {
        if let Some(refused) = tape_refusal(binding, &invocation) {
            return Ok(refused);
        }
        let input_json = match checked_input(binding, &invocation) {
            Ok(json) => json,
            Err(failed) => return Ok(*failed),
        };
        let call = self.call_of(tool, &invocation);
        let policy = ToolPolicy::from(tool.def());
        let authorizing = Self::authorizing(trace);
        let gate = self
            .shared
            .approvals
            .check(&self.shared.authorizer, &policy, &call, now_millis())
            .await;
        let authorized = match gate {
            Ok(Gate::Run(rule)) => {
                self.decided(authorizing.as_ref(), "allow", rule.name());
                Ok(AuthorizedBy::Rule(rule))
            }
            // The same call was approved earlier and this caller claimed it.
            Ok(Gate::Approved(dispatch)) => {
                self.decided(authorizing.as_ref(), "approved", "approval");
                Ok(AuthorizedBy::Approval(dispatch.approval_id))
            }
            Ok(Gate::Blocked(request)) => {
                let rule = request.rule.name();
                self.decided(authorizing.as_ref(), "needs_approval", rule);
                Err(Ok(InvokeOutcome::NeedsApproval(request)))
            }
            Err(error) => {
                self.refused(authorizing.as_ref(), &error);
                Err(refused(error))
            }
        };
        drop(authorizing);
        let outcome = match authorized {
            Ok(by) => Ok(self
                .run_authorized(binding, &invocation, &call, input_json, by, trace)
                .await),
            Err(settled) => settled,
        };
        self.audit(&call, &outcome);
        outcome
    }

    /// Run a call a person approved. The input must be exactly what was
    /// approved (the fingerprint is recomputed); the lease is claimed
    /// atomically, so the call runs at most once however often it is resumed.
    pub async fn resume(
        &self,
        approval: &ApprovalId,
        invocation: Invocation,
    ) -> Result<InvokeOutcome, HostError> {
        let snapshot = self.snapshot();
        let Some((tool, binding)) = self.find(&snapshot, &invocation.tool) else {
            let trace = self.trace(&invocation, None);
            let outcome = self.resume_gone(approval, invocation).await;
            self.observe(None, &outcome, trace);
            return outcome;
        };
        let trace = self.trace(&invocation, Some(&binding));
        let outcome = self
            .resume_found(approval, tool, &binding, invocation, trace.as_ref())
            .await;
        self.observe(Some(&binding), &outcome, trace);
        outcome
    }

    /// [`Location::resume`] of a tool no longer published.
    async fn resume_gone(
        &self,
        approval: &ApprovalId,
        invocation: Invocation,
    ) -> Result<InvokeOutcome, HostError> {
        // A person's "no" stands, whatever became of the tool since.
        let named = self.call_named(invocation.tool.clone(), None, &invocation);
        match self.shared.approvals.refusal(approval, &named).await {
            Ok(Some(no)) => {
                // Audited as the same answer for a tool still there is
                // (the package column empty: nobody can tell it now).
                let outcome = Ok(InvokeOutcome::Failed(CallFailure::Refused(no)));
                self.audit(&named, &outcome);
                outcome
            }
            Ok(None) => Ok(self.not_found(invocation.tool)),
            Err(error) => refused(error),
        }
    }

    /// [`Location::resume`] of the tool published now, run by `binding`.
    async fn resume_found(
        &self,
        approval: &ApprovalId,
        tool: &RegisteredTool,
        binding: &Arc<Binding>,
        invocation: Invocation,
        trace: Option<&CallTrace>,
    ) -> Result<InvokeOutcome, HostError> {
        // The call carries the package that provides the tool *now*: if it
        // was replaced since the approval, the fingerprint differs and the
        // resume is refused as "package changed".
        // Before the approval is claimed: a refused tape spends nothing.
        if let Some(refused) = tape_refusal(binding, &invocation) {
            return Ok(refused);
        }
        let call = self.call_of(tool, &invocation);
        let authorizing = Self::authorizing(trace);
        let claimed = self
            .shared
            .approvals
            .resume(approval, &call, now_millis())
            .await;
        match &claimed {
            Ok(_) => self.decided(authorizing.as_ref(), "approved", "approval"),
            Err(error) => self.refused(authorizing.as_ref(), error),
        }
        drop(authorizing);
        let outcome = match claimed {
            // Checked again here, whoever checked it when the call was first
            // made; after the approval's own refusals (declined, package
            // changed, ...), which come first. A refused input, as before,
            // spends the approval.
            Ok(dispatch) => Ok(match checked_input(binding, &invocation) {
                Ok(input_json) => {
                    let by = AuthorizedBy::Approval(dispatch.approval_id);
                    self.run_authorized(binding, &invocation, &call, input_json, by, trace)
                        .await
                }
                Err(failed) => *failed,
            }),
            Err(error) => refused(error),
        };
        self.audit(&call, &outcome);
        outcome
    }

    /// What a call of `tool` that no published tool answers fails with:
    /// `auth_required` when the `[mcp]` server that would list it refused
    /// its listing for want of authorization (connecting the account
    /// brings the tool back), else an unknown tool.
    fn not_found(&self, tool: String) -> InvokeOutcome {
        match self.hosted_auth_refusal(&tool) {
            Some(refused) => InvokeOutcome::Failed(CallFailure::Runtime {
                error: Box::new(refused),
                usage: Default::default(),
                logs: Vec::new(),
            }),
            None => InvokeOutcome::Failed(CallFailure::UnknownTool { name: tool }),
        }
    }

    /// One audit line for a decided (and maybe run) call; never its input.
    fn audit(&self, call: &Call, outcome: &Result<InvokeOutcome, HostError>) {
        let (Some(log), Ok(outcome)) = (&self.shared.audit, outcome) else {
            return;
        };
        let mut entry = AuditEntry {
            time: now_millis(),
            location: call.scope.location.0.clone(),
            session: call.scope.session.clone(),
            origin: call.origin.as_str().to_owned(),
            capability: call.capability_id.clone(),
            package_digest: call.package.as_ref().map(|p| p.digest.clone()),
            fingerprint: call.fingerprint().0,
            rule: None,
            approval_id: None,
            outcome: outcome.code().to_owned(),
            fuel: None,
            wall_ms: None,
        };
        let usage = match outcome {
            InvokeOutcome::Completed(done) => {
                match &done.authorized_by {
                    AuthorizedBy::Rule(rule) => entry.rule = Some(rule.to_string()),
                    AuthorizedBy::Approval(id) => entry.approval_id = Some(id.0.clone()),
                }
                Some(done.usage)
            }
            InvokeOutcome::NeedsApproval(request) => {
                entry.rule = Some(request.rule.to_string());
                entry.approval_id = Some(request.id.0.clone());
                None
            }
            InvokeOutcome::Failed(failure) => match failure {
                CallFailure::Runtime { usage, .. } => Some(*usage),
                _ => None,
            },
        };
        if let Some(usage) = usage {
            entry.fuel = Some(usage.fuel_consumed);
            entry.wall_ms = Some(u64::try_from(usage.wall_time.as_millis()).unwrap_or(u64::MAX));
        }
        log.record(&entry);
    }

    fn call_of(&self, tool: &RegisteredTool, invocation: &Invocation) -> Call {
        let def = tool.def();
        self.call_named(
            def.capability_id().to_owned(),
            def.package.clone(),
            invocation,
        )
    }

    /// `invocation` here as a call of `capability_id` from `package`.
    fn call_named(
        &self,
        capability_id: String,
        package: Option<PackageIdentity>,
        invocation: &Invocation,
    ) -> Call {
        let mut scope = InvocationScope {
            location: self.id.clone(),
            session: None,
        };
        scope.session.clone_from(&invocation.session);
        Call {
            capability_id,
            scope,
            origin: invocation.origin,
            input: invocation.input.clone(),
            package,
        }
    }

    /// [`Location::run`] of an authorized `call`, handing the approval it
    /// claimed back when the call stopped before its lane started (an
    /// account to connect): the identical retry claims it again, and the
    /// person is not asked twice.
    async fn run_authorized(
        &self,
        binding: &Binding,
        invocation: &Invocation,
        call: &Call,
        input_json: String,
        authorized_by: AuthorizedBy,
        trace: Option<&CallTrace>,
    ) -> InvokeOutcome {
        let claimed = match &authorized_by {
            AuthorizedBy::Approval(id) => Some(id.clone()),
            AuthorizedBy::Rule(_) => None,
        };
        let dispatched = self
            .run(binding, invocation, input_json, authorized_by, trace)
            .await;
        if let (Some(approval), false) = (claimed, dispatched.started)
            && let Err(error) = self.shared.approvals.release(&approval, call).await
        {
            tracing::warn!(%approval, %error, "could not hand back the approval of a call that did not run");
        }
        dispatched.outcome
    }

    /// Execute an authorized call: stage this capability's credentials, run
    /// its lane, bound the output.
    async fn dispatch(
        &self,
        binding: &Binding,
        invocation: &Invocation,
        input_json: String,
        authorized_by: AuthorizedBy,
        observer: Option<Arc<dyn warden_egress::EgressObserver>>,
    ) -> Dispatched {
        let capability = &binding.capability;
        let mut session_of_call = None;
        // A capability that declares no credential and no network target can
        // reach nothing: skip staging and policy building on its hot path.
        let network: Arc<dyn CallNetwork> = if !binding.declares_network() {
            Arc::new(DenyAll)
        } else if let Some(TapeMode::Replay(replay)) = &invocation.tape {
            // Answered from the tape: nothing is staged, nothing is sent.
            Arc::new(Replaying::new(replay.clone(), &capability.credentials))
        } else {
            if let Some(refused) = self.unshared_for_caller(binding, invocation) {
                return Dispatched::stopped(refused);
            }
            match self.stage_call(binding, invocation.caller.as_deref()).await {
                // Required credentials are checked before the guest starts.
                Ok(session) => match session.missing_required().into_iter().next() {
                    Some(needed) => {
                        let needed = CallFailure::AuthRequired(needed);
                        return Dispatched::stopped(InvokeOutcome::Failed(needed));
                    }
                    None => {
                        let session = Arc::new(match observer {
                            Some(observer) => session.observed_by(observer),
                            None => session,
                        });
                        session_of_call = Some(Arc::clone(&session));
                        match &invocation.tape {
                            Some(TapeMode::Record(recorder)) => Arc::new(Recording::new(
                                session,
                                &capability.credentials,
                                recorder.clone(),
                            ))
                                as Arc<dyn CallNetwork>,
                            _ => session,
                        }
                    }
                },
                Err(NotStaged::Auth(expired)) => {
                    let expired = CallFailure::AuthRequired(expired);
                    return Dispatched::stopped(InvokeOutcome::Failed(expired));
                }
                Err(NotStaged::Egress(error)) => {
                    tracing::error!(capability = %capability.id, %error, "could not prepare the call's network service");
                    return Dispatched::stopped(InvokeOutcome::Failed(CallFailure::Runtime {
                        error: Box::new(warden_runtime::RuntimeError::HostUnavailable {
                            reason: Unavailable::NetworkSetup,
                        }),
                        usage: Default::default(),
                        logs: Vec::new(),
                    }));
                }
            }
        };
        let context = CallContext {
            capability_id: capability.id.clone(),
            extension_id: binding.extension_id.clone(),
            origin: invocation.origin,
            call_id: invocation.call_id.clone().unwrap_or_else(next_call_id),
            session: invocation.session.clone(),
            deadline: Instant::now() + self.timeout_of(binding),
            network,
            progress: invocation.progress.clone(),
            logs: invocation.logs.clone(),
            relay: invocation.relay.clone(),
            cancel: invocation.cancel.clone(),
            caller: invocation.caller.clone(),
        };
        let call = binding.lane.call(context, input_json);
        let outcome = match &invocation.cancel {
            // Dropping the lane's future stops the call: a hosted server is
            // sent `notifications/cancelled`, a guest's instance goes. A
            // lane whose calls see the cancellation gets its grace first.
            Some(cancel) => {
                let mut call = std::pin::pin!(call);
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => {
                        let grace = binding.lane.cancel_grace();
                        if !grace.is_zero() {
                            let _ = tokio::time::timeout(grace, call).await;
                        }
                        return Dispatched::ran(InvokeOutcome::Failed(CallFailure::Cancelled));
                    }
                    outcome = &mut call => outcome,
                }
            }
            None => call.await,
        };
        if let Some(sink) = &invocation.logs {
            for entry in &outcome.logs {
                sink.report(entry.clone());
            }
        }
        Dispatched::ran(match outcome.result {
            Ok(output) => {
                let rendered = if output.is_null() && !outcome.content.is_empty() {
                    warden_core::content::describe(&outcome.content)
                } else {
                    serde_json::to_string_pretty(&output).unwrap_or_default()
                };
                let (text, truncation) = match self.shared.bounder.bound(&rendered) {
                    Ok(bounded) => (bounded.text, bounded.truncation),
                    Err(error) => {
                        tracing::warn!(%error, "could not keep the full output; sending it uncut");
                        (rendered, None)
                    }
                };
                InvokeOutcome::Completed(Completed {
                    capability_id: capability.id.clone(),
                    output,
                    content: outcome.content,
                    text,
                    truncation,
                    usage: outcome.usage,
                    logs: outcome.logs,
                    authorized_by,
                })
            }
            Err(error) => match crate::auth::refused_after_call(session_of_call.as_deref()) {
                Some(needed) => InvokeOutcome::Failed(CallFailure::AuthRequired(needed)),
                None => InvokeOutcome::Failed(CallFailure::Runtime {
                    error,
                    usage: outcome.usage,
                    logs: outcome.logs,
                }),
            },
        })
    }
}

impl Location {
    /// Find a tool by its model name or its capability id, exactly
    /// ([`crate::location::lookup`]), with the lane bound to it. A tool
    /// whose registration is no longer installed has no lane: unknown.
    fn find<'s>(
        &self,
        snapshot: &'s Snapshot,
        tool: &str,
    ) -> Option<(&'s Arc<RegisteredTool>, Arc<Binding>)> {
        let found = crate::location::lookup(snapshot, tool)?;
        let binding = self.binding(found.def().executor.lane()?)?;
        Some((found, binding))
    }

    /// The call's wall-clock allowance: the capability's `timeout_ms` (capped
    /// by the host's maxima), else the host default.
    fn timeout_of(&self, binding: &Binding) -> std::time::Duration {
        if binding.capability.limits.timeout_ms.is_none()
            && let Some(timeout) = binding.lane.default_timeout()
        {
            return timeout;
        }
        let config = self.shared.runtime.config();
        let requested = LimitOverrides {
            timeout_ms: binding.capability.limits.timeout_ms,
            ..LimitOverrides::default()
        };
        Limits::with_overrides(config.defaults, &requested, &config.maxima).timeout
    }
}

/// The call's input as JSON text once its lane's `check_input` accepted it
/// (before anyone is asked to approve the call, and again when an approval
/// is resumed); else the failure to return. [`Lane::call`](crate::lane::Lane::call)
/// relies on it.
fn checked_input(binding: &Binding, invocation: &Invocation) -> Result<String, Box<InvokeOutcome>> {
    let input_json = invocation.input.to_string();
    match binding
        .lane
        .check_input(&binding.capability.id, &input_json)
    {
        Ok(()) => Ok(input_json),
        Err(error) => Err(Box::new(InvokeOutcome::Failed(CallFailure::Runtime {
            error,
            usage: Default::default(),
            logs: Vec::new(),
        }))),
    }
}

/// A dispatched call's outcome, and whether its lane started: a call
/// stopped before (an account to connect, the network service) did nothing,
/// so the approval it claimed is handed back for the identical retry.
pub(crate) struct Dispatched {
    pub(crate) outcome: InvokeOutcome,
    pub(crate) started: bool,
}

impl Dispatched {
    fn stopped(outcome: InvokeOutcome) -> Self {
        Dispatched {
            outcome,
            started: false,
        }
    }

    fn ran(outcome: InvokeOutcome) -> Self {
        Dispatched {
            outcome,
            started: true,
        }
    }
}

/// Typed refusals become tool failures, and so does an approval that cannot
/// be used (unknown, still pending, already used); store defects and
/// interruptions stay errors: they are never the tool's failure.
fn refused(error: ApprovalError) -> Result<InvokeOutcome, HostError> {
    match error.into_tool_failure() {
        Ok(failure) => Ok(InvokeOutcome::Failed(CallFailure::Refused(failure))),
        Err(error @ (ApprovalError::Store(_) | ApprovalError::Interrupted)) => {
            Err(HostError::Approval(error))
        }
        Err(unusable) => Ok(InvokeOutcome::Failed(CallFailure::Approval(unusable))),
    }
}

/// A process-unique call id.
fn next_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // `getpid` is a system call per use; the id is the process's for life.
    static PID: OnceLock<u32> = OnceLock::new();
    format!(
        "call-{}-{}",
        PID.get_or_init(std::process::id),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
