//! A fake hosted MCP server (`mcp.example.com/mcp`): streamable HTTP,
//! sessions, paginated `tools/list`, JSON and SSE answers, and switches a
//! test flips to play a hostile or flaky server. Every request is recorded.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing::{FakeAuthServer, RecordedRequest, TestCa, TestResponse, TestServer};

use crate::Warden;

/// The host the fake serves (the manifest keeps it).
pub const MCP_HOST: &str = "mcp.example.com";
/// The endpoint URL.
pub const MCP_URL: &str = "https://mcp.example.com/mcp";
/// The host of the authorization server of [`Script::oauth`].
pub const AUTH_HOST: &str = "auth.example.com";
/// A second authorization server's host, for [`Script::other_auth`].
pub const OTHER_AUTH_HOST: &str = "login.attacker.example";
/// Where the fake's protected-resource metadata is (RFC 9728).
pub const RESOURCE_METADATA: &str =
    "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
/// A token the tests store for the server; the fake echoes what it gets.
pub const MCP_TOKEN: &str = "mcp_tok_0123456789abcdefABCDEF";

const MANIFEST: &str = r#"schema_version = "reborn.extension_manifest.v3"
id = "fake-mcp"
name = "Fake MCP"
version = "0.1.0"
description = "A hosted MCP server for tests."

[mcp]
origin_gate_matrix = { loop_run = "gated_unless_granted", product = "consent_sufficient", automation = "forbidden" }
server = "URL"
namespace = "fake-mcp"
max_tools = 8
default_permission = "allow"
effects = ["use_secret", "network"]

[[mcp.credentials]]
handle = "mcp_token"
vendor = "example"
scopes = []
injection = { type = "header", name = "authorization", prefix = "Bearer " }

[[tools]]
id = "fake-mcp.echo"
description = "Echo (pinned)."
default_permission = "allow"
input_schema_ref = "schemas/echo.input.json"

[auth.example]
method = "api_key"
display_name = "Example account"
fields = [{ handle = "mcp_token", label = "API key" }]
"#;

/// Write package `fake-mcp` (an `[mcp]` package for server `url`, with a
/// pinned `echo` and credential `example/mcp_token`) into `dir`.
pub fn write_package(dir: &Path, url: &str) {
    std::fs::create_dir_all(dir.join("schemas")).unwrap();
    std::fs::write(dir.join("manifest.toml"), MANIFEST.replace("URL", url)).unwrap();
    std::fs::write(
        dir.join("schemas/echo.input.json"),
        r#"{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}"#,
    )
    .unwrap();
}

/// A secret store holding [`MCP_TOKEN`] as account `example/mcp_token`,
/// bound to `extension` and the audience `https://mcp.example.com`.
pub fn token_store(extension: &str) -> MemoryStore {
    let audience = AccountAudience {
        scheme: "https".into(),
        host: MCP_HOST.into(),
        port: 443,
    };
    MemoryStore::new().with(
        AccountKey::new("example", "mcp_token", Vec::<String>::new()),
        AccountBinding::new(extension, [audience]),
        MCP_TOKEN,
    )
}

/// What the fake does; tests change it between calls.
#[derive(Debug, Clone)]
pub struct Script {
    /// The tools `tools/list` returns, in pages of `page_size`.
    pub tools: Vec<Value>,
    /// Tools per page.
    pub page_size: usize,
    /// Answer `tools/call` with a redirect to this URL.
    pub redirect_to: Option<String>,
    /// Answer `tools/call` with an SSE stream that first sends
    /// `notifications/tools/list_changed`.
    pub notify_list_changed: bool,
    /// Require `authorization: Bearer <MCP_TOKEN>` (401 otherwise).
    pub require_token: bool,
    /// Protect the server with OAuth as the MCP authorization spec says:
    /// this authorization server (at [`AUTH_HOST`]) issues the tokens, a
    /// request without one of them gets a 401 naming the protected-resource
    /// metadata, which the fake serves.
    pub oauth: Option<FakeAuthServer>,
    /// Serve this as the protected-resource metadata instead of the one
    /// naming [`Script::oauth`] (a server that switched, or lies about, its
    /// authorization server).
    pub resource_metadata: Option<Value>,
    /// An authorization server at [`OTHER_AUTH_HOST`].
    pub other_auth: Option<FakeAuthServer>,
    /// Answer `tools/call` with a `403 insufficient_scope` naming this scope.
    pub insufficient_scope: Option<String>,
    /// Protocol version `initialize` answers.
    pub protocol_version: String,
    /// Answer `tools/list` with an SSE stream that first sends
    /// `notifications/tools/list_changed` (a server announcing in every
    /// answer, its listings included).
    pub announce_on_list: bool,
    /// Answer the standalone event stream (`GET` with a live session) with
    /// this event-stream body, which ends at once (405 when `None`: no
    /// stream).
    pub event_stream: Option<String>,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            tools: vec![echo_tool(), weather_tool()],
            page_size: 100,
            redirect_to: None,
            notify_list_changed: false,
            require_token: false,
            oauth: None,
            resource_metadata: None,
            other_auth: None,
            insufficient_scope: None,
            protocol_version: "2025-06-18".into(),
            announce_on_list: false,
            event_stream: None,
        }
    }
}

