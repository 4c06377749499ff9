//! The `near:agent@0.4.1` compatibility world: detection from the
//! component, the context a guest receives, every non-HTTP import, the
//! credential chosen by URL, and each limit. The fixture is
//! `tests/fixtures/packages/near-probe` (built by `cargo xtask bundle`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use warden_core::net::{
    AuthNeeded, BoxFuture, CallNetwork, CredentialError, CredentialMatch, GuestRequest,
    GuestResponse, HttpError,
};
use warden_runtime::{
    CallOutcome, CallRequest, ComponentSpec, ComponentWorld, InstalledComponent, LimitOverrides,
    LogLevel, Runtime, RuntimeError,
};

use crate::imports::component;
use crate::support::{config, echo_dir, package, root, wasi_tool_dir};

fn near_probe() -> ComponentSpec<'static> {
    package(&root().join("tests/fixtures/packages/near-probe"))
}

fn install() -> (Runtime, InstalledComponent) {
    let runtime = Runtime::new(config()).expect("runtime");
    let tool = runtime.install(near_probe()).expect("near-probe installs");
    (runtime, tool)
}

/// A network whose one credential, `github_runtime_token`, has the
/// audience `https://api.github.com`; records what it was asked to send.
struct AudienceNetwork {
    connected: bool,
    sent: Mutex<Vec<(GuestRequest, Option<String>)>>,
}

impl AudienceNetwork {
    fn new(connected: bool) -> Arc<AudienceNetwork> {
        Arc::new(AudienceNetwork {
            connected,
            sent: Mutex::new(Vec::new()),
        })
    }

    fn needed() -> AuthNeeded {
        AuthNeeded {
            vendor: "github".into(),
            scopes: vec!["repo".into()],
        }
    }
}

impl CallNetwork for AudienceNetwork {
    fn acquire(&self, handle: &str) -> Result<(), CredentialError> {
        match (handle, self.connected) {
            ("github_runtime_token", true) => Ok(()),
            ("github_runtime_token", false) => Err(CredentialError::NotConfigured(Self::needed())),
            _ => Err(CredentialError::NotDeclared(handle.into())),
        }
    }

    fn credential_for_url(&self, url: &str) -> Result<Option<CredentialMatch>, CredentialError> {
        if !url.starts_with("https://api.github.com/") {
            return Ok(None);
        }
        if !self.connected {
            return Err(CredentialError::NotConfigured(Self::needed()));
        }
        Ok(Some(CredentialMatch {
            handle: "github_runtime_token".into(),
            needed: Self::needed(),
        }))
    }

    fn send<'a>(
        &'a self,
        request: GuestRequest,
        credential: Option<&'a str>,
        _remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        let path = request.url.clone();
        // Egress's request bound, smaller: nothing is sent past it.
        if request.body.as_ref().is_some_and(|b| b.len() > 64 << 10) {
            return Box::pin(async { Err(HttpError::RequestTooLarge) });
        }
        self.sent
            .lock()
            .unwrap()
            .push((request, credential.map(str::to_owned)));
        Box::pin(async move {
            if path.ends_with("/private") {
                return Ok(GuestResponse {
                    status: 401,
                    headers: Vec::new(),
                    body: br#"{"message":"Bad credentials"}"#.to_vec(),
                });
            }
            Ok(GuestResponse {
                status: 200,
                headers: vec![("content-type".into(), "application/json".into())],
                body: br#"{"full_name":"o/r"}"#.to_vec(),
            })
        })
    }

    fn redact(&self, text: &str) -> String {
        text.to_owned()
    }
}

async fn call(
    tool: &InstalledComponent,
    op: &str,
    input: Value,
    network: Arc<dyn CallNetwork>,
) -> CallOutcome {
    tool.call(CallRequest::new(format!("near-probe.{op}"), input.to_string()).network(network))
        .await
}

#[test]
fn the_world_is_read_from_the_component() {
    let (runtime, tool) = install();
    assert_eq!(tool.world(), ComponentWorld::NearAgent);
    assert_eq!(tool.world().as_str(), "near:agent@0.4.1");
    let echo = runtime.install(package(&echo_dir())).unwrap();
    assert_eq!(echo.world(), ComponentWorld::Warden);
    let wasi = runtime.install(package(&wasi_tool_dir())).unwrap();
    assert_eq!(wasi.world(), ComponentWorld::Warden);
}

#[tokio::test]
async fn the_guest_gets_the_capability_id_as_its_only_context() {
    let (_runtime, tool) = install();
    let network = AudienceNetwork::new(true);
    let outcome = call(&tool, "host_calls", json!({"a": [1, 2]}), network).await;
    let output = outcome.result.expect("host_calls succeeds");
    // The guest parses the context with `deny_unknown_fields`: any extra
    // field would have failed the call.
    assert_eq!(output["capability_id"], "near-probe.host_calls");
    assert_eq!(output["params"], json!({"a": [1, 2]}));
}

