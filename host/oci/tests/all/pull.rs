//! Pulls: what a misbehaving registry sends is refused, naming what.

use warden_egress::testing::TestResponse;
use warden_oci::{Digest, OciError};

use crate::fake::{Fake, artifact, reference};

#[tokio::test]
async fn pulls_a_package_with_every_digest_checked() {
    let fake = Fake::start().await;
    let (_, _, digest) = fake.serve(&artifact());
    let pulled = fake.client.pull(&reference(":1.0")).await.unwrap();
    assert_eq!(pulled.resolved.digest, digest);
    assert_eq!(
        pulled.resolved.reference.to_string(),
        format!("oci://registry.example.com/acme/echo:1.0@{digest}")
    );
    assert_eq!(pulled.module, artifact().module);
    assert_eq!(pulled.package_layer, artifact().package_layer);
    // The same by digest.
    let by_digest = fake
        .client
        .pull(&reference(&format!("@{digest}")))
        .await
        .unwrap();
    assert_eq!(by_digest.package_layer, artifact().package_layer);
}

#[tokio::test]
async fn a_manifest_other_than_the_digest_asked_for_is_refused() {
    let fake = Fake::start().await;
    let (_, json, _) = fake.serve(&artifact());
    // Asked by a digest, answered with another manifest.
    let asked = Digest::of(b"another manifest");
    fake.route(
        &format!("GET /v2/acme/echo/manifests/{asked}"),
        TestResponse::ok(json.clone())
            .with_header("content-type", warden_oci::manifest::IMAGE_MANIFEST),
    );
    let error = fake
        .client
        .pull(&reference(&format!("@{asked}")))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OciError::DigestMismatch { expected, .. } if *expected == asked.to_string()),
        "{error}"
    );
    // A registry claiming another digest than what it sent.
    fake.route(
        "GET /v2/acme/echo/manifests/1.0",
        TestResponse::ok(json)
            .with_header("docker-content-digest", Digest::of(b"claimed").as_str()),
    );
    let error = fake.client.pull(&reference(":1.0")).await.unwrap_err();
    assert!(matches!(error, OciError::DigestMismatch { .. }), "{error}");
    assert_eq!(
        fake.count(&format!(
            "GET /v2/acme/echo/blobs/{}",
            Digest::of(&artifact().package_layer)
        )),
        0
    );
}

#[tokio::test]
async fn a_layer_whose_bytes_differ_from_its_digest_is_refused() {
    let fake = Fake::start().await;
    let (manifest, _, _) = fake.serve(&artifact());
    let layer = &manifest.layers[1];
    // Same size, other bytes.
    let mut tampered = artifact().package_layer;
    tampered[3] ^= 1;
    fake.route(
        &format!("GET /v2/acme/echo/blobs/{}", layer.digest),
        TestResponse::ok(tampered),
    );
    let error = fake.client.pull(&reference(":1.0")).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, OciError::DigestMismatch { .. }), "{text}");
    assert!(
        text.contains(&layer.digest) && text.contains("vnd.warden.package"),
        "{text}"
    );
}

#[tokio::test]
async fn layers_over_their_bound_are_refused_before_or_while_reading() {
    let fake = Fake::start().await;
    let (manifest, _, _) = fake.serve(&artifact());
    // Declared over the bound: refused without fetching it.
    let small = fake.client.clone().with_bounds(warden_oci::PullBounds {
        module: 4,
        ..Default::default()
    });
    let error = small.pull(&reference(":1.0")).await.unwrap_err();
    assert!(
        matches!(error, OciError::TooLarge { limit: 4, .. }),
        "{error}"
    );
    let wasm = format!("GET /v2/acme/echo/blobs/{}", manifest.layers[0].digest);
    assert_eq!(fake.count(&wasm), 0, "nothing over the bound is fetched");

    // Sending more than it declared: refused at the declared size.
    let mut longer = artifact().module.unwrap().1;
    longer.extend_from_slice(&[0; 4096]);
    fake.route(&wasm, TestResponse::ok(longer));
    let error = fake.client.pull(&reference(":1.0")).await.unwrap_err();
    assert!(
        matches!(error, OciError::TooLarge { limit, .. } if limit == manifest.layers[0].size),
        "{error}"
    );
}

