//! The bridge from the exported `execute` to a [`Tool`].

use std::sync::Once;

use serde::de::DeserializeOwned;

use crate::bindings::exports::warden::tool::tool as wit;
use crate::bindings::warden::tool::call as host;
use crate::{Failure, IntoOutput};

/// A tool: one function from a call to its output (JSON, content blocks,
/// or both; see [`crate::Output`]) or a [`Failure`].
pub trait Tool {
    /// Run one call. Each call runs in a fresh instance.
    fn run(call: &Call) -> Result<impl IntoOutput, Failure>;
}

/// One invocation, as the host describes it.
#[derive(Debug)]
pub struct Call {
    capability_id: String,
    input: String,
    call_id: String,
    origin: String,
}

impl Call {
    /// The capability being invoked (`github.get_repo`), chosen by the host.
    pub fn capability_id(&self) -> &str {
        &self.capability_id
    }

    /// The capability name without the extension prefix (`get_repo`): select
    /// the operation from this, never from the input.
    pub fn operation(&self) -> &str {
        self.capability_id
            .split_once('.')
            .map_or(&self.capability_id, |(_, name)| name)
    }

    /// The host's id of this call.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Who started the call (`loop-run`, `product`, `automation`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The raw input JSON text.
    pub fn raw_input(&self) -> &str {
        &self.input
    }

    /// Tell the caller how far the call has come: `progress` out of
    /// `total` (when known), with a one-line `message`. Each report must
    /// be larger than the last (others are dropped); the host passes on
    /// 256 per call.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        host::report_progress(progress, total, message);
    }

    /// Whether the caller cancelled the call. The result of a cancelled
    /// call is discarded and its requests fail, and the host stops the
    /// tool shortly after: a tool with many steps checks this between
    /// them and returns early.
    pub fn is_cancelled(&self) -> bool {
        host::cancelled()
    }

    /// Deserialize the input. Any field `T` does not know is refused with an
    /// `input/unknown_field` failure, whatever `T`'s serde attributes say.
    pub fn input<T: DeserializeOwned>(&self) -> Result<T, Failure> {
        let mut unknown = Vec::new();
        let mut de = serde_json::Deserializer::from_str(&self.input);
        let value: T = serde_ignored::deserialize(&mut de, |path| unknown.push(path.to_string()))
            .map_err(|e| Failure::input("invalid_input", e.to_string()))?;
        if !unknown.is_empty() {
            return Err(Failure::input(
                "unknown_field",
                format!("unknown input field(s): {}", unknown.join(", ")),
            ));
        }
        Ok(value)
    }
}

/// Run `T` for one exported `execute` call. Used by [`crate::export_tool!`].
pub fn run<T: Tool>(request: wit::Request) -> wit::Response {
    install_panic_hook();
    let call = Call {
        capability_id: request.capability_id,
        input: request.input,
        call_id: request.context.call_id,
        origin: request.context.origin,
    };
    T::run(&call)
        .and_then(IntoOutput::into_output)
        .map(crate::Output::into_wit)
        .map_err(Failure::into_wit)
}

/// On `wasm32-unknown-unknown` a panic message would vanish: report it
/// through the host log before the instance traps.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            crate::log::error(&format!("panic: {info}"))
        }));
    });
}