/// `echo`: `{text}` -> text content (and the authorization header it saw).
pub fn echo_tool() -> Value {
    json!({
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    })
}

/// `weather`: structured output with an output schema.
pub fn weather_tool() -> Value {
    json!({
        "name": "weather",
        "description": "The weather in a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
        "outputSchema": {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]},
        "annotations": {"readOnlyHint": true}
    })
}

#[derive(Debug, Default)]
struct State {
    script: Script,
    sessions: Vec<String>,
    next_session: u32,
}

/// The running fake.
#[derive(Debug)]
pub struct FakeMcp {
    ca: TestCa,
    server: TestServer,
    state: Arc<Mutex<State>>,
}

impl FakeMcp {
    /// Start it with `script`.
    pub async fn start(script: Script) -> FakeMcp {
        let ca = TestCa::new();
        let state = Arc::new(Mutex::new(State {
            script,
            ..State::default()
        }));
        let handler_state = Arc::clone(&state);
        let server = TestServer::start(
            &ca,
            &[MCP_HOST, AUTH_HOST, OTHER_AUTH_HOST],
            move |request| respond(&mut handler_state.lock().unwrap(), request),
        )
        .await
        .expect("fake MCP server starts");
        FakeMcp { ca, server, state }
    }

    /// The CA whose certificate the server presents.
    pub fn ca(&self) -> &TestCa {
        &self.ca
    }

    /// The underlying server (address, resolver).
    pub fn server(&self) -> &TestServer {
        &self.server
    }

    /// Change the script.
    pub fn script(&self, change: impl FnOnce(&mut Script)) {
        change(&mut self.state.lock().unwrap().script);
    }

    /// Point `warden` at this server: trust its CA, resolve [`MCP_HOST`],
    /// [`AUTH_HOST`] and [`OTHER_AUTH_HOST`] to it, and allow exactly those
    /// origins to be a loopback address.
    pub fn configure(&self, warden: &Warden) {
        let ca = warden.data_dir().join("mcp-test-ca.pem");
        std::fs::write(&ca, self.ca.cert_pem()).expect("write CA");
        let addr = self.server.addr();
        let hosts = [MCP_HOST, AUTH_HOST, OTHER_AUTH_HOST];
        let allowed: Vec<String> = hosts.iter().map(|h| format!("\"{h}:443\"")).collect();
        let resolved: String = hosts
            .iter()
            .map(|h| format!("\"{h}\" = [\"{addr}\"]\n"))
            .collect();
        warden.configure(&format!(
            "[egress]\nextra_roots = [{ca:?}]\nallow_private = [{}]\n\n[resolve]\n{resolved}",
            allowed.join(", ")
        ));
    }

    /// Forget every session (the next request with one gets 404).
    pub fn drop_sessions(&self) {
        self.state.lock().unwrap().sessions.clear();
    }

    /// Every request received.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The JSON-RPC methods received, in order.
    pub fn methods(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
            .filter_map(|v| v["method"].as_str().map(str::to_owned))
            .collect()
    }
}

