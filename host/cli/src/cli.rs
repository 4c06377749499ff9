//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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

/// `warden serve`'s options.
#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Serve streamable HTTP on this address instead of stdio (e.g. 127.0.0.1:8765).
    #[arg(long)]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// Worker threads serving calls. Default: 1 over stdio (one client:
    /// calls waiting on the network still overlap, and no call pays a
    /// cross-thread wake-up); one per core over HTTP, where several
    /// clients connect.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub(crate) workers: Option<u16>,
    /// Threads of the long-call lane: a call still burning CPU after a
    /// few epoch ticks finishes there, so new calls never queue behind
    /// it. `0` keeps every call on the workers (CPU-bound calls then share
    /// them in epoch slices). Default: one per core, at a lower priority
    /// than the workers.
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub(crate) long_call_threads: Option<u16>,
    /// Memory all running calls may reserve together (each reserves its
    /// tool's memory limit; calls that do not fit wait), e.g. `8GiB`,
    /// `512MiB` or bytes. Default: 8 GiB.
    #[arg(long, value_parser = crate::commands::serve::parse_memory_budget)]
    pub(crate) memory_budget: Option<u64>,
    /// Count calls, authorization decisions, approvals waiting and
    /// egress, and serve them in the Prometheus text format: at
    /// `/metrics` on the `--http` endpoint (behind its authentication)
    /// and, given an address, on a listener of its own for a scraper
    /// (e.g. `--metrics 127.0.0.1:9464`).
    #[arg(long, value_name = "ADDR", num_args = 0..=1)]
    pub(crate) metrics: Option<Option<std::net::SocketAddr>>,
    /// Trace every call (a span for it, its authorization, its lane's
    /// run and each egress request) and export the spans over
    /// OTLP/HTTP to this collector (e.g. `http://127.0.0.1:4318`;
    /// `/v1/traces` is appended). A client's W3C trace context in the
    /// request's `_meta` (`traceparent`) is the call's parent.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// The origin people reach this server at (e.g.
    /// `https://warden.example.com`): an account a person connects from
    /// their client (an OAuth authorize URL it opens) returns to
    /// `<URL>/oauth/callback` here, and is stored as that caller's own.
    #[arg(long, value_name = "URL", requires = "http")]
    pub(crate) public_url: Option<String>,
    /// How HTTP callers authenticate (required off loopback).
    #[command(flatten)]
    pub(crate) auth: ServeAuthArgs,
}

/// Authentication of `serve --http`: a static bearer token, or OAuth 2.1
/// JWT access tokens from an issuer. One of them is required to serve on
/// anything but a loopback address.
#[derive(Args, Debug, Default)]
pub(crate) struct ServeAuthArgs {
    /// HTTP callers must send `Authorization: Bearer <token>` with the token
    /// in this file (at least 32 characters).
    #[arg(
        long,
        value_name = "PATH",
        requires = "http",
        conflicts_with = "oauth_issuer"
    )]
    pub(crate) auth_token_file: Option<std::path::PathBuf>,
    /// Accept JWT access tokens from this OAuth issuer (its `iss`).
    #[arg(
        long,
        value_name = "URL",
        requires_all = ["http", "oauth_audience"]
    )]
    pub(crate) oauth_issuer: Option<String>,
    /// This server's resource URL: tokens must name it in `aud`
    /// (e.g. `https://warden.example.com/mcp`).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub(crate) oauth_audience: Option<String>,
    /// The issuer's signing keys (a JWKS JSON document). Without it they
    /// are fetched at start from the issuer's metadata (`jwks_uri`, https,
    /// through egress).
    #[arg(long, value_name = "PATH", requires = "oauth_issuer")]
    pub(crate) oauth_jwks_file: Option<std::path::PathBuf>,
    /// A scope every token must carry (repeatable); otherwise `403`.
    #[arg(long, value_name = "SCOPE", requires = "oauth_issuer")]
    pub(crate) oauth_scope: Vec<String>,
    /// Also accept this `Host` header (e.g. the name a load balancer
    /// forwards); repeatable.
    #[arg(long, value_name = "HOST", requires = "http")]
    pub(crate) allowed_host: Vec<String>,
    /// Serve HTTPS with this certificate chain (PEM, leaf first), for
    /// direct exposure without a TLS-terminating proxy.
    #[arg(long, value_name = "PATH", requires_all = ["http", "tls_key"])]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// The private key of `--tls-cert` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// Which clients get a server-side MCP session: `all`; `elicitation`
    /// (only clients that can be asked for approvals mid-call); `none`
    /// (every request stands alone, so any host behind a load balancer
    /// answers it; approvals are "approve, then call again").
    #[arg(long, value_enum, default_value = "all", requires = "http")]
    pub(crate) sessions: SessionsArg,
    /// Connections open at once; at the cap, further clients wait (in the
    /// listen backlog) until one closes. Raise `ulimit -n` with it.
    /// Default: 512.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        requires = "http"
    )]
    pub(crate) max_connections: Option<usize>,
    /// Connections one peer (an IPv4 address, an IPv6 /64) may hold; one
    /// past its share is closed at once. Behind a proxy every client is the
    /// proxy: set it to --max-connections there. Default: 128.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        requires = "http"
    )]
    pub(crate) max_connections_per_peer: Option<usize>,
}

