//! The exfiltration attack of issue 12, through the host: the credential's
//! audience echoes the secret in an encoding, the hostile guest decodes it,
//! returns it as output and posts it hex-encoded (plain and reversed) to a
//! second declared host. Neither the caller nor the second host may see it.

use std::sync::Arc;

use serde_json::json;
use warden_egress::secrets::{AccountAudience, AccountBinding, AccountKey, MemoryStore};
use warden_egress::testing::{self, RecordedRequest, TestCa, TestResponse, TestServer};
use warden_host::{Host, HostConfig, Invocation, InvokeOutcome, Location, Origin, PackageSource};

use crate::root;

/// Not a known token format: only the staged-secret scan can catch it.
const SECRET: &str = "exmpl-Secret-0123456789-abcdefXYZ";

const ENCODINGS: &[&str] = &[
    "hex",
    "hex_colon",
    "json_escapes",
    "html_entities",
    "double_percent",
    "base64_mime",
    "quoted_printable",
    "utf16le",
];

fn hex(bytes: &[u8], separator: &str) -> String {
    let pairs: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    pairs.join(separator)
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The provider's echo of `secret` in `encoding`.
fn encode(encoding: &str, secret: &str) -> Vec<u8> {
    let text = match encoding {
        "hex" => hex(secret.as_bytes(), ""),
        "hex_colon" => hex(secret.as_bytes(), ":").to_ascii_uppercase(),
        // Every other character escaped, and the lot inside a JSON document.
        "json_escapes" => {
            let escaped: String = secret
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        format!("\\u{:04x}", c as u32)
                    } else {
                        c.into()
                    }
                })
                .collect();
            format!(r#"{{"token":"{escaped}"}}"#)
        }
        "html_entities" => secret
            .chars()
            .map(|c| format!("&#x{:x};", c as u32))
            .collect(),
        "double_percent" => secret.bytes().map(|b| format!("%25{b:02X}")).collect(),
        "base64_mime" => {
            let long = format!("{}{secret}{}", "a".repeat(70), "b".repeat(70));
            let encoded = base64(long.as_bytes());
            let lines: Vec<&str> = encoded
                .as_bytes()
                .chunks(76)
                .map(|l| std::str::from_utf8(l).unwrap())
                .collect();
            lines.join("\r\n")
        }
        "quoted_printable" => secret.bytes().map(|b| format!("={b:02X}")).collect(),
        "utf16le" => return secret.encode_utf16().flat_map(u16::to_le_bytes).collect(),
        other => panic!("no encoding {other}"),
    };
    text.into_bytes()
}

fn provider(request: &RecordedRequest) -> TestResponse {
    let Some(encoding) = request.target.strip_prefix("/echo?encoding=") else {
        return TestResponse::ok("ok");
    };
    let token = request
        .header("authorization")
        .and_then(|a| a.strip_prefix("Bearer "))
        .unwrap_or_default();
    TestResponse::ok(encode(encoding, token))
}

async fn host() -> (Location, TestServer) {
    let hosts = ["api.example.com", "collect.example.net"];
    let ca = TestCa::new();
    let server = TestServer::start(&ca, &hosts, provider).await.unwrap();
    let api = AccountAudience {
        scheme: "https".into(),
        host: "api.example.com".into(),
        port: 443,
    };
    let secrets = MemoryStore::new().with(
        AccountKey::new("example", "hostile_token", ["records.read"]),
        AccountBinding::new("hostile", [api]),
        SECRET,
    );
    let config = HostConfig {
        egress: testing::config(
            &ca,
            &[("api.example.com", 443), ("collect.example.net", 443)],
        ),
        ..HostConfig::default()
    };
    let host = Host::builder(config)
        .secret_store(Arc::new(secrets))
        .resolver(Arc::new(server.resolver(&hosts)))
        .build()
        .unwrap();
    let location = host.open_location("p");
    location
        .install(&PackageSource::Dir(
            root().join("tests/fixtures/packages/hostile"),
        ))
        .unwrap();
    (location, server)
}

/// Fail if `text` holds the secret raw, in hex, or reversed in hex.
fn assert_no_secret(what: &str, text: &str) {
    let lower = text.to_ascii_lowercase();
    let reversed: String = SECRET.chars().rev().collect();
    for form in [
        SECRET.to_ascii_lowercase(),
        hex(SECRET.as_bytes(), ""),
        hex(reversed.as_bytes(), ""),
    ] {
        assert!(!lower.contains(&form), "{what} leaks the secret: {text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_decoded_secret_reaches_neither_the_caller_nor_a_second_host() {
    let (location, server) = host().await;
    for encoding in ENCODINGS {
        let invocation = Invocation::new(
            "hostile.exfil",
            json!({ "encoding": encoding }),
            Origin::Product,
        );
        // Product origin: consent suffices, the call runs.
        let outcome = location.invoke(invocation).await.unwrap();
        let InvokeOutcome::Completed(done) = outcome else {
            panic!("{encoding}: the call completes: {outcome:?}")
        };
        assert_no_secret(encoding, &done.text);
        assert_no_secret(encoding, &done.output.to_string());
        // What the guest decoded is the redacted response (for UTF-16, the
        // marker's bytes read as UTF-16 code units).
        let marker: Vec<u16> = b"[REDACTED]"
            .chunks(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .collect();
        let marker = String::from_utf16(&marker).unwrap();
        let decoded = done.output["decoded"].as_str().unwrap_or_default();
        assert!(
            decoded.contains("[REDACTED]") || (*encoding == "utf16le" && decoded == marker),
            "{encoding}: {}",
            done.text
        );
    }
    let requests = server.requests();
    let drops: Vec<&RecordedRequest> = requests.iter().filter(|r| r.target == "/drop").collect();
    assert!(!drops.is_empty(), "the guest reached the second host");
    for drop in drops {
        assert_eq!(drop.server_name.as_deref(), Some("collect.example.net"));
        assert_eq!(drop.header("authorization"), None);
        assert_no_secret(
            "a request to the second host",
            &String::from_utf8_lossy(&drop.body),
        );
    }
}
