//! [`Host`]: one per process or embedding; owns the shared services.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};

use warden_egress::Egress;
use warden_egress::auth::server_callback::CallbackRouter;
use warden_egress::resolve::{Resolver, SystemResolver};
use warden_egress::secrets::SecretStore;
use warden_manifest::{Implementation, Package, ValidationOptions};
use warden_registry::{
    ApprovalConfig, ApprovalStore, Approvals, Authorizer, LocationId, MemoryApprovalStore,
    OutputBounder, SqliteStore,
};
use warden_runtime::Runtime;

use crate::audit::AuditLog;
use crate::config::HostConfig;
use crate::error::HostError;
use crate::lane::FirstPartyService;
use crate::location::Location;
use crate::metrics::Metrics;
use crate::trust::EffectiveTrust;

/// The services every Location of a host shares.
pub(crate) struct Shared {
    pub(crate) runtime: Runtime,
    pub(crate) egress: Egress,
    pub(crate) approvals: Approvals,
    pub(crate) authorizer: Authorizer,
    pub(crate) bounder: OutputBounder,
    pub(crate) validation: ValidationOptions,
    /// The most trust a bundled package gets (see [`HostBuilder::bundled_trust`]).
    pub(crate) bundled_trust: EffectiveTrust,
    /// Native implementations of `first_party` packages, by service name.
    pub(crate) first_party: BTreeMap<String, Arc<dyn FirstPartyService>>,
    /// Where decisions and calls are recorded, if anywhere.
    pub(crate) audit: Option<AuditLog>,
    /// Limits of the hosted-MCP lane.
    pub(crate) hosted: warden_hosted::LaneLimits,
    /// Servers' own settings, by package id.
    pub(crate) hosted_servers: std::collections::BTreeMap<String, warden_hosted::ServerSettings>,
    /// Where the host keeps its data (`None`: in memory only).
    pub(crate) data_dir: Option<std::path::PathBuf>,
    /// How long the store keeps what is settled.
    pub(crate) store_retention: std::time::Duration,
    /// Packages whose tools run without their `[channel]` surface.
    pub(crate) tools_without_channel: std::collections::BTreeSet<String>,
    /// [`HostConfig::shared_accounts`].
    pub(crate) shared_accounts: Vec<String>,
    /// Where OAuth connections return through this host's own origin, when
    /// it has a public URL: the redirect URI and the waiting connections.
    pub(crate) server_callbacks: Option<(String, CallbackRouter)>,
    /// [`HostConfig::trust_pins`].
    pub(crate) trust_pins: BTreeMap<String, crate::TrustPin>,
    /// [`HostConfig::signers`].
    pub(crate) signers: Vec<crate::TrustedSigner>,
    /// [`HostConfig::require_signature`].
    pub(crate) require_signature: bool,
    /// What an operator watches, when it is on.
    pub(crate) metrics: Option<Arc<Metrics>>,
    /// Whether calls are traced ([`HostBuilder::traces`]).
    pub(crate) traces: bool,
}

impl Shared {
    /// Why this host will not run `package` (install refuses it with this
    /// reason and `warden check` reports it as an error), or `None`.
    pub(crate) fn lane_refusal(&self, package: &Package) -> Option<String> {
        let services: Vec<&str> = self.first_party.keys().map(String::as_str).collect();
        let mut reasons = package.unsupported(&services);
        // The operator took the tools without the channel.
        if self.tools_without_channel.contains(&package.id) {
            reasons.retain(|r| *r != warden_manifest::Unsupported::Channel);
        }
        if let Some(reason) = warden_manifest::refusal(&package.id, &reasons) {
            return Some(reason);
        }
        match &package.implementation {
            Implementation::Wasm { .. } | Implementation::FirstParty { .. } => None,
            // The hosted lane locks the endpoint; a URL it refuses is refused here.
            Implementation::Mcp(mcp) => warden_hosted::Endpoint::parse(&mcp.server)
                .err()
                .map(|e| e.to_string()),
        }
    }
}

