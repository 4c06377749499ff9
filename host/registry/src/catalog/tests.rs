use serde_json::json;
use warden_core::{Effect, Visibility};

use super::*;
use crate::{Executor, Registry, ToolDef};

fn registry() -> (Registry, crate::Registration) {
    let registry = Registry::new("loc".into());
    let reg = registry
        .transform("package:github", |d| {
            d.add(
                ToolDef::new(
                    "get_repo",
                    "Fetch a repository.",
                    json!({"type": "object", "properties": {"repo": {"type": "string"}}}),
                    Executor::key("github.get_repo"),
                )
                .with_namespace("github")
                .with_prompt_doc("Pass `owner/name`.")
                .with_output_schema(json!({"type": "object"}))
                .with_effects([Effect::Network, Effect::UseSecret]),
            )?
            .add(
                ToolDef::new(
                    "delete_repo",
                    "Delete a repository.",
                    json!({"type": "object"}),
                    Executor::key("github.delete_repo"),
                )
                .with_namespace("github")
                .with_codemode(false)
                .with_effects([Effect::Network, Effect::ExternalWrite]),
            )?
            .add(
                ToolDef::new(
                    "admin",
                    "Host only.",
                    json!({"type": "object"}),
                    Executor::key("github.admin"),
                )
                .with_visibility(Visibility::HostInternal),
            )?;
            Ok(())
        })
        .unwrap();
    (registry, reg)
}

#[test]
fn only_model_visible_tools_sorted_by_name() {
    let (registry, _reg) = registry();
    let catalog = Catalog::from_snapshot(&registry.snapshot());
    let names: Vec<_> = catalog.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["github_delete_repo", "github_get_repo"]);
    assert_eq!(catalog.native().entries().len(), 1);
    assert_eq!(catalog.codemode().entries()[0].name, "github_get_repo");
}

#[test]
fn mcp_entries_carry_schemas_docs_and_annotations() {
    let (registry, _reg) = registry();
    let tools = Catalog::from_snapshot(&registry.snapshot()).mcp_tools();
    assert_eq!(
        tools[1],
        json!({
            "name": "github_get_repo",
            "description": "Fetch a repository.\n\nPass `owner/name`.",
            "inputSchema": {"type": "object", "properties": {"repo": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "destructiveHint": false, "openWorldHint": true},
        })
    );
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], false);
    assert_eq!(tools[0]["annotations"]["destructiveHint"], true);
    assert!(tools[0].get("outputSchema").is_none());
}

#[test]
fn provider_definitions_are_deterministic_and_sorted() {
    let (registry, _reg) = registry();
    let a = Catalog::from_snapshot(&registry.snapshot());
    let b = Catalog::from_snapshot(&registry.snapshot());
    let openai = serde_json::to_string(&a.openai_tools()).unwrap();
    assert_eq!(openai, serde_json::to_string(&b.openai_tools()).unwrap());
    assert!(
        openai.starts_with(r#"[{"function":{"description":"Delete a repository.","name":"github_delete_repo","parameters":"#),
        "{openai}"
    );
    let anthropic = a.anthropic_tools();
    assert_eq!(anthropic[1]["name"], "github_get_repo");
    assert_eq!(anthropic[1]["input_schema"]["type"], "object");
    let keys: Vec<_> = anthropic[1].as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["description", "input_schema", "name"]);
}

#[test]
fn filtered_tools_leave_the_catalog() {
    let (registry, _reg) = registry();
    let snapshot = registry.snapshot().filtered(&["github_delete_repo"]);
    let catalog = Catalog::from_snapshot(&snapshot);
    assert_eq!(catalog.entries().len(), 1);
    assert_eq!(catalog.entries()[0].name, "github_get_repo");
}
