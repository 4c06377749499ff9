//! Where the CLI keeps its data, and the host configuration file.
//!
//! `<data-dir>/warden.toml` (or `--config`) tunes the host. Every exception
//! it grants is explicit and narrow:
//!
//! ```toml
//! [egress]
//! extra_roots = ["/etc/warden/private-ca.pem"]   # PEM files trusted besides the webpki roots
//! allow_private = ["api.internal.example:443"]   # exact host:port that may resolve to a private address
//! allow_plain_http = []                          # exact host:port that may use http://
//!
//! [resolve]                                      # DNS overrides (host -> addresses)
//! "api.github.com" = ["127.0.0.1:8443"]
//!
//! [store]                                        # approvals, grants and leases shared by hosts
//! url = "postgres://warden@db.internal/warden"   # default: SQLite in the data directory
//! pool_size = 8                                  # connections this host keeps open
//! secret_key_file = "/etc/warden/secret.key"     # accounts and secrets are encrypted in the
//!                                                # database with this key (or $WARDEN_SECRET_KEY)
//! retention_days = 30                            # settled approvals and ended grants kept this
//!                                                # long (`serve` prunes at start and hourly)
//!
//! [mcp]                                          # hosted MCP servers
//! refresh_interval_secs = 600                    # list a server's tools again after this long
//! call_timeout_secs = 60                         # how long a hosted call may go without an
//!                                                # answer or progress report
//! max_call_timeout_secs = 600                    # no hosted call runs longer, whatever its
//!                                                # progress; no server's own timeout is longer
//!
//! [mcp.servers.mcp-slow]                         # one server's own settings, by package id
//! call_timeout_secs = 300                        # (also `warden mcp add --timeout`)
//! relay = false                                  # answer its elicitation and sampling
//!                                                # requests "not supported" (default: relay)
//!
//! [accounts]                                    # whose accounts serve JWT callers
//! shared = ["search"]                            # vendors whose deployment accounts every
//!                                                # caller may use (others: each caller's own)
//!
//! [trust.slack]                                 # the operator vouches for this content of a
//! digest = "3f1c…"                               # package (64 hex, its content digest): it may
//! trust = "first_party"                          # ask first-party trust and carry admin config
//!
//! [trust.signers.acme]                           # a key the operator trusts to sign packages
//! key = "RWQ…"                                   # minisign public key (its .pub file's line)
//! trust = "first_party"                          # the most trust what it signed runs with
//! # [trust] require_signature = true             # refuse installed packages no trusted key signed
//!
//! [packages]
//! bundled = ["/etc/warden/packages"]             # the deployment's own packages: each a package
//!                                                # directory or a directory of them, loaded as
//!                                                # bundled (first_party trust and
//!                                                # [admin_configuration] allowed)
//! tools_without_channel = ["slack"]              # run these packages' tools without their
//!                                                # [channel] surface (Warden runs no channels)
//!
//! [compile]                                      # bounds on compiling a component
//! max_code_bytes = 16777216                      # function bodies an installed package may hold
//! timeout_ms = 60000                             # the compiler process is killed past this
//! memory_bytes = 2147483648                      # memory the compiler process may map
//!
//! [auth.github]                                  # the OAuth client `warden auth connect` uses
//! client_id = "Iv1.0123456789abcdef"
//! client_secret_env = "WARDEN_GITHUB_CLIENT_SECRET" # optional: confidential clients
//! token_endpoint = "https://github.com/login/oauth/access_token" # the only recipe endpoint it goes to
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use warden_egress::EgressConfig;
use warden_egress::resolve::{OverrideResolver, Resolver, SystemResolver};
use warden_egress::secrets::KeySource;

/// The least `[compile] memory_bytes` (a limit of nothing is a mistake; one
/// too small to compile anything says so on every compile).
const MIN_COMPILE_MEMORY: u64 = 1 << 20;

/// The configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Settings {
    #[serde(default)]
    egress: EgressSettings,
    #[serde(default)]
    resolve: BTreeMap<String, Vec<SocketAddr>>,
    #[serde(default)]
    auth: BTreeMap<String, AuthClientSettings>,
    #[serde(default)]
    oauth: OAuthSettings,
    #[serde(default)]
    mcp: McpSettings,
    #[serde(default)]
    store: StoreSettings,
    #[serde(default)]
    cache: CacheSettings,
    #[serde(default)]
    compile: CompileSettings,
    #[serde(default)]
    packages: PackageSettings,
    #[serde(default)]
    accounts: accounts::AccountSettings,
    #[serde(default)]
    trust: trust::TrustTable,
}

