//! `warden serve --http` off loopback: refused without authentication, and
//! with a bearer token file it serves only callers that present the token.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use warden_tests::Serving;

const TOKEN: &str = "e2e-token-5d41402abc4b2a76b9719d911017c592";

/// Starts `warden serve --http 0.0.0.0:0 <args>`; the server and the port it
/// reports listening on.
fn serve(warden: &warden_tests::Warden, args: &[&str]) -> (Serving, u16) {
    serve_on(warden, "0.0.0.0:0", args)
}

/// Starts `warden serve --http <addr> <args>`; the server and the port it
/// reports listening on.
pub(crate) fn serve_on(warden: &warden_tests::Warden, addr: &str, args: &[&str]) -> (Serving, u16) {
    warden.serve_http(addr, args)
}

/// The status of an MCP `initialize` sent with `authorization`.
fn initialize(port: u16, authorization: Option<&str>) -> u16 {
    initialize_as(port, &format!("127.0.0.1:{port}"), authorization)
}

/// [`initialize`] with `host` as the `Host` header.
fn initialize_as(port: u16, host: &str, authorization: Option<&str>) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let answer = send_as(port, host, "POST", "/mcp", authorization, body);
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status code from {host}: {answer:?}"))
}

/// What the server answered to one request, until it closed or sent its head.
pub(crate) fn send(
    port: u16,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    body: &str,
) -> String {
    send_as(
        port,
        &format!("127.0.0.1:{port}"),
        method,
        path,
        authorization,
        body,
    )
}

