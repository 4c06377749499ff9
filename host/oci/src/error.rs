//! [`OciError`]: what went wrong talking to a registry, naming what.

/// Why a push, resolve or pull failed. Every text from the registry in it
/// is bounded and shown escaped, and a registry token never appears (the
/// egress redactor removes it from anything the registry echoes).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OciError {
    /// The reference is not `oci://HOST/REPOSITORY[:TAG][@DIGEST]`.
    #[error("invalid OCI reference `{reference}`: it {reason}")]
    Reference {
        /// The reference as given (bounded).
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A digest is malformed or of another algorithm.
    #[error("invalid digest `{digest}`: it {reason}")]
    Digest {
        /// The digest as given (bounded).
        digest: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The manifest is not a Warden package's.
    #[error("the registry's manifest {reason}")]
    Manifest {
        /// What is wrong with it.
        reason: String,
    },
    /// A manifest, config or layer of a media type Warden does not read.
    #[error("{what} has media type `{media_type}`; expected {expected}")]
    MediaType {
        /// The manifest, the config or a layer.
        what: String,
        /// Its media type (bounded).
        media_type: String,
        /// What was expected.
        expected: String,
    },
    /// A manifest or blob over its bound (declared or sent).
    #[error("{what} is over the bound of {limit} bytes")]
    TooLarge {
        /// Which document.
        what: String,
        /// The bound.
        limit: u64,
    },
    /// The registry sent content other than the digest asked for.
    #[error("{what}: the registry sent content with digest {actual}, not the {expected} asked for")]
    DigestMismatch {
        /// Which document.
        what: String,
        /// The digest asked for (or the manifest names).
        expected: String,
        /// The digest of what came, or the one the registry claimed.
        actual: String,
    },
    /// The registry answered with an unexpected status.
    #[error("{what}: the registry answered HTTP {status}{detail}")]
    Status {
        /// The request.
        what: String,
        /// The status.
        status: u16,
        /// `: <the registry's error text>`, bounded, or empty.
        detail: String,
    },
    /// The registry refused the credentials (or there were none).
    #[error(
        "{registry} refused access{detail}; sign in with `docker login {registry}` (the Docker \
         config file) or check the account's permissions"
    )]
    Unauthorized {
        /// `HOST[:PORT]`.
        registry: String,
        /// `: <the registry's error text>`, bounded, or empty.
        detail: String,
    },
    /// The registry's token service failed or answered no token.
    #[error("the token service {realm}: {reason}")]
    Token {
        /// The realm URL (bounded, without its query).
        realm: String,
        /// What went wrong.
        reason: String,
    },
    /// Egress refused or the transport failed (text redacted).
    #[error("{what}: {reason}")]
    Network {
        /// The request.
        what: String,
        /// Why (redacted, bounded).
        reason: String,
    },
    /// More redirects than followed.
    #[error("{what}: more than {max} redirects")]
    Redirects {
        /// The request.
        what: String,
        /// How many are followed.
        max: usize,
    },
    /// The Docker config file could not be read.
    #[error("the Docker config file {path}: {reason}")]
    DockerConfig {
        /// Its path.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A push to a reference that cannot take one.
    #[error("cannot push to `{reference}`: {reason}")]
    Push {
        /// The reference.
        reference: String,
        /// Why.
        reason: String,
    },
}
