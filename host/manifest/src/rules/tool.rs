//! `[[tools]]`: ids, effects, permissions, `resource_profile`, `standard_op`
//! and the rules of pinned tools under `[mcp]`; delegates gates, credentials
//! and assets.

use std::collections::BTreeMap;

use warden_core::{Effect, Permission, Visibility};

use super::{Ctx, assets, credential, gate, standard_op, words};
use crate::diag::Code;
use crate::model::{Capability, ToolLimits};
use crate::reader::Table;
use crate::span::{At, L};

const TOOL: &[&str] = &[
    "id",
    "description",
    "effects",
    "default_permission",
    "visibility",
    "origin_gate_matrix",
    "input_schema_ref",
    "output_schema_ref",
    "prompt_doc_ref",
    "standard_op",
    "credentials",
    "network_targets",
    "max_egress_bytes",
    "resource_profile",
];
/// Keys a pinned tool of an `[mcp]` manifest may not declare (it inherits
/// them from the server, or they make no sense for a remote tool).
const NOT_ON_PINNED: &[&str] = &[
    "credentials",
    "network_targets",
    "max_egress_bytes",
    "output_schema_ref",
    "resource_profile",
    "standard_op",
];
/// Where the memory lane's tools live.
pub(super) const MEMORY_NAMESPACE: &str = "ironclaw.memory.";

/// Check every `[[tools]]` entry.
pub(super) fn check_tools(root: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Vec<Capability> {
    let mut seen: BTreeMap<String, At> = BTreeMap::new();
    root.tables(&mut cx.sink, "tools", TOOL)
        .iter()
        .map(|t| check_tool(t, cx, &mut seen))
        .collect()
}

fn check_tool(
    t: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    seen: &mut BTreeMap<String, At>,
) -> Capability {
    let id = t.req_str(&mut cx.sink, "id");
    if let Some(id) = &id {
        capability_id(cx, id, seen);
    }
    let id = id.map(|i| i.v).unwrap_or_default();
    let op = standard_op::check(t, cx, &id);
    let description = match (&op, t.req_str(&mut cx.sink, "description")) {
        (_, None) => String::new(),
        // A standard_op tool's description is an addendum to the host's text.
        (Some(op), Some(d)) => op.v.describe(&d.v),
        (None, Some(d)) => {
            if d.v.trim().is_empty() {
                cx.sink
                    .error(Code::EmptyValue, &d.at, "`description` is blank");
            }
            d.v
        }
    };
    let effects = effects(t, cx, false);
    let sink = &mut cx.sink;
    if !t.has("default_permission") {
        t.missing(sink, "default_permission");
    }
    let default_permission = t
        .str(sink, "default_permission")
        .and_then(|p| words::word::<Permission>(sink, &p))
        .unwrap_or(Permission::Ask);
    let visibility = t
        .str(sink, "visibility")
        .and_then(|v| words::word::<Visibility>(sink, &v))
        .unwrap_or(Visibility::Model);
    if cx.mcp {
        pinned(t, cx, &effects);
    }
    if let Some(op) = &op {
        standard_op::check_effects(cx, op, &effects);
    }
    let origin_gate_matrix = gate::check_matrix(t, cx);
    let assets = assets::check_tool_assets(t, cx, op.is_some());
    let credentials = credential::check_tool_credentials(t, cx);
    let network_targets = credential::check_network_targets(t, cx);
    let max_egress_bytes = t.u64(&mut cx.sink, "max_egress_bytes").map(|n| n.v);
    let has = |e: Effect| effects.v.contains(&e);
    if let Some((_, at)) = t.get("credentials").filter(|_| !credentials.is_empty())
        && !has(Effect::UseSecret)
    {
        cx.sink.error(
            Code::CredentialRequiresUseSecret,
            &at,
            format!("`{id}` declares credentials but its effects lack `use_secret`"),
        );
    }
    if let Some((_, at)) = t
        .get("network_targets")
        .filter(|_| !network_targets.is_empty())
        && !has(Effect::Network)
    {
        cx.sink.error(
            Code::RequiresNetwork,
            &at,
            format!("`{id}` declares `network_targets` but its effects lack `network`"),
        );
    }
    let limits = resource_profile(t, cx);
    t.finish(&mut cx.sink);
    // A bound op's schemas are the host's (the tool may declare none).
    let (input_schema, output_schema) = match &op {
        Some(op) => (Some(op.v.input_schema()), Some(op.v.output_schema())),
        None => (assets.input_schema, assets.output_schema),
    };
    Capability {
        id,
        description,
        effects: effects.v,
        default_permission,
        visibility,
        origin_gate_matrix,
        standard_op: op.map(|o| o.v.name.to_owned()),
        input_schema,
        output_schema,
        prompt: assets.prompt,
        refs: assets.refs,
        credentials,
        network_targets,
        max_egress_bytes,
        limits,
        mcp_pinned: cx.mcp,
    }
}

/// The rules of a pinned tool under `[mcp]`.
fn pinned(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, effects: &L<Vec<Effect>>) {
    for key in NOT_ON_PINNED {
        if let Some((_, at)) = t.get(key) {
            cx.sink
                .error(
                    Code::McpPinnedTool,
                    &at,
                    format!("a pinned tool of an [mcp] manifest may not declare `{key}`"),
                )
                .help("remove it; pinned tools inherit the server's credentials, effects and gate matrix");
        }
    }
    if !effects.v.is_empty() {
        cx.sink
            .error(
                Code::McpPinnedTool,
                &effects.at,
                "a pinned tool of an [mcp] manifest may not declare effects",
            )
            .help("declare effects on [mcp]; pinned tools inherit them");
    }
}

fn capability_id(cx: &mut Ctx<'_, '_>, id: &L<String>, seen: &mut BTreeMap<String, At>) {
    let sink = &mut cx.sink;
    if let Some(problem) = words::capability_problem(&id.v) {
        sink.error(
            Code::CapabilityId,
            &id.at,
            format!("capability id `{}` {problem}", id.v),
        );
    } else if !cx.ext_id.is_empty() {
        let under = |prefix: &str| {
            id.v.strip_prefix(prefix)
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|local| !local.is_empty())
        };
        let memory = cx.memory
            && id
                .v
                .strip_prefix(MEMORY_NAMESPACE)
                .is_some_and(|local| !local.is_empty());
        if !under(&cx.ext_id) && !memory {
            sink.error(
                Code::CapabilityId,
                &id.at,
                format!(
                    "capability id `{}` does not start with `{}.`",
                    id.v, cx.ext_id
                ),
            )
            .help(format!("name it `{}.<name>`", cx.ext_id));
        }
    }
    if let Some(first) = seen.get(&id.v) {
        sink.error(
            Code::DuplicateCapability,
            &id.at,
            format!("capability id `{}` is declared twice", id.v),
        )
        .note(format!("first declared at `{}`", first.path));
    } else {
        seen.insert(id.v.clone(), id.at.clone());
    }
}

