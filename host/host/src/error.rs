//! Errors of the host API.

use std::path::{Path, PathBuf};

/// What went wrong in a host operation (not a tool outcome: those are
/// [`crate::CallFailure`]s inside an [`crate::InvokeOutcome`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A manifest failed validation; the diagnostics name every problem.
    #[error("{package}: invalid manifest\n{diagnostics}")]
    Manifest {
        /// Which package.
        package: String,
        /// Every problem found.
        diagnostics: Box<warden_manifest::Diagnostics>,
    },
    /// A package is malformed in a way the manifest layer does not cover.
    #[error("{package}: {reason}")]
    InvalidPackage {
        /// Which package.
        package: String,
        /// What is wrong.
        reason: String,
    },
    /// A hosted MCP server refused or failed (endpoint, discovery bounds,
    /// connection).
    #[error("{package}: {source}")]
    Hosted {
        /// Which package.
        package: String,
        /// What went wrong.
        #[source]
        source: warden_hosted::HostedError,
    },
    /// A registry push, resolve or pull failed (nothing was installed).
    #[error(transparent)]
    Oci(#[from] warden_oci::OciError),
    /// A registry login that cannot be kept or read.
    #[error("the login for registry {registry}: {reason}")]
    RegistryLogin {
        /// `HOST[:PORT]`.
        registry: String,
        /// What is wrong.
        reason: String,
    },
    /// The secret store failed.
    #[error("the secret store: {0}")]
    Secrets(#[from] warden_egress::secrets::SecretError),
    /// A wasm package's module is not there (not built yet).
    #[error("{package}: module `{module}` is missing; run `cargo xtask bundle`")]
    MissingModule {
        /// Which package.
        package: String,
        /// The module path the manifest names.
        module: String,
    },
    /// A package file does not match its recorded digest.
    #[error("{package}: `{path}` does not match SHA256SUMS")]
    Digest {
        /// Which package.
        package: String,
        /// Which file (or line of the digest list).
        path: String,
    },
    /// A kept file is not listed in the package's `SHA256SUMS` (or the
    /// archive has none, or an empty one): archives must list every file.
    #[error(
        "{package}: `{path}` is not listed in SHA256SUMS (an archive must list every file it installs)"
    )]
    NotInSums {
        /// Which package.
        package: String,
        /// The unlisted file.
        path: String,
    },
    /// A line of `SHA256SUMS` names a file the package does not have.
    #[error("{package}: SHA256SUMS lists `{path}`, which is not in the package")]
    SumsNamesMissingFile {
        /// Which package.
        package: String,
        /// The missing file.
        path: String,
    },
    /// An archive entry or package file that could escape the package or is
    /// not a regular file (absolute or `..` names, links, devices).
    #[error("{package}: refused `{entry}`: {reason}")]
    UnsafeEntry {
        /// Which package.
        package: String,
        /// The entry name as found (escaped).
        entry: String,
        /// Why it is refused.
        reason: String,
    },
    /// A package file, or the package as a whole, is over its size limit
    /// ([`crate::MAX_FILE_BYTES`], [`crate::MAX_PACKAGE_BYTES`]).
    #[error("{package}: `{path}` is over the limit of {limit} bytes")]
    TooLarge {
        /// Which package.
        package: String,
        /// The file being read when the limit was passed.
        path: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// A package's tool would be published under a name another package's
    /// tool already has.
    #[error(
        "tool `{tool}` of package `{package}` would be published as `{model_name}`, \
         which `{existing_tool}` of package `{existing_package}` already uses"
    )]
    ToolCollision {
        /// The model-facing name both flatten to.
        model_name: String,
        /// The refused tool.
        tool: String,
        /// Its package.
        package: String,
        /// The tool already installed.
        existing_tool: String,
        /// Its package.
        existing_package: String,
    },
    /// A package's `[auth.<vendor>]` recipe differs from the one an
    /// installed package declares for the vendor in more than scopes and
    /// presentation, or binds another OAuth resource (format §7.4): one
    /// account could not serve both.
    #[error(
        "package `{package}` declares an [auth.{vendor}] recipe that is incompatible with \
         installed package `{installed}`'s (recipes of one vendor must be identical apart from \
         scopes and presentation metadata, and bound to the same resource)"
    )]
    VendorRecipeConflict {
        /// The vendor.
        vendor: String,
        /// The refused package.
        package: String,
        /// The installed package whose recipe it conflicts with.
        installed: String,
    },
    /// The operator requires packages to be signed by a trusted signer
    /// (`[trust] require_signature`), and this one is not.
    #[error(
        "package `{package}` is not signed by a trusted signer ({found}); this host installs \
         only signed packages ([trust] require_signature)"
    )]
    SignatureRequired {
        /// The package.
        package: String,
        /// What its signature is (`unsigned`, an unknown key, one that
        /// does not verify).
        found: String,
    },
    /// A package with this id is already installed.
    #[error(
        "a {} package `{id}` is already installed (digest {digest}); pass `--replace` \
         (`Replace::Yes`) to replace it", provenance.as_str()
    )]
    AlreadyInstalled {
        /// The package id.
        id: String,
        /// Whether the package there is bundled or installed.
        provenance: crate::Provenance,
        /// The content digest of the package there.
        digest: String,
    },
    /// The component could not be compiled or linked.
    #[error("installing `{package}`: {source}")]
    Install {
        /// Which package.
        package: String,
        /// The runtime's reason.
        #[source]
        source: warden_runtime::RuntimeError,
    },
    /// A reviewed ungated allowlist entry applies to a capability of the
    /// package that declares effects; the package is refused.
    #[error("installing `{package}`: {source}")]
    Allowlist {
        /// Which package.
        package: String,
        /// The capability and its effects.
        #[source]
        source: warden_registry::AllowlistError,
    },
    /// Registration was refused (e.g. two tools flatten to one model name).
    #[error(transparent)]
    Registry(#[from] warden_registry::RegistryError),
    /// The approval store failed or refused an operation.
    #[error(transparent)]
    Approval(#[from] warden_registry::ApprovalError),
    /// The secret store or egress could not be set up.
    #[error(transparent)]
    Egress(#[from] warden_egress::EgressError),
    /// Reading or writing host data failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The runtime could not be created.
    #[error("starting the runtime: {0}")]
    Runtime(#[source] warden_runtime::RuntimeError),
    /// No Location with this id is open.
    #[error("no location `{0}` is open")]
    UnknownLocation(String),
    /// A package needs the bundled tier (first-party trust, an
    /// `[admin_configuration]`) that only the operator's pin of its id
    /// grants, and its content is not the pinned content.
    #[error(
        "package `{package}` is pinned by the trust policy to digest {pinned}, but this \
         package's digest is {digest}: it is not the content the operator vouched for"
    )]
    PinMismatch {
        /// The package id.
        package: String,
        /// The digest `[trust.<id>]` names.
        pinned: String,
        /// The package's own digest.
        digest: String,
    },
    /// [`crate::HostConfig::public_url`] is not an origin the host can
    /// take OAuth callbacks on.
    #[error("the public URL {url:?} {why}")]
    PublicUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

impl HostError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        HostError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
