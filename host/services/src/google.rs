//! What the Google services share: JSON requests through the call's egress
//! session with the user's Google token (injected by egress, never seen
//! here), and Google's error answers read into Warden's failures.
//!
//! An answer that the token is no good — 401 (expired or revoked), or 403
//! because it lacks a scope (`insufficientPermissions`,
//! `ACCESS_TOKEN_SCOPE_INSUFFICIENT`) — is `auth_required` naming the
//! vendor and the scopes the tool declares, so the person reconnects with
//! them. Any other error names the status and Google's message (the lane
//! redacts and bounds it).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use warden_core::net::{GuestRequest, GuestResponse};
use warden_host::{FirstPartyCall, FirstPartyError};

use crate::support::failed;

/// Characters left as they are in a query value or a path segment.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` percent-encoded for a path segment or a query value.
pub(crate) fn encode(text: &str) -> String {
    utf8_percent_encode(text, UNRESERVED).to_string()
}

/// `base?k=v&…` with every value encoded; pairs whose value is `None` are left out.
pub(crate) fn url_with_query<'a>(
    base: &str,
    query: impl IntoIterator<Item = (&'a str, Option<String>)>,
) -> String {
    let pairs: Vec<String> = query
        .into_iter()
        .filter_map(|(key, value)| Some(format!("{key}={}", encode(&value?))))
        .collect();
    if pairs.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", pairs.join("&"))
    }
}

/// A Google API as one call of one tool sees it.
pub(crate) struct Google<'a> {
    pub(crate) call: &'a FirstPartyCall,
    /// The credential handle the tool declares for this API.
    pub(crate) handle: &'static str,
}

impl<'a> Google<'a> {
    /// The API as `call` reaches it with credential `handle`, and the
    /// called tool's name within package `package`.
    pub(crate) fn of(
        call: &'a FirstPartyCall,
        handle: &'static str,
        package: &str,
    ) -> (Self, &'a str) {
        let tool = call
            .capability_id
            .strip_prefix(package)
            .and_then(|rest| rest.strip_prefix('.'))
            .unwrap_or_default();
        (Google { call, handle }, tool)
    }

    /// `GET url`, its JSON answer.
    pub(crate) async fn get(&self, url: &str) -> Result<Value, FirstPartyError> {
        self.send("GET", url, None).await
    }

    /// `method url` with a JSON body (or none), its JSON answer (`null`
    /// for an empty one, as a DELETE's).
    pub(crate) async fn send(
        &self,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Value, FirstPartyError> {
        self.send_headed(method, url, body, Vec::new()).await
    }

    /// [`Google::send`] that writes only over the version `etag` names
    /// (Google answers 412 when the item changed since).
    pub(crate) async fn send_if_match(
        &self,
        method: &str,
        url: &str,
        body: &Value,
        etag: Option<&str>,
    ) -> Result<Value, FirstPartyError> {
        let headers = etag
            .map(|etag| vec![("if-match".to_owned(), etag.to_owned())])
            .unwrap_or_default();
        self.send_headed(method, url, Some(body), headers).await
    }

    async fn send_headed(
        &self,
        method: &str,
        url: &str,
        body: Option<&Value>,
        mut headers: Vec<(String, String)>,
    ) -> Result<Value, FirstPartyError> {
        headers.push(("accept".to_owned(), "application/json".to_owned()));
        if body.is_some() {
            headers.push(("content-type".to_owned(), "application/json".to_owned()));
        }
        let request = GuestRequest {
            method: method.to_owned(),
            url: url.to_owned(),
            headers,
            body: body.map(|b| b.to_string().into_bytes()),
            timeout: None,
        };
        let response = self.call.http.send_with(request, self.handle).await?;
        self.read(&response)
    }

    fn read(&self, response: &GuestResponse) -> Result<Value, FirstPartyError> {
        let body: Option<Value> = serde_json::from_slice(&response.body).ok();
        if (200..300).contains(&response.status) {
            return match body {
                Some(value) => Ok(value),
                None if response.body.iter().all(u8::is_ascii_whitespace) => Ok(Value::Null),
                None => Err(failed(format!(
                    "Google answered {} with a body that is not JSON",
                    response.status
                ))),
            };
        }
        let error = body.as_ref().map(|b| &b["error"]);
        if response.status == 401 || (response.status == 403 && lacks_scope(error)) {
            return Err(self.call.auth_required(self.handle));
        }
        let message = error
            .and_then(|e| e["message"].as_str())
            .unwrap_or("no message");
        Err(failed(match response.status {
            404 => format!("Google found no such item (404): {message}"),
            412 => format!("the item changed while this call worked on it (412): {message}"),
            429 => format!("Google is rate limiting these requests (429): {message}"),
            status => format!("Google answered {status}: {message}"),
        }))
    }
}

/// Whether a 403's error says the token lacks a scope (rather than that
/// the account may not touch the item, which reconnecting does not fix).
fn lacks_scope(error: Option<&Value>) -> bool {
    let Some(error) = error else { return false };
    let reasons = error["errors"].as_array().into_iter().flatten();
    let details = error["details"].as_array().into_iter().flatten();
    reasons
        .chain(details)
        .filter_map(|entry| entry["reason"].as_str())
        .any(|reason| {
            matches!(
                reason,
                "insufficientPermissions" | "ACCESS_TOKEN_SCOPE_INSUFFICIENT"
            )
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_a_missing_scope_is_read_as_one() {
        let scope = json!({"errors": [{"reason": "insufficientPermissions"}]});
        assert!(lacks_scope(Some(&scope)));
        let detail = json!({"details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                          "reason": "ACCESS_TOKEN_SCOPE_INSUFFICIENT"}]});
        assert!(lacks_scope(Some(&detail)));
        let forbidden = json!({"errors": [{"reason": "forbidden"}]});
        assert!(!lacks_scope(Some(&forbidden)));
        assert!(!lacks_scope(None));
    }

    #[test]
    fn queries_are_encoded_and_absent_values_left_out() {
        let url = url_with_query(
            "https://x.example/a",
            [
                ("q", Some("from:ana is:unread".to_owned())),
                ("pageToken", None),
                ("maxResults", Some("10".to_owned())),
            ],
        );
        assert_eq!(
            url,
            "https://x.example/a?q=from%3Aana%20is%3Aunread&maxResults=10"
        );
        assert_eq!(
            url_with_query("https://x.example/a", []),
            "https://x.example/a"
        );
        assert_eq!(encode("a/b c"), "a%2Fb%20c");
    }
}