/// A Warden host: build it once, open Locations, install packages into them,
/// take snapshots and invoke tools.
///
/// Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Host {
    pub(crate) shared: Arc<Shared>,
    pub(crate) locations: Arc<Mutex<HashMap<String, Location>>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("runtime", &self.shared.runtime.config())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Host`] from a [`HostConfig`] and optional replacement services.
#[must_use]
pub struct HostBuilder {
    config: HostConfig,
    secrets: Option<Arc<dyn SecretStore>>,
    approvals: Option<Arc<dyn ApprovalStore>>,
    resolver: Option<Arc<dyn Resolver>>,
    bundled_trust: EffectiveTrust,
    first_party: BTreeMap<String, Arc<dyn FirstPartyService>>,
    audit: Option<AuditLog>,
    metrics: Option<Arc<Metrics>>,
    traces: bool,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl HostBuilder {
    /// Use this secret store instead of the default (the encrypted file
    /// store in the data dir, or memory without one).
    pub fn secret_store(mut self, store: Arc<dyn SecretStore>) -> Self {
        self.secrets = Some(store);
        self
    }

    /// Use this approval store instead of the default (SQLite in the data
    /// dir, or memory without one).
    pub fn approval_store(mut self, store: Arc<dyn ApprovalStore>) -> Self {
        self.approvals = Some(store);
        self
    }

    /// Resolve DNS through `resolver` (tests use an override map).
    pub fn resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// The trust the composition assigns to packages built into the binary
    /// (and verified by digest); a manifest that asks for less gets less.
    /// Default: [`EffectiveTrust::FirstParty`]. Installed packages are
    /// always [`EffectiveTrust::ThirdParty`], whatever this says.
    pub fn bundled_trust(mut self, cap: EffectiveTrust) -> Self {
        self.bundled_trust = cap;
        self
    }

    /// Register the native implementation of the `first_party` service
    /// `name`: a package whose manifest says `[runtime] kind =
    /// "first_party"`, `service = "<name>"` runs its tools through it
    /// (its manifest, schemas and prompts come from the package as usual;
    /// load it with [`crate::PackageSource::BundledDir`]). A first-party
    /// package whose service is not registered is refused at install.
    /// Registering a name twice keeps the last one.
    pub fn first_party_service(
        mut self,
        name: impl Into<String>,
        service: Arc<dyn FirstPartyService>,
    ) -> Self {
        self.first_party.insert(name.into(), service);
        self
    }

    /// Write one JSON line per authorization decision and per call to
    /// `log` (see [`AuditLog`]); default: no audit log.
    pub fn audit_log(mut self, log: AuditLog) -> Self {
        self.audit = Some(log);
        self
    }

    /// Count calls, decisions and egress into `metrics` (off by default;
    /// read them with [`Host::render_metrics`]).
    pub fn metrics(mut self, metrics: Arc<Metrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Trace every call: a span per call with children for its
    /// authorization, its lane's run and each egress request, made with the
    /// global OpenTelemetry tracer provider (which the application installs
    /// with its exporter; see [`crate::TraceParent`] for the caller's
    /// context). Off by default.
    pub fn traces(mut self, on: bool) -> Self {
        self.traces = on;
        self
    }

    /// Create the host: the engine, the stores and the egress client.
    pub fn build(self) -> Result<Host, HostError> {
        let HostConfig {
            data_dir,
            mut runtime,
            egress,
            ungated_allowlist,
            mut bound,
            lease_ttl,
            store_retention,
            hosted,
            hosted_servers,
            tools_without_channel,
            shared_accounts,
            public_url,
            trust_pins,
            signers,
            require_signature,
        } = self.config;
        if let Some(dir) = &data_dir {
            // 0700, and what a looser umask left there before is tightened.
            crate::private::open_data_dir(dir).map_err(|e| HostError::io(dir, e))?;
            runtime.cache_dir.get_or_insert_with(|| dir.join("cache"));
            bound.spill_dir.get_or_insert_with(|| dir.join("outputs"));
        }
        let secrets = match (self.secrets, &data_dir) {
            (Some(store), _) => store,
            (None, Some(dir)) => default_secret_store(dir)?,
            (None, None) => Arc::new(warden_egress::secrets::MemoryStore::new()),
        };
        let server_callbacks = match public_url {
            // Hosts sharing a store share their callbacks through it.
            Some(url) => Some((
                crate::public_url::callback_uri(&url)?,
                CallbackRouter::relayed(secrets.clone()),
            )),
            None => None,
        };
        let approval_store: Arc<dyn ApprovalStore> = match (self.approvals, &data_dir) {
            (Some(store), _) => store,
            (None, Some(dir)) => {
                let path = dir.join("approvals.sqlite3");
                Arc::new(SqliteStore::open(&path).map_err(|e| HostError::Approval(e.into()))?)
            }
            (None, None) => Arc::new(MemoryApprovalStore::new()),
        };
        let resolver = self.resolver.unwrap_or_else(|| Arc::new(SystemResolver));
        let validation = ValidationOptions::default()
            .require_module(true)
            .with_ungated_allowlist(ungated_allowlist.iter().map(|e| e.capability_id.clone()));
        let shared = Shared {
            runtime: Runtime::new(runtime).map_err(HostError::Runtime)?,
            egress: Egress::observed(
                egress,
                secrets,
                resolver,
                self.metrics
                    .clone()
                    .map(|m| m as Arc<dyn warden_egress::EgressObserver>),
            )?,
            approvals: Approvals::new(approval_store, ApprovalConfig { lease_ttl }),
            authorizer: Authorizer::new(ungated_allowlist),
            bounder: OutputBounder::new(bound),
            validation,
            bundled_trust: self.bundled_trust,
            first_party: self.first_party,
            audit: self.audit,
            hosted,
            hosted_servers,
            data_dir,
            store_retention,
            tools_without_channel,
            shared_accounts,
            server_callbacks,
            trust_pins,
            signers,
            require_signature,
            metrics: self.metrics,
            traces: self.traces,
        };
        // Spilled outputs past their retention period are removed at start.
        if let Err(error) = shared.bounder.sweep(std::time::SystemTime::now()) {
            tracing::warn!(%error, "could not clean up old spilled outputs");
        }
        Ok(Host {
            shared: Arc::new(shared),
            locations: Arc::default(),
        })
    }
}

