//! Injection, audiences, refusals, redaction and limits.

use std::time::Duration;

use base64::Engine as _;
use warden_core::net::{CallNetwork, CredentialError, HttpError};
use warden_core::spec::{Audience, CredentialSpec, Injection};
use warden_egress::policy::{Denial, LeakSite};
use warden_egress::resolve::{AddressClass, AddressError};
use warden_egress::testing::TestResponse;
use warden_egress::{ClientError, EgressError};

use crate::support::*;

#[tokio::test]
async fn token_arrives_only_for_its_audience() {
    let fx = fixture(|_| TestResponse::ok("{}")).await;
    let session = fx.session().await;
    session.acquire("gh").unwrap();
    let response = session
        .send(get("https://api.github.com/user"), Some("gh"), CALL)
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    let plain = session
        .send(get("https://uploads.github.com/x"), None, CALL)
        .await
        .unwrap();
    assert_eq!(plain.status, 200);
    let err = session
        .send_checked(get("https://uploads.github.com/x"), Some("gh"), CALL)
        .await
        .unwrap_err();
    assert!(
        matches!(err, EgressError::Denied(Denial::AudienceMismatch(ref h)) if h == "gh"),
        "{err}"
    );

    let received = fx.server.requests();
    assert_eq!(received.len(), 2);
    assert_eq!(
        received[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert_eq!(received[0].server_name.as_deref(), Some("api.github.com"));
    assert_eq!(received[0].version, "HTTP/2.0");
    assert_eq!(received[1].header("authorization"), None);
    assert_eq!(
        received[1].server_name.as_deref(),
        Some("uploads.github.com")
    );
    let usage = session.usage();
    assert_eq!((usage.requests, usage.denied), (2, 1));
}

#[tokio::test]
async fn refused_requests_never_reach_the_server() {
    // evil.test is reachable (resolved to the server, its loopback address
    // allowed): only the policy keeps the requests to it from arriving.
    let fx = fixture_with(
        |c| c.allow_private_address("evil.test", 443),
        |_| TestResponse::ok("{}"),
    )
    .await;
    let session = fx.session().await;
    let mut with_auth = get("https://api.github.com/user");
    with_auth
        .headers
        .push(("Authorization".into(), "Bearer guest-supplied".into()));
    let cases = [
        (get("https://evil.test/"), Some("gh")),
        (get("https://evil.test/"), None),
        (get("https://api.github.com:8443/user"), Some("gh")),
        (get("http://api.github.com/user"), Some("gh")),
        (get("https://user:pw@api.github.com/user"), Some("gh")),
        (with_auth, None),
        (
            get(&format!("https://api.github.com/search?q={TOKEN}")),
            Some("gh"),
        ),
        (
            get("https://api.github.com/?t=xoxb-1234567890-abcdefghij"),
            None,
        ),
        (get("https://loopback.test/"), None),
        (get("https://metadata.test/latest/meta-data/"), None),
    ];
    let mut errors = Vec::new();
    for (request, credential) in cases {
        let err = session
            .send_checked(request.clone(), credential, CALL)
            .await
            .unwrap_err();
        let guest = session.send(request, credential, CALL).await.unwrap_err();
        assert!(matches!(guest, HttpError::Denied(_)), "{guest:?}");
        assert_clean(&guest.to_string());
        errors.push(err);
    }
    let host = |h: &str, port| Denial::HostNotAllowed {
        host: h.into(),
        port,
    };
    let expected_denials = [
        host("evil.test", 443),
        host("evil.test", 443),
        host("api.github.com", 8443),
        Denial::PlainHttp {
            host: "api.github.com".into(),
            port: 80,
        },
        Denial::Userinfo,
        Denial::ForbiddenHeader("authorization".into()),
        Denial::StagedSecret(LeakSite::Url),
        Denial::TokenFormat {
            kind: "Slack token",
            location: LeakSite::Url,
        },
    ];
    for (err, expected) in errors.iter().zip(&expected_denials) {
        assert!(
            matches!(err, EgressError::Denied(d) if d == expected),
            "{err:?} != {expected:?}"
        );
    }
    let classes = [AddressClass::Loopback, AddressClass::LinkLocal];
    for (err, class) in errors[expected_denials.len()..].iter().zip(classes) {
        assert!(
            matches!(err, EgressError::Address(AddressError::NonPublic { class: c, .. }) if *c == class),
            "{err:?}"
        );
    }
    assert!(
        fx.server.requests().is_empty(),
        "a refused request reached the server"
    );
    assert_eq!(session.usage().requests, 0);
}

#[tokio::test]
async fn echoed_token_reaches_the_guest_redacted() {
    let fx = fixture(|req| {
        let auth = req.header("authorization").unwrap_or_default().to_owned();
        let token = auth.trim_start_matches("Bearer ");
        let b64 = base64::engine::general_purpose::STANDARD;
        let body = format!(
            "raw={auth} pct={} b64={} basic={} upper={}",
            percent_encoding::utf8_percent_encode(token, percent_encoding::NON_ALPHANUMERIC),
            b64.encode(token),
            b64.encode(format!("x-access-token:{token}")),
            token.to_ascii_uppercase(),
        );
        TestResponse::ok(body)
            .with_header("x-echo", &auth)
            .with_header("set-cookie", "session=abc")
            .with_header("www-authenticate", "Bearer realm=x")
            // The token spelled back as a header's name.
            .with_header(&format!("x-{}", token.to_ascii_lowercase()), "1")
    })
    .await;
    let session = fx.session().await;
    let response = session
        .send(get("https://api.github.com/echo"), Some("gh"), CALL)
        .await
        .unwrap();
    assert_response_clean(&response);
    let body = String::from_utf8(response.body.clone()).unwrap();
    assert_eq!(body.matches("[REDACTED]").count(), 5, "{body}");
    let header = |name: &str| {
        response
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-echo").as_deref(), Some("Bearer [REDACTED]"));
    assert_eq!(header("set-cookie"), None);
    assert_eq!(header("www-authenticate"), None);
    assert!(
        response.headers.iter().any(|(name, _)| name == "date"),
        "only the header named by the token is left out: {:?}",
        response.headers
    );
    assert_eq!(
        session.redact(&format!("log line {TOKEN}")),
        "log line [REDACTED]"
    );
}

/// The token's provider echoes it back in the forms a guest can decode
/// (one line each, as an echo or debug endpoint would): each reaches the
/// guest redacted, with no 8-character run of it left.
#[tokio::test]
async fn a_provider_echoing_the_token_in_decodable_forms_is_redacted() {
    fn echoed(token: &str) -> Vec<(&'static str, String)> {
        let b64 = base64::engine::general_purpose::STANDARD;
        let utf16le: Vec<u8> = token.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let bits: String = token.bytes().map(|b| format!("{b:08b}")).collect();
        let base32: String = bits
            .as_bytes()
            .chunks(5)
            .map(|c| {
                let five = format!("{:0<5}", std::str::from_utf8(c).unwrap());
                char::from(
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"[usize::from_str_radix(&five, 2).unwrap()],
                )
            })
            .collect();
        let bytes = |f: fn(u8) -> String, sep: &str| -> String {
            token.bytes().map(f).collect::<Vec<_>>().join(sep)
        };
        vec![
            ("utf16_b64", b64.encode(&utf16le)),
            ("b64_b64", b64.encode(b64.encode(token))),
            ("decimal", format!("[{}]", bytes(|b| b.to_string(), ", "))),
            ("octal", bytes(|b| format!("\\{b:03o}"), "")),
            ("base32", base32),
            (
                "zero_width",
                token.chars().flat_map(|c| [c, '\u{200B}']).collect(),
            ),
            (
                "soft_hyphen",
                token.chars().flat_map(|c| [c, '\u{AD}']).collect(),
            ),
            (
                "fullwidth",
                token
                    .chars()
                    .map(|c| char::from_u32(u32::from(c) - 0x21 + 0xFF01).unwrap())
                    .collect(),
            ),
            ("reversed", token.chars().rev().collect()),
            (
                "rot13",
                token
                    .chars()
                    .map(|c| match c {
                        'a'..='z' => char::from((c as u8 - b'a' + 13) % 26 + b'a'),
                        'A'..='Z' => char::from((c as u8 - b'A' + 13) % 26 + b'A'),
                        _ => c,
                    })
                    .collect(),
            ),
            // Ends in a partial group (`…o=`): its last bits are redacted too.
            ("b64_tail", b64.encode(token)),
        ]
    }
    let fx = fixture(|req| {
        let auth = req.header("authorization").unwrap_or_default();
        let token = auth.trim_start_matches("Bearer ");
        let lines: Vec<String> = echoed(token)
            .into_iter()
            // ` ;` ends each line: the views join lines, and the redaction
            // of a base64 form's partial character may reach across a line
            // break into the next (line-wrapped base64).
            .map(|(name, form)| format!("{name}={form} ;"))
            .collect();
        TestResponse::ok(lines.join("\n"))
    })
    .await;
    let session = fx.session().await;
    let response = session
        .send(get("https://api.github.com/echo"), Some("gh"), CALL)
        .await
        .unwrap();
    let body = String::from_utf8(response.body.clone()).unwrap();
    let lines: Vec<&str> = body.lines().collect();
    let forms = echoed(TOKEN);
    assert_eq!(lines.len(), forms.len(), "{body}");
    for ((name, form), line) in forms.iter().zip(&lines) {
        assert!(line.starts_with(&format!("{name}=")), "{line}");
        let line = line.trim_end_matches(" ;");
        assert!(line.contains("[REDACTED]"), "{name}: {line}");
        let form: Vec<char> = form.chars().collect();
        for run in form.windows(8) {
            let run: String = run.iter().collect();
            assert!(!line.contains(&run), "{name}: {run:?} survives in {line:?}");
        }
    }
    assert_eq!(lines.last(), Some(&"b64_tail=[REDACTED]= ;"));
}

#[tokio::test]
async fn body_over_the_limit_fails_as_too_large() {
    let tune = |mut c: warden_egress::EgressConfig| {
        c.max_response_body = 64 << 10;
        c.max_request_body = 1 << 10;
        c
    };
    let fx = fixture_with(tune, |req| {
        TestResponse::ok(vec![b'x'; if req.target == "/big" { 1 << 20 } else { 10 }])
    })
    .await;
    let session = fx.session().await;
    let err = session
        .send_checked(get("https://api.github.com/big"), None, CALL)
        .await
        .unwrap_err();
    assert!(
        matches!(err, EgressError::Client(ClientError::TooLarge)),
        "{err:?}"
    );
    let guest = session
        .send(get("https://api.github.com/big"), None, CALL)
        .await
        .unwrap_err();
    assert_eq!(guest, HttpError::TooLarge);
    // A request body over its bound is told apart: nothing was sent.
    let upload = request("POST", "https://api.github.com/small", Some(&[0u8; 2048]));
    assert_eq!(
        session.send(upload, None, CALL).await.unwrap_err(),
        HttpError::RequestTooLarge
    );
    // The next request on the same session still works.
    assert_eq!(
        session
            .send(get("https://api.github.com/small"), None, CALL)
            .await
            .unwrap()
            .body
            .len(),
        10
    );
}

#[tokio::test]
async fn egress_byte_allowance_is_enforced() {
    let fx = fixture(|_| TestResponse::ok(vec![b'x'; 4096])).await;
    let session = fx
        .egress
        .session("github.search", "github", &[github_credential()], &[], 6000)
        .await
        .unwrap();
    session
        .send(get("https://api.github.com/a"), None, CALL)
        .await
        .unwrap();
    let err = session
        .send(get("https://api.github.com/b"), None, CALL)
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::LimitExceeded(_)), "{err:?}");
    assert_eq!(session.usage().bytes_received, 4096);
}

/// The call's remaining deadline (200 ms) bounds a request, not only the
/// configured timeouts, here two minutes: the server holds its answer until
/// the test lets it go, or answers `late` after one minute. Only the call's
/// deadline can end the request with a timeout before that answer: were it
/// ignored, the request would get `late` (before the configured timeouts),
/// not a timeout. No time is measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_server_times_out_within_the_remaining_deadline() {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let held = std::sync::Mutex::new(held);
    let fx = fixture_with(
        |mut c| {
            c.read_timeout = Duration::from_secs(120);
            c.total_timeout = Duration::from_secs(120);
            c
        },
        move |_| {
            // The handler runs on a worker of the test's runtime: let Tokio
            // move the client's task off it first, or its timer waits for
            // the handler (a task in a blocked worker's LIFO slot cannot be
            // stolen).
            tokio::task::block_in_place(|| {
                let _ = held.lock().unwrap().recv_timeout(Duration::from_secs(60));
            });
            TestResponse::ok("late")
        },
    )
    .await;
    let session = fx.session().await;
    let deadline = Duration::from_millis(200);
    let err = session
        .send(get("https://api.github.com/slow"), None, deadline)
        .await
        .unwrap_err();
    let _ = release.send(());
    assert_eq!(err, HttpError::Timeout);
}

