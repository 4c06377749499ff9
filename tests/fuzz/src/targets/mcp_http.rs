//! The MCP HTTP request checks (`warden_mcp::fuzzing`): the input is an
//! HTTP/1.1 request. Its head is parsed with `httparse` (hyper's parser);
//! then the server's own checks run on what hyper would hand it:
//! - `Authorization: Bearer` with a static token: accepted exactly when
//!   there is one such header and its token is the configured one; a
//!   refusal's challenge is a valid header value;
//! - the same with JWT auth (the header's token is not a valid JWT);
//! - the body guards (see `json_guards`);
//! - a session is asked for only by an `initialize` declaring elicitation.

use http::{HeaderMap, HeaderName, HeaderValue, header};
use warden_mcp::{BearerToken, HttpAuth, fuzzing};

/// The static token the server is configured with.
pub const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const NOW: i64 = 1_800_000_000;

pub fn run(data: &[u8]) {
    let mut slots = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut slots);
    let body = match request.parse(data) {
        Ok(httparse::Status::Complete(at)) => &data[at..],
        _ => data,
    };
    let mut headers = HeaderMap::new();
    for parsed in request.headers.iter() {
        // What hyper hands on: names and values it accepts.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(parsed.name.as_bytes()),
            HeaderValue::from_bytes(parsed.value),
        ) {
            headers.append(name, value);
        }
    }
    check_bearer(&headers);
    check_jwt(&headers);
    super::json_guards::check(body);
    if fuzzing::initializes_with_elicitation(body) {
        let message: serde_json::Value = serde_json::from_slice(body).expect("JSON");
        assert_eq!(message["method"], "initialize");
        assert!(message["params"]["capabilities"]["elicitation"].is_object());
    }
}

/// Whether `headers` carry exactly one `Authorization` whose scheme is
/// `Bearer` (any case) and whose token, trimmed, is [`TOKEN`].
fn presents_token(headers: &HeaderMap) -> bool {
    let values: Vec<&HeaderValue> = headers.get_all(header::AUTHORIZATION).iter().collect();
    let [value] = values.as_slice() else {
        return false;
    };
    let value = value.as_bytes();
    let Some(space) = value.iter().position(|&b| b == b' ') else {
        return false;
    };
    value[..space].eq_ignore_ascii_case(b"bearer")
        && value[space + 1..].trim_ascii() == TOKEN.as_bytes()
}

fn check_bearer(headers: &HeaderMap) {
    let auth = HttpAuth::Bearer(BearerToken::new(TOKEN).expect("a strong token"));
    match fuzzing::authenticate(&auth, headers, NOW) {
        Ok(caller) => {
            assert!(presents_token(headers), "accepted {headers:?}");
            assert_eq!(caller.subject, "bearer");
        }
        Err((status, challenge)) => {
            assert!(!presents_token(headers), "refused {headers:?}");
            assert_eq!(status, 401);
            assert!(challenge.starts_with("Bearer realm=\"warden\""));
            HeaderValue::from_str(&challenge).expect("the challenge is a header value");
        }
    }
}

fn check_jwt(headers: &HeaderMap) {
    let auth = HttpAuth::Jwt(super::jwt::auth().clone());
    match fuzzing::authenticate(&auth, headers, NOW) {
        Ok(caller) => panic!("a JWT nobody signed was accepted for {caller:?}"),
        Err((status, challenge)) => {
            assert!(matches!(status, 401 | 403));
            assert!(challenge.contains("resource_metadata=\""));
            HeaderValue::from_str(&challenge).expect("the challenge is a header value");
        }
    }
}
