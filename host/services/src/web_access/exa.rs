//! Exa's MCP endpoint (`https://mcp.exa.ai/mcp`, no key) as a small MCP
//! client over the call's egress session: `initialize`, the `initialized`
//! notification, then one `tools/call`. Answers may be JSON or an event
//! stream (Streamable HTTP); the session id Exa gives is sent back.
//!
//! Every byte goes through egress, so the package's network target
//! (`mcp.exa.ai` only) and its `max_egress_bytes` bound all of it.

use serde_json::{Value, json};
use warden_core::net::GuestRequest;
use warden_host::{CallHttp, FirstPartyError};

use crate::support::failed;

pub(crate) const ENDPOINT: &str = "https://mcp.exa.ai/mcp";
const PROTOCOL: &str = "2025-06-18";

/// The text Exa's tool `name` answers to `arguments`.
pub(crate) async fn call_tool(
    http: &CallHttp,
    name: &str,
    arguments: Value,
) -> Result<String, FirstPartyError> {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "warden", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let (session, answer) = post(http, &initialize, None).await?;
    result(&answer, 1)?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(http, &initialized, session.as_deref()).await?;
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    });
    let (_, answer) = post(http, &call, session.as_deref()).await?;
    let result = result(&answer, 2)?;
    let text: Vec<&str> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "text")
        .filter_map(|c| c["text"].as_str())
        .collect();
    if result["isError"] == true {
        return Err(failed(format!("Exa's `{name}` failed: {}", text.join(" "))));
    }
    if text.is_empty() {
        return Err(failed(format!("Exa's `{name}` answered no text")));
    }
    Ok(text.join("\n"))
}

/// POST one JSON-RPC message: the session id the answer names, and the
/// answer (JSON, the JSON-RPC message of an event stream, or `null` for a
/// notification's empty 202).
async fn post(
    http: &CallHttp,
    message: &Value,
    session: Option<&str>,
) -> Result<(Option<String>, Value), FirstPartyError> {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        (
            "accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    if let Some(session) = session {
        headers.push(("mcp-session-id".to_owned(), session.to_owned()));
        headers.push(("mcp-protocol-version".to_owned(), PROTOCOL.to_owned()));
    }
    let request = GuestRequest {
        method: "POST".into(),
        url: ENDPOINT.into(),
        headers,
        body: Some(message.to_string().into_bytes()),
        timeout: None,
    };
    let response = http.send(request).await?;
    if !(200..300).contains(&response.status) {
        return Err(failed(format!(
            "Exa's MCP endpoint answered {} to `{}`",
            response.status, message["method"]
        )));
    }
    let session = response
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("mcp-session-id"))
        .map(|(_, value)| value.clone())
        .or_else(|| session.map(str::to_owned));
    let text = String::from_utf8_lossy(&response.body);
    let answer = if text.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text)
            .ok()
            .or_else(|| event_stream_message(&text))
            .ok_or_else(|| failed("Exa's MCP endpoint answered neither JSON nor an event stream"))?
    };
    Ok((session, answer))
}

/// The first JSON-RPC message an event stream carries (`data:` lines of
/// one event, joined).
fn event_stream_message(text: &str) -> Option<Value> {
    let normalized = text.replace("\r\n", "\n");
    normalized.split("\n\n").find_map(|event| {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        let message: Value = serde_json::from_str(&data.join("\n")).ok()?;
        message.get("jsonrpc").is_some().then_some(message)
    })
}

/// The `result` of the answer to request `id`, or the error it carries.
fn result(answer: &Value, id: u64) -> Result<&Value, FirstPartyError> {
    if let Some(error) = answer.get("error") {
        return Err(failed(format!(
            "Exa's MCP endpoint refused the request: {}",
            error["message"].as_str().unwrap_or("no message")
        )));
    }
    match answer.get("result") {
        Some(result) if answer["id"] == id && result.is_object() => Ok(result),
        _ => Err(failed("Exa's MCP endpoint answered without a result")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_gives_its_json_rpc_message() {
        let stream = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":2,\"result\":{}}\r\n\r\n";
        let message = event_stream_message(stream).unwrap();
        assert_eq!(message["id"], 2);
        assert!(event_stream_message(": ping\n\n").is_none());
    }

    #[test]
    fn an_answer_to_another_request_or_an_error_is_no_result() {
        assert!(result(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}), 1).is_ok());
        assert!(result(&json!({"jsonrpc": "2.0", "id": 3, "result": {}}), 1).is_err());
        let error = result(&json!({"id": 1, "error": {"message": "bad"}}), 1).unwrap_err();
        assert!(error.to_string().contains("bad"));
    }
}
