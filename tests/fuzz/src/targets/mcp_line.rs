//! The MCP stdio framing and line parser (`warden_mcp::fuzzing`): the input
//! is a stream of newline-delimited messages. Each line, trimmed as the
//! transport trims it, is read exactly as rmcp's own deserializer reads it
//! (the same message or the same error: the server's direct path for
//! `tools/call` must not change what a line means), and the guards hold
//! (see `json_guards`).

use rmcp::{RoleServer, service::RxJsonRpcMessage};
use warden_mcp::fuzzing;

pub fn run(data: &[u8]) {
    for line in data.split_inclusive(|&b| b == b'\n') {
        let line = fuzzing::trimmed(line);
        if line.is_empty() {
            continue;
        }
        let ours = fuzzing::message(line);
        let theirs = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line);
        match (ours, theirs) {
            (Ok(ours), Ok(theirs)) => {
                assert_eq!(
                    serde_json::to_value(&ours).expect("a message serializes"),
                    serde_json::to_value(&theirs).expect("a message serializes"),
                );
                assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
            }
            (Err(ours), Err(theirs)) => assert_eq!(ours.to_string(), theirs.to_string()),
            (ours, theirs) => panic!("ours {ours:?}, rmcp's {theirs:?}"),
        }
        super::json_guards::check(line);
    }
}
