//! Turn a core module into a component and check it against the contract.

use std::collections::BTreeSet;

use anyhow::{Context, Result, bail};
use wit_component::{ComponentEncoder, DecodedWasm};
use wit_parser::{Resolve, WorldItem, WorldKey};

use crate::workspace;

/// The world every Warden-built component must fit.
pub(crate) const CONTRACT_WORLD: &str = "sandboxed-tool";

/// The compatibility world's directory under `wit/` (same world name).
pub(crate) const COMPAT_WIT_DIR: &str = "near-agent-0.4.1";

/// The directory under `wit/` of `warden:tool@0.1.0`, whose components
/// still run.
pub(crate) const WARDEN_0_1_WIT_DIR: &str = "warden-0.1.0";

/// The interfaces a component may import, as `ns:pkg/iface@version`, and
/// those it exports (which pick the contract a component is checked against).
#[derive(Debug)]
pub(crate) struct Contract {
    world: String,
    imports: BTreeSet<String>,
    exports: BTreeSet<String>,
}

impl Contract {
    /// Load Warden's own contract world from `wit/`.
    pub(crate) fn load() -> Result<Self> {
        Self::load_dir(&workspace::wit_dir())
    }

    /// Load `warden:tool@0.1.0` from `wit/warden-0.1.0/`.
    pub(crate) fn load_0_1() -> Result<Self> {
        Self::load_dir(&workspace::wit_dir().join(WARDEN_0_1_WIT_DIR))
    }

    /// Load the `near:agent@0.4.1` compatibility world from `wit/near-agent-0.4.1/`.
    pub(crate) fn load_compat() -> Result<Self> {
        Self::load_dir(&workspace::wit_dir().join(COMPAT_WIT_DIR))
    }

    /// The contract of `component`: the one whose exports it has (Warden's
    /// own, the first, otherwise), as the runtime detects it at install.
    pub(crate) fn select<'a>(contracts: &'a [Contract], component: &[u8]) -> Result<&'a Contract> {
        let decoded = wit_component::decode(component).context("decoding the component")?;
        let DecodedWasm::Component(resolve, world_id) = decoded else {
            bail!("not a component");
        };
        let exports: BTreeSet<String> = resolve.worlds[world_id]
            .exports
            .keys()
            .map(|key| resolve.name_world_key(key))
            .collect();
        Ok(contracts
            .iter()
            .find(|c| !c.exports.is_empty() && c.exports.is_subset(&exports))
            .unwrap_or(&contracts[0]))
    }

    fn load_dir(dir: &std::path::Path) -> Result<Self> {
        let mut resolve = Resolve::default();
        let (package, _) = resolve
            .push_dir(dir)
            .with_context(|| format!("parsing {}", dir.display()))?;
        let world_id = resolve
            .select_world(&[package], Some(CONTRACT_WORLD))
            .context("selecting the contract world")?;
        let world = &resolve.worlds[world_id];
        let imports = world
            .imports
            .keys()
            .map(|key| resolve.name_world_key(key))
            .collect();
        let exports = world
            .exports
            .keys()
            .map(|key| resolve.name_world_key(key))
            .collect();
        let name = &resolve.packages[package].name;
        let version = name
            .version
            .as_ref()
            .map(|v| format!("@{v}"))
            .unwrap_or_default();
        let world = format!("{}:{}/{}{version}", name.namespace, name.name, world.name);
        Ok(Contract {
            world,
            imports,
            exports,
        })
    }

    /// Check that `component` imports only contract interfaces (and, with
    /// `wasi`, the runtime's WASI 0.2 allowlist); name every one that is not.
    pub(crate) fn check(&self, guest: &str, component: &[u8], wasi: bool) -> Result<()> {
        let decoded = wit_component::decode(component)
            .with_context(|| format!("decoding the component of `{guest}`"))?;
        let DecodedWasm::Component(resolve, world_id) = decoded else {
            bail!("`{guest}` did not produce a component");
        };
        let outside: Vec<String> = resolve.worlds[world_id]
            .imports
            .iter()
            .filter(|(_, item)| !matches!(item, WorldItem::Type { .. }))
            .map(|(key, _)| import_name(&resolve, key))
            .filter(|name| !self.imports.contains(name))
            .filter(|name| !(wasi && warden_core::wasi::is_allowed_import(name)))
            .collect();
        if !outside.is_empty() {
            let also = if wasi {
                format!(
                    " (and, built for wasm32-wasip2, WASI {}x: {})",
                    warden_core::wasi::WASI_VERSION_PREFIX,
                    warden_core::wasi::WASI_ALLOWED.join(", ")
                )
            } else {
                String::new()
            };
            bail!(
                "guest `{guest}` imports {}, outside the contract world `{}`; a Warden component may import only: {}{also}",
                outside
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.world,
                self.imports.iter().cloned().collect::<Vec<_>>().join(", "),
            );
        }
        Ok(())
    }
}

fn import_name(resolve: &Resolve, key: &WorldKey) -> String {
    resolve.name_world_key(key)
}

/// Whether `wasm` is a component (preamble layer 1) rather than a core module.
pub(crate) fn is_component(wasm: &[u8]) -> bool {
    wasm.len() >= 8 && wasm[..4] == *b"\0asm" && wasm[6..8] == [1, 0]
}

/// Encode the core module produced by wit-bindgen as a component.
pub(crate) fn componentize(guest: &str, core_module: &[u8]) -> Result<Vec<u8>> {
    ComponentEncoder::default()
        .validate(true)
        .module(core_module)
        .with_context(|| format!("reading the core module of `{guest}`"))?
        .encode()
        .with_context(|| format!("encoding `{guest}` as a component"))
}