#[tokio::test]
async fn missing_secret_is_auth_required_with_vendor_and_scopes() {
    let fx = fixture(|_| TestResponse::ok("{}")).await;
    let google = CredentialSpec {
        handle: "google_token".into(),
        vendor: "google".into(),
        scopes: vec!["drive.readonly".into()],
        audience: Audience {
            scheme: "https".into(),
            host: "www.googleapis.com".into(),
            port: None,
        },
        injection: Injection::Header {
            name: "authorization".into(),
            prefix: Some("Bearer ".into()),
        },
        required: true,
    };
    let session = fx
        .egress
        .session("drive.list", "google-drive", &[google], &[], 1 << 20)
        .await
        .unwrap();
    let err = session.acquire("google_token").unwrap_err();
    let CredentialError::NotConfigured(needed) = err else {
        panic!("{err:?}")
    };
    assert_eq!(needed.vendor, "google");
    assert_eq!(needed.scopes, vec!["drive.readonly".to_owned()]);
    assert_eq!(
        session.acquire("gh"),
        Err(CredentialError::NotDeclared("gh".into()))
    );
    let missing = session.missing_required();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].extension_id, "google-drive");
    assert_eq!(missing[0].needed, needed);
    assert_eq!(
        missing[0].reason,
        warden_egress::secrets::AuthReason::Missing
    );
    let err = session
        .send(
            get("https://www.googleapis.com/drive"),
            Some("google_token"),
            CALL,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::Denied(_)), "{err:?}");
}