/// Whether `id` has the form of a package id (the format's name segment).
fn is_package_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        && !id.starts_with('.')
        && !id.ends_with('.')
        && !id.contains("..")
}

/// `[packages]`: what the operator accepts of the packages it installs.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PackageSettings {
    /// Directories of the deployment's own packages (see
    /// [`Settings::operator_packages`]).
    #[serde(default)]
    bundled: Vec<PathBuf>,
    /// Package ids whose tools run without their `[channel]` surface.
    #[serde(default)]
    tools_without_channel: std::collections::BTreeSet<String>,
}

/// `[compile]`: bounds on compiling a component (defaults
/// `warden_runtime::CompileLimits::DEFAULT`). A component past one is
/// refused as `compile_limit_exceeded`, naming it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompileSettings {
    /// Bytes of function bodies an installed (not bundled) package's
    /// component may hold; checked before compiling.
    #[serde(default)]
    max_code_bytes: Option<u64>,
    /// Milliseconds the compiler process may take for one component.
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Bytes of memory the compiler process may map.
    #[serde(default)]
    memory_bytes: Option<u64>,
}

/// `[cache]`: the compiled-component cache in the data directory.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CacheSettings {
    /// Bytes it may hold; past them the least recently used entries go
    /// (default 1 GiB, `RuntimeConfig::cache_max_bytes`).
    #[serde(default)]
    max_bytes: Option<u64>,
}

/// `[store]`: where approvals, grants and leases live.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreSettings {
    /// A `postgres://` URL (`--store` / `$WARDEN_STORE` win over it).
    #[serde(default)]
    url: Option<String>,
    /// Connections to keep open (default [`warden_registry::DEFAULT_POOL_SIZE`]).
    #[serde(default)]
    pool_size: Option<usize>,
    /// The key (hex or base64, 32 bytes; created 0600 when missing) that
    /// encrypts accounts and secrets in the database. Every host sharing
    /// the database needs the same one; `$WARDEN_SECRET_KEY` wins over it.
    #[serde(default)]
    secret_key_file: Option<PathBuf>,
    /// Days settled approvals, their leases and ended grants are kept
    /// (default 30; `serve` deletes older ones at start and every hour).
    #[serde(default)]
    retention_days: Option<u64>,
}

/// The approval store a command line and configuration ask for.
#[derive(Debug, Clone)]
pub(crate) enum StoreChoice {
    /// SQLite in the data directory (the host's default).
    DataDir,
    /// A PostgreSQL database shared by hosts: approvals, grants and leases,
    /// and accounts and secrets (encrypted with `secret_key`).
    Postgres {
        /// The connection URL (may hold a password: never printed).
        url: String,
        /// Connections to keep open.
        pool_size: usize,
        /// The key every host sharing the database uses.
        secret_key: KeySource,
    },
}

/// `[mcp]`: the hosted-MCP lane.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpSettings {
    /// Seconds after which a server's catalog is listed again (servers that
    /// announce `tools/list_changed` are listed again at once).
    #[serde(default)]
    refresh_interval_secs: Option<u64>,
    /// Seconds one call of a hosted server may go without an answer or a
    /// progress report, and one listing may take (default 60; a tool of a
    /// server may run longer than a WASM tool's 10 s).
    #[serde(default)]
    call_timeout_secs: Option<u64>,
    /// Seconds no hosted call runs past, whatever its progress (default
    /// 600); no server's own timeout may be longer.
    #[serde(default)]
    max_call_timeout_secs: Option<u64>,
    /// One server's own settings, by package id.
    #[serde(default)]
    servers: std::collections::BTreeMap<String, ServerSettings>,
}

/// `[mcp.servers.<id>]`: one hosted server's own settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerSettings {
    /// This server's `call_timeout_secs`.
    #[serde(default)]
    call_timeout_secs: Option<u64>,
    /// Relay the server's elicitation and sampling requests to the calling
    /// client (default true).
    #[serde(default)]
    relay: Option<bool>,
}

/// `[oauth]`: how Warden presents itself to authorization servers.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuthSettings {
    /// The https URL where the operator publishes Warden's client ID
    /// metadata document (CIMD): the `client_id` used with authorization
    /// servers that accept one, instead of registering dynamically.
    #[serde(default)]
    client_metadata_url: Option<String>,
}

/// The operator's OAuth clients: `[auth.<vendor>]` and `[oauth]`, read
/// when a connection starts (a secret's variable is read then).
#[derive(Debug, Clone)]
pub(crate) struct OAuthClients {
    clients: BTreeMap<String, AuthClientSettings>,
    oauth: OAuthSettings,
}

