//! `warden install <dir|archive|oci://…>` and `warden uninstall <id>`:
//! validate, compile, and keep (or remove) a copy in the data dir.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use std::io::IsTerminal as _;

use warden_host::{CapabilityDiff, Discovery, PackageSource, Provenance, Replace};

use super::Context;
use crate::render;

/// Run `warden install`.
pub(crate) async fn run(cx: &Context, path: &Path, replace: bool, yes: bool) -> Result<ExitCode> {
    // A reference is pulled first (its digests checked), outside the
    // install turn: a slow registry holds no other install up.
    let source = match super::registry::is_reference(path) {
        true => super::registry::source(&cx.host()?, path).await?,
        false => PackageSource::from_path(path),
    };
    install(cx, &source, replace, Mode::Person { yes, report: true }).await
}

/// Who installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode<'a> {
    /// A person: what a replacement changes is confirmed (or `yes`), the
    /// component compiles now, the outcome is printed, and with a shared
    /// store the install is recorded in the deployment's package set.
    /// `report`: print the outcome (`upgrade --json` prints one summary).
    Person { yes: bool, report: bool },
    /// `serve` converging to the package set: the package must have the
    /// recorded `digest`; the host that recorded it confirmed its changes;
    /// it compiles at first use; nothing is printed (stdout may be the MCP
    /// channel) or recorded again.
    Converge { id: &'a str, digest: &'a str },
}

/// Converging found another install under way in the data directory.
#[derive(Debug)]
pub(crate) struct Busy;

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("another install or uninstall is under way in this data directory")
    }
}

impl std::error::Error for Busy {}

