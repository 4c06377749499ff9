//! The model-facing catalog of a snapshot: MCP `tools/list` entries and
//! OpenAI- and Anthropic-style tool definitions.
//!
//! Only `visibility = "model"` tools that no filter hid enter it. Entries are
//! sorted by name and every JSON object is emitted with sorted keys, so the
//! same snapshot always yields byte-identical definitions (prompt caches
//! stay warm).

use serde_json::{Map, Value, json};
use warden_core::{Effect, Visibility};

use crate::{RegisteredTool, Snapshot};

/// One model-facing tool.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogEntry {
    /// The model-facing name.
    pub name: String,
    /// Description followed by the prompt doc (blank line between).
    pub description: String,
    /// Input JSON Schema.
    pub input_schema: Value,
    /// Output JSON Schema, if declared.
    pub output_schema: Option<Value>,
    /// `false` for the provider's native tool list.
    pub codemode: bool,
    /// No write effect.
    pub read_only: bool,
    /// A destructive effect (`external_write`, `delete_filesystem`, `financial`).
    pub destructive: bool,
    /// Talks to the network.
    pub open_world: bool,
}

impl CatalogEntry {
    fn from_tool(tool: &RegisteredTool) -> Self {
        let def = tool.def();
        let description = match def.prompt_doc.as_deref().map(str::trim) {
            Some(doc) if !doc.is_empty() => format!("{}\n\n{doc}", def.description.trim_end()),
            _ => def.description.clone(),
        };
        CatalogEntry {
            name: tool.model_name().to_owned(),
            description,
            input_schema: def.input_schema.clone(),
            output_schema: def.output_schema.clone(),
            codemode: def.codemode,
            read_only: !def.effects.iter().any(|e| e.is_write()),
            destructive: def.effects.iter().any(|e| e.is_destructive()),
            open_world: def.effects.contains(&Effect::Network),
        }
    }

    /// The MCP `tools/list` entry.
    pub fn to_mcp(&self) -> Value {
        let mut tool = json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "readOnlyHint": self.read_only,
                "destructiveHint": self.destructive,
                "openWorldHint": self.open_world,
            },
        });
        if let Some(schema) = &self.output_schema {
            tool["outputSchema"] = schema.clone();
        }
        sorted(tool)
    }

    /// The OpenAI-style function tool definition.
    pub fn to_openai(&self) -> Value {
        sorted(json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }))
    }

    /// The Anthropic-style tool definition.
    pub fn to_anthropic(&self) -> Value {
        sorted(json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }))
    }
}

/// The model-facing tools of a snapshot, sorted by name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Catalog {
    entries: Vec<CatalogEntry>,
}

impl Catalog {
    /// The catalog of `snapshot` (visible `model` tools only).
    pub fn from_snapshot(snapshot: &Snapshot) -> Self {
        let mut entries: Vec<_> = snapshot
            .tools()
            .filter(|t| t.def().visibility == Visibility::Model)
            .map(|t| CatalogEntry::from_tool(t))
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Catalog { entries }
    }

    /// The entries, sorted by name.
    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }

    /// The sub-catalog for the provider's native tool list (`codemode = false`).
    pub fn native(&self) -> Catalog {
        self.only(|e| !e.codemode)
    }

    /// The sub-catalog for code mode (`codemode = true`).
    pub fn codemode(&self) -> Catalog {
        self.only(|e| e.codemode)
    }

    fn only(&self, keep: impl Fn(&CatalogEntry) -> bool) -> Catalog {
        Catalog {
            entries: self.entries.iter().filter(|e| keep(e)).cloned().collect(),
        }
    }

    /// MCP `tools/list` entries (the `tools` array).
    pub fn mcp_tools(&self) -> Vec<Value> {
        self.entries.iter().map(CatalogEntry::to_mcp).collect()
    }

    /// OpenAI-style tool definitions.
    pub fn openai_tools(&self) -> Vec<Value> {
        self.entries.iter().map(CatalogEntry::to_openai).collect()
    }

    /// Anthropic-style tool definitions.
    pub fn anthropic_tools(&self) -> Vec<Value> {
        self.entries
            .iter()
            .map(CatalogEntry::to_anthropic)
            .collect()
    }
}

/// `value` with every object's keys inserted in sorted order, so the output
/// is sorted whether or not serde_json's `preserve_order` is enabled.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut pairs: Vec<_> = map.into_iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests;
