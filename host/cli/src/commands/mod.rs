//! One module per subcommand; this one opens the host they share.

mod admin;
mod approvals;
mod audit;
mod auth;
mod call;
mod compile;
mod grants;
mod inspect;
mod install;
mod mcp;
mod package_set;
mod registry;
mod secret;
pub(crate) mod serve;
mod signing;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use warden_host::{AuditLog, Host, HostConfig, Location, PackageSource, Replace};

use crate::cli::{Cli, Command};
use crate::settings::{self, Settings, StoreChoice};

/// Exit code of a call that waits for an approval.
pub(crate) const EXIT_PENDING: u8 = 2;
/// Exit code of a call that needs an account connected or allowed first
/// (`auth_required`; `--json` prints its fields).
pub(crate) const EXIT_AUTH_REQUIRED: u8 = 3;

/// Exit code of a `call --replay` whose requests differ from the tape.
pub(crate) const EXIT_REPLAY_MISMATCH: u8 = 4;

/// Global options every command gets.
pub(crate) struct Context {
    pub(crate) data_dir: PathBuf,
    /// `--config`, when given (the compiler process reads the same file).
    pub(crate) config_file: Option<PathBuf>,
    pub(crate) settings: Settings,
    pub(crate) location: String,
    pub(crate) json: bool,
    /// `serve --memory-budget`, replacing the runtime's default budget.
    pub(crate) memory_budget: Option<u64>,
    /// `serve --long-call-threads`, replacing the runtime's default.
    pub(crate) long_call_threads: Option<u16>,
    /// Whether a cache miss runs baseline code while the optimized code
    /// compiles: for `serve`, which lives on after a first call; a one-shot
    /// command waits for the optimized code, so its cache is complete when it exits.
    pub(crate) baseline_code: bool,
    /// `serve --metrics`: the host counts what it does.
    pub(crate) metrics: bool,
    /// `serve --otlp-endpoint`: the host traces its calls.
    pub(crate) traces: bool,
    /// `serve --public-url`: OAuth connections return through the server.
    pub(crate) public_url: Option<String>,
    /// The shared approval store (`--store postgres://…`), connected once;
    /// `None`: SQLite in the data directory.
    pub(crate) approval_store: Option<Arc<dyn warden_registry::ApprovalStore>>,
    /// The shared secret store (the same database); `None`: the encrypted
    /// file in the data directory.
    pub(crate) secret_store: Option<Arc<dyn warden_egress::secrets::SecretStore>>,
    /// The deployment's package set (the same database): installs and
    /// uninstalls are recorded there and `serve` converges to it.
    pub(crate) package_set: Option<Arc<warden_registry::PgStore>>,
}

impl Context {
    /// Directory of installed packages.
    pub(crate) fn packages_dir(&self) -> PathBuf {
        self.data_dir.join("packages")
    }

    /// Build the host and open the Location, with the built-in packages and
    /// then every installed one (an installed package replaces a built-in
    /// one of the same id: `install --replace` put it there). An installed
    /// package that no longer loads is skipped with a warning on stderr, so
    /// it never stops the others. Nothing is compiled here: a component
    /// compiles at its first call (`serve` also warms them up in the
    /// background), so listing tools never waits for a compiler.
    pub(crate) fn open(&self) -> Result<(Host, Location)> {
        let host = self.host()?;
        let location = host.open_location(&self.location);
        location
            .install_embedded()
            .context("installing the built-in packages")?;
        // The deployment's own packages (`[packages] bundled`): loaded as
        // bundled, in place of a built-in package of the same id (the
        // operator's choice); an installed package with the same id
        // replaces one, as it does a built-in package.
        let mut operators = std::collections::BTreeSet::new();
        for dir in self.settings.operator_packages()? {
            let source = PackageSource::BundledDir(dir.clone());
            let loaded = location.load_package(&source).map_err(anyhow::Error::from);
            let installed = loaded.and_then(|loaded| {
                let id = loaded.package.id.clone();
                if !operators.insert(id.clone()) {
                    anyhow::bail!("another of the operator's packages has the id `{id}`");
                }
                Ok(location.install_loaded(loaded, Replace::Yes)?)
            });
            if let Err(error) = installed {
                say!(
                    "warning: skipping the operator's package {}: {error:#}",
                    dir.display()
                );
            }
        }
        for dir in installed_dirs(&self.packages_dir())? {
            if let Err(error) = load_installed(&location, &dir) {
                say!(
                    "warning: skipping the installed package {}: {error:#}",
                    dir.display()
                );
            }
        }
        for dir in mcp::registered(self) {
            if let Err(error) = mcp::load_user(&location, &dir) {
                say!(
                    "warning: skipping the MCP server {}: {error:#}",
                    dir.display()
                );
            }
        }
        Ok((host, location))
    }

    /// Build the host only (no packages).
    pub(crate) fn host(&self) -> Result<Host> {
        self.host_with(|egress| egress)
    }

