//! `warden secret set|list|rm|allow`. Values come from a prompt or stdin,
//! never argv. `--oauth-client` stores (or removes) a deployment's OAuth
//! client credential instead of an account. An account is bound when it is set: to the audiences the
//! manifest of the extension it is for declares (shown before the value is
//! read) and to that extension; `allow` lets another extension use it,
//! toward the same audiences only.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use secrecy::SecretString;
use warden_egress::secrets::{Account, AccountKey};
use warden_host::{DeclaredCredential, Location};

use super::Context;
use crate::cli::{SecretCommand, SecretKeyArgs, SecretSetArgs};
use crate::render;

/// Run a `secret` subcommand.
pub(crate) async fn run(cx: &Context, command: SecretCommand) -> Result<ExitCode> {
    match command {
        SecretCommand::Set(args) if args.key.oauth_client => {
            let key = key(&args.key, &[]);
            // clap requires it with --oauth-client; an empty pin would
            // match no recipe, but say so rather than store one.
            let token_endpoint = args
                .token_endpoint
                .as_deref()
                .context("--token-endpoint is required with --oauth-client")?;
            say!(
                "{key}: an OAuth client credential of `{}`, for the token endpoint {token_endpoint} only",
                args.key.vendor
            );
            let value = read_value(&key)?;
            let host = cx.host()?;
            let pin =
                warden_egress::auth::grant::client_pin_key(&args.key.vendor, &args.key.handle);
            host.secrets()
                .put(&pin, SecretString::from(token_endpoint))
                .await
                .context("storing the OAuth client's token endpoint")?;
            host.secrets()
                .put(&key, value)
                .await
                .context("storing the OAuth client credential")?;
            if cx.json {
                render::json(&serde_json::json!({
                    "stored": key,
                    "token_endpoint": token_endpoint,
                }));
            } else {
                out!("stored {key}");
            }
        }
        SecretCommand::Set(args) => {
            let (_host, location) = cx.open()?;
            set(cx, &location, &args).await?;
        }
        SecretCommand::List => {
            let host = cx.host()?;
            // Host records (OAuth grants, client registrations: `handle#…`)
            // are not accounts; `warden auth status` shows their expiry.
            let accounts: Vec<Account> = host
                .secrets()
                .accounts()
                .await
                .context("listing secrets")?
                .into_iter()
                .filter(|a| !a.key.handle.contains('#'))
                .collect();
            if cx.json {
                render::json(&accounts);
            } else {
                for account in &accounts {
                    print_account(account);
                }
            }
        }
        SecretCommand::Rm(args) => {
            let host = cx.host()?;
            let key = key(&args, &args.scopes);
            // The value and its refresh material, in the account's turn.
            let removed = host
                .remove_account(&key)
                .await
                .context("removing the secret")?;
            // An OAuth client credential's token endpoint goes with it (even
            // left alone), as an OAuth account's refresh material does.
            let pin_removed = args.oauth_client
                && host
                    .secrets()
                    .delete(&warden_egress::auth::grant::client_pin_key(
                        &args.vendor,
                        &args.handle,
                    ))
                    .await
                    .context("removing the OAuth client's token endpoint")?;
            if !removed && !pin_removed {
                bail!("no secret stored for {key}");
            }
            if cx.json {
                render::json(&serde_json::json!({ "removed": key }));
            } else {
                out!("removed {key}");
            }
        }
        SecretCommand::Allow { extension, vendor } => {
            let (_host, location) = cx.open()?;
            let accounts = location
                .allow_account(&extension, &vendor)
                .await
                .with_context(|| format!("allowing `{extension}` to use `{vendor}` accounts"))?;
            if cx.json {
                render::json(&accounts);
            } else {
                for account in &accounts {
                    out!(
                        "allowed `{extension}` to use {} (sent only to {})",
                        account.key,
                        render::words(&account.binding.audiences)
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Bind and store one account for the extension that declares it.
async fn set(cx: &Context, location: &Location, args: &SecretSetArgs) -> Result<()> {
    let declared = for_extension(location, args)?;
    let scopes = if args.key.scopes.is_empty() {
        &declared.scopes
    } else {
        &args.key.scopes
    };
    let key = key(&args.key, scopes);
    // Shown before the value is read: the user sees where it may go.
    say!(
        "{key} for extension `{}`: may be sent only to {}",
        declared.extension,
        render::words(&declared.audiences)
    );
    let value = read_value(&key)?;
    let account = location
        .connect_account(&declared.extension, &key, value)
        .await
        .context("storing the secret")?;
    if cx.json {
        render::json(&account);
    } else {
        out!("stored {key}");
    }
    Ok(())
}

/// The installed extension the account is for: the one `--extension` names,
/// or the only one declaring this vendor and handle.
fn for_extension(location: &Location, args: &SecretSetArgs) -> Result<DeclaredCredential> {
    let (vendor, handle) = (&args.key.vendor, &args.key.handle);
    let mut declared = location.credential_declarations(vendor, handle);
    if let Some(extension) = &args.extension {
        return match declared.into_iter().find(|d| &d.extension == extension) {
            Some(d) => Ok(d),
            None => bail!(
                "extension `{extension}` is not installed or declares no credential \
                 `{handle}` of vendor `{vendor}`"
            ),
        };
    }
    match declared.len() {
        0 => bail!(
            "no installed extension declares credential `{handle}` of vendor `{vendor}`; \
             install the extension first (the account is bound to its audiences)"
        ),
        1 => Ok(declared.remove(0)),
        _ => {
            let names: Vec<&str> = declared.iter().map(|d| d.extension.as_str()).collect();
            bail!(
                "several extensions declare credential `{handle}` of vendor `{vendor}` ({}); \
                 choose the one this account is for with --extension",
                names.join(", ")
            )
        }
    }
}

fn print_account(account: &Account) {
    let binding = &account.binding;
    out!("{}", account.key);
    if binding.audiences.is_empty() {
        out!("  audiences   none (unbound: store it again with `warden secret set`)");
    } else {
        out!("  audiences   {}", render::words(&binding.audiences));
    }
    out!("  extensions  {}", render::allowed(binding));
    match &account.key.owner {
        Some(owner) => out!("  owner       {owner} (used for that caller's calls only)"),
        None => out!("  owner       the deployment"),
    }
}

fn key(args: &SecretKeyArgs, scopes: &[String]) -> AccountKey {
    if args.oauth_client {
        return warden_egress::auth::grant::client_key(&args.vendor, &args.handle);
    }
    let key = AccountKey::new(
        args.vendor.clone(),
        args.handle.clone(),
        scopes.iter().cloned(),
    );
    match &args.owner {
        Some(owner) => key.owned_by(owner.clone()),
        None => key,
    }
}

/// Prompt without echo on a terminal; otherwise read stdin (one trailing newline dropped).
pub(super) fn read_value(key: &impl std::fmt::Display) -> Result<SecretString> {
    let value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(render::escape(&format!("value for {key}: ")))
            .context("reading the secret")?
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the secret from stdin")?;
        let trimmed = text
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&text);
        trimmed.to_owned()
    };
    if value.is_empty() {
        bail!("empty secret value");
    }
    Ok(SecretString::from(value))
}
