//! The one JSON Schema checker every lane uses: compiled once when a tool is
//! bound, run on a call's input before anyone is asked to approve it (and on
//! a tool's output where the lane checks one), with errors that say where
//! and what the schema required, never echoing the input's values.
//!
//! ```
//! use serde_json::json;
//! use warden_core::schema::{Formats, SchemaCheck};
//! let check = SchemaCheck::compile(&json!({"type": "object", "required": ["q"]}), Formats::Assert)
//!     .unwrap();
//! let refused = check.check_text(r#"{"p": "secret value"}"#).unwrap_err();
//! assert_eq!(refused.errors[0].pointer, "");
//! assert!(!refused.to_string().contains("secret value"));
//! ```

use std::fmt;

use serde_json::Value;

/// Errors reported per check; the rest are counted.
pub const MAX_ERRORS: usize = 8;
/// Bytes kept of each error message.
const MAX_MESSAGE_BYTES: usize = 300;
/// Bytes kept of each JSON pointer.
const MAX_POINTER_BYTES: usize = 200;

/// What a schema's `format` keywords are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Formats {
    /// Assertions: an input whose `"format": "uri"` string is no URI is
    /// refused (Warden's own packages: their authors asked for it).
    Assert,
    /// Annotations, as JSON Schema 2020-12 has them by default (a remote
    /// MCP server's schemas: the server decides what it accepts, and the
    /// gateway does not refuse what the server would take).
    Annotate,
}

/// A compiled schema.
#[derive(Debug)]
pub struct SchemaCheck {
    validator: jsonschema::Validator,
}

impl SchemaCheck {
    /// Compile `schema`; otherwise where in the schema and why it does not
    /// compile (cleaned of control characters and bounded). `warden check`
    /// and every lane compile with this, so a schema one accepts the others
    /// accept.
    pub fn compile(schema: &Value, formats: Formats) -> Result<Self, String> {
        jsonschema::options()
            .should_validate_formats(formats == Formats::Assert)
            .build(schema)
            .map(|validator| SchemaCheck { validator })
            .map_err(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                clean(&format!("at `{at}`: {e}"), MAX_MESSAGE_BYTES)
            })
    }

    /// Check `instance`: the first [`MAX_ERRORS`] errors and how many more.
    pub fn check(&self, instance: &Value) -> Result<(), InputErrors> {
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let mut errors = Vec::new();
        let mut omitted = 0;
        for error in self.validator.iter_errors(instance) {
            if errors.len() == MAX_ERRORS {
                omitted += 1;
                continue;
            }
            errors.push(InputError {
                pointer: clean(&error.instance_path().to_string(), MAX_POINTER_BYTES),
                // `masked`: what the schema required, not the value given.
                message: clean(&error.masked().to_string(), MAX_MESSAGE_BYTES),
            });
        }
        Err(InputErrors { errors, omitted })
    }

    /// Parse `text` as JSON and check it; the value.
    pub fn check_text(&self, text: &str) -> Result<Value, InputErrors> {
        let value = parse_json(text).map_err(InputErrors::one)?;
        self.check(&value)?;
        Ok(value)
    }
}

/// One error: where (a JSON pointer, `""` for the whole value) and what
/// the schema required, without the value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InputError {
    /// JSON pointer into the value (`""` is the whole value).
    pub pointer: String,
    /// What failed, without echoing the value.
    pub message: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "at `{at}`: {}", self.message)
    }
}

/// The errors of one check: the first [`MAX_ERRORS`] and how many more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputErrors {
    /// The first errors.
    pub errors: Vec<InputError>,
    /// How many further errors were left out.
    pub omitted: usize,
}

impl InputErrors {
    /// A single error.
    pub fn one(error: InputError) -> Self {
        InputErrors {
            errors: vec![error],
            omitted: 0,
        }
    }
}

impl fmt::Display for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", render(&self.errors, self.omitted))
    }
}

/// `at `/a`: …; at `/b`: … (and N more)`.
pub fn render(errors: &[InputError], omitted: usize) -> String {
    let mut text = errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if omitted > 0 {
        text.push_str(&format!(" (and {omitted} more)"));
    }
    text
}

/// Parse `text` as JSON, naming where it fails.
pub fn parse_json(text: &str) -> Result<Value, InputError> {
    serde_json::from_str(text).map_err(|e| InputError {
        pointer: String::new(),
        message: format!(
            "not valid JSON (line {}, column {}: {})",
            e.line(),
            e.column(),
            category(&e)
        ),
    })
}

fn category(error: &serde_json::Error) -> &'static str {
    match error.classify() {
        serde_json::error::Category::Io => "read error",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "unexpected data",
        serde_json::error::Category::Eof => "unexpected end",
    }
}

/// `text` with control characters as spaces (a schema may come from a
/// remote server: no terminal escape passes), cut to `max` bytes on a
/// character boundary.
fn clean(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for c in text.chars().map(|c| if c.is_control() { ' ' } else { c }) {
        if out.len() + c.len_utf8() > max {
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_name_pointers_and_are_bounded() {
        let schema = SchemaCheck::compile(
            &json!({
                "type": "object",
                "properties": {"items": {"type": "array", "items": {"type": "integer"}}}
            }),
            Formats::Assert,
        )
        .unwrap();
        let bad: Vec<Value> = (0..20).map(|i| json!(format!("s{i}"))).collect();
        let refused = schema.check(&json!({ "items": bad })).unwrap_err();
        assert_eq!(refused.errors.len(), MAX_ERRORS);
        assert_eq!(refused.omitted, 12);
        assert_eq!(refused.errors[0].pointer, "/items/0");
        assert!(!refused.to_string().contains("s0"), "{refused}");
        assert!(refused.to_string().ends_with("(and 12 more)"), "{refused}");
    }

    #[test]
    fn invalid_json_is_located() {
        let error = parse_json("{\"a\": ").unwrap_err();
        assert_eq!(error.pointer, "");
        assert!(error.message.contains("line 1"), "{}", error.message);
    }

    #[test]
    fn invalid_schema_is_refused() {
        assert!(SchemaCheck::compile(&json!({"type": 12}), Formats::Assert).is_err());
    }

    #[test]
    fn formats_are_asserted_or_annotations() {
        let schema = json!({"type": "string", "format": "email"});
        let asserted = SchemaCheck::compile(&schema, Formats::Assert).unwrap();
        let annotated = SchemaCheck::compile(&schema, Formats::Annotate).unwrap();
        assert!(asserted.check(&json!("not an address")).is_err());
        assert!(annotated.check(&json!("not an address")).is_ok());
    }

    #[test]
    fn a_remote_schemas_text_reaches_no_terminal_raw() {
        let schema = SchemaCheck::compile(
            &json!({"type": "string", "pattern": "^a\u{1b}]0;PWNED\u{7}$"}),
            Formats::Annotate,
        )
        .unwrap();
        let refused = schema.check(&json!("b")).unwrap_err().to_string();
        assert!(!refused.contains('\u{1b}'), "{refused:?}");
        assert!(!refused.contains('\u{7}'), "{refused:?}");
    }
}
