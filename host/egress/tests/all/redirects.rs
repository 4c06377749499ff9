//! Host-run redirects: re-authorized at every hop, credentials stay on their origin.

use warden_core::net::CallNetwork;
use warden_egress::EgressError;
use warden_egress::policy::Denial;
use warden_egress::testing::TestResponse;

use crate::support::*;

fn handler(req: &warden_egress::testing::RecordedRequest) -> TestResponse {
    match req.target.as_str() {
        "/to-evil" => TestResponse::redirect(302, "https://evil.test/steal"),
        "/to-uploads" => TestResponse::redirect(307, "https://uploads.github.com/file"),
        "/same-origin" => TestResponse::redirect(301, "/final"),
        "/see-other" => TestResponse::redirect(303, "/final"),
        "/loop" => TestResponse::redirect(302, "/loop"),
        "/leaky" => TestResponse::redirect(
            302,
            &format!(
                "/final?t={}",
                req.header("authorization").unwrap_or_default()
            ),
        ),
        _ => TestResponse::ok("done"),
    }
}

/// evil.test is reachable here (resolved to the local server, its loopback
/// address allowed, as a public collector's would be): only the policy's
/// check of the redirect keeps the request from arriving there.
#[tokio::test]
async fn redirect_to_another_host_is_refused() {
    let fx = fixture_with(|c| c.allow_private_address("evil.test", 443), handler).await;
    let sent = fx
        .session()
        .await
        .send_checked(get("https://api.github.com/to-evil"), Some("gh"), CALL)
        .await;
    let received = fx.server.requests();
    assert!(
        received
            .iter()
            .all(|r| r.server_name.as_deref() != Some("evil.test")),
        "the redirect reached evil.test"
    );
    assert_eq!(received.len(), 1);
    let err = sent.unwrap_err();
    let EgressError::Denied(Denial::Redirect(inner)) = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(**inner, Denial::HostNotAllowed { ref host, .. } if host == "evil.test"),
        "{inner:?}"
    );
}

#[tokio::test]
async fn credential_never_follows_to_another_origin() {
    let fx = fixture(handler).await;
    let response = fx
        .session()
        .await
        .send(get("https://api.github.com/to-uploads"), Some("gh"), CALL)
        .await
        .unwrap();
    assert_eq!(response.body, b"done");
    let received = fx.server.requests();
    assert_eq!(received.len(), 2);
    assert!(received[0].header("authorization").is_some());
    assert_eq!(
        received[1].server_name.as_deref(),
        Some("uploads.github.com")
    );
    assert_eq!(received[1].header("authorization"), None);
}

#[tokio::test]
async fn same_origin_redirect_keeps_the_credential_and_303_becomes_get() {
    let fx = fixture(handler).await;
    let session = fx.session().await;
    session
        .send(get("https://api.github.com/same-origin"), Some("gh"), CALL)
        .await
        .unwrap();
    let post = request(
        "POST",
        "https://api.github.com/see-other",
        Some(b"{\"a\":1}"),
    );
    session.send(post, Some("gh"), CALL).await.unwrap();
    let received = fx.server.requests();
    assert_eq!(received.len(), 4);
    assert_eq!(received[1].target, "/final");
    assert!(received[1].header("authorization").is_some());
    assert_eq!(
        (received[3].method.as_str(), received[3].body.len()),
        ("GET", 0)
    );
}

#[tokio::test]
async fn redirect_loops_and_leaky_locations_stop() {
    let fx = fixture(handler).await;
    let session = fx.session().await;
    let err = session
        .send_checked(get("https://api.github.com/loop"), None, CALL)
        .await
        .unwrap_err();
    assert!(
        matches!(err, EgressError::Denied(Denial::TooManyRedirects)),
        "{err:?}"
    );
    assert_eq!(fx.server.requests().len(), 6);
    let err = session
        .send_checked(get("https://api.github.com/leaky"), Some("gh"), CALL)
        .await
        .unwrap_err();
    let EgressError::Denied(Denial::Redirect(inner)) = &err else {
        panic!("{err:?}")
    };
    assert!(matches!(**inner, Denial::StagedSecret(_)), "{inner:?}");
    assert_clean(&err.to_string());
}