impl OAuthClients {
    /// The OAuth client configured for `vendor`, if any, for a recipe whose
    /// token endpoint is `token_endpoint`: refused when the client names no
    /// token endpoint (the host refuses one naming another).
    pub(crate) fn client(
        &self,
        vendor: &str,
        token_endpoint: &str,
    ) -> Result<Option<warden_host::OAuthClientConfig>> {
        let Some(client) = self.clients.get(vendor) else {
            return Ok(None);
        };
        let Some(pinned) = &client.token_endpoint else {
            bail!(
                "[auth.{vendor}] names no token_endpoint, so its client is sent to no recipe's; \
                 the recipe being connected names {token_endpoint}: if that is the provider's \
                 own token endpoint (check it: any package may name the vendor), add \
                 token_endpoint = \"{token_endpoint}\""
            );
        };
        let client_secret = match &client.client_secret_env {
            Some(var) => Some(secrecy::SecretString::from(
                std::env::var(var).with_context(|| {
                    format!("[auth.{vendor}] client_secret_env: ${var} is not set")
                })?,
            )),
            None => None,
        };
        Ok(Some(warden_host::OAuthClientConfig {
            client_id: client.client_id.clone(),
            client_secret,
            token_endpoint: Some(pinned.clone()),
        }))
    }

    /// `[oauth] client_metadata_url`.
    pub(crate) fn client_metadata_url(&self) -> Option<&str> {
        self.oauth.client_metadata_url.as_deref()
    }

    /// Ready `target` for an OAuth connection: name the client ID metadata
    /// document, and return the client configured for its vendor, if any.
    pub(crate) fn prepare(
        &self,
        target: &mut warden_host::AuthTarget,
    ) -> Result<Option<warden_host::OAuthClientConfig>> {
        target.client_metadata_document = self.client_metadata_url().map(str::to_owned);
        match &target.recipe {
            warden_core::spec::AuthRecipe::Oauth2Code(recipe) => {
                self.client(&target.vendor, &recipe.token_endpoint)
            }
            _ => Ok(None),
        }
    }
}

/// `[auth.<vendor>]`: the operator's OAuth client for a vendor.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthClientSettings {
    client_id: String,
    /// The environment variable holding the client secret (never the
    /// secret itself in this file).
    #[serde(default)]
    client_secret_env: Option<String>,
    /// The token endpoint the client is for; the client is used only with
    /// a recipe naming this one, and not at all without it (any package may
    /// name the vendor, with a token endpoint of its own).
    #[serde(default)]
    token_endpoint: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EgressSettings {
    #[serde(default)]
    extra_roots: Vec<PathBuf>,
    #[serde(default)]
    allow_private: Vec<String>,
    #[serde(default)]
    allow_plain_http: Vec<String>,
}

/// The data directory: `--data-dir`, `$WARDEN_DATA_DIR`, or the platform's.
pub(crate) fn data_dir(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    let dirs = directories::ProjectDirs::from("", "", "warden")
        .context("no home directory to put Warden's data in; pass --data-dir")?;
    Ok(dirs.data_dir().to_path_buf())
}

impl Settings {
    /// Read `explicit`, or `<data_dir>/warden.toml` when it exists.
    pub(crate) fn load(explicit: Option<&Path>, data_dir: &Path) -> Result<Settings> {
        let path = match explicit {
            Some(path) => path.to_path_buf(),
            None => {
                let default = data_dir.join("warden.toml");
                if !default.is_file() {
                    return Ok(Settings::default());
                }
                default
            }
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("{}: invalid configuration", path.display()))
    }

