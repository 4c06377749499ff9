//! One package set for a deployment: with a shared PostgreSQL store, an
//! install, replace, upgrade or uninstall on any host is recorded in the
//! store (`warden_registry::PgStore::record_package`), and every `serve`
//! converges to it — pulling a package from its registry reference, or
//! reading the bytes the store keeps for one installed from a file — by
//! installing into its own data directory as `warden install` would (the
//! install turn kept), which the live catalog then publishes to its MCP
//! clients with `tools/list_changed`. A package this host cannot fetch or
//! install is reported on stderr and tried again; the others are served.
//!
//! A package installed on a host before it shared a store is that host's
//! own until it is installed again; the set never removes what it did not
//! record.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use warden_host::oci::{Artifact, Digest, Reference};
use warden_host::{LoadedPackage, PackageSource, Provenance};
use warden_registry::{MAX_STORED_PACKAGE_BYTES, PackageRecord, PgStore, StoredPackage};

use super::Context;
use super::install::{self, Mode};

/// How often a serving host reads the set's revision.
const POLL: Duration = Duration::from_secs(1);
/// How long a package that failed waits before it is tried again.
const RETRY: Duration = Duration::from_secs(30);

/// What the set will keep of a package a person installs.
#[derive(Debug)]
pub(crate) struct Recording {
    id: String,
    digest: String,
    reference: Option<String>,
    bytes: Option<StoredPackage>,
}

/// What to record for `loaded`: its pinned registry reference, else its
/// bytes (refused, before anything is installed, when too large to keep).
pub(crate) fn record_of(loaded: &LoadedPackage) -> Result<Recording> {
    let id = loaded.package.id.clone();
    let reference = match &loaded.origin {
        Some(origin) => {
            let pinned =
                Reference::parse(&origin.reference)?.pinned(Digest::parse(&origin.digest)?);
            Some(pinned.to_string())
        }
        None => None,
    };
    let bytes = match reference {
        Some(_) => None,
        None => {
            let artifact = loaded.artifact()?;
            let stored = StoredPackage {
                module: artifact.module,
                package_layer: artifact.package_layer,
            };
            if stored.len() > MAX_STORED_PACKAGE_BYTES {
                bail!(
                    "`{id}` is {} bytes, over the {MAX_STORED_PACKAGE_BYTES} the shared store \
                     keeps for the other hosts; publish it to a registry (`warden publish`) \
                     and install it from there",
                    stored.len()
                );
            }
            Some(stored)
        }
    };
    Ok(Recording {
        id,
        digest: loaded.digest.clone(),
        reference,
        bytes,
    })
}

/// Record `recording`, installed here with `trust`, as the set's package.
pub(crate) async fn record(set: &PgStore, recording: Recording, trust: &str) -> Result<()> {
    let record = PackageRecord {
        id: recording.id,
        digest: recording.digest,
        reference: recording.reference,
        trust: trust.to_owned(),
        removed: false,
        revision: 0,
    };
    set.record_package(&record, recording.bytes.as_ref())
        .await?;
    Ok(())
}

/// How a convergence went.
enum Converged {
    /// Every package of the set is here.
    All,
    /// A package failed (reported): tried again after [`RETRY`].
    Failed,
    /// Another install held the data directory: tried again at once.
    Busy,
}

