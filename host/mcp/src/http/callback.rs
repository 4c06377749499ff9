//! The page a person's browser is shown when it brings an OAuth callback
//! to the server's public origin (`serve --public-url`).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};

use super::Answer;

/// Where OAuth callbacks come (`serve --public-url`).
pub(super) const CALLBACK_PATH: &str = "/oauth/callback";

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
    let body = format!("<!doctype html><title>Warden</title><p>{text}</p>\n");
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
    // A browser's one visit: nothing more comes on its connection.
    headers.insert(
        hyper::header::CONNECTION,
        hyper::header::HeaderValue::from_static("close"),
    );
    response
}
