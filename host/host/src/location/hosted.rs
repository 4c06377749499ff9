//! `[mcp]` packages in a Location: install publishes the pinned `[[tools]]`;
//! [`Location::refresh_hosted`] lists each server's tools (bounded, all or
//! nothing) and republishes the package's tools from the accepted catalog.
//!
//! Remote tools are published as `<namespace>_<tool>` with capability ids
//! `<extension>.<tool>`, the `[mcp]` gate matrix, effects and default
//! permission. A remote annotation only adds caution: `destructiveHint`
//! adds `external_write` and forces `ask`; nothing remote removes an effect
//! or relaxes a permission. A successful discovery replaces the pinned set
//! with the catalog (V3-FORMAT §6); a pinned `[[tools]]` entry overrides the
//! remote entry of the same name (its schemas and description win; caution
//! from the remote hint still applies). Warden discovers for every `[mcp]`
//! package it runs (the format limits discovery to bundled and
//! user-registered packages; the issue asks installed ones to list too).
//!
//! With a data dir, the last accepted catalog of each package is kept in
//! `<data_dir>/mcp-catalogs/<id>.json` and published at install by the next
//! process (checked against the same bounds, only for the same endpoint),
//! so `warden list` and `describe` show discovered tools; it is stale there,
//! and the first use lists the server again.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use warden_hosted::{HostedServer, RemoteTool, ServerSpec};
use warden_manifest::{Capability, McpServer, Package};
use warden_registry::PackageIdentity;

use super::{Location, Published, Replace, consent_content, next_lane_id, tool_def};
use crate::error::HostError;
use crate::lane::mcp::ListingRefused;

mod bindings;
mod names;

use bindings::bindings;
use names::provides;
pub(in crate::location) use names::tool_identity;
use warden_egress::secrets::Requester;

/// What [`Location::discover_hosted`] found.
#[derive(Debug)]
#[non_exhaustive]
pub enum Discovery {
    /// The server listed this many tools; they are published.
    Listed(usize),
    /// A required account is not connected: nothing was sent.
    NeedsAccount,
    /// The listing failed; the pinned tools stay published.
    Failed(HostError),
}

/// The server of an installed `[mcp]` package and what was published.
#[derive(Debug)]
pub(super) struct HostedState {
    pub(super) server: Arc<HostedServer>,
    /// The catalog the published tools came from (`None`: pinned only).
    pub(super) catalog: Option<Arc<Vec<RemoteTool>>>,
    /// The last listing was refused for want of authorization.
    pub(super) auth_refused: Option<ListingRefused>,
    pub(super) identity: PackageIdentity,
}

impl Location {
    /// Install an `[mcp]` package: lock its endpoint, publish its pinned
    /// tools. Nothing is sent until the first refresh or call.
    pub(super) fn install_hosted(
        &self,
        package: Package,
        mcp: &McpServer,
        published: Published,
        replace: Replace,
    ) -> Result<Arc<Package>, HostError> {
        let content = consent_content(published.identity.bundled, &published.digest).to_owned();
        let spec = ServerSpec {
            extension_id: package.id.clone(),
            content: Some(content.clone()),
            server: mcp.server.clone(),
            credentials: mcp.credentials.clone(),
            max_tools: usize::try_from(mcp.max_tools).unwrap_or(usize::MAX),
            loopback_http: false,
            settings: self
                .shared
                .hosted_servers
                .get(&package.id)
                .copied()
                .unwrap_or_default(),
        };
        let server = HostedServer::new(self.shared.egress.clone(), &spec, self.shared.hosted)
            .map_err(|source| HostError::Hosted {
                package: package.id.clone(),
                source,
            })?;
        let server = Arc::new(server);
        let bindings = bindings(&self.shared, &package, mcp, &server, &content, None)?;
        let id = package.id.clone();
        let package = self.publish(package, published, replace, bindings, Some(server.clone()))?;
        // The catalog an earlier process listed is published at once (so
        // `warden list` shows discovered tools); the first use lists again.
        if let Some(catalog) = self.restore_catalog(&id, &server)
            && let Err(error) = self.republish(&id, &server, catalog)
        {
            tracing::warn!(package = %id, %error, "saved MCP catalog not published");
        }
        Ok(package)
    }