/// Converge to the set for as long as `serve` runs: on every new revision,
/// again after [`RETRY`] while a package failed, and at the next look when
/// another install held the data directory.
pub(crate) async fn follow(cx: &Context, set: Arc<PgStore>) {
    let mut seen = None;
    let mut failed_at: Option<tokio::time::Instant> = None;
    loop {
        match set.package_set_revision().await {
            Ok(revision) => {
                let retry = failed_at.is_some_and(|at| at.elapsed() >= RETRY);
                if seen != Some(revision) || retry {
                    match converge(cx, &set).await {
                        Converged::All => (seen, failed_at) = (Some(revision), None),
                        Converged::Failed => {
                            (seen, failed_at) = (Some(revision), Some(tokio::time::Instant::now()));
                        }
                        Converged::Busy => seen = None,
                    }
                }
            }
            Err(error) => {
                say!("warning: reading the deployment's package set: {error}");
            }
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Bring this host's installed packages to the set (each failure is
/// reported, naming the package and why).
async fn converge(cx: &Context, set: &PgStore) -> Converged {
    let records = match set.package_set().await {
        Ok(records) => records,
        Err(error) => {
            say!("warning: reading the deployment's package set: {error}");
            return Converged::Failed;
        }
    };
    let local = match installed_here(cx) {
        Ok(local) => local,
        Err(error) => {
            say!("warning: reading this host's packages: {error:#}");
            return Converged::Failed;
        }
    };
    let mut converged = Converged::All;
    for record in records {
        let here = local.get(&record.id);
        let outcome = match (record.removed, here) {
            (true, Some(_)) => install::remove_if_free(cx, &record.id).map(|_| ()),
            (true, None) => Ok(()),
            (false, Some(digest)) if *digest == record.digest => Ok(()),
            (false, _) => fetch_and_install(cx, set, &record).await,
        };
        if let Err(error) = outcome {
            if error.is::<install::Busy>() {
                return Converged::Busy;
            }
            converged = Converged::Failed;
            // The row is another host's writing: shown escaped.
            let from = record.reference.as_deref().unwrap_or("the shared store");
            say!(
                "warning: the deployment's package `{}` ({}) is not installed on this host: {}",
                crate::render::escape(&record.id),
                crate::render::escape(from),
                crate::render::escape(&format!("{error:#}"))
            );
        }
    }
    converged
}

/// The packages installed in this data directory, by id, with their digests.
fn installed_here(cx: &Context) -> Result<BTreeMap<String, String>> {
    let (_host, location) = cx.open()?;
    Ok(location
        .installed()
        .into_iter()
        .filter(|p| p.provenance == Provenance::Installed)
        .map(|p| (p.package.id.clone(), p.digest.clone()))
        .collect())
}

async fn fetch_and_install(cx: &Context, set: &PgStore, record: &PackageRecord) -> Result<()> {
    let source = match &record.reference {
        Some(reference) => {
            let reference = Reference::parse(reference)?;
            let host = cx.host()?;
            let client = super::registry::client(&host, &reference).await?;
            warden_host::pull(&client, &reference).await?
        }
        None => {
            let stored = set
                .stored_package(&record.id, &record.digest)
                .await?
                .context("the store keeps no bytes for it (changed meanwhile?)")?;
            PackageSource::Stored(Arc::new(Artifact {
                package_id: record.id.clone(),
                module: stored.module,
                package_layer: stored.package_layer,
            }))
        }
    };
    install::install(
        cx,
        &source,
        true,
        Mode::Converge {
            id: &record.id,
            digest: &record.digest,
        },
    )
    .await?;
    Ok(())
}

/// `warden package-set`: every package the deployment's set records (and
/// every tombstone), with this host's state for each.
pub(crate) async fn show(cx: &Context) -> Result<std::process::ExitCode> {
    let Some(set) = &cx.package_set else {
        bail!(
            "the package set lives in a shared store: pass --store postgres://… (or set [store] \
             url in warden.toml)"
        );
    };
    let revision = set.package_set_revision().await?;
    let records = set.package_set().await?;
    let local = installed_here(cx)?;
    let state = |record: &PackageRecord| match (record.removed, local.get(&record.id)) {
        (true, None) => "removed",
        (true, Some(_)) => "removed (still installed here)",
        (false, Some(digest)) if *digest == record.digest => "installed here",
        (false, Some(_)) => "another version here",
        (false, None) => "not installed here",
    };
    if cx.json {
        let rows: Vec<serde_json::Value> = records
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "digest": r.digest, "reference": r.reference,
                    "trust": r.trust, "removed": r.removed, "revision": r.revision,
                    "here": state(r),
                })
            })
            .collect();
        crate::render::json(&serde_json::json!({ "revision": revision, "packages": rows }));
    } else if records.is_empty() {
        out!("the deployment's package set is empty");
    } else {
        out!("the deployment's package set, revision {revision}:");
        for record in &records {
            let from = record.reference.as_deref().unwrap_or("kept in the store");
            out!(
                "  {:<24} {}  {}  ({})",
                crate::render::escape(&record.id),
                &record.digest[..record.digest.len().min(12)],
                crate::render::escape(from),
                state(record)
            );
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
