//! The locked-down WASI 0.2 of `wasm32-wasip2` components: stdio into the
//! log, no environment, no filesystem, no sockets or HTTP.

use serde_json::Value;
use warden_runtime::{
    CallRequest, ComponentSpec, InstalledComponent, LogLevel, Runtime, RuntimeError,
};

use crate::imports::component;
use crate::support::{FakeNetwork, config, package, wasi_tool_dir};

fn install() -> (Runtime, InstalledComponent) {
    let runtime = Runtime::new(config()).expect("runtime");
    let tool = runtime
        .install(package(&wasi_tool_dir()))
        .expect("the wasm32-wasip2 fixture installs");
    (runtime, tool)
}

async fn probe(tool: &InstalledComponent, say: &str) -> (Value, Vec<(LogLevel, String)>) {
    let input = serde_json::json!({ "say": say }).to_string();
    let outcome = tool
        .call(CallRequest::new("wasi-tool.probe", input).network(FakeNetwork::new(false, false)))
        .await;
    let logs = outcome
        .logs
        .iter()
        .map(|entry| (entry.level, entry.message.clone()))
        .collect();
    (outcome.result.expect("the probe succeeds"), logs)
}

#[tokio::test]
async fn stdout_and_stderr_land_in_the_call_log_redacted() {
    let (_runtime, tool) = install();
    let (_, logs) = probe(&tool, "hello from wasi, token s3cr3t").await;
    assert!(
        logs.contains(&(LogLevel::Info, "hello from wasi, token [REDACTED]".into())),
        "{logs:?}"
    );
    assert!(
        logs.contains(&(LogLevel::Warn, "wasi-tool: stderr works".into())),
        "{logs:?}"
    );
    assert!(logs.iter().all(|(_, m)| !m.contains("s3cr3t")));
}

#[tokio::test]
async fn the_environment_is_empty_and_the_filesystem_closed() {
    let (_runtime, tool) = install();
    let (output, _) = probe(&tool, "probe").await;
    assert_eq!(output["env"], serde_json::json!([]), "{output}");
    assert_eq!(output["home"], Value::Null);
    assert_eq!(output["args"], 0);
    assert_eq!(
        output["stdin"],
        serde_json::json!({ "ok": 0 }),
        "stdin is empty"
    );
    for denied in ["read_dir", "write_file"] {
        assert!(
            output[denied]["error"].is_string(),
            "{denied} must fail without preopens: {output}"
        );
    }
    assert!(output["unix_seconds"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(output["monotonic_ok"], true);
}

#[tokio::test]
async fn calls_share_nothing_and_a_contract_tool_still_runs_beside() {
    let (runtime, tool) = install();
    let echo = runtime
        .install(package(&crate::support::echo_dir()))
        .expect("echo");
    for say in ["first", "second"] {
        let (_, logs) = probe(&tool, say).await;
        let stdout: Vec<&str> = logs
            .iter()
            .filter(|(level, _)| *level == LogLevel::Info)
            .map(|(_, m)| m.as_str())
            .collect();
        assert_eq!(stdout, [say], "each call sees only its own stdout");
    }
    let outcome = echo
        .call(CallRequest::new("echo.echo", r#"{"text": "ok"}"#))
        .await;
    assert_eq!(outcome.result.expect("echo")["text"], "ok");
}

fn refused_import(wit: &str) -> RuntimeError {
    let runtime = Runtime::new(config()).unwrap();
    runtime
        .install(ComponentSpec::new("net", component(wit)))
        .unwrap_err()
}

#[test]
fn wasi_sockets_are_refused_at_install_by_name() {
    let error = refused_import(
        "package test:net;
        world w {
            import wasi:clocks/wall-clock@0.2.6;
            import wasi:sockets/tcp@0.2.6;
            export run: func() -> u32;
        }
        package wasi:clocks@0.2.6 {
            interface wall-clock { now: func() -> u64; }
        }
        package wasi:sockets@0.2.6 {
            interface tcp { connect: func(address: string) -> u32; }
        }",
    );
    assert_eq!(
        error,
        RuntimeError::ImportNotAllowed {
            component: "net".into(),
            import: "wasi:sockets/tcp@0.2.6".into()
        }
    );
}

#[test]
fn wasi_http_is_refused_at_install_by_name() {
    let error = refused_import(
        "package test:net;
        world w {
            import wasi:http/outgoing-handler@0.2.6;
            export run: func() -> u32;
        }
        package wasi:http@0.2.6 {
            interface outgoing-handler { handle: func(url: string) -> u32; }
        }",
    );
    assert_eq!(
        error,
        RuntimeError::ImportNotAllowed {
            component: "net".into(),
            import: "wasi:http/outgoing-handler@0.2.6".into()
        }
    );
}
