//! `warden serve --http` off loopback: refused without authentication, and
//! with a bearer token file it serves only callers that present the token.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};

const TOKEN: &str = "e2e-token-5d41402abc4b2a76b9719d911017c592";

/// A running `warden serve`, stopped when dropped.
struct Serving(Child);

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `warden serve --http 0.0.0.0:0 <args>`; the server and the port it
/// reports listening on.
fn serve(warden: &warden_tests::Warden, args: &[&str]) -> (Serving, u16) {
    let child = warden
        .command()
        .args(["serve", "--http", "0.0.0.0:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("warden serve starts");
    let mut serving = Serving(child);
    let mut lines = BufReader::new(serving.0.stderr.take().expect("piped"));
    let mut line = String::new();
    loop {
        line.clear();
        assert_ne!(
            lines.read_line(&mut line).expect("stderr"),
            0,
            "serve exited"
        );
        if let Some(url) = line.split("streamable HTTP at ").nth(1) {
            let port = url
                .trim()
                .trim_end_matches(" (Ctrl-C stops)")
                .trim_end_matches("/mcp")
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("no port in {line:?}"));
            return (serving, port);
        }
    }
}

/// The status of an MCP `initialize` sent with `authorization`.
fn initialize(port: u16, authorization: Option<&str>) -> u16 {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let auth = authorization
        .map(|value| format!("Authorization: {value}\r\n"))
        .unwrap_or_default();
    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).expect("status line");
    std::str::from_utf8(&head[9..12])
        .ok()
        .and_then(|code| code.parse().ok())
        .expect("status code")
}

#[test]
fn serve_off_loopback_needs_a_token_and_serves_only_its_holder() {
    let warden = crate::warden();
    let refused = warden.run(&["serve", "--http", "0.0.0.0:0"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(
        refused.stderr.contains("without authentication"),
        "{refused:?}"
    );

    let token_file = warden.data_dir().join("token");
    std::fs::write(&token_file, "short\n").unwrap();
    let token_arg = token_file.to_str().unwrap();
    let weak = warden.run(&[
        "serve",
        "--http",
        "0.0.0.0:0",
        "--auth-token-file",
        token_arg,
    ]);
    assert_ne!(weak.code, 0, "{weak:?}");
    assert!(weak.stderr.contains("too short"), "{weak:?}");

    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let (serving, port) = serve(&warden, &["--auth-token-file", token_arg]);
    let statuses = (
        initialize(port, None),
        initialize(port, Some("Bearer not-the-token")),
        initialize(port, Some(&format!("Bearer {TOKEN}"))),
    );
    drop(serving);
    assert_eq!(statuses, (401, 401, 200));
}
