//! The leak pre-scan uses the redactor's forms: a staged secret a guest
//! re-encodes never leaves, to any declared host.

use warden_core::net::CallNetwork as _;
use warden_egress::EgressError;
use warden_egress::policy::{Denial, LeakSite};
use warden_egress::testing::TestResponse;

use crate::support::*;

fn hex(bytes: &[u8], separator: &str) -> String {
    let pairs: Vec<String> = bytes.iter().map(|b| format!("{b:02X}")).collect();
    pairs.join(separator)
}

#[tokio::test]
async fn an_encoded_secret_is_refused_in_every_part_of_a_request() {
    let fx = fixture(|_| TestResponse::ok("{}")).await;
    let session = fx.session().await;
    let json_escaped: String = TOKEN
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
    let utf16: Vec<u8> = TOKEN.encode_utf16().flat_map(u16::to_be_bytes).collect();
    let bodies: Vec<Vec<u8>> = vec![
        hex(TOKEN.as_bytes(), "").into_bytes(),
        hex(TOKEN.as_bytes(), ":").into_bytes(),
        format!(r#"{{"t":"{json_escaped}"}}"#).into_bytes(),
        TOKEN
            .chars()
            .map(|c| format!("&#{};", c as u32))
            .collect::<String>()
            .into_bytes(),
        TOKEN
            .bytes()
            .map(|b| format!("%25{b:02x}"))
            .collect::<String>()
            .into_bytes(),
        TOKEN
            .bytes()
            .map(|b| format!("={b:02X}"))
            .collect::<String>()
            .into_bytes(),
        utf16,
        // Over 1 MiB, it takes the large-body turn: encoded twice over, deep
        // inside, it is still refused.
        padded(
            &TOKEN
                .bytes()
                .map(|b| format!("%25{b:02x}"))
                .collect::<String>(),
            3 << 20,
        ),
    ];
    for body in bodies {
        let error = session
            .send_checked(
                request("POST", "https://uploads.github.com/drop", Some(&body)),
                None,
                CALL,
            )
            .await
            .expect_err("refused");
        assert!(
            matches!(
                error,
                EgressError::Denied(Denial::StagedSecret(LeakSite::Body))
            ),
            "{}: {error:?}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        );
    }
    let hex_query = format!(
        "https://uploads.github.com/q?d={}",
        hex(TOKEN.as_bytes(), "")
    );
    let error = session
        .send_checked(get(&hex_query), None, CALL)
        .await
        .expect_err("refused");
    assert!(
        matches!(
            error,
            EgressError::Denied(Denial::StagedSecret(LeakSite::Url))
        ),
        "{error:?}"
    );
    assert!(fx.server.requests().is_empty(), "a leak reached the server");
}

/// Filler of `len` bytes with `middle` in its middle: a body large enough
/// to be checked and redacted in turns (over 1 MiB).
fn padded(middle: &str, len: usize) -> Vec<u8> {
    let half = "a".repeat(len / 2);
    format!("{half} {middle} {half}").into_bytes()
}

/// A server echoing the token inside a large answer, base64- and
/// JSON-escaped: the guest gets it redacted however large the answer.
#[tokio::test]
async fn a_secret_echoed_encoded_in_a_large_answer_reaches_the_guest_redacted() {
    use base64::Engine as _;
    let escaped: String = TOKEN
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(TOKEN);
    let answer = padded(&format!("{escaped} {b64}"), 3 << 20);
    let fx = fixture(move |_| TestResponse::ok(answer.clone())).await;
    let session = fx.session().await;
    let response = session
        .send(get("https://api.github.com/big"), Some("gh"), CALL)
        .await
        .unwrap();
    let body = String::from_utf8(response.body).unwrap();
    assert_eq!(body.matches("[REDACTED]").count(), 2);
    assert!(!body.contains(&b64) && !body.contains(&escaped));
}
