//! Small things every service uses: failures in Warden's vocabulary, and
//! reading the input the host already checked against the schema.

use serde_json::Value;
use warden_host::FirstPartyError;

/// An input the schema let through but the service cannot use, at `pointer`.
pub(crate) fn invalid(pointer: &str, message: impl Into<String>) -> FirstPartyError {
    FirstPartyError::InvalidInput {
        errors: vec![warden_core::schema::InputError {
            pointer: pointer.to_owned(),
            message: message.into(),
        }],
        omitted: 0,
    }
}

/// A failure the model reads.
pub(crate) fn failed(message: impl Into<String>) -> FirstPartyError {
    FirstPartyError::Failed {
        message: message.into(),
    }
}

/// The failure of a call to a tool the service does not have (a package
/// naming a tool its service lacks).
pub(crate) fn no_tool(capability_id: &str) -> FirstPartyError {
    failed(format!("this host's service has no tool `{capability_id}`"))
}

/// The string at `key`, when present.
pub(crate) fn text<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

/// The string at `key`, which the schema requires.
pub(crate) fn required<'a>(input: &'a Value, key: &str) -> Result<&'a str, FirstPartyError> {
    text(input, key).ok_or_else(|| invalid(&format!("/{key}"), "is required"))
}

/// The strings at `key`: a list, or one string (a single recipient).
pub(crate) fn strings(input: &Value, key: &str) -> Vec<String> {
    match input.get(key) {
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}