    /// Where the last accepted catalog of `[mcp]` package `id` is kept:
    /// `<data_dir>/mcp-catalogs/<id>.json` (nowhere without a data dir).
    fn catalog_path(&self, id: &str) -> Option<std::path::PathBuf> {
        let dir = self.shared.data_dir.as_ref()?;
        Some(dir.join("mcp-catalogs").join(format!("{id}.json")))
    }

    /// The saved catalog of `id`, checked like a listing; a missing one is
    /// `None`, an unusable one is logged and ignored.
    fn restore_catalog(&self, id: &str, server: &HostedServer) -> Option<Arc<Vec<RemoteTool>>> {
        let path = self.catalog_path(id)?;
        let saved = std::fs::read(&path).ok()?;
        match server.restore(&saved) {
            Ok(catalog) => Some(catalog),
            Err(error) => {
                tracing::warn!(package = %id, path = %path.display(), %error, "saved MCP catalog ignored");
                None
            }
        }
    }

    /// Remove the kept catalog of `[mcp]` package `id` (it was uninstalled).
    pub(super) fn forget_catalog(&self, id: &str) {
        if let Some(path) = self.catalog_path(id)
            && let Err(error) = std::fs::remove_file(&path)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(package = %id, path = %path.display(), %error, "kept MCP catalog not removed");
        }
    }

    /// Keep the catalog `server` accepted for the next process (written
    /// whole, then renamed into place). Failing to save is logged only.
    fn save_catalog(&self, id: &str, server: &HostedServer) {
        let (Some(path), Some(saved)) = (self.catalog_path(id), server.saved()) else {
            return;
        };
        let write = || -> std::io::Result<()> {
            let dir = path.parent().expect("a file in mcp-catalogs");
            crate::private::create_dir_all(dir)?;
            let staging = dir.join(format!(".{id}.json.tmp"));
            let mut file = crate::private::file_options()
                .create(true)
                .truncate(true)
                .open(&staging)?;
            std::io::Write::write_all(&mut file, &saved)?;
            std::fs::rename(&staging, &path)
        };
        if let Err(error) = write() {
            tracing::warn!(package = %id, path = %path.display(), %error, "MCP catalog not saved");
        }
    }

    /// List the tools of every installed `[mcp]` package whose catalog is
    /// not current (first use, or after the server's `tools/list_changed`)
    /// and republish them. A server that fails keeps its previous tools;
    /// its error is returned with the package id.
    pub async fn refresh_hosted(&self) -> Vec<HostError> {
        self.refresh_hosted_where(|_| true).await
    }

    /// [`Location::refresh_hosted`] for the `[mcp]` package that would
    /// provide `tool` (a capability id `<id>.<tool>` or a model name
    /// `<id>_<tool>`, which may fit more than one), so a call reaches no
    /// other server.
    pub async fn refresh_hosted_for(&self, tool: &str) -> Vec<HostError> {
        self.refresh_hosted_where(|id| provides(id, tool)).await
    }

    /// [`Location::refresh_hosted`] for `[mcp]` package `id` only.
    pub async fn refresh_hosted_package(&self, id: &str) -> Vec<HostError> {
        self.refresh_hosted_where(|installed| installed == id).await
    }

    /// Discover the tools of the just-installed `[mcp]` package `id`, when
    /// its server can be listed now (no account needed, or one connected):
    /// the person who installed it asked for it. `None` for a package that
    /// is not an `[mcp]` one.
    pub async fn discover_hosted(&self, id: &str) -> Option<Discovery> {
        let (_, server) = self
            .hosted_servers()
            .into_iter()
            .find(|(hosted, _)| hosted == id)?;
        if !self.account_ready(id, &server).await {
            return Some(Discovery::NeedsAccount);
        }
        Some(match self.refresh_server(id.to_owned(), server).await {
            Some(error) => Discovery::Failed(error),
            None => Discovery::Listed(self.discovered_count(id)),
        })
    }

    /// How many tools the current catalog of package `id` holds.
    fn discovered_count(&self, id: &str) -> usize {
        let installed = self.installed.lock().expect("installed lock");
        installed
            .get(id)
            .and_then(|stack| stack.last()?.hosted.as_ref()?.catalog.clone())
            .map_or(0, |catalog| catalog.len())
    }

    /// The ids of the installed `[mcp]` packages, sorted.
    pub fn hosted_packages(&self) -> Vec<String> {
        let installed = self.installed.lock().expect("installed lock");
        let mut ids: Vec<String> = installed
            .iter()
            .filter(|(_, stack)| stack.last().is_some_and(|top| top.hosted.is_some()))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// Lists the servers at the same time: one that stalls (until the
    /// lane's deadline) delays no other's catalog.
    async fn refresh_hosted_where(&self, wanted: impl Fn(&str) -> bool) -> Vec<HostError> {
        let refreshes = self
            .hosted_servers()
            .into_iter()
            .filter(|(id, _)| wanted(id))
            .map(|(id, server)| self.refresh_server(id, server));
        futures::future::join_all(refreshes)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// List `server` (of package `id`) and republish its tools.
    async fn refresh_server(&self, id: String, server: Arc<HostedServer>) -> Option<HostError> {
        let listed = server.catalog().await;
        self.note_auth_refusal(&id, &server, listed.as_ref().err());
        let result = match listed {
            Ok(catalog) => self.republish(&id, &server, catalog).map(|changed| {
                if changed {
                    self.save_catalog(&id, &server);
                }
            }),
            Err(source) => Err(HostError::Hosted {
                package: id.clone(),
                source,
            }),
        };
        let error = result.err()?;
        tracing::warn!(package = %id, %error, "hosted MCP catalog not refreshed");
        Some(error)
    }

    /// Remember whether `server`'s listing was refused for want of
    /// authorization (what a call of its unlisted tools then reports).
    fn note_auth_refusal(
        &self,
        id: &str,
        server: &Arc<HostedServer>,
        error: Option<&warden_hosted::HostedError>,
    ) {
        let mut installed = self.installed.lock().expect("installed lock");
        let Some(top) = installed.get_mut(id).and_then(|stack| stack.last_mut()) else {
            return;
        };
        let warden_manifest::Implementation::Mcp(mcp) = &top.info.package.implementation else {
            return;
        };
        let refused = error.and_then(|error| {
            let auth = crate::lane::mcp::auth_details(id, &mcp.credentials, error)?;
            Some(ListingRefused {
                message: error.to_string(),
                auth,
            })
        });
        if let Some(hosted) = top.hosted.as_mut()
            && Arc::ptr_eq(&hosted.server, server)
        {
            hosted.auth_refused = refused;
        }
    }

    /// Why a call of `tool` found no tool, when the `[mcp]` package that
    /// would provide it could not list its tools for want of authorization.
    /// Where more than one would (see [`provides`]), the longest id's.
    pub(crate) fn hosted_auth_refusal(&self, tool: &str) -> Option<ListingRefused> {
        let installed = self.installed.lock().expect("installed lock");
        installed
            .iter()
            .filter(|(id, _)| provides(id, tool))
            .filter_map(|(id, stack)| {
                let refused = stack.last()?.hosted.as_ref()?.auth_refused.clone()?;
                Some((id.len(), refused))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, refused)| refused)
    }

    /// Tick receivers of every installed `[mcp]` server's
    /// `tools/list_changed` (`warden serve` refreshes on them).
    pub fn hosted_changes(&self) -> Vec<tokio::sync::watch::Receiver<u64>> {
        let installed = self.installed.lock().expect("installed lock");
        installed
            .values()
            .filter_map(|stack| Some(stack.last()?.hosted.as_ref()?.server.changes()))
            .collect()
    }

    /// Follow every `[mcp]` server of this Location, each on its own: list
    /// it now, then again whenever it announces `tools/list_changed`, and
    /// every [`crate::LaneLimits::refresh_interval`] (a server whose
    /// announcements the lane cannot hear is still followed). A server
    /// installed or registered later is followed from then on; one
    /// uninstalled or replaced is let go. With none installed, nothing
    /// wakes. Runs until its future is dropped (it holds the Location: run
    /// it in a task and abort that task to stop following). Every republish
    /// ticks [`Location::changes`], which `warden serve` announces to its
    /// clients.
    ///
    /// A server's announcements are heard from before its first listing, so
    /// one that arrives while it is being listed is followed too; the
    /// refreshes announcements cause are at least a second apart
    /// (`ANNOUNCED_REFRESH_SPACING`), so a server announcing without end
    /// (or in every answer, listings included) costs one listing per
    /// spacing, not a loop. A server that stalls (until the lane's deadline)
    /// holds back no other server's refreshes.
    pub async fn follow_hosted(&self) {
        use futures::StreamExt as _;
        let mut packages = self.changes();
        // Each followed server's stop: dropping it ends the server's loop.
        let mut following: HashMap<(String, usize), tokio::sync::oneshot::Sender<()>> =
            HashMap::new();
        let mut loops = futures::stream::FuturesUnordered::new();
        loop {
            packages.borrow_and_update();
            let servers = self.hosted_servers();
            let current: HashSet<(String, usize)> = servers
                .iter()
                .map(|(id, server)| server_key(id, server))
                .collect();
            following.retain(|key, _| current.contains(key));
            for (id, server) in servers {
                if let Entry::Vacant(slot) = following.entry(server_key(&id, &server)) {
                    let (stop, stopped) = tokio::sync::oneshot::channel();
                    slot.insert(stop);
                    loops.push(self.follow_server(id, server, stopped));
                }
            }
            tokio::select! {
                changed = packages.changed() => {
                    // Not while `self` holds the Location; but never spin.
                    if changed.is_err() {
                        return;
                    }
                }
                // A loop let go of ends here.
                Some(()) = loops.next() => {}
            }
        }
    }

    /// The `[mcp]` servers installed here, with their package ids.
    fn hosted_servers(&self) -> Vec<(String, Arc<HostedServer>)> {
        let installed = self.installed.lock().expect("installed lock");
        installed
            .iter()
            .filter_map(|(id, stack)| {
                let hosted = stack.last()?.hosted.as_ref()?;
                Some((id.clone(), hosted.server.clone()))
            })
            .collect()
    }

    /// Whether following `server` may list it now: it has an account for
    /// every required `[[mcp.credentials]]`. Without one a listing sends
    /// nothing the server would answer but 401, and no traffic the user did
    /// not ask for leaves the host (a bundled server was contacted at every
    /// start). The listing is then taken as refused for want of
    /// authorization without being sent, so a call of its tools still says
    /// what to connect; an explicit refresh (`mcp refresh`, a call's own)
    /// lists regardless, and the next interval's check finds an account
    /// connected meanwhile.
    async fn account_ready(&self, id: &str, server: &Arc<HostedServer>) -> bool {
        let (credentials, content) = {
            let installed = self.installed.lock().expect("installed lock");
            let Some(top) = installed.get(id).and_then(|stack| stack.last()) else {
                return false;
            };
            match &top.info.package.implementation {
                warden_manifest::Implementation::Mcp(mcp) => (
                    mcp.credentials.clone(),
                    top.info.consent_content().to_owned(),
                ),
                _ => return false,
            }
        };
        if !credentials.iter().any(|c| c.required) {
            return true;
        }
        let staged = self
            .shared
            .egress
            .session(
                &format!("{id}.tools/list"),
                Requester::new(id, &content),
                &credentials,
                &[],
                0,
            )
            .await;
        match staged {
            Ok(session) if session.missing_required().is_empty() => true,
            Ok(_) => {
                let unsent = warden_hosted::HostedError::Unauthorized {
                    challenge: None,
                    credential_sent: false,
                };
                self.note_auth_refusal(id, server, Some(&unsent));
                false
            }
            Err(error) => {
                tracing::warn!(package = %id, %error, "could not read the accounts of an MCP server");
                false
            }
        }
    }

    /// [`Location::follow_hosted`] for one server, until `stopped`.
    async fn follow_server(
        &self,
        id: String,
        server: Arc<HostedServer>,
        stopped: tokio::sync::oneshot::Receiver<()>,
    ) {
        let follow = async {
            // Heard from before the first listing, like every later one.
            let mut announcements = server.changes();
            let mut announced_refresh: Option<tokio::time::Instant> = None;
            loop {
                // Errors are logged; the previous tools stay published.
                if self.account_ready(&id, &server).await {
                    let _ = self.refresh_server(id.clone(), server.clone()).await;
                }
                let announced = tokio::select! {
                    changed = announcements.changed() => changed.is_ok(),
                    () = tokio::time::sleep(self.shared.hosted.refresh_interval) => false,
                };
                if announced {
                    if let Some(last) = announced_refresh {
                        tokio::time::sleep_until(last + ANNOUNCED_REFRESH_SPACING).await;
                    }
                    announced_refresh = Some(tokio::time::Instant::now());
                }
            }
        };
        tokio::select! {
            () = follow => {}
            _ = stopped => {}
        }
    }

    /// Publish `catalog` as the tools of `[mcp]` package `id` when `server`
    /// is still its server; `Ok(true)` when something was published.
    fn republish(
        &self,
        id: &str,
        server: &Arc<HostedServer>,
        catalog: Arc<Vec<RemoteTool>>,
    ) -> Result<bool, HostError> {
        let mut installed = self.installed.lock().expect("installed lock");
        let Some(top) = installed.get_mut(id).and_then(|stack| stack.last_mut()) else {
            return Ok(false);
        };
        let Some(hosted) = top.hosted.as_mut() else {
            return Ok(false);
        };
        // Replaced or already published meanwhile: nothing to do.
        if !Arc::ptr_eq(&hosted.server, server)
            || hosted
                .catalog
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, &catalog))
        {
            return Ok(false);
        }
        let package = top.info.package.clone();
        let warden_manifest::Implementation::Mcp(mcp) = &package.implementation else {
            return Ok(false);
        };
        let content = consent_content(hosted.identity.bundled, &hosted.identity.digest);
        let bindings = bindings(&self.shared, &package, mcp, server, content, Some(&catalog))?;
        let capabilities: Vec<Capability> = bindings.iter().map(|b| b.capability.clone()).collect();
        self.review(&package.id, &capabilities, &hosted.identity)?;
        let bindings: Vec<_> = bindings
            .into_iter()
            .map(|b| (next_lane_id(), Arc::new(b)))
            .collect();
        let identity = &hosted.identity;
        let registration = self
            .registry
            .transform(format!("package:{}", package.id), |draft| {
                for (lane, binding) in &bindings {
                    draft.add(tool_def(
                        &package.id,
                        &binding.capability,
                        Some(*lane),
                        &tool_identity(identity, &binding.capability),
                    ))?;
                }
                Ok(())
            })
            .map_err(|error| HostError::InvalidPackage {
                package: package.id.clone(),
                reason: format!("the server's tools could not be published: {error}"),
            })?;
        let ids = bindings.iter().map(|(lane, _)| *lane).collect();
        self.lanes.lock().expect("lanes lock").extend(bindings);
        let old = std::mem::replace(&mut top.lanes, ids);
        // Dropping the old registration unpublishes what the catalog no longer has.
        top._registration = registration;
        if let Some(hosted) = top.hosted.as_mut() {
            hosted.catalog = Some(catalog);
        }
        drop(installed);
        self.forget_lanes(&old);
        self.changes.send_modify(|generation| *generation += 1);
        Ok(true)
    }
}

/// Least time between two refreshes [`Location::follow_hosted`] makes
/// because a server announced `tools/list_changed`.
const ANNOUNCED_REFRESH_SPACING: std::time::Duration = std::time::Duration::from_secs(1);

/// What tells a followed server from its replacement: its package id and
/// the server itself.
fn server_key(id: &str, server: &Arc<HostedServer>) -> (String, usize) {
    (id.to_owned(), Arc::as_ptr(server) as usize)
}
