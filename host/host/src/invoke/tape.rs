//! Calls under a tape: refused before authorization for a lane whose
//! traffic a tape cannot hold.

use warden_core::ErrorCode;

use crate::location::Binding;
use crate::outcome::{CallFailure, Invocation, InvokeOutcome, TapeMode};

/// A call under a tape (record or replay) of a lane whose traffic a tape
/// cannot hold is refused before authorization: a replay must never go
/// live, and a recording that holds nothing would replay as a live call.
pub(super) fn tape_refusal(binding: &Binding, invocation: &Invocation) -> Option<InvokeOutcome> {
    let mode = invocation.tape.as_ref()?;
    if binding.lane.tapeable() {
        return None;
    }
    Some(InvokeOutcome::Failed(CallFailure::Runtime {
        error: Box::new(TapeUnsupported {
            capability_id: binding.capability.id.clone(),
            mode: match mode {
                TapeMode::Record(_) => "recorded",
                TapeMode::Replay(_) => "replayed",
            },
        }),
        usage: Default::default(),
        logs: Vec::new(),
    }))
}

/// A tape was asked for a tool whose lane does not send through the call's
/// network service (a hosted MCP tool talks MCP to its server directly).
#[derive(Debug, thiserror::Error)]
#[error(
    "`{capability_id}` cannot be {mode}: it is a hosted MCP tool, whose messages go to its \
     server over the server's own session, and a tape holds only the HTTP a tool sends \
     through the host (nothing was sent)"
)]
pub(crate) struct TapeUnsupported {
    capability_id: String,
    mode: &'static str,
}

impl crate::lane::LaneError for TapeUnsupported {
    fn code(&self) -> ErrorCode {
        ErrorCode::TapeUnsupported
    }
}
