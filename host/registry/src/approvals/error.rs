//! Failures of gated calls, split by who must handle them.

use crate::{ApprovalId, Rule, StoreError};

/// A typed failure the model sees as the call's result, so it can continue
/// (ask differently, pick another tool, tell the person).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolFailure {
    /// Authorization refused the call.
    #[error("the call is not permitted: {rule}")]
    Denied {
        /// The rule that refused it.
        rule: Rule,
    },
    /// The person declined the approval.
    #[error("the user declined this call")]
    Declined {
        /// The approval.
        approval_id: ApprovalId,
        /// What they said, when they said something.
        feedback: Option<String>,
    },
    /// The person dismissed the question without answering.
    #[error("the user dismissed the approval question")]
    Dismissed {
        /// The approval.
        approval_id: ApprovalId,
    },
    /// The resumed call's input (or scope) differs from what was approved.
    #[error("the approval does not cover this input; request a new approval")]
    InputChanged {
        /// The approval.
        approval_id: ApprovalId,
    },
    /// The package providing the capability changed (replaced, updated)
    /// since the call was approved; the approval covered the old content.
    #[error(
        "the package `{extension_id}` changed since this call was approved; request a new approval"
    )]
    PackageChanged {
        /// The approval.
        approval_id: ApprovalId,
        /// The package's extension id (the capability id for tools not from a package).
        extension_id: String,
    },
    /// The approval's lease expired before the call was resumed.
    #[error("the approval expired before the call ran; request a new approval")]
    ApprovalExpired {
        /// The approval.
        approval_id: ApprovalId,
    },
}

/// Errors of the approval flow.
///
/// Only [`ApprovalError::Failure`] becomes a tool result
/// ([`ApprovalError::into_tool_failure`]); interruption and host defects
/// propagate unchanged, and the lifecycle variants are for the host's run
/// state, not the model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// A typed failure for the model (see [`ToolFailure`]).
    #[error(transparent)]
    Failure(ToolFailure),
    /// Nobody has answered yet; the run stays blocked.
    #[error("approval `{0}` is still pending")]
    Pending(ApprovalId),
    /// Another resume already claimed the lease and dispatched the call;
    /// this caller must not dispatch.
    #[error("approval `{0}` was already dispatched")]
    AlreadyDispatched(ApprovalId),
    /// No approval with this id.
    #[error("no approval `{0}`")]
    NotFound(ApprovalId),
    /// The approval was answered before.
    #[error("approval `{0}` is already resolved")]
    AlreadyResolved(ApprovalId),
    /// The run was interrupted (cancelled) while waiting. Propagate it; it
    /// is never a tool failure.
    #[error("interrupted")]
    Interrupted,
    /// The store failed: a host defect, never a tool failure.
    #[error("host defect in the approval store")]
    Store(#[from] StoreError),
}

impl ApprovalError {
    /// The tool failure the call site reports to the model, or the error
    /// itself when it must propagate (interruption, defects, lifecycle).
    pub fn into_tool_failure(self) -> Result<ToolFailure, ApprovalError> {
        match self {
            ApprovalError::Failure(failure) => Ok(failure),
            other => Err(other),
        }
    }

    /// Whether this is a host defect.
    pub fn is_defect(&self) -> bool {
        matches!(self, ApprovalError::Store(_))
    }
}

impl From<ToolFailure> for ApprovalError {
    fn from(failure: ToolFailure) -> Self {
        ApprovalError::Failure(failure)
    }
}
