//! `[admin_configuration]` (validated fully), `[memory]` and `[channel]`
//! (validated structurally: Warden does not run them, so a package with one
//! passes `check` with a note and `install` refuses it).

use std::collections::BTreeSet;

use toml::de::DeValue;

use super::Ctx;
use crate::diag::Code;
use crate::model::{AdminConfiguration, AdminField};
use crate::reader::{Table, wrong_type};

const ADMIN: &[&str] = &["group_id", "display_name", "description", "fields"];
const ADMIN_FIELD: &[&str] = &[
    "handle",
    "label",
    "secret",
    "required",
    "description",
    "host_managed",
];
const MEMORY: &[&str] = &["lifecycle", "guidance_doc"];
const LIFECYCLE: &[&str] = &[
    "read_long_term",
    "read_short_term",
    "record_interaction",
    "profile_read",
];
const CHANNEL_TABLES: &[&str] = &["ingress", "presentation", "reply", "delivery", "connection"];

/// Check `[admin_configuration]`.
pub(super) fn check_admin(
    root: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
) -> Option<AdminConfiguration> {
    let t = root.table(&mut cx.sink, "admin_configuration", ADMIN)?;
    let sink = &mut cx.sink;
    let group_id = t.req_str(sink, "group_id");
    if let Some(g) = &group_id
        && !is_group_id(&g.v)
    {
        sink.error(
            Code::InvalidName,
            &g.at,
            format!("group_id `{}` is not a group id", g.v),
        )
        .help("use 2 or more dot-separated segments of `a-z0-9_-`, each starting with a letter (`vendor.google`)");
    }
    let display_name = super::non_blank(&t, cx, "display_name");
    let description = t.str(&mut cx.sink, "description").map(|d| d.v);
    if !t.has("fields") {
        t.missing(&mut cx.sink, "fields");
    }
    let tables = t.tables(&mut cx.sink, "fields", ADMIN_FIELD);
    if let Some((_, at)) = t.get("fields")
        && !(1..=64).contains(&tables.len())
    {
        cx.sink.error(
            Code::Limit,
            &at,
            format!(
                "[admin_configuration] has {} fields; 1 to 64 are allowed",
                tables.len()
            ),
        );
    }
    let mut handles = BTreeSet::new();
    let mut fields = Vec::new();
    for f in &tables {
        let handle = super::credential::name(f, cx, "handle");
        if let Some(h) = &handle
            && !handles.insert(h.v.clone())
        {
            cx.sink.error(
                Code::DuplicateHandle,
                &h.at,
                format!("admin field handle `{}` is declared twice", h.v),
            );
        }
        let label = super::non_blank(f, cx, "label");
        let sink = &mut cx.sink;
        let flag =
            |sink: &mut crate::diag::Sink<'_>, key: &str| f.bool(sink, key).is_some_and(|b| b.v);
        let field = AdminField {
            secret: flag(sink, "secret"),
            required: flag(sink, "required"),
            host_managed: flag(sink, "host_managed"),
            description: f.str(sink, "description").map(|d| d.v).unwrap_or_default(),
            label,
            handle: handle.map(|h| h.v).unwrap_or_default(),
        };
        f.finish(sink);
        fields.push(field);
    }
    t.finish(&mut cx.sink);
    Some(AdminConfiguration {
        group_id: group_id?.v,
        display_name,
        description: description.unwrap_or_default(),
        fields,
    })
}

fn is_group_id(id: &str) -> bool {
    let segments: Vec<_> = id.split('.').collect();
    !id.is_empty()
        && id.len() <= 128
        && segments.len() >= 2
        && segments.iter().all(|s| {
            s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-".contains(&b))
        })
}

/// Check `[memory]`; true when present.
pub(super) fn check_memory(root: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> bool {
    let Some(t) = root.table(&mut cx.sink, "memory", MEMORY) else {
        return false;
    };
    if let Some(list) = t.str_array(&mut cx.sink, "lifecycle") {
        for hook in &list.v {
            if !LIFECYCLE.contains(&hook.v.as_str()) {
                cx.sink
                    .error(
                        Code::UnknownValue,
                        &hook.at,
                        format!("unknown memory lifecycle hook `{}`", hook.v),
                    )
                    .help(format!("use one of: {}", LIFECYCLE.join(", ")));
            }
        }
    }
    if let Some(doc) = t.str(&mut cx.sink, "guidance_doc") {
        super::assets::check_ref(cx, &doc);
    }
    t.finish(&mut cx.sink);
    true
}

/// Check `[channel]` structurally (its top level ignores unknown keys); true when present.
pub(super) fn check_channel(root: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> bool {
    let Some((v, at)) = root.get("channel") else {
        return false;
    };
    let Some(t) = Table::of(v, at, &[], &mut cx.sink) else {
        return true;
    };
    let t = Table::new_like(
        &t,
        &[
            "id",
            "display_name",
            "conversation_model",
            "commands",
            "ingress",
            "egress",
            "presentation",
            "reply",
            "delivery",
            "connection",
        ],
    );
    super::non_blank(&t, cx, "id");
    super::non_blank(&t, cx, "display_name");
    let sink = &mut cx.sink;
    if let Some(model) = t.req_str(sink, "conversation_model")
        && !["continuous", "isolated"].contains(&model.v.as_str())
    {
        sink.error(
            Code::UnknownValue,
            &model.at,
            format!("unknown conversation_model `{}`", model.v),
        )
        .help("use \"continuous\" or \"isolated\"");
    }
    if let Some(commands) = t.str_array(sink, "commands") {
        let mut seen = BTreeSet::new();
        if commands.v.len() > 32 {
            sink.error(
                Code::Limit,
                &commands.at,
                "a channel has at most 32 commands",
            );
        }
        for c in &commands.v {
            let ok = !c.v.is_empty()
                && c.v.len() <= 64
                && c.v
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-".contains(&b));
            if !ok || !seen.insert(c.v.clone()) {
                sink.error(
                    Code::InvalidName,
                    &c.at,
                    format!("channel command `{}` is not a unique token of `a-z0-9_-` (at most 64 bytes)", c.v),
                );
            }
        }
    }
    for key in CHANNEL_TABLES {
        if let Some((v, at)) = t.get(key)
            && !matches!(v.get_ref(), DeValue::Table(_))
        {
            wrong_type(sink, &at, "a table", v.get_ref());
        }
    }
    if let Some((v, at)) = t.get("egress") {
        for table in crate::reader::array(v, &at, sink).unwrap_or_default() {
            if !matches!(table.get_ref(), DeValue::Table(_)) {
                wrong_type(sink, &at, "a table", table.get_ref());
            }
        }
    }
    true
}
