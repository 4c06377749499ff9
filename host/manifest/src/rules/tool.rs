//! `[[tools]]`: ids, effects, permissions, limits; delegates gates, credentials and assets.

use std::collections::BTreeMap;

use warden_core::{Effect, Permission, Visibility};

use super::{Ctx, assets, credential, gate, words};
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
    "limits",
];
const LIMITS: &[&str] = &["fuel", "memory_bytes", "timeout_ms", "max_output_bytes"];

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
    let description = super::non_empty(t, cx, "description");
    let effects = effects(t, cx);
    let sink = &mut cx.sink;
    let permission = t.str(sink, "default_permission");
    let default_permission = permission
        .as_ref()
        .and_then(|p| words::word::<Permission>(sink, p))
        .unwrap_or(Permission::Ask);
    let visibility = t
        .str(sink, "visibility")
        .and_then(|v| words::word::<Visibility>(sink, &v))
        .unwrap_or(Visibility::Model);
    if let Some(write) = effects.v.iter().find(|e| e.is_write())
        && default_permission != Permission::Ask
    {
        let at = permission.map_or(effects.at.clone(), |p| p.at);
        sink.error(
            Code::WriteRequiresAsk,
            &at,
            format!("`{id}` has the write effect `{write}` but default_permission = \"{default_permission}\""),
        );
    }
    let origin_gate_matrix = gate::check_matrix(t, cx, &id);
    let assets = assets::check_tool_assets(t, cx, visibility);
    let credentials = credential::check_tool_credentials(t, cx);
    let network_targets = credential::check_network_targets(t, cx);
    let max_egress_bytes = positive(t, cx, "max_egress_bytes");
    let has = |e: Effect| effects.v.contains(&e);
    if let Some((_, at)) = t.get("credentials").filter(|_| !credentials.is_empty()) {
        if !has(Effect::UseSecret) {
            cx.sink.error(
                Code::CredentialRequiresUseSecret,
                &at,
                format!("`{id}` declares credentials but its effects lack `use_secret`"),
            );
        }
        if !has(Effect::Network) {
            cx.sink.error(
                Code::RequiresNetwork,
                &at,
                format!("`{id}` declares credentials but its effects lack `network`"),
            );
        }
    }
    for key in ["network_targets", "max_egress_bytes"] {
        if let Some((_, at)) = t.get(key)
            && !has(Effect::Network)
        {
            cx.sink.error(
                Code::RequiresNetwork,
                &at,
                format!("`{id}` declares `{key}` but its effects lack `network`"),
            );
        }
    }
    let limits = limits(t, cx);
    t.finish(&mut cx.sink);
    Capability {
        id,
        description,
        effects: effects.v,
        default_permission,
        visibility,
        origin_gate_matrix,
        standard_op: assets.standard_op,
        input_schema: assets.input_schema,
        output_schema: assets.output_schema,
        prompt: assets.prompt,
        refs: assets.refs,
        credentials,
        network_targets,
        max_egress_bytes,
        limits,
    }
}

fn capability_id(cx: &mut Ctx<'_, '_>, id: &L<String>, seen: &mut BTreeMap<String, At>) {
    let sink = &mut cx.sink;
    if let Some(problem) = words::id_problem(&id.v) {
        sink.error(
            Code::CapabilityId,
            &id.at,
            format!("capability id `{}` {problem}", id.v),
        );
    } else if !cx.ext_id.is_empty() {
        let local =
            id.v.strip_prefix(cx.ext_id.as_str())
                .and_then(|rest| rest.strip_prefix('.'));
        if local.is_none_or(str::is_empty) {
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

/// Parse `effects` (required) against the vocabulary, rejecting duplicates.
pub(super) fn effects(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> L<Vec<Effect>> {
    let sink = &mut cx.sink;
    if !t.has("effects") {
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

fn positive(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, key: &str) -> Option<u64> {
    let n = t.u64(&mut cx.sink, key)?;
    if n.v == 0 {
        cx.sink
            .error(Code::Limit, &n.at, format!("`{key}` must be at least 1"));
    }
    Some(n.v)
}

fn limits(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> ToolLimits {
    let Some(l) = t.table(&mut cx.sink, "limits", LIMITS) else {
        return ToolLimits::default();
    };
    let limits = ToolLimits {
        fuel: positive(&l, cx, "fuel"),
        memory_bytes: positive(&l, cx, "memory_bytes"),
        timeout_ms: positive(&l, cx, "timeout_ms"),
        max_output_bytes: positive(&l, cx, "max_output_bytes"),
    };
    l.finish(&mut cx.sink);
    limits
}
