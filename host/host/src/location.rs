//! [`Location`]: a workspace the host serves, with its own registry.

pub(crate) mod hosted;
mod install;

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
    Snapshot, ToolDef,
};
use warden_runtime::ComponentWorld;

use crate::error::HostError;
use crate::host::Shared;
use crate::lane::Lane;
use crate::source::{self, PackageSource, Provenance};
use crate::trust::EffectiveTrust;
use hosted::HostedState;

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
    /// The effective trust, decided by the host (see [`crate::effective_trust`]).
    pub trust: EffectiveTrust,
    /// The WIT world of the package's component, read from the component
    /// (Warden's own or the `near:agent@0.4.1` compatibility world); `None`
    /// for a package no component implements.
    pub world: Option<ComponentWorld>,
    /// Who signed it, checked against the operator's trusted signers when
    /// it was installed.
    pub signature: crate::SignatureStatus,
    /// The registry reference it was pulled from, if it was.
    pub origin: Option<crate::PackageOrigin>,
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
    origin: Option<crate::PackageOrigin>,
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
    /// lane runs: what [`Location::invoke`] would call (looked up as the registry flattens names). A
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

/// A process-unique lane id (ids are never reused, so a stale snapshot can
/// never reach another registration's lane).
fn next_lane_id() -> LaneId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    LaneId(NEXT.fetch_add(1, Ordering::Relaxed))
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
