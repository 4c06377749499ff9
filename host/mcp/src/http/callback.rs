//! The page a person's browser is shown when it brings an OAuth callback
//! to the server's public origin (`serve --public-url`).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};

use super::Answer;

/// Where OAuth callbacks come (`serve --public-url`).
pub(super) const CALLBACK_PATH: &str = "/oauth/callback";

/// The page a connection's link opens.
pub(super) const START_PATH: &str = "/oauth/start";

/// The page a connection's link opens: whose account it connects, and a
/// link on to the authorization server. A person sent someone else's link
/// sees whose it would be before anything is authorized.
pub(super) fn start_page(start: Option<crate::OAuthStart>) -> Answer {
    let Some(start) = start else {
        return page(
            StatusCode::BAD_REQUEST,
            "This connection is not waiting any more (it may have timed out). Make the call \
             again from your client for a new link."
                .to_owned(),
        );
    };
    // The authorization server's page, never another scheme a recipe named.
    let url = start.authorize_url.to_ascii_lowercase();
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return page(
            StatusCode::BAD_REQUEST,
            "This connection's sign-in is not a web address.".to_owned(),
        );
    }
    let whose = match &start.owner {
        Some(owner) => format!("the Warden user <b>{}</b>", escape_html(owner)),
        None => "this Warden deployment (every caller it serves)".to_owned(),
    };
    let packages: Vec<String> = start
        .extensions
        .iter()
        .map(|e| format!("<b>{}</b>", escape_html(e)))
        .collect();
    let used_by = match packages.as_slice() {
        [] => String::new(),
        _ => format!(", for the tools of {}", packages.join(", ")),
    };
    let text = format!(
        "This connects a <b>{}</b> account to {whose}{used_by}: calls made by that user will act \
         as the account you sign in with. Continue only if you are that user.</p>\n<p><a \
         href=\"{}\">Continue to sign in</a>",
        escape_html(&start.vendor),
        escape_html(&start.authorize_url),
    );
    page(StatusCode::OK, text)
}

/// `text` safe in HTML text and attribute values (double- and
/// single-quoted): the server's pages and the CLI's web console use it.
pub fn escape_html(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// An HTML page of `body`, not cached, its connection closed after.
fn page(code: StatusCode, body: String) -> Answer {
    let body = format!("<!doctype html><title>Warden</title><p>{body}</p>\n");
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = code;
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    response
}

/// The page a browser is shown after an OAuth callback.
pub(super) fn callback_page(outcome: crate::OAuthCallback) -> Answer {
    let (code, text) = match outcome {
        crate::OAuthCallback::Completed => (
            StatusCode::OK,
            "Warden received the authorization. You can close this window and return to your client.",
        ),
        crate::OAuthCallback::Refused => (
            StatusCode::BAD_REQUEST,
            "The authorization did not complete. Your client says why.",
        ),
        crate::OAuthCallback::Unknown => (
            StatusCode::BAD_REQUEST,
            "This is not an authorization Warden is waiting for (it may have timed out).",
        ),
    };
    page(code, text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(answer: Answer) -> String {
        let bytes = answer.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    // A JWT subject, a manifest's vendor and a recipe's URL are remote text:
    // none of it becomes markup, and only a web address becomes a link.
    #[tokio::test]
    async fn the_start_page_shows_remote_text_as_text() {
        let start = crate::OAuthStart {
            authorize_url: "https://auth.example/authorize?a=1&b=\"><script>x()</script>".into(),
            vendor: "git<b>hub".into(),
            owner: Some("<img src=x onerror=alert(1)>".into()),
            extensions: vec!["gdocs".into(), "g<i>drive".into()],
        };
        let page = body(start_page(Some(start.clone()))).await;
        assert!(
            !page.contains("<script") && !page.contains("<img"),
            "{page}"
        );
        assert!(
            page.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{page}"
        );
        assert!(
            page.contains("for the tools of <b>gdocs</b>, <b>g&lt;i&gt;drive</b>"),
            "{page}"
        );
        assert!(
            page.contains("href=\"https://auth.example/authorize?a=1&amp;b=&quot;&gt;"),
            "{page}"
        );
        let script = crate::OAuthStart {
            authorize_url: "javascript:alert(1)".into(),
            ..start
        };
        let answer = start_page(Some(script));
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
        assert!(!body(answer).await.contains("javascript"));
    }
}
