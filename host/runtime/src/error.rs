//! [`RuntimeError`]: the one error type of the runtime, for setup and for calls.

use std::time::Duration;
use warden_core::ErrorCode;

use warden_core::schema::render;

use crate::outcome::{FailureKind, InputError, TrapKind, Unavailable};

/// Everything that can go wrong creating a runtime, installing a component
/// or running a call. Match on the variant; [`RuntimeError::code`] is a
/// stable machine code and `Display` is a message fit for a model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The runtime configuration is unusable.
    #[error("invalid runtime configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// The engine could not be created.
    #[error("the wasm engine could not be created: {reason}")]
    Engine {
        /// Why.
        reason: String,
    },
    /// The component did not compile.
    #[error("component `{component}` is not a valid component: {reason}")]
    Compile {
        /// Component name.
        component: String,
        /// Why.
        reason: String,
    },
    /// Compiling the component would exceed (or exceeded) one of the host's
    /// compile limits; the component is refused.
    #[error("component `{component}` was refused: {limit}")]
    CompileLimitExceeded {
        /// Component name.
        component: String,
        /// The limit, and its value.
        limit: CompileLimit,
    },
    /// The component imports something the contract does not offer.
    #[error("component `{component}` imports `{import}`, which this host does not provide")]
    ImportNotAllowed {
        /// Component name.
        component: String,
        /// The offending import name.
        import: String,
    },
    /// The component does not export the contract's `tool` interface correctly.
    #[error("component `{component}` does not export the tool interface: {reason}")]
    ExportMissing {
        /// Component name.
        component: String,
        /// What is missing.
        reason: String,
    },
    /// A `near:agent` component's `schema()` failed or did not return a JSON object.
    #[error("component `{component}` is unusable: its `schema()` {reason}")]
    ToolSchema {
        /// Component name.
        component: String,
        /// What went wrong.
        reason: String,
    },
    /// A declared input or output schema is not a valid JSON schema.
    #[error("capability `{capability_id}` has an invalid {which} schema: {reason}")]
    InvalidSchema {
        /// Capability whose schema failed.
        capability_id: String,
        /// `input` or `output`.
        which: &'static str,
        /// Why.
        reason: String,
    },
    /// The component does not serve this capability.
    #[error("this tool does not provide capability `{capability_id}`")]
    UnknownCapability {
        /// The capability asked for.
        capability_id: String,
    },
    /// The input is not JSON or does not match the input schema.
    #[error("the input is invalid: {}", render(errors, *omitted))]
    InvalidInput {
        /// The first errors, each naming a JSON pointer.
        errors: Vec<InputError>,
        /// How many further errors were left out.
        omitted: usize,
    },
    /// The guest used up its fuel.
    #[error("the tool used up its compute budget ({limit} fuel) and was stopped")]
    FuelExhausted {
        /// The fuel the call had.
        limit: u64,
    },
    /// The guest tried to use more memory than allowed.
    #[error("the tool tried to use more than {limit_bytes} bytes of memory and was stopped")]
    MemoryLimit {
        /// The memory limit in bytes.
        limit_bytes: u64,
    },
    /// The call exceeded its wall-clock deadline.
    #[error("the tool did not finish within {} ms and was stopped", limit.as_millis())]
    Timeout {
        /// The deadline.
        limit: Duration,
    },
    /// The caller cancelled the call; the guest was stopped (a 0.2.0 guest
    /// after a short grace in which it sees the cancellation). What it
    /// returned, if anything, is discarded.
    #[error("the caller cancelled the call; the tool was stopped")]
    Cancelled,
    /// The guest trapped.
    #[error("the tool crashed: it {kind}")]
    GuestTrap {
        /// How.
        kind: TrapKind,
    },
    /// The output is larger than allowed.
    #[error("the tool's output ({actual} bytes) exceeds the limit of {limit} bytes")]
    OutputTooLarge {
        /// The cap in bytes.
        limit: u64,
        /// The output's size in bytes.
        actual: u64,
    },
    /// The output is not JSON or does not match the output schema.
    #[error("the tool returned invalid output: {reason}")]
    InvalidOutput {
        /// Why (names JSON pointers, never echoes the output).
        reason: String,
    },
    /// The tool reported a structured failure.
    #[error("the tool failed ({kind}/{code}){}", message_suffix(message))]
    GuestFailure {
        /// Failure class.
        kind: FailureKind,
        /// The tool's stable code (sanitized).
        code: String,
        /// The tool's message, redacted and bounded.
        message: Option<String>,
    },
    /// A credential must be connected before the tool can run.
    #[error("authorization required: connect a `{}` account for extension `{extension}`{}",
        vendor.as_deref().unwrap_or("provider"), scopes_suffix(scopes))]
    AuthRequired {
        /// Credential authority (`github`), when the host knows it.
        vendor: Option<String>,
        /// Scopes the capability needs.
        scopes: Vec<String>,
        /// The extension the capability belongs to.
        extension: String,
    },
    /// The host refused the tool's network access.
    #[error("network access was denied: {reason}")]
    NetworkDenied {
        /// The rule that refused it (from the host), or the tool's message.
        reason: String,
    },
    /// The tool failed after using up its allowance of HTTP requests.
    #[error("the tool exceeded its allowance of {limit} HTTP requests per call")]
    RequestLimit {
        /// The allowance.
        limit: u32,
    },
    /// The call's memory limit is larger than the host-wide memory budget,
    /// so it could never run here (waiting would not help).
    #[error(
        "the tool's memory limit ({limit_bytes} bytes) is larger than this host's memory budget ({budget_bytes} bytes) for all running calls; lower the tool's memory limit or raise the host's budget"
    )]
    MemoryBudgetExceeded {
        /// The call's memory limit in bytes.
        limit_bytes: u64,
        /// The host's budget in bytes.
        budget_bytes: u64,
    },
    /// The host cannot run the call now.
    #[error("the host is unavailable: {reason}")]
    HostUnavailable {
        /// Why.
        reason: Unavailable,
    },
    /// A bug or unexpected condition in the host.
    #[error("internal host error: {reason}")]
    Internal {
        /// What happened (no guest data).
        reason: String,
    },
}

