//! [`Location`]: a workspace the host serves, with its own registry.

pub(crate) mod hosted;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use warden_egress::Egress;
use warden_egress::policy::NetworkPolicy;
use warden_egress::secrets::{BUNDLED, Requester};
use warden_manifest::{Capability, Package};
use warden_registry::{
    Executor, LaneId, LocationId, PackageIdentity, RegisteredTool, Registration, Registry,
    RegistryError, Snapshot, ToolDef, ToolPolicy,
};
use warden_runtime::ComponentWorld;

use crate::error::HostError;
use crate::host::Shared;
use crate::lane::Lane;
use crate::source::{self, LoadedPackage, PackageSource, Provenance};
use crate::trust::EffectiveTrust;
use hosted::HostedState;
use warden_hosted::HostedServer;
use warden_manifest::Implementation;

/// What a registered tool runs: its lane and the manifest's declarations of
/// its capability (the host builds the call's egress session from them).
/// The Location maps each tool's [`LaneId`] to one of these.
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) extension_id: String,
    /// What consent to its accounts is pinned to ([`consent_content`]).
    pub(crate) content: String,
    /// The capability's network policy, built once here for every call.
    pub(crate) policy: Arc<NetworkPolicy>,
    pub(crate) capability: Capability,
    pub(crate) lane: Arc<dyn Lane>,
    /// Its series of the host's metrics, looked up at its first call (a
    /// completed call then counts without building labels).
    pub(crate) series: std::sync::OnceLock<crate::metrics::CapabilitySeries>,
}

impl Binding {
    /// `capability` of `extension_id` (whose package content is `content`)
    /// run by `lane`, with its network policy prepared.
    pub(crate) fn new(
        egress: &Egress,
        extension_id: &str,
        content: &str,
        capability: Capability,
        lane: Arc<dyn Lane>,
    ) -> Self {
        let mut policy = egress.policy(
            &capability.id,
            &capability.credentials,
            &capability.network_targets,
        );
        if !lane.host_headers().is_empty() {
            let widened = (*policy).clone().with_host_headers(lane.host_headers());
            policy = Arc::new(widened);
        }
        Binding {
            extension_id: extension_id.to_owned(),
            content: content.to_owned(),
            policy,
            capability,
            lane,
            series: std::sync::OnceLock::new(),
        }
    }

    /// Who asks for the call's accounts.
    pub(crate) fn requester(&self) -> Requester<'_> {
        Requester::new(&self.extension_id, &self.content)
    }

    /// Whether the capability declares any credential or network target;
    /// without either, every request would be denied.
    pub(crate) fn declares_network(&self) -> bool {
        !self.capability.credentials.is_empty() || !self.capability.network_targets.is_empty()
    }
}

/// A registered tool, found by [`Location::tool`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResolvedTool {
    /// The model-facing name the registry published it under.
    pub model_name: String,
    /// The id of the package that provides it.
    pub package: String,
    /// The capability its lane runs (a discovered tool's, as discovered).
    pub capability: Capability,
}

/// The tool `name` names: a model name as published, or a capability id,
/// each matched exactly. A capability id is never sanitized into a model
/// name: `github_get.repo` (an `[mcp]` package's tool whose listing was
/// refused) and `github.get.repo` flatten to the model name of the bundled
/// `github.get_repo`, and ran it with the GitHub account.
pub(crate) fn lookup<'s>(snapshot: &'s Snapshot, name: &str) -> Option<&'s Arc<RegisteredTool>> {
    snapshot
        .lookup(name)
        .or_else(|| snapshot.by_capability_id(name))
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
    /// Who signed it, checked against the operator's trusted signers when
    /// it was installed.
    pub signature: crate::SignatureStatus,
}

impl InstalledPackage {
    /// What a user's consent to this package's use of an account is pinned
    /// to: its digest, or [`BUNDLED`] for the package built into the binary
    /// (as trusted as the binary, so an upgrade of warden keeps the consent;
    /// a package installed over it does not).
    pub fn consent_content(&self) -> &str {
        consent_content(self.provenance == Provenance::Bundled, &self.digest)
    }
}

/// See [`InstalledPackage::consent_content`].
pub(crate) fn consent_content(bundled: bool, digest: &str) -> &str {
    if bundled { BUNDLED } else { digest }
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
    /// The lanes of this registration's tools (removed from the Location's
    /// lane map when it is dropped).
    lanes: Vec<LaneId>,
    /// For an `[mcp]` package: its server and the catalog published.
    hosted: Option<HostedState>,
}

