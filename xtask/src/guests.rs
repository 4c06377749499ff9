//! Discover guest crates and where their components go.
//!
//! A guest crate declares its package in `Cargo.toml`:
//!
//! ```toml
//! [package.metadata.warden]
//! package = "echo"     # packages/echo/ (or tests/fixtures/packages/echo/ for fixtures)
//! module = "echo"      # wasm/echo.wasm inside the package
//! bundle = true        # false: built only when named with `--guest`
//! target = "wasm32-wasip2"  # optional; default wasm32-unknown-unknown
//! ```
//!
//! A `wasm32-wasip2` guest comes out of rustc as a component that may import
//! the locked-down WASI 0.2 the runtime links ([`warden_core::wasi`]). A
//! guest that exports `near:agent/tool@0.4.1` (the compatibility world of
//! `wit/near-agent-0.4.1/`, e.g. `guests/fixtures/near-probe`) is checked
//! against that world instead of Warden's own.
//!
//! Guests under `guests/fixtures/` are test fixtures: their packages live in
//! `tests/fixtures/packages/` and are never embedded in the binary.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::workspace;

/// One guest crate.
#[derive(Debug, Clone)]
pub(crate) struct Guest {
    /// Cargo package name.
    pub(crate) name: String,
    /// Crate directory.
    pub(crate) dir: PathBuf,
    /// Package directory the component goes into.
    pub(crate) package_dir: PathBuf,
    /// Module file name without `.wasm`.
    pub(crate) module: String,
    /// Built by a plain `bundle`.
    pub(crate) bundle: bool,
    /// The rustc target: [`DEFAULT_TARGET`] or [`WASIP2_TARGET`].
    pub(crate) target: String,
}

/// The target of a guest that does not name one: a core module importing only the contract.
pub(crate) const DEFAULT_TARGET: &str = "wasm32-unknown-unknown";

/// The target of a guest that may import WASI 0.2; rustc emits a component.
pub(crate) const WASIP2_TARGET: &str = "wasm32-wasip2";

impl Guest {
    /// `packages/<ext>/wasm/<module>.wasm`.
    pub(crate) fn wasm_path(&self) -> PathBuf {
        self.package_dir
            .join("wasm")
            .join(format!("{}.wasm", self.module))
    }

    /// Whether the guest may import WASI 0.2 (it is built for `wasm32-wasip2`).
    pub(crate) fn wasi(&self) -> bool {
        self.target == WASIP2_TARGET
    }

    /// The module (or, for `wasm32-wasip2`, the component) cargo produces.
    pub(crate) fn core_module_path(&self) -> PathBuf {
        workspace::guests_dir()
            .join("target")
            .join(&self.target)
            .join("release")
            .join(format!("{}.wasm", self.name.replace('-', "_")))
    }
}

#[derive(Deserialize)]
struct CargoToml {
    package: PackageTable,
}

#[derive(Deserialize)]
struct PackageTable {
    name: String,
    #[serde(default)]
    metadata: Option<MetadataTable>,
}

#[derive(Deserialize)]
struct MetadataTable {
    warden: Option<WardenMetadata>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WardenMetadata {
    package: String,
    module: String,
    #[serde(default = "yes")]
    bundle: bool,
    #[serde(default)]
    target: Option<String>,
}

fn yes() -> bool {
    true
}

/// Every guest crate with `[package.metadata.warden]`, sorted by name.
pub(crate) fn discover() -> Result<Vec<Guest>> {
    let root = workspace::root();
    let mut guests = Vec::new();
    for (dir, package_root) in [
        (workspace::guests_dir(), root.join("packages")),
        (
            workspace::guests_dir().join("fixtures"),
            root.join("tests/fixtures/packages"),
        ),
    ] {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let crate_dir = entry?.path();
            let manifest = crate_dir.join("Cargo.toml");
            if manifest.is_file()
                && let Some(guest) = read_guest(&crate_dir, &manifest, &package_root)?
            {
                guests.push(guest);
            }
        }
    }
    guests.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(guests)
}

fn read_guest(dir: &Path, manifest: &Path, package_root: &Path) -> Result<Option<Guest>> {
    let text = std::fs::read_to_string(manifest)?;
    let parsed: CargoToml =
        toml::from_str(&text).with_context(|| format!("parsing {}", manifest.display()))?;
    let Some(meta) = parsed.package.metadata.and_then(|m| m.warden) else {
        return Ok(None);
    };
    for (field, value) in [("package", &meta.package), ("module", &meta.module)] {
        if value.is_empty()
            || !value
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        {
            bail!(
                "{}: [package.metadata.warden] {field} = {value:?} must be lowercase letters, digits, `_` or `-`",
                manifest.display()
            );
        }
    }
    let target = meta.target.unwrap_or_else(|| DEFAULT_TARGET.to_owned());
    if ![DEFAULT_TARGET, WASIP2_TARGET].contains(&target.as_str()) {
        bail!(
            "{}: [package.metadata.warden] target = {target:?} must be {DEFAULT_TARGET:?} or {WASIP2_TARGET:?}",
            manifest.display()
        );
    }
    Ok(Some(Guest {
        name: parsed.package.name,
        dir: dir.to_path_buf(),
        package_dir: package_root.join(&meta.package),
        module: meta.module,
        bundle: meta.bundle,
        target,
    }))
}

/// The guests a `bundle` run works on: the named ones, or every bundled one.
pub(crate) fn select(all: Vec<Guest>, names: &[String]) -> Result<Vec<Guest>> {
    if names.is_empty() {
        return Ok(all.into_iter().filter(|g| g.bundle).collect());
    }
    names
        .iter()
        .map(|name| {
            all.iter()
                .find(|g| &g.name == name)
                .cloned()
                .with_context(|| {
                    let known: Vec<_> = all.iter().map(|g| g.name.as_str()).collect();
                    format!(
                        "no guest crate named `{name}` (known: {})",
                        known.join(", ")
                    )
                })
        })
        .collect()
}
