//! The v3 rules. [`check_document`] walks the whole tree, records every
//! problem in the [`Sink`], and builds the resolved [`Package`] as it goes;
//! the caller keeps the package only when no problem was recorded.

mod assets;
mod auth;
mod credential;
mod gate;
mod mcp;
mod tool;
mod words;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use toml::de::{DeTable, DeValue};
use warden_core::spec::CredentialSpec;

use crate::diag::{Code, Sink};
use crate::files::PackageFiles;
use crate::model::{Implementation, Package, Trust};
use crate::options::ValidationOptions;
use crate::reader::{Table, wrong_type};
use crate::span::{At, L};

/// The only accepted `schema_version`.
pub const SCHEMA_VERSION: &str = "reborn.extension_manifest.v3";

const ROOT: &[&str] = &[
    "schema_version",
    "id",
    "name",
    "version",
    "description",
    "trust",
    "metadata",
    "runtime",
    "mcp",
    "tools",
    "auth",
    // Legacy shapes, refused with their own diagnostic.
    "host_api",
    "capability_provider",
    "capabilities",
];
const RUNTIME: &[&str] = &["kind", "module"];

/// State shared by the rules while one manifest is checked.
pub(crate) struct Ctx<'s, 'f> {
    pub(crate) sink: Sink<'s>,
    pub(crate) opts: &'f ValidationOptions,
    pub(crate) files: &'f dyn PackageFiles,
    /// The extension id when it is valid (empty otherwise), to check capability prefixes.
    pub(crate) ext_id: String,
    /// Vendors of `[[tools.credentials]]`, which need a recipe.
    pub(crate) vendor_uses: Vec<L<String>>,
    /// Every vendor any credential names.
    pub(crate) vendors_referenced: BTreeSet<String>,
    /// The first declaration of each handle in the package.
    pub(crate) handles: BTreeMap<String, (CredentialSpec, At)>,
}

impl std::fmt::Debug for Ctx<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("ext_id", &self.ext_id)
            .finish_non_exhaustive()
    }
}

impl<'s, 'f> Ctx<'s, 'f> {
    pub(crate) fn new(
        sink: Sink<'s>,
        opts: &'f ValidationOptions,
        files: &'f dyn PackageFiles,
    ) -> Self {
        Ctx {
            sink,
            opts,
            files,
            ext_id: String::new(),
            vendor_uses: Vec::new(),
            vendors_referenced: BTreeSet::new(),
            handles: BTreeMap::new(),
        }
    }

    /// Give the sink back.
    pub(crate) fn into_sink(self) -> Sink<'s> {
        self.sink
    }
}

/// Check the whole document and build the package (meaningful only without errors).
pub(crate) fn check_document(doc: &DeTable<'_>, root: PathBuf, cx: &mut Ctx<'_, '_>) -> Package {
    let t = Table::new(doc, At::root(), ROOT);
    legacy(&t, cx);
    let sink = &mut cx.sink;
    if let Some(v) = t.req_str(sink, "schema_version")
        && v.v != SCHEMA_VERSION
    {
        sink.error(
            Code::SchemaVersion,
            &v.at,
            format!("unsupported schema_version `{}`", v.v),
        );
    }
    let mut valid_id = false;
    let id = t.req_str(sink, "id").map(|id| {
        match words::id_problem(&id.v) {
            Some(problem) => {
                sink.error(
                    Code::InvalidId,
                    &id.at,
                    format!("extension id `{}` {problem}", id.v),
                );
            }
            None => valid_id = true,
        }
        id.v
    });
    // Capability prefixes are checked only against a valid extension id.
    if valid_id {
        cx.ext_id = id.clone().unwrap_or_default();
    }
    let name = non_empty(&t, cx, "name");
    let description = non_empty(&t, cx, "description");
    let sink = &mut cx.sink;
    let version = t.req_str(sink, "version").map(|v| {
        if !words::is_semver(&v.v) {
            sink.error(
                Code::InvalidVersion,
                &v.at,
                format!("version `{}` is not MAJOR.MINOR.PATCH", v.v),
            );
        }
        v.v
    });
    let requested_trust = t
        .str(sink, "trust")
        .map_or(Trust::ThirdParty, |w| trust(sink, &w));
    if let Some((v, at)) = t.get("metadata")
        && !v.get_ref().is_table()
    {
        wrong_type(sink, &at, "a table", v.get_ref());
    }
    let implementation = implementation(&t, cx);
    let auth = auth::check_recipes(&t, cx);
    let capabilities = tool::check_tools(&t, cx);
    if matches!(
        implementation,
        Some(Implementation::Wasm { .. } | Implementation::FirstParty)
    ) && capabilities.is_empty()
        && !t.has("tools")
    {
        cx.sink
            .error(Code::NoTools, &t.at, "the package declares no [[tools]]");
    }
    auth::cross_check(&auth, cx);
    t.finish(&mut cx.sink);
    Package {
        id: id.unwrap_or_default(),
        name,
        version: version.unwrap_or_default(),
        description,
        requested_trust,
        implementation: implementation.unwrap_or(Implementation::FirstParty),
        root,
        capabilities,
        auth: auth.valid,
    }
}