/// What an install decided about a package, before its tools are published.
struct Published {
    digest: String,
    provenance: Provenance,
    trust: EffectiveTrust,
    identity: PackageIdentity,
    signature: crate::SignatureStatus,
}

/// When an installed package's component is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compile {
    /// Before the install returns: every refusal comes from the install.
    Now,
    /// At its first call or in [`Location::warm_up`].
    OnFirstUse,
}

/// A workspace or project the host serves. Cheap to clone.
#[derive(Clone)]
pub struct Location {
    pub(crate) id: LocationId,
    pub(crate) registry: Registry,
    pub(crate) shared: Arc<Shared>,
    /// Registrations per package id, oldest first; the last one is active.
    installed: Arc<Mutex<BTreeMap<String, Vec<Installed>>>>,
    /// The lane of every tool an installed registration publishes.
    lanes: Arc<Mutex<HashMap<LaneId, Arc<Binding>>>>,
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
            lanes: Arc::default(),
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

    /// Read, verify and validate a package as this host installs it: with
    /// the operator's trust pins ([`crate::HostConfig::trust_pins`]).
    pub fn load_package(&self, source: &PackageSource) -> Result<crate::LoadedPackage, HostError> {
        source::load_pinned(
            source,
            &self.shared.validation,
            &self.shared.trust_pins,
            &self.shared.signers,
        )
    }

    /// Why this host will not run `package`, the reason install refuses it
    /// with (see [`crate::Host::lane_refusal`]).
    pub fn lane_refusal(&self, package: &Package) -> Option<String> {
        self.shared.lane_refusal(package)
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
        let loaded = self.load_package(source)?;
        self.install_loaded(loaded, replace)
    }

    /// Install every package built into the binary. Their components (built
    /// and tested with the binary) compile at first use or in
    /// [`Location::warm_up`], so opening a Location compiles nothing.
    ///
    /// A built-in `first_party` package runs native code the embedding
    /// registers (the `warden` binary registers `warden-services`); one
    /// whose service this host did not register is left out, not refused:
    /// an embedding that wants no Gmail simply does not register it.
    pub fn install_embedded(&self) -> Result<Vec<Arc<Package>>, HostError> {
        let mut installed = Vec::new();
        for embedded in warden_bundle::PACKAGES {
            let loaded = source::load(&PackageSource::Embedded(embedded), &self.shared.validation)?;
            if let Implementation::FirstParty { service } = &loaded.package.implementation
                && !self.shared.first_party.contains_key(service)
            {
                tracing::debug!(package = embedded.name, %service, "service not registered");
                continue;
            }
            installed.push(self.install_compiled(loaded, Replace::No, Compile::OnFirstUse)?);
        }
        Ok(installed)
    }

    /// Compile and register a package already read with
    /// [`crate::load_package`] (so an install reads it once). Its tools
    /// must not flatten to a name another package's tool uses.
    pub fn install_loaded(
        &self,
        loaded: LoadedPackage,
        replace: Replace,
    ) -> Result<Arc<Package>, HostError> {
        self.install_compiled(loaded, replace, Compile::Now)
    }

    /// [`Location::install_loaded`] for a package this host accepted before
    /// (reopening its data directory): everything but the component's
    /// compilation is checked now; the component compiles at its first call
    /// or in [`Location::warm_up`], and a failure to compile fails its calls.
    pub fn install_loaded_lazily(
        &self,
        loaded: LoadedPackage,
        replace: Replace,
    ) -> Result<Arc<Package>, HostError> {
        self.install_compiled(loaded, replace, Compile::OnFirstUse)
    }

    /// Prepare, one at a time, every component installed to compile at first
    /// use, so later first calls do not wait; a call that arrives first
    /// compiles its own component meanwhile (each compiles once). A host
    /// serving a client runs this in the background right after it starts.
    pub async fn warm_up(&self) {
        // The active registration's lanes only (a bundled package an
        // installed one replaces is not called); one lane per package.
        let lanes: Vec<Arc<dyn Lane>> = {
            let installed = self.installed.lock().expect("installed lock");
            let lanes = self.lanes.lock().expect("lanes lock");
            installed
                .values()
                .filter_map(|stack| stack.last()?.lanes.first())
                .filter_map(|id| Some(lanes.get(id)?.lane.clone()))
                .collect()
        };
        for lane in lanes {
            lane.warm_up().await;
        }
    }

