//! `warden install <dir|archive>` and `warden uninstall <id>`: validate,
//! compile, and keep (or remove) a copy in the data dir.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use warden_host::{PackageSource, Provenance, Replace};

use super::Context;
use crate::render;

/// Run `warden install`.
pub(crate) fn run(cx: &Context, path: &Path, replace: bool) -> Result<ExitCode> {
    // Installs are checked against what is effective here: the built-ins
    // plus every installed package (tool names, the id being taken).
    let (_host, location) = cx.open()?;
    // Read once: the same kept files are compiled and copied.
    let loaded = warden_host::load_package(&PackageSource::from_path(path), location.validation())?;
    let id = loaded.package.id.clone();
    let summary = warden_manifest::summary(&loaded.package);
    // What the package's tools may reach without a credential, wildcards
    // spelled out ("any host"), so a person sees it before relying on it.
    let reach: std::collections::BTreeSet<String> = loaded
        .package
        .capabilities
        .iter()
        .flat_map(|c| c.network_targets.iter().map(|t| t.describe()))
        .collect();
    let replace = if replace { Replace::Yes } else { Replace::No };

    // Write the copy into a staging directory first (the host checks that
    // every file stays under it), compile and register, then move it into place.
    let target = cx.packages_dir().join(&id);
    let staging = cx.packages_dir().join(format!(".{id}.installing"));
    remove_dir(&staging)?;
    let installed = loaded
        .write_to(&staging)
        .map_err(anyhow::Error::from)
        .and_then(|()| Ok(location.install_loaded(loaded, replace)?));
    if let Err(error) = installed {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    remove_dir(&target)?;
    std::fs::rename(&staging, &target)
        .with_context(|| format!("installing into {}", target.display()))?;
    if cx.json {
        render::json(&serde_json::json!({
            "installed": id, "dir": target, "summary": summary,
            "provenance": Provenance::Installed, "trust": "third_party",
            "network": reach,
        }));
    } else {
        println!(
            "installed {} (third_party)\n  -> {}",
            render::escape(&summary),
            target.display()
        );
        if !reach.is_empty() {
            let reach: Vec<&str> = reach.iter().map(String::as_str).collect();
            println!("  network: {}", render::escape(&reach.join(", ")));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `warden uninstall`.
pub(crate) fn uninstall(cx: &Context, id: &str) -> Result<ExitCode> {
    let target = cx.packages_dir().join(id);
    let valid = !id.is_empty() && !id.contains(['/', '\\']) && !id.starts_with('.');
    if !valid || !target.join("manifest.toml").is_file() {
        bail!(
            "no installed package `{}`; built-in packages cannot be uninstalled",
            render::escape(id)
        );
    }
    remove_dir(&target)?;
    let (_host, location) = cx.open()?;
    let revealed = location
        .package(id)
        .filter(|p| p.provenance == Provenance::Bundled);
    if cx.json {
        render::json(&serde_json::json!({
            "uninstalled": id,
            "active": revealed.as_ref().map(|p| serde_json::json!({
                "provenance": p.provenance, "trust": p.trust, "digest": p.digest,
            })),
        }));
    } else {
        println!("uninstalled {id}");
        if revealed.is_some() {
            println!("  the built-in package `{id}` is active again");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Remove `dir` if it exists.
fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", dir.display()))
        }
        _ => Ok(()),
    }
}
