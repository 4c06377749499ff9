//! The command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod accounts;
mod call;
mod decisions;
mod packages;
mod serve;

pub(crate) use accounts::{AuthCommand, SecretCommand, SecretKeyArgs, SecretSetArgs};
pub(crate) use call::{CallArgs, OriginArg};
pub(crate) use decisions::{AdminCommand, ApprovalsCommand, AuditCommand, GrantsCommand};
pub(crate) use packages::{McpAuth, McpCommand, RegistryCommand};
pub(crate) use serve::{ServeArgs, ServeAuthArgs};

/// Run sandboxed WebAssembly tools for AI agents.
#[derive(Parser, Debug)]
#[command(name = "warden", version, about)]
pub(crate) struct Cli {
    /// Where Warden keeps installed packages, approvals, secrets and its cache
    /// (default: the platform's data directory).
    #[arg(long, global = true, env = "WARDEN_DATA_DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// Host configuration file (default: `<data-dir>/warden.toml` when it exists).
    #[arg(long, global = true, env = "WARDEN_CONFIG")]
    pub(crate) config: Option<PathBuf>,
    /// The Location (workspace) to act in.
    #[arg(
        long,
        global = true,
        default_value = "default",
        env = "WARDEN_LOCATION"
    )]
    pub(crate) location: String,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Where approvals, grants and leases live: `postgres://user@host/db`
    /// shares them between hosts (default: `[store] url` in the
    /// configuration, else SQLite in the data directory).
    #[arg(long, global = true, env = "WARDEN_STORE", value_name = "URL")]
    pub(crate) store: Option<String>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// List the tools of the built-in and installed packages.
    List,
    /// Show a tool's schemas, prompt, effects, gates and credentials.
    Describe {
        /// Capability id (`github.get_repo`) or model name (`github_get_repo`).
        tool: String,
    },
    /// Validate package directories and print their diagnostics.
    Check {
        /// Package directories.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Check as a package from this source: `bundled` (built into the
        /// host), `installed` (a directory or archive) or `user` (`mcp add`).
        #[arg(long = "as", value_name = "SOURCE", default_value = "installed")]
        source: warden_manifest::Source,
    },
    /// Call a tool through authorization.
    Call(CallArgs),
    /// Install a package: a directory, a `.tar.gz` from `cargo xtask bundle`,
    /// or `oci://HOST/REPOSITORY[:TAG][@sha256:…]` pulled from an OCI
    /// registry (signing in with the Docker config file's login). Installed
    /// packages run as third-party unless `[trust]` vouches for them.
    Install {
        /// The package directory, archive or `oci://` reference.
        path: PathBuf,
        /// Replace a package with the same id (an installed one is removed;
        /// a built-in one is hidden until `warden uninstall`). What the new
        /// version changes is shown first; one that lets the package do more
        /// is installed only when confirmed (or with `--yes`).
        #[arg(long)]
        replace: bool,
        /// Accept a replacement that lets the package do more without asking.
        #[arg(long, requires = "replace")]
        yes: bool,
    },
    /// Sign a package directory bundled with `cargo xtask bundle` with a
    /// minisign secret key: writes `SHA256SUMS.minisig` beside its
    /// `SHA256SUMS`, checkable with `minisign -Vm SHA256SUMS -p KEY.pub`
    /// (a key's password from $WARDEN_SIGNING_KEY_PASSWORD).
    Sign {
        /// The package directory.
        dir: PathBuf,
        /// The minisign secret key file.
        #[arg(long)]
        key: PathBuf,
    },
    /// Say who signed a package (directory, archive or `oci://` reference), checked against the
    /// signers warden.toml trusts (`[trust.signers.<name>]`); exits 1 unless
    /// a trusted signer signed exactly its content.
    Verify {
        /// The package directory, archive or `oci://` reference.
        path: PathBuf,
    },
    /// Open the web console for this data directory on loopback: pending
    /// approvals (approve, grant, deny), grants (revoke), packages and
    /// recent activity, behind a one-time sign-in link printed here.
    Console {
        /// The address to listen on (loopback only; port 0 picks one).
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: std::net::SocketAddr,
    },
    /// Push a package (a directory or archive) to an OCI registry, as a Wasm
    /// OCI artifact with Warden's package layer (signing in with the Docker
    /// config file's login).
    Publish {
        /// The package directory or archive.
        path: PathBuf,
        /// Where to: `oci://HOST/REPOSITORY[:TAG]`.
        reference: String,
    },
    /// Keep or remove a registry login in the secret store (shared by the
    /// hosts of a PostgreSQL store; asked before the Docker config file).
    #[command(subcommand)]
    Registry(RegistryCommand),
    /// The deployment's package set (with a shared PostgreSQL store): each
    /// package recorded, where it comes from, and whether this host has it.
    PackageSet,
    /// Install what the references of packages pulled from a registry name
    /// now, when that changed, showing what each new version changes first.
    Upgrade {
        /// Only this package (default: every package with a registry origin).
        id: Option<String>,
        /// Accept a new version that lets a package do more without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Remove an installed package (a built-in package it replaced becomes active again).
    Uninstall {
        /// The package id.
        id: String,
    },
    /// Register, list and remove remote MCP servers (packages `mcp-<name>`).
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Manage credentials (values are read from a prompt or stdin, never argv).
    #[command(subcommand)]
    Secret(SecretCommand),
    /// Connect accounts by running the installed packages' auth recipes
    /// (OAuth in the browser, or an API key), list them, disconnect them.
    #[command(subcommand)]
    Auth(AuthCommand),
    /// List and answer approval requests.
    #[command(subcommand)]
    Approvals(ApprovalsCommand),
    /// Read the audit log (one JSON line per decision and per call).
    #[command(subcommand)]
    Audit(AuditCommand),
    /// List and revoke the grants made by approving with `--grant`.
    #[command(subcommand)]
    Grants(GrantsCommand),
    /// Fill in a package's `[admin_configuration]`: the deployment's values
    /// it declares (kept sealed in the secret store; a secret one is never
    /// shown).
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Serve the tools over MCP (stdio by default).
    Serve(Box<ServeArgs>),
    /// Compile the component on stdin into the data directory's cache (what
    /// the host runs in a process of its own on a cache miss, so the
    /// compiler's memory leaves with it).
    #[command(hide = true)]
    CompileComponent {
        /// The component's name, for errors.
        #[arg(long)]
        name: String,
        /// Compile baseline code first and say so on stdout (a `baseline`
        /// line), then the optimized code at a lower priority.
        #[arg(long)]
        baseline: bool,
        /// Bytes of memory this process may map (its data rlimit), set
        /// before it reads the component; default `[compile] memory_bytes`.
        #[arg(long)]
        memory_limit: Option<u64>,
    },
}

