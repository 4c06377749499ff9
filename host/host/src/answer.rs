//! A person's answer to a pending approval, applied in one place: the MCP
//! server (an elicitation answer, or `warden approvals` from another
//! terminal followed by the client's retry) and `warden call` both come
//! here, so the rules of an answer are the host's, not a surface's.

use warden_registry::{ApprovalError, ApprovalId, Resolution, now_millis};

use crate::error::HostError;
use crate::location::Location;
use crate::outcome::{Invocation, InvokeOutcome};

impl Location {
    /// Apply `resolution` to the pending approval `id` and run the call it
    /// held: the call the store recorded when it asked (tool, input, origin
    /// and session), never one a surface rebuilt. A grant given to a call
    /// made in a session covers that session only. A denial comes back as
    /// the call's typed failure, as the model should see it.
    pub async fn answer(
        &self,
        id: &ApprovalId,
        resolution: Resolution,
    ) -> Result<InvokeOutcome, HostError> {
        let invocation = self.asking_invocation(id).await?;
        self.answer_and_resume(id, resolution, invocation).await
    }

    /// The invocation that asked for approval `id`, as the approval store
    /// keeps it, for a caller that adds what only it has (where progress
    /// goes, its cancellation, its client to relay to) before
    /// [`Location::answer_and_resume`].
    pub async fn asking_invocation(&self, id: &ApprovalId) -> Result<Invocation, HostError> {
        let request = self
            .shared
            .approvals
            .store()
            .approval(id)
            .await
            .map_err(ApprovalError::from)?
            .ok_or_else(|| ApprovalError::NotFound(id.clone()))?;
        let mut invocation = Invocation::new(
            request.capability_id.clone(),
            request.input.clone(),
            request.origin,
        );
        invocation.session = request.scope.session.clone();
        Ok(invocation)
    }

    /// [`Location::answer`] for a caller that still holds the invocation
    /// that asked (`warden call`, with its tape): resolve, then resume it.
    /// The resume checks the invocation against the approved fingerprint.
    pub async fn answer_and_resume(
        &self,
        id: &ApprovalId,
        mut resolution: Resolution,
        invocation: Invocation,
    ) -> Result<InvokeOutcome, HostError> {
        if let Resolution::ApproveAndGrant(terms) = &mut resolution
            && invocation.session.is_some()
        {
            terms.session_only = true;
        }
        self.shared
            .approvals
            .resolve(id, resolution, now_millis())
            .await?;
        self.resume(id, invocation).await
    }
}
