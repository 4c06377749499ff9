//! Control characters in manifest text. The format keeps text bytes as
//! written; Warden refuses control characters (ESC, CR, BEL, bidi
//! overrides, ...) anywhere in the manifest, because names, descriptions and
//! prompt docs reach terminals and models: an escape sequence could clear a
//! screen or hide a credential line. `\n` and `\t` are allowed in text, but
//! not in one-line fields (`id`, `name`, `version`, keys).

use toml::de::{DeTable, DeValue};

use super::{Ctx, words};
use crate::diag::Code;
use crate::reader::{Table, Val};
use crate::span::At;

/// Root keys whose values are one line.
const ONE_LINE: &[&str] = &["id", "name", "version", "schema_version", "trust"];

/// Check every key and string value of the document.
pub(super) fn check_controls(root: &Table<'_, '_>, cx: &mut Ctx<'_, '_>) {
    for (key, value, at) in root.entries() {
        key_and_value(key, value, at, ONE_LINE.contains(&key), cx);
    }
}

fn table(t: &DeTable<'_>, at: &At, cx: &mut Ctx<'_, '_>) {
    for (key, value) in t.iter() {
        let at = at.key(key.get_ref(), value.span());
        key_and_value(key.get_ref(), value, at, false, cx);
    }
}

fn key_and_value(key: &str, value: &Val<'_>, at: At, one_line: bool, cx: &mut Ctx<'_, '_>) {
    if let Some(c) = words::control_problem(key, false) {
        report(cx, &at, "key", &c);
    }
    value_of(value, &at, one_line, cx);
}

fn value_of(value: &Val<'_>, at: &At, one_line: bool, cx: &mut Ctx<'_, '_>) {
    match value.get_ref() {
        DeValue::String(s) => {
            if let Some(c) = words::control_problem(s, !one_line) {
                report(cx, at, "value", &c);
            }
        }
        DeValue::Table(t) => table(t, at, cx),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                value_of(item, &at.index(i, item.span()), false, cx);
            }
        }
        _ => {}
    }
}

fn report(cx: &mut Ctx<'_, '_>, at: &At, what: &str, c: &str) {
    let path = if at.path.is_empty() {
        "(top level)"
    } else {
        &at.path
    };
    cx.sink.error(
        Code::ControlCharacter,
        at,
        format!("the {what} at `{path}` contains the control character {c}"),
    );
}

/// Check a prompt doc's text (multi-line; CR only in CRLF).
pub(super) fn check_prompt(cx: &mut Ctx<'_, '_>, r: &crate::span::L<String>, text: &str) {
    if let Some(c) = words::control_problem(text, true) {
        cx.sink.error(
            Code::ControlCharacter,
            &r.at,
            format!("prompt doc `{}` contains the control character {c}", r.v),
        );
    }
}