    /// The approval store: `explicit` (`--store`), else `[store] url`, else
    /// SQLite in the data directory. Only PostgreSQL URLs are accepted; the
    /// error names the scheme, never the URL (it may carry a password).
    pub(crate) fn store(&self, explicit: Option<&str>) -> Result<StoreChoice> {
        let Some(url) = explicit.or(self.store.url.as_deref()) else {
            return Ok(StoreChoice::DataDir);
        };
        let scheme = url.split_once("://").map(|(scheme, _)| scheme);
        if !matches!(scheme, Some("postgres" | "postgresql")) {
            bail!(
                "unsupported store `{}`: expected a postgres:// URL (SQLite in the data \
                 directory is the default)",
                scheme.map_or_else(|| "without a scheme".to_owned(), |s| format!("{s}://…"))
            );
        }
        let pool_size = self
            .store
            .pool_size
            .unwrap_or(warden_registry::DEFAULT_POOL_SIZE);
        if pool_size == 0 {
            bail!("[store] pool_size must be at least 1");
        }
        // A key of this data directory would differ from host to host: the
        // shared one must be named.
        let secret_key = if std::env::var_os(warden_host::SECRET_KEY_ENV).is_some() {
            KeySource::Env(warden_host::SECRET_KEY_ENV.to_owned())
        } else if let Some(path) = &self.store.secret_key_file {
            KeySource::File(path.clone())
        } else {
            bail!(
                "a PostgreSQL store keeps accounts and secrets encrypted with a key every host \
                 shares: set ${} (32 bytes, hex or base64) or `[store] secret_key_file`",
                warden_host::SECRET_KEY_ENV
            );
        };
        Ok(StoreChoice::Postgres {
            url: url.to_owned(),
            pool_size,
            secret_key,
        })
    }

    /// The egress configuration these settings describe.
    pub(crate) fn egress(&self) -> Result<EgressConfig> {
        let mut config = EgressConfig::default();
        for root in &self.egress.extra_roots {
            let pem = std::fs::read_to_string(root)
                .with_context(|| format!("reading trust root {}", root.display()))?;
            config = config.with_extra_root_pem(pem);
        }
        for target in &self.egress.allow_private {
            let (host, port) = host_port(target)?;
            config = config.allow_private_address(host, port);
        }
        for target in &self.egress.allow_plain_http {
            let (host, port) = host_port(target)?;
            config = config.allow_plain_http(host, port);
        }
        Ok(config)
    }

    /// The compile limits `[compile]` sets, over `defaults`.
    pub(crate) fn compile_limits(
        &self,
        defaults: warden_runtime::CompileLimits,
    ) -> Result<warden_runtime::CompileLimits> {
        let settings = &self.compile;
        if settings.timeout_ms == Some(0) {
            bail!("[compile] timeout_ms must be at least 1");
        }
        if settings
            .memory_bytes
            .is_some_and(|bytes| bytes < MIN_COMPILE_MEMORY)
        {
            bail!("[compile] memory_bytes must be at least {MIN_COMPILE_MEMORY} (1 MiB)");
        }
        Ok(warden_runtime::CompileLimits {
            max_code_bytes: settings.max_code_bytes.unwrap_or(defaults.max_code_bytes),
            timeout: settings
                .timeout_ms
                .map_or(defaults.timeout, std::time::Duration::from_millis),
            memory_bytes: settings.memory_bytes.unwrap_or(defaults.memory_bytes),
        })
    }

    /// `[cache] max_bytes`, when set.
    pub(crate) fn cache_max_bytes(&self) -> Option<u64> {
        self.cache.max_bytes
    }

