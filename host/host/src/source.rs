//! Where a package comes from: a directory, a `.tar.gz` archive, or the
//! bundle built into the binary. Every source goes through one reader
//! ([`reader`]): only the files the manifest references are read and kept,
//! each checked against `SHA256SUMS` (archives must list every kept file),
//! and the manifest layer validates the result.

mod reader;

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use warden_manifest::{Implementation, Package, ValidationOptions};

use crate::error::HostError;
use reader::Reader;
pub use reader::{MAX_FILE_BYTES, MAX_PACKAGE_BYTES};
pub(crate) use reader::{SUMS_FILE, normalise as normalised};

/// A package to install.
#[derive(Debug, Clone)]
pub enum PackageSource {
    /// A package directory (`packages/echo`).
    Dir(PathBuf),
    /// A `.tar.gz` written by `cargo xtask bundle` (`target/packages/echo.tar.gz`).
    Archive(PathBuf),
    /// A package built into the binary.
    Embedded(&'static warden_bundle::EmbeddedPackage),
    /// A package directory the embedding ships with its own code (a
    /// `first_party` package whose service it registers on the
    /// [`crate::HostBuilder`]): validated and trusted as bundled, like the
    /// packages built into the binary. Never use it for a package a user
    /// hands over: that is [`PackageSource::Dir`].
    BundledDir(PathBuf),
    /// A package pulled from an OCI registry ([`crate::Host::registry`]),
    /// its digests checked; read like an archive.
    Pulled(Arc<warden_oci::Pulled>),
    /// A package's bytes kept elsewhere (the deployment's package set in
    /// PostgreSQL), as the artifact it would be pushed as; read like an
    /// archive.
    Stored(Arc<warden_oci::Artifact>),
}

/// Where an installed package was pulled from: what `warden list` shows and
/// `warden upgrade` resolves again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PackageOrigin {
    /// The reference as asked for (`oci://HOST/REPO:TAG`, or pinned by digest).
    pub reference: String,
    /// The manifest digest pulled.
    pub digest: String,
}

impl PackageOrigin {
    /// The origin of `pulled`: the reference as it was asked for (a pin
    /// the user wrote stays a pin; a tag stays a tag `upgrade` follows)
    /// and the manifest digest pulled.
    pub fn of(pulled: &warden_oci::Pulled) -> Self {
        let resolved = &pulled.resolved;
        PackageOrigin {
            reference: resolved.asked.to_string(),
            digest: resolved.digest.to_string(),
        }
    }
}

/// Where a loaded package came from, as far as trust is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// Built into the binary and verified by digest: the host composition
    /// decides its trust.
    Bundled,
    /// Installed from a directory or an archive: always third-party.
    Installed,
}

impl Provenance {
    /// `bundled` or `installed`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Provenance::Bundled => "bundled",
            Provenance::Installed => "installed",
        }
    }
}

impl PackageSource {
    /// A directory or an archive, by what `path` is.
    pub fn from_path(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        if path.is_dir() {
            PackageSource::Dir(path)
        } else {
            PackageSource::Archive(path)
        }
    }

    /// A short description for messages.
    pub fn describe(&self) -> String {
        match self {
            PackageSource::Dir(p) | PackageSource::Archive(p) | PackageSource::BundledDir(p) => {
                p.display().to_string()
            }
            PackageSource::Embedded(p) => format!("built-in package `{}`", p.name),
            PackageSource::Pulled(p) => p.resolved.reference.to_string(),
            PackageSource::Stored(a) => format!("the stored package `{}`", a.package_id),
        }
    }

    /// Where a package from this source counts as coming from.
    pub fn provenance(&self) -> Provenance {
        match self {
            PackageSource::Embedded(_) | PackageSource::BundledDir(_) => Provenance::Bundled,
            PackageSource::Dir(_)
            | PackageSource::Archive(_)
            | PackageSource::Pulled(_)
            | PackageSource::Stored(_) => Provenance::Installed,
        }
    }
}

/// A validated package with its module bytes.
#[derive(Debug, Clone)]
pub struct LoadedPackage {
    /// The resolved manifest.
    pub package: Package,
    /// The component, for `[runtime] kind = "wasm"` packages.
    pub module: Option<Vec<u8>>,
    /// The kept files by normalised package-relative path: `manifest.toml`,
    /// `SHA256SUMS` when present, and the files the manifest references.
    pub files: BTreeMap<String, Vec<u8>>,
    /// The package's content digest (see [`content_digest`]): with the id,
    /// what identifies an installed package.
    pub digest: String,
    /// Bundled or installed.
    pub provenance: Provenance,
    /// The registry reference it was pulled from, if it was.
    pub origin: Option<PackageOrigin>,
}