    /// [`Context::host`] with the egress settings changed by `adjust`.
    pub(crate) fn host_with(
        &self,
        adjust: impl FnOnce(warden_egress::EgressConfig) -> warden_egress::EgressConfig,
    ) -> Result<Host> {
        self.build_host(adjust, self.secret_store.clone())
    }

    /// [`Context::host_with`], keeping accounts in `secrets` instead of the
    /// data directory's store (a probe keeps nothing).
    pub(crate) fn host_in_memory_secrets(
        &self,
        adjust: impl FnOnce(warden_egress::EgressConfig) -> warden_egress::EgressConfig,
        secrets: Arc<warden_egress::secrets::MemoryStore>,
    ) -> Result<Host> {
        self.build_host(adjust, Some(secrets))
    }

    fn build_host(
        &self,
        adjust: impl FnOnce(warden_egress::EgressConfig) -> warden_egress::EgressConfig,
        secret_store: Option<Arc<dyn warden_egress::secrets::SecretStore>>,
    ) -> Result<Host> {
        let mut runtime = self.runtime_config()?;
        // A cache miss compiles in a `warden compile-component` process,
        // bounded in time and memory.
        runtime.external_compiler = compile::ChildCompiler::new(
            self.data_dir.clone(),
            self.config_file.clone(),
            self.baseline_code,
            runtime.compile_limits,
        )
        .map(|c| Arc::new(c) as Arc<dyn warden_runtime::ExternalCompiler>);
        let config = HostConfig {
            data_dir: Some(self.data_dir.clone()),
            egress: adjust(self.settings.egress()?),
            hosted: self.settings.hosted()?,
            hosted_servers: self
                .settings
                .hosted_servers(mcp::timeout::read_all(&self.mcp_dir())?)?,
            tools_without_channel: self.settings.tools_without_channel()?,
            shared_accounts: self.settings.shared_accounts()?,
            public_url: self.public_url.clone(),
            trust_pins: self.settings.trust_pins()?,
            signers: self.settings.signers()?,
            require_signature: self.settings.require_signature(),
            store_retention: self.settings.store_retention()?,
            runtime,
            ..HostConfig::default()
        };
        // The first-party services the binary ships (Gmail, Google
        // Calendar, web access), for its built-in packages.
        let mut builder = warden_services::register(Host::builder(config));
        if let Some(store) = &self.approval_store {
            builder = builder.approval_store(store.clone());
        }
        if self.metrics {
            builder = builder.metrics(Arc::new(warden_host::Metrics::new()));
        }
        builder = builder.traces(self.traces);
        if let Some(store) = secret_store {
            builder = builder.secret_store(store);
        }
        Ok(builder
            .resolver(self.settings.resolver())
            .audit_log(AuditLog::new(
                self.audit_path(),
                warden_host::DEFAULT_AUDIT_MAX_BYTES,
            ))
            .build()?)
    }

    /// The runtime configuration of this data directory (its cache, the
    /// `serve` options), without an external compiler.
    pub(crate) fn runtime_config(&self) -> Result<warden_runtime::RuntimeConfig> {
        let mut runtime = warden_runtime::RuntimeConfig {
            cache_dir: Some(self.data_dir.join("cache")),
            ..HostConfig::default().runtime
        };
        if let Some(budget) = self.memory_budget {
            runtime.memory_budget = budget;
        }
        if let Some(threads) = self.long_call_threads {
            runtime.long_call_threads = usize::from(threads);
        }
        if let Some(max) = self.settings.cache_max_bytes() {
            runtime.cache_max_bytes = max;
        }
        runtime.compile_limits = self.settings.compile_limits(runtime.compile_limits)?;
        Ok(runtime)
    }

    /// The audit log: `<data-dir>/audit.jsonl` (and `audit.jsonl.1`).
    pub(crate) fn audit_path(&self) -> PathBuf {
        self.data_dir.join("audit.jsonl")
    }
}

/// Load one installed package directory; its manifest id must be its
/// directory name (`install` writes it so).
fn load_installed(location: &Location, dir: &Path) -> Result<()> {
    let mut loaded = location.load_package(&PackageSource::Dir(dir.to_owned()))?;
    // A file of the package itself with that name is not an origin Warden wrote.
    let own_file = loaded.files.contains_key(registry::ORIGIN_FILE);
    if !own_file && dir.join(registry::ORIGIN_FILE).exists() {
        loaded.origin = registry::read_origin(dir);
    }
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    if loaded.package.id != name {
        anyhow::bail!("its manifest id is `{}`, not `{name}`", loaded.package.id);
    }
    // Accepted by `warden install` before: it compiles when first used.
    location.install_loaded_lazily(loaded, Replace::Yes)?;
    Ok(())
}

/// The installed package directories (a `.<id>.installing` staging
/// directory left by an interrupted install is not one).
pub(crate) fn installed_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    install::restore_if_idle(dir);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("reading {}", dir.display()))?
            .path();
        let staging = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if !staging && path.join("manifest.toml").is_file() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// The stores of a PostgreSQL database.
