//! `warden mcp add|list|remove`: register a user's remote MCP server as a
//! package `mcp-<name>` (a v3 manifest generated into
//! `<data-dir>/mcp/mcp-<name>/`, loaded as user-registered), list and
//! remove them. `warden mcp refresh [package]` lists the tools of installed
//! `[mcp]` packages now (the host keeps each accepted catalog for the next
//! process). `warden mcp probe <url>` connects once and lists the server's
//! tools (the conformance suite runs it).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use warden_egress::auth::resource::ResourceAuthorization;
use warden_host::{
    HostedError, Location, OAuthClientConfig, OAuthConnect, PackageSource, ProbeAuth, Replace,
};
use warden_hosted::Endpoint;
use warden_manifest::Source;

use super::Context;
use crate::cli::{McpAuth, McpCommand};

pub(crate) mod timeout;
use crate::render;

/// Tools a registered server may offer.
const MAX_TOOLS: u32 = 128;

impl Context {
    /// Directory of user-registered MCP servers.
    pub(crate) fn mcp_dir(&self) -> PathBuf {
        self.data_dir.join("mcp")
    }
}

/// Run `warden mcp …`.
pub(crate) async fn run(cx: &Context, command: McpCommand) -> Result<ExitCode> {
    match command {
        McpCommand::Add {
            name,
            url,
            auth,
            read_only,
            timeout,
        } => add(cx, &name, &url, auth, read_only, timeout).await,
        McpCommand::List => list(cx),
        McpCommand::Remove { name } => remove(cx, &name),
        McpCommand::Refresh { package } => refresh(cx, package.as_deref()).await,
        McpCommand::Probe {
            url,
            call,
            input,
            loopback_http,
            auth,
            client_id,
            client_secret_env,
            client_metadata_url,
            timeout,
        } => {
            let auth = auth
                .then(|| probe_auth(client_id, client_secret_env, client_metadata_url, timeout))
                .transpose()?;
            probe(cx, &url, call, &input, loopback_http, auth).await
        }
    }
}

/// The package id of server `name`, checked.
fn package_id(name: &str) -> Result<String> {
    let name = name.strip_prefix("mcp-").unwrap_or(name);
    let ok = !name.is_empty()
        && name.len() <= 100
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        bail!(
            "`{name}` is not a server name: use 1-100 lowercase letters, digits, `_` or `-`, \
             starting with a letter or digit"
        );
    }
    Ok(format!("mcp-{name}"))
}

/// How a registered server authenticates.
enum ServerAuth {
    None,
    Bearer,
    /// OAuth, from the server's metadata.
    OAuth(Box<ResourceAuthorization>),
}

impl ServerAuth {
    fn name(&self) -> &'static str {
        match self {
            ServerAuth::None => "none",
            ServerAuth::Bearer => "bearer",
            ServerAuth::OAuth(_) => "oauth",
        }
    }
}

