//! What watches a call, when it is on: the host's metrics (see
//! [`crate::metrics`]: its outcome, its authorization decision, its run
//! time) and its trace (see [`crate::trace`]: a span for the call, its
//! authorization, its lane's run and each egress request).

use std::time::Instant;

use warden_core::ErrorCode;
use warden_registry::ApprovalError;

use super::Dispatched;
use crate::error::HostError;
use crate::location::{Binding, Location};
use crate::metrics::{CapabilitySeries, Metrics};
use crate::outcome::{AuthorizedBy, Invocation, InvokeOutcome};
use crate::trace::{CallTrace, Child};

impl Location {
    /// The trace of a call of `binding`'s capability (`None`: a tool
    /// nobody published), when the host traces calls.
    pub(super) fn trace(
        &self,
        invocation: &Invocation,
        binding: Option<&Binding>,
    ) -> Option<CallTrace> {
        self.shared.traces.then(|| {
            CallTrace::start(
                invocation.trace_parent.as_ref(),
                binding.map_or("", |b| &b.capability.id),
                invocation.origin.as_str(),
                &self.id.0,
            )
        })
    }

    /// Count a decided call by its capability, lane and outcome code, and
    /// end its trace with them.
    pub(super) fn observe(
        &self,
        binding: Option<&Binding>,
        outcome: &Result<InvokeOutcome, HostError>,
        trace: Option<CallTrace>,
    ) {
        if self.shared.metrics.is_none() && trace.is_none() {
            return;
        }
        let code = match outcome {
            Ok(outcome) => outcome.code(),
            Err(_) => ErrorCode::InternalError.as_str(),
        };
        let lane = binding.map(|b| b.lane.kind());
        if let Some(metrics) = &self.shared.metrics {
            match binding {
                Some(binding) if code == "ok" => series(metrics, binding).completed(),
                _ => metrics.call(binding.map_or("", |b| &b.capability.id), lane, code),
            }
        }
        if let Some(trace) = trace {
            trace.finish(code, lane);
        }
    }

    /// The span of a call's authorization, when it is traced.
    pub(super) fn authorizing(trace: Option<&CallTrace>) -> Option<Child> {
        trace.map(|t| t.child("warden.authorize"))
    }

    /// One authorization decision (`allow`, `approved`, `needs_approval`)
    /// by `rule`.
    pub(super) fn decided(&self, span: Option<&Child>, decision: &'static str, rule: &'static str) {
        if let Some(metrics) = &self.shared.metrics {
            metrics.decision(decision, rule);
        }
        if let Some(span) = span {
            span.set("warden.decision", decision);
            span.set("warden.rule", rule);
        }
    }

    /// A refusal by authorization (`deny`, by its rule) or by the approval
    /// it needed (`refused`, by the refusal's code: declined, expired, ...).
    pub(super) fn refused(&self, span: Option<&Child>, error: &ApprovalError) {
        match error {
            ApprovalError::Failure(warden_registry::ToolFailure::Denied { rule }) => {
                self.decided(span, "deny", rule.name());
            }
            ApprovalError::Failure(failure) => {
                let code = crate::outcome::refusal_code(failure).as_str();
                self.decided(span, "refused", code);
            }
            _ => {}
        }
    }

    /// [`Location::dispatch`], its run time counted and traced when on.
    pub(super) async fn run(
        &self,
        binding: &Binding,
        invocation: &Invocation,
        input_json: String,
        authorized_by: AuthorizedBy,
        trace: Option<&CallTrace>,
    ) -> Dispatched {
        let span = trace.map(|t| t.child("warden.lane"));
        if let Some(span) = &span {
            span.set("warden.lane", binding.lane.kind());
        }
        let egress = span.as_ref().map(Child::egress);
        let started = self.shared.metrics.is_some().then(Instant::now);
        let outcome = self
            .dispatch(binding, invocation, input_json, authorized_by, egress)
            .await;
        if let (Some(metrics), Some(started)) = (&self.shared.metrics, started) {
            series(metrics, binding).ran(started.elapsed());
        }
        if let Some(span) = span {
            span.end();
        }
        outcome
    }
}

/// `binding`'s series of `metrics`, resolved at its first call.
fn series<'b>(metrics: &Metrics, binding: &'b Binding) -> &'b CapabilitySeries {
    binding
        .series
        .get_or_init(|| metrics.series(&binding.capability.id, binding.lane.kind()))
}
