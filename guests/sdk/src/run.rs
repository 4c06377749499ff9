//! The bridge from the exported `execute` to a [`Tool`].

use std::sync::Once;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Failure;
use crate::bindings::exports::warden::tool::tool as wit;

/// A tool: one function from a call to JSON output or a [`Failure`].
pub trait Tool {
    /// Run one call. Each call runs in a fresh instance.
    fn run(call: &Call) -> Result<impl Serialize, Failure>;
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
        self.capability_id.split_once('.').map_or(&self.capability_id, |(_, name)| name)
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
        .and_then(|output| {
            serde_json::to_string(&output).map_err(|e| Failure::executor("unserializable_output", e.to_string()))
        })
        .map_err(Failure::into_wit)
}

/// On `wasm32-unknown-unknown` a panic message would vanish: report it
/// through the host log before the instance traps.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| crate::log::error(&format!("panic: {info}"))));
    });
}