/// Parse `effects` against the vocabulary, rejecting duplicates; absent is
/// empty unless `required`.
pub(super) fn effects(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, required: bool) -> L<Vec<Effect>> {
    let sink = &mut cx.sink;
    if required && !t.has("effects") {
        t.missing(sink, "effects");
    }
    let Some(list) = t.str_array(sink, "effects") else {
        return L {
            v: Vec::new(),
            at: t.at.clone(),
        };
    };
    let mut out: Vec<Effect> = Vec::new();
    for word in &list.v {
        match word.v.parse::<Effect>() {
            Ok(e) if out.contains(&e) => {
                sink.error(
                    Code::DuplicateEffect,
                    &word.at,
                    format!("effect `{e}` is listed twice"),
                );
            }
            Ok(e) => out.push(e),
            Err(e) => {
                sink.error(
                    Code::UnknownEffect,
                    &word.at,
                    format!("unknown effect `{}`", word.v),
                )
                .note(format!("expected one of: {}", e.expected.trim_end()));
            }
        }
    }
    L {
        v: out,
        at: list.at,
    }
}

/// `resource_profile` (its tables ignore unknown keys): type-checks the
/// numbers and maps `hard_ceiling` onto the limits the runtime enforces.
fn resource_profile(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> ToolLimits {
    const PROFILE: &[&str] = &["default_estimate", "hard_ceiling"];
    const ESTIMATE: &[&str] = &[
        "usd",
        "input_tokens",
        "output_tokens",
        "wall_clock_ms",
        "output_bytes",
        "network_egress_bytes",
        "process_count",
        "concurrency_slots",
    ];
    const CEILING: &[&str] = &[
        "max_usd",
        "max_input_tokens",
        "max_output_tokens",
        "max_wall_clock_ms",
        "max_output_bytes",
        "sandbox",
    ];
    const SANDBOX: &[&str] = &[
        "cpu_time_ms",
        "memory_bytes",
        "disk_bytes",
        "network_egress_bytes",
        "process_count",
    ];
    let mut limits = ToolLimits::default();
    let Some(p) = t.table(&mut cx.sink, "resource_profile", PROFILE) else {
        return limits;
    };
    if !p.has("default_estimate") {
        p.missing(&mut cx.sink, "default_estimate");
    }
    if let Some(e) = p.table(&mut cx.sink, "default_estimate", ESTIMATE) {
        numbers(&e, cx, ESTIMATE);
    }
    if let Some(h) = p.table(&mut cx.sink, "hard_ceiling", CEILING) {
        numbers(&h, cx, &CEILING[..5]);
        limits.timeout_ms = h.u64(&mut cx.sink, "max_wall_clock_ms").map(|v| v.v);
        limits.max_output_bytes = h.u64(&mut cx.sink, "max_output_bytes").map(|v| v.v);
        if let Some(s) = h.table(&mut cx.sink, "sandbox", SANDBOX) {
            numbers(&s, cx, SANDBOX);
            limits.memory_bytes = s.u64(&mut cx.sink, "memory_bytes").map(|v| v.v);
        }
    }
    limits
}

/// Type-check the numeric `keys` of `t`: `usd`-like keys may be fractional.
fn numbers(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, keys: &[&str]) {
    for key in keys {
        if key.ends_with("usd") {
            if let Some((v, at)) = t.get(key)
                && !matches!(
                    v.get_ref(),
                    toml::de::DeValue::Float(_) | toml::de::DeValue::Integer(_)
                )
            {
                crate::reader::wrong_type(&mut cx.sink, &at, "a number", v.get_ref());
            }
        } else {
            t.u64(&mut cx.sink, key);
        }
    }
}
