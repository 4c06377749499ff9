//! The reference server `cargo xtask bench-mcp --clients` measures beside
//! `warden serve`, over real pipes: a request written in pieces is answered
//! once it is whole, answers come in request order, and the server exits when
//! its input ends.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

#[test]
fn answers_requests_written_in_pieces_and_exits_when_its_input_ends() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_bench-reference"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the reference server starts");
    let mut input = server.stdin.take().unwrap();
    // Answers through a channel, so a server that never answers fails the
    // test instead of hanging it.
    let output = BufReader::new(server.stdout.take().unwrap());
    let (tx, answers) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in output.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "test", "version": "0" } } });
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "echo_echo", "arguments": { "text": "hello", "transform": "upper" } } });
    writeln!(input, "{initialize}").unwrap();
    writeln!(
        input,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    // The call in three pieces, each its own write, the server left waiting
    // between them (edge-triggered: every piece must wake it again).
    let line = format!("{call}\n");
    let (first, rest) = line.split_at(10);
    let (second, third) = rest.split_at(20);
    for piece in [first, second, third] {
        input.write_all(piece.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let answer = |expected_id: u64| -> Value {
        let line = answers
            .recv_timeout(Duration::from_secs(10))
            .expect("an answer within 10 s");
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], expected_id, "{answer}");
        answer
    };
    assert_eq!(answer(1)["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        answer(2)["result"]["structuredContent"],
        json!({ "chars": 5, "text": "HELLO" })
    );
    drop(input);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = server.kill();
            panic!("the server did not exit when its input ended");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}");
}
