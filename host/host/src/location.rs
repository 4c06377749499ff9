//! [`Location`]: a workspace the host serves, with its own registry.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use warden_manifest::{Capability, Package};
use warden_registry::{
    Executor, LocationId, PackageIdentity, Registration, Registry, Snapshot, ToolDef, ToolPolicy,
};
use warden_runtime::{CapabilitySpec, ComponentSpec, InstalledComponent, ToolLimits};

use crate::error::HostError;
use crate::host::Shared;
use crate::source::{self, LoadedPackage, PackageSource};

/// What a registered tool runs: the installed component and the manifest's
/// declarations of its capability. Carried by the registry's [`Executor`].
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) extension_id: String,
    /// The content digest of the package the capability came from (grants,
    /// approvals and the allowlist read it from the tool's
    /// [`PackageIdentity`]).
    #[allow(
        dead_code,
        reason = "the identity on the ToolDef is what authorization reads"
    )]
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
        // Only the bundle built into the binary (verified by digest in
        // `load`) has bundled provenance; everything else is installed.
        let bundled = matches!(source, PackageSource::Embedded(_));
        self.install_loaded(loaded, bundled)
    }

    /// Install every package built into the binary.
    pub fn install_embedded(&self) -> Result<Vec<Arc<Package>>, HostError> {
        warden_bundle::PACKAGES
            .iter()
            .map(|p| self.install(&PackageSource::Embedded(p)))
            .collect()
    }

    fn install_loaded(
        &self,
        loaded: LoadedPackage,
        bundled: bool,
    ) -> Result<Arc<Package>, HostError> {
        let LoadedPackage {
            package,
            module,
            digest,
            ..
        } = loaded;
        let Some(module) = module else {
            return Err(HostError::InvalidPackage {
                package: package.id.clone(),
                reason: "only `[runtime] kind = \"wasm\"` packages can run in this host".into(),
            });
        };
        let identity = PackageIdentity {
            extension_id: package.id.clone(),
            digest: digest.clone(),
            bundled,
        };
        // A reviewed allowlist entry that applies to this package must name
        // an effect-free tool; refuse the package before compiling it.
        for capability in &package.capabilities {
            let def = tool_def(&package.id, capability, None, &identity);
            self.shared
                .authorizer
                .review(&ToolPolicy::from(&def))
                .map_err(|source| HostError::Allowlist {
                    package: package.id.clone(),
                    source,
                })?;
        }
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
                    draft.add(tool_def(&package.id, capability, Some(binding), &identity))?;
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
/// the model as `github_get_repo`. It carries the package identity grants,
/// approvals and the allowlist bind to. Without a binding (to review the
/// policy before installing) the executor carries no payload.
fn tool_def(
    extension_id: &str,
    cap: &Capability,
    binding: Option<Binding>,
    package: &PackageIdentity,
) -> ToolDef {
    let executor = match binding {
        Some(binding) => Executor::new(cap.id.clone(), Arc::new(binding)),
        None => Executor::key(cap.id.clone()),
    };
    let input_schema = cap
        .input_schema
        .clone()
        .unwrap_or_else(|| serde_json::json!({ "type": "object" }));
    let mut def = ToolDef::new(
        cap.local_name(extension_id),
        cap.description.clone(),
        input_schema,
        executor,
    )
    .with_namespace(extension_id)
    .with_visibility(cap.visibility)
    .with_effects(cap.effects.clone())
    .with_default_permission(cap.default_permission)
    .with_gate(cap.origin_gate_matrix)
    .with_package(package.clone());
    if let Some(schema) = &cap.output_schema {
        def = def.with_output_schema(schema.clone());
    }
    if let Some(prompt) = &cap.prompt {
        def = def.with_prompt_doc(prompt.clone());
    }
    def
}
