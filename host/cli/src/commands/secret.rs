//! `warden secret set|list|rm`. Values come from a prompt or stdin, never argv.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use secrecy::SecretString;
use warden_egress::secrets::AccountKey;

use super::Context;
use crate::cli::{SecretCommand, SecretKeyArgs};
use crate::render;

/// Run a `secret` subcommand.
pub(crate) fn run(cx: &Context, command: SecretCommand) -> Result<ExitCode> {
    let host = cx.host()?;
    let store = host.secrets();
    match command {
        SecretCommand::Set(args) => {
            let key = key(&args);
            let value = read_value(&key)?;
            store.put(&key, value).context("storing the secret")?;
            if !cx.json {
                println!("stored {key}");
            }
        }
        SecretCommand::List => {
            let keys = store.list().context("listing secrets")?;
            if cx.json {
                render::json(&keys);
            } else {
                for key in keys {
                    println!("{key}");
                }
            }
        }
        SecretCommand::Rm(args) => {
            let key = key(&args);
            if !store.delete(&key).context("removing the secret")? {
                bail!("no secret stored for {key}");
            }
            if !cx.json {
                println!("removed {key}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn key(args: &SecretKeyArgs) -> AccountKey {
    AccountKey::new(
        args.vendor.clone(),
        args.handle.clone(),
        args.scopes.iter().cloned(),
    )
}

/// Prompt without echo on a terminal; otherwise read stdin (one trailing newline dropped).
fn read_value(key: &AccountKey) -> Result<SecretString> {
    let value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("value for {key}: ")).context("reading the secret")?
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
