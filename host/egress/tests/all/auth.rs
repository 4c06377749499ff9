//! Auth recipes against a local OAuth server and a local API.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};
use warden_core::spec::{
    ApiKeyRecipe, Injection, OAuth2Recipe, TokenResponsePointers, ValidationProbe,
};
use warden_egress::auth::oauth2::{OAuth2Client, OAuth2Flow};
use warden_egress::auth::{AuthError, api_key};
use warden_egress::secrets::AccountKey;
use warden_egress::testing::{RecordedRequest, TestResponse};

use crate::support::*;

fn form(req: &RecordedRequest) -> HashMap<String, String> {
    url::form_urlencoded::parse(&req.body)
        .into_owned()
        .collect()
}

fn oauth_server(req: &RecordedRequest) -> TestResponse {
    if req.target != "/login/oauth/access_token" {
        return TestResponse::status(404);
    }
    let form = form(req);
    match (
        form.get("grant_type").map(String::as_str),
        form.get("client_secret").map(String::as_str),
    ) {
        (Some("authorization_code"), Some("shh"))
            if form.get("code").map(String::as_str) == Some("good-code") =>
        {
            TestResponse::json(&serde_json::json!({
                "data": {"token": "gho_access_one"},
                "refresh_token": "ghr_refresh_one",
                "expires_in": 3600,
                "scope": "repo read:org",
            }))
        }
        (Some("refresh_token"), Some("shh"))
            if form.get("refresh_token").map(String::as_str) == Some("ghr_refresh_one") =>
        {
            TestResponse::json(
                &serde_json::json!({"data": {"token": "gho_access_two"}, "expires_in": "7200"}),
            )
        }
        _ => TestResponse::status(400).with_body("{\"error\":\"bad_verification_code\"}"),
    }
}

fn recipe() -> OAuth2Recipe {
    OAuth2Recipe {
        display_name: Some("GitHub account".into()),
        authorization_endpoint: "https://github.com/login/oauth/authorize".into(),
        token_endpoint: "https://github.com/login/oauth/access_token".into(),
        scopes: vec!["repo".into(), "read:org".into()],
        scope_separator: None,
        pkce: None,
        authorize_params: [
            ("allow_signup".to_owned(), "false".to_owned()),
            ("state".to_owned(), "evil".to_owned()),
        ]
        .into(),
        token_response: TokenResponsePointers {
            access_token: "/data/token".into(),
            refresh_token: Some("/refresh_token".into()),
            expires_in: Some("/expires_in".into()),
            scope: Some("/scope".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn oauth2_code_flow_with_pkce_and_refresh() {
    let fx = fixture(oauth_server).await;
    let client = OAuth2Client {
        client_id: "warden-client".into(),
        client_secret: Some(SecretString::from("shh")),
        redirect_uri: "http://127.0.0.1:8976/callback".into(),
    };
    let recipe = recipe();
    let flow = OAuth2Flow::new(&recipe, &client);
    let pending = flow.start().unwrap();
    let url = url::Url::parse(&pending.url).unwrap();
    let query: HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(url.host_str(), Some("github.com"));
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], "warden-client");
    assert_eq!(query["scope"], "repo read:org");
    assert_eq!(query["state"], pending.state);
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["allow_signup"], "false");
    assert_eq!(url.query_pairs().filter(|(k, _)| k == "state").count(), 1);

    let err = flow
        .exchange(&fx.egress, &pending, "good-code", "forged")
        .await
        .unwrap_err();
    assert!(matches!(err, AuthError::StateMismatch), "{err:?}");
    assert!(fx.server.requests().is_empty());
    let err = flow
        .exchange(&fx.egress, &pending, "bad-code", &pending.state)
        .await
        .unwrap_err();
    assert!(
        matches!(err, AuthError::Rejected { status: 400 }),
        "{err:?}"
    );
    assert!(!err.to_string().contains("bad_verification_code"));

    let tokens = flow
        .exchange(&fx.egress, &pending, "good-code", &pending.state)
        .await
        .unwrap();
    assert_eq!(tokens.access_token.expose_secret(), "gho_access_one");
    assert_eq!(
        tokens.scopes,
        vec!["read:org".to_owned(), "repo".to_owned()]
    );
    let sent = form(&fx.server.requests()[1]);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(sent["code_verifier"].as_bytes()));
    assert_eq!(query["code_challenge"], challenge);

    let key = AccountKey::new("github", "gh_oauth", ["repo"]);
    OAuth2Flow::store(fx.egress.store().as_ref(), &key, &tokens).unwrap();
    assert!(
        !flow
            .refresh_if_needed(&fx.egress, &key, SystemTime::now())
            .await
            .unwrap()
    );
    let later = SystemTime::now() + Duration::from_secs(3590);
    assert!(
        flow.refresh_if_needed(&fx.egress, &key, later)
            .await
            .unwrap()
    );
    let access = fx.egress.store().get(&key).unwrap().unwrap();
    assert_eq!(access.expose_secret(), "gho_access_two");
    let refresh = &fx.server.requests()[2];
    assert_eq!(form(refresh)["grant_type"], "refresh_token");
}

#[tokio::test]
async fn api_key_is_stored_only_after_its_probe_passes() {
    let fx = fixture(|req| match req.header("authorization") {
        Some("token good-key-123") if req.target == "/user" => TestResponse::ok("{}"),
        _ => TestResponse::status(401),
    })
    .await;
    let recipe = ApiKeyRecipe {
        validation: Some(ValidationProbe {
            method: None,
            url: "https://api.github.com/user".into(),
            handle: None,
            injection: Injection::Header {
                name: "authorization".into(),
                prefix: Some("token ".into()),
            },
            expect_status: vec![],
        }),
        ..Default::default()
    };
    let key = AccountKey::new("github", "gh_key", Vec::<String>::new());
    let err = api_key::connect(
        &fx.egress,
        &recipe,
        &key,
        SecretString::from("wrong-key-456"),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, AuthError::Rejected { status: 401 }),
        "{err:?}"
    );
    assert!(fx.egress.store().get(&key).unwrap().is_none());
    api_key::connect(
        &fx.egress,
        &recipe,
        &key,
        SecretString::from("good-key-123"),
    )
    .await
    .unwrap();
    assert_eq!(
        fx.egress
            .store()
            .get(&key)
            .unwrap()
            .unwrap()
            .expose_secret(),
        "good-key-123"
    );
    assert_eq!(fx.server.requests().len(), 2);
}