impl Command {
    /// Worker threads of the async runtime; `None` for one per core.
    pub(crate) fn worker_threads(&self) -> Option<usize> {
        match self {
            Command::Serve(serve) => match (serve.workers, serve.http) {
                (Some(n), _) => Some(usize::from(n)),
                (None, None) => Some(1),
                (None, Some(_)) => None,
            },
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workers(args: &[&str]) -> Result<Option<usize>, clap::Error> {
        let argv = ["warden"].iter().chain(args);
        Ok(Cli::try_parse_from(argv)?.command.worker_threads())
    }

    #[test]
    fn stdio_serves_on_one_worker_unless_told() {
        assert_eq!(workers(&["serve"]).unwrap(), Some(1));
        assert_eq!(workers(&["serve", "--workers", "4"]).unwrap(), Some(4));
    }

    #[test]
    fn http_and_other_commands_use_one_worker_per_core() {
        assert_eq!(workers(&["serve", "--http", "127.0.0.1:0"]).unwrap(), None);
        assert_eq!(workers(&["list"]).unwrap(), None);
    }

    #[test]
    fn memory_budget_takes_binary_units_and_refuses_less_than_one_call() {
        let budget = |args: &[&str]| {
            let argv = ["warden", "serve"].iter().chain(args);
            Cli::try_parse_from(argv).map(|cli| match cli.command {
                Command::Serve(serve) => serve.memory_budget,
                _ => unreachable!(),
            })
        };
        assert_eq!(budget(&[]).unwrap(), None);
        assert_eq!(budget(&["--memory-budget", "8GiB"]).unwrap(), Some(8 << 30));
        assert_eq!(
            budget(&["--memory-budget", "512MiB"]).unwrap(),
            Some(512 << 20)
        );
        assert_eq!(
            budget(&["--memory-budget", "67108864"]).unwrap(),
            Some(64 << 20)
        );
        for bad in ["1MiB", "lots", "8GB", "99999999999GiB"] {
            let error = budget(&["--memory-budget", bad]).unwrap_err();
            assert!(error.to_string().contains("--memory-budget"), "{error}");
        }
    }

    #[test]
    fn zero_workers_is_refused() {
        let error = workers(&["serve", "--workers", "0"]).unwrap_err();
        assert!(error.to_string().contains("--workers"), "{error}");
    }
}