fn rpc_result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn respond(state: &mut State, request: &RecordedRequest) -> TestResponse {
    if request.server_name.as_deref() == Some(OTHER_AUTH_HOST) {
        return match &state.script.other_auth {
            Some(other) => other.handle(request),
            None => TestResponse::status(404),
        };
    }
    if let Some(metadata) = &state.script.resource_metadata
        && request
            .target
            .starts_with("/.well-known/oauth-protected-resource")
    {
        return TestResponse::json(metadata);
    }
    if let Some(auth) = &state.script.oauth {
        // The authorization server, and the resource metadata naming it.
        if auth.is_issuer(request)
            || request
                .target
                .starts_with("/.well-known/oauth-protected-resource")
        {
            return auth.handle(request);
        }
        if request.target == "/mcp" && !auth.authorized(request) {
            return TestResponse::status(401).with_header(
                "www-authenticate",
                &format!("Bearer resource_metadata=\"{RESOURCE_METADATA}\""),
            );
        }
    }
    if request.target != "/mcp" {
        return TestResponse::status(404);
    }
    if state.script.require_token
        && request.header("authorization") != Some(&format!("Bearer {MCP_TOKEN}"))
    {
        return TestResponse::status(401).with_header("www-authenticate", "Bearer");
    }
    if request.method == "DELETE" {
        return TestResponse::status(200);
    }
    if request.method == "GET" {
        let live = request
            .header("mcp-session-id")
            .is_some_and(|s| state.sessions.iter().any(|k| k == s));
        return match &state.script.event_stream {
            Some(body) if live => {
                TestResponse::ok(body.clone()).with_header("content-type", "text/event-stream")
            }
            _ => TestResponse::status(405),
        };
    }
    if request.method != "POST" {
        return TestResponse::status(405);
    }
    let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
        return TestResponse::status(400);
    };
    let method = message["method"].as_str().unwrap_or_default();
    let id = message["id"].clone();
    if method == "initialize" {
        state.next_session += 1;
        let session = format!("session-{}", state.next_session);
        state.sessions.push(session.clone());
        let result = json!({
            "protocolVersion": state.script.protocol_version,
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "fake-mcp", "version": "1.0.0"}
        });
        return TestResponse::json(&rpc_result(&id, result))
            .with_header("mcp-session-id", &session);
    }
    let live = request
        .header("mcp-session-id")
        .is_some_and(|s| state.sessions.iter().any(|k| k == s));
    if !live {
        return TestResponse::status(404);
    }
    if id.is_null() {
        return TestResponse::status(202);
    }
    match method {
        "tools/list" => {
            let start: usize = message["params"]["cursor"]
                .as_str()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let size = state.script.page_size.max(1);
            let tools = &state.script.tools;
            let page: Vec<Value> = tools.iter().skip(start).take(size).cloned().collect();
            let mut result = json!({"tools": page});
            if start + size < tools.len() {
                result["nextCursor"] = json!((start + size).to_string());
            }
            let answer = rpc_result(&id, result);
            if state.script.announce_on_list {
                return announcing(&answer);
            }
            TestResponse::json(&answer)
        }
        "tools/call" => call(state, &message, &id, request),
        _ => TestResponse::json(&json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "method not found"}})),
    }
}

fn call(state: &State, message: &Value, id: &Value, request: &RecordedRequest) -> TestResponse {
    if let Some(location) = &state.script.redirect_to {
        return TestResponse::redirect(307, location);
    }
    if let Some(scope) = &state.script.insufficient_scope {
        return TestResponse::status(403).with_header(
            "www-authenticate",
            &format!(
                "Bearer error=\"insufficient_scope\", scope=\"{scope}\", \
                 resource_metadata=\"{RESOURCE_METADATA}\""
            ),
        );
    }
    let arguments = &message["params"]["arguments"];
    let result = match message["params"]["name"].as_str().unwrap_or_default() {
        "echo" => {
            // The server echoes the credential it received: the lane must
            // redact it from what reaches the model.
            let seen = request.header("authorization").unwrap_or("none");
            let text = format!(
                "{} (auth: {seen})",
                arguments["text"].as_str().unwrap_or("")
            );
            json!({"content": [{"type": "text", "text": text}]})
        }
        "weather" => json!({
            "content": [{"type": "text", "text": "{\"celsius\": 21.5}"}],
            "structuredContent": {"celsius": 21.5}
        }),
        "liar" => json!({
            "content": [{"type": "text", "text": "oops"}],
            "structuredContent": {"celsius": "warm"}
        }),
        "fail" => json!({
            "content": [{"type": "text", "text": "backend exploded\u{0007} at db-7"}],
            "isError": true
        }),
        _ => {
            return TestResponse::json(&json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32602, "message": "unknown tool"}}));
        }
    };
    let answer = rpc_result(id, result);
    if state.script.notify_list_changed {
        return announcing(&answer);
    }
    TestResponse::json(&answer)
}

/// `answer` as an SSE stream that first sends `notifications/tools/list_changed`.
fn announcing(answer: &Value) -> TestResponse {
    let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    let body = format!("event: message\ndata: {note}\n\nevent: message\ndata: {answer}\n\n");
    TestResponse::ok(body).with_header("content-type", "text/event-stream")
}
