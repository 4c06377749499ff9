use std::sync::Arc;
use std::time::Duration;

use warden_core::net::{
    BoxFuture, CallNetwork, CredentialError, CredentialMatch, GuestRequest, GuestResponse,
    HttpError,
};
use warden_core::spec::CredentialSpec;

use super::*;

const SECRET: &str = "tok-5ecret-value";

/// A network that answers with a body echoing the request, and redacts SECRET.
struct Echoing;

impl CallNetwork for Echoing {
    fn acquire(&self, _handle: &str) -> Result<(), CredentialError> {
        Ok(())
    }

    fn credential_for_url(&self, url: &str) -> Result<Option<CredentialMatch>, CredentialError> {
        Ok(url
            .starts_with("https://api.example.com/")
            .then(|| matched(&credential())))
    }

    fn send<'a>(
        &'a self,
        request: GuestRequest,
        _credential: Option<&'a str>,
        _remaining: Duration,
    ) -> BoxFuture<'a, Result<GuestResponse, HttpError>> {
        Box::pin(async move {
            if request.url.ends_with("/slow") {
                return Err(HttpError::Timeout);
            }
            Ok(GuestResponse {
                status: 200,
                headers: vec![("content-type".into(), "application/json".into())],
                body: self
                    .redact(&format!("{{\"url\":\"{}\"}}", request.url))
                    .into_bytes(),
            })
        })
    }

    fn redact(&self, text: &str) -> String {
        text.replace(SECRET, "[REDACTED]")
    }
}

fn credential() -> CredentialSpec {
    serde_json::from_value(serde_json::json!({
        "handle": "api_token",
        "vendor": "example",
        "audience": {"scheme": "https", "host": "api.example.com"},
        "injection": {"type": "header", "name": "authorization", "prefix": "Bearer "},
    }))
    .unwrap()
}

fn get(url: &str) -> GuestRequest {
    GuestRequest {
        method: "GET".into(),
        url: url.into(),
        headers: vec![("accept".into(), "application/json".into())],
        body: None,
        timeout: None,
    }
}

