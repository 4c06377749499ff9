//! [`Location`]: a workspace the host serves, with its own registry.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use warden_manifest::{Capability, Package};
use warden_registry::{Executor, LocationId, Registration, Registry, Snapshot, ToolDef};
use warden_runtime::{CapabilitySpec, ComponentSpec, InstalledComponent, ToolLimits};

use crate::error::HostError;
use crate::host::Shared;
use crate::source::{self, LoadedPackage, PackageSource};

/// What a registered tool runs: the installed component and the manifest's
/// declarations of its capability. Carried by the registry's [`Executor`].
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) extension_id: String,
    /// The content digest of the package the capability came from.
    #[allow(dead_code, reason = "grants and the allowlist bind to it next")]
    pub(crate) package_digest: String,
    pub(crate) capability: Capability,
    pub(crate) component: Arc<InstalledComponent>,
}

impl Binding {
    /// Whether the capability declares any credential or network target;
    /// without either, every request would be denied.
    pub(crate) fn declares_network(&self) -> bool {
        !self.capability.credentials.is_empty() || !self.capability.network_targets.is_empty()
    }
}

/// A package installed in a Location.
#[derive(Debug)]
struct Installed {
    package: Arc<Package>,
    /// Keeps the package's tools registered; dropping it closes the registration.
    _registration: Registration,
}

/// A workspace or project the host serves. Cheap to clone.
#[derive(Clone)]
pub struct Location {
    pub(crate) id: LocationId,
    pub(crate) registry: Registry,
    pub(crate) shared: Arc<Shared>,
    installed: Arc<Mutex<BTreeMap<String, Installed>>>,
    changes: Arc<watch::Sender<u64>>,
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Location")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Location {
    pub(crate) fn new(id: LocationId, shared: Arc<Shared>) -> Self {
        Location {
            registry: Registry::new(id.clone()),
            id,
            shared,
            installed: Arc::default(),
            changes: Arc::new(watch::channel(0).0),
        }
    }

    /// The Location's id.
    pub fn id(&self) -> &str {
        &self.id.0
    }

    /// Validate, compile and register a package. Installing a package id
    /// again replaces the earlier version (the latest registration wins).
    pub fn install(&self, source: &PackageSource) -> Result<Arc<Package>, HostError> {
        let loaded = source::load(source, &self.shared.validation)?;
        self.install_loaded(loaded)
    }

    /// Install every package built into the binary.
    pub fn install_embedded(&self) -> Result<Vec<Arc<Package>>, HostError> {
        warden_bundle::PACKAGES
            .iter()
            .map(|p| self.install(&PackageSource::Embedded(p)))
            .collect()
    }

    fn install_loaded(&self, loaded: LoadedPackage) -> Result<Arc<Package>, HostError> {
        let LoadedPackage {
            package,
            module,
            digest,
            ..
        } = loaded;
        // Lanes the format has and this host does not run are refused here, with the reason.
        if let Some(reason) = package.unsupported_lane(&[]) {
            return Err(HostError::InvalidPackage {
                package: package.id.clone(),
                reason,
            });
        }
        let Some(module) = module else {
            return Err(HostError::InvalidPackage {
                package: package.id.clone(),
                reason: "only `[runtime] kind = \"wasm\"` packages can run in this host".into(),
            });
        };
        let spec = package.capabilities.iter().fold(
            ComponentSpec::new(package.id.clone(), module),
            |spec, cap| spec.with_capability(capability_spec(cap)),
        );
        let component =
            Arc::new(
                self.shared
                    .runtime
                    .install(spec)
                    .map_err(|source| HostError::Install {
                        package: package.id.clone(),
                        source,
                    })?,
            );
        let registration = self
            .registry
            .transform(format!("package:{}", package.id), |draft| {
                for capability in &package.capabilities {
                    let binding = Binding {
                        extension_id: package.id.clone(),
                        package_digest: digest.clone(),
                        capability: capability.clone(),
                        component: component.clone(),
                    };
                    draft.add(tool_def(&package.id, capability, binding))?;
                }
                Ok(())
            })?;
        let package = Arc::new(package);
        self.installed.lock().expect("installed lock").insert(
            package.id.clone(),
            Installed {
                package: package.clone(),
                _registration: registration,
            },
        );
        self.changes.send_modify(|generation| *generation += 1);
        Ok(package)
    }

    /// Remove an installed package's tools. Returns whether it was installed.
    pub fn uninstall(&self, package_id: &str) -> bool {
        let removed = self
            .installed
            .lock()
            .expect("installed lock")
            .remove(package_id)
            .is_some();
        if removed {
            self.changes.send_modify(|generation| *generation += 1);
        }
        removed
    }

    /// The packages installed here, by id.
    pub fn packages(&self) -> Vec<Arc<Package>> {
        self.installed
            .lock()
            .expect("installed lock")
            .values()
            .map(|i| i.package.clone())
            .collect()
    }

    /// The effective tools one model request advertises; later installs only
    /// affect later snapshots.
    pub fn snapshot(&self) -> Snapshot {
        self.registry.snapshot()
    }

    /// Ticks whenever the installed tools change (for `tools/list_changed`).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

fn capability_spec(cap: &Capability) -> CapabilitySpec {
    let mut spec = CapabilitySpec::new(cap.id.clone()).limits(ToolLimits {
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

/// The registry's tool object for a capability: namespace = extension id,
/// name = the capability's local name, so `github.get_repo` is published to
/// the model as `github_get_repo`.
fn tool_def(extension_id: &str, cap: &Capability, binding: Binding) -> ToolDef {
    let input_schema = cap
        .input_schema
        .clone()
        .unwrap_or_else(|| serde_json::json!({ "type": "object" }));
    let mut def = ToolDef::new(
        cap.local_name(extension_id),
        cap.description.clone(),
        input_schema,
        Executor::new(cap.id.clone(), Arc::new(binding)),
    )
    .with_namespace(extension_id)
    .with_visibility(cap.visibility)
    .with_effects(cap.effects.clone())
    .with_default_permission(cap.default_permission)
    .with_gate(cap.origin_gate_matrix);
    if let Some(schema) = &cap.output_schema {
        def = def.with_output_schema(schema.clone());
    }
    if let Some(prompt) = &cap.prompt {
        def = def.with_prompt_doc(prompt.clone());
    }
    def
}