#[tokio::test]
async fn every_other_import_answers_as_documented() {
    let (_runtime, tool) = install();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let outcome = call(&tool, "host_calls", json!({}), AudienceNetwork::new(true)).await;
    let output = outcome.result.expect("host_calls succeeds");
    let now = output["now_millis"].as_u64().unwrap();
    assert!(now >= before && now < before + 60_000, "{now} vs {before}");
    assert_eq!(output["workspace_read"], Value::Null);
    assert_eq!(
        output["tool_invoke"],
        json!({"err": "tool-invoke is not available in this host"})
    );
    assert_eq!(
        output["secret_exists"],
        json!({"github_runtime_token": true, "undeclared": false})
    );
    let levels: Vec<LogLevel> = outcome.logs.iter().map(|l| l.level).collect();
    assert_eq!(
        levels,
        [
            LogLevel::Trace,
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Warn,
            LogLevel::Error
        ]
    );
    // Without a connected account the credential does not "exist".
    let outcome = call(&tool, "host_calls", json!({}), AudienceNetwork::new(false)).await;
    assert_eq!(
        outcome.result.unwrap()["secret_exists"]["github_runtime_token"],
        false
    );
}

#[tokio::test]
async fn the_credential_is_chosen_by_the_url_and_never_named_by_the_guest() {
    let (_runtime, tool) = install();
    let network = AudienceNetwork::new(true);
    let outcome = call(
        &tool,
        "get_repo",
        json!({"owner": "o", "repo": "r"}),
        network.clone(),
    )
    .await;
    assert_eq!(outcome.result.unwrap(), json!({"full_name": "o/r"}));
    let outcome = call(
        &tool,
        "fetch",
        json!({"url": "https://objects.example.net/x"}),
        network.clone(),
    )
    .await;
    assert_eq!(outcome.result.unwrap()["response"]["status"], 200);
    let sent = network.sent.lock().unwrap();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].0.url, "https://api.github.com/repos/o/r");
    assert_eq!(sent[0].1.as_deref(), Some("github_runtime_token"));
    assert!(
        sent[0]
            .0
            .headers
            .contains(&("Accept".into(), "application/vnd.github+json".into())),
        "headers-json became header fields: {:?}",
        sent[0].0.headers
    );
    assert_eq!(sent[1].1, None, "no credential off the audience");
}

#[tokio::test]
async fn auth_required_carries_vendor_scopes_and_extension() {
    let (_runtime, tool) = install();
    // The provider says 401: the guest reports auth-required.
    let outcome = call(
        &tool,
        "get_repo",
        json!({"owner": "o", "repo": "private"}),
        AudienceNetwork::new(true),
    )
    .await;
    let expected = RuntimeError::AuthRequired {
        vendor: Some("github".into()),
        scopes: vec!["repo".into()],
        extension: "near-probe".into(),
    };
    assert_eq!(outcome.result.unwrap_err(), expected);
    // No account connected: the host refuses the request as auth-required,
    // nothing is sent, and the guest's failure becomes the same outcome.
    let network = AudienceNetwork::new(false);
    let outcome = call(
        &tool,
        "get_repo",
        json!({"owner": "o", "repo": "r"}),
        network.clone(),
    )
    .await;
    assert_eq!(outcome.result.unwrap_err(), expected);
    assert!(network.sent.lock().unwrap().is_empty());
}

#[tokio::test]
async fn malformed_headers_json_and_credential_queries_are_refused_before_sending() {
    let (_runtime, tool) = install();
    let network = AudienceNetwork::new(true);
    let huge_headers: String = format!(
        "{{{}\"z\":\"\"}}",
        (0..30_000)
            .map(|i| format!("\"a{i}\":\"\","))
            .collect::<String>()
    );
    for (input, code) in [
        (
            json!({"url": "https://api.github.com/x", "headers": "[1]"}),
            "request_denied",
        ),
        (
            json!({"url": "https://api.github.com/x", "headers": {"x": "1", "y": "2"}, "body": "b"}),
            "",
        ),
        (
            json!({"url": "https://api.github.com/x?access_token=abc"}),
            "request_denied",
        ),
        // Past the bounds, refused before being parsed.
        (
            json!({"url": "https://api.github.com/x", "headers": huge_headers}),
            "request_denied",
        ),
        (
            json!({"url": format!("https://api.github.com/{}", "x".repeat(9 << 10))}),
            "request_denied",
        ),
    ] {
        let output = call(&tool, "fetch", input.clone(), network.clone())
            .await
            .result
            .unwrap();
        let input: String = input.to_string().chars().take(200).collect();
        if code.is_empty() {
            assert_eq!(output["response"]["status"], 200, "{input}: {output}");
        } else {
            assert_eq!(
                output["failure"]["kind"], "network-denied",
                "{input}: {output}"
            );
            assert_eq!(output["failure"]["code"], code);
            assert_eq!(output["failure"]["request_sent"], false);
        }
    }
    assert_eq!(
        network.sent.lock().unwrap().len(),
        1,
        "only the valid request"
    );
}