fn block<T>(future: BoxFuture<'_, T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

fn record(requests: &[GuestRequest]) -> Tape {
    let recorder = Recorder::new();
    let network = Recording::new(Arc::new(Echoing), &[credential()], recorder.clone());
    for request in requests {
        let _ = block(network.send(request.clone(), Some("api_token"), Duration::from_secs(1)));
    }
    recorder.tape("example.read")
}

#[test]
fn a_tape_holds_the_credential_as_a_placeholder_and_no_secret() {
    let mut leaky = get(&format!("https://api.example.com/items?echo={SECRET}"));
    leaky.body = Some(format!("{{\"token\":\"{SECRET}\"}}").into_bytes());
    let tape = record(&[leaky, get("https://api.example.com/slow")]);
    let json = tape.to_json();
    assert!(!json.contains(SECRET), "{json}");
    assert!(
        json.contains("header authorization: Bearer {{secret:api_token}}"),
        "{json}"
    );
    assert_eq!(tape.exchanges.len(), 2);
    assert!(matches!(
        &tape.exchanges[1].response,
        TapeResponse::Failed { error, .. } if error == "timeout"
    ));
    assert_eq!(Tape::from_json(json.as_bytes()).unwrap(), tape);
}

#[test]
fn a_replay_answers_from_the_tape_the_same_way_every_time() {
    let requests = [
        get("https://api.example.com/a"),
        get("https://api.example.com/slow"),
    ];
    let tape = record(&requests);
    let mut answers = Vec::new();
    for _ in 0..2 {
        let replay = Replay::new(tape.clone());
        let network = Replaying::new(replay.clone(), &[credential()]);
        network.acquire("api_token").unwrap();
        assert!(matches!(
            network.acquire("other"),
            Err(CredentialError::NotDeclared(_))
        ));
        let first = block(network.send(requests[0].clone(), Some("api_token"), Duration::ZERO));
        let second = block(network.send(requests[1].clone(), Some("api_token"), Duration::ZERO));
        assert_eq!(second, Err(HttpError::Timeout));
        replay.finish().unwrap();
        answers.push(first.unwrap());
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0].body, br#"{"url":"https://api.example.com/a"}"#);
}

#[test]
fn a_changed_request_is_refused_with_a_diff() {
    let tape = record(&[get("https://api.example.com/a")]);
    let replay = Replay::new(tape);
    let network = Replaying::new(replay.clone(), &[credential()]);
    let mut changed = get("https://api.example.com/b");
    changed.headers.push(("x-extra".into(), "1".into()));
    let answer = block(network.send(changed, Some("api_token"), Duration::ZERO));
    assert!(matches!(answer, Err(HttpError::Denied(_))), "{answer:?}");
    let diff = replay.finish().unwrap_err().to_string();
    assert!(diff.contains("request #1 differs from the tape"), "{diff}");
    assert!(
        diff.contains("- tape:  https://api.example.com/a"),
        "{diff}"
    );
    assert!(
        diff.contains("+ guest: https://api.example.com/b"),
        "{diff}"
    );
    assert!(diff.contains("x-extra"), "{diff}");
}

#[test]
fn a_request_beyond_the_tape_and_a_request_never_made_both_fail() {
    let tape = record(&[get("https://api.example.com/a")]);

    let replay = Replay::new(tape.clone());
    let network = Replaying::new(replay.clone(), &[credential()]);
    for _ in 0..2 {
        let _ = block(network.send(
            get("https://api.example.com/a"),
            Some("api_token"),
            Duration::ZERO,
        ));
    }
    let beyond = replay.finish().unwrap_err().to_string();
    assert!(beyond.contains("request #2 is not on the tape"), "{beyond}");

    let unused = Replay::new(tape).finish().unwrap_err().to_string();
    assert!(unused.contains("the tape holds 1 more"), "{unused}");
    assert!(unused.contains("GET https://api.example.com/a"), "{unused}");
}

#[test]
fn a_bad_tape_is_refused_by_what_is_wrong() {
    let tape = record(&[get("https://api.example.com/a")]);
    let json = tape.to_json();
    let other = json.replace("warden.tape.v1", "warden.tape.v9");
    assert!(matches!(
        Tape::from_json(other.as_bytes()),
        Err(TapeError::Format { found }) if found == "warden.tape.v9"
    ));
    let mut value: serde_json::Value = serde_json::from_str(&json).unwrap();
    value["exchanges"][0]["response"]["body"] = serde_json::Value::Null;
    value["exchanges"][0]["response"]["body_base64"] = "not base64!".into();
    assert!(matches!(
        Tape::from_json(value.to_string().as_bytes()),
        Err(TapeError::Base64 { index: 1 })
    ));
    value["exchanges"][0]["request"]["surprise"] = true.into();
    assert!(matches!(
        Tape::from_json(value.to_string().as_bytes()),
        Err(TapeError::Malformed(_))
    ));
}

/// A `near:agent` guest names no credential: its URL selects one. Recording
/// asks the call's real network; replaying selects among the declared
/// credentials as a live call does. Both selected none before, so such a
/// tool was recorded without its credential, and its tape did not replay.
#[test]
fn the_credential_is_selected_by_url_when_recording_and_replaying() {
    let recording = Recording::new(Arc::new(Echoing), &[credential()], Recorder::new());
    let replaying = Replaying::new(Replay::new(record(&[])), &[credential()]);
    for network in [&recording as &dyn CallNetwork, &replaying] {
        let selected = network
            .credential_for_url("https://api.example.com/v1/items")
            .unwrap()
            .map(|m| m.handle);
        assert_eq!(selected.as_deref(), Some("api_token"));
        for elsewhere in ["https://other.example.com/v1", "http://api.example.com/v1"] {
            assert!(network.credential_for_url(elsewhere).unwrap().is_none());
        }
    }
}
