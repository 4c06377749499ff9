//! `packages/google-calendar` against a fake Calendar API.

use serde_json::json;
use warden_core::ErrorCode;
use warden_egress::testing::{RecordedRequest, TestResponse};

use crate::{Fixture, body, insufficient_scope};

const API: &str = "/calendar/v3";
const READ: &str = "https://www.googleapis.com/auth/calendar.readonly";
const WRITE: &str = "https://www.googleapis.com/auth/calendar.events";

fn google_event(id: &str) -> serde_json::Value {
    json!({
        "id": id, "etag": "\"e1\"", "summary": "Standup", "status": "confirmed",
        "htmlLink": "https://calendar.google.com/event?eid=x",
        "start": {"dateTime": "2026-12-08T09:00:00Z"}, "end": {"dateTime": "2026-12-08T09:15:00Z"},
        "organizer": {"email": "me@example.com"},
        "attendees": [{"email": "Ana@Example.com", "responseStatus": "accepted"}],
    })
}

fn calendar(request: &RecordedRequest) -> TestResponse {
    let target = request.target.strip_prefix(API).unwrap_or_default();
    let (path, _) = target.split_once('?').unwrap_or((target, ""));
    match (request.method.as_str(), path) {
        ("GET", "/users/me/calendarList") => TestResponse::json(&json!({"items": [
            {"id": "me@example.com", "summary": "Me", "primary": true,
             "timeZone": "Europe/Lisbon", "accessRole": "owner"},
            {"id": "team@group.calendar.google.com", "summary": "Team", "accessRole": "reader"}]})),
        ("GET", "/calendars/primary/events") => TestResponse::json(&json!({
            "items": [google_event("ev1")], "nextPageToken": "n2"})),
        ("GET", "/calendars/team%40group.calendar.google.com/events/ev1") => {
            TestResponse::json(&google_event("ev1"))
        }
        ("GET", "/calendars/primary/events/ev1") => TestResponse::json(&google_event("ev1")),
        ("POST", "/calendars/primary/events") => {
            let mut created = body(request);
            created["id"] = json!("new1");
            TestResponse::json(&created)
        }
        ("PATCH", "/calendars/primary/events/ev1") => {
            let mut patched = google_event("ev1");
            for (key, value) in body(request).as_object().unwrap() {
                patched[key] = value.clone();
            }
            TestResponse::json(&patched)
        }
        ("DELETE", "/calendars/primary/events/ev1") => TestResponse::status(204),
        ("POST", "/freeBusy") => TestResponse::json(&json!({"calendars": {
            "primary": {"busy": [
                {"start": "2026-12-08T09:00:00Z", "end": "2026-12-08T10:00:00Z"},
                {"start": "2026-12-08T11:00:00Z", "end": "2026-12-08T11:20:00Z"}]},
            "ana@example.com": {"busy": [
                {"start": "2026-12-08T09:30:00Z", "end": "2026-12-08T10:30:00Z"}]}}})),
        ("GET", "/calendars/locked/events") => insufficient_scope(),
        _ => TestResponse::status(404),
    }
}