impl RuntimeError {
    /// A stable, snake_case machine code.
    pub fn code(&self) -> ErrorCode {
        match self {
            RuntimeError::InvalidConfig { .. } => ErrorCode::InvalidConfig,
            RuntimeError::Engine { .. } => ErrorCode::EngineError,
            RuntimeError::Compile { .. } => ErrorCode::CompileFailed,
            RuntimeError::CompileLimitExceeded { .. } => ErrorCode::CompileLimitExceeded,
            RuntimeError::ImportNotAllowed { .. } => ErrorCode::ImportNotAllowed,
            RuntimeError::ExportMissing { .. } => ErrorCode::ExportMissing,
            RuntimeError::InvalidSchema { .. } => ErrorCode::InvalidSchema,
            RuntimeError::ToolSchema { .. } => ErrorCode::InvalidToolSchema,
            RuntimeError::UnknownCapability { .. } => ErrorCode::UnknownCapability,
            RuntimeError::InvalidInput { .. } => ErrorCode::InvalidInput,
            RuntimeError::FuelExhausted { .. } => ErrorCode::FuelExhausted,
            RuntimeError::MemoryLimit { .. } => ErrorCode::MemoryLimit,
            RuntimeError::Timeout { .. } => ErrorCode::Timeout,
            RuntimeError::Cancelled => ErrorCode::Cancelled,
            RuntimeError::GuestTrap { kind } => kind.code(),
            RuntimeError::OutputTooLarge { .. } => ErrorCode::OutputTooLarge,
            RuntimeError::InvalidOutput { .. } => ErrorCode::InvalidOutput,
            RuntimeError::GuestFailure { .. } => ErrorCode::ToolFailure,
            RuntimeError::AuthRequired { .. } => ErrorCode::AuthRequired,
            RuntimeError::NetworkDenied { .. } => ErrorCode::NetworkDenied,
            RuntimeError::RequestLimit { .. } => ErrorCode::RequestLimit,
            RuntimeError::MemoryBudgetExceeded { .. } => ErrorCode::MemoryBudgetExceeded,
            RuntimeError::HostUnavailable { .. } => ErrorCode::HostUnavailable,
            RuntimeError::Internal { .. } => ErrorCode::InternalError,
        }
    }
}

/// Which compile limit a component hit (see [`crate::CompileLimits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompileLimit {
    /// Its function bodies are larger than allowed; nothing was compiled.
    CodeSize {
        /// Bytes of function bodies the component holds.
        actual_bytes: u64,
        /// The limit in bytes.
        limit_bytes: u64,
    },
    /// The compiler took longer than allowed and was killed.
    Time {
        /// The limit.
        limit: Duration,
    },
    /// The compiler needed more memory than allowed and was stopped.
    Memory {
        /// The limit in bytes.
        limit_bytes: u64,
    },
}

impl CompileLimit {
    /// Which limit, as configured (`code_size`, `time`, `memory`).
    pub fn name(&self) -> &'static str {
        match self {
            CompileLimit::CodeSize { .. } => "code_size",
            CompileLimit::Time { .. } => "time",
            CompileLimit::Memory { .. } => "memory",
        }
    }
}

impl std::fmt::Display for CompileLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompileLimit::CodeSize {
                actual_bytes,
                limit_bytes,
            } => write!(
                f,
                "its code ({actual_bytes} bytes of function bodies) exceeds the code size limit of {limit_bytes} bytes"
            ),
            CompileLimit::Time { limit } => write!(
                f,
                "compiling it exceeded the compile time limit of {} ms",
                limit.as_millis()
            ),
            CompileLimit::Memory { limit_bytes } => write!(
                f,
                "compiling it exceeded the compile memory limit of {limit_bytes} bytes"
            ),
        }
    }
}

fn message_suffix(message: &Option<String>) -> String {
    message
        .as_ref()
        .map(|m| format!(": {m}"))
        .unwrap_or_default()
}

fn scopes_suffix(scopes: &[String]) -> String {
    if scopes.is_empty() {
        String::new()
    } else {
        format!(" with scopes {}", scopes.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_pointers_and_codes_are_stable() {
        let error = RuntimeError::InvalidInput {
            errors: vec![InputError {
                pointer: "/text".into(),
                message: "expected a string".into(),
            }],
            omitted: 2,
        };
        assert_eq!(error.code(), "invalid_input");
        assert_eq!(
            error.to_string(),
            "the input is invalid: at `/text`: expected a string (and 2 more)"
        );
        let trap = RuntimeError::GuestTrap {
            kind: TrapKind::StackOverflow,
        };
        assert_eq!(trap.code(), "guest_stack_overflow");
        assert_eq!(
            trap.to_string(),
            "the tool crashed: it overflowed its stack"
        );
    }

    #[test]
    fn auth_required_names_vendor_and_scopes() {
        let error = RuntimeError::AuthRequired {
            vendor: Some("github".into()),
            scopes: vec!["repo".into()],
            extension: "github".into(),
        };
        assert_eq!(
            error.to_string(),
            "authorization required: connect a `github` account for extension `github` with scopes repo"
        );
    }
}