impl LoadedPackage {
    /// Write the kept files under `dir`, which this creates and which must
    /// not exist yet (its parent may). Every name is normalised again and
    /// joined only as normal components, each file is created new, and
    /// every directory under `dir` is one this made, so nothing is written
    /// outside `dir` and no existing file or link is followed. Files and
    /// directories are synced to disk before this returns, so a copy moved
    /// into place afterwards is never found empty after a crash.
    pub fn write_to(&self, dir: &Path) -> Result<(), HostError> {
        if let Some(parent) = dir.parent() {
            crate::private::create_dir_all(parent).map_err(|e| HostError::io(parent, e))?;
        }
        // 0700 directories and 0600 files: the data directory's own.
        crate::private::create_dir(dir).map_err(|e| HostError::io(dir, e))?;
        let mut dirs = std::collections::BTreeSet::from([dir.to_path_buf()]);
        for (name, bytes) in &self.files {
            let rel = reader::normalise(name).map_err(|reason| HostError::UnsafeEntry {
                package: self.package.id.clone(),
                entry: name.escape_debug().to_string(),
                reason,
            })?;
            let rel = Path::new(&rel);
            if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
                return Err(HostError::UnsafeEntry {
                    package: self.package.id.clone(),
                    entry: name.escape_debug().to_string(),
                    reason: "does not stay under the install directory".into(),
                });
            }
            let path = dir.join(rel);
            if let Some(parent) = path.parent() {
                crate::private::create_dir_all(parent).map_err(|e| HostError::io(parent, e))?;
                dirs.extend(
                    parent
                        .ancestors()
                        .take_while(|a| a.starts_with(dir))
                        .map(Path::to_path_buf),
                );
            }
            let mut file = crate::private::file_options()
                .create_new(true)
                .open(&path)
                .map_err(|e| HostError::io(&path, e))?;
            std::io::Write::write_all(&mut file, bytes).map_err(|e| HostError::io(&path, e))?;
            file.sync_all().map_err(|e| HostError::io(&path, e))?;
        }
        // Each directory's entries (a directory is synced by a handle to it;
        // where that is not possible, Windows, the files are enough).
        for made in &dirs {
            if let Ok(handle) = std::fs::File::open(made) {
                handle.sync_all().map_err(|e| HostError::io(made, e))?;
            }
        }
        Ok(())
    }
}

/// [`load`] with the operator's trust `pins`: a package refused as
/// installed, whose id is pinned, is read again as the deployment's own
/// (the bundled tier) and kept when its digest is the pinned one.
pub(crate) fn load_pinned(
    source: &PackageSource,
    opts: &ValidationOptions,
    pins: &BTreeMap<String, crate::TrustPin>,
    signers: &[crate::TrustedSigner],
) -> Result<LoadedPackage, HostError> {
    let first = load(source, opts);
    let refused_as_installed = matches!(first, Err(HostError::Manifest { .. }));
    // A pin or signer granting no more than third-party trust vouches for
    // nothing the bundled tier allows.
    let above_third_party =
        |trust: crate::EffectiveTrust| trust >= crate::EffectiveTrust::FirstParty;
    let vouched = pins.values().any(|pin| above_third_party(pin.trust))
        || signers.iter().any(|signer| above_third_party(signer.trust));
    let from_user = matches!(
        source,
        PackageSource::Dir(_)
            | PackageSource::Archive(_)
            | PackageSource::Pulled(_)
            | PackageSource::Stored(_)
    );
    if !vouched || !refused_as_installed || !from_user {
        return first;
    }
    let Ok(loaded) = load(
        source,
        &opts.clone().source(warden_manifest::Source::Bundled),
    ) else {
        return first;
    };
    let pinned = pins
        .get(&loaded.package.id)
        .is_some_and(|pin| above_third_party(pin.trust) && pin.digest == loaded.digest);
    // Signed by a signer the operator trusts as much: the deployment's own.
    let signed = crate::signature::check(&loaded.files, signers)
        .trust()
        .is_some_and(above_third_party);
    if pinned || signed {
        return Ok(loaded);
    }
    match pins.get(&loaded.package.id) {
        Some(pin) if pin.trust < crate::EffectiveTrust::FirstParty => first,
        Some(pin) if pin.digest == loaded.digest => Ok(loaded),
        Some(pin) => Err(HostError::PinMismatch {
            package: loaded.package.id.clone(),
            pinned: pin.digest.clone(),
            digest: loaded.digest,
        }),
        None => first,
    }
}

