//! `standard_op`: the format's closed list of messaging operations.
//!
//! The 16 bindable ops are valid in the format; the 13 reserved ones and any
//! other word are refused with a diagnostic that names the op and lists the
//! bindable ones. A tool bound to an op has id `<id>.<op>`, no schema refs
//! (the host owns them), lists `external_write` for a write op, binds each
//! op once, and is not allowed under `[mcp]`.
//!
//! Warden supplies no canonical `standard:messaging/*` schemas, so it could
//! not validate such a tool's input: a package with a `standard_op` passes
//! `check` with a note ([`crate::Package::unsupported_lane`]) and the host
//! refuses to install it. No tool is ever published with a made-up
//! `{"type": "object"}` schema.

use warden_core::Effect;

use super::Ctx;
use crate::diag::Code;
use crate::reader::Table;
use crate::span::L;

/// Ops a tool may bind.
pub const BINDABLE: &[&str] = &[
    "send_message",
    "edit_message",
    "delete_message",
    "add_reaction",
    "remove_reaction",
    "open_dm",
    "list_conversations",
    "get_conversation_info",
    "get_conversation_history",
    "get_thread_replies",
    "get_message",
    "search_messages",
    "get_user_info",
    "resolve_user",
    "list_members",
    "whoami",
];
/// Ops the format names but reserves (refused).
pub(crate) const RESERVED: &[&str] = &[
    "forward_message",
    "schedule_message",
    "list_reactions",
    "pin_message",
    "unpin_message",
    "list_pins",
    "create_group",
    "join_conversation",
    "leave_conversation",
    "invite_member",
    "remove_member",
    "set_topic",
    "archive_conversation",
];
/// Bindable ops that write at the provider (they need `external_write`).
const WRITES: &[&str] = &[
    "send_message",
    "edit_message",
    "delete_message",
    "add_reaction",
    "remove_reaction",
    "open_dm",
];

/// Check the `standard_op` of tool `id`; the bindable op when valid.
pub(super) fn check(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>, id: &str) -> Option<L<&'static str>> {
    let op = t.str(&mut cx.sink, "standard_op")?;
    let Some(name) = BINDABLE.iter().find(|b| **b == op.v) else {
        let why = if RESERVED.contains(&op.v.as_str()) {
            "is reserved by the format and cannot be bound"
        } else {
            "is not a standard operation"
        };
        cx.sink
            .error(
                Code::StandardOp,
                &op.at,
                format!("standard_op `{}` {why}", op.v),
            )
            .note(format!("known standard ops: {}", BINDABLE.join(", ")));
        return None;
    };
    if cx.mcp {
        cx.sink.error(
            Code::StandardOp,
            &op.at,
            "standard_op is not allowed in an [mcp] manifest",
        );
    }
    if !cx.ext_id.is_empty() && id != format!("{}.{name}", cx.ext_id) {
        cx.sink
            .error(
                Code::StandardOp,
                &op.at,
                format!(
                    "a tool bound to standard_op `{name}` must have the id `{}.{name}`",
                    cx.ext_id
                ),
            )
            .help(format!("set id = \"{}.{name}\"", cx.ext_id));
    }
    for key in ["input_schema_ref", "output_schema_ref"] {
        if let Some((_, at)) = t.get(key) {
            cx.sink
                .error(
                    Code::StandardOp,
                    &at,
                    format!(
                        "a standard_op tool may not declare `{key}`; the host owns its schemas"
                    ),
                )
                .help("remove it");
        }
    }
    if let Some(first) = cx.standard_ops.get(*name) {
        cx.sink
            .error(
                Code::StandardOp,
                &op.at,
                format!("standard_op `{name}` is bound twice"),
            )
            .note(format!("first bound at `{}`", first.path));
    } else {
        cx.standard_ops.insert((*name).to_owned(), op.at.clone());
    }
    Some(L { v: name, at: op.at })
}

/// A write op must list `external_write`.
pub(super) fn check_effects(cx: &mut Ctx<'_, '_>, op: &L<&'static str>, effects: &L<Vec<Effect>>) {
    if WRITES.contains(&op.v) && !effects.v.contains(&Effect::ExternalWrite) {
        cx.sink
            .error(
                Code::StandardOp,
                &effects.at,
                format!(
                    "standard_op `{}` writes at the provider but the effects lack `external_write`",
                    op.v
                ),
            )
            .help("add \"external_write\" to effects");
    }
}
