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
    /// A package file does not match its recorded digest.
    #[error("{package}: `{path}` does not match SHA256SUMS")]
    Digest {
        /// Which package.
        package: String,
        /// Which file (or line of the digest list).
        path: String,
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
}

impl HostError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        HostError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