#[tokio::test]
async fn untrusted_certificate_fails_the_connection() {
    let other_ca = warden_egress::testing::TestCa::new();
    let fx = fixture_with(
        move |mut c| {
            c.extra_roots_pem = vec![other_ca.cert_pem().to_owned()];
            c
        },
        |_| TestResponse::ok("{}"),
    )
    .await;
    let err = fx
        .session()
        .await
        .send_checked(get("https://api.github.com/"), Some("gh"), CALL)
        .await
        .unwrap_err();
    assert!(
        matches!(err, EgressError::Client(ClientError::Tls(_))),
        "{err:?}"
    );
    assert!(fx.server.requests().is_empty());
}

#[tokio::test]
async fn query_and_path_injection_follow_the_declaration() {
    let fx = fixture(|_| TestResponse::ok("ok")).await;
    // The fixture's store holds the token for handle `gh`; add it for `q` and `p`.
    let store = fx.egress.store();
    for handle in ["q", "p"] {
        let key = warden_egress::secrets::AccountKey::new("github", handle, ["repo"]);
        store
            .put_bound(&key, &github_account(), secrecy::SecretString::from(TOKEN))
            .await
            .unwrap();
    }
    let mut query = github_credential();
    query.handle = "q".into();
    query.injection = Injection::Query {
        name: "api_key".into(),
    };
    let mut path = github_credential();
    path.handle = "p".into();
    path.injection = Injection::PathPlaceholder {
        placeholder: "token".into(),
    };
    let session = fx
        .egress
        .session("github.y", "github", &[query, path], &[], 1 << 20)
        .await
        .unwrap();
    session
        .send(get("https://api.github.com/q?a=1"), Some("q"), CALL)
        .await
        .unwrap();
    session
        .send(
            get("https://api.github.com/bot{token}/getMe"),
            Some("p"),
            CALL,
        )
        .await
        .unwrap();
    let err = session
        .send_checked(get("https://api.github.com/nothing"), Some("p"), CALL)
        .await
        .unwrap_err();
    assert!(
        matches!(err, EgressError::Denied(Denial::MissingPlaceholder(_))),
        "{err:?}"
    );
    let received = fx.server.requests();
    assert_eq!(received[0].target, format!("/q?a=1&api_key={TOKEN}"));
    assert_eq!(received[1].target, format!("/bot{TOKEN}/getMe"));
}

