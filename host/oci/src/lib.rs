//! `warden-oci`: Warden packages as OCI artifacts. A package travels as an
//! OCI image manifest in the CNCF Wasm OCI artifact layout (see
//! [`manifest`]): the component is an `application/wasm` layer any Wasm OCI
//! client can pull, and the rest of the package is one layer of Warden's
//! own media type.
//!
//! The [`Client`] pushes, resolves and pulls through the host's egress
//! (its policy, address checks, TLS roots and limits), signs in anonymously,
//! with a user and password (HTTP Basic), or through the distribution
//! token flow (a bearer challenge answered by the registry's token
//! service), bounds every manifest and layer, and checks every digest
//! before anything is returned. What it pulls is bytes: unpacking them is
//! the package reader's (`warden-host`), whose rules apply unchanged.

mod auth;
mod client;
mod digest;
mod error;
pub mod manifest;
mod pull;
mod push;
mod reference;

pub use auth::{DockerConfig, FirstOf, Login, Logins, StaticLogins};
pub use client::Client;
pub use digest::Digest;
pub use error::OciError;
pub use manifest::{Artifact, PullBounds};
pub use pull::{Pulled, ResolvedManifest};
pub use reference::{DEFAULT_TAG, Reference, SCHEME};

/// `text` bounded to 200 characters and escaped, for messages.
pub(crate) fn shown(text: &str) -> String {
    let mut shown: String = text.chars().take(200).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    shown.escape_debug().to_string()
}