/// Environment variable that holds the secret store's key (hex or base64)
/// instead of the key file.
pub const SECRET_KEY_ENV: &str = "WARDEN_SECRET_KEY";

/// The encrypted file store `<data_dir>/secrets.enc`, keyed by
/// `$WARDEN_SECRET_KEY` or the 0600 file `<data_dir>/secret.key`.
fn default_secret_store(dir: &Path) -> Result<Arc<dyn SecretStore>, HostError> {
    use warden_egress::secrets::{EncryptedFileStore, KeySource};
    let key = match std::env::var_os(SECRET_KEY_ENV) {
        Some(_) => KeySource::Env(SECRET_KEY_ENV.to_owned()),
        None => KeySource::File(dir.join("secret.key")),
    };
    let store = EncryptedFileStore::open(dir.join("secrets.enc"), key)
        .map_err(warden_egress::EgressError::Secret)?;
    Ok(Arc::new(store))
}

impl Host {
    /// Start building a host from `config`.
    pub fn builder(config: HostConfig) -> HostBuilder {
        HostBuilder {
            config,
            secrets: None,
            approvals: None,
            resolver: None,
            bundled_trust: EffectiveTrust::FirstParty,
            first_party: BTreeMap::new(),
            audit: None,
            metrics: None,
            traces: false,
        }
    }

    /// Open (or return the already open) Location `id`. Each Location has its
    /// own registry; nothing is process-global.
    pub fn open_location(&self, id: &str) -> Location {
        let mut locations = self.locations.lock().expect("locations lock");
        locations
            .entry(id.to_owned())
            .or_insert_with(|| Location::new(LocationId::from(id), self.shared.clone()))
            .clone()
    }

    /// The Location `id`, if open.
    pub fn location(&self, id: &str) -> Result<Location, HostError> {
        let locations = self.locations.lock().expect("locations lock");
        locations
            .get(id)
            .cloned()
            .ok_or_else(|| HostError::UnknownLocation(id.to_owned()))
    }

    /// Reach the MCP server at `server` through this host's egress without
    /// credentials: initialize, list its tools (bounded by `max_tools`),
    /// and close. `warden mcp add --auth auto` uses it: a
    /// [`warden_hosted::HostedError::Unauthorized`] says the server needs
    /// authorization.
    pub async fn probe_mcp(
        &self,
        server: &str,
        max_tools: usize,
    ) -> Result<Vec<warden_hosted::RemoteTool>, warden_hosted::HostedError> {
        Ok(self.probe_mcp_call(server, max_tools, None, false).await?.0)
    }

