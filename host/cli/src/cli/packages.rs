//! Registries and remote MCP servers.

use clap::{Subcommand, ValueEnum};

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
