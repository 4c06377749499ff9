//! The leak pre-scan uses the redactor's forms: a staged secret a guest
//! re-encodes never leaves, to any declared host.

use warden_egress::EgressError;
use warden_egress::policy::{Denial, Location};
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
                EgressError::Denied(Denial::StagedSecret(Location::Body))
            ),
            "{}: {error:?}",
            String::from_utf8_lossy(&body)
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
            EgressError::Denied(Denial::StagedSecret(Location::Url))
        ),
        "{error:?}"
    );
    assert!(fx.server.requests().is_empty(), "a leak reached the server");
}
