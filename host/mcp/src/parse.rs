//! Parsing one JSON-RPC line into rmcp's message type, with a direct path
//! for the message a server gets most: a `tools/call` request.
//!
//! rmcp's `JsonRpcMessage` deserializes through two untagged enums (the
//! message kind, then the request kind): the line is buffered and every
//! request type is tried until one fits, each failure a formatted error.
//! That was about a tenth of the server's CPU per call. A `tools/call`
//! request whose members are exactly `jsonrpc`, `id`, `method` and `params`
//! is read here into the same value directly; anything else (another
//! method, another member, a malformed line) goes through rmcp's own
//! deserializer, so errors and unusual shapes are exactly rmcp's.

use std::borrow::Cow;

use rmcp::{
    RoleServer,
    model::{
        CallToolRequest, ClientRequest, JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0,
        RequestId,
    },
    service::RxJsonRpcMessage,
};
use serde::{Deserialize, de::IgnoredAny};

/// The members of a plain request, nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    #[allow(dead_code, reason = "checked to be \"2.0\" while parsing")]
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[allow(dead_code, reason = "read again as the request's own params")]
    params: Option<IgnoredAny>,
}

/// `line` (one message, without its newline) as rmcp reads it.
pub(crate) fn message(line: &[u8]) -> serde_json::Result<RxJsonRpcMessage<RoleServer>> {
    if let Some(call) = tool_call(line) {
        return Ok(call);
    }
    serde_json::from_slice(line)
}

/// A plain `tools/call` request, or `None` for anything else.
fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    let envelope: Envelope<'_> = serde_json::from_slice(line).ok()?;
    if envelope.method != "tools/call" {
        return None;
    }
    // rmcp's request deserializer reads `method` and `params` and skips
    // the other members, which the envelope has just checked.
    let request: CallToolRequest = serde_json::from_slice(line).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(
        envelope.id,
        ClientRequest::CallToolRequest(request),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rmcp(line: &str) -> serde_json::Result<RxJsonRpcMessage<RoleServer>> {
        serde_json::from_str(line)
    }

    /// The same message (its wire form and its `Debug`, which shows the
    /// request kind and extensions), or the same failure.
    fn assert_same(line: &str) {
        match (message(line.as_bytes()), rmcp(line)) {
            (Ok(ours), Ok(theirs)) => {
                assert_eq!(
                    serde_json::to_value(&ours).unwrap(),
                    serde_json::to_value(&theirs).unwrap(),
                    "{line}"
                );
                assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{line}");
            }
            (Err(ours), Err(theirs)) => assert_eq!(ours.to_string(), theirs.to_string()),
            (ours, theirs) => panic!("{line}: ours {ours:?}, rmcp {theirs:?}"),
        }
    }

    #[test]
    fn a_plain_tool_call_takes_the_direct_path() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo_echo","arguments":{"text":"hi"}}}"#,
            r#"{"params":{"name":"x","arguments":{}},"method":"tools/call","id":"abc","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":3,"k":[1]}}}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"method":"tools\/call","params":{"name":"x","task":{"ttl":5}}}"#,
        ] {
            assert!(tool_call(line.as_bytes()).is_some(), "{line}");
            assert_same(line);
        }
    }

    #[test]
    fn everything_else_is_rmcps_own_reading() {
        for line in [
            // Another method, a notification, a response.
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
            // A stray member, a duplicate one, a wrong version.
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":3,"id":4,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":3,"method":"tools/call","params":{"name":"x"}}"#,
            // Params a call cannot have, none at all, a bad id.
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":[3],"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}"#,
        ] {
            assert!(tool_call(line.as_bytes()).is_none(), "{line}");
            assert_same(line);
        }
    }
}
