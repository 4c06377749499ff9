//! Messages in and out of Gmail: an RFC 5322 message built from the tool's
//! fields (Gmail takes it base64url-encoded as `raw`), and the readable
//! parts of the `format=full` message Gmail answers with.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use warden_host::FirstPartyError;

use crate::support::invalid;

/// Characters of a message's text a read returns; the rest is cut, and
/// the output says so.
pub(crate) const MAX_TEXT_CHARS: usize = 100_000;

/// What an outgoing message says.
#[derive(Debug, Default)]
pub(crate) struct Outgoing {
    pub(crate) to: Vec<String>,
    pub(crate) cc: Vec<String>,
    pub(crate) bcc: Vec<String>,
    pub(crate) subject: String,
    pub(crate) body: String,
    /// `In-Reply-To` and `References`, for a reply.
    pub(crate) in_reply_to: Option<String>,
    pub(crate) references: Option<String>,
}

impl Outgoing {
    /// The message as Gmail's `raw`: RFC 5322 text, base64url without padding.
    /// A header value holding a line break is refused (it would smuggle a
    /// header of its own), naming the field.
    pub(crate) fn raw(&self) -> Result<String, FirstPartyError> {
        let mut text = String::new();
        let mut header = |name: &str, pointer: &str, value: &str| {
            if value.contains(['\r', '\n']) {
                return Err(invalid(pointer, "holds a line break"));
            }
            text.push_str(&format!("{name}: {value}\r\n"));
            Ok(())
        };
        for (name, pointer, list) in [
            ("To", "/to", &self.to),
            ("Cc", "/cc", &self.cc),
            ("Bcc", "/bcc", &self.bcc),
        ] {
            if !list.is_empty() {
                let encoded: Vec<String> = list.iter().map(|a| address(a)).collect();
                header(name, pointer, &encoded.join(", "))?;
            }
        }
        header("Subject", "/subject", &encode_word(&self.subject))?;
        if let Some(id) = &self.in_reply_to {
            header("In-Reply-To", "/message_id", id)?;
        }
        if let Some(references) = &self.references {
            header("References", "/message_id", references)?;
        }
        text.push_str("MIME-Version: 1.0\r\n");
        text.push_str("Content-Type: text/plain; charset=UTF-8\r\n");
        text.push_str("Content-Transfer-Encoding: base64\r\n\r\n");
        // Base64 in lines of 76: any text, any line length, no dot-stuffing.
        let body = STANDARD.encode(self.body.as_bytes());
        for line in body.as_bytes().chunks(76) {
            text.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
            text.push_str("\r\n");
        }
        Ok(URL_SAFE_NO_PAD.encode(text.as_bytes()))
    }
}

/// `text` as an RFC 2047 encoded word when it is not ASCII.
fn encode_word(text: &str) -> String {
    if text.is_ascii() {
        text.to_owned()
    } else {
        format!("=?UTF-8?B?{}?=", STANDARD.encode(text.as_bytes()))
    }
}

/// A display name as a header carries it: encoded when not ASCII, quoted
/// when it holds a character that would end or split the mailbox (`Lima,
/// Ana` unquoted would be two recipients).
fn display_name(name: &str) -> String {
    if !name.is_ascii() {
        return encode_word(name);
    }
    if name.contains([
        '"', ',', ';', ':', '<', '>', '@', '(', ')', '[', ']', '\\', '.',
    ]) {
        format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        name.to_owned()
    }
}

/// An address, its display name encoded (`José <jose@x>`).
fn address(text: &str) -> String {
    let text = text.trim();
    match text.split_once('<') {
        Some((name, rest)) => {
            let name = name.trim().trim_matches('"');
            if name.is_empty() {
                format!("<{rest}")
            } else {
                format!("{} <{rest}", display_name(name))
            }
        }
        None => text.to_owned(),
    }
}

