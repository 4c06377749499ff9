//! The host's public origin (`warden serve --public-url`): where OAuth
//! connections made for a remote person return, and the callbacks that
//! come back to it (see [`warden_egress::auth::server_callback`]).

use warden_egress::auth::server_callback::{Delivered, StartPage};

use crate::error::HostError;
use crate::host::Host;

impl Host {
    /// The page of the connection a link names (`GET /oauth/start`, `query`
    /// its query string): whose account it connects and where to continue;
    /// `None` when no connection waits for it here or on a host of the
    /// store, or the host has no public URL.
    pub async fn oauth_start_page(&self, query: &str) -> Option<StartPage> {
        let (_, router) = self.shared.server_callbacks.as_ref()?;
        router.start_page(query).await
    }

    /// Where OAuth connections through this host's own origin return
    /// (`<public_url>/oauth/callback`), when it has a public URL.
    pub fn oauth_redirect_uri(&self) -> Option<&str> {
        self.shared
            .server_callbacks
            .as_ref()
            .map(|(uri, _)| uri.as_str())
    }

    /// Hand an OAuth callback that came to the public origin (the query
    /// string of `GET /oauth/callback`) to the connection waiting for it;
    /// `None` when the host has no public URL.
    /// Hosts sharing a store pass it on to the one whose connection waits.
    pub async fn deliver_oauth_callback(&self, query: &str) -> Option<Delivered> {
        let (_, router) = self.shared.server_callbacks.as_ref()?;
        Some(router.deliver(query).await)
    }
}

/// `<public_url>/oauth/callback`, once `public_url` is checked.
pub(crate) fn callback_uri(public_url: &str) -> Result<String, HostError> {
    let refuse = |why| HostError::PublicUrl {
        url: public_url.to_owned(),
        why,
    };
    let url = url::Url::parse(public_url).map_err(|_| refuse("is not a URL"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return Err(refuse("names no host")),
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        _ => return Err(refuse("must be https (http only on a loopback address)")),
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(refuse("must be an origin, with no path, query or fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse("must not carry credentials"));
    }
    let origin = url.as_str().trim_end_matches('/');
    Ok(format!(
        "{origin}{}",
        warden_egress::auth::server_callback::SERVER_CALLBACK_PATH
    ))
}
