//! The v3 rules. [`check_document`] walks the whole tree, records every
//! problem in the [`Sink`], and builds the resolved [`Package`] as it goes;
//! the caller keeps the package only when no problem was recorded.

mod assets;
mod auth;
mod credential;
mod gate;
mod mcp;
pub(crate) mod standard_op;
mod surfaces;
mod text;
mod tool;
mod words;

pub use words::https_url as https_endpoint;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use toml::de::{DeTable, DeValue};

use crate::diag::{Code, Sink};
use crate::files::PackageFiles;
use crate::model::{Implementation, Package, Trust};
use crate::options::{RESERVED_ID_PREFIXES, Source, USER_ID_PREFIX, ValidationOptions};
use crate::reader::Table;
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
    "admin_configuration",
    "memory",
    "channel",
    // Legacy shapes, refused with their own diagnostic.
    "host_api",
    "capability_provider",
    "capabilities",
];
const RUNTIME: &[&str] = &["kind", "module", "service"];

/// State shared by the rules while one manifest is checked.
pub(crate) struct Ctx<'s, 'f> {
    pub(crate) sink: Sink<'s>,
    pub(crate) opts: &'f ValidationOptions,
    pub(crate) files: &'f dyn PackageFiles,
    /// The extension id when it is valid (empty otherwise), to check capability prefixes.
    pub(crate) ext_id: String,
    /// Vendors of tool and MCP credentials, which need a recipe.
    pub(crate) vendor_uses: Vec<L<String>>,
    /// Every vendor any credential names.
    pub(crate) vendors_referenced: BTreeSet<String>,
    /// Whether the manifest has an `[mcp]` table (its `[[tools]]` are pinned).
    pub(crate) mcp: bool,
    /// Whether the manifest has a `[memory]` table (opens `ironclaw.memory.*` ids).
    pub(crate) memory: bool,
    /// `standard_op`s bound so far, with where.
    pub(crate) standard_ops: BTreeMap<String, At>,
    /// Bytes of schemas and prompt docs referenced so far, each reference
    /// counted (see [`crate::options::MAX_REFERENCED_BYTES`]).
    pub(crate) referenced_bytes: usize,
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
            mcp: false,
            memory: false,
            standard_ops: BTreeMap::new(),
            referenced_bytes: 0,
        }
    }

    /// Give the sink back.
    pub(crate) fn into_sink(self) -> Sink<'s> {
        self.sink
    }

    /// Record that `what` at `at` needs another package source than the one checked.
    fn tier(&mut self, at: &At, what: String, needs: Source) {
        let got = self.opts.source;
        self.sink
            .error(
                Code::SourceTier,
                at,
                format!(
                    "{what} is only allowed in a {} package; this one is checked as {}",
                    needs.as_str(),
                    got.as_str()
                ),
            )
            .help(format!(
                "remove it, or check with `--as {}` if the package is {}",
                needs.as_str(),
                match needs {
                    Source::Bundled => "built into the host",
                    Source::User => "registered by the user",
                    Source::Installed => "installed",
                }
            ));
    }
}