/// The mailboxes of an address header (`Ana <a@x>, "Lima, Bo" <b@x>`):
/// split at the commas outside quotes and angle brackets.
pub(crate) fn mailboxes(list: &str) -> Vec<String> {
    let (mut out, mut current) = (Vec::new(), String::new());
    let (mut quoted, mut angled) = (false, false);
    for c in list.chars() {
        match c {
            '"' => quoted = !quoted,
            '<' if !quoted => angled = true,
            '>' if !quoted => angled = false,
            ',' if !quoted && !angled => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The address of a mailbox (`Ana <a@x>` → `a@x`), lowercased for comparing.
pub(crate) fn address_of(mailbox: &str) -> String {
    let inner = match (mailbox.rfind('<'), mailbox.rfind('>')) {
        (Some(open), Some(close)) if open < close => &mailbox[open + 1..close],
        _ => mailbox,
    };
    inner.trim().to_lowercase()
}

/// The subject of a reply to `subject`.
pub(crate) fn reply_subject(subject: &str) -> String {
    let trimmed = subject.trim();
    if trimmed.len() >= 3 && trimmed[..3].eq_ignore_ascii_case("re:") {
        trimmed.to_owned()
    } else {
        format!("Re: {trimmed}")
    }
}

/// The value of header `name` of a Gmail message part (case-insensitive).
pub(crate) fn header<'a>(payload: &'a Value, name: &str) -> Option<&'a str> {
    payload["headers"]
        .as_array()?
        .iter()
        .find(|h| {
            h["name"]
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
        .and_then(|h| h["value"].as_str())
}

/// A Gmail `format=full` message as the model reads it: who, when, what
/// about, its text (the plain-text part, else the HTML part without tags;
/// cut at [`MAX_TEXT_CHARS`]) and its attachments by name.
pub(crate) fn readable(message: &Value) -> Value {
    let payload = &message["payload"];
    let mut plain = None;
    let mut html = None;
    let mut attachments = Vec::new();
    walk(payload, &mut plain, &mut html, &mut attachments);
    let text = plain
        .or_else(|| html.map(|h| strip_tags(&h)))
        .unwrap_or_default();
    let truncated = text.chars().count() > MAX_TEXT_CHARS;
    let text: String = text.chars().take(MAX_TEXT_CHARS).collect();
    let mut out = json!({
        "id": message["id"],
        "thread_id": message["threadId"],
        "label_ids": message["labelIds"].as_array().cloned().unwrap_or_default(),
        "snippet": message["snippet"].as_str().unwrap_or_default(),
        "text": text,
        "text_truncated": truncated,
        "attachments": attachments,
    });
    for (key, name) in [
        ("from", "From"),
        ("to", "To"),
        ("cc", "Cc"),
        ("subject", "Subject"),
        ("date", "Date"),
        ("message_id_header", "Message-ID"),
    ] {
        if let Some(value) = header(payload, name) {
            out[key] = json!(value);
        }
    }
    out
}

fn walk(
    part: &Value,
    plain: &mut Option<String>,
    html: &mut Option<String>,
    attachments: &mut Vec<Value>,
) {
    let mime = part["mimeType"].as_str().unwrap_or_default();
    let filename = part["filename"].as_str().unwrap_or_default();
    if !filename.is_empty() {
        attachments.push(json!({
            "filename": filename,
            "mime_type": mime,
            "size": part["body"]["size"].as_u64().unwrap_or(0),
        }));
    } else if mime.eq_ignore_ascii_case("text/plain") && plain.is_none() {
        *plain = decode(&part["body"]["data"]);
    } else if mime.eq_ignore_ascii_case("text/html") && html.is_none() {
        *html = decode(&part["body"]["data"]);
    }
    for child in part["parts"].as_array().into_iter().flatten() {
        walk(child, plain, html, attachments);
    }
}

/// A part's base64url data as text (padded or not; invalid UTF-8 replaced).
fn decode(data: &Value) -> Option<String> {
    let data = data.as_str()?.trim_end_matches('=');
    let bytes = URL_SAFE_NO_PAD
        .decode(data)
        .or_else(|_| URL_SAFE.decode(data))
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// HTML as text: tags dropped, the usual entities read, runs of blank
/// lines folded. Enough to read an HTML-only mail; not a renderer.
fn strip_tags(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unraw(raw: &str) -> String {
        String::from_utf8(URL_SAFE_NO_PAD.decode(raw).unwrap()).unwrap()
    }

    #[test]
    fn an_outgoing_message_is_rfc_5322_with_its_text_in_base64() {
        let message = Outgoing {
            to: vec!["José <jose@example.com>".into(), "ana@example.com".into()],
            subject: "Café".into(),
            body: "Line one\nline two".into(),
            in_reply_to: Some("<a@b>".into()),
            references: Some("<z@b> <a@b>".into()),
            ..Outgoing::default()
        };
        let text = unraw(&message.raw().unwrap());
        assert!(
            text.starts_with(
                "To: =?UTF-8?B?Sm9zw6k=?= <jose@example.com>, ana@example.com\r\n\
             Subject: =?UTF-8?B?Q2Fmw6k=?=\r\nIn-Reply-To: <a@b>\r\nReferences: <z@b> <a@b>\r\n"
            ),
            "{text}"
        );
        let body = text.split("\r\n\r\n").nth(1).unwrap().replace("\r\n", "");
        assert_eq!(STANDARD.decode(body).unwrap(), b"Line one\nline two");
    }

    #[test]
    fn a_display_name_with_a_comma_stays_one_recipient() {
        assert_eq!(
            address(r#""Lima, Ana" <ana@x.com>"#),
            r#""Lima, Ana" <ana@x.com>"#
        );
        assert_eq!(address("Ana Lima <ana@x.com>"), "Ana Lima <ana@x.com>");
        assert_eq!(address(r#"A "B" C <c@x.com>"#), r#""A \"B\" C" <c@x.com>"#);
    }

    #[test]
    fn a_line_break_in_a_header_is_refused_by_field() {
        let message = Outgoing {
            to: vec!["ana@example.com\r\nBcc: everyone@example.com".into()],
            ..Outgoing::default()
        };
        let error = message.raw().unwrap_err();
        assert!(error.to_string().contains("/to"), "{error}");
    }

    #[test]
    fn a_read_picks_the_plain_text_and_names_attachments() {
        let plain = URL_SAFE_NO_PAD.encode("Hello Ana,\nsee attached.");
        let message = json!({
            "id": "m1", "threadId": "t1", "labelIds": ["INBOX"], "snippet": "Hello Ana",
            "payload": {
                "mimeType": "multipart/mixed",
                "headers": [{"name": "From", "value": "Bob <bob@example.com>"},
                            {"name": "subject", "value": "Report"}],
                "parts": [
                    {"mimeType": "multipart/alternative", "parts": [
                        {"mimeType": "text/plain", "body": {"data": plain}},
                        {"mimeType": "text/html", "body": {"data": "PGI-SGk8L2I-"}}
                    ]},
                    {"mimeType": "application/pdf", "filename": "r.pdf", "body": {"size": 1234}}
                ]
            }
        });
        let read = readable(&message);
        assert_eq!(read["text"], "Hello Ana,\nsee attached.");
        assert_eq!(read["from"], "Bob <bob@example.com>");
        assert_eq!(read["subject"], "Report");
        assert_eq!(read["attachments"][0]["filename"], "r.pdf");
        assert_eq!(read["text_truncated"], false);
    }

    #[test]
    fn mailboxes_split_outside_quotes_and_compare_by_address() {
        let list = r#"Ana <ana@x.com>, "Lima, Bo" <bo@x.com>, me@x.com"#;
        let boxes = mailboxes(list);
        assert_eq!(
            boxes,
            [r#"Ana <ana@x.com>"#, r#""Lima, Bo" <bo@x.com>"#, "me@x.com"]
        );
        assert_eq!(address_of("Ana <ANA@x.com>"), "ana@x.com");
        assert_eq!(address_of(" me@x.com "), "me@x.com");
    }

    #[test]
    fn an_html_only_message_is_read_without_its_tags() {
        let html = URL_SAFE_NO_PAD.encode("<p>Hi&nbsp;<b>Ana</b> &amp; Bob</p>");
        let message = json!({"id": "m", "threadId": "t",
            "payload": {"mimeType": "text/html", "body": {"data": html}}});
        assert_eq!(readable(&message)["text"], "Hi Ana & Bob");
        assert_eq!(reply_subject("Report"), "Re: Report");
        assert_eq!(reply_subject("RE: Report"), "RE: Report");
    }
}
