//! JSON schema validators, compiled once at install.

use jsonschema::Validator;
use serde_json::Value;

use crate::outcome::InputError;

/// Errors reported per validation; the rest are counted.
pub(crate) const MAX_ERRORS: usize = 8;
/// Bytes kept of each error message.
const MAX_MESSAGE_BYTES: usize = 300;
/// Bytes kept of each JSON pointer.
const MAX_POINTER_BYTES: usize = 200;

/// A compiled schema.
#[derive(Debug)]
pub(crate) struct Schema {
    validator: Validator,
}

impl Schema {
    /// Compile `schema` (formats are checked).
    pub(crate) fn compile(schema: &Value) -> Result<Schema, String> {
        jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map(|validator| Schema { validator })
            .map_err(|e| e.to_string())
    }

    /// The first [`MAX_ERRORS`] errors and how many more there were. Messages
    /// never echo the instance's values.
    pub(crate) fn check(&self, instance: &Value) -> Result<(), (Vec<InputError>, usize)> {
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
            let mut pointer = error.instance_path().to_string();
            crate::state::truncate(&mut pointer, MAX_POINTER_BYTES);
            let mut message = error.masked().to_string();
            crate::state::truncate(&mut message, MAX_MESSAGE_BYTES);
            errors.push(InputError { pointer, message });
        }
        Err((errors, omitted))
    }
}

/// Parse `text` as JSON, naming where it fails.
pub(crate) fn parse(text: &str) -> Result<Value, InputError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_name_pointers_and_are_bounded() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "integer"}}}
        }))
        .unwrap();
        let bad: Vec<Value> = (0..20).map(|i| json!(format!("s{i}"))).collect();
        let (errors, omitted) = schema.check(&json!({ "items": bad })).unwrap_err();
        assert_eq!(errors.len(), MAX_ERRORS);
        assert_eq!(omitted, 12);
        assert_eq!(errors[0].pointer, "/items/0");
        assert!(!errors[0].message.contains("s0"), "{}", errors[0].message);
    }

    #[test]
    fn invalid_json_is_located() {
        let error = parse("{\"a\": ").unwrap_err();
        assert_eq!(error.pointer, "");
        assert!(error.message.contains("line 1"), "{}", error.message);
    }

    #[test]
    fn invalid_schema_is_refused() {
        assert!(Schema::compile(&json!({"type": 12})).is_err());
    }
}