/// Read, verify and validate a package.
pub fn load(source: &PackageSource, opts: &ValidationOptions) -> Result<LoadedPackage, HostError> {
    let name = source.describe();
    let (root, mut reader) = match source {
        PackageSource::Dir(dir) | PackageSource::BundledDir(dir) => {
            (dir.clone(), Reader::dir(name.clone(), dir.clone()))
        }
        PackageSource::Archive(path) => (path.clone(), Reader::archive(name.clone(), path)?),
        PackageSource::Embedded(p) => {
            p.verify().map_err(|e| HostError::Digest {
                package: name.clone(),
                path: e.path.to_owned(),
            })?;
            let files = p
                .files
                .iter()
                .map(|f| (f.path.to_owned(), f.bytes.to_vec()))
                .collect();
            (PathBuf::from(p.name), Reader::mem(name.clone(), files))
        }
        PackageSource::Pulled(p) => layers(&name, p.module.as_ref(), &p.package_layer)?,
        PackageSource::Stored(a) => layers(&name, a.module.as_ref(), &a.package_layer)?,
    };
    // An archive must carry a digest list naming every kept file; a
    // directory (or the bundle) is checked against one when it has it.
    reader.load_sums(matches!(
        source,
        PackageSource::Archive(_) | PackageSource::Pulled(_) | PackageSource::Stored(_)
    ))?;
    let manifest = reader
        .read("manifest.toml", opts.max_manifest_bytes as u64)?
        .ok_or_else(|| HostError::InvalidPackage {
            package: name.clone(),
            reason: "no manifest.toml".into(),
        })?;
    // Packages built into the binary validate as bundled (their tier may use first_party features).
    let opts = &match source {
        PackageSource::Embedded(_) | PackageSource::BundledDir(_) => {
            opts.clone().source(warden_manifest::Source::Bundled)
        }
        _ => opts.clone(),
    };
    let validated =
        warden_manifest::load_from_files("manifest.toml", &manifest, &root, &reader, opts);
    if let Some(refusal) = reader.take_refusal() {
        return Err(refusal);
    }
    let package = validated.map_err(|diagnostics| HostError::Manifest {
        package: name.clone(),
        diagnostics: Box::new(diagnostics),
    })?;
    let module = match &package.implementation {
        Implementation::Wasm { module } => Some(reader.read(module, MAX_FILE_BYTES)?.ok_or_else(
            || HostError::MissingModule {
                package: name.clone(),
                module: module.clone(),
            },
        )?),
        _ => None,
    };
    // Beside the content: what signs it, checked against the operator's
    // signers by whoever installs it.
    reader.read_signature()?;
    let files = reader.finish()?;
    let digest = content_digest(&files);
    Ok(LoadedPackage {
        package,
        module,
        files,
        digest,
        provenance: source.provenance(),
        origin: match source {
            PackageSource::Pulled(p) => Some(PackageOrigin::of(p)),
            _ => None,
        },
    })
}

/// A reader over a package as an artifact's layers (pulled or stored).
fn layers(
    name: &str,
    module: Option<&(String, Vec<u8>)>,
    package_layer: &[u8],
) -> Result<(PathBuf, Reader), HostError> {
    let module = module.map(|(path, bytes)| (path.as_str(), bytes.as_slice()));
    let reader = Reader::pulled(name.to_owned(), package_layer, module)?;
    Ok((PathBuf::from(name), reader))
}

/// The sha256 (hex) of the package's digest list: one `<sha256>  <path>`
/// line per file in path order, `SHA256SUMS` itself and its signature left
/// out. Two packages
/// with the same files have the same digest, wherever they came from.
pub fn content_digest(files: &BTreeMap<String, Vec<u8>>) -> String {
    let list = crate::signature::digest_list(files);
    hex::encode(Sha256::digest(list.as_bytes()))
}
