//! `packages/gmail` against a fake Gmail API.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;
use warden_core::ErrorCode;
use warden_egress::testing::{RecordedRequest, TestResponse};

use crate::{Fixture, body, expired, insufficient_scope};

const API: &str = "/gmail/v1/users/me";
const READ: &str = "https://www.googleapis.com/auth/gmail.readonly";
const SEND: &str = "https://www.googleapis.com/auth/gmail.send";
const COMPOSE: &str = "https://www.googleapis.com/auth/gmail.compose";
const MODIFY: &str = "https://www.googleapis.com/auth/gmail.modify";

fn gmail(request: &RecordedRequest) -> TestResponse {
    let target = request.target.strip_prefix(API).unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    match (request.method.as_str(), path) {
        ("GET", "/messages") => TestResponse::json(&json!({
            "messages": [{"id": "m1", "threadId": "t1"}, {"id": "m2", "threadId": "t1"}],
            "nextPageToken": "p2", "resultSizeEstimate": 2,
        })),
        ("GET", "/messages/m1") if query == "format=full" => TestResponse::json(&json!({
            "id": "m1", "threadId": "t1", "labelIds": ["INBOX", "UNREAD"],
            // A provider that echoes the credential: the host redacts it.
            "snippet": format!("seen {}", request.header("authorization").unwrap_or_default()),
            "payload": {"mimeType": "multipart/mixed", "headers": [
                {"name": "From", "value": "Ana Lima <ana@example.com>"},
                {"name": "Subject", "value": "Lunch"},
                {"name": "Date", "value": "Mon, 7 Dec 2026 09:00:00 +0000"}],
              "parts": [{"mimeType": "text/plain",
                         "body": {"data": URL_SAFE_NO_PAD.encode("Noon at the usual place?")}},
                        {"mimeType": "image/png", "filename": "map.png", "body": {"size": 2048}}]},
        })),
        ("GET", "/messages/m1") => TestResponse::json(&json!({
            "id": "m1", "threadId": "t1", "payload": {"headers": [
                {"name": "From", "value": "Ana Lima <ana@example.com>"},
                {"name": "To",
                 "value": "me@example.com, bob@example.com, \"Me, Not\" <notme@example.com>"},
                {"name": "Subject", "value": "Lunch"},
                {"name": "Message-ID", "value": "<lunch@example.com>"}]},
        })),
        ("GET", "/profile") => TestResponse::json(&json!({"emailAddress": "me@example.com"})),
        ("POST", "/messages/send") => TestResponse::json(&json!({
            "id": "s1", "threadId": body(request)["threadId"].as_str().unwrap_or("t-new"),
            "labelIds": ["SENT"],
        })),
        ("POST", "/drafts") => TestResponse::json(&json!({
            "id": "d1", "message": {"id": "m9", "threadId": "t9", "labelIds": ["DRAFT"]},
        })),
        ("POST", "/messages/m1/trash") => TestResponse::json(&json!({
            "id": "m1", "threadId": "t1", "labelIds": ["TRASH"],
        })),
        // A provider (or a sender) that hands the credential back encoded in
        // a body part: the service decodes the part, the host redacts it.
        ("GET", "/messages/echo") => {
            let token = request.header("authorization").unwrap_or_default();
            let data = URL_SAFE_NO_PAD.encode(format!("your token is {token}"));
            TestResponse::json(&json!({"id": "echo", "threadId": "t", "payload": {
                "mimeType": "text/plain", "body": {"data": data}}}))
        }
        ("GET", "/messages/scopeless") => insufficient_scope(),
        ("GET", "/messages/expired") => expired(),
        _ => TestResponse::status(404),
    }
}

/// The RFC 5322 text a send carried as `raw`.
fn raw_message(request: &RecordedRequest) -> String {
    let raw = body(request)["raw"].as_str().unwrap().to_owned();
    String::from_utf8(URL_SAFE_NO_PAD.decode(raw).unwrap()).unwrap()
}

/// A message's text (its base64 body part).
fn raw_text(message: &str) -> String {
    let encoded = message
        .split("\r\n\r\n")
        .nth(1)
        .unwrap()
        .replace("\r\n", "");
    String::from_utf8(STANDARD.decode(encoded).unwrap()).unwrap()
}

async fn fixture(scopes: &[&str]) -> Fixture {
    let account = ("gmail_account", "gmail.googleapis.com", scopes);
    Fixture::start("gmail", Some(account), &["gmail.googleapis.com"], gmail).await
}

