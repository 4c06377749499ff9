//! [`Endpoint`]: the manifest's `[mcp] server`, parsed once and locked.
//!
//! The lane sends every request to exactly this URL: `https`, its host,
//! port and path; a URL with userinfo, a query or a fragment is refused.
//! Egress gets a single network target (the origin) and the credentials'
//! audience is the same origin, so nothing else is reachable.

use url::Url;
use warden_core::spec::{Audience, CredentialSpec, NetworkTarget};

use crate::error::HostedError;

/// A hosted MCP server's endpoint, locked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    url: Url,
    scheme: &'static str,
    host: String,
    port: u16,
}

impl Endpoint {
    /// Parse and check `server` (the manifest's `[mcp] server`).
    pub fn parse(server: &str) -> Result<Self, HostedError> {
        Self::parse_with(server, false)
    }

    /// [`Endpoint::parse`]; with `loopback_http`, a plain `http` URL whose
    /// host is `localhost` or a loopback address is accepted too (local test
    /// servers such as the MCP conformance suite's). Egress still refuses
    /// plain HTTP and loopback addresses unless the host allows that origin.
    pub fn parse_with(server: &str, loopback_http: bool) -> Result<Self, HostedError> {
        let refuse = |reason| HostedError::Endpoint {
            url: server.chars().take(200).collect(),
            reason,
        };
        let url = Url::parse(server).map_err(|_| refuse("not an absolute URL"))?;
        let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        let scheme = match url.scheme() {
            "https" => "https",
            "http" if loopback_http && loopback => "http",
            _ => return Err(refuse("only https endpoints are allowed")),
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refuse("the URL carries userinfo"));
        }
        if url.query().is_some() {
            return Err(refuse("the URL carries a query"));
        }
        if url.fragment().is_some() {
            return Err(refuse("the URL carries a fragment"));
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
            None => return Err(refuse("the URL has no host")),
        };
        let port = url.port_or_known_default().unwrap_or(443);
        Ok(Self {
            url,
            scheme,
            host,
            port,
        })
    }

    /// The full URL every request goes to.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The host, lowercase.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port (443 unless the URL names one).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The one network target of the lane: this origin.
    pub fn target(&self) -> NetworkTarget {
        NetworkTarget {
            scheme: self.scheme.into(),
            host_pattern: self.host.clone(),
            port: Some(self.port),
        }
    }

    /// The origin credentials may be sent to (`http` only for a loopback
    /// endpoint parsed with `loopback_http`).
    pub fn audience(&self) -> Audience {
        Audience {
            scheme: self.scheme.into(),
            host: self.host.clone(),
            port: Some(self.port),
        }
    }

    /// `credentials` with their audience forced to this endpoint's origin,
    /// whatever they said.
    pub fn bind(&self, credentials: &[CredentialSpec]) -> Vec<CredentialSpec> {
        credentials
            .iter()
            .map(|c| CredentialSpec {
                audience: self.audience(),
                ..c.clone()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_an_https_endpoint_with_a_path() {
        let e = Endpoint::parse("https://MCP.Notion.com/mcp").unwrap();
        assert_eq!(e.host(), "mcp.notion.com");
        assert_eq!(e.port(), 443);
        assert_eq!(e.url(), "https://mcp.notion.com/mcp");
        assert_eq!(e.target().port, Some(443));
    }

    #[test]
    fn plain_http_only_to_loopback_and_only_when_asked() {
        assert!(Endpoint::parse("http://localhost:3000/mcp").is_err());
        let local = Endpoint::parse_with("http://localhost:3000/mcp", true).unwrap();
        assert_eq!(local.target().scheme, "http");
        assert!(Endpoint::parse_with("http://mcp.example.com/mcp", true).is_err());
    }

    #[test]
    fn refuses_what_could_widen_the_lock() {
        for (url, why) in [
            ("http://mcp.example.com/mcp", "https"),
            ("https://user:pw@mcp.example.com/mcp", "userinfo"),
            ("https://mcp.example.com/mcp?x=1", "query"),
            ("https://mcp.example.com/mcp#frag", "fragment"),
            ("mcp.example.com/mcp", "absolute"),
        ] {
            let error = Endpoint::parse(url).unwrap_err().to_string();
            assert!(error.contains(why), "{url}: {error}");
        }
    }
}