/// Check the whole document and build the package (meaningful only without errors).
pub(crate) fn check_document(doc: &DeTable<'_>, root: PathBuf, cx: &mut Ctx<'_, '_>) -> Package {
    let t = Table::new(doc, At::root(), ROOT);
    legacy(&t, cx);
    text::check_controls(&t, cx);
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
    let id = t.req_str(sink, "id");
    if let Some(id) = &id {
        match words::id_problem(&id.v) {
            Some(problem) => {
                sink.error(
                    Code::InvalidId,
                    &id.at,
                    format!("extension id `{}` {problem}", id.v),
                );
            }
            // Capability prefixes are checked only against a valid extension id.
            None => cx.ext_id = id.v.clone(),
        }
        let source = cx.opts.source;
        if let Some(prefix) = RESERVED_ID_PREFIXES.iter().find(|p| id.v.starts_with(*p))
            && source != Source::Bundled
        {
            cx.tier(&id.at, format!("the id prefix `{prefix}`"), Source::Bundled);
        }
        if id.v.starts_with(USER_ID_PREFIX) && source != Source::User {
            cx.tier(
                &id.at,
                format!("the id prefix `{USER_ID_PREFIX}`"),
                Source::User,
            );
        }
    }
    let name = non_blank(&t, cx, "name");
    let description = non_blank(&t, cx, "description");
    let version = non_blank(&t, cx, "version");
    let requested_trust = match t.str(&mut cx.sink, "trust") {
        None => Trust::Untrusted,
        Some(w) => {
            let trust = trust(&mut cx.sink, &w);
            if trust.is_bundled_only() && cx.opts.source != Source::Bundled {
                cx.tier(&w.at, format!("trust = \"{trust}\""), Source::Bundled);
            }
            trust
        }
    };
    cx.mcp = t.has("mcp");
    let memory = surfaces::check_memory(&t, cx);
    cx.memory = memory;
    let channel = surfaces::check_channel(&t, cx);
    if let (Some((_, at)), true) = (t.get("channel"), cx.mcp) {
        cx.sink.error(
            Code::Implementation,
            &at,
            "[channel] and [mcp] are mutually exclusive",
        );
    }
    let implementation = implementation(&t, cx);
    if let Some((_, at)) = t.get("memory")
        && !matches!(implementation, Some(Implementation::FirstParty { .. }))
    {
        cx.sink.error(
            Code::Memory,
            &at,
            "a [memory] surface needs [runtime] kind = \"first_party\"",
        );
    }
    let admin_configuration = surfaces::check_admin(&t, cx);
    if let Some((_, at)) = t.get("admin_configuration")
        && cx.opts.source != Source::Bundled
    {
        cx.tier(&at, "[admin_configuration]".to_owned(), Source::Bundled);
    }
    let auth = auth::check_recipes(&t, cx);
    let capabilities = tool::check_tools(&t, cx);
    if let Some(Implementation::Mcp(mcp)) = &implementation
        && let Some(clash) = capabilities
            .iter()
            .find(|c| c.id == format!("{}.mcp_server", mcp.namespace))
        && let Some(tables) = t.get("tools")
    {
        cx.sink.error(
            Code::DuplicateCapability,
            &tables.1,
            format!(
                "capability id `{}` is taken by the MCP server's template",
                clash.id
            ),
        );
    }
    auth::cross_check(&auth, cx);
    t.finish(&mut cx.sink);
    Package {
        id: id.map(|i| i.v).unwrap_or_default(),
        name,
        version,
        description,
        requested_trust,
        implementation: implementation.unwrap_or(Implementation::FirstParty {
            service: String::new(),
        }),
        root,
        capabilities,
        auth: auth.valid,
        admin_configuration,
        memory,
        channel,
    }
}

/// A required string that must not be blank after trimming.
pub(crate) fn non_blank(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, key: &str) -> String {
    let Some(v) = t.req_str(&mut cx.sink, key) else {
        return String::new();
    };
    if v.v.trim().is_empty() {
        cx.sink
            .error(Code::EmptyValue, &v.at, format!("`{key}` is blank"));
    }
    v.v
}

fn trust(sink: &mut Sink<'_>, w: &L<String>) -> Trust {
    match Trust::ALL.iter().find(|t| t.as_str() == w.v) {
        Some(t) => *t,
        None => {
            sink.error(Code::UnknownValue, &w.at, format!("unknown trust `{}`", w.v))
                .help("use one of: `untrusted` `third_party` `first_party_requested` `system_requested` (a request; the host decides effective trust)");
            Trust::Untrusted
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
    let service = rt.str(sink, "service");
    rt.finish(sink);
    match kind?.v.as_str() {
        "wasm" => {
            if let Some(service) = &service {
                sink.error(
                    Code::Runtime,
                    &service.at,
                    "a wasm runtime has no `service`",
                );
            }
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
            if let Some(module) = &module {
                sink.error(
                    Code::Runtime,
                    &module.at,
                    "a first_party runtime has no `module`",
                );
            }
            let Some(service) = service else {
                rt.missing(sink, "service");
                return None;
            };
            if cx.opts.source != Source::Bundled {
                let at = rt.get("kind").map_or(rt.at.clone(), |(_, at)| at);
                cx.tier(
                    &at,
                    "[runtime] kind = \"first_party\"".to_owned(),
                    Source::Bundled,
                );
            }
            Some(Implementation::FirstParty { service: service.v })
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