/// `serve --sessions`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum SessionsArg {
    /// Every client.
    #[default]
    All,
    /// Clients that declare elicitation.
    Elicitation,
    /// None: stateless.
    None,
}

impl From<SessionsArg> for warden_mcp::Sessions {
    fn from(arg: SessionsArg) -> Self {
        match arg {
            SessionsArg::All => warden_mcp::Sessions::All,
            SessionsArg::Elicitation => warden_mcp::Sessions::Elicitation,
            SessionsArg::None => warden_mcp::Sessions::None,
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct CallArgs {
    /// Capability id (`echo.echo`) or model name (`echo_echo`).
    pub(crate) tool: String,
    /// The input: JSON text, or `@path` to read it from a file (`@-` for stdin).
    #[arg(long, short)]
    pub(crate) input: String,
    /// Who is calling. A person at a terminal is the `product` origin; use
    /// `loop-run` to call as a model would.
    #[arg(long, value_enum, default_value_t = OriginArg::Product)]
    pub(crate) origin: OriginArg,
    /// Approve this call once without asking (for scripts).
    #[arg(long, conflicts_with = "resume")]
    pub(crate) approve_once: bool,
    /// Run a call approved earlier with `warden approvals approve <ID>` (same input).
    #[arg(long, value_name = "APPROVAL_ID")]
    pub(crate) resume: Option<String>,
    /// Write every HTTP exchange the tool made through the host to FILE
    /// (redacted: credentials appear as placeholders).
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub(crate) record: Option<std::path::PathBuf>,
    /// Answer the tool's HTTP from a FILE written by `--record`, without
    /// network or account; a request the file does not hold fails the call
    /// with a diff (exit code 4).
    #[arg(long, value_name = "FILE")]
    pub(crate) replay: Option<std::path::PathBuf>,
    /// Save the data a tool returns (images, audio, a resource's bytes) as
    /// files in DIR, one line per file saying where; without it such data
    /// is named, not shown.
    #[arg(long, value_name = "DIR")]
    pub(crate) output_dir: Option<std::path::PathBuf>,
}

/// Invocation origins.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub(crate) enum OriginArg {
    /// The model, in an agent loop.
    LoopRun,
    /// A person, in the product.
    Product,
    /// An automation.
    Automation,
}

impl From<OriginArg> for warden_core::Origin {
    fn from(origin: OriginArg) -> Self {
        match origin {
            OriginArg::LoopRun => warden_core::Origin::LoopRun,
            OriginArg::Product => warden_core::Origin::Product,
            OriginArg::Automation => warden_core::Origin::Automation,
        }
    }
}

#[derive(Subcommand, Debug)]
pub(crate) enum AuditCommand {
    /// The last lines of the audit log, oldest first.
    Tail {
        /// How many lines.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: usize,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum AdminCommand {
    /// The fields of a package's form: which are required, set, secret.
    Show {
        /// The package id.
        id: String,
    },
    /// Set a field (the value is prompted for, or read from stdin).
    Set {
        /// The package id.
        id: String,
        /// The field's handle, as the manifest declares it.
        field: String,
    },
    /// Remove a field's value.
    Unset {
        /// The package id.
        id: String,
        /// The field's handle.
        field: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum GrantsCommand {
    /// Live grants of the Location: capability, package, origin, session, expiry.
    List,
    /// Revoke a grant: calls it covered need approval again.
    Revoke {
        /// The grant id (from `warden grants list`).
        id: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum SecretCommand {
    /// Store a credential value (prompted for, or read from stdin), bound to
    /// the audiences the extension it is for declares and usable by it only.
    Set(SecretSetArgs),
    /// List stored accounts: vendor, handle, scopes, audiences and allowed
    /// extensions (never values).
    List,
    /// Remove a stored credential.
    Rm(SecretKeyArgs),
    /// Allow another extension to use the stored accounts of a vendor (toward
    /// those accounts' own audiences only).
    Allow {
        /// The extension to allow (`gmail`).
        extension: String,
        /// The vendor of the accounts (`google`).
        vendor: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum RegistryCommand {
    /// Keep a login for a registry (the password from a prompt or stdin).
    Login {
        /// The registry: `HOST` or `HOST:PORT`.
        registry: String,
        /// The user name.
        #[arg(long)]
        username: String,
    },
    /// Remove the kept login of a registry.
    Logout {
        /// The registry: `HOST` or `HOST:PORT`.
        registry: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum McpCommand {
    /// Register the remote MCP server at an https URL as package `mcp-<name>`
    /// (effects `network` and `external_write`, `ask` by default).
    Add {
        /// A short name (lowercase letters, digits, `_`, `-`).
        name: String,
        /// The server's streamable-HTTP endpoint (https, no userinfo, query or fragment).
        url: String,
        /// How to authenticate: `auto` probes `initialize` without
        /// credentials (a 401 whose metadata allows OAuth gives `oauth`);
        /// `none`; `bearer` (a token stored with `warden secret set`);
        /// `oauth` (connected with `warden auth connect`).
        #[arg(long, value_enum, default_value = "auto")]
        auth: McpAuth,
        /// The server only reads: no `external_write` effect.
        #[arg(long)]
        read_only: bool,
        /// Seconds a call of this server may go without an answer or a
        /// progress report (default `[mcp] call_timeout_secs`, 60); at most
        /// `[mcp] max_call_timeout_secs` (600).
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
    },
    /// List the registered servers.
    List,
    /// Remove a registered server.
    Remove {
        /// Its name (with or without `mcp-`).
        name: String,
    },
    /// List the tools of hosted MCP servers now (every installed `[mcp]`
    /// package, or one) and keep the catalog, so `warden list` and
    /// `describe` show them.
    Refresh {
        /// A package id (`notion`, `mcp-<name>`); all of them when omitted.
        package: Option<String>,
    },
    /// Connect to an MCP server through egress, list its tools and
    /// optionally call one (used by the MCP conformance suite).
    #[command(hide = true)]
    Probe {
        /// The server URL.
        url: String,
        /// A tool to call after listing.
        #[arg(long)]
        call: Option<String>,
        /// The tool's input (JSON).
        #[arg(long, default_value = "{}")]
        input: String,
        /// Allow plain http to localhost/loopback addresses, any port (local
        /// test servers such as the conformance suite's MCP and
        /// authorization servers), for this command only.
        #[arg(long)]
        loopback_http: bool,
        /// Authorize when the server asks (401, or 403 `insufficient_scope`):
        /// discovery, PKCE, the loopback callback; the authorize URL is
        /// printed and opened with `$BROWSER` when set. Tokens and any
        /// dynamic registration live in memory for this run only.
        #[arg(long)]
        auth: bool,
        /// With `--auth`: a pre-registered client id.
        #[arg(long, requires = "auth")]
        client_id: Option<String>,
        /// With `--client-id`: the environment variable holding its secret
        /// (never on the command line).
        #[arg(long, value_name = "VAR", requires = "client_id")]
        client_secret_env: Option<String>,
        /// With `--auth`: the URL of this client's metadata document (CIMD),
        /// used as the client id where the authorization server accepts one.
        #[arg(long, value_name = "URL", requires = "auth")]
        client_metadata_url: Option<String>,
        /// With `--auth`: seconds to wait for each authorization callback.
        #[arg(long, default_value_t = 120, requires = "auth")]
        timeout: u64,
    },
}

/// `warden mcp add --auth`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum McpAuth {
    /// Probe `initialize` without credentials.
    Auto,
    /// No credentials.
    None,
    /// A bearer token (`authorization: Bearer …`).
    Bearer,
    /// OAuth 2.1 as the MCP authorization spec says: the server's
    /// protected-resource and authorization-server metadata give the recipe
    /// `warden auth connect` runs (PKCE, dynamic registration, `resource`).
    Oauth,
}

#[derive(Args, Debug)]
pub(crate) struct SecretSetArgs {
    #[command(flatten)]
    pub(crate) key: SecretKeyArgs,
    /// The extension the account is for (needed when several installed
    /// extensions declare this vendor and handle).
    #[arg(long, conflicts_with = "oauth_client")]
    pub(crate) extension: Option<String>,
    /// With `--oauth-client`: the token endpoint the client is for (the
    /// recipe's `token_endpoint`); the client is used with no other.
    #[arg(
        long,
        requires = "oauth_client",
        required_if_eq("oauth_client", "true")
    )]
    pub(crate) token_endpoint: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct SecretKeyArgs {
    /// Credential vendor (`github`).
    pub(crate) vendor: String,
    /// Credential handle the manifest declares (`github_runtime_token`).
    pub(crate) handle: String,
    /// Scopes the account has (repeatable; `set` defaults to the scopes the
    /// extension declares).
    #[arg(long = "scope", conflicts_with = "oauth_client")]
    pub(crate) scopes: Vec<String>,
    /// Not an account: the deployment's OAuth client id or secret that an
    /// `oauth2_code` recipe's `client_credentials` names by this handle
    /// (never sent anywhere but in the OAuth flows of that vendor's recipes).
    #[arg(long)]
    pub(crate) oauth_client: bool,
    /// The account of this authenticated caller (a JWT subject, as the
    /// token's `sub` names it): used for that caller's calls only. Without
    /// it, the deployment's account (stdio, the CLI, the static token; JWT
    /// callers only where `[accounts] shared` names the vendor).
    #[arg(long, value_name = "SUBJECT", conflicts_with = "oauth_client", value_parser = subject)]
    pub(crate) owner: Option<String>,
}

/// A caller's subject as `--owner` takes it: 1 to 256 printable characters.
fn subject(text: &str) -> Result<String, String> {
    if text.is_empty() || text.len() > 256 || text.chars().any(char::is_control) {
        return Err("a subject is 1 to 256 characters, none of them control characters".into());
    }
    Ok(text.to_owned())
}

#[derive(Subcommand, Debug)]
pub(crate) enum AuthCommand {
    /// Connect an account: runs the `[auth.<vendor>]` recipe of the named
    /// extension (or of the one extension with a recipe for the named
    /// vendor). OAuth prints the authorize URL and waits for the browser's
    /// redirect to 127.0.0.1; an API key is prompted for (or read from
    /// stdin, one line per field) and stored only if its probe passes.
    Connect {
        /// Extension id (`github`) or vendor.
        name: String,
        /// The vendor, when the extension has recipes for several.
        #[arg(long)]
        vendor: Option<String>,
        /// Seconds to wait for the browser's redirect.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        /// Do not try to open a browser; only print the URL.
        #[arg(long)]
        no_browser: bool,
        /// Also ask for this scope (repeatable): what a server's
        /// `insufficient_scope` answer named (capped by the recipe's scopes).
        #[arg(long)]
        scope: Vec<String>,
    },
    /// Connected accounts: scopes, expiry, audiences and the extensions
    /// that use them (never values).
    Status,
    /// Remove every account of a vendor and its refresh material.
    Disconnect {
        /// The vendor (`github`).
        vendor: String,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum ApprovalsCommand {
    /// Pending approval requests of the Location.
    List,
    /// Approve a request (then run the call with `warden call ... --resume <ID>`).
    Approve {
        /// The approval id.
        id: String,
        /// Also grant future calls of this tool in this Location.
        #[arg(long)]
        grant: bool,
    },
    /// Deny a request.
    Deny {
        /// The approval id.
        id: String,
        /// Feedback the model sees.
        #[arg(long)]
        feedback: Option<String>,
    },
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
