//! `standard_op`: binding a tool to one of the format's messaging operations.
//!
//! The 16 bindable ops are valid ([`crate::standard`] holds their contracts);
//! the 13 reserved ones and any other word are refused with a diagnostic
//! that names the op and lists the bindable ones. A tool bound to an op has
//! id `<id>.<op>`, no schema refs (the host owns them), lists
//! `external_write` for a write op, binds each op once, and is not allowed
//! under `[mcp]`. The tool then gets the op's canonical schemas and its
//! description follows the host's.

use warden_core::Effect;

use super::Ctx;
use crate::diag::Code;
use crate::reader::Table;
use crate::span::L;
use crate::standard::{self, RESERVED_MESSAGING_OPS, StandardOp};

/// Check the `standard_op` of tool `id`; the bindable op when valid.
pub(super) fn check(
    t: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    id: &str,
) -> Option<L<&'static StandardOp>> {
    let op = t.str(&mut cx.sink, "standard_op")?;
    let Some(bound) = standard::messaging_op(&op.v) else {
        let why = if RESERVED_MESSAGING_OPS.contains(&op.v.as_str()) {
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
            .note(format!("bindable standard ops: {}", bindable().join(", ")));
        return None;
    };
    let name = bound.name;
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
    if let Some(first) = cx.standard_ops.get(name) {
        cx.sink
            .error(
                Code::StandardOp,
                &op.at,
                format!("standard_op `{name}` is bound twice"),
            )
            .note(format!("first bound at `{}`", first.path));
    } else {
        cx.standard_ops.insert(name.to_owned(), op.at.clone());
    }
    Some(L {
        v: bound,
        at: op.at,
    })
}

/// A write op must list `external_write`.
pub(super) fn check_effects(
    cx: &mut Ctx<'_, '_>,
    op: &L<&'static StandardOp>,
    effects: &L<Vec<Effect>>,
) {
    if op.v.writes && !effects.v.contains(&Effect::ExternalWrite) {
        cx.sink
            .error(
                Code::StandardOp,
                &effects.at,
                format!(
                    "standard_op `{}` writes at the provider but the effects lack `external_write`",
                    op.v.name
                ),
            )
            .help("add \"external_write\" to effects");
    }
}

/// The names of the bindable ops.
pub(crate) fn bindable() -> Vec<&'static str> {
    standard::MESSAGING_OPS.iter().map(|op| op.name).collect()
}
