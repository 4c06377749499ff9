//! Packages that travel through OCI registries: `warden publish PKG REF`,
//! `warden install oci://…`, `warden upgrade [id]`, and the record of where
//! an installed package was pulled from (`.origin.json` in its directory,
//! moved into place with it). Registry logins come from the secret store
//! (`warden registry login`, shared by the hosts of a PostgreSQL store),
//! then the Docker config file (`docker login`, `skopeo login`, `podman
//! login` write it).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use warden_host::oci::{Client, DockerConfig, FirstOf, Logins, Reference, SCHEME, StaticLogins};
use warden_host::{Host, PackageOrigin, PackageSource};

use super::Context;
use crate::render;

/// The file in an installed package's directory naming where it came from.
pub(crate) const ORIGIN_FILE: &str = ".origin.json";
/// An origin file larger than this is not one Warden wrote.
const MAX_ORIGIN_BYTES: u64 = 4096;

/// A registry client for `reference`'s registry: its login from the
/// secret store when one is kept there, else the Docker config file's.
pub(crate) async fn client(host: &Host, reference: &Reference) -> Result<Client> {
    let registry = reference.registry();
    let docker: Arc<dyn Logins> = Arc::new(DockerConfig::from_env());
    let logins: Arc<dyn Logins> = match host.registry_login(&registry).await? {
        Some(login) => Arc::new(FirstOf::new(vec![
            Arc::new(StaticLogins::new().with(&registry, login)),
            docker,
        ])),
        None => docker,
    };
    Ok(host.registry(logins))
}

/// Whether `arg` names a registry reference rather than a path.
pub(crate) fn is_reference(arg: &Path) -> bool {
    arg.to_str().is_some_and(|s| s.starts_with(SCHEME))
}

/// The package `arg` names: pulled (digests checked) when it is an
/// `oci://` reference, else the directory or archive at that path.
pub(crate) async fn source(host: &Host, arg: &Path) -> Result<PackageSource> {
    if !is_reference(arg) {
        return Ok(PackageSource::from_path(arg));
    }
    let reference = Reference::parse(arg.to_str().unwrap_or_default())?;
    Ok(warden_host::pull(&client(host, &reference).await?, &reference).await?)
}

/// Record `origin` in a package directory being installed.
pub(crate) fn write_origin(dir: &Path, origin: &PackageOrigin) -> Result<()> {
    let path = dir.join(ORIGIN_FILE);
    let json = serde_json::to_vec_pretty(origin)?;
    std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))
}

/// The origin recorded in an installed package's directory, if any; a
/// file that is not one is reported and ignored (the package still runs).
pub(crate) fn read_origin(dir: &Path) -> Option<PackageOrigin> {
    let path = dir.join(ORIGIN_FILE);
    let file = std::fs::File::open(&path).ok()?;
    let mut bytes = Vec::new();
    let read = std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_ORIGIN_BYTES + 1),
        &mut bytes,
    );
    let parsed = read
        .ok()
        .filter(|_| bytes.len() as u64 <= MAX_ORIGIN_BYTES)
        .and_then(|_| serde_json::from_slice::<PackageOrigin>(&bytes).ok())
        .filter(|o| Reference::parse(&o.reference).is_ok());
    if parsed.is_none() {
        say!(
            "warning: ignoring {}: not a package origin Warden wrote",
            path.display()
        );
    }
    parsed
}