fn non_empty(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, key: &str) -> String {
    let Some(v) = t.req_str(&mut cx.sink, key) else {
        return String::new();
    };
    if v.v.trim().is_empty() {
        cx.sink
            .error(Code::EmptyValue, &v.at, format!("`{key}` is empty"));
    }
    v.v
}

fn trust(sink: &mut Sink<'_>, w: &L<String>) -> Trust {
    match Trust::ALL.iter().find(|t| t.as_str() == w.v) {
        Some(t) => *t,
        None => {
            sink.error(Code::UnknownValue, &w.at, format!("unknown trust `{}`", w.v))
                .help("use one of: `third_party` `first_party` `system` (a request; the host decides effective trust)");
            Trust::ThirdParty
        }
    }
}

fn legacy(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) {
    for (key, shape) in [
        ("host_api", "[[host_api]]"),
        ("capability_provider", "[capability_provider.tools]"),
        ("capabilities", "top-level [[capabilities]]"),
    ] {
        if let Some((v, at)) = t.get(key) {
            let shape = if key == "capability_provider"
                && !matches!(v.get_ref(), DeValue::Table(t) if t.iter().any(|(k, _)| k.get_ref() == "tools"))
            {
                "[capability_provider]"
            } else {
                shape
            };
            cx.sink
                .error(
                    Code::LegacyShape,
                    &at,
                    format!("{shape} is a legacy manifest shape; v3 refuses it"),
                )
                .help("use [[tools]] entries, each with an origin_gate_matrix");
        }
    }
}

fn implementation(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<Implementation> {
    let runtime = t.table(&mut cx.sink, "runtime", RUNTIME);
    let mcp = t.get("mcp");
    match (&runtime, &mcp) {
        (None, None) if !t.has("runtime") => {
            cx.sink.error(
                Code::Implementation,
                &t.at,
                "the manifest declares no implementation",
            );
            return None;
        }
        (Some(_), Some((_, at))) => {
            cx.sink.error(
                Code::Implementation,
                at,
                "the manifest declares both [runtime] and [mcp]",
            );
        }
        _ => {}
    }
    if let Some((v, at)) = mcp {
        return mcp::check_mcp(v, at, cx).map(Implementation::Mcp);
    }
    let rt = runtime?;
    let sink = &mut cx.sink;
    let kind = rt.req_str(sink, "kind");
    let module = rt.str(sink, "module");
    rt.finish(sink);
    match kind?.v.as_str() {
        "wasm" => {
            let Some(module) = module else {
                rt.missing(sink, "module");
                return None;
            };
            if assets::check_ref(cx, &module)
                && cx.opts.require_module
                && !cx.files.exists(&module.v)
            {
                cx.sink.error(
                    Code::ModuleMissing,
                    &module.at,
                    format!("module `{}` does not exist", module.v),
                );
            }
            Some(Implementation::Wasm { module: module.v })
        }
        "first_party" => {
            if let Some(module) = module {
                sink.error(
                    Code::Runtime,
                    &module.at,
                    "a first_party runtime has no `module`",
                );
            }
            Some(Implementation::FirstParty)
        }
        other => {
            let at = rt.get("kind").map(|(_, at)| at).unwrap_or(rt.at.clone());
            sink.error(
                Code::UnknownValue,
                &at,
                format!("unknown runtime kind `{other}`"),
            )
            .help("use kind = \"wasm\" or kind = \"first_party\" (hosted MCP uses an [mcp] table)");
            None
        }
    }
}