#[tokio::test]
async fn unknown_media_types_and_indexes_are_refused() {
    let fake = Fake::start().await;
    let (manifest, _, _) = fake.serve(&artifact());
    let mut odd = manifest.clone();
    odd.layers[1].media_type = "application/vnd.oci.image.layer.v1.tar+gzip".into();
    fake.serve_manifest(&serde_json::to_vec(&odd).unwrap());
    let error = fake.client.pull(&reference(":1.0")).await.unwrap_err();
    assert!(
        matches!(&error, OciError::MediaType { media_type, .. } if media_type.contains("image.layer")),
        "{error}"
    );

    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": warden_oci::manifest::IMAGE_INDEX,
        "manifests": [],
    });
    fake.serve_manifest(&serde_json::to_vec(&index).unwrap());
    let error = fake.client.resolve(&reference(":1.0")).await.unwrap_err();
    assert!(error.to_string().contains("image index"), "{error}");
}

#[tokio::test]
async fn a_redirect_to_a_private_address_is_not_followed() {
    let fake = Fake::start().await;
    let (manifest, _, _) = fake.serve(&artifact());
    fake.route(
        &format!("GET /v2/acme/echo/blobs/{}", manifest.layers[0].digest),
        TestResponse::redirect(307, "https://10.1.2.3/storage/blob"),
    );
    let error = fake.client.pull(&reference(":1.0")).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, OciError::Network { .. }), "{text}");
    assert!(
        text.contains("10.1.2.3") || text.contains("non-public"),
        "{text}"
    );
}

#[tokio::test]
async fn a_registry_that_wants_a_login_says_how_to_sign_in() {
    let fake = Fake::start().await;
    fake.route(
        "GET /v2/acme/echo/manifests/1.0",
        TestResponse::status(401)
            .with_header("www-authenticate", r#"Basic realm="Registry""#)
            .with_body(
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
            ),
    );
    let error = fake.client.pull(&reference(":1.0")).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, OciError::Unauthorized { .. }), "{text}");
    assert!(text.contains("docker login registry.example.com"), "{text}");
    assert!(
        text.contains("UNAUTHORIZED authentication required"),
        "{text}"
    );

    // A token realm over plain HTTP is not asked.
    fake.route(
        "GET /v2/acme/echo/manifests/1.0",
        TestResponse::status(401).with_header(
            "www-authenticate",
            r#"Bearer realm="http://registry.example.com/token",service="registry""#,
        ),
    );
    let error = fake.client.pull(&reference(":1.0")).await.unwrap_err();
    assert!(matches!(error, OciError::Token { .. }), "{error}");
}

#[tokio::test]
async fn what_was_resolved_is_what_is_pulled_when_the_tag_moves_meanwhile() {
    let fake = Fake::start().await;
    let (first, _, digest) = fake.serve(&artifact());
    let resolved = fake.client.resolve(&reference(":1.0")).await.unwrap();
    assert_eq!(resolved.digest, digest);

    // The tag moves to another version (its manifest served by tag only).
    let mut other = artifact();
    other.package_layer = b"\x1f\x8b another version".to_vec();
    let layout = other.layout();
    let moved = serde_json::to_vec(&layout.manifest).unwrap();
    fake.route(
        "GET /v2/acme/echo/manifests/1.0",
        TestResponse::ok(moved).with_header("content-type", warden_oci::manifest::IMAGE_MANIFEST),
    );
    let pulled = fake.client.pull_resolved(resolved).await.unwrap();
    assert_eq!(pulled.resolved.digest, digest);
    assert_eq!(pulled.package_layer, artifact().package_layer);
    assert_eq!(
        fake.count(&format!(
            "GET /v2/acme/echo/blobs/{}",
            first.layers[1].digest
        )),
        1
    );
    // A fresh pull by tag gets the moved version's manifest.
    let now = fake.client.resolve(&reference(":1.0")).await.unwrap();
    assert_ne!(now.digest, digest);
}