async fn fixture() -> Fixture {
    let account = (
        "google_calendar_account",
        "www.googleapis.com",
        &[READ, WRITE][..],
    );
    Fixture::start(
        "google-calendar",
        Some(account),
        &["www.googleapis.com"],
        calendar,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn every_calendar_tool_runs_against_the_api() {
    let cal = fixture().await;
    let calendars = cal
        .call("google-calendar.list_calendars", json!({}))
        .await
        .unwrap();
    assert_eq!(calendars["calendars"][0]["primary"], true);
    assert_eq!(
        calendars["calendars"][1]["id"],
        "team@group.calendar.google.com"
    );

    let events = cal
        .call(
            "google-calendar.list_events",
            json!({"time_min": "2026-12-08T00:00:00Z", "query": "stand up"}),
        )
        .await
        .unwrap();
    assert_eq!(events["events"][0]["summary"], "Standup");
    assert_eq!(
        events["events"][0]["attendees"][0]["response_status"],
        "accepted"
    );
    assert_eq!(events["next_page_token"], "n2");

    let event = cal
        .call(
            "google-calendar.get_event",
            json!({"calendar_id": "team@group.calendar.google.com", "event_id": "ev1"}),
        )
        .await
        .unwrap();
    assert_eq!(event["organizer"], "me@example.com");

    let created = cal
        .call(
            "google-calendar.create_event",
            json!({"summary": "Offsite", "start": "2026-12-10", "end": "2026-12-11",
                   "attendees": ["bob@example.com"], "location": "Porto"}),
        )
        .await
        .unwrap();
    assert_eq!(created["id"], "new1");
    assert_eq!(created["start"], json!({"date": "2026-12-10"}));

    let updated = cal
        .call(
            "google-calendar.update_event",
            json!({"event_id": "ev1", "start": "2026-12-08T10:00:00+01:00",
                   "time_zone": "Europe/Lisbon", "summary": "Standup (moved)"}),
        )
        .await
        .unwrap();
    assert_eq!(updated["summary"], "Standup (moved)");

    let added = cal
        .call(
            "google-calendar.add_attendees",
            json!({"event_id": "ev1", "attendees": ["ana@example.com", "carl@example.com"]}),
        )
        .await
        .unwrap();
    let emails: Vec<&str> = added["attendees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["email"].as_str().unwrap())
        .collect();
    assert_eq!(
        emails,
        ["Ana@Example.com", "carl@example.com"],
        "no one twice"
    );

    let reminded = cal
        .call(
            "google-calendar.set_reminder",
            json!({"event_id": "ev1", "minutes": [10, 60]}),
        )
        .await
        .unwrap();
    assert_eq!(
        reminded["reminders"]["overrides"][1],
        json!({"method": "popup", "minutes": 60})
    );

    let deleted = cal
        .call("google-calendar.delete_event", json!({"event_id": "ev1"}))
        .await
        .unwrap();
    assert_eq!(deleted, json!({"deleted": true, "event_id": "ev1"}));

    let free = cal
        .call(
            "google-calendar.find_free_slots",
            json!({"time_min": "2026-12-08T08:00:00Z", "time_max": "2026-12-08T12:00:00Z",
                   "calendar_ids": ["primary", "ana@example.com"], "duration_minutes": 30}),
        )
        .await
        .unwrap();
    assert_eq!(
        free["free"],
        json!([
            {"start": "2026-12-08T08:00:00Z", "end": "2026-12-08T09:00:00Z"},
            {"start": "2026-12-08T10:30:00Z", "end": "2026-12-08T11:00:00Z"},
            {"start": "2026-12-08T11:20:00Z", "end": "2026-12-08T12:00:00Z"},
        ])
    );
    assert_eq!(free["busy"].as_array().unwrap().len(), 3);

    let requests = cal.server.requests();
    let find = |method: &str, path: &str| {
        requests
            .iter()
            .find(|r| r.method == method && r.target.starts_with(&format!("{API}{path}")))
            .unwrap_or_else(|| panic!("no {method} {path}"))
    };
    let list = find("GET", "/calendars/primary/events");
    assert_eq!(
        list.target,
        format!(
            "{API}/calendars/primary/events?singleEvents=true&orderBy=startTime\
                 &timeMin=2026-12-08T00%3A00%3A00Z&maxResults=25&q=stand%20up"
        )
    );
    let create = body(find("POST", "/calendars/primary/events"));
    assert_eq!(create["attendees"], json!([{"email": "bob@example.com"}]));
    assert_eq!(create["end"], json!({"date": "2026-12-11"}));
    let patches: Vec<&RecordedRequest> = requests.iter().filter(|r| r.method == "PATCH").collect();
    assert_eq!(
        body(patches[0])["start"],
        json!({"dateTime": "2026-12-08T10:00:00+01:00", "timeZone": "Europe/Lisbon"})
    );
    assert_eq!(
        patches[1].header("if-match"),
        Some("\"e1\""),
        "attendees write over what was read"
    );
    let busy = body(find("POST", "/freeBusy"));
    assert_eq!(
        busy["items"],
        json!([{"id": "primary"}, {"id": "ana@example.com"}])
    );
    cal.assert_token_on_every_request();
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_times_are_refused_and_a_missing_scope_asks_again() {
    let cal = fixture().await;
    let refused = cal
        .call(
            "google-calendar.create_event",
            json!({"summary": "x", "start": "tomorrow at ten", "end": "2026-12-11"}),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidInput, "{refused}");
    assert!(refused.message().contains("/start"), "{refused}");
    let backwards = cal
        .call(
            "google-calendar.find_free_slots",
            json!({"time_min": "2026-12-08T12:00:00Z", "time_max": "2026-12-08T08:00:00Z"}),
        )
        .await
        .unwrap_err();
    assert_eq!(backwards.code(), ErrorCode::InvalidInput, "{backwards}");
    assert!(cal.server.requests().is_empty(), "nothing was sent");
    let locked = cal
        .call(
            "google-calendar.list_events",
            json!({"calendar_id": "locked"}),
        )
        .await
        .unwrap_err();
    assert_eq!(locked.code(), ErrorCode::AuthRequired, "{locked}");
    assert_eq!(locked.auth_details().unwrap().scopes, [READ]);
}
