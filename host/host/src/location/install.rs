//! Installing into a Location: read once, refuse early (a lane this host
//! does not run, a taken id, a vendor recipe that conflicts, a signature the
//! operator requires), review against the ungated allowlist, compile, and
//! publish under the lock every install takes; uninstalling reveals what an
//! installed package replaced.

use std::collections::BTreeMap;
use std::sync::Arc;

use warden_manifest::{Capability, Implementation, Package};
use warden_registry::{LaneId, PackageIdentity, RegistryError, ToolPolicy};

use warden_hosted::HostedServer;

use super::hosted::{self, HostedState};
use super::{
    Binding, Compile, Installed, InstalledPackage, Location, Published, Replace, consent_content,
    next_lane_id, tool_def,
};
use crate::error::HostError;
use crate::lane::Lane;
use crate::source::{self, LoadedPackage, PackageSource, Provenance};

impl Location {
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
            origin,
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
            origin,
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
    pub(super) fn publish(
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
            origin,
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
                origin,
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