#[tokio::test]
async fn basic_injection_builds_the_authorization_header_and_unsupported_types_are_denied() {
    use base64::Engine as _;
    let fx = fixture(|_| TestResponse::ok("ok")).await;
    let store = fx.egress.store();
    for handle in ["b", "j"] {
        let key = warden_egress::secrets::AccountKey::new("github", handle, ["repo"]);
        store
            .put_bound(&key, &github_account(), secrecy::SecretString::from(TOKEN))
            .await
            .unwrap();
    }
    let mut basic = github_credential();
    basic.handle = "b".into();
    basic.injection = Injection::Basic {
        username: "api".into(),
    };
    let mut body = github_credential();
    body.handle = "j".into();
    body.injection = Injection::BodyJsonPointer {
        pointer: "/token".into(),
        post_injection_body_limit_bytes: None,
    };
    let session = fx
        .egress
        .session("github.y", "github", &[basic, body], &[], 1 << 20)
        .await
        .unwrap();
    session
        .send(get("https://api.github.com/user"), Some("b"), CALL)
        .await
        .unwrap();
    let err = session
        .send_checked(get("https://api.github.com/user"), Some("j"), CALL)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            EgressError::Denied(Denial::UnsupportedInjection("body_json_pointer"))
        ),
        "{err:?}"
    );
    let received = fx.server.requests();
    assert_eq!(received.len(), 1, "the unsupported injection sent nothing");
    let expected = base64::engine::general_purpose::STANDARD.encode(format!("api:{TOKEN}"));
    assert_eq!(
        received[0].header("authorization"),
        Some(format!("Basic {expected}").as_str())
    );
}