    /// The package directories `[packages] bundled` names: an entry is a
    /// package directory (it holds `manifest.toml`) or a directory of them.
    /// A listed path that does not exist is an error naming it (a typo must
    /// not silently drop the deployment's packages).
    pub(crate) fn operator_packages(&self) -> Result<Vec<PathBuf>> {
        let mut dirs = Vec::new();
        for entry in &self.packages.bundled {
            if entry.join("manifest.toml").is_file() {
                dirs.push(entry.clone());
                continue;
            }
            let listed = std::fs::read_dir(entry)
                .with_context(|| format!("[packages] bundled: cannot read {}", entry.display()))?;
            let mut found: Vec<PathBuf> = listed
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("manifest.toml").is_file())
                .collect();
            found.sort();
            dirs.extend(found);
        }
        Ok(dirs)
    }

    /// `[store] retention_days`, as a duration (at least one day).
    pub(crate) fn store_retention(&self) -> Result<std::time::Duration> {
        match self.store.retention_days {
            None => Ok(warden_host::DEFAULT_STORE_RETENTION),
            Some(0) => bail!("[store] retention_days must be at least 1"),
            Some(days) => Ok(std::time::Duration::from_secs(days.saturating_mul(86_400))),
        }
    }

    /// `[packages] tools_without_channel`, each a package id.
    pub(crate) fn tools_without_channel(&self) -> Result<std::collections::BTreeSet<String>> {
        let ids = &self.packages.tools_without_channel;
        if let Some(bad) = ids.iter().find(|id| !is_package_id(id)) {
            bail!(
                "[packages] tools_without_channel: {bad:?} is not a package id (lowercase \
                 letters, digits, `.`, `_` and `-`)"
            );
        }
        Ok(ids.clone())
    }

    /// The hosted-MCP lane's limits these settings describe.
    pub(crate) fn hosted(&self) -> Result<warden_host::LaneLimits> {
        let mut limits = warden_host::LaneLimits::default();
        if let Some(secs) = self.mcp.refresh_interval_secs {
            if secs == 0 {
                bail!("[mcp] refresh_interval_secs must be at least 1");
            }
            limits.refresh_interval = std::time::Duration::from_secs(secs);
        }
        if let Some(secs) = self.mcp.max_call_timeout_secs {
            if secs == 0 {
                bail!("[mcp] max_call_timeout_secs must be at least 1");
            }
            limits.max_call_timeout = std::time::Duration::from_secs(secs);
        }
        if let Some(secs) = self.mcp.call_timeout_secs {
            self.check_server_timeout(secs)
                .context("[mcp] call_timeout_secs")?;
            limits.call_timeout = std::time::Duration::from_secs(secs);
        }
        Ok(limits)
    }

    /// Whether `secs` may be a hosted server's call timeout: at least 1, at
    /// most `[mcp] max_call_timeout_secs`.
    pub(crate) fn check_server_timeout(&self, secs: u64) -> Result<()> {
        let max = self.mcp.max_call_timeout_secs.unwrap_or(
            warden_host::LaneLimits::default()
                .max_call_timeout
                .as_secs(),
        );
        if secs == 0 {
            bail!("a call timeout must be at least 1 second");
        }
        if secs > max {
            bail!(
                "a call timeout of {secs} s is over the operator's maximum of {max} s \
                 ([mcp] max_call_timeout_secs in warden.toml)"
            );
        }
        Ok(())
    }

    /// Each hosted server's own settings: its call timeout from
    /// `registered` (`warden mcp add --timeout`), overridden by
    /// `[mcp.servers.<id>]` and checked against the maximum; whether its
    /// requests are relayed.
    pub(crate) fn hosted_servers(
        &self,
        registered: std::collections::BTreeMap<String, u64>,
    ) -> Result<std::collections::BTreeMap<String, warden_host::ServerSettings>> {
        let mut servers = std::collections::BTreeMap::new();
        let mut timeouts = registered;
        for (id, server) in &self.mcp.servers {
            if let Some(secs) = server.call_timeout_secs {
                timeouts.insert(id.clone(), secs);
            }
            if server.relay == Some(false) {
                servers
                    .entry(id.clone())
                    .or_insert_with(warden_host::ServerSettings::default)
                    .no_relay = true;
            }
        }
        for (id, secs) in timeouts {
            self.check_server_timeout(secs)
                .with_context(|| format!("the call timeout of `{id}`"))?;
            servers
                .entry(id)
                .or_insert_with(warden_host::ServerSettings::default)
                .call_timeout = Some(std::time::Duration::from_secs(secs));
        }
        Ok(servers)
    }

    /// The system resolver, with the `[resolve]` overrides in front of it.
    pub(crate) fn resolver(&self) -> Arc<dyn Resolver> {
        if self.resolve.is_empty() {
            return Arc::new(SystemResolver);
        }
        let resolver = self.resolve.iter().fold(
            OverrideResolver::with_fallback(Arc::new(SystemResolver)),
            |r, (host, addrs)| r.with_socket(host, addrs.iter().copied()),
        );
        Arc::new(resolver)
    }
}

impl Settings {
    /// The operator's OAuth clients (`[auth.<vendor>]`, `[oauth]`); an
    /// `[oauth] client_metadata_url` that is not https is refused here.
    pub(crate) fn oauth_clients(&self) -> Result<OAuthClients> {
        if let Some(url) = &self.oauth.client_metadata_url {
            // The rule a manifest's https endpoint follows.
            if let Err(why) = warden_manifest::https_endpoint(url) {
                bail!("[oauth] client_metadata_url must be an https URL: {why}");
            }
        }
        Ok(OAuthClients {
            clients: self.auth.clone(),
            oauth: self.oauth.clone(),
        })
    }
}

/// Parse an exact `host:port`.
fn host_port(text: &str) -> Result<(&str, u16)> {
    let Some((host, port)) = text.rsplit_once(':') else {
        bail!("`{text}`: expected an exact host:port");
    };
    let port = port
        .parse()
        .with_context(|| format!("`{text}`: invalid port"))?;
    if host.is_empty() || host.contains('*') {
        bail!("`{text}`: the host must be a literal name");
    }
    Ok((host, port))
}

mod accounts;
#[cfg(test)]
mod tests;
mod trust;