struct SharedStores {
    approvals: Arc<dyn warden_registry::ApprovalStore>,
    secrets: Arc<dyn warden_egress::secrets::SecretStore>,
    packages: Arc<warden_registry::PgStore>,
}

/// The approval, secret and package-set stores of a PostgreSQL database.
async fn shared_stores(
    url: &str,
    pool_size: usize,
    secret_key: warden_egress::secrets::KeySource,
) -> Result<SharedStores> {
    let store = warden_registry::PgStore::connect_with(url, pool_size)
        .await
        .context("connecting to the PostgreSQL store")?;
    let secrets = warden_egress::secrets::PgSecretStore::open(store.pool().clone(), secret_key)
        .await
        .context("opening the secrets in the PostgreSQL store")?;
    let store = Arc::new(store);
    Ok(SharedStores {
        approvals: store.clone(),
        secrets: Arc::new(secrets),
        packages: store,
    })
}

/// Run the parsed command line.
pub(crate) async fn run(cli: Cli) -> Result<ExitCode> {
    let data_dir = settings::data_dir(cli.data_dir.as_deref())?;
    let settings = Settings::load(cli.config.as_deref(), &data_dir)?;
    // The compiler process and `check` open no host, so no database.
    let needs_store = !matches!(
        cli.command,
        Command::CompileComponent { .. } | Command::Check { .. }
    );
    // Nor is the store's configuration checked there: the compiler process
    // runs without the host's environment (a key in `$WARDEN_SECRET_KEY`).
    let choice = if needs_store {
        Some(settings.store(cli.store.as_deref())?)
    } else {
        None
    };
    let shared = match choice {
        Some(StoreChoice::Postgres {
            url,
            pool_size,
            secret_key,
        }) => Some(shared_stores(&url, pool_size, secret_key).await?),
        _ => None,
    };
    let (approval_store, secret_store, package_set) = match shared {
        Some(s) => (Some(s.approvals), Some(s.secrets), Some(s.packages)),
        None => (None, None, None),
    };
    let cx = Context {
        config_file: cli
            .config
            .map(|path| std::path::absolute(&path).unwrap_or(path)),
        settings,
        approval_store,
        secret_store,
        package_set,
        data_dir,
        location: cli.location,
        json: cli.json,
        memory_budget: match &cli.command {
            Command::Serve(serve) => serve.memory_budget,
            _ => None,
        },
        long_call_threads: match &cli.command {
            Command::Serve(serve) => serve.long_call_threads,
            _ => None,
        },
        baseline_code: matches!(cli.command, Command::Serve(_)),
        metrics: matches!(&cli.command, Command::Serve(serve) if serve.metrics.is_some()),
        traces: matches!(&cli.command, Command::Serve(serve) if serve.otlp_endpoint.is_some()),
        public_url: match &cli.command {
            Command::Serve(serve) => serve.public_url.clone(),
            _ => None,
        },
    };
    match cli.command {
        Command::List => inspect::list(&cx),
        Command::Describe { tool } => inspect::describe(&cx, &tool),
        Command::Check { dirs, source } => inspect::check(&cx, &dirs, source),
        Command::Call(args) => call::run(&cx, args).await,
        Command::Install { path, replace, yes } => install::run(&cx, &path, replace, yes).await,
        Command::Sign { dir, key } => signing::sign(&cx, &dir, &key),
        Command::Verify { path } => signing::verify(&cx, &path).await,
        Command::Uninstall { id } => install::uninstall(&cx, &id).await,
        Command::PackageSet => package_set::show(&cx).await,
        Command::Console { addr } => crate::console::run(&cx, addr).await,
        Command::Publish { path, reference } => registry::publish(&cx, &path, &reference).await,
        Command::Upgrade { id, yes } => registry::upgrade(&cx, id.as_deref(), yes).await,
        Command::Registry(crate::cli::RegistryCommand::Login { registry, username }) => {
            registry::login(&cx, &registry, &username).await
        }
        Command::Registry(crate::cli::RegistryCommand::Logout { registry }) => {
            registry::logout(&cx, &registry).await
        }
        Command::Mcp(command) => mcp::run(&cx, command).await,
        Command::Secret(command) => secret::run(&cx, command).await,
        Command::Approvals(command) => approvals::run(&cx, command).await,
        Command::Auth(command) => auth::run(&cx, command).await,
        Command::Grants(command) => grants::run(&cx, command).await,
        Command::Admin(command) => admin::run(&cx, command).await,
        Command::Audit(command) => audit::run(&cx, command),
        Command::Serve(serve) => {
            let serve = *serve;
            let observe = serve::Observe {
                metrics_at: serve.metrics.flatten(),
                otlp_endpoint: serve.otlp_endpoint,
            };
            let wait = std::time::Duration::from_secs(serve.approval_wait);
            serve::run(&cx, serve.http, observe, serve.auth, wait).await
        }
        Command::CompileComponent {
            name,
            baseline,
            memory_limit,
        } => compile::run(&cx, &name, baseline, memory_limit),
    }
}
