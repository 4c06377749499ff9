//! Properties of the MCP message guards (`warden_mcp::fuzzing`), shared by
//! the stdio line and HTTP body targets.

use serde_json::Value;
use warden_mcp::fuzzing;

/// Nesting depth of a JSON value (a scalar is 0).
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// For JSON the depth scan agrees with the real nesting; the top-level id
/// scan finds the id a parser finds; every error answer is a JSON-RPC error
/// carrying that id.
pub(crate) fn check(bytes: &[u8]) {
    let parsed = serde_json::from_slice::<Value>(bytes).ok();
    if let Some(value) = &parsed {
        let d = depth(value);
        assert!(!fuzzing::too_deep(bytes, d), "depth {d} scanned as deeper");
        assert!(
            d == 0 || fuzzing::too_deep(bytes, d - 1),
            "depth {d} scanned as shallower"
        );
    }
    let scanned = fuzzing::top_level_id(bytes);
    if let Some(id) = &scanned {
        assert!(id.is_string() || id.is_number(), "id {id}");
    }
    // Escaped keys (`"\u0069d"`) and duplicate ids are not the scan's to
    // find; one literal `"id"` key is.
    let plain = !bytes.contains(&b'\\') && count(bytes, b"\"id\"") == 1;
    if let (Some(Value::Object(members)), true) = (&parsed, plain)
        && let Some(id) = members
            .get("id")
            .filter(|id| id.is_string() || id.is_number())
    {
        assert_eq!(
            scanned.as_ref(),
            Some(id),
            "the scan missed the top-level id"
        );
    }
    for answer in fuzzing::error_responses(bytes) {
        let Some(answer) = answer else {
            assert!(scanned.is_none(), "an id was found and not answered");
            continue;
        };
        let answer: Value = serde_json::from_slice(&answer).expect("an answer is JSON");
        assert_eq!(answer["jsonrpc"], "2.0");
        assert_eq!(Some(&answer["id"]), scanned.as_ref());
        assert!(matches!(
            answer["error"]["code"].as_i64(),
            Some(-32700 | -32600)
        ));
    }
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}
