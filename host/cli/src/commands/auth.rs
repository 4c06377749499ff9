//! `warden auth connect|status|disconnect`: connect accounts by running the
//! installed packages' `[auth.<vendor>]` recipes through the host API
//! ([`Location::auth_target`], [`Location::begin_oauth`],
//! [`Location::connect_api_key`]). Values come from a prompt or stdin, never
//! argv; the OAuth client comes from `warden.toml` (`[auth.<vendor>]`), the
//! secret store, or dynamic registration — never from a package.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail};
use secrecy::SecretString;
use warden_core::spec::{ApiKeyRecipe, AuthRecipe};
use warden_egress::secrets::Account;
use warden_host::{AuthTarget, Location, OAuthClientConfig};

use super::Context;
use crate::cli::AuthCommand;
use crate::render;

/// Run an `auth` subcommand.
pub(crate) async fn run(cx: &Context, command: AuthCommand) -> Result<ExitCode> {
    let (_host, location) = cx.open()?;
    match command {
        AuthCommand::Connect {
            name,
            vendor,
            timeout,
            no_browser,
            scope,
        } => {
            let mut target = location
                .auth_target(&name, vendor.as_deref())
                .with_context(|| format!("connecting `{name}`"))?;
            target.step_up = scope;
            let accounts = match &target.recipe {
                AuthRecipe::Oauth2Code(_) => {
                    let client = cx.settings.oauth_clients()?.prepare(&mut target)?;
                    oauth(
                        &location,
                        &target,
                        client,
                        Duration::from_secs(timeout),
                        no_browser,
                    )
                    .await?
                }
                AuthRecipe::ApiKey(recipe) => {
                    let values = read_fields(&target, recipe)?;
                    location
                        .connect_api_key(&target, values)
                        .await
                        .with_context(|| format!("connecting a `{}` API key", target.vendor))?
                }
                AuthRecipe::DeviceLink(_) => bail!(
                    "the `{}` recipe is a device link, which Warden cannot run",
                    target.vendor
                ),
            };
            report(cx, &target, &accounts);
        }
        AuthCommand::Status => {
            let accounts = location.auth_status().await.context("listing accounts")?;
            if cx.json {
                render::json(&accounts);
            } else if accounts.is_empty() {
                out!("no accounts are connected");
            }
            for status in accounts.iter().filter(|_| !cx.json) {
                out!("{} ({})", status.account.key, status.kind);
                if let Some(id) = status.identity.get("account_id") {
                    // Who the provider says the account is: its text, shown.
                    out!("  account     {}", render::escape(&id.to_string()));
                }
                out!(
                    "  expires     {}",
                    expiry(status.expires_at, status.refreshable)
                );
                out!(
                    "  audiences   {}",
                    render::words(&status.account.binding.audiences)
                );
                out!("  allowed     {}", render::allowed(&status.account.binding));
                out!("  used by     {}", render::words(&status.used_by));
            }
        }
        AuthCommand::Disconnect { vendor } => {
            let removed = location
                .disconnect(&vendor)
                .await
                .with_context(|| format!("disconnecting `{vendor}`"))?;
            if cx.json {
                render::json(&removed);
            } else {
                for key in &removed {
                    out!("disconnected {key}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn oauth(
    location: &Location,
    target: &AuthTarget,
    client: Option<OAuthClientConfig>,
    timeout: Duration,
    no_browser: bool,
) -> Result<Vec<Account>> {
    let connect = location
        .begin_oauth(target, client)
        .await
        .with_context(|| format!("starting the `{}` authorization", target.vendor))?;
    // stderr: stdout carries only the result (JSON with --json).
    // Where the token will go is the consent too: shown before the browser.
    let audiences: std::collections::BTreeSet<String> = target
        .credentials
        .iter()
        .flat_map(|(_, d)| d.audiences.iter().map(|a| a.host.clone()))
        .collect();
    let audiences: Vec<String> = audiences.into_iter().collect();
    say!(
        "Open this URL to connect a `{}` account for {}, sent only to {} (scopes: {}):\n\n  \
         {}\n\nWaiting up to {} s for the redirect to {} ...",
        target.vendor,
        extensions(target),
        render::escape(&audiences.join(", ")),
        render::words(&target.requested_scopes()),
        connect.url(),
        timeout.as_secs(),
        connect.redirect_uri()
    );
    if !no_browser {
        open_browser(connect.url(), std::io::stderr().is_terminal());
    }
    connect
        .finish(timeout)
        .await
        .with_context(|| format!("connecting a `{}` account", target.vendor))
}

/// Best effort: open `url` with `$BROWSER` when it is set (a program and
/// its arguments, split on whitespace, the URL appended: how a headless
/// setup or a test answers the authorization), else — on a terminal — with
/// the desktop's URL opener.
pub(crate) fn open_browser(url: &str, terminal: bool) {
    let browser = std::env::var("BROWSER").unwrap_or_default();
    let mut words = browser.split_whitespace();
    let (program, args): (String, Vec<&str>) = match words.next() {
        Some(program) => (program.to_owned(), words.collect()),
        None if terminal => {
            let opener = if cfg!(target_os = "macos") {
                "open"
            } else {
                "xdg-open"
            };
            (opener.to_owned(), Vec::new())
        }
        None => return,
    };
    let spawned = std::process::Command::new(&program)
        .args(args)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if spawned.is_err() {
        say!("(`{program}` could not be started; open the URL yourself)");
    }
}

/// The recipe's fields: prompted for on a terminal (secret ones without
/// echo), otherwise read from stdin, one line per field in recipe order.
fn read_fields(target: &AuthTarget, recipe: &ApiKeyRecipe) -> Result<Vec<(String, SecretString)>> {
    if recipe.fields.is_empty() {
        bail!("the `{}` recipe declares no fields", target.vendor);
    }
    if let Some(instructions) = &recipe.instructions {
        say!("{instructions}");
    }
    let audiences: Vec<String> = target
        .credentials
        .iter()
        .flat_map(|(_, d)| d.audiences.iter().map(ToString::to_string))
        .collect();
    say!(
        "`{}` account for {}: may be sent only to {}",
        target.vendor,
        extensions(target),
        render::words(&audiences)
    );
    let mut values = Vec::new();
    if std::io::stdin().is_terminal() {
        for field in &recipe.fields {
            let prompt = format!("{}: ", field.label);
            let value = if field.secret {
                rpassword::prompt_password(render::escape(&prompt)).context("reading the value")?
            } else {
                crate::output::part(crate::output::Stream::Err, format_args!("{prompt}"));
                let mut line = String::new();
                std::io::stdin().read_line(&mut line)?;
                line.trim_end_matches(['\r', '\n']).to_owned()
            };
            values.push((field.handle.clone(), value));
        }
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the values from stdin")?;
        let mut lines = text.lines();
        for field in &recipe.fields {
            let line = lines.next().unwrap_or_default();
            values.push((field.handle.clone(), line.trim_end_matches('\r').to_owned()));
        }
    }
    values
        .into_iter()
        .map(|(handle, value)| {
            if value.is_empty() {
                bail!("empty value for `{handle}`");
            }
            Ok((handle, SecretString::from(value)))
        })
        .collect()
}

fn report(cx: &Context, target: &AuthTarget, accounts: &[Account]) {
    if cx.json {
        render::json(&accounts);
        return;
    }
    for account in accounts {
        out!(
            "connected {} for {} (sent only to {})",
            account.key,
            extensions(target),
            render::words(&account.binding.audiences)
        );
    }
}

/// The extensions a connection is for (every package of the vendor when
/// the vendor was named), quoted: `` `gmail`, `google-calendar` ``.
fn extensions(target: &AuthTarget) -> String {
    let quoted: Vec<String> = target
        .consenting()
        .iter()
        .map(|id| format!("`{}`", render::escape(id)))
        .collect();
    quoted.join(", ")
}

fn expiry(expires_at: Option<u64>, refreshable: bool) -> String {
    let Some(at) = expires_at else {
        return "never reported".into();
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let when = if at > now {
        format!("in {} s", at - now)
    } else {
        format!("{} s ago", now - at)
    };
    let refresh = if refreshable {
        ", refreshed before use"
    } else {
        ""
    };
    format!("{when}{refresh}")
}
