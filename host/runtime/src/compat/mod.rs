//! The `near:agent@0.4.1` compatibility world: tool components built for the
//! v3 ecosystem's reference host run here unmodified.
//!
//! The world is chosen from the component itself, never from a manifest: a
//! component that exports `near:agent/tool@0.4.1` is linked against
//! [`host`] (the `near:agent/host@0.4.1` imports) plus the same locked-down
//! WASI 0.2 as Warden's own world; anything else it imports is refused at
//! install, naming the import. Each import is a thin adapter over the
//! services Warden's own world uses — the call's [`CallNetwork`] (egress
//! policy, staged credentials, redaction, byte caps), the call's log caps and
//! limits — not a second copy of them.
//!
//! What differs from Warden's own world, and why:
//! - the guest names no credential: [`CallNetwork::credential_for_url`]
//!   selects the calling tool's declared credential by the request's
//!   audience ([`http`]);
//! - the capability is passed as `{"capability_id": …}` in `request.context`
//!   and nothing else ([`call`]);
//! - `schema()` is called once at install and must return a JSON object
//!   ([`probe`]); the manifest's schemas remain what the model sees;
//! - `guest-failure` codes follow the ecosystem's alphabet
//!   (`[A-Za-z0-9_.-]`, ≤ 64) rather than Warden's snake_case ([`classify`]).
//!
//! [`CallNetwork`]: warden_core::net::CallNetwork
//! [`CallNetwork::credential_for_url`]: warden_core::net::CallNetwork::credential_for_url

pub(crate) mod bindings;
pub(crate) mod call;
pub(crate) mod classify;
pub(crate) mod host;
pub(crate) mod http;
pub(crate) mod probe;

use wasmparser::Payload;
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::error::RuntimeError;

/// The interface a compatibility component exports.
pub(crate) const TOOL_EXPORT: &str = "near:agent/tool@0.4.1";
/// The interface a `warden:tool@0.1.0` component exports.
pub(crate) const TOOL_0_1_EXPORT: &str = "warden:tool/tool@0.1.0";
/// The one non-WASI interface a compatibility component may import.
pub(crate) const HOST_IMPORT: &str = "near:agent/host@0.4.1";

/// Which contract a component was built against, read from its exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ComponentWorld {
    /// Warden's own world, `warden:tool@0.2.0` `sandboxed-tool`: content
    /// blocks, progress, cancellation.
    Warden,
    /// Warden's first world, `warden:tool@0.1.0` `sandboxed-tool`: JSON
    /// output only. Its components run unchanged.
    Warden01,
    /// The compatibility world `near:agent@0.4.1` `sandboxed-tool`.
    NearAgent,
}

impl ComponentWorld {
    /// The world's package and version, as `warden describe` shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ComponentWorld::Warden => "warden:tool@0.2.0",
            ComponentWorld::Warden01 => "warden:tool@0.1.0",
            ComponentWorld::NearAgent => "near:agent@0.4.1",
        }
    }

    /// The interfaces (besides the allowed WASI 0.2) a component of this world may import.
    pub(crate) fn imports(self) -> &'static [&'static str] {
        match self {
            ComponentWorld::Warden => crate::runtime::CONTRACT_IMPORTS,
            ComponentWorld::Warden01 => crate::runtime::CONTRACT_0_1_IMPORTS,
            ComponentWorld::NearAgent => &[HOST_IMPORT],
        }
    }
}

impl std::fmt::Display for ComponentWorld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The world of the component in `wasm`, read from its top-level exports
/// without compiling it: the compatibility world when it exports
/// [`TOOL_EXPORT`], `warden:tool@0.1.0` when it exports
/// [`TOOL_0_1_EXPORT`], Warden's current world otherwise (whose exports are
/// checked when it is prepared). Another `near:agent` version is refused by
/// name, and bytes that do not parse as WebAssembly are refused as a
/// compile error.
pub(crate) fn scan(name: &str, wasm: &[u8]) -> Result<ComponentWorld, RuntimeError> {
    let unreadable = |e: wasmparser::BinaryReaderError| RuntimeError::Compile {
        component: name.to_owned(),
        reason: format!("{e}"),
    };
    // Nested modules and components come inline between their own
    // `Version` and `End`: only depth 1 is the component itself.
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        match payload.map_err(unreadable)? {
            Payload::Version { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(exports) if depth == 1 => {
                for export in exports {
                    if let Some(world) =
                        world_of_export(name, export.map_err(unreadable)?.name.name)?
                    {
                        return Ok(world);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(ComponentWorld::Warden)
}

/// The world of a compiled component, from the same rule as [`scan`]
/// (checked against it when a lazily installed component is prepared).
pub(crate) fn detect(
    engine: &Engine,
    name: &str,
    component: &Component,
) -> Result<ComponentWorld, RuntimeError> {
    for (export, _) in component.component_type().exports(engine) {
        if let Some(world) = world_of_export(name, export)? {
            return Ok(world);
        }
    }
    Ok(ComponentWorld::Warden)
}

fn world_of_export(name: &str, export: &str) -> Result<Option<ComponentWorld>, RuntimeError> {
    if export == TOOL_EXPORT {
        return Ok(Some(ComponentWorld::NearAgent));
    }
    if export == TOOL_0_1_EXPORT {
        return Ok(Some(ComponentWorld::Warden01));
    }
    if export.starts_with("near:agent/") {
        return Err(RuntimeError::ExportMissing {
            component: name.to_owned(),
            reason: format!(
                "it exports `{export}`; this host runs the `near:agent` world only at version 0.4.1 (`{TOOL_EXPORT}`)"
            ),
        });
    }
    Ok(None)
}
