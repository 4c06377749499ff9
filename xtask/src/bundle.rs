//! `cargo xtask bundle`: guests -> components -> packages.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::component::{self, Contract};
use crate::digest::{self, SIGNATURE_FILE, SUMS_FILE};
use crate::guests::{self, Guest};
use crate::workspace;

/// Options of `cargo xtask bundle`.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct Args {
    /// Only report stale packages; fail if any is stale.
    #[arg(long)]
    pub(crate) check: bool,
    /// Rebuild even when nothing changed.
    #[arg(long)]
    pub(crate) force: bool,
    /// Work on these guest crates only (also those with `bundle = false`).
    #[arg(long = "guest", value_name = "NAME")]
    pub(crate) guests: Vec<String>,
}

/// Why a guest's package must be rebuilt.
fn staleness(guest: &Guest) -> Result<Option<String>> {
    let wasm = guest.wasm_path();
    if !wasm.is_file() {
        return Ok(Some(format!("{} is missing", rel(&wasm))));
    }
    let recorded = std::fs::read_to_string(digest::fingerprint_path(guest)).unwrap_or_default();
    if recorded.trim() != digest::source_fingerprint(guest)? {
        return Ok(Some(format!(
            "sources of `{}` changed since the last bundle",
            guest.name
        )));
    }
    let sums = std::fs::read_to_string(guest.package_dir.join(SUMS_FILE)).unwrap_or_default();
    if sums != digest::package_sums(&guest.package_dir)? {
        return Ok(Some(format!(
            "files of {} changed since the last bundle",
            rel(&guest.package_dir)
        )));
    }
    Ok(None)
}

/// Run `bundle` (or `bundle --check`).
pub(crate) fn run(args: &Args) -> Result<()> {
    let selected = guests::select(guests::discover()?, &args.guests)?;
    if args.check {
        return check_fresh(&selected);
    }
    // Warden's own world first: a component is checked against the world it exports.
    let contracts = [
        Contract::load()?,
        Contract::load_0_1()?,
        Contract::load_compat()?,
    ];
    // The same check the host runs: an invalid manifest is refused before any build.
    crate::check::packages(
        &selected
            .iter()
            .filter(|g| g.bundle)
            .map(|g| g.package_dir.clone())
            .collect::<Vec<_>>(),
    )?;
    let mut built = 0;
    let mut targets: Vec<&str> = Vec::new();
    for guest in &selected {
        if !args.force {
            if let Some(reason) = staleness(guest)? {
                println!("bundle: {} is stale: {reason}", guest.name);
            } else {
                println!("bundle: {} is up to date", guest.name);
                continue;
            }
        }
        if !targets.contains(&guest.target.as_str()) {
            ensure_target(&guest.target)?;
            targets.push(&guest.target);
        }
        build_guest(&contracts, guest)?;
        write_package(guest)?;
        built += 1;
    }
    println!("bundle: {built} of {} guest(s) rebuilt", selected.len());
    if args.guests.is_empty() {
        package_guestless(&selected)?;
    }
    Ok(())
}

/// Packages with no guest (a hosted MCP server's, such as `notion-mcp`) are
/// bundled as they are: their digest list and archive are written when stale.
fn package_guestless(guests: &[Guest]) -> Result<()> {
    let packages = workspace::root().join("packages");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&packages)
        .with_context(|| format!("reading {}", packages.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("manifest.toml").is_file())
        .filter(|p| !guests.iter().any(|g| &g.package_dir == p))
        .collect();
    dirs.sort();
    crate::check::packages(&dirs)?;
    for dir in dirs {
        let sums = digest::package_sums(&dir)?;
        if std::fs::read_to_string(dir.join(SUMS_FILE)).unwrap_or_default() == sums {
            println!("bundle: {} is up to date", rel(&dir));
            continue;
        }
        write_sums(&dir, &sums)?;
        let archive = write_archive(&dir, &sums)?;
        println!("bundle: packaged {} -> {}", rel(&dir), rel(&archive));
    }
    Ok(())
}

/// `bundle --check`: fail when a built package is stale against its sources.
fn check_fresh(selected: &[Guest]) -> Result<()> {
    let mut stale = Vec::new();
    for guest in selected {
        match staleness(guest)? {
            Some(reason) => {
                println!("stale  {}: {reason}", guest.name);
                stale.push(guest.name.clone());
            }
            None => println!("fresh  {}", guest.name),
        }
    }
    if !stale.is_empty() {
        bail!(
            "{} package(s) are stale ({}); run `cargo xtask bundle`",
            stale.len(),
            stale.join(", ")
        );
    }
    Ok(())
}

