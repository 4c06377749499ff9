//! Structured failures: a closed kind, a stable code, an optional message.

use crate::bindings::exports::warden::tool::tool as wit;

pub use wit::FailureKind;

/// A tool failure the host reports to the model as a typed error.
///
/// `code` is stable, short and snake_case (`not_found`); `message` is for
/// people and is scrubbed and bounded by the host.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Which class of failure this is.
    pub kind: FailureKind,
    /// Stable machine code.
    pub code: String,
    /// Optional explanation.
    pub message: Option<String>,
}

impl Failure {
    /// A failure of `kind` with `code` and a message.
    pub fn new(kind: FailureKind, code: impl Into<String>, message: impl Into<String>) -> Self {
        Failure { kind, code: code.into(), message: Some(message.into()) }
    }

    /// The input is unacceptable.
    pub fn input(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(FailureKind::Input, code, message)
    }

    /// A credential is missing or insufficient.
    pub fn auth_required(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(FailureKind::AuthRequired, code, message)
    }

    /// The provider refused the request.
    pub fn client(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(FailureKind::Client, code, message)
    }

    /// The operation failed upstream.
    pub fn operation_failed(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(FailureKind::OperationFailed, code, message)
    }

    /// The tool itself is broken.
    pub fn executor(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(FailureKind::Executor, code, message)
    }

    pub(crate) fn into_wit(self) -> wit::Failure {
        wit::Failure { kind: self.kind, code: self.code, message: self.message }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}/{}", self.kind, self.code)?;
        if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}
