//! Embed every bundled package (`packages/*/` with a `SHA256SUMS` written by
//! `cargo xtask bundle`) with `include_bytes!`, recording each file's digest.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let packages = root.join("packages");
    println!("cargo:rerun-if-changed={}", packages.display());
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&packages)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("manifest.toml").is_file())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();

    let mut code = String::from(
        "/// The packages built into this binary.\npub static PACKAGES: &[EmbeddedPackage] = &[\n",
    );
    let mut missing = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(sums) = std::fs::read_to_string(dir.join("SHA256SUMS")) else {
            missing.push(name);
            continue;
        };
        writeln!(code, "    EmbeddedPackage {{ name: {name:?}, files: &[").unwrap();
        for line in sums.lines() {
            let Some((digest, rel)) = line.split_once("  ") else {
                panic!(
                    "{}: malformed line {line:?}",
                    dir.join("SHA256SUMS").display()
                );
            };
            let path = dir.join(rel).canonicalize().unwrap_or_else(|e| {
                panic!("{}/{rel}: {e}; run `cargo xtask bundle`", dir.display())
            });
            writeln!(
                code,
                "        EmbeddedFile {{ path: {rel:?}, sha256: {digest:?}, bytes: include_bytes!({:?}) }},",
                path.display().to_string()
            )
            .unwrap();
        }
        code.push_str("    ] },\n");
    }
    code.push_str("];\n");
    writeln!(
        code,
        "/// Packages found without a `SHA256SUMS` (not bundled when this was built)."
    )
    .unwrap();
    writeln!(code, "pub static UNBUILT: &[&str] = &{missing:?};").unwrap();
    if !missing.is_empty() {
        println!(
            "cargo:warning=packages not bundled yet ({}): run `cargo xtask bundle`",
            missing.join(", ")
        );
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("bundle.rs");
    std::fs::write(out, code).unwrap();
}