fn build_guest(contracts: &[Contract], guest: &Guest) -> Result<()> {
    println!(
        "bundle: building {} -> {}",
        guest.name,
        rel(&guest.wasm_path())
    );
    let start = Instant::now();
    let status = workspace::cargo()
        .args([
            "build",
            "--release",
            "--target",
            &guest.target,
            "--package",
            &guest.name,
            "--manifest-path",
        ])
        .arg(workspace::guests_dir().join("Cargo.toml"))
        // The output is read from the guest workspace's own target dir.
        .env("CARGO_TARGET_DIR", workspace::guests_dir().join("target"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .status()
        .context("starting cargo for the guest build")?;
    if !status.success() {
        bail!(
            "building guest `{}` failed (the compiler's output is above)",
            guest.name
        );
    }
    let compiled = start.elapsed();
    let built = std::fs::read(guest.core_module_path())
        .with_context(|| format!("reading {}", guest.core_module_path().display()))?;
    // rustc already emits a component for `wasm32-wasip2` (via wasm-component-ld).
    let component = if component::is_component(&built) {
        built
    } else {
        component::componentize(&guest.name, &built)?
    };
    Contract::select(contracts, &component)?.check(&guest.name, &component, guest.wasi())?;
    let wasm = guest.wasm_path();
    std::fs::create_dir_all(wasm.parent().expect("wasm/ dir"))?;
    std::fs::write(&wasm, &component).with_context(|| format!("writing {}", wasm.display()))?;
    std::fs::write(
        digest::fingerprint_path(guest),
        digest::source_fingerprint(guest)? + "\n",
    )?;
    println!(
        "bundle: built {} in {:.1}s ({} KiB component)",
        guest.name,
        compiled.as_secs_f64(),
        component.len().div_ceil(1024)
    );
    Ok(())
}

/// Write `SHA256SUMS` and the installable archive of a package.
fn write_package(guest: &Guest) -> Result<()> {
    let dir = &guest.package_dir;
    let sums = digest::package_sums(dir)?;
    write_sums(dir, &sums)?;
    let archive = write_archive(dir, &sums)?;
    println!(
        "bundle: packaged {} ({} files) -> {}",
        rel(dir),
        sums.lines().count(),
        rel(&archive)
    );
    Ok(())
}

/// Write a package's `SHA256SUMS`. A signature (`warden sign`) signs the
/// list: once the list changes it signs nothing here, and it is removed
/// rather than shipped.
fn write_sums(dir: &Path, sums: &str) -> Result<()> {
    let before = std::fs::read_to_string(dir.join(SUMS_FILE)).unwrap_or_default();
    if before != sums && dir.join(SIGNATURE_FILE).exists() {
        std::fs::remove_file(dir.join(SIGNATURE_FILE))?;
        println!(
            "bundle: {} changed; its old signature was removed",
            rel(dir)
        );
    }
    std::fs::write(dir.join(SUMS_FILE), sums)?;
    Ok(())
}

/// A deterministic `.tar.gz` of the files listed in `sums`, plus the list
/// and its signature when the package has one.
fn write_archive(package_dir: &Path, sums: &str) -> Result<PathBuf> {
    let name = package_dir
        .file_name()
        .and_then(|n| n.to_str())
        .context("package dir name")?;
    let out_dir = workspace::archives_dir();
    std::fs::create_dir_all(&out_dir)?;
    let path = out_dir.join(format!("{name}.tar.gz"));
    let file =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        file,
        flate2::Compression::default(),
    ));
    let mut entries: Vec<&str> = sums
        .lines()
        .filter_map(|line| line.split_once("  ").map(|(_, p)| p))
        .collect();
    entries.push(SUMS_FILE);
    if package_dir.join(SIGNATURE_FILE).exists() {
        entries.push(SIGNATURE_FILE);
    }
    for entry in entries {
        let bytes = std::fs::read(package_dir.join(entry))?;
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, entry, bytes.as_slice())?;
    }
    tar.into_inner()?.finish()?;
    Ok(path)
}

/// Install the wasm target with rustup when it is missing.
fn ensure_target(target: &str) -> Result<()> {
    let installed = std::process::Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context(
            "running `rustup target list --installed` (rustup is needed to add the wasm target)",
        )?;
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == target)
    {
        return Ok(());
    }
    println!("bundle: installing the {target} target with rustup");
    let status = std::process::Command::new("rustup")
        .args(["target", "add", target])
        .status()?;
    if !status.success() {
        bail!("`rustup target add {target}` failed");
    }
    Ok(())
}

/// `cargo xtask check`: validate manifests (default: every bundled package).
pub(crate) fn check_manifests(dirs: &[PathBuf]) -> Result<()> {
    let dirs: Vec<PathBuf> = if dirs.is_empty() {
        guests::discover()?
            .into_iter()
            .filter(|g| g.bundle)
            .map(|g| g.package_dir)
            .collect()
    } else {
        dirs.to_vec()
    };
    crate::check::packages(&dirs)
}

/// A path relative to the repository root, for messages.
fn rel(path: &Path) -> String {
    path.strip_prefix(workspace::root())
        .unwrap_or(path)
        .display()
        .to_string()
}
