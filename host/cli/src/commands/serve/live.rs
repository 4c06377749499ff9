//! The live catalog of `warden serve`: installs, uninstalls and upgrades made
//! by another `warden` process are applied to the running server's Location,
//! whose change counter then makes the MCP server send
//! `notifications/tools/list_changed`.
//!
//! How a change is noticed: when the file system reports an event under the
//! data dir's `packages/` directory ([`Changes`]: a watch, so an idle server
//! is never woken; a 2 s timer where no watch can be set), the server lists
//! the directory and compares a signature of it (each package directory's
//! name, inode and modification time). `warden install` writes a package
//! into a fresh staging directory and renames it into place, and `warden
//! uninstall` removes it, so every change gives a package directory a new
//! inode or removes one: one `readdir` plus a `stat` per package, no reading
//! of files, and events that change nothing (a staging directory being
//! written) change no signature.
//!
//! On a change the directory is reconciled with the Location: a package
//! whose content digest differs from the active one (new or upgraded) is
//! installed, replacing it; an installed package whose directory is gone is
//! uninstalled (a built-in package of the same id becomes active again). A
//! package that no longer loads is left as it was, with a warning. Each model
//! request still sees one consistent snapshot: a `tools/list` or
//! `tools/call` takes the registry's snapshot, which an install swaps whole.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use warden_host::{Location, PackageSource, Provenance, Replace};

use super::changes::Changes;

/// What identifies the state of the packages directory.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Signature(Vec<(String, u64, Option<SystemTime>)>);

/// The signature of `dir` now (empty when it does not exist).
pub(crate) fn signature(dir: &Path) -> Signature {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Signature::default();
    };
    let mut seen: Vec<_> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((
                e.file_name().to_string_lossy().into_owned(),
                inode(&meta),
                meta.modified().ok(),
            ))
        })
        .collect();
    seen.sort();
    Signature(seen)
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}

/// Watch `packages_dir` and keep `location` in step with it, starting from
/// `seen` (taken before the Location was opened, so a change made while it
/// opened is applied on the first check).
pub(crate) fn spawn(
    location: Location,
    packages_dir: PathBuf,
    seen: Signature,
) -> tokio::task::JoinHandle<()> {
    spawn_for(location, packages_dir, seen, Kind::Installed)
}

/// Which packages a watched directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `warden install` copies (`<data-dir>/packages`).
    Installed,
    /// `warden mcp add` servers (`<data-dir>/mcp`, ids `mcp-…`, loaded as user-registered).
    User,
}

impl Kind {
    /// Whether package `id` belongs to this directory.
    fn owns(self, id: &str) -> bool {
        id.starts_with(warden_manifest::USER_ID_PREFIX) == (self == Kind::User)
    }
}

/// [`spawn`] for a directory of `kind`.
pub(crate) fn spawn_for(
    location: Location,
    packages_dir: PathBuf,
    mut seen: Signature,
    kind: Kind,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        // Watched first, then checked: a change made before the watch was
        // set is caught by the first check, one made after by the watch.
        let mut changes = Changes::watch(&packages_dir);
        loop {
            let dir = packages_dir.clone();
            let location = location.clone();
            let previous = seen.clone();
            let applied = tokio::task::spawn_blocking(move || {
                let now = signature(&dir);
                if now != previous {
                    reconcile(&location, &dir, kind);
                }
                now
            })
            .await;
            match applied {
                Ok(now) => seen = now,
                Err(error) => say!("warden: checking installed packages failed: {error}"),
            }
            changes.next().await;
        }
    })
}

/// Bring `location`'s packages of `kind` in line with `packages_dir`.
fn reconcile(location: &Location, packages_dir: &Path, kind: Kind) {
    let options = match kind {
        Kind::Installed => location.validation().clone(),
        Kind::User => location
            .validation()
            .clone()
            .source(warden_manifest::Source::User),
    };
    let dirs = match super::super::installed_dirs(packages_dir) {
        Ok(dirs) => dirs,
        Err(error) => {
            say!("warning: reading installed packages: {error:#}");
            return;
        }
    };
    let mut present = BTreeSet::new();
    for dir in dirs {
        let name = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        // What start-up loads from this directory, and nothing else: a
        // `mcp/github` (not `mcp-…`) is no registered server, and installed
        // live it replaced the built-in `github` (start-up ignored it).
        if !kind.owns(&name) {
            continue;
        }
        present.insert(name.clone());
        let read = match kind {
            Kind::Installed => location.load_package(&PackageSource::Dir(dir.clone())),
            Kind::User => warden_host::load_package(&PackageSource::Dir(dir.clone()), &options),
        };
        let loaded = match read {
            Ok(loaded) => loaded,
            Err(error) => {
                say!(
                    "warning: keeping what is active for {}: {error}",
                    dir.display()
                );
                continue;
            }
        };
        if loaded.package.id != name {
            say!(
                "warning: skipping {}: its manifest id is `{}`",
                dir.display(),
                loaded.package.id
            );
            continue;
        }
        let active = location.package(&name);
        if active
            .is_some_and(|p| p.provenance == Provenance::Installed && p.digest == loaded.digest)
        {
            continue;
        }
        // Compiled and checked before it is published (this runs on the
        // blocking pool): a directory copied in by hand that does not
        // compile or link is refused here, as `warden install` would.
        match location.install_loaded(loaded, Replace::Yes) {
            Ok(package) => say!(
                "warden: installed {} {} (another process)",
                package.id,
                package.version
            ),
            Err(error) => say!("warning: could not install {}: {error}", dir.display()),
        }
    }
    for gone in location.installed().into_iter().filter(|p| {
        p.provenance == Provenance::Installed
            && kind.owns(&p.package.id)
            && !present.contains(&p.package.id)
    }) {
        location.uninstall(&gone.package.id);
        say!("warden: uninstalled {} (another process)", gone.package.id);
    }
}

#[cfg(test)]
mod tests {
    use warden_host::{Host, HostConfig};

    use super::*;

    /// A directory in `mcp/` not named `mcp-…` is no registered server:
    /// start-up ignores it, and so does the live reload (which installed
    /// it, under any id, built-in ones included). One named `mcp-…` beside
    /// it is installed: the reload does look at the directory.
    #[test]
    fn only_mcp_named_directories_are_registered_servers() {
        let data = tempfile::tempdir().unwrap();
        let host = Host::builder(HostConfig {
            data_dir: Some(data.path().to_owned()),
            ..HostConfig::default()
        })
        .build()
        .unwrap();
        let location = host.open_location("live");
        let mcp = data.path().join("mcp");
        let url = "https://mcp.example.com/mcp";
        warden_tests::fake_mcp::write_package(&mcp.join("fake-mcp"), url);
        // The same package as a registered server: `mcp-fake` throughout.
        let registered = mcp.join("mcp-fake");
        warden_tests::fake_mcp::write_package(&registered, url);
        let manifest = registered.join("manifest.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        std::fs::write(&manifest, text.replace("fake-mcp", "mcp-fake")).unwrap();

        reconcile(&location, &mcp, Kind::User);
        assert!(location.package("fake-mcp").is_none());
        let installed = location.package("mcp-fake").expect("mcp-fake is installed");
        assert_eq!(installed.package.id, "mcp-fake");
    }
}