/// Install the package `source` names (see [`run`]).
pub(crate) async fn install(
    cx: &Context,
    source: &PackageSource,
    replace: bool,
    mode: Mode<'_>,
) -> Result<ExitCode> {
    // One install or uninstall at a time in a data directory, from before
    // the installed packages are read (what an install is checked against)
    // until its copy is in place. Converging never waits for it (`serve`
    // would stop answering while a person answers another install's
    // prompt): it tries again at its next look.
    let _turn = match mode {
        Mode::Person { .. } => InstallTurn::take(cx)?,
        Mode::Converge { .. } => InstallTurn::try_take(cx)?.ok_or(Busy)?,
    };
    // Installs are checked against what is effective here: the built-ins
    // plus every installed package (tool names, the id being taken).
    let (_host, location) = cx.open()?;
    // Read once: the same kept files are compiled and copied.
    let loaded = location.load_package(source)?;
    let id = loaded.package.id.clone();
    let origin = loaded.origin.clone();
    if let Mode::Converge {
        id: recorded,
        digest,
    } = mode
        && (loaded.digest != digest || id != recorded)
    {
        bail!(
            "the package set records `{recorded}` with digest {digest}; {} is `{id}` with {}",
            source.describe(),
            loaded.digest
        );
    }
    // The origin file shares the installed copy's directory: a package
    // that has a file of that name cannot record where it came from.
    if origin.is_some() && loaded.files.contains_key(super::registry::ORIGIN_FILE) {
        bail!(
            "`{id}` has a file named `{}`, which Warden keeps its origin in",
            super::registry::ORIGIN_FILE
        );
    }
    // What the package set keeps of it, settled before anything changes (a
    // package too large to keep is refused here, not after installing).
    let recording = match (mode, &cx.package_set) {
        (Mode::Person { .. }, Some(_)) => Some(super::package_set::record_of(&loaded)?),
        _ => None,
    };
    let summary = warden_manifest::summary(&loaded.package);
    // What the package's tools may reach without a credential, wildcards
    // spelled out ("any host"), so a person sees it before relying on it.
    let reach: std::collections::BTreeSet<String> = loaded
        .package
        .capabilities
        .iter()
        .flat_map(|c| c.network_targets.iter().map(|t| t.describe()))
        .collect();
    // What a replacement changes, before anything does.
    let changes = match replace {
        true => location.replacement_diff(&loaded),
        false => None,
    };
    if let (Some(diff), Mode::Person { yes, .. }) = (&changes, mode) {
        confirm_changes(cx, &id, diff, yes)?;
    }
    let replace = if replace { Replace::Yes } else { Replace::No };

    // Write the copy into a staging directory first (the host checks that
    // every file stays under it), compile and register, then move it into place.
    let target = cx.packages_dir().join(&id);
    let staging = cx.packages_dir().join(format!(".{id}.installing"));
    remove_dir(&staging)?;
    let installed = loaded
        .write_to(&staging)
        .map_err(anyhow::Error::from)
        .and_then(|()| match &origin {
            Some(origin) => super::registry::write_origin(&staging, origin),
            None => Ok(()),
        })
        .and_then(|()| match mode {
            Mode::Person { .. } => Ok(location.install_loaded(loaded, replace)?),
            Mode::Converge { .. } => Ok(location.install_loaded_lazily(loaded, replace)?),
        });
    if let Err(error) = installed {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    swap_in(&staging, &target)?;
    if matches!(mode, Mode::Converge { .. }) {
        return Ok(ExitCode::SUCCESS);
    }
    // What the package asked for and what this host granted it (more than
    // third-party only where the operator's `[trust]` pins its content).
    let (requested, granted, signature) = match location.package(&id) {
        Some(p) => (
            p.package.requested_trust.as_str(),
            p.trust.as_str(),
            p.signature,
        ),
        None => (
            "unknown",
            "third_party",
            warden_host::SignatureStatus::Unsigned,
        ),
    };
    if let (Some(recording), Some(set)) = (recording, &cx.package_set) {
        super::package_set::record(set, recording, granted)
            .await
            .with_context(|| {
                format!(
                    "`{id}` is installed on this host, but recording it in the deployment's \
                     package set failed"
                )
            })?;
    }
    // An `[mcp]` package's tools are listed now when they can be (the
    // person installing it asked for it), and kept for the next process.
    let discovery = location.discover_hosted(&id).await;
    if matches!(mode, Mode::Person { report: false, .. }) {
        return Ok(ExitCode::SUCCESS);
    }
    if cx.json {
        let mut out = serde_json::json!({
            "installed": id, "dir": target, "summary": summary,
            "provenance": Provenance::Installed, "trust": granted,
            "requested_trust": requested,
            "network": reach,
            "signature": signature,
            "origin": super::registry::origin_json(origin.as_ref()),
        });
        if let Some(diff) = &changes {
            out["changes"] = serde_json::to_value(&diff.changes)?;
        }
        match &discovery {
            Some(Discovery::Listed(count)) => out["discovered"] = (*count).into(),
            Some(Discovery::NeedsAccount) => out["discovery"] = "needs_account".into(),
            Some(Discovery::Failed(error)) => {
                out["discovery"] = "failed".into();
                out["discovery_error"] = error.to_string().into();
            }
            _ => {}
        }
        render::json(&out);
    } else {
        out!(
            "installed {} ({granted}; requested {requested})\n  -> {}",
            render::escape(&summary),
            target.display()
        );
        if let Some(origin) = &origin {
            out!(
                "  from {} ({})",
                render::escape(&origin.reference),
                origin.digest
            );
        }
        if signature != warden_host::SignatureStatus::Unsigned {
            out!("  {}", render::escape(&signature.describe()));
        }
        if !reach.is_empty() {
            let reach: Vec<&str> = reach.iter().map(String::as_str).collect();
            out!("  network: {}", render::escape(&reach.join(", ")));
        }
        match &discovery {
            Some(Discovery::Listed(count)) => out!("  discovered {count} tool(s) on its server"),
            Some(Discovery::NeedsAccount) => out!(
                "  its tools are discovered once an account is connected: warden auth connect {}",
                render::escape(&id)
            ),
            Some(Discovery::Failed(error)) => say!(
                "warning: its server's tools could not be listed (the pinned tools are \
                 published): {}",
                render::escape(&error.to_string())
            ),
            _ => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Show what replacing `id` changes (stderr), and go on only when nothing
/// widens, the person says yes on a terminal, or `--yes` was given.
fn confirm_changes(cx: &Context, id: &str, diff: &CapabilityDiff, yes: bool) -> Result<()> {
    if diff.is_empty() {
        if !cx.json {
            say!(
                "the new version of `{}` changes nothing it may do",
                render::escape(id)
            );
        }
        return Ok(());
    }
    say!("what the new version of `{}` changes:", render::escape(id));
    for change in &diff.changes {
        say!("  {}", render::escape(&change.to_string()));
    }
    let widening = diff.widening().count();
    if widening == 0 || yes {
        return Ok(());
    }
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        crate::output::part(
            crate::output::Stream::Err,
            format_args!("It may do more ({widening} change(s) marked +). Install it? [y/N]: "),
        );
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            return Ok(());
        }
        bail!("not installed: the installed version of `{id}` is kept");
    }
    bail!(
        "the new version of `{id}` may do more than the installed one ({widening} change(s) \
         marked +); nothing was changed. Pass --yes to install it anyway"
    )
}

/// Run `warden uninstall` (recorded in the deployment's package set, when
/// the store is shared, so every host removes its copy).
pub(crate) async fn uninstall(cx: &Context, id: &str) -> Result<ExitCode> {
    let removed = remove(cx, id)?;
    // With a shared store, the set's package is removed everywhere, even
    // when this host never managed to install it.
    let recorded = match &cx.package_set {
        Some(set) => set
            .record_removal(id)
            .await
            .with_context(|| {
                format!("recording the uninstall of `{id}` in the deployment's package set")
            })?
            .is_some(),
        None => false,
    };
    if !removed && !recorded {
        bail!(
            "no installed package `{}`; built-in packages cannot be uninstalled",
            render::escape(id)
        );
    }
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
        out!("uninstalled {id}");
        if revealed.is_some() {
            out!("  the built-in package `{id}` is active again");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Remove the installed copy of `id`, taking the install turn; `false`
/// when there is none (a built-in package, a name that is not an id).
pub(crate) fn remove(cx: &Context, id: &str) -> Result<bool> {
    let _turn = InstallTurn::take(cx)?;
    remove_in_turn(cx, id)
}

/// [`remove`] when the install turn is free, for converging (which never
/// waits for it); [`Busy`] when it is not.
pub(crate) fn remove_if_free(cx: &Context, id: &str) -> Result<bool> {
    let _turn = InstallTurn::try_take(cx)?.ok_or(Busy)?;
    remove_in_turn(cx, id)
}

fn remove_in_turn(cx: &Context, id: &str) -> Result<bool> {
    let target = cx.packages_dir().join(id);
    let valid = !id.is_empty() && !id.contains(['/', '\\']) && !id.starts_with('.');
    if !valid || !target.join("manifest.toml").is_file() {
        return Ok(false);
    }
    // Out of the packages' names at once (a rename), then removed.
    let removing = target.with_file_name(format!(".{id}.removing"));
    remove_dir(&removing)?;
    std::fs::rename(&target, &removing)
        .with_context(|| format!("uninstalling {}", target.display()))?;
    remove_dir(&removing)?;
    Ok(true)
}

/// The data directory's install lock (`install.lock`), held while
/// a package is installed or uninstalled: two installs of one id (a script
/// run twice) removed each other's staging and the installed copy.
struct InstallTurn {
    _lock: std::fs::File,
}

impl InstallTurn {
    /// Wait for the lock (saying so when another install holds it), then
    /// put back any copy a swap cut short left aside.
    fn take(cx: &Context) -> Result<InstallTurn> {
        let packages = cx.packages_dir();
        std::fs::create_dir_all(&packages)
            .with_context(|| format!("creating {}", packages.display()))?;
        let (file, path) = lock_file(&packages)?;
        if file.try_lock().is_err() {
            say!("waiting for another install or uninstall in this data directory");
            file.lock()
                .with_context(|| format!("locking {}", path.display()))?;
        }
        restore_set_aside(&packages)?;
        Ok(InstallTurn { _lock: file })
    }

    /// The lock when no one holds it; `None` when another install does.
    fn try_take(cx: &Context) -> Result<Option<InstallTurn>> {
        let packages = cx.packages_dir();
        std::fs::create_dir_all(&packages)
            .with_context(|| format!("creating {}", packages.display()))?;
        let (file, _) = lock_file(&packages)?;
        if file.try_lock().is_err() {
            return Ok(None);
        }
        restore_set_aside(&packages)?;
        Ok(Some(InstallTurn { _lock: file }))
    }
}

/// The install lock's file, opened for reading (all a lock needs: one
/// created by another user can still be locked), created when missing.
/// It is the data directory's, beside `packages`.
fn lock_file(packages: &Path) -> Result<(std::fs::File, PathBuf)> {
    let data_dir = packages.parent().unwrap_or(packages);
    let path = data_dir.join("install.lock");
    let file = match std::fs::File::open(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path),
        opened => opened,
    }
    .with_context(|| format!("opening {}", path.display()))?;
    Ok((file, path))
}

/// Put back what an install cut short left aside in `packages`, when no
/// install is under way (one is: it does so itself when done). Whatever
/// reads the installed packages (every command, and `serve` when the
/// directory changes) asks first, so a package is never missing for it.
pub(crate) fn restore_if_idle(packages: &Path) {
    if !packages.is_dir() {
        return;
    }
    let Ok((file, _)) = lock_file(packages) else {
        return;
    };
    if file.try_lock().is_ok()
        && let Err(error) = restore_set_aside(packages)
    {
        say!("warning: {error:#}");
    }
}

/// The name a replaced copy has between the two renames of [`swap_in`].
fn set_aside_name(id: &str) -> String {
    format!(".{id}.replaced")
}

/// Put `staging` in `target`'s place with two renames: the installed copy
/// is set aside, the new one moved in, the old one removed. An install cut
/// short between the renames leaves the old copy set aside, and the next
/// install or uninstall puts it back ([`restore_set_aside`]): there is never
/// a moment with a half-written package under its id.
fn swap_in(staging: &Path, target: &Path) -> Result<()> {
    let id = target.file_name().unwrap_or_default().to_string_lossy();
    let aside = target.with_file_name(set_aside_name(&id));
    remove_dir(&aside)?;
    let replacing = target.exists();
    if replacing {
        std::fs::rename(target, &aside)
            .with_context(|| format!("setting {} aside", target.display()))?;
    }
    if let Err(error) = std::fs::rename(staging, target) {
        if replacing {
            let _ = std::fs::rename(&aside, target);
        }
        return Err(error).with_context(|| format!("installing into {}", target.display()));
    }
    // The renames themselves, before the old copy goes.
    if let Some(packages) = target.parent()
        && let Ok(handle) = std::fs::File::open(packages)
    {
        handle
            .sync_all()
            .with_context(|| format!("syncing {}", packages.display()))?;
    }
    remove_dir(&aside)
}

/// Put back each copy an install cut short set aside (its id has no copy),
/// and remove those whose replacement is in place, and what an install or
/// uninstall cut short left half-written or half-removed (`.{id}.installing`,
/// `.{id}.removing`: nothing reads them, and they were never cleaned up).
/// Only called while no install runs (the lock is held or was free).
fn restore_set_aside(packages: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(packages) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && (name.ends_with(".installing") || name.ends_with(".removing")) {
            remove_dir(&entry.path())?;
            continue;
        }
        let Some(id) = name
            .strip_prefix('.')
            .and_then(|rest| rest.strip_suffix(".replaced"))
        else {
            continue;
        };
        let target = packages.join(id);
        if target.exists() {
            remove_dir(&entry.path())?;
        } else {
            std::fs::rename(entry.path(), &target)
                .with_context(|| format!("putting back {}", target.display()))?;
        }
    }
    Ok(())
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
