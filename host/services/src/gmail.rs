//! Gmail (`packages/gmail`): the user's mailbox through the Gmail API, with
//! the token of credential `gmail_account` (audience `gmail.googleapis.com`).
//!
//! Reads come back readable (headers picked, the text part decoded) rather
//! than as Gmail's MIME tree; writes take fields, not a hand-built RFC 5322
//! message: the service builds it (refusing a header that smuggles a line
//! break) and a reply carries the original's `In-Reply-To`, `References`,
//! subject and thread.

mod mime;

use serde_json::{Value, json};
use warden_core::net::BoxFuture;
use warden_host::{FirstPartyCall, FirstPartyError, FirstPartyService};

use crate::google::{Google, encode, url_with_query};
use crate::support::{failed, no_tool, required, strings, text};
use mime::{Outgoing, address_of, header, mailboxes, readable, reply_subject};

const API: &str = "https://gmail.googleapis.com/gmail/v1/users/me";

/// The Gmail service (`service = "gmail"`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Gmail;

impl FirstPartyService for Gmail {
    fn call(
        &self,
        call: FirstPartyCall,
        input: Value,
    ) -> BoxFuture<'_, Result<Value, FirstPartyError>> {
        Box::pin(async move {
            let (google, tool) = Google::of(&call, "gmail_account", "gmail");
            match tool {
                "list_messages" => list_messages(&google, &input).await,
                "get_message" => get_message(&google, &input).await,
                "send_message" => send(&google, outgoing(&input), text(&input, "thread_id")).await,
                "create_draft" => create_draft(&google, &input).await,
                "reply_to_message" => reply(&google, &input).await,
                "trash_message" => trash(&google, &input).await,
                _ => Err(no_tool(&call.capability_id)),
            }
        })
    }
}

async fn list_messages(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let max = input["max_results"].as_u64().unwrap_or(20);
    let mut query = vec![
        ("q", text(input, "query").map(str::to_owned)),
        ("pageToken", text(input, "page_token").map(str::to_owned)),
        ("maxResults", Some(max.to_string())),
    ];
    let labels = strings(input, "label_ids");
    query.extend(labels.into_iter().map(|l| ("labelIds", Some(l))));
    let listed = google
        .get(&url_with_query(&format!("{API}/messages"), query))
        .await?;
    let messages: Vec<Value> = listed["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| json!({"id": m["id"], "thread_id": m["threadId"]}))
        .collect();
    let mut out = json!({
        "messages": messages,
        "result_size_estimate": listed["resultSizeEstimate"].as_u64().unwrap_or(0),
    });
    if let Some(next) = listed["nextPageToken"].as_str() {
        out["next_page_token"] = json!(next);
    }
    Ok(out)
}

async fn get_message(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let id = encode(required(input, "message_id")?);
    let message = google
        .get(&format!("{API}/messages/{id}?format=full"))
        .await?;
    Ok(readable(&message))
}

/// An outgoing message from the tool's fields.
fn outgoing(input: &Value) -> Outgoing {
    Outgoing {
        to: strings(input, "to"),
        cc: strings(input, "cc"),
        bcc: strings(input, "bcc"),
        subject: text(input, "subject").unwrap_or_default().to_owned(),
        body: text(input, "body").unwrap_or_default().to_owned(),
        ..Outgoing::default()
    }
}

/// `raw` and the thread, as Gmail's message resource takes them.
fn resource(message: &Outgoing, thread: Option<&str>) -> Result<Value, FirstPartyError> {
    let mut resource = json!({ "raw": message.raw()? });
    if let Some(thread) = thread {
        resource["threadId"] = json!(thread);
    }
    Ok(resource)
}

/// What a send answers: the sent message's ids and labels.
fn sent(message: &Value) -> Value {
    json!({
        "id": message["id"],
        "thread_id": message["threadId"],
        "label_ids": message["labelIds"].as_array().cloned().unwrap_or_default(),
    })
}

async fn send(
    google: &Google<'_>,
    message: Outgoing,
    thread: Option<&str>,
) -> Result<Value, FirstPartyError> {
    let body = resource(&message, thread)?;
    let answer = google
        .send("POST", &format!("{API}/messages/send"), Some(&body))
        .await?;
    Ok(sent(&answer))
}

async fn create_draft(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let message = resource(&outgoing(input), text(input, "thread_id"))?;
    let draft = google
        .send(
            "POST",
            &format!("{API}/drafts"),
            Some(&json!({ "message": message })),
        )
        .await?;
    Ok(json!({
        "draft_id": draft["id"],
        "message_id": draft["message"]["id"],
        "thread_id": draft["message"]["threadId"],
    }))
}

/// Answer a message in its thread: to its `Reply-To` (else `From`), and
/// with `reply_all` to its other recipients too (never to the account
/// itself, which Gmail names as the `To` of mail it received).
async fn reply(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let id = encode(required(input, "message_id")?);
    let headers = "format=metadata&metadataHeaders=From&metadataHeaders=Reply-To\
                   &metadataHeaders=To&metadataHeaders=Cc&metadataHeaders=Subject\
                   &metadataHeaders=Message-ID&metadataHeaders=References";
    let original = google
        .get(&format!("{API}/messages/{id}?{headers}"))
        .await?;
    let payload = &original["payload"];
    let Some(sender) = header(payload, "Reply-To").or_else(|| header(payload, "From")) else {
        return Err(failed("the message has no sender to reply to"));
    };
    let mut message = Outgoing {
        to: vec![sender.to_owned()],
        subject: reply_subject(header(payload, "Subject").unwrap_or_default()),
        body: required(input, "body")?.to_owned(),
        ..Outgoing::default()
    };
    if input["reply_all"].as_bool() == Some(true) {
        let me = google.get(&format!("{API}/profile")).await?;
        let me = me["emailAddress"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase();
        // By address, not by text: `bo@x.com` is not `jo@x.com`'s `o@x.com`.
        let others = |name: &str| -> Vec<String> {
            let list = header(payload, name).unwrap_or_default();
            mailboxes(list)
                .into_iter()
                .filter(|m| me.is_empty() || address_of(m) != me)
                .collect()
        };
        message.to.extend(others("To"));
        message.cc = others("Cc");
    }
    if let Some(original_id) = header(payload, "Message-ID") {
        message.in_reply_to = Some(original_id.to_owned());
        message.references = Some(match header(payload, "References") {
            Some(earlier) => format!("{earlier} {original_id}"),
            None => original_id.to_owned(),
        });
    }
    send(google, message, original["threadId"].as_str()).await
}

async fn trash(google: &Google<'_>, input: &Value) -> Result<Value, FirstPartyError> {
    let id = encode(required(input, "message_id")?);
    let answer = google
        .send("POST", &format!("{API}/messages/{id}/trash"), None)
        .await?;
    Ok(sent(&answer))
}
