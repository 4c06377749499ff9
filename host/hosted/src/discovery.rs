//! Discovery bounds: a server's `tools/list` (all pages) is accepted, or
//! refused whole with an error naming the bound it broke. What a valid
//! server may send is never a reason to refuse it: a name with a `.` (the
//! specification allows letters, digits, `_`, `-` and `.`) is accepted, a
//! description longer than the bound is cut with a marker, and of two names
//! the registry would publish alike (`files.read`, `files_read`) the second
//! is left out with a warning naming both. Refusals are for what no valid
//! server sends or what would exhaust the host: more tools or bytes than the
//! bounds, a name over 128 bytes or of other characters, one listed twice,
//! a schema nested too deep.

use rmcp::model::Tool;
use serde_json::Value;

/// The bounds a catalog must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Most tools (the manifest's `max_tools`).
    pub max_tools: usize,
    /// Bytes of all `tools/list` results together.
    pub max_response_bytes: usize,
    /// Bytes of a tool name.
    pub max_name_bytes: usize,
    /// Bytes of a tool description.
    pub max_description_bytes: usize,
    /// Nesting depth of an input or output schema.
    pub max_schema_depth: usize,
    /// Pages of `tools/list` followed before giving up.
    pub max_pages: usize,
}

impl Bounds {
    /// The default bounds with `max_tools` from the manifest.
    pub fn with_max_tools(max_tools: usize) -> Self {
        Self {
            max_tools,
            max_response_bytes: 2 << 20,
            max_name_bytes: 128,
            max_description_bytes: 2 << 10,
            max_schema_depth: 32,
            max_pages: 64,
        }
    }
}

/// A bound a catalog broke.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogBoundError {
    /// More tools than `max_tools`.
    #[error("the server offers more than max_tools = {max} tools")]
    TooManyTools {
        /// The bound.
        max: usize,
    },
    /// The results are larger than the bound.
    #[error("the tools/list response is larger than {max} bytes")]
    ResponseTooLarge {
        /// The bound.
        max: usize,
    },
    /// More pages than the bound.
    #[error("tools/list has more than {max} pages")]
    TooManyPages {
        /// The bound.
        max: usize,
    },
    /// A tool name is longer than the bound.
    #[error("a tool name is longer than {max} bytes")]
    NameTooLong {
        /// The bound.
        max: usize,
    },
    /// A tool name has characters a published name cannot have.
    #[error("tool name `{name}` is not made of ASCII letters, digits, `_`, `-` and `.`")]
    InvalidName {
        /// The name (bounded).
        name: String,
    },
    /// Two tools have the same name.
    #[error("tool `{name}` is listed twice")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A schema nests deeper than the bound.
    #[error("a schema of tool `{tool}` nests deeper than {max} levels")]
    SchemaTooDeep {
        /// The tool.
        tool: String,
        /// The bound.
        max: usize,
    },
}

/// One tool of an accepted catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteTool {
    /// The server's name for it.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
    /// Its output schema, when the server declares one.
    pub output_schema: Option<Value>,
    /// The server says it is destructive (`annotations.destructiveHint`).
    pub destructive: bool,
}

impl RemoteTool {
    /// The tool as an MCP `Tool` object (what [`check`] accepts back).
    pub fn to_json(&self) -> Value {
        let mut tool = serde_json::json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        });
        if let Some(schema) = &self.output_schema {
            tool["outputSchema"] = schema.clone();
        }
        if self.destructive {
            tool["annotations"] = serde_json::json!({ "destructiveHint": true });
        }
        tool
    }
}

/// Check every tool of a catalog against `bounds`. `bytes` is the size of
/// the results received.
pub fn check(
    tools: Vec<Tool>,
    bytes: usize,
    bounds: &Bounds,
) -> Result<Vec<RemoteTool>, CatalogBoundError> {
    if bytes > bounds.max_response_bytes {
        return Err(CatalogBoundError::ResponseTooLarge {
            max: bounds.max_response_bytes,
        });
    }
    if tools.len() > bounds.max_tools {
        return Err(CatalogBoundError::TooManyTools {
            max: bounds.max_tools,
        });
    }
    let mut accepted: Vec<RemoteTool> = Vec::with_capacity(tools.len());
    // Names seen, for duplicates: a catalog may hold tens of thousands of
    // small tools within the byte bound, too many to compare pairwise.
    let mut names = std::collections::HashSet::with_capacity(tools.len());
    // Published forms (`.` flattened as the registry flattens it), to the
    // name that took each.
    let mut published = std::collections::HashMap::with_capacity(tools.len());
    for tool in tools {
        let name = tool.name.to_string();
        if name.len() > bounds.max_name_bytes {
            return Err(CatalogBoundError::NameTooLong {
                max: bounds.max_name_bytes,
            });
        }
        if !is_listable_name(&name) {
            return Err(CatalogBoundError::InvalidName {
                name: name.chars().take(64).collect(),
            });
        }
        if !names.insert(name.clone()) {
            return Err(CatalogBoundError::DuplicateName { name });
        }
        if let Some(first) = published.insert(name.replace('.', "_"), name.clone()) {
            tracing::warn!(
                tool = %name,
                publishes_as = %first,
                "a remote tool is left out: its published name is another tool's"
            );
            published.insert(name.replace('.', "_"), first);
            continue;
        }
        let description = cut_description(
            tool.description.as_deref().unwrap_or_default(),
            bounds.max_description_bytes,
        );
        let input_schema = Value::Object((*tool.input_schema).clone());
        let output_schema = tool.output_schema.map(|s| Value::Object((*s).clone()));
        let too_deep = |schema: &Value| depth(schema) > bounds.max_schema_depth;
        if too_deep(&input_schema) || output_schema.as_ref().is_some_and(too_deep) {
            return Err(CatalogBoundError::SchemaTooDeep {
                tool: name,
                max: bounds.max_schema_depth,
            });
        }
        let destructive = tool
            .annotations
            .as_ref()
            .and_then(|a| a.destructive_hint)
            .unwrap_or(false);
        accepted.push(RemoteTool {
            name,
            description,
            input_schema,
            output_schema,
            destructive,
        });
    }
    Ok(accepted)
}

