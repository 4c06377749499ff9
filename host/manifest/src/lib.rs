//! Parse and validate v3 extension manifests into a resolved package model (no wasmtime).
//!
//! A package is a directory (or an in-memory bundle) with a `manifest.toml` in
//! the `reborn.extension_manifest.v3` format, JSON schemas and prompt docs.
//! [`load_package`] checks every rule at once and returns either a resolved
//! [`Package`] — capabilities with parsed schemas, prompt text, credentials,
//! network targets, effects and gate matrix — or [`Diagnostics`] naming the
//! file, TOML path, line and column of each problem, with a help line.
//!
//! The rules are those of the real format (`V3-FORMAT.md`): what its parser
//! accepts passes, what it refuses is refused. [`ValidationOptions::source`]
//! says where the package comes from ([`Source`]: bundled, installed, user),
//! which gates the bundled-only and user-only features. Repository review
//! rules are [`lints`] (warnings), and [`Package::unsupported_lane`] names
//! what a manifest declares that Warden does not run (install refuses it).
//! Warden adds one refusal of its own: control characters in manifest text.
//!
//! ```
//! use warden_manifest::{MemFiles, ValidationOptions, load_from_files};
//!
//! let manifest = r#"
//! schema_version = "reborn.extension_manifest.v3"
//! id = "echo"
//! name = "Echo"
//! version = "0.1.0"
//! description = "Echoes its input."
//!
//! [runtime]
//! kind = "wasm"
//! module = "wasm/echo.wasm"
//!
//! [[tools]]
//! id = "echo.say"
//! description = "Echo a message."
//! default_permission = "allow"
//! origin_gate_matrix = { loop_run = "gated_unless_granted" }
//! input_schema_ref = "schemas/say.json"
//! prompt_doc_ref = "prompts/say.md"
//! "#;
//! let files = MemFiles::new()
//!     .with("schemas/say.json", r#"{"type": "object", "additionalProperties": false}"#)
//!     .with("prompts/say.md", "Say something.");
//! let package = load_from_files("manifest.toml", manifest.as_bytes(), "echo".as_ref(), &files, &ValidationOptions::default())
//!     .expect("valid");
//! assert_eq!(package.capabilities[0].id, "echo.say");
//! println!("{}", warden_manifest::summary(&package));
//! ```

mod diag;
mod files;
mod lints;
mod model;
mod options;
mod reader;
mod rules;
mod span;
pub mod standard;
mod summary;
mod surfaces;
mod unsupported;

use std::path::Path;

pub use diag::{Code, Diagnostic, Diagnostics};
pub use files::{DirFiles, MemFiles, PackageFiles};
pub use lints::{Lint, LintCode, lints};
pub use model::{
    AdminConfiguration, AdminField, AssetRefs, Capability, Implementation, McpServer, Package,
    ToolLimits, Trust,
};
pub use options::{
    DEFAULT_MAX_MANIFEST_BYTES, MAX_PROMPT_BYTES, MAX_REFERENCED_BYTES, MAX_SCHEMA_BYTES,
    RESERVED_ID_PREFIXES, Source, USER_ID_PREFIX, ValidationOptions,
};
pub use rules::{SCHEMA_VERSION, https_endpoint};
pub use summary::summary;
pub use unsupported::{Unsupported, refusal};

use diag::Sink;
use span::At;

/// Load and validate the package in directory `dir` (its `manifest.toml` and referenced files).
pub fn load_package(dir: &Path, opts: &ValidationOptions) -> Result<Package, Diagnostics> {
    let path = files::manifest_path(dir);
    let name = path.display().to_string();
    let files = DirFiles::new(dir);
    match files.read("manifest.toml", opts.max_manifest_bytes) {
        Ok(bytes) => load_from_files(&name, &bytes, dir, &files, opts),
        Err(e) => {
            let mut sink = Sink::new(&name, "");
            sink.error(
                Code::ManifestUnreadable,
                &At::root(),
                format!("cannot read the manifest: {e}"),
            );
            Err(sink.finish())
        }
    }
}

/// Validate a package whose manifest is `manifest` (named `manifest_name` in
/// diagnostics) and whose other files `files` reads; `root` is recorded as
/// [`Package::root`]. This is the entry point for bundles held in memory.
pub fn load_from_files(
    manifest_name: &str,
    manifest: &[u8],
    root: &Path,
    files: &dyn PackageFiles,
    opts: &ValidationOptions,
) -> Result<Package, Diagnostics> {
    let text = match std::str::from_utf8(manifest) {
        Ok(text) => text,
        Err(e) => {
            let valid = std::str::from_utf8(&manifest[..e.valid_up_to()]).unwrap_or("");
            let mut sink = Sink::new(manifest_name, valid);
            let at = At {
                path: String::new(),
                span: valid.len()..valid.len(),
            };
            sink.error(
                Code::ManifestNotUtf8,
                &at,
                "the manifest is not valid UTF-8",
            );
            return Err(sink.finish());
        }
    };
    let mut sink = Sink::new(manifest_name, text);
    if manifest.len() > opts.max_manifest_bytes {
        sink.error(
            Code::ManifestTooLarge,
            &At::root(),
            format!(
                "the manifest is larger than {} bytes",
                opts.max_manifest_bytes
            ),
        );
        return Err(sink.finish());
    }
    let (doc, errors) = toml::de::DeTable::parse_recoverable(text);
    if !errors.is_empty() {
        for e in errors {
            let span = e.span().unwrap_or(0..0);
            sink.error(
                Code::TomlSyntax,
                &At {
                    path: String::new(),
                    span,
                },
                e.message().trim().to_owned(),
            );
        }
        return Err(sink.finish());
    }
    let mut cx = rules::Ctx::new(sink, opts, files);
    let package = rules::check_document(doc.get_ref(), root.to_path_buf(), &mut cx);
    let sink = cx.into_sink();
    if sink.has_errors() {
        Err(sink.finish())
    } else {
        Ok(package)
    }
}
