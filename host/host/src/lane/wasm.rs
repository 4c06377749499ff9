//! The WASM lane: an installed component, run by the runtime.

use std::sync::Arc;

use warden_core::net::BoxFuture;
use warden_manifest::{Capability, Package};
use warden_runtime::{
    CANCEL_GRACE, CallRequest, CapabilitySpec, ComponentSpec, ComponentWorld, InstalledComponent,
    LimitOverrides,
};

use super::{CallContext, Lane, LaneError, LaneOutcome};
use crate::error::HostError;
use crate::host::Shared;
use crate::location::Compile;
use crate::source::Provenance;

/// A package's installed component (shared by all its capabilities).
#[derive(Debug)]
pub(crate) struct WasmLane {
    pub(crate) component: Arc<InstalledComponent>,
}

impl Lane for WasmLane {
    fn kind(&self) -> &'static str {
        "wasm"
    }

    fn check_input(&self, capability_id: &str, input: &str) -> Result<(), Box<dyn LaneError>> {
        self.component
            .check_input(capability_id, input)
            .map_err(|e| Box::new(e) as Box<dyn LaneError>)
    }

    fn call(&self, context: CallContext, input: String) -> BoxFuture<'_, LaneOutcome> {
        // The runtime enforces the capability's own limits (fuel, memory,
        // wall clock) and reports each as its own error. The input passed
        // `check_input` on this component (`Lane::call`'s contract), so the
        // runtime does not parse and validate it again.
        let mut request = CallRequest::new(context.capability_id, input)
            .call_id(context.call_id)
            .origin(context.origin)
            .network(context.network)
            .input_checked(true);
        // A `warden:tool@0.2.0` guest reports progress and sees the
        // cancellation; the runtime ignores both for the other worlds.
        request.progress = context.progress;
        request.cancel = context.cancel;
        Box::pin(async move {
            let outcome = self.component.call(request).await;
            LaneOutcome {
                result: outcome
                    .result
                    .map_err(|e| Box::new(e) as Box<dyn LaneError>),
                content: outcome.content,
                usage: outcome.usage,
                logs: outcome.logs,
            }
        })
    }

    fn world(&self) -> Option<warden_runtime::ComponentWorld> {
        Some(self.component.world())
    }

    fn cancel_grace(&self) -> std::time::Duration {
        match self.component.world() {
            // The runtime stops the guest after its grace; a little more
            // here lets the runtime report it.
            ComponentWorld::Warden => CANCEL_GRACE + std::time::Duration::from_millis(100),
            _ => std::time::Duration::ZERO,
        }
    }

    fn warm_up(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Err(error) = self.component.prepare_async().await {
                tracing::warn!(component = %self.component.name(), %error, "component failed to prepare; its calls will fail");
            }
        })
    }
}

/// Install the package's component, compiled and linked now or at first
/// use; every capability shares the one lane. An installed package's code is
/// held to the runtime's code size limit (a compile bomb is refused before
/// any compiler sees it); a bundled package's, which the vendor shipped and
/// the binary verified by digest, is not.
pub(crate) fn install(
    shared: &Shared,
    package: &Package,
    module: Vec<u8>,
    compile: Compile,
    provenance: Provenance,
) -> Result<Arc<dyn Lane>, HostError> {
    let mut spec = package.capabilities.iter().fold(
        ComponentSpec::new(package.id.clone(), module),
        |spec, cap| spec.with_capability(capability_spec(cap)),
    );
    if provenance == Provenance::Bundled {
        spec = spec.unbounded_code();
    }
    let installed = match compile {
        Compile::Now => shared.runtime.install(spec),
        Compile::OnFirstUse => shared.runtime.install_lazy(spec),
    };
    let component = installed.map_err(|source| HostError::Install {
        package: package.id.clone(),
        source,
    })?;
    Ok(Arc::new(WasmLane {
        component: Arc::new(component),
    }))
}

fn capability_spec(cap: &Capability) -> CapabilitySpec {
    let mut spec = CapabilitySpec::new(cap.id.clone()).limits(LimitOverrides {
        fuel: cap.limits.fuel,
        memory_bytes: cap.limits.memory_bytes,
        timeout_ms: cap.limits.timeout_ms,
        max_output_bytes: cap.limits.max_output_bytes,
    });
    if let Some(schema) = &cap.input_schema {
        spec = spec.input_schema(schema.clone());
    }
    if let Some(schema) = &cap.output_schema {
        spec = spec.output_schema(schema.clone());
    }
    spec
}
