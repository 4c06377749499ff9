//! [`Location`]: a workspace the host serves, with its own registry.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use warden_manifest::{Capability, Package};
use warden_registry::{
    Executor, LocationId, PackageIdentity, Registration, Registry, RegistryError, Snapshot,
    ToolDef, ToolPolicy,
};
use warden_runtime::{
    CapabilitySpec, ComponentSpec, ComponentWorld, InstalledComponent, ToolLimits,
};

use crate::error::HostError;
use crate::host::Shared;
use crate::source::{self, LoadedPackage, PackageSource, Provenance};
use crate::trust::{EffectiveTrust, effective_trust};

/// What a registered tool runs: the installed component and the manifest's
/// declarations of its capability. Carried by the registry's [`Executor`].
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) extension_id: String,
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

/// A package installed in a Location, as the host sees it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct InstalledPackage {
    /// The validated manifest.
    pub package: Arc<Package>,
    /// The package's content digest: with the id, its identity.
    pub digest: String,
    /// Bundled or installed.
    pub provenance: Provenance,
    /// The effective trust, decided by the host (see [`effective_trust`]).
    pub trust: EffectiveTrust,
    /// The WIT world of the package's component, read from the component
    /// (Warden's own or the `near:agent@0.4.1` compatibility world); `None`
    /// for a package no component implements.
    pub world: Option<ComponentWorld>,
}

/// What to do when the id of a package being installed is already taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replace {
    /// Refuse with [`HostError::AlreadyInstalled`].
    #[default]
    No,
    /// Replace it: an installed package is removed; a bundled one is hidden
    /// until the replacement is uninstalled.
    Yes,
}

/// One registration of a package id.
#[derive(Debug)]
struct Installed {
    info: InstalledPackage,
    /// Keeps the package's tools registered; dropping it closes the
    /// registration and reveals the one below it (the bundled package).
    _registration: Registration,
}

/// A workspace or project the host serves. Cheap to clone.
#[derive(Clone)]
pub struct Location {
    pub(crate) id: LocationId,
    pub(crate) registry: Registry,
    pub(crate) shared: Arc<Shared>,
    /// Registrations per package id, oldest first; the last one is active.
    installed: Arc<Mutex<BTreeMap<String, Vec<Installed>>>>,
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

    /// The validation options packages are checked with.
    pub fn validation(&self) -> &warden_manifest::ValidationOptions {
        &self.shared.validation
    }

    /// Validate, compile and register a package. A package whose id is
    /// already installed is refused (see [`Location::install_with`]).
    pub fn install(&self, source: &PackageSource) -> Result<Arc<Package>, HostError> {
        self.install_with(source, Replace::No)
    }

    /// [`Location::install`], replacing a package of the same id when told.
    pub fn install_with(
        &self,
        source: &PackageSource,
        replace: Replace,
    ) -> Result<Arc<Package>, HostError> {
        let loaded = source::load(source, &self.shared.validation)?;
        self.install_loaded(loaded, replace)
    }

    /// Install every package built into the binary.
    pub fn install_embedded(&self) -> Result<Vec<Arc<Package>>, HostError> {
        warden_bundle::PACKAGES
            .iter()
            .map(|p| self.install(&PackageSource::Embedded(p)))
            .collect()
    }

