//! Output for people (default) and for scripts (`--json`).

use std::fmt::Display;

use serde::Serialize;
use serde_json::Value;

/// Print `value` as pretty JSON on stdout.
pub(crate) fn json(value: &impl Serialize) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    );
}

/// `a, b, c`, or `none`.
pub(crate) fn words<T: Display>(items: &[T]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A described tool, for people.
pub(crate) fn description(tool: &Value) {
    let text = |key: &str| tool[key].as_str().unwrap_or_default().to_owned();
    println!("{}  ({})", text("name"), text("capability_id"));
    println!(
        "  package     {} {}",
        tool["package"]["id"].as_str().unwrap_or_default(),
        tool["package"]["version"].as_str().unwrap_or_default()
    );
    println!("  description {}", text("description"));
    println!("  effects     {}", list(&tool["effects"]));
    println!("  permission  {}", text("default_permission"));
    let gates = tool["origin_gate_matrix"].as_object().map(|m| {
        m.iter()
            .map(|(o, p)| format!("{o}={}", p.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("  ")
    });
    println!("  gates       {}", gates.unwrap_or_default());
    for credential in tool["credentials"].as_array().into_iter().flatten() {
        println!(
            "  credential  {} (vendor {}, scopes: {}) -> {}://{}",
            credential["handle"].as_str().unwrap_or_default(),
            credential["vendor"].as_str().unwrap_or_default(),
            list(&credential["scopes"]),
            credential["audience"]["scheme"]
                .as_str()
                .unwrap_or_default(),
            credential["audience"]["host"].as_str().unwrap_or_default(),
        );
    }
    println!("  input schema\n{}", indent(&pretty(&tool["input_schema"])));
    if !tool["output_schema"].is_null() {
        println!(
            "  output schema\n{}",
            indent(&pretty(&tool["output_schema"]))
        );
    }
    if let Some(prompt) = tool["prompt"].as_str() {
        println!("  prompt\n{}", indent(prompt));
    }
}

fn list(value: &Value) -> String {
    let items: Vec<&str> = value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