/// `warden publish PKG REF`: read the package as `install` would (its
/// `SHA256SUMS` and signature travel with it) and push it.
pub(crate) async fn publish(cx: &Context, path: &Path, reference: &str) -> Result<ExitCode> {
    let reference = Reference::parse(reference)?;
    let (host, location) = cx.open()?;
    let loaded = location.load_package(&PackageSource::from_path(path))?;
    let artifact = loaded.artifact()?;
    let digest = client(&host, &reference)
        .await?
        .push(&reference, &artifact)
        .await?;
    let pinned = reference.pinned(digest.clone());
    if cx.json {
        render::json(&serde_json::json!({
            "published": loaded.package.id, "version": loaded.package.version,
            "reference": reference.to_string(), "digest": digest.to_string(),
            "pinned": pinned.to_string(), "content_digest": loaded.digest,
        }));
    } else {
        out!(
            "published {} {} to {reference}\n  digest {digest}\n  install with: warden install {}",
            render::escape(&loaded.package.id),
            render::escape(&loaded.package.version),
            pinned
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `warden upgrade [id]`: resolve each pulled package's reference again
/// and install what it names now when that is another manifest, showing
/// what changes first (as `install --replace` does).
pub(crate) async fn upgrade(cx: &Context, id: Option<&str>, yes: bool) -> Result<ExitCode> {
    let dirs = super::installed_dirs(&cx.packages_dir())?;
    let mut pulled: Vec<(String, PackageOrigin)> = dirs
        .iter()
        .filter_map(|dir| {
            let name = dir.file_name()?.to_string_lossy().into_owned();
            dir.join(ORIGIN_FILE)
                .is_file()
                .then(|| read_origin(dir))
                .flatten()
                .map(|origin| (name, origin))
        })
        .collect();
    if let Some(id) = id {
        pulled.retain(|(name, _)| name == id);
        if pulled.is_empty() {
            bail!(
                "`{}` is not a package installed from a registry (`warden list` shows each \
                 package's origin)",
                render::escape(id)
            );
        }
    }
    let host = cx.host()?;
    let mut upgraded = Vec::new();
    let mut current = Vec::new();
    for (name, origin) in pulled {
        let asked = Reference::parse(&origin.reference)?;
        if asked.digest().is_some() {
            // Pinned by digest (with a tag or without): nothing to move to.
            current.push(name);
            continue;
        }
        let client = client(&host, &asked).await?;
        let resolved = client
            .resolve(&asked.unpinned())
            .await
            .with_context(|| format!("resolving {asked} for `{name}`"))?;
        if resolved.digest.as_str() == origin.digest {
            current.push(name);
            continue;
        }
        let pulled = client.pull_resolved(resolved).await?;
        let source = PackageSource::Pulled(Arc::new(pulled));
        let mode = super::install::Mode::Person {
            yes,
            report: !cx.json,
        };
        super::install::install(cx, &source, true, mode).await?;
        upgraded.push(name);
    }
    if cx.json {
        render::json(&serde_json::json!({ "upgraded": upgraded, "current": current }));
    } else if upgraded.is_empty() {
        out!("every package pulled from a registry is current");
    } else {
        // Each upgrade printed its own outcome above.
        for name in &current {
            out!("{} is current", render::escape(name));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What `list` and `describe` show of an installed package's origin.
pub(crate) fn origin_json(loaded: Option<&PackageOrigin>) -> serde_json::Value {
    match loaded {
        Some(origin) => {
            serde_json::json!({ "reference": origin.reference, "digest": origin.digest })
        }
        None => serde_json::Value::Null,
    }
}

/// `warden registry login HOST --username U`: keep a registry login in the
/// secret store (the password from a prompt or stdin, never argv).
pub(crate) async fn login(cx: &Context, registry: &str, username: &str) -> Result<ExitCode> {
    let registry = registry_name(registry)?;
    let password = super::secret::read_value(&format!("password of {username} at {registry}"))?;
    let host = cx.host()?;
    host.set_registry_login(&registry, username, &password)
        .await?;
    out!(
        "stored the login of {} for {registry}",
        render::escape(username)
    );
    Ok(ExitCode::SUCCESS)
}

/// `warden registry logout HOST`.
pub(crate) async fn logout(cx: &Context, registry: &str) -> Result<ExitCode> {
    let registry = registry_name(registry)?;
    if !cx.host()?.remove_registry_login(&registry).await? {
        bail!("no login for {registry} is kept in the secret store");
    }
    out!("removed the login for {registry}");
    Ok(ExitCode::SUCCESS)
}

/// `HOST[:PORT]`, checked as a reference's registry is.
fn registry_name(registry: &str) -> Result<String> {
    Ok(Reference::parse(&format!("{SCHEME}{registry}/x"))
        .map_err(|_| {
            anyhow::anyhow!(
                "`{}` is not a registry host (`HOST` or `HOST:PORT`, lowercase)",
                render::escape(registry)
            )
        })?
        .registry())
}