/// [`send`] with `host` as the `Host` header.
fn send_as(
    port: u16,
    host: &str,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    body: &str,
) -> String {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let auth = authorization
        .map(|value| format!("Authorization: {value}\r\n"))
        .unwrap_or_default();
    let mut stream = TcpStream::connect(addr).expect("connect");
    // A server that closed the connection at once (a peer past its share)
    // may reset it before the request is written: that is its answer.
    if let Err(error) = write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    ) {
        return format!("(not sent: {error})");
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // Enough to see the head (an SSE answer may stay open).
    while !String::from_utf8_lossy(&answer).contains("\r\n\r\n{") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
        if answer.windows(4).any(|w| w == b"\r\n\r\n") && method == "POST" {
            break;
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
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
    // On every address, only the Host names given are served: without one,
    // every remote client would get 403 (it did, after starting).
    let nameless = warden.run(&[
        "serve",
        "--http",
        "0.0.0.0:0",
        "--auth-token-file",
        token_arg,
    ]);
    assert_ne!(nameless.code, 0, "{nameless:?}");
    assert!(nameless.stderr.contains("--allowed-host"), "{nameless:?}");
    let named = [
        "--auth-token-file",
        token_arg,
        "--allowed-host",
        "mcp.example.com",
    ];
    let (serving, port) = serve(&warden, &named);
    let bearer = format!("Bearer {TOKEN}");
    let statuses = (
        initialize(port, None),
        initialize(port, Some("Bearer not-the-token")),
        initialize(port, Some(&bearer)),
        initialize_as(port, "mcp.example.com", Some(&bearer)),
    );
    // A GET: refused before any body is read (a refused POST's unread body
    // may reset the connection before its answer is read). The server's
    // stderr is closed by now (the harness stops reading it after the first
    // line): the refusal's log line ended the connection unanswered.
    let elsewhere = send_as(
        port,
        "elsewhere.example.com",
        "GET",
        "/mcp",
        Some(&bearer),
        "",
    );
    drop(serving);
    assert_eq!(statuses, (401, 401, 200, 200));
    assert!(elsewhere.starts_with("HTTP/1.1 403"), "{elsewhere}");
}

#[test]
fn serve_as_an_oauth_resource_server_publishes_its_metadata_and_wants_a_token() {
    let warden = crate::warden();
    let jwks = warden.data_dir().join("jwks.json");
    std::fs::write(&jwks, r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#).unwrap();
    let jwks_arg = jwks.to_str().unwrap();
    let oauth = [
        "--oauth-issuer",
        "https://issuer.test",
        "--oauth-audience",
        "https://warden.test/mcp",
        "--oauth-jwks-file",
        jwks_arg,
        "--oauth-scope",
        "mcp",
    ];
    let mut args = vec!["serve", "--http", "0.0.0.0:0"];
    args.extend(oauth);
    let refused = warden.run(&args);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("signing key"), "{refused:?}");

    let point = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    std::fs::write(
        &jwks,
        format!(r#"{{"keys": [{{"kty": "EC", "crv": "P-256", "x": "{point}", "y": "{point}"}}]}}"#),
    )
    .unwrap();
    let (serving, port) = serve(&warden, &oauth);
    let metadata = send(
        port,
        "GET",
        "/.well-known/oauth-protected-resource",
        None,
        "",
    );
    let unauthenticated = send(port, "POST", "/mcp", None, "{}");
    drop(serving);
    assert!(metadata.starts_with("HTTP/1.1 200"), "{metadata}");
    assert!(
        metadata.contains(r#""resource":"https://warden.test/mcp""#),
        "{metadata}"
    );
    assert!(
        unauthenticated.starts_with("HTTP/1.1 401"),
        "{unauthenticated}"
    );
    assert!(
        unauthenticated.contains(
            r#"resource_metadata="https://warden.test/.well-known/oauth-protected-resource""#
        ),
        "{unauthenticated}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_https_with_an_operator_certificate() {
    let warden = crate::warden();
    let dir = warden.data_dir();
    let ca = warden_egress::testing::TestCa::new();
    let (cert, key) = warden_tests::tls::server_pem(&ca, &["localhost"]);
    let (cert_file, key_file, token_file) =
        (dir.join("cert.pem"), dir.join("key.pem"), dir.join("token"));
    std::fs::write(&cert_file, cert).unwrap();
    std::fs::write(&token_file, TOKEN).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    // A key file without a key is refused by name, before anything listens.
    std::fs::write(&key_file, "not a key").unwrap();
    let args = [
        "--auth-token-file".to_owned(),
        path(&token_file),
        "--allowed-host".to_owned(),
        "localhost".to_owned(),
        "--tls-cert".to_owned(),
        path(&cert_file),
        "--tls-key".to_owned(),
        path(&key_file),
    ];
    let mut refused = vec!["serve", "--http", "0.0.0.0:0"];
    refused.extend(args.iter().map(String::as_str));
    let refused = warden.run(&refused);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("no PEM private key"), "{refused:?}");

    std::fs::write(&key_file, key).unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (serving, port) = serve(&warden, &args);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let request = move |auth: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let authorized = request(&format!("Authorization: Bearer {TOKEN}\r\n"));
    let served = warden_tests::tls::exchange(&ca, addr, "localhost", &authorized)
        .await
        .unwrap();
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    assert!(served.contains("\"protocolVersion\""), "{served}");
    let unauthenticated = warden_tests::tls::exchange(&ca, addr, "localhost", &request(""))
        .await
        .unwrap();
    assert!(
        unauthenticated.starts_with("HTTP/1.1 401"),
        "{unauthenticated}"
    );
    // Plain HTTP on the TLS port gets no HTTP answer, of any status: the
    // connection is closed, at most after a TLS alert record (content type
    // 21), which an HTTP client cannot read as an answer.
    let plain = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        // The server may close before all of it is written.
        let _ = stream.write_all(request(&format!("Authorization: Bearer {TOKEN}\r\n")).as_bytes());
        let mut answer = Vec::new();
        let read = stream.read_to_end(&mut answer);
        (read.map_err(|e| e.kind()), answer)
    })
    .await
    .unwrap();
    let (read, answer) = plain;
    assert!(
        !matches!(
            read,
            Err(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
        ),
        "the connection was held open"
    );
    assert!(
        answer.is_empty() || answer[0] == 21,
        "answered: {:?}",
        String::from_utf8_lossy(&answer)
    );
    drop(serving);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_fetches_the_issuers_signing_keys_from_its_metadata() {
    use warden_egress::testing::{TestCa, TestResponse, TestServer};
    const ISSUER: &str = "https://issuer.example.com";
    const AUDIENCE: &str = "https://warden.test/mcp";
    use std::sync::{Arc, Mutex};
    use warden_tests::jwt_issuer::JwtIssuer;
    // The issuer's current key; the test rotates it while the server runs.
    let current = Arc::new(Mutex::new(Arc::new(JwtIssuer::new(ISSUER))));
    let issuer = current.lock().unwrap().clone();
    use serde_json::json;
    let publishes_keys = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ca = TestCa::new();
    let server = TestServer::start(&ca, &["issuer.example.com"], {
        let (current, publishes_keys) = (current.clone(), publishes_keys.clone());
        move |req| match req.target.as_str() {
            "/.well-known/oauth-authorization-server" => {
                let mut metadata = json!({"issuer": ISSUER});
                if publishes_keys.load(std::sync::atomic::Ordering::SeqCst) {
                    metadata["jwks_uri"] = json!(format!("{ISSUER}/jwks"));
                }
                TestResponse::json(&metadata)
            }
            "/jwks" => TestResponse::ok(current.lock().unwrap().jwks())
                .with_header("content-type", "application/json"),
            _ => TestResponse::status(404),
        }
    })
    .await
    .unwrap();
    let warden = crate::warden();
    let ca_file = warden.data_dir().join("issuer-ca.pem");
    std::fs::write(&ca_file, ca.cert_pem()).unwrap();
    warden.configure(&format!(
        "[egress]\nextra_roots = [{ca_file:?}]\nallow_private = [\"issuer.example.com:443\"]\n\n\
         [resolve]\n\"issuer.example.com\" = [\"{}\"]\n",
        server.addr()
    ));
    let args = [
        "--oauth-issuer",
        ISSUER,
        "--oauth-audience",
        AUDIENCE,
        "--oauth-scope",
        "mcp",
    ];
    // Metadata without keys: the server does not start, and says why.
    let mut refused = vec!["serve", "--http", "0.0.0.0:0"];
    refused.extend(args);
    let refused = warden.run(&refused);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("names no jwks_uri"), "{refused:?}");

    publishes_keys.store(true, std::sync::atomic::Ordering::SeqCst);
    let (serving, port) = serve(&warden, &args);
    let statuses = (
        initialize(port, None),
        initialize(
            port,
            Some(&issuer.bearer("https://other.test/mcp", "mcp", 300)),
        ),
        initialize(port, Some(&issuer.bearer(AUDIENCE, "mcp", 300))),
        // The audience's host is the name clients use: it is served.
        initialize_as(
            port,
            "warden.test",
            Some(&issuer.bearer(AUDIENCE, "mcp", 300)),
        ),
    );
    assert_eq!(statuses, (401, 401, 200, 200));

    // The issuer rotates its key: a token signed with the new one is
    // accepted without a restart, and the withdrawn key stops verifying.
    let rotated = Arc::new(JwtIssuer::with_kid(ISSUER, "k2"));
    *current.lock().unwrap() = rotated.clone();
    let statuses = (
        initialize(port, Some(&rotated.bearer(AUDIENCE, "mcp", 300))),
        initialize(port, Some(&issuer.bearer(AUDIENCE, "mcp", 300))),
    );
    drop(serving);
    assert_eq!(statuses, (200, 401));
}

/// `--max-connections-per-peer`: a peer holding its share of connections
/// (open, sending nothing) has its next one closed, while another peer is
/// still served.
#[test]
fn a_peer_past_its_share_of_connections_is_closed() {
    let warden = crate::warden();
    let (_server, port) = serve_on(&warden, "127.0.0.1:0", &["--max-connections-per-peer", "1"]);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let held = TcpStream::connect(addr).expect("connect");
    // The server counts the held connection once it has accepted it.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut next = TcpStream::connect(addr).expect("connect");
    next.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let _ = write!(
        next,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    let mut answer = Vec::new();
    let read = next.read_to_end(&mut answer);
    assert!(
        matches!(read, Ok(0))
            || read
                .as_ref()
                .is_err_and(|e| e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::TimedOut),
        "{read:?}: {}",
        String::from_utf8_lossy(&answer)
    );
    drop(held);
    // Its share back once the server has seen the held connection close
    // (waited for, not assumed after a pause), the same peer is served again.
    let waited = std::time::Instant::now();
    loop {
        let answer = send(port, "GET", "/", None, "");
        if answer.starts_with("HTTP/1.1 404") {
            break;
        }
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(30),
            "never served again: {answer}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
