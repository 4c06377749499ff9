//! Google Calendar (`packages/google-calendar`): the user's calendars through
//! the Calendar API, with the token of credential `google_calendar_account`
//! (audience `www.googleapis.com`).
//!
//! Events come back in one shape whatever the tool (id, title, times,
//! place, attendees and their answers, reminders); writes take fields.
//! `calendar_id` defaults to `primary`. Adding attendees reads the event and
//! writes it back with `If-Match` on its etag, so an attendee someone else
//! added meanwhile is not lost (Google answers 412 and the call fails,
//! saying so). Free slots are computed here from free/busy.

mod free;

use serde_json::{Map, Value, json};
use time::{Duration, OffsetDateTime};
use warden_core::net::BoxFuture;
use warden_host::{FirstPartyCall, FirstPartyError, FirstPartyService};

use crate::google::{Google, encode, url_with_query};
use crate::support::{failed, invalid, no_tool, required, strings, text};

const API: &str = "https://www.googleapis.com/calendar/v3";

/// The Google Calendar service (`service = "google-calendar"`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Calendar;

impl FirstPartyService for Calendar {
    fn call(
        &self,
        call: FirstPartyCall,
        input: Value,
    ) -> BoxFuture<'_, Result<Value, FirstPartyError>> {
        Box::pin(async move {
            let (google, tool) = Google::of(&call, "google_calendar_account", "google-calendar");
            match tool {
                "list_calendars" => list_calendars(&google).await,
                "list_events" => list_events(&google, &input).await,
                "get_event" => Ok(event(&google.get(&event_url(&input)?).await?)),
                "create_event" => create_event(&google, &input).await,
                "update_event" => patch(&google, &input, changes(&input)?).await,
                "delete_event" => delete_event(&google, &input).await,
                "add_attendees" => add_attendees(&google, &input).await,
                "set_reminder" => set_reminder(&google, &input).await,
                "find_free_slots" => find_free_slots(&google, &input).await,
                _ => Err(no_tool(&call.capability_id)),
            }
        })
    }
}

fn calendar_id(input: &Value) -> String {
    encode(text(input, "calendar_id").unwrap_or("primary"))
}

fn event_url(input: &Value) -> Result<String, FirstPartyError> {
    let event = encode(required(input, "event_id")?);
    Ok(format!(
        "{API}/calendars/{}/events/{event}",
        calendar_id(input)
    ))
}

/// An event as every tool answers it.
fn event(google: &Value) -> Value {
    let mut out = json!({
        "id": google["id"],
        "start": google["start"],
        "end": google["end"],
    });
    for (key, from) in [
        ("summary", "summary"),
        ("description", "description"),
        ("location", "location"),
        ("status", "status"),
        ("html_link", "htmlLink"),
    ] {
        if let Some(value) = google[from].as_str() {
            out[key] = json!(value);
        }
    }
    if let Some(organizer) = google["organizer"]["email"].as_str() {
        out["organizer"] = json!(organizer);
    }
    let attendees: Vec<Value> = google["attendees"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            let mut attendee = json!({"email": a["email"]});
            if let Some(answer) = a["responseStatus"].as_str() {
                attendee["response_status"] = json!(answer);
            }
            if let Some(name) = a["displayName"].as_str() {
                attendee["display_name"] = json!(name);
            }
            attendee
        })
        .collect();
    out["attendees"] = json!(attendees);
    if google["reminders"].is_object() {
        out["reminders"] = google["reminders"].clone();
    }
    out
}

async fn list_calendars(google: &Google<'_>) -> Result<Value, FirstPartyError> {
    let listed = google.get(&format!("{API}/users/me/calendarList")).await?;
    let calendars: Vec<Value> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            json!({
                "id": c["id"],
                "summary": c["summary"].as_str().unwrap_or_default(),
                "primary": c["primary"].as_bool().unwrap_or(false),
                "time_zone": c["timeZone"].as_str().unwrap_or_default(),
                "access_role": c["accessRole"].as_str().unwrap_or_default(),
            })
        })
        .collect();
    Ok(json!({ "calendars": calendars }))
}