/// A request body over egress's bound is said to be one, and not sent: it
/// was reported as a response over its bound, with `request-sent`.
#[tokio::test]
async fn a_request_body_over_the_bound_is_reported_as_not_sent() {
    let (_runtime, tool) = install();
    let network = AudienceNetwork::new(true);
    let input = json!({"url": "https://api.github.com/x", "body": "b".repeat((64 << 10) + 1)});
    let output = call(&tool, "fetch", input, network.clone())
        .await
        .result
        .unwrap();
    let failure = &output["failure"];
    assert_eq!(failure["kind"], "operation-failed", "{failure}");
    assert_eq!(failure["code"], "request_body_limit_exceeded", "{failure}");
    assert_eq!(failure["request_sent"], false, "{failure}");
    assert!(network.sent.lock().unwrap().is_empty());
}

#[tokio::test]
async fn fuel_and_time_limits_stop_the_guest() {
    let (_runtime, tool) = install();
    let run = |limits: LimitOverrides| {
        tool.call(
            CallRequest::new("near-probe.spin", "{}")
                .limits(limits)
                .network(AudienceNetwork::new(true)),
        )
    };
    let outcome = run(LimitOverrides {
        fuel: Some(5_000_000),
        ..LimitOverrides::default()
    })
    .await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::FuelExhausted { limit: 5_000_000 }
    );
    // Fuel as high as the maxima allow: a tight loop burns the default in
    // about the time of this deadline, and the deadline is what is tested.
    let outcome = run(LimitOverrides {
        timeout_ms: Some(300),
        fuel: Some(u64::MAX),
        ..LimitOverrides::default()
    })
    .await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::Timeout {
            limit: Duration::from_millis(300)
        }
    );
}