#[tokio::test]
async fn a_basic_challenge_is_answered_with_the_login_and_a_wrong_one_is_refused() {
    use base64::Engine as _;
    let login = |password: &str| {
        warden_oci::StaticLogins::new().with(
            "registry.example.com",
            warden_oci::Login::Basic {
                username: "alice".into(),
                password: password.to_owned().into(),
            },
        )
    };
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("alice:s3cret-pw")
    );
    let fake = Fake::start_with(Some(expected.clone()), login("s3cret-pw")).await;
    fake.serve(&artifact());
    let pulled = fake.client.pull(&reference(":1.0")).await.unwrap();
    assert_eq!(pulled.package_layer, artifact().package_layer);
    // Asked once, then every request of the pull carries the login.
    let requests = fake.server.requests();
    assert!(requests[0].header("authorization").is_none());
    assert!(
        requests[1..]
            .iter()
            .all(|r| r.header("authorization") == Some(&expected))
    );

    let wrong = Fake::start_with(Some(expected), login("wrong-pw")).await;
    wrong.serve(&artifact());
    let error = wrong.client.pull(&reference(":1.0")).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, OciError::Unauthorized { .. }), "{text}");
    assert!(!text.contains("wrong-pw"), "{text}");
}

/// A host the registry redirects to is never asked to sign in: its
/// challenge could name a realm that collects the registry's login.
#[tokio::test]
async fn a_redirected_host_s_challenge_is_not_answered_with_the_registry_login() {
    use std::sync::Arc;
    use warden_egress::Egress;
    use warden_egress::resolve::OverrideResolver;
    use warden_egress::secrets::MemoryStore;
    use warden_egress::testing::{TestCa, TestServer, config};

    let ca = TestCa::new();
    let cdn = TestServer::start(&ca, &["cdn.example.com"], |_| {
        TestResponse::status(401).with_header(
            "www-authenticate",
            r#"Bearer realm="https://cdn.example.com/token",service="collector""#,
        )
    })
    .await
    .unwrap();
    let blob = Digest::of(b"blob");
    let registry = TestServer::start(&ca, &["registry.example.com"], move |_| {
        TestResponse::redirect(307, "https://cdn.example.com/storage/blob")
    })
    .await
    .unwrap();
    let resolver = OverrideResolver::new()
        .with_socket("registry.example.com", [registry.addr()])
        .with_socket("cdn.example.com", [cdn.addr()]);
    let egress = Egress::new(
        config(
            &ca,
            &[("registry.example.com", 443), ("cdn.example.com", 443)],
        ),
        Arc::new(MemoryStore::new()),
        Arc::new(resolver),
    )
    .unwrap();
    let logins = warden_oci::StaticLogins::new().with(
        "registry.example.com",
        warden_oci::Login::Basic {
            username: "alice".into(),
            password: "registry-password".to_owned().into(),
        },
    );
    let client = warden_oci::Client::new(egress, Arc::new(logins));
    let error = client
        .pull(&reference(&format!("@{blob}")))
        .await
        .unwrap_err();
    assert!(
        matches!(error, OciError::Status { status: 401, .. }),
        "{error}"
    );
    assert!(
        cdn.requests()
            .iter()
            .all(|r| r.header("authorization").is_none()),
        "no login went to the redirected host or its realm"
    );
    assert_eq!(cdn.requests().len(), 1, "its token realm was never asked");
}

/// A registry that echoes the login back in its error (raw, or percent-
/// encoded), with a terminal escape, never gets either into the message a
/// person or log sees.
#[tokio::test]
async fn a_registry_echoing_the_login_in_its_error_is_redacted() {
    use base64::Engine as _;
    let password = "s3cret-pw/with+chars";
    let logins = warden_oci::StaticLogins::new().with(
        "registry.example.com",
        warden_oci::Login::Basic {
            username: "alice".into(),
            password: password.to_owned().into(),
        },
    );
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("alice:{password}"))
    );
    let fake = Fake::start_with(Some(expected), logins).await;
    fake.route(
        "GET /v2/acme/echo/manifests/1.0",
        TestResponse::status(400).with_body(format!(
            r#"{{"errors":[{{"code":"DENIED","message":"\u001b[2Jbad password {password} ({})"}}]}}"#,
            "s3cret-pw%2Fwith%2Bchars"
        )),
    );
    let error = fake.client.pull(&reference(":1.0")).await.unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, OciError::Status { status: 400, .. }),
        "{text}"
    );
    assert!(text.contains("DENIED"), "{text}");
    assert!(!text.contains("s3cret-pw"), "the login leaked: {text}");
    assert!(
        !text.contains('\u{1b}'),
        "a terminal escape came through: {text:?}"
    );
}
