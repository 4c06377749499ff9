//! `method = "api_key"` (fields and a read-only validation probe) and
//! `method = "device_link"` (display metadata only).

use std::collections::BTreeSet;

use warden_core::spec::{ApiKeyField, ApiKeyRecipe, DeviceLinkRecipe, ValidationProbe};

use super::{API_KEY_FIELD as FIELD, PROBE, endpoint, opt_non_blank};
use crate::diag::Code;
use crate::reader::Table;
use crate::rules::Ctx;

pub(super) fn api_key(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<ApiKeyRecipe> {
    let display_name = crate::rules::non_blank(t, cx, "display_name");
    if !t.has("fields") {
        t.missing(&mut cx.sink, "fields");
    }
    let tables = t.tables(&mut cx.sink, "fields", FIELD);
    if let Some((_, at)) = t.get("fields")
        && tables.is_empty()
    {
        cx.sink.error(
            Code::AuthRecipe,
            &at,
            "an api_key recipe needs at least one field",
        );
    }
    let mut fields = Vec::new();
    for f in &tables {
        let handle = crate::rules::credential::name(f, cx, "handle");
        let label = f.req_str(&mut cx.sink, "label");
        let secret = f.bool(&mut cx.sink, "secret").is_none_or(|b| b.v);
        f.finish(&mut cx.sink);
        if let (Some(handle), Some(label)) = (handle, label) {
            fields.push(ApiKeyField {
                handle: handle.v,
                label: label.v,
                secret,
            });
        }
    }
    let handles: BTreeSet<&str> = fields.iter().map(|f| f.handle.as_str()).collect();
    let validation = t
        .table(&mut cx.sink, "validation", PROBE)
        .and_then(|p| probe(&p, cx, &handles));
    let instructions = t.str(&mut cx.sink, "instructions").map(|v| v.v);
    let setup_url = endpoint(t, cx, "setup_url", false).map(|v| v.v);
    t.finish(&mut cx.sink);
    Some(ApiKeyRecipe {
        display_name: Some(display_name),
        fields,
        instructions,
        setup_url,
        validation,
    })
}

fn probe(
    p: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    handles: &BTreeSet<&str>,
) -> Option<ValidationProbe> {
    let method = p.str(&mut cx.sink, "method");
    if let Some(m) = &method
        && m.v != "GET"
    {
        cx.sink
            .error(
                Code::UnknownValue,
                &m.at,
                format!("unknown probe method `{}`", m.v),
            )
            .help("use \"GET\" (a probe is read-only)");
    }
    let url = endpoint(p, cx, "url", true);
    if !p.has("success_status") {
        p.missing(&mut cx.sink, "success_status");
    }
    let mut expect_status = Vec::new();
    if let Some((v, at)) = p.get("success_status")
        && let Some(items) = crate::reader::array(v, &at, &mut cx.sink)
    {
        if items.is_empty() {
            cx.sink
                .error(Code::AuthRecipe, &at, "success_status lists no status");
        }
        for (i, item) in items.iter().enumerate() {
            let item_at = at.index(i, item.span());
            match item
                .get_ref()
                .as_integer()
                .and_then(|n| u16::from_str_radix(n.as_str(), n.radix()).ok())
            {
                Some(code) => expect_status.push(code),
                None => {
                    cx.sink
                        .error(
                            Code::Limit,
                            &item_at,
                            "success_status entries are HTTP status codes",
                        )
                        .help("use integers between 0 and 65535, such as 200");
                }
            }
        }
    }
    if !p.has("inject") {
        p.missing(&mut cx.sink, "inject");
    }
    let mut handle = None;
    let injection = p.get("inject").and_then(|(v, at)| {
        let t = Table::of(v, at, &[], &mut cx.sink)?;
        let t = Table::new_like(
            &t,
            &[
                "handle",
                "type",
                "name",
                "prefix",
                "placeholder",
                "username",
                "pointer",
                "post_injection_body_limit_bytes",
            ],
        );
        if let Some(h) = t.req_str(&mut cx.sink, "handle") {
            if !handles.contains(h.v.as_str()) {
                cx.sink
                    .error(
                        Code::AuthRecipe,
                        &h.at,
                        format!(
                            "the probe injects `{}`, which is not one of the recipe's fields",
                            h.v
                        ),
                    )
                    .help("use the handle of a [[auth.<vendor>.fields]] entry");
            }
            handle = Some(h.v);
        }
        crate::rules::credential::injection_checked(&t, cx, false)
    });
    p.finish(&mut cx.sink);
    Some(ValidationProbe {
        method: method.map(|m| m.v),
        url: url?.v,
        handle,
        injection: injection?,
        expect_status,
    })
}

pub(super) fn device(t: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) -> Option<DeviceLinkRecipe> {
    let display_name = crate::rules::non_blank(t, cx, "display_name");
    let default_mode_label = opt_non_blank(t, cx, "default_mode_label");
    let alternate_mode_label = opt_non_blank(t, cx, "alternate_mode_label");
    let instructions = t.str(&mut cx.sink, "instructions").map(|v| v.v);
    let setup_url = endpoint(t, cx, "setup_url", false).map(|v| v.v);
    t.finish(&mut cx.sink);
    Some(DeviceLinkRecipe {
        display_name,
        default_mode_label,
        alternate_mode_label,
        instructions,
        setup_url,
    })
}