async fn add(
    cx: &Context,
    name: &str,
    url: &str,
    auth: McpAuth,
    read_only: bool,
    timeout: Option<u64>,
) -> Result<ExitCode> {
    let id = package_id(name)?;
    if let Some(secs) = timeout {
        cx.settings.check_server_timeout(secs)?;
    }
    Endpoint::parse(url).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (host, location) = cx.open()?;
    let discover = |challenge: Option<String>| {
        let host = &host;
        async move {
            host.discover_mcp_auth(url, challenge.as_deref())
                .await
                .with_context(|| format!("discovering how to authorize against {url}"))
        }
    };
    let auth = match auth {
        McpAuth::None => ServerAuth::None,
        McpAuth::Bearer => ServerAuth::Bearer,
        McpAuth::Oauth => match host.probe_mcp(url, MAX_TOOLS as usize).await {
            Err(HostedError::Unauthorized { challenge, .. }) => {
                ServerAuth::OAuth(Box::new(discover(challenge).await?))
            }
            // Asked for explicitly: the well-known metadata is tried.
            Ok(_) => ServerAuth::OAuth(Box::new(discover(None).await?)),
            Err(error) => {
                return Err(anyhow::Error::new(error).context(format!("probing {url}")));
            }
        },
        McpAuth::Auto => match host.probe_mcp(url, MAX_TOOLS as usize).await {
            Ok(tools) => {
                say!("{url} answers without credentials ({} tools)", tools.len());
                ServerAuth::None
            }
            Err(HostedError::Unauthorized { challenge, .. }) => match discover(challenge).await {
                Ok(found) if !found.assumed_endpoints => {
                    say!("{url} requires authorization: OAuth, from its metadata");
                    ServerAuth::OAuth(Box::new(found))
                }
                // No metadata at all: a bearer token as likely as OAuth at
                // MCP 2025-03-26's default endpoints; the person says which.
                Ok(_) => bail!(
                    "{url} requires authorization (HTTP 401) and publishes no OAuth metadata; \
                     if the server takes a bearer token, run \
                     `warden mcp add {name} {url} --auth bearer` and then \
                     `warden secret set {id} token`; if it is an OAuth server of MCP \
                     2025-03-26 at the default endpoints, `--auth oauth`"
                ),
                Err(error) => bail!(
                    "{url} requires authorization (HTTP 401) and its OAuth metadata is not \
                     usable ({error:#}); if the server takes a bearer token, run \
                     `warden mcp add {name} {url} --auth bearer` and then \
                     `warden secret set {id} token`"
                ),
            },
            Err(error) => {
                return Err(anyhow::Error::new(error).context(format!("probing {url}")));
            }
        },
    };
    let manifest = manifest(&id, name, url, &auth, read_only)?;
    let target = cx.mcp_dir().join(&id);
    let staging = cx.mcp_dir().join(format!(".{id}.adding"));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).with_context(|| format!("creating {}", staging.display()))?;
    std::fs::write(staging.join("manifest.toml"), &manifest)
        .with_context(|| format!("writing {}", staging.display()))?;
    // The generated package goes through the same checks as any other.
    if let Err(error) = load_user(&location, &staging) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    if target.exists() {
        std::fs::remove_dir_all(&target)
            .with_context(|| format!("replacing {}", target.display()))?;
    }
    std::fs::rename(&staging, &target).with_context(|| format!("writing {}", target.display()))?;
    timeout::write(&cx.mcp_dir(), &id, timeout)?;
    if cx.json {
        render::json(
            &serde_json::json!({"added": id, "server": url, "dir": target, "auth": auth.name(), "read_only": read_only}),
        );
    } else {
        out!("added {id} -> {url}\n  -> {}", target.display());
        match auth {
            ServerAuth::None => {}
            ServerAuth::Bearer => {
                out!("  store its token with `warden secret set {id} token`")
            }
            ServerAuth::OAuth(_) => {
                out!("  connect an account with `warden auth connect {id}`")
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Load a user-registered server's package into `location`.
pub(crate) fn load_user(location: &Location, dir: &Path) -> Result<()> {
    let options = location.validation().clone().source(Source::User);
    let loaded = warden_host::load_package(&PackageSource::Dir(dir.to_owned()), &options)?;
    location.install_loaded(loaded, Replace::Yes)?;
    Ok(())
}

/// The registered servers' directories.
pub(crate) fn registered(cx: &Context) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(cx.mcp_dir()) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy()
                    .starts_with(warden_manifest::USER_ID_PREFIX)
            }) && p.join("manifest.toml").is_file()
        })
        .collect();
    dirs.sort();
    dirs
}

