//! The WASM lane: an installed component, run by the runtime.

use std::sync::Arc;

use warden_core::net::BoxFuture;
use warden_runtime::{CallRequest, InstalledComponent};

use super::{CallContext, Lane, LaneError, LaneOutcome};

/// A package's installed component (shared by all its capabilities).
#[derive(Debug)]
pub(crate) struct WasmLane {
    pub(crate) component: Arc<InstalledComponent>,
}

impl Lane for WasmLane {
    fn check_input(&self, capability_id: &str, input: &str) -> Result<(), Box<dyn LaneError>> {
        self.component
            .check_input(capability_id, input)
            .map_err(|e| Box::new(e) as Box<dyn LaneError>)
    }

    fn call(&self, context: CallContext, input: String) -> BoxFuture<'_, LaneOutcome> {
        // The runtime enforces the capability's own limits (fuel, memory,
        // wall clock) and reports each as its own error.
        let request = CallRequest::new(context.capability_id, input)
            .call_id(context.call_id)
            .origin(context.origin)
            .network(context.network);
        Box::pin(async move {
            let outcome = self.component.call(request).await;
            LaneOutcome {
                result: outcome
                    .result
                    .map_err(|e| Box::new(e) as Box<dyn LaneError>),
                usage: outcome.usage,
                logs: outcome.logs,
            }
        })
    }
}
