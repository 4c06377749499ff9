//! `warden sign <dir> --key FILE` and `warden verify <path>`: minisign
//! signatures over a package's digest list (its `SHA256SUMS`), see
//! [`warden_host::signature`].

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use warden_host::signature::{self, SIGNATURE_FILE};
use warden_host::{PackageSource, SignatureStatus};

use super::Context;
use crate::render;

/// The environment variable a signing key's password is read from.
const PASSWORD_ENV: &str = "WARDEN_SIGNING_KEY_PASSWORD";

/// Run `warden sign`.
pub(crate) fn sign(cx: &Context, dir: &Path, key: &Path) -> Result<ExitCode> {
    if !dir.is_dir() {
        bail!(
            "{}: not a package directory (sign the directory `cargo xtask bundle` packed)",
            dir.display()
        );
    }
    let host = cx.host()?;
    // Read as the deployment's own would be: signing vouches for content,
    // whatever trust it asks for.
    let options = host
        .validation()
        .clone()
        .source(warden_manifest::Source::Bundled);
    let loaded = warden_host::load_package(&PackageSource::Dir(dir.to_path_buf()), &options)?;
    // What is signed is the digest list; the package's own SHA256SUMS must
    // be it, so `minisign -Vm SHA256SUMS` checks the same bytes.
    let list = signature::digest_list(&loaded.files);
    let sums = std::fs::read(dir.join("SHA256SUMS")).unwrap_or_default();
    if sums != list.as_bytes() {
        bail!(
            "{}: its SHA256SUMS does not list exactly the files the package is read with \
             (run `cargo xtask bundle` first): the signature signs that file",
            dir.display()
        );
    }
    let key_file = std::fs::read_to_string(key)
        .with_context(|| format!("reading the signing key {}", key.display()))?;
    let password = std::env::var(PASSWORD_ENV).ok();
    let text = signature::sign(&loaded.files, &loaded.package.id, &key_file, password)?;
    let path = dir.join(SIGNATURE_FILE);
    std::fs::write(&path, &text).with_context(|| format!("writing {}", path.display()))?;
    let mut files = loaded.files.clone();
    files.insert(SIGNATURE_FILE.to_owned(), text.into_bytes());
    let key_id = match signature::check(&files, &[]) {
        SignatureStatus::UnknownKey { key_id } => key_id,
        other => bail!("the signature just written does not read back: {other:?}"),
    };
    if cx.json {
        render::json(&serde_json::json!({
            "signed": loaded.package.id, "digest": loaded.digest,
            "key_id": key_id, "signature": path,
        }));
    } else {
        out!(
            "signed {} (digest {}) with key {key_id}\n  -> {}",
            render::escape(&loaded.package.id),
            loaded.digest,
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Run `warden verify`.
pub(crate) async fn verify(cx: &Context, path: &Path) -> Result<ExitCode> {
    let host = cx.host()?;
    let options = host
        .validation()
        .clone()
        .source(warden_manifest::Source::Bundled);
    let source = super::registry::source(&host, path).await?;
    let loaded = warden_host::load_package(&source, &options)?;
    let signers = cx.settings.signers()?;
    let status = signature::check(&loaded.files, &signers);
    if cx.json {
        render::json(&serde_json::json!({
            "package": loaded.package.id, "digest": loaded.digest, "signature": status,
        }));
    } else {
        out!(
            "{} {} (digest {}): {}",
            render::escape(&loaded.package.id),
            render::escape(&loaded.package.version),
            loaded.digest,
            render::escape(&status.describe())
        );
        if let SignatureStatus::Signed { comment, .. } = &status {
            out!("  signed comment: {}", render::escape(comment));
        }
    }
    Ok(match status {
        SignatureStatus::Signed { .. } => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}