fn list(cx: &Context) -> Result<ExitCode> {
    let mut rows = Vec::new();
    for dir in registered(cx) {
        let text = std::fs::read_to_string(dir.join("manifest.toml"))?;
        let value: toml::Table = toml::from_str(&text)
            .with_context(|| format!("reading {}", dir.join("manifest.toml").display()))?;
        let mcp = value.get("mcp").and_then(|m| m.as_table());
        let server = mcp
            .and_then(|m| m.get("server"))
            .and_then(|s| s.as_str())
            .unwrap_or("?");
        let read_only = mcp
            .and_then(|m| m.get("effects"))
            .and_then(|e| e.as_array())
            .is_some_and(|e| !e.iter().any(|x| x.as_str() == Some("external_write")));
        let oauth = value
            .get("auth")
            .and_then(|a| a.as_table())
            .is_some_and(|a| {
                a.values()
                    .any(|r| r.get("method").and_then(|m| m.as_str()) == Some("oauth2_code"))
            });
        let auth = match (oauth, mcp.is_some_and(|m| m.contains_key("credentials"))) {
            (true, _) => "oauth",
            (false, true) => "bearer",
            (false, false) => "none",
        };
        let id = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let timeout = timeout::read(&cx.mcp_dir(), &id)?;
        rows.push(
            serde_json::json!({"id": id, "server": server, "read_only": read_only,
            "auth": auth, "call_timeout_secs": timeout}),
        );
    }
    if cx.json {
        render::json(&rows);
    } else if rows.is_empty() {
        out!("no MCP servers registered (add one with `warden mcp add <name> <https-url>`)");
    } else {
        for row in rows {
            out!(
                "{}  {}  auth={}{}{}",
                row["id"].as_str().unwrap_or_default(),
                render::escape(row["server"].as_str().unwrap_or_default()),
                row["auth"].as_str().unwrap_or_default(),
                if row["read_only"] == true {
                    "  read-only"
                } else {
                    ""
                },
                match row["call_timeout_secs"].as_u64() {
                    Some(secs) => format!("  timeout={secs}s"),
                    None => String::new(),
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn refresh(cx: &Context, package: Option<&str>) -> Result<ExitCode> {
    let (_host, location) = cx.open()?;
    let hosted = location.hosted_packages();
    let wanted: Vec<String> = match package {
        Some(id) if hosted.iter().any(|h| h == id) => vec![id.to_owned()],
        Some(id) => bail!(
            "`{id}` is not an installed [mcp] package (installed: {})",
            if hosted.is_empty() {
                "none".to_owned()
            } else {
                hosted.join(", ")
            }
        ),
        None => hosted,
    };
    let mut failed = false;
    let mut rows = Vec::new();
    for id in &wanted {
        let errors = location.refresh_hosted_package(id).await;
        let prefix = format!("{id}.");
        let tools: Vec<String> = location
            .snapshot()
            .tools()
            .map(|t| t.def().capability_id().to_owned())
            .filter(|c| c.starts_with(&prefix))
            .collect();
        let error = errors.first().map(ToString::to_string);
        failed |= error.is_some();
        rows.push(serde_json::json!({"package": id, "tools": tools, "error": error}));
    }
    if cx.json {
        render::json(&rows);
    } else if rows.is_empty() {
        out!("no [mcp] packages installed");
    }
    if !cx.json {
        for row in &rows {
            let id = row["package"].as_str().unwrap_or_default();
            let count = row["tools"].as_array().map_or(0, Vec::len);
            match row["error"].as_str() {
                Some(error) => out!(
                    "{id}: not refreshed ({}); {count} tools stay published",
                    render::escape(error)
                ),
                None => out!("{id}: {count} tools"),
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn remove(cx: &Context, name: &str) -> Result<ExitCode> {
    let id = package_id(name)?;
    let dir = cx.mcp_dir().join(&id);
    if !dir.join("manifest.toml").is_file() {
        bail!("no MCP server `{id}` is registered (see `warden mcp list`)");
    }
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    timeout::write(&cx.mcp_dir(), &id, None)?;
    out!("removed {id}");
    Ok(ExitCode::SUCCESS)
}

/// The `--auth` options of `warden mcp probe`.
fn probe_auth(
    client_id: Option<String>,
    client_secret_env: Option<String>,
    client_metadata_url: Option<String>,
    timeout: u64,
) -> Result<ProbeAuth> {
    let client_secret = match &client_secret_env {
        Some(var) => Some(secrecy::SecretString::from(
            std::env::var(var)
                .with_context(|| format!("--client-secret-env: ${var} is not set"))?,
        )),
        None => None,
    };
    Ok(ProbeAuth {
        // Named for this one connection: used as given.
        client: client_id.map(|client_id| OAuthClientConfig {
            client_id,
            client_secret,
            token_endpoint: None,
        }),
        client_metadata_document: client_metadata_url,
        callback_timeout: std::time::Duration::from_secs(timeout),
        ..ProbeAuth::default()
    })
}

async fn probe(
    cx: &Context,
    url: &str,
    call: Option<String>,
    input: &str,
    loopback_http: bool,
    auth: Option<ProbeAuth>,
) -> Result<ExitCode> {
    let adjust = |egress: warden_egress::EgressConfig| {
        if loopback_http {
            egress.allow_loopback_http()
        } else {
            egress
        }
    };
    let arguments: serde_json::Value =
        serde_json::from_str(input).context("--input is not valid JSON")?;
    // The server's elicitation is asked on this terminal.
    let tool = call.map(|name| {
        warden_host::ProbeCall::new(name, arguments)
            .relaying(std::sync::Arc::new(crate::ask::TerminalRelay))
    });
    let (tools, output) = match auth {
        None => cx
            .host_with(adjust)?
            .probe_mcp_call(url, MAX_TOOLS as usize, tool, loopback_http)
            .await
            .with_context(|| format!("probing {url}"))?,
        Some(auth) => {
            // A probe keeps nothing: its registration and tokens live in
            // memory for this run.
            let memory = std::sync::Arc::new(warden_egress::secrets::MemoryStore::default());
            let host = cx.host_in_memory_secrets(adjust, memory)?;
            let location = host.open_location("probe");
            let show = |connect: &OAuthConnect| {
                say!("authorize at: {}", connect.url());
                super::auth::open_browser(connect.url(), false);
            };
            location
                .probe_mcp_authorized(url, MAX_TOOLS as usize, tool, loopback_http, &auth, &show)
                .await
                .with_context(|| format!("probing {url}"))?
        }
    };
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    render::json(&serde_json::json!({ "tools": names, "output": output }));
    Ok(ExitCode::SUCCESS)
}

/// The generated v3 manifest of a registered server.
fn manifest(id: &str, name: &str, url: &str, auth: &ServerAuth, read_only: bool) -> Result<String> {
    let mut effects = vec!["network"];
    if !read_only {
        effects.push("external_write");
    }
    if !matches!(auth, ServerAuth::None) {
        effects.push("use_secret");
    }
    let effects: Vec<String> = effects.iter().map(|e| format!("{e:?}")).collect();
    let quote = |text: &str| toml::Value::String(text.to_owned()).to_string();
    let mut text = format!(
        r#"# Generated by `warden mcp add`; remove with `warden mcp remove {name}`.
schema_version = "reborn.extension_manifest.v3"
id = "{id}"
name = "{name}"
version = "0.1.0"
description = "The remote MCP server at {url}."

[mcp]
origin_gate_matrix = {{ loop_run = "gated_unless_granted", product = "consent_sufficient", automation = "forbidden" }}
server = {server}
namespace = "{id}"
max_tools = {MAX_TOOLS}
default_permission = "ask"
effects = [{}]
"#,
        effects.join(", "),
        server = quote(url),
    );
    let credential = |scopes: &[String]| {
        let scopes: Vec<String> = scopes.iter().map(|s| quote(s)).collect();
        format!(
            r#"
[[mcp.credentials]]
handle = "token"
vendor = "{id}"
scopes = [{}]
injection = {{ type = "header", name = "authorization", prefix = "Bearer " }}
"#,
            scopes.join(", ")
        )
    };
    match auth {
        ServerAuth::None => {}
        ServerAuth::Bearer => {
            text.push_str(&credential(&[]));
            text.push_str(&format!(
                r#"
[auth.{id}]
method = "api_key"
display_name = "{name} bearer token"
fields = [{{ handle = "token", label = "Bearer token" }}]
"#
            ));
        }
        ServerAuth::OAuth(found) => {
            let recipe = found
                .recipe()
                .with_context(|| format!("the OAuth metadata of {url}"))?;
            let scopes: Vec<String> = recipe.scopes.iter().map(|s| quote(s)).collect();
            text.push_str(&credential(&recipe.scopes));
            text.push_str(&format!(
                r#"
# From the server's metadata (RFC 9728, RFC 8414); the client is registered
# dynamically (RFC 7591) unless warden.toml configures one.
[auth.{id}]
method = "oauth2_code"
display_name = {display}
authorization_endpoint = {authorize}
token_endpoint = {token}
scopes = [{}]
pkce = "s256"
exchange_auth = {exchange}

[auth.{id}.token_response]
access_token = "/access_token"
refresh_token = "/refresh_token"
expires_in = "/expires_in"
"#,
                scopes.join(", "),
                display = quote(name),
                authorize = quote(&recipe.authorization_endpoint),
                token = quote(&recipe.token_endpoint),
                exchange = quote(recipe.exchange_auth.as_deref().unwrap_or("post_body")),
            ));
        }
    }
    Ok(text)
}
