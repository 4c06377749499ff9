//! Output for people (default) and for scripts (`--json`).

use std::fmt::Display;

use serde::Serialize;
use serde_json::Value;

use crate::output;

/// Print `value` as pretty JSON on stdout, its strings' terminal controls
/// escaped the JSON way ([`output::json_text`]).
pub(crate) fn json(value: &impl Serialize) {
    let text = serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    out!("{}", output::json_text(&text));
}

/// `text` safe for a terminal: control characters (ESC, CR, BEL, ...) are
/// shown as escapes (`\u{1b}`), so package text cannot move the cursor,
/// clear the screen or hide lines. Newlines and tabs are kept only where
/// `multiline` allows.
pub(crate) fn escape_text(text: &str, multiline: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' if multiline => out.push(c),
            c if warden_core::text::is_terminal_control(c) => {
                out.extend(c.escape_unicode());
            }
            c => out.push(c),
        }
    }
    out
}

/// [`escape_text`] for one line.
pub(crate) fn escape(text: &str) -> String {
    escape_text(text, false)
}

/// The extensions allowed to use an account, each with the package content
/// the consent is pinned to (`github (built-in)`, `gh (sha256 0123456789ab)`).
pub(crate) fn allowed(binding: &warden_egress::secrets::AccountBinding) -> String {
    let named: Vec<String> = binding
        .extensions
        .iter()
        .map(|extension| match binding.pins.get(extension) {
            Some(pin) if pin == warden_egress::secrets::BUNDLED => {
                format!("{extension} (built-in)")
            }
            Some(digest) => format!(
                "{extension} (sha256 {})",
                digest.get(..12).unwrap_or(digest)
            ),
            None => extension.clone(),
        })
        .collect();
    words(&named)
}

/// `a, b, c`, or `none`.
pub(crate) fn words<T: Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items
        .iter()
        .map(|item| escape(&item.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A described tool, for people. Every text from the package is escaped.
pub(crate) fn description(tool: &Value) {
    let text = |key: &str| str_of(&tool[key]);
    let package = &tool["package"];
    out!("{}  ({})", text("name"), text("capability_id"));
    out!(
        "  package     {} {} ({}, trust {})",
        str_of(&package["id"]),
        str_of(&package["version"]),
        str_of(&package["provenance"]),
        str_of(&package["trust"]),
    );
    if let Some(reference) = package["origin"]["reference"].as_str() {
        out!(
            "  from        {} ({})",
            escape(reference),
            str_of(&package["origin"]["digest"])
        );
    }
    if let Some(world) = tool["world"].as_str() {
        let lane = if world.starts_with("warden:") {
            "Warden's own world"
        } else {
            "compatibility world"
        };
        out!("  world       {} ({lane})", escape(world));
    }
    // A standard op's description is the host's paragraph, then the package's.
    let description = escape_text(tool["description"].as_str().unwrap_or_default(), true);
    out!(
        "  description {}",
        description.replace('\n', "\n              ")
    );
    let op = &tool["standard_op"];
    if let Some(name) = op["op"].as_str() {
        out!(
            "  standard op {} (schemas {}, {})",
            escape(name),
            str_of(&op["input_schema_ref"]),
            str_of(&op["output_schema_ref"]),
        );
    }
    out!("  effects     {}", list(&tool["effects"]));
    out!("  permission  {}", text("default_permission"));
    let gates = tool["origin_gate_matrix"].as_object().map(|m| {
        m.iter()
            .map(|(o, p)| format!("{}={}", escape(o), str_of(p)))
            .collect::<Vec<_>>()
            .join("  ")
    });
    out!("  gates       {}", gates.unwrap_or_default());
    for credential in tool["credentials"].as_array().into_iter().flatten() {
        out!(
            "  credential  {} (vendor {}, scopes: {}) -> {}://{}",
            str_of(&credential["handle"]),
            str_of(&credential["vendor"]),
            list(&credential["scopes"]),
            str_of(&credential["audience"]["scheme"]),
            str_of(&credential["audience"]["host"]),
        );
    }
    for target in tool["network"].as_array().into_iter().flatten() {
        out!("  network     {}", str_of(target));
    }
    out!("  input schema\n{}", indent(&pretty(&tool["input_schema"])));
    if !tool["output_schema"].is_null() {
        out!(
            "  output schema\n{}",
            indent(&pretty(&tool["output_schema"]))
        );
    }
    if let Some(prompt) = tool["prompt"].as_str() {
        out!("  prompt\n{}", indent(&escape_text(prompt, true)));
    }
}

/// A JSON string, escaped for the terminal (empty when not a string).
fn str_of(value: &Value) -> String {
    escape(value.as_str().unwrap_or_default())
}

fn list(value: &Value) -> String {
    let items: Vec<String> = value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(escape)
        .collect();
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// Pretty JSON (its strings are escaped by JSON already).
fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(escape("ok\x1b[2J\rhidden"), "ok\\u{1b}[2J\\u{d}hidden");
        assert_eq!(escape("a\nb"), "a\\u{a}b");
        assert_eq!(escape_text("a\nb\x07", true), "a\nb\\u{7}");
        assert_eq!(escape("abc\u{202e}"), "abc\\u{202e}");
        assert_eq!(escape("plain text: ü"), "plain text: ü");
    }
}