/// Upcoming events in start order: from `time_min` (default now), one page.
async fn list_events(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let page = text(input, "page_token").map(str::to_owned);
    let from = text(input, "time_min").map(str::to_owned).or_else(|| {
        page.is_none()
            .then(|| free::format(OffsetDateTime::now_utc()))
    });
    let url = url_with_query(
        &format!("{API}/calendars/{}/events", calendar_id(input)),
        [
            ("singleEvents", Some("true".to_owned())),
            ("orderBy", Some("startTime".to_owned())),
            ("timeMin", from),
            ("timeMax", text(input, "time_max").map(str::to_owned)),
            ("pageToken", page),
            (
                "maxResults",
                Some(input["max_results"].as_u64().unwrap_or(25).to_string()),
            ),
            ("q", text(input, "query").map(str::to_owned)),
        ],
    );
    let listed = google.get(&url).await?;
    let events: Vec<Value> = listed["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(event)
        .collect();
    let mut out = json!({ "events": events });
    if let Some(next) = listed["nextPageToken"].as_str() {
        out["next_page_token"] = json!(next);
    }
    Ok(out)
}

/// A time as Google's event takes it: a date for an all-day event, else a
/// date-time (with the input's time zone when given).
fn when(value: &str, zone: Option<&str>, pointer: &str) -> Result<Value, FirstPartyError> {
    if value.len() == 10 && time::Date::parse(value, &DATE).is_ok() {
        return Ok(json!({ "date": value }));
    }
    if free::parse(value).is_none() {
        return Err(invalid(
            pointer,
            "is neither a date (2026-12-07) nor an RFC 3339 date-time",
        ));
    }
    let mut at = json!({ "dateTime": value });
    if let Some(zone) = zone {
        at["timeZone"] = json!(zone);
    }
    Ok(at)
}

const DATE: &[time::format_description::BorrowedFormatItem<'_>] =
    time::macros::format_description!("[year]-[month]-[day]");

/// The event fields the input sets, as Google names them.
fn changes(input: &Value) -> Result<Map<String, Value>, FirstPartyError> {
    let zone = text(input, "time_zone");
    let mut body = Map::new();
    for key in ["summary", "description", "location"] {
        if let Some(value) = text(input, key) {
            body.insert(key.to_owned(), json!(value));
        }
    }
    for key in ["start", "end"] {
        if let Some(value) = text(input, key) {
            body.insert(key.to_owned(), when(value, zone, &format!("/{key}"))?);
        }
    }
    let attendees = strings(input, "attendees");
    if !attendees.is_empty() {
        let attendees: Vec<Value> = attendees.iter().map(|e| json!({"email": e})).collect();
        body.insert("attendees".to_owned(), json!(attendees));
    }
    Ok(body)
}

async fn create_event(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let body = Value::Object(changes(input)?);
    let url = format!("{API}/calendars/{}/events", calendar_id(input));
    Ok(event(&google.send("POST", &url, Some(&body)).await?))
}

async fn patch(
    google: &Google<'_>,
    input: &Value,
    body: Map<String, Value>,
) -> Result<Value, FirstPartyError> {
    if body.is_empty() {
        return Err(invalid("", "names nothing to change"));
    }
    let url = event_url(input)?;
    Ok(event(
        &google
            .send("PATCH", &url, Some(&Value::Object(body)))
            .await?,
    ))
}

async fn delete_event(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    google.send("DELETE", &event_url(input)?, None).await?;
    Ok(json!({"deleted": true, "event_id": required(input, "event_id")?}))
}

/// Add people to an event, keeping everyone already invited (and their
/// answers); someone invited already is not invited twice.
async fn add_attendees(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let url = event_url(input)?;
    let current = google.get(&url).await?;
    let mut attendees: Vec<Value> = current["attendees"].as_array().cloned().unwrap_or_default();
    for email in strings(input, "attendees") {
        let known = attendees.iter().any(|a| {
            a["email"]
                .as_str()
                .is_some_and(|e| e.eq_ignore_ascii_case(&email))
        });
        if !known {
            attendees.push(json!({ "email": email }));
        }
    }
    let body = json!({ "attendees": attendees });
    let etag = current["etag"].as_str();
    let updated = google.send_if_match("PATCH", &url, &body, etag).await?;
    Ok(event(&updated))
}

async fn set_reminder(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let method = text(input, "method").unwrap_or("popup");
    let overrides: Vec<Value> = input["minutes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| json!({"method": method, "minutes": m}))
        .collect();
    let mut body = Map::new();
    body.insert(
        "reminders".to_owned(),
        json!({"useDefault": false, "overrides": overrides}),
    );
    patch(google, input, body).await
}

/// Free slots of at least `duration_minutes` (default 30) in the window,
/// when none of the calendars asked about (default `primary`) is busy.
async fn find_free_slots(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let bound = |key: &str| {
        required(input, key).and_then(|t| {
            free::parse(t)
                .ok_or_else(|| invalid(&format!("/{key}"), "is not an RFC 3339 date-time"))
        })
    };
    let window = (bound("time_min")?, bound("time_max")?);
    if window.0 >= window.1 {
        return Err(invalid("/time_max", "is not after time_min"));
    }
    let mut calendars = strings(input, "calendar_ids");
    if calendars.is_empty() {
        calendars.push("primary".to_owned());
    }
    let items: Vec<Value> = calendars.iter().map(|id| json!({"id": id})).collect();
    let mut query = json!({
        "timeMin": free::format(window.0),
        "timeMax": free::format(window.1),
        "items": items,
    });
    if let Some(zone) = text(input, "time_zone") {
        query["timeZone"] = json!(zone);
    }
    let answer = google
        .send("POST", &format!("{API}/freeBusy"), Some(&query))
        .await?;
    let mut busy = Vec::new();
    let mut listed = Vec::new();
    for id in &calendars {
        let calendar = &answer["calendars"][id];
        if let Some(reason) = calendar["errors"][0]["reason"].as_str() {
            return Err(failed(format!(
                "Google could not read the free/busy time of calendar `{id}`: {reason}"
            )));
        }
        for interval in calendar["busy"].as_array().into_iter().flatten() {
            let start = interval["start"].as_str().and_then(free::parse);
            let end = interval["end"].as_str().and_then(free::parse);
            if let (Some(start), Some(end)) = (start, end) {
                busy.push((start, end));
                listed.push(json!({
                    "calendar_id": id,
                    "start": free::format(start),
                    "end": free::format(end),
                }));
            }
        }
    }
    let minutes = input["duration_minutes"].as_i64().unwrap_or(30);
    let slots: Vec<Value> = free::free(window, &busy, Duration::minutes(minutes))
        .into_iter()
        .map(|(start, end)| json!({"start": free::format(start), "end": free::format(end)}))
        .collect();
    Ok(json!({ "free": slots, "busy": listed }))
}