/// The format accepts any header name for an injection; a hostile manifest
/// that aims its credential at a transport header (framing, routing) is
/// denied before anything is sent, and the secret goes nowhere.
#[tokio::test]
async fn a_credential_aimed_at_a_transport_header_is_denied() {
    let fx = fixture(|_| TestResponse::ok("ok")).await;
    let key = warden_egress::secrets::AccountKey::new("github", "gh", ["repo"]);
    fx.egress
        .store()
        .put_bound(&key, &github_account(), secrecy::SecretString::from(TOKEN))
        .await
        .unwrap();
    for header in ["host", "transfer-encoding", "content-length", "Connection"] {
        let mut credential = github_credential();
        credential.injection = Injection::Header {
            name: header.into(),
            prefix: None,
        };
        let session = fx
            .egress
            .session("github.y", "github", &[credential], &[], 1 << 20)
            .await
            .unwrap();
        let err = session
            .send_checked(get("https://api.github.com/user"), Some("gh"), CALL)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, EgressError::Denied(Denial::TransportHeader(name)) if name == &header.to_ascii_lowercase()),
            "{header}: {err:?}"
        );
    }
    assert!(fx.server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn only_a_host_client_may_stream_or_see_the_auth_challenge() {
    let fx = fixture(|_| {
        TestResponse::ok("data: hi\n\n")
            .with_header("content-type", "text/event-stream")
            .with_header("www-authenticate", "Bearer realm=x")
    })
    .await;
    // A guest's session: no stream, and no challenge on a plain send.
    let guest = fx.session().await;
    assert!(
        guest
            .open_stream(get("https://api.github.com/events"), Some("gh"))
            .await
            .is_err()
    );
    assert_eq!(fx.server.requests().len(), 0, "nothing was sent");
    // A host client's session streams, and sees the challenge.
    let host = fx.session().await.for_host_client(&[]);
    let mut response = host
        .open_stream(get("https://api.github.com/events"), Some("gh"))
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert!(
        response
            .headers
            .iter()
            .any(|(n, v)| n == "www-authenticate" && v == "Bearer realm=x")
    );
    let chunk = response.body.next_chunk().await.unwrap().unwrap();
    assert_eq!(&chunk[..], b"data: hi\n\n");
}

/// A request's URL and headers are bounded before anything is parsed,
/// scanned or copied: a header list long enough to overflow the HTTP
/// library's header map (building it panicked) is refused, as are header
/// bytes and a URL over their bounds.
#[tokio::test]
async fn oversized_request_heads_are_refused_before_they_are_built() {
    let fx = fixture(|_| TestResponse::ok("ok")).await;
    let session = fx.session().await;
    let mut many = get("https://api.github.com/user");
    many.headers = vec![("accept".into(), "a".into()); 24_576];
    let mut big = get("https://api.github.com/user");
    big.headers = vec![("x-big".into(), "v".repeat(70 << 10))];
    let long = get(&format!("https://api.github.com/{}", "a".repeat(9 << 10)));
    for (request, what) in [
        (many, "header count"),
        (big, "header bytes"),
        (long, "url bytes"),
    ] {
        let err = session
            .send_checked(request.clone(), Some("gh"), CALL)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, EgressError::Denied(Denial::HeadTooLarge { what: w, .. }) if *w == what),
            "{what}: {err:?}"
        );
        let guest = session.send(request, Some("gh"), CALL).await.unwrap_err();
        assert!(matches!(guest, HttpError::InvalidRequest(_)), "{guest:?}");
    }
    assert!(fx.server.requests().is_empty());
}
