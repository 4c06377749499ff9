//! `warden install <dir|archive>`: validate, compile, and keep a copy in the data dir.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use warden_host::PackageSource;

use super::Context;
use crate::render;

/// Run `warden install`.
pub(crate) fn run(cx: &Context, path: &Path) -> Result<ExitCode> {
    let host = cx.host()?;
    let source = PackageSource::from_path(path);
    let loaded = warden_host::load_package(&source, host.validation())?;
    let id = loaded.package.id.clone();
    // Compile before copying, so a package that cannot run is never installed.
    let location = host.open_location(&cx.location);
    location.install(&source)?;

    let target = cx.packages_dir().join(&id);
    let staging = cx.packages_dir().join(format!(".{id}.installing"));
    let _ = std::fs::remove_dir_all(&staging);
    for (rel, bytes) in &loaded.files {
        let file = staging.join(rel);
        std::fs::create_dir_all(file.parent().expect("a file has a parent"))
            .with_context(|| format!("creating {}", staging.display()))?;
        std::fs::write(&file, bytes).with_context(|| format!("writing {}", file.display()))?;
    }
    let _ = std::fs::remove_dir_all(&target);
    std::fs::rename(&staging, &target)
        .with_context(|| format!("installing into {}", target.display()))?;
    let summary = warden_manifest::summary(&loaded.package);
    if cx.json {
        render::json(&serde_json::json!({ "installed": id, "dir": target, "summary": summary }));
    } else {
        println!("installed {summary}\n  -> {}", target.display());
    }
    Ok(ExitCode::SUCCESS)
}
