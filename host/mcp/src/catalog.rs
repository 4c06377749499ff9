//! The converted tool list, cached until the backend's change counter ticks.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;
use tokio::sync::watch;

use crate::backend::{Backend, ToolEntry};

/// One converted snapshot of the backend's tools.
#[derive(Debug)]
struct Snapshot {
    version: u64,
    tools: Vec<Tool>,
    /// Name -> whether the tool has an output schema.
    structured: HashMap<String, bool>,
}

/// The MCP view of [`Backend::tools`], shared by every connection.
#[derive(Debug)]
pub(crate) struct Catalog {
    changes: watch::Receiver<u64>,
    snapshot: RwLock<Option<Arc<Snapshot>>>,
}

impl Catalog {
    pub(crate) fn new(changes: watch::Receiver<u64>) -> Self {
        Self {
            changes,
            snapshot: RwLock::new(None),
        }
    }

    /// The tools to advertise, converted once per backend version.
    pub(crate) fn tools(&self, backend: &dyn BackendTools) -> Vec<Tool> {
        self.current(backend).tools.clone()
    }

    /// Whether `name` has an output schema (so results carry
    /// `structuredContent`). Unknown tools answer `false`.
    pub(crate) fn has_output_schema(&self, backend: &dyn BackendTools, name: &str) -> bool {
        self.current(backend)
            .structured
            .get(name)
            .copied()
            .unwrap_or(false)
    }

    /// One tool's definition, if the catalog has it.
    pub(crate) fn tool(&self, backend: &dyn BackendTools, name: &str) -> Option<Tool> {
        self.current(backend)
            .tools
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }

    fn current(&self, backend: &dyn BackendTools) -> Arc<Snapshot> {
        let version = *self.changes.borrow();
        if let Some(snapshot) = self.read().as_ref()
            && snapshot.version == version
        {
            return Arc::clone(snapshot);
        }
        let snapshot = Arc::new(convert(version, backend.entries()));
        *self
            .snapshot
            .write()
            .unwrap_or_else(|poison| poison.into_inner()) = Some(Arc::clone(&snapshot));
        snapshot
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Option<Arc<Snapshot>>> {
        self.snapshot
            .read()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// Object-safe access to [`Backend::tools`], so the catalog is not generic.
pub(crate) trait BackendTools {
    fn entries(&self) -> Vec<ToolEntry>;
}

impl<B: Backend> BackendTools for B {
    fn entries(&self) -> Vec<ToolEntry> {
        self.tools()
    }
}

fn convert(version: u64, entries: Vec<ToolEntry>) -> Snapshot {
    let mut tools = Vec::with_capacity(entries.len());
    let mut structured = HashMap::with_capacity(entries.len());
    for entry in entries {
        let Some(input_schema) = object(entry.input_schema) else {
            tracing::warn!(tool = %entry.name, "input schema is not a JSON object; tool not advertised");
            continue;
        };
        let output_schema = match entry.output_schema.map(object) {
            None => None,
            Some(Some(schema)) => Some(Arc::new(schema)),
            Some(None) => {
                tracing::warn!(tool = %entry.name, "output schema is not a JSON object; tool not advertised");
                continue;
            }
        };
        let hints = entry.hints;
        let mut annotations = ToolAnnotations::new()
            .read_only(hints.read_only)
            .destructive(hints.destructive)
            .open_world(hints.open_world);
        if hints.idempotent {
            annotations = annotations.idempotent(true);
        }
        structured.insert(entry.name.clone(), output_schema.is_some());
        let mut tool = Tool::new(entry.name, entry.description, Arc::new(input_schema))
            .with_annotations(annotations);
        tool.output_schema = output_schema;
        tool.title = entry.title;
        tool.meta = entry.meta.map(rmcp::model::MetaObject);
        tools.push(tool);
    }
    Snapshot {
        version,
        tools,
        structured,
    }
}

fn object(value: Value) -> Option<JsonObject> {
    match value {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::backend::ToolHints;

    struct Fixed(Vec<ToolEntry>);

    impl BackendTools for Fixed {
        fn entries(&self) -> Vec<ToolEntry> {
            self.0.clone()
        }
    }

    #[test]
    fn converts_schemas_and_hints_and_drops_non_object_schemas() {
        let (_tx, rx) = watch::channel(0);
        let catalog = Catalog::new(rx);
        let backend = Fixed(vec![
            ToolEntry::new("a", "tool a", json!({"type": "object"}))
                .with_output_schema(json!({"type": "object"}))
                .with_hints(ToolHints {
                    read_only: true,
                    ..ToolHints::default()
                }),
            ToolEntry::new("bad", "not an object", json!(true)),
        ]);
        let tools = catalog.tools(&backend);
        assert_eq!(tools.len(), 1);
        let annotations = tools[0].annotations.as_ref().expect("annotations");
        assert_eq!(annotations.read_only_hint, Some(true));
        assert_eq!(annotations.destructive_hint, Some(false));
        assert_eq!(annotations.idempotent_hint, None);
        assert!(catalog.has_output_schema(&backend, "a"));
        assert!(!catalog.has_output_schema(&backend, "bad"));
    }

    #[test]
    fn rebuilds_only_when_the_version_ticks() {
        let (tx, rx) = watch::channel(0);
        let catalog = Catalog::new(rx);
        let one = Fixed(vec![ToolEntry::new("a", "", json!({}))]);
        let two = Fixed(vec![ToolEntry::new("b", "", json!({}))]);
        assert_eq!(catalog.tools(&one)[0].name, "a");
        // Same version: the cached list is kept even if the backend differs.
        assert_eq!(catalog.tools(&two)[0].name, "a");
        tx.send_replace(1);
        assert_eq!(catalog.tools(&two)[0].name, "b");
    }
}