    fn install_compiled(
        &self,
        loaded: LoadedPackage,
        replace: Replace,
        compile: Compile,
    ) -> Result<Arc<Package>, HostError> {
        let signature = crate::signature::check(&loaded.files, &self.shared.signers);
        let LoadedPackage {
            package,
            module,
            digest,
            provenance,
            ..
        } = loaded;
        // Where the operator requires it, a package installed by a user
        // runs only when a trusted signer signed it.
        if self.shared.require_signature
            && provenance == Provenance::Installed
            && signature.trust().is_none()
        {
            return Err(HostError::SignatureRequired {
                package: package.id.clone(),
                found: signature.describe(),
            });
        }
        // Lanes the format has and this host does not run are refused here,
        // with the reason (`warden check` reports the same one).
        if let Some(reason) = self.shared.lane_refusal(&package) {
            return Err(HostError::InvalidPackage {
                package: package.id.clone(),
                reason,
            });
        }
        // An id already taken is refused before anything is compiled (a
        // refused package leaves no compiled code in the cache); `publish`
        // checks again under the lock it registers under.
        {
            let installed = self.installed.lock().expect("installed lock");
            if replace == Replace::No
                && let Some(taken) = already_installed(&installed, &package.id)
            {
                return Err(taken);
            }
            if let Some(conflict) = crate::vendor::recipe_conflict(active(&installed), &package) {
                return Err(conflict);
            }
        }
        let trust = crate::trust::granted_trust(
            &package,
            provenance,
            &digest,
            self.shared.bundled_trust,
            &self.shared.trust_pins,
            signature.trust(),
        );
        let content = consent_content(provenance == Provenance::Bundled, &digest).to_owned();
        let identity = PackageIdentity {
            extension_id: package.id.clone(),
            digest: digest.clone(),
            bundled: provenance == Provenance::Bundled,
        };
        self.review(&package.id, &package.capabilities, &identity)?;
        let published = Published {
            digest,
            provenance,
            trust,
            identity,
            signature,
        };
        if let Implementation::Mcp(server) = &package.implementation {
            let server = server.clone();
            return self.install_hosted(package, &server, published, replace);
        }
        // One lane per capability, in the manifest's order.
        let lanes = crate::lane::bind(&self.shared, &package, module, compile, provenance)?;
        let bindings = package
            .capabilities
            .iter()
            .zip(lanes)
            .map(|(capability, lane)| {
                Binding::new(
                    &self.shared.egress,
                    &package.id,
                    &content,
                    capability.clone(),
                    lane,
                )
            })
            .collect();
        self.publish(package, published, replace, bindings, None)
    }

    /// A reviewed allowlist entry that applies to these tools must name an
    /// effect-free tool; refuse the package before compiling or publishing it.
    pub(crate) fn review(
        &self,
        package_id: &str,
        capabilities: &[Capability],
        identity: &PackageIdentity,
    ) -> Result<(), HostError> {
        for capability in capabilities {
            let def = tool_def(package_id, capability, None, identity);
            self.shared
                .authorizer
                .review(&ToolPolicy::from(&def))
                .map_err(|source| HostError::Allowlist {
                    package: package_id.to_owned(),
                    source,
                })?;
        }
        Ok(())
    }