    /// How to authorize against the MCP server at `server`, from the
    /// `WWW-Authenticate` `challenge` of its 401 when there is one: its
    /// protected-resource metadata (RFC 9728, the challenge's
    /// `resource_metadata` or the well-known URLs), then its authorization
    /// server's metadata (RFC 8414, OpenID fallback). Every document comes
    /// through this host's egress and is checked (the resource must name
    /// `server`, the server metadata its issuer). `warden mcp add --auth
    /// oauth|auto` writes the recipe from it.
    pub async fn discover_mcp_auth(
        &self,
        server: &str,
        challenge: Option<&str>,
    ) -> Result<warden_egress::auth::resource::ResourceAuthorization, warden_egress::auth::AuthError>
    {
        let challenge = challenge.and_then(warden_egress::auth::challenge::BearerChallenge::parse);
        warden_egress::auth::resource::discover(&self.shared.egress, server, challenge.as_ref())
            .await
    }

    /// The signing keys of OAuth `issuer` (its RFC 8414 / OpenID metadata's
    /// `jwks_uri`), through this host's egress: what `warden serve --http
    /// --oauth-issuer` verifies access tokens with when no JWKS file is given.
    pub async fn issuer_jwks(
        &self,
        issuer: &str,
    ) -> Result<String, warden_egress::auth::AuthError> {
        warden_egress::auth::discovery::issuer_jwks(&self.shared.egress, issuer).await
    }

    /// [`Host::probe_mcp`], then call `tool` in the same session when
    /// given. `loopback_http` accepts a plain-`http` loopback URL (local
    /// test servers); this host's egress must allow that origin.
    pub async fn probe_mcp_call(
        &self,
        server: &str,
        max_tools: usize,
        tool: Option<crate::ProbeCall>,
        loopback_http: bool,
    ) -> Result<
        (Vec<warden_hosted::RemoteTool>, Option<serde_json::Value>),
        warden_hosted::HostedError,
    > {
        let spec = warden_hosted::ServerSpec {
            extension_id: "warden-probe".into(),
            content: None,
            server: server.to_owned(),
            credentials: Vec::new(),
            max_tools,
            loopback_http,
            settings: Default::default(),
        };
        let hosted = warden_hosted::HostedServer::new(
            self.shared.egress.clone(),
            &spec,
            self.shared.hosted,
        )?;
        let result = async {
            let tools = hosted.catalog().await?.as_ref().clone();
            let output = match tool {
                Some(call) => Some(call.run(&hosted).await?),
                None => None,
            };
            Ok((tools, output))
        }
        .await;
        hosted.close().await;
        result
    }

    /// Remove account `key` (its value and its OAuth refresh material) in
    /// the account's turn, so a refresh under way cannot write it back;
    /// whether a value was stored.
    pub async fn remove_account(
        &self,
        key: &warden_egress::secrets::AccountKey,
    ) -> Result<bool, warden_egress::auth::AuthError> {
        warden_egress::auth::grant::remove_account(&self.shared.egress, key).await
    }

    /// The secret store (to set or remove credentials).
    pub fn secrets(&self) -> &Arc<dyn SecretStore> {
        self.shared.egress.store()
    }

    /// Approvals: list, resolve.
    pub fn approvals(&self) -> &Approvals {
        &self.shared.approvals
    }

    /// Delete what the approval store keeps past the retention
    /// ([`HostConfig::store_retention`]): approvals settled before it (with
    /// their leases) and grants that ended before it. A host serving
    /// clients runs it at start and every hour; hosts sharing a store may
    /// all run it. The rows deleted.
    pub async fn prune_store(&self) -> Result<u64, HostError> {
        let retention = i64::try_from(self.shared.store_retention.as_millis()).unwrap_or(i64::MAX);
        let store = self.shared.approvals.store();
        let store_error = |e: warden_registry::StoreError| HostError::Approval(e.into());
        // By the store's clock where it keeps one, as expiry is read.
        let now = store
            .now()
            .await
            .map_err(store_error)?
            .unwrap_or_else(warden_registry::now_millis);
        store
            .prune(now.saturating_sub(retention))
            .await
            .map_err(store_error)
    }

    /// The runtime (install statistics, allocator in use).
    pub fn runtime(&self) -> &Runtime {
        &self.shared.runtime
    }

    /// The validation options packages are checked with.
    pub fn validation(&self) -> &ValidationOptions {
        &self.shared.validation
    }

    /// Why this host will not run `package` (a lane it does not run, a
    /// `first_party` service nobody registered, ...): the reason install
    /// refuses it with. `None` when it can run.
    pub fn lane_refusal(&self, package: &Package) -> Option<String> {
        self.shared.lane_refusal(package)
    }
}
