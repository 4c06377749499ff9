//! Secrets and accounts: `warden secret` and `warden auth`.

use clap::{Args, Subcommand};

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