/// The marker a cut description ends with.
pub const CUT_MARKER: &str = " […]";

/// `description`, or its first bytes (on a character boundary) and
/// [`CUT_MARKER`] when it is longer than `max` bytes.
fn cut_description(description: &str, max: usize) -> String {
    if description.len() <= max {
        return description.to_owned();
    }
    let mut end = max.saturating_sub(CUT_MARKER.len());
    while !description.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT_MARKER}", &description[..end])
}

/// Nesting depth of a JSON value (a scalar is 0, `{}` is 1).
fn depth(value: &Value) -> usize {
    // Iterative, so a hostile schema cannot overflow the stack.
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Object(map) => Box::new(map.values()),
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        deepest = deepest.max(d + 1);
        stack.extend(children.map(|c| (c, d + 1)));
    }
    deepest
}

/// Whether a remote tool's name is one discovery accepts: `[A-Za-z0-9_-]+`
/// (so a capability id `<package>.<name>` holds no dot after the package).
pub fn is_listable_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn depth_counts_nesting() {
        assert_eq!(depth(&json!(1)), 0);
        assert_eq!(depth(&json!({})), 1);
        assert_eq!(depth(&json!({"a": {"b": [1]}})), 3);
    }

    #[test]
    fn a_destructive_hint_is_kept_and_bounds_name_the_tool() {
        let bounds = Bounds::with_max_tools(4);
        let ok = check(
            vec![tool(
                json!({"name": "wipe", "inputSchema": {"type": "object"},
                "annotations": {"destructiveHint": true}}),
            )],
            10,
            &bounds,
        )
        .unwrap();
        assert!(ok[0].destructive);
    }

    /// Issue 44: a description over the bound, or a name with a `.`,
    /// refused the whole server.
    #[test]
    fn a_long_description_is_cut_and_a_dotted_name_is_accepted() {
        let bounds = Bounds::with_max_tools(4);
        let long = "é".repeat(1500);
        let ok = check(
            vec![
                tool(json!({"name": "x", "description": long, "inputSchema": {}})),
                tool(json!({"name": "files.read", "inputSchema": {}})),
            ],
            10,
            &bounds,
        )
        .unwrap();
        assert_eq!(ok[0].description.len(), 2048);
        assert!(ok[0].description.ends_with(CUT_MARKER));
        assert!(ok[0].description.starts_with("éé"));
        assert_eq!(ok[1].name, "files.read");
    }

    #[test]
    fn of_two_names_published_alike_the_second_is_left_out() {
        let bounds = Bounds::with_max_tools(4);
        let ok = check(
            vec![
                tool(json!({"name": "files.read", "inputSchema": {}})),
                tool(json!({"name": "files_read", "inputSchema": {}})),
                tool(json!({"name": "other", "inputSchema": {}})),
            ],
            10,
            &bounds,
        )
        .unwrap();
        let names: Vec<&str> = ok.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["files.read", "other"]);
    }

    #[test]
    fn a_name_listed_twice_refuses_the_catalog_however_large() {
        let tools = |count: usize, twice: &str| {
            let mut tools: Vec<Tool> = (0..count)
                .map(|i| tool(json!({"name": format!("t{i}"), "inputSchema": {}})))
                .collect();
            tools.push(tool(json!({"name": twice, "inputSchema": {}})));
            tools
        };
        let bounds = Bounds::with_max_tools(50_001);
        let error = check(tools(50_000, "t49999"), 10, &bounds).unwrap_err();
        assert!(matches!(error, CatalogBoundError::DuplicateName { ref name } if name == "t49999"));
        assert_eq!(
            check(tools(50_000, "last"), 10, &bounds).unwrap().len(),
            50_001
        );
    }
}