    /// Compile and register a package already read with
    /// [`crate::load_package`] (so an install reads it once). Its tools
    /// must not flatten to a name another package's tool uses.
    pub fn install_loaded(
        &self,
        loaded: LoadedPackage,
        replace: Replace,
    ) -> Result<Arc<Package>, HostError> {
        let LoadedPackage {
            package,
            module,
            digest,
            provenance,
            ..
        } = loaded;
        // Lanes the format has and this host does not run are refused here, with the reason.
        if let Some(reason) = package.unsupported_lane(&[]) {
            return Err(HostError::InvalidPackage {
                package: package.id.clone(),
                reason,
            });
        }
        let trust = effective_trust(&package, provenance, self.shared.bundled_trust);
        let Some(module) = module else {
            return Err(HostError::InvalidPackage {
                package: package.id.clone(),
                reason: "only `[runtime] kind = \"wasm\"` packages can run in this host".into(),
            });
        };
        let identity = PackageIdentity {
            extension_id: package.id.clone(),
            digest: digest.clone(),
            bundled: provenance == Provenance::Bundled,
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
        let mut installed = self.installed.lock().expect("installed lock");
        if replace == Replace::No
            && let Some(taken) = installed.get(&package.id).and_then(|s| s.last())
        {
            return Err(HostError::AlreadyInstalled {
                id: package.id.clone(),
                provenance: taken.info.provenance,
                digest: taken.info.digest.clone(),
            });
        }
        let registration = self
            .registry
            .transform(format!("package:{}", package.id), |draft| {
                for capability in &package.capabilities {
                    let binding = Binding {
                        extension_id: package.id.clone(),
                        capability: capability.clone(),
                        component: component.clone(),
                    };
                    draft.add(tool_def(&package.id, capability, Some(binding), &identity))?;
                }
                Ok(())
            })
            .map_err(|error| collision(error, &package, &installed))?;
        let package = Arc::new(package);
        let stack = installed.entry(package.id.clone()).or_default();
        // An installed package is replaced; a bundled one stays below.
        if stack
            .last()
            .is_some_and(|top| top.info.provenance == Provenance::Installed)
        {
            stack.pop();
        }
        stack.push(Installed {
            info: InstalledPackage {
                package: package.clone(),
                digest,
                provenance,
                trust,
                world: Some(component.world()),
            },
            _registration: registration,
        });
        drop(installed);
        self.changes.send_modify(|generation| *generation += 1);
        Ok(package)
    }

    /// Remove the active registration of a package id (an installed
    /// replacement reveals the bundled package again). Returns what was
    /// removed.
    pub fn uninstall(&self, package_id: &str) -> Option<InstalledPackage> {
        let mut installed = self.installed.lock().expect("installed lock");
        let stack = installed.get_mut(package_id)?;
        let removed = stack.pop().map(|i| i.info);
        if stack.is_empty() {
            installed.remove(package_id);
        }
        drop(installed);
        self.changes.send_modify(|generation| *generation += 1);
        removed
    }

    /// The active package with id `id`.
    pub fn package(&self, id: &str) -> Option<InstalledPackage> {
        let installed = self.installed.lock().expect("installed lock");
        installed.get(id)?.last().map(|i| i.info.clone())
    }

    /// The active packages, by id.
    pub fn installed(&self) -> Vec<InstalledPackage> {
        let installed = self.installed.lock().expect("installed lock");
        installed
            .values()
            .filter_map(|stack| stack.last().map(|i| i.info.clone()))
            .collect()
    }

    /// The active packages' manifests, by id.
    pub fn packages(&self) -> Vec<Arc<Package>> {
        self.installed().into_iter().map(|i| i.package).collect()
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

/// A registry name collision as an install error naming both tools and
/// their packages.
fn collision(
    error: RegistryError,
    package: &Package,
    installed: &BTreeMap<String, Vec<Installed>>,
) -> HostError {
    let RegistryError::NameCollision {
        model_name,
        existing_placement,
        ..
    } = &error
    else {
        return error.into();
    };
    let package_of = |placement: &warden_registry::Placement| {
        let text = placement.0.as_str();
        text.strip_prefix("package:").unwrap_or(text).to_owned()
    };
    let existing_package = package_of(existing_placement);
    let tool_named = |package: &Package| {
        package
            .capabilities
            .iter()
            .find(|c| {
                warden_registry::name::model_name(Some(&package.id), c.local_name(&package.id))
                    .is_ok_and(|name| name == *model_name)
            })
            .map_or_else(|| model_name.clone(), |c| c.id.clone())
    };
    let existing_tool = installed
        .get(&existing_package)
        .and_then(|stack| stack.last())
        .map_or_else(|| model_name.clone(), |i| tool_named(&i.info.package));
    HostError::ToolCollision {
        model_name: model_name.clone(),
        tool: tool_named(package),
        package: package.id.clone(),
        existing_tool,
        existing_package,
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