    /// Register `bindings` as the tools of `package` and make it the active
    /// registration of its id.
    fn publish(
        &self,
        package: Package,
        published: Published,
        replace: Replace,
        bindings: Vec<Binding>,
        hosted: Option<Arc<HostedServer>>,
    ) -> Result<Arc<Package>, HostError> {
        let Published {
            digest,
            provenance,
            trust,
            identity,
            signature,
        } = published;
        let mut installed = self.installed.lock().expect("installed lock");
        if replace == Replace::No
            && let Some(taken) = already_installed(&installed, &package.id)
        {
            return Err(taken);
        }
        if let Some(conflict) = crate::vendor::recipe_conflict(active(&installed), &package) {
            return Err(conflict);
        }
        let world = bindings.first().and_then(|b| b.lane.world());
        let bindings: Vec<(LaneId, Arc<Binding>)> = bindings
            .into_iter()
            .map(|binding| (next_lane_id(), Arc::new(binding)))
            .collect();
        let registration = self
            .registry
            .transform(format!("package:{}", package.id), |draft| {
                for (id, binding) in &bindings {
                    // A hosted tool's, pinned or listed, is the tool's own.
                    let identity = match &hosted {
                        Some(_) => hosted::tool_identity(&identity, &binding.capability),
                        None => identity.clone(),
                    };
                    draft.add(tool_def(
                        &package.id,
                        &binding.capability,
                        Some(*id),
                        &identity,
                    ))?;
                }
                Ok(())
            })
            .map_err(|error| collision(error, &package, &installed))?;
        let lane_ids = bindings.iter().map(|(id, _)| *id).collect();
        self.lanes.lock().expect("lanes lock").extend(bindings);
        let package = Arc::new(package);
        let stack = installed.entry(package.id.clone()).or_default();
        // An installed package is replaced; a bundled one stays below.
        if stack
            .last()
            .is_some_and(|top| top.info.provenance == Provenance::Installed)
            && let Some(replaced) = stack.pop()
        {
            self.forget_lanes(&replaced.lanes);
        }
        stack.push(Installed {
            info: InstalledPackage {
                package: package.clone(),
                digest,
                provenance,
                trust,
                world,
                signature,
            },
            _registration: registration,
            lanes: lane_ids,
            hosted: hosted.map(|server| HostedState {
                server,
                catalog: None,
                auth_refused: None,
                identity,
            }),
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
        let removed = stack.pop().map(|i| {
            self.forget_lanes(&i.lanes);
            i.info
        });
        if stack.is_empty() {
            installed.remove(package_id);
        }
        drop(installed);
        if removed
            .as_ref()
            .is_some_and(|r| matches!(r.package.implementation, Implementation::Mcp(_)))
        {
            self.forget_catalog(package_id);
        }
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

    /// The tool `name` names in the current snapshot, with the capability its
    /// lane runs: what [`Location::invoke`] would call (see [`lookup`]). A
    /// discovered tool of an `[mcp]` package is found as published, with the
    /// capability discovery gave it.
    pub fn tool(&self, name: &str) -> Option<ResolvedTool> {
        let snapshot = self.snapshot();
        let tool = lookup(&snapshot, name)?;
        let binding = self.binding(tool.def().executor.lane()?)?;
        Some(ResolvedTool {
            model_name: tool.model_name().to_owned(),
            package: binding.extension_id.clone(),
            capability: binding.capability.clone(),
        })
    }

    /// The binding of the tool whose lane is `id`, while its registration
    /// is installed.
    pub(crate) fn binding(&self, id: LaneId) -> Option<Arc<Binding>> {
        self.lanes.lock().expect("lanes lock").get(&id).cloned()
    }

    fn forget_lanes(&self, ids: &[LaneId]) {
        let mut lanes = self.lanes.lock().expect("lanes lock");
        for id in ids {
            lanes.remove(id);
        }
    }
}

/// Why `id` cannot be installed without replacing: what holds it now.
fn already_installed(installed: &BTreeMap<String, Vec<Installed>>, id: &str) -> Option<HostError> {
    let taken = installed.get(id)?.last()?;
    Some(HostError::AlreadyInstalled {
        id: id.to_owned(),
        provenance: taken.info.provenance,
        digest: taken.info.digest.clone(),
    })
}

/// A process-unique lane id (ids are never reused, so a stale snapshot can
/// never reach another registration's lane).
fn next_lane_id() -> LaneId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    LaneId(NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A registry name collision as an install error naming both tools and
/// their packages.
/// The active package of every id.
fn active(installed: &BTreeMap<String, Vec<Installed>>) -> impl Iterator<Item = &Package> {
    installed
        .values()
        .filter_map(|stack| stack.last())
        .map(|i| i.info.package.as_ref())
}

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

/// The registry's tool object for a capability: namespace = extension id,
/// name = the capability's local name, so `github.get_repo` is published to
/// the model as `github_get_repo`. It carries the package identity grants,
/// approvals and the allowlist bind to. Without a lane (to review the
/// policy before installing) the executor is only a key.
fn tool_def(
    extension_id: &str,
    cap: &Capability,
    lane: Option<LaneId>,
    package: &PackageIdentity,
) -> ToolDef {
    let executor = match lane {
        Some(lane) => Executor::new(cap.id.clone(), lane),
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
