//! Tools a server will run only as tasks (MCP's task augmentation: a tool
//! listed with `execution.taskSupport = "required"`). rmcp's `Tool` has no
//! `execution`, so the transport reads it from a `tools/list` answer as it
//! passes, before rmcp parses it. Such a tool stays listed; a call of it is
//! refused with `protocol_unsupported` naming why, rather than sent to a
//! server that would refuse it less clearly.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::Value;

/// Names remembered at most (a server lists at most its `max_tools`).
const MAX_NAMES: usize = 4096;

/// The names of a server's task-only tools, from its latest listings.
#[derive(Debug, Default)]
pub(crate) struct TaskOnly(Mutex<HashSet<String>>);

impl TaskOnly {
    /// Read `message` (one JSON-RPC message from the server) for a
    /// `tools/list` answer's task-only tools. Messages that do not mention
    /// `taskSupport` are not parsed.
    pub(crate) fn observe(&self, text: &str) {
        if !text.contains("\"taskSupport\"") {
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let Some(tools) = value["result"]["tools"].as_array() else {
            return;
        };
        let mut names = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for tool in tools {
            let Some(name) = tool["name"].as_str() else {
                continue;
            };
            if tool["execution"]["taskSupport"] == "required" {
                if names.len() < MAX_NAMES {
                    names.insert(name.to_owned());
                }
            } else {
                names.remove(name);
            }
        }
    }

    /// Whether the server runs `name` only as a task.
    pub(crate) fn requires(&self, name: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_marks_and_a_later_one_clears_task_only_tools() {
        let tasks = TaskOnly::default();
        let listing = |support: &str| {
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
                {"name": "render", "inputSchema": {}, "execution": {"taskSupport": support}},
                {"name": "echo", "inputSchema": {}},
            ]}})
            .to_string()
        };
        tasks.observe(&listing("required"));
        assert!(tasks.requires("render") && !tasks.requires("echo"));
        tasks.observe(r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#);
        assert!(tasks.requires("render"), "other messages change nothing");
        tasks.observe(&listing("optional"));
        assert!(!tasks.requires("render"));
    }
}