#[tokio::test]
async fn memory_output_log_and_request_limits_hold() {
    let (_runtime, tool) = install();
    let network = || AudienceNetwork::new(true);
    let outcome = tool
        .call(
            CallRequest::new("near-probe.hog", r#"{"mib": 32}"#)
                .limits(LimitOverrides {
                    memory_bytes: Some(16 << 20),
                    ..LimitOverrides::default()
                })
                .network(network()),
        )
        .await;
    assert_eq!(
        outcome.result.unwrap_err(),
        RuntimeError::MemoryLimit {
            limit_bytes: 16 << 20
        }
    );
    let outcome = tool
        .call(
            CallRequest::new("near-probe.emit", r#"{"bytes": 70000}"#)
                .limits(LimitOverrides {
                    max_output_bytes: Some(65536),
                    ..LimitOverrides::default()
                })
                .network(network()),
        )
        .await;
    assert!(
        matches!(
            outcome.result,
            Err(RuntimeError::OutputTooLarge { limit: 65536, .. })
        ),
        "{:?}",
        outcome.result
    );
    let max_logs = config().defaults.max_log_entries;
    let outcome = call(&tool, "emit", json!({"logs": max_logs + 10}), network()).await;
    assert!(outcome.result.is_ok());
    assert_eq!(outcome.logs.len(), max_logs as usize);
    assert_eq!(outcome.usage.log_entries_dropped, 10);
    let max_requests = config().defaults.max_http_requests;
    let network = network();
    let outcome = call(
        &tool,
        "fetch",
        json!({"url": "https://api.github.com/x", "repeat": max_requests + 1}),
        network.clone(),
    )
    .await;
    let output = outcome.result.unwrap();
    assert_eq!(output["failure"]["code"], "limit_exceeded", "{output}");
    assert_eq!(network.sent.lock().unwrap().len(), max_requests as usize);
}

#[test]
fn a_component_whose_schema_traps_is_refused_at_install() {
    // A dummy core module: every export traps, `schema()` included.
    let wasm = component(&format!(
        "package test:probe;
        world w {{ export near:agent/tool@0.4.1; }}
        {}",
        compat_package()
    ));
    let runtime = Runtime::new(config()).unwrap();
    let error = runtime
        .install(ComponentSpec::new("broken", wasm))
        .unwrap_err();
    assert!(
        matches!(&error, RuntimeError::ToolSchema { component, .. } if component == "broken"),
        "{error:?}"
    );
    assert_eq!(error.code(), "invalid_tool_schema");
}

#[test]
fn another_near_agent_version_or_a_foreign_import_is_refused_by_name() {
    let runtime = Runtime::new(config()).unwrap();
    let other_version = component(
        "package test:v;
        world w { export near:agent/tool@0.5.0; }
        package near:agent@0.5.0 { interface tool { schema: func() -> string; } }",
    );
    let error = runtime
        .install(ComponentSpec::new("future", other_version))
        .unwrap_err();
    assert!(
        error.to_string().contains("near:agent/tool@0.5.0"),
        "{error}"
    );
    // A near:agent component may not reach Warden's own imports, and a
    // Warden component may not reach near:agent's.
    let mixed = component(&format!(
        "package test:mixed;
        world w {{ import warden:tool/log@0.1.0; export near:agent/tool@0.4.1; }}
        {}
        package warden:tool@0.1.0 {{ interface log {{ log: func(message: string); }} }}",
        compat_package()
    ));
    let error = runtime
        .install(ComponentSpec::new("mixed", mixed))
        .unwrap_err();
    assert_eq!(
        error,
        RuntimeError::ImportNotAllowed {
            component: "mixed".into(),
            import: "warden:tool/log@0.1.0".into()
        }
    );
}

/// The compatibility WIT, as a nested package for [`component`].
fn compat_package() -> String {
    let wit = std::fs::read_to_string(root().join("wit/near-agent-0.4.1/tool.wit")).unwrap();
    let body = wit
        .split_once("package near:agent@0.4.1;")
        .expect("package line")
        .1;
    // Top-level worlds may not be nested: keep the interfaces only.
    let interfaces = body.split("/// A sandboxed tool").next().unwrap();
    format!("package near:agent@0.4.1 {{ {interfaces} }}")
}

/// A `near:agent` component whose `schema()` waits on a WASI clock for an
/// hour (a host call: no epoch interrupt reaches it there). Its core module
/// is written by hand; `description()` answers `sleeper`.
fn sleeping_schema_component() -> Vec<u8> {
    let wit = format!(
        "package test:sleeper;
        world w {{
            import wasi:clocks/monotonic-clock@0.2.0;
            export near:agent/tool@0.4.1;
        }}
        package wasi:io@0.2.0 {{ interface poll {{ resource pollable {{ block: func(); }} }} }}
        package wasi:clocks@0.2.0 {{
            interface monotonic-clock {{
                use wasi:io/poll@0.2.0.{{pollable}};
                subscribe-duration: func(when: u64) -> pollable;
            }}
        }}
        {}",
        compat_package()
    );
    crate::imports::component_of(&wit, |_, _| {
        wat::parse_str(
            r#"(module
            (import "wasi:clocks/monotonic-clock@0.2.0" "subscribe-duration"
                (func $subscribe (param i64) (result i32)))
            (import "wasi:io/poll@0.2.0" "[method]pollable.block" (func $block (param i32)))
            (memory (export "memory") 1)
            (data (i32.const 16) "{}")
            (data (i32.const 32) "sleeper")
            (func (export "near:agent/tool@0.4.1#description") (result i32)
                (i32.store (i32.const 0) (i32.const 32))
                (i32.store (i32.const 4) (i32.const 7))
                (i32.const 0))
            (func (export "near:agent/tool@0.4.1#schema") (result i32)
                (call $block (call $subscribe (i64.const 3600000000000)))
                (i32.store (i32.const 0) (i32.const 16))
                (i32.store (i32.const 4) (i32.const 2))
                (i32.const 0))
            (func (export "near:agent/tool@0.4.1#execute")
                (param i32 i32 i32 i32 i32) (result i32)
                unreachable)
            (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
                (i32.const 1024)))"#,
        )
        .expect("core module")
    })
}

/// Install calls `schema()` under the runtime's default time limit, also
/// while the guest waits in a host call (a clock, here): it waited for the
/// whole hour, and an install, or every call of a lazily installed tool,
/// hung with it. Outside any Tokio runtime as inside one.
#[test]
fn a_schema_that_waits_is_refused_when_the_time_limit_passes() {
    let install = |runtime: Arc<Runtime>| {
        let (done, wait) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done
                .send(runtime.install(ComponentSpec::new("sleeper", sleeping_schema_component())));
        });
        wait.recv_timeout(Duration::from_secs(60))
            .expect("install returns")
    };
    let mut short = config();
    short.defaults.timeout = Duration::from_millis(300);
    let runtime = Arc::new(Runtime::new(short).unwrap());
    for inside_tokio in [false, true] {
        let error = if inside_tokio {
            let tokio = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            let runtime = runtime.clone();
            tokio.block_on(async move {
                tokio::task::spawn_blocking(move || install(runtime))
                    .await
                    .unwrap()
            })
        } else {
            install(runtime.clone())
        }
        .unwrap_err();
        assert_eq!(error.code(), "invalid_tool_schema", "{error}");
        assert!(error.to_string().contains("time"), "{error}");
    }
}
