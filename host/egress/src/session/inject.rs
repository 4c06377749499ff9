//! Building the wire request from a plan: guest headers plus the injected credential.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use secrecy::{ExposeSecret, SecretString};
use warden_core::spec::Injection;

use crate::client::Outgoing;
use crate::policy::{Denial, Plan, placeholder_forms};

const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Headers the transport owns (framing, routing, connection management):
/// never set from a secret, whatever the manifest names.
const TRANSPORT_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
];

/// The wire request for `plan` to `addrs`, with `secret` injected if planned.
pub(crate) fn outgoing(
    plan: &Plan,
    secret: Option<&SecretString>,
    addrs: Vec<std::net::SocketAddr>,
) -> Result<Outgoing, Denial> {
    let mut url = plan.request.url.clone();
    let mut headers = HeaderMap::with_capacity(plan.request.headers.len() + 1);
    for (name, value) in &plan.request.headers {
        headers.append(name.clone(), value.clone());
    }
    if let (Some(planned), Some(secret)) = (&plan.injection, secret) {
        let value = secret.expose_secret();
        match &planned.injection {
            Injection::Header { name, prefix } => {
                let name =
                    HeaderName::from_bytes(name.as_bytes()).map_err(|_| Denial::InvalidHeader)?;
                if TRANSPORT_HEADERS.contains(&name.as_str()) {
                    return Err(Denial::TransportHeader(name.as_str().to_owned()));
                }
                let text =
                    zeroize::Zeroizing::new(format!("{}{value}", prefix.as_deref().unwrap_or("")));
                let mut value = HeaderValue::from_str(&text).map_err(|_| Denial::InvalidHeader)?;
                value.set_sensitive(true);
                headers.insert(name, value);
            }
            Injection::Query { name } => {
                url.query_pairs_mut().append_pair(name, value);
            }
            Injection::Basic { username } => {
                let pair = zeroize::Zeroizing::new(format!("{username}:{value}"));
                let text = zeroize::Zeroizing::new(format!("Basic {}", STANDARD.encode(&*pair)));
                let mut value = HeaderValue::from_str(&text).map_err(|_| Denial::InvalidHeader)?;
                value.set_sensitive(true);
                headers.insert(http::header::AUTHORIZATION, value);
            }
            other @ (Injection::BodyJsonPointer { .. } | Injection::VapidAuthorization) => {
                return Err(Denial::UnsupportedInjection(other.type_name()));
            }
            Injection::PathPlaceholder { placeholder } => {
                let encoded = utf8_percent_encode(value, SEGMENT).to_string();
                let mut path = url.path().to_owned();
                for form in placeholder_forms(placeholder) {
                    path = path.replace(&form, &encoded);
                }
                url.set_path(&path);
            }
        }
    }
    Ok(Outgoing {
        connect_by: None,
        method: plan.request.method.clone(),
        url,
        endpoint: plan.endpoint.clone(),
        addrs,
        headers,
        body: Bytes::from(plan.request.body.clone().unwrap_or_default()),
    })
}
