//! What a call adds to the host's metrics (see [`crate::metrics`]), when
//! they are on: its outcome, its authorization decision, its run time.

use std::time::Instant;

use warden_core::ErrorCode;
use warden_registry::ApprovalError;

use crate::error::HostError;
use crate::location::{Binding, Location};
use crate::outcome::{AuthorizedBy, Invocation, InvokeOutcome};

impl Location {
    /// [`Location::dispatch`], its run time counted when metrics are on.
    pub(super) async fn run(
        &self,
        binding: &Binding,
        invocation: &Invocation,
        input_json: String,
        authorized_by: AuthorizedBy,
    ) -> InvokeOutcome {
        let Some(metrics) = &self.shared.metrics else {
            return self
                .dispatch(binding, invocation, input_json, authorized_by)
                .await;
        };
        let started = Instant::now();
        let outcome = self
            .dispatch(binding, invocation, input_json, authorized_by)
            .await;
        metrics.run_time(
            &binding.capability.id,
            binding.lane.kind(),
            started.elapsed(),
        );
        outcome
    }

    /// Count a decided call by its capability, lane and outcome code.
    pub(super) fn count(
        &self,
        binding: Option<&Binding>,
        outcome: &Result<InvokeOutcome, HostError>,
    ) {
        let Some(metrics) = &self.shared.metrics else {
            return;
        };
        let code = match outcome {
            Ok(InvokeOutcome::Completed(_)) => "ok",
            Ok(InvokeOutcome::NeedsApproval(_)) => ErrorCode::ApprovalRequired.as_str(),
            Ok(InvokeOutcome::Failed(failure)) => failure.code().as_str(),
            Err(_) => ErrorCode::InternalError.as_str(),
        };
        match binding {
            Some(binding) => metrics.call(&binding.capability.id, Some(binding.lane.kind()), code),
            None => metrics.call("", None, code),
        }
    }

    pub(super) fn count_decision(&self, decision: &'static str, rule: &'static str) {
        if let Some(metrics) = &self.shared.metrics {
            metrics.decision(decision, rule);
        }
    }

    /// A refusal by authorization (`deny`, by its rule) or by the approval
    /// it needed (`refused`, by the refusal's code: declined, expired, ...).
    pub(super) fn count_refusal(&self, error: &ApprovalError) {
        let Some(metrics) = &self.shared.metrics else {
            return;
        };
        match error {
            ApprovalError::Failure(warden_registry::ToolFailure::Denied { rule }) => {
                metrics.decision("deny", rule.name());
            }
            ApprovalError::Failure(failure) => {
                metrics.decision("refused", crate::outcome::refusal_code(failure).as_str());
            }
            _ => {}
        }
    }
}
