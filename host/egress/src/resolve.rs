//! Name resolution and address checks.
//!
//! Egress resolves through a [`Resolver`], checks every answer with
//! [`classify`], and connects to the checked addresses only: there is no
//! second lookup, so DNS rebinding cannot swap the address afterwards.
//!
//! ```
//! use std::net::SocketAddr;
//! use warden_egress::resolve::OverrideResolver;
//! let local: SocketAddr = "127.0.0.1:8443".parse().unwrap();
//! let resolver = OverrideResolver::new().with_socket("api.github.com", [local]);
//! # let _ = resolver;
//! ```

mod addr;

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use warden_core::net::BoxFuture;

pub use addr::{AddressClass, classify};

use crate::config::EgressConfig;

/// Why a name did not resolve to an address egress may use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddressError {
    /// The name has no address.
    #[error("`{0}` does not resolve")]
    NotFound(String),
    /// The resolver failed.
    #[error("resolving `{0}` failed")]
    Failed(String),
    /// An answer is not a public address and the host has no exception for it.
    #[error("`{host}` resolves to a {class} address, which egress refuses")]
    NonPublic {
        /// Name as requested.
        host: String,
        /// Why the address is refused.
        class: AddressClass,
    },
}

/// A DNS resolver. Implementations return every address of `host`; `port`
/// is the request's port (an override may redirect it).
pub trait Resolver: Send + Sync + fmt::Debug {
    /// Resolve `host` for a connection to `port`.
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Vec<SocketAddr>, AddressError>>;
}

/// The operating system's resolver (`getaddrinfo` through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Vec<SocketAddr>, AddressError>> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, port))
                .await
                .map_err(|_| AddressError::Failed(host.to_owned()))?;
            Ok(addrs.collect())
        })
    }
}

#[derive(Debug, Clone)]
enum Answer {
    Socket(SocketAddr),
    Ip(IpAddr),
}

/// Fixed answers per host name (for tests and pinned deployments), with an
/// optional fallback for other names. Without a fallback, unknown names fail.
#[derive(Debug, Clone, Default)]
pub struct OverrideResolver {
    answers: HashMap<String, Vec<Answer>>,
    fallback: Option<Arc<dyn Resolver>>,
}

impl OverrideResolver {
    /// No answers and no fallback: every other name fails to resolve.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers from the map first, `fallback` for other names.
    pub fn with_fallback(fallback: Arc<dyn Resolver>) -> Self {
        Self {
            answers: HashMap::new(),
            fallback: Some(fallback),
        }
    }

    /// `host` resolves to these socket addresses (their ports replace the request's).
    pub fn with_socket(mut self, host: &str, addrs: impl IntoIterator<Item = SocketAddr>) -> Self {
        self.insert(host, addrs.into_iter().map(Answer::Socket));
        self
    }

    /// `host` resolves to these IP addresses (the request's port is kept).
    pub fn with_ip(mut self, host: &str, ips: impl IntoIterator<Item = IpAddr>) -> Self {
        self.insert(host, ips.into_iter().map(Answer::Ip));
        self
    }

    fn insert(&mut self, host: &str, answers: impl Iterator<Item = Answer>) {
        self.answers
            .entry(host.to_ascii_lowercase())
            .or_default()
            .extend(answers);
    }
}

impl Resolver for OverrideResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<Vec<SocketAddr>, AddressError>> {
        Box::pin(async move {
            if let Some(answers) = self.answers.get(host) {
                return Ok(answers
                    .iter()
                    .map(|a| match a {
                        Answer::Socket(s) => *s,
                        Answer::Ip(ip) => SocketAddr::new(*ip, port),
                    })
                    .collect());
            }
            match &self.fallback {
                Some(fallback) => fallback.resolve(host, port).await,
                None => Err(AddressError::NotFound(host.to_owned())),
            }
        })
    }
}

/// Resolve `host` (a name or IP literal, IPv6 in brackets) and check every
/// address. Any refused answer refuses the whole name.
pub(crate) async fn checked_addresses(
    resolver: &dyn Resolver,
    host: &str,
    port: u16,
    config: &EgressConfig,
) -> Result<Vec<SocketAddr>, AddressError> {
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    let addrs = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => resolver.resolve(host, port).await?,
    };
    if addrs.is_empty() {
        return Err(AddressError::NotFound(host.to_owned()));
    }
    let excepted = config.private_allowed(host, port);
    for addr in &addrs {
        if let Some(class) = classify(addr.ip())
            && !(excepted && class.may_be_allowed())
        {
            return Err(AddressError::NonPublic {
                host: crate::policy::bounded(host, 253),
                class,
            });
        }
    }
    Ok(addrs)
}
