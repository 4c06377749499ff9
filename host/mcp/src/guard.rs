//! Limits on an incoming JSON-RPC message, checked before it is parsed, and
//! the error answer for one that breaks them.
//!
//! A message nested deeper than serde_json parses, or larger than
//! [`MAX_MESSAGE_BYTES`], cannot be parsed into a request, so the SDK would
//! drop it and the client would wait forever. Instead its top-level `"id"` is
//! found by a cheap scan (no parsing, no allocation but the id itself) and
//! answered with a JSON-RPC error. A message whose id cannot be found is
//! dropped (with a log line): a notification must never be answered, and an
//! answer without an id would be one a client cannot match.

use serde_json::{Value, json};

/// Largest message accepted, in bytes (one stdio line or one HTTP body).
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// Deepest nesting of arrays and objects accepted: what serde_json's
/// recursion limit (128) lets the SDK's parser read.
pub(crate) const MAX_DEPTH: usize = 127;

/// JSON-RPC "Parse error".
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "Invalid Request".
pub(crate) const INVALID_REQUEST: i64 = -32600;

/// Whether `bytes` nests arrays and objects deeper than `max` (strings are
/// skipped, so brackets inside them do not count).
pub(crate) fn too_deep(bytes: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => match string_end(bytes, i) {
                Some(end) => {
                    i = end;
                    continue;
                }
                None => return false,
            },
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// The `"id"` member of the top-level object in `bytes` (a string or a
/// number), found without parsing the rest; `None` when there is none, it is
/// another type, or `bytes` is cut before it.
pub(crate) fn top_level_id(bytes: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut expect_key = false;
    let mut key_is_id = false;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        match byte {
            b'"' => {
                let end = string_end(bytes, i)?;
                if depth == 1 {
                    if expect_key {
                        key_is_id = &bytes[i..end] == b"\"id\"";
                        expect_key = false;
                    } else if key_is_id {
                        return serde_json::from_slice::<String>(&bytes[i..end])
                            .ok()
                            .map(Value::String);
                    }
                }
                i = end;
                continue;
            }
            b'{' | b'[' => {
                if (depth == 0 && byte == b'[') || (depth == 1 && key_is_id) {
                    return None;
                }
                depth += 1;
                expect_key = depth == 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return None;
                }
            }
            b',' if depth == 1 => {
                expect_key = true;
                key_is_id = false;
            }
            b'-' | b'0'..=b'9' if depth == 1 && key_is_id => {
                let end = bytes[i..]
                    .iter()
                    .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .map_or(bytes.len(), |n| i + n);
                return serde_json::from_slice::<serde_json::Number>(&bytes[i..end])
                    .ok()
                    .map(Value::Number);
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Index just past the string starting with the quote at `start`; `None`
/// when `bytes` ends inside it.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Why a message was refused before parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Larger than [`MAX_MESSAGE_BYTES`].
    TooLarge,
    /// Nested deeper than [`MAX_DEPTH`] (or otherwise unparsable).
    Unparsable,
    /// JSON, but not a JSON-RPC message the server accepts.
    NotARequest,
}

impl Refusal {
    /// The JSON-RPC error object's code and message.
    fn code_and_message(self) -> (i64, String) {
        match self {
            Refusal::TooLarge => (
                INVALID_REQUEST,
                format!("Invalid request: the message is larger than {MAX_MESSAGE_BYTES} bytes"),
            ),
            Refusal::Unparsable => (
                PARSE_ERROR,
                format!(
                    "Parse error: the message is not valid JSON or nests deeper than {MAX_DEPTH} levels"
                ),
            ),
            Refusal::NotARequest => (
                INVALID_REQUEST,
                "Invalid request: not a JSON-RPC message this server accepts".to_owned(),
            ),
        }
    }
}

/// The JSON-RPC error response (one line of JSON, no newline) answering a
/// message refused for `refusal`, when its id is in `bytes`.
pub(crate) fn error_response(bytes: &[u8], refusal: Refusal) -> Option<Vec<u8>> {
    let id = top_level_id(bytes)?;
    let (code, message) = refusal.code_and_message();
    let response = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    });
    serde_json::to_vec(&response).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_level_id_is_found_and_nested_ones_are_not() {
        let id = |text: &str| top_level_id(text.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            Some(json!(7))
        );
        assert_eq!(id(r#" { "id" : "a\"b" }"#), Some(json!("a\"b")));
        assert_eq!(
            id(r#"{"params":{"id":1,"s":"}\"id\":2"},"id":-3}"#),
            Some(json!(-3)),
            "the nested id and the one inside a string are skipped"
        );
        assert_eq!(id(r#"{"method":"notifications/x"}"#), None);
        assert_eq!(id(r#"{"id":null}"#), None);
        assert_eq!(id(r#"[{"id":1}]"#), None, "a batch is not one request");
        assert_eq!(id(r#"{"params":[[[["#), None, "cut before the id");
        let deep = format!(
            r#"{{"id":5,"params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(id(&deep), Some(json!(5)));
    }

    #[test]
    fn depth_counts_brackets_outside_strings() {
        assert!(!too_deep(br#"{"a":"[[[[[["}"#, 2));
        assert!(!too_deep(br#"{"a":[1]}"#, 2));
        assert!(too_deep(br#"{"a":[[1]]}"#, 2));
        let limit = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(!too_deep(limit.as_bytes(), MAX_DEPTH));
        assert!(
            serde_json::from_str::<Value>(&limit).is_ok(),
            "serde_json parses the limit"
        );
        let over = format!("[{limit}]");
        assert!(too_deep(over.as_bytes(), MAX_DEPTH));
        assert!(
            serde_json::from_str::<Value>(&over).is_err(),
            "and not one more"
        );
    }

    #[test]
    fn the_answer_carries_the_id_and_code() {
        let answer = error_response(br#"{"id":"x","method":"tools/call"}"#, Refusal::Unparsable);
        let answer: Value = serde_json::from_slice(&answer.unwrap()).unwrap();
        assert_eq!(answer["id"], "x");
        assert_eq!(answer["error"]["code"], PARSE_ERROR);
        assert_eq!(error_response(b"{}", Refusal::TooLarge), None);
    }
}