#[tokio::test(flavor = "multi_thread")]
async fn every_gmail_tool_runs_against_the_api() {
    let gmail = fixture(&[READ, SEND, COMPOSE, MODIFY]).await;

    let listed = gmail
        .call(
            "gmail.list_messages",
            json!({"query": "from:ana is:unread", "max_results": 5}),
        )
        .await
        .unwrap();
    assert_eq!(
        listed["messages"][1],
        json!({"id": "m2", "thread_id": "t1"})
    );
    assert_eq!(listed["next_page_token"], "p2");

    let read = gmail
        .call("gmail.get_message", json!({"message_id": "m1"}))
        .await
        .unwrap();
    assert_eq!(read["text"], "Noon at the usual place?");
    assert_eq!(read["from"], "Ana Lima <ana@example.com>");
    assert_eq!(read["attachments"][0]["filename"], "map.png");
    assert_eq!(
        read["snippet"], "seen Bearer [REDACTED]",
        "the echoed token is redacted"
    );

    let sent = gmail
        .call(
            "gmail.send_message",
            json!({"to": ["José <jose@example.com>"], "subject": "Café", "body": "À bientôt"}),
        )
        .await
        .unwrap();
    assert_eq!(
        sent,
        json!({"id": "s1", "thread_id": "t-new", "label_ids": ["SENT"]})
    );

    let draft = gmail
        .call(
            "gmail.create_draft",
            json!({"to": "bob@example.com", "body": "Draft text"}),
        )
        .await
        .unwrap();
    assert_eq!(
        draft,
        json!({"draft_id": "d1", "message_id": "m9", "thread_id": "t9"})
    );

    let replied = gmail
        .call(
            "gmail.reply_to_message",
            json!({"message_id": "m1", "body": "Yes!", "reply_all": true}),
        )
        .await
        .unwrap();
    assert_eq!(replied["thread_id"], "t1");

    let trashed = gmail
        .call("gmail.trash_message", json!({"message_id": "m1"}))
        .await
        .unwrap();
    assert_eq!(trashed["label_ids"], json!(["TRASH"]));

    let requests = gmail.server.requests();
    let targets: Vec<String> = requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect();
    assert!(
        targets.contains(&format!(
            "GET {API}/messages?q=from%3Aana%20is%3Aunread&maxResults=5"
        )),
        "{targets:?}"
    );
    let sends: Vec<&RecordedRequest> = requests
        .iter()
        .filter(|r| r.target == format!("{API}/messages/send"))
        .collect();
    let first = raw_message(sends[0]);
    assert!(
        first.starts_with(
            "To: =?UTF-8?B?Sm9zw6k=?= <jose@example.com>\r\nSubject: =?UTF-8?B?Q2Fmw6k=?=\r\n"
        ),
        "{first}"
    );
    assert_eq!(raw_text(&first), "À bientôt");
    // The reply: to the sender and the others (not to me), in the thread,
    // threaded by the original's Message-ID.
    let reply = raw_message(sends[1]);
    assert!(
        reply.starts_with(
            "To: Ana Lima <ana@example.com>, bob@example.com, \"Me, Not\" <notme@example.com>\r\n\
             Subject: Re: Lunch\r\n\
             In-Reply-To: <lunch@example.com>\r\nReferences: <lunch@example.com>\r\n"
        ),
        "{reply}"
    );
    assert_eq!(body(sends[1])["threadId"], "t1");
    let draft = requests
        .iter()
        .find(|r| r.target == format!("{API}/drafts"))
        .unwrap();
    assert!(
        raw_text(&{
            let raw = body(draft)["message"]["raw"].as_str().unwrap().to_owned();
            String::from_utf8(URL_SAFE_NO_PAD.decode(raw).unwrap()).unwrap()
        })
        .contains("Draft text")
    );
    gmail.assert_token_on_every_request();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_google_refuses_asks_for_the_account_again_with_its_scopes() {
    let gmail = fixture(&[READ]).await;
    // Google: this token lacks a scope (revoked at Google since).
    let refused = gmail
        .call("gmail.get_message", json!({"message_id": "scopeless"}))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::AuthRequired, "{refused}");
    let auth = refused.auth_details().expect("details");
    assert_eq!(auth.vendor.as_deref(), Some("google"));
    assert_eq!(auth.scopes, [READ]);
    assert_eq!(auth.extension, "gmail");
    // Google: the token expired or was revoked.
    let expired = gmail
        .call("gmail.get_message", json!({"message_id": "expired"}))
        .await
        .unwrap_err();
    assert_eq!(expired.code(), ErrorCode::AuthRequired, "{expired}");
    // The account was connected without `gmail.send`: the host asks before
    // anything is sent.
    let before = gmail.server.requests().len();
    let send = gmail
        .call(
            "gmail.send_message",
            json!({"to": "a@example.com", "body": "hi"}),
        )
        .await
        .unwrap_err();
    assert_eq!(send.code(), ErrorCode::AuthRequired, "{send}");
    assert_eq!(send.auth_details().unwrap().scopes, [SEND]);
    assert_eq!(gmail.server.requests().len(), before, "nothing was sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_credential_echoed_in_an_encoded_body_part_is_redacted_once_decoded() {
    let gmail = fixture(&[READ]).await;
    let read = gmail
        .call("gmail.get_message", json!({"message_id": "echo"}))
        .await
        .unwrap();
    // `call` asserts the token is nowhere in the output; egress may already
    // have redacted the encoded form, leaving a part that no longer decodes.
    let text = read["text"].as_str().unwrap();
    assert!(
        text.is_empty() || text == "your token is Bearer [REDACTED]",
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_header_smuggled_into_a_field_is_refused_before_anything_is_sent() {
    let gmail = fixture(&[SEND]).await;
    let refused = gmail
        .call(
            "gmail.send_message",
            json!({"to": "a@example.com", "subject": "hi\r\nBcc: all@example.com", "body": "x"}),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidInput, "{refused}");
    assert!(refused.message().contains("/subject"), "{refused}");
    assert!(gmail.server.requests().is_empty());
}
