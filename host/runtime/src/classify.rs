//! Turn what the guest did (a trap, a failure, an output) into a typed result.

use serde_json::Value;
use warden_core::net::CallNetwork;
use wasmtime::{Trap, WasmBacktrace};

use crate::bindings::v0_2::exports::warden::tool::tool as wit;
use crate::component::Capability;
use crate::config::Limits;
use crate::error::RuntimeError;
use crate::outcome::{FailureKind, TrapKind};
use crate::state::{CallState, code_without_secrets, redact_bounded};

/// Bytes kept of a guest failure message.
const MAX_FAILURE_MESSAGE_BYTES: usize = 1024;
/// Bytes kept of a guest failure code.
const MAX_CODE_BYTES: usize = 64;
/// Bytes kept of the cause of a trap raised on the host side.
const MAX_TRAP_CAUSE_BYTES: usize = 200;

/// Classify an error raised while instantiating or running the guest.
pub(crate) fn trap(error: &wasmtime::Error, state: &CallState, limits: &Limits) -> RuntimeError {
    if state.limiter.exceeded() {
        return RuntimeError::MemoryLimit {
            limit_bytes: limits.memory_bytes,
        };
    }
    let Some(trap) = error.downcast_ref::<Trap>() else {
        // A host function failed (a host limit such as too many handles, or a
        // host error): report its cause, not wasmtime's backtrace context.
        return RuntimeError::GuestTrap {
            kind: TrapKind::Other(host_cause(error, state)),
        };
    };
    let kind = match trap {
        Trap::OutOfFuel => return RuntimeError::FuelExhausted { limit: limits.fuel },
        Trap::Interrupt => {
            return RuntimeError::Timeout {
                limit: limits.timeout,
            };
        }
        Trap::StackOverflow => TrapKind::StackOverflow,
        Trap::UnreachableCodeReached if state.logs.panicked || panicked(error) => TrapKind::Panic,
        Trap::UnreachableCodeReached => TrapKind::Unreachable,
        other => TrapKind::Other(other.to_string()),
    };
    RuntimeError::GuestTrap { kind }
}

/// Whether the trapping stack passes through Rust's panic machinery.
fn panicked(error: &wasmtime::Error) -> bool {
    error.downcast_ref::<WasmBacktrace>().is_some_and(|bt| {
        bt.frames()
            .iter()
            .filter_map(|f| f.func_name())
            .any(|name| name.contains("rust_panic") || name.contains("panic_abort"))
    })
}

/// The messages of a host-side error's cause chain, without the wasm
/// backtrace wasmtime wraps around it: one line, redacted, at most
/// [`MAX_TRAP_CAUSE_BYTES`].
fn host_cause(error: &wasmtime::Error, state: &CallState) -> String {
    let backtrace = error
        .downcast_ref::<WasmBacktrace>()
        .map(ToString::to_string);
    let mut parts: Vec<String> = Vec::new();
    for cause in error.chain() {
        let message = cause.to_string();
        if Some(&message) == backtrace.as_ref() || parts.contains(&message) {
            continue;
        }
        parts.push(message);
        if parts.iter().map(String::len).sum::<usize>() > MAX_TRAP_CAUSE_BYTES {
            break;
        }
    }
    let joined = crate::host::log::one_line(&parts.join(": ")).into_owned();
    let (mut cause, _) = redact_bounded(state.network.as_ref(), &joined, MAX_TRAP_CAUSE_BYTES);
    if cause.trim().is_empty() {
        cause = "a host function failed".to_owned();
    }
    cause
}

/// Check a successful output: size, redaction, JSON, schema.
///
/// The call's redactor runs over the raw text *before* it is parsed, so a
/// secret cannot survive by being split across JSON escapes (the redactor
/// decodes them itself, and replaces whole escapes). Everything downstream —
/// the value, what `warden call` prints, the MCP result, spilled files and
/// logs — comes from the redacted text. A replacement inside a JSON string
/// keeps the JSON valid; one that cuts through the JSON syntax (a secret
/// holding `"`) leaves text that no longer parses, and the call then fails
/// with [`RuntimeError::InvalidOutput`] saying so, never with a silently
/// dropped or unredacted output.
pub(crate) fn output(
    text: &str,
    capability: &Capability,
    limits: &Limits,
    network: &dyn CallNetwork,
) -> Result<Value, RuntimeError> {
    if text.len() as u64 > limits.max_output_bytes {
        return Err(RuntimeError::OutputTooLarge {
            limit: limits.max_output_bytes,
            actual: text.len() as u64,
        });
    }
    let redacted = network.redact(text);
    let parse = warden_core::schema::parse_json;
    let value = parse(&redacted).map_err(|e| RuntimeError::InvalidOutput {
        reason: if redacted != text && parse(text).is_ok() {
            "it carried a staged secret and is not valid JSON once the secret is redacted"
                .to_owned()
        } else {
            e.message
        },
    })?;
    if let Some(schema) = &capability.output {
        schema
            .check(&value)
            .map_err(|refused| RuntimeError::InvalidOutput {
                reason: format!(
                    "it does not match the output schema of `{}`: {refused}",
                    capability.id()
                ),
            })?;
    }
    Ok(value)
}

/// Outputs past this size are redacted and parsed a few at a time.
const LARGE_OUTPUT: usize = 1 << 20;

/// Large outputs redacted and parsed at once, host-wide. Redaction looks at
/// an output in its canonical forms (up to about twenty times its size while
/// it lasts) and parsing builds its JSON value, both after the guest's
/// memory is given back and outside any budget: 128 calls each returning
/// 16 MiB held tens of gigabytes at once. (Egress has its own two turns for
/// request and response bodies.)
static LARGE_OUTPUTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// A turn to classify an output of `len` bytes, waited for until
/// `deadline` (then the call has timed out): none needed for a small one.
pub(crate) async fn output_turn(
    len: usize,
    deadline: std::time::Instant,
    limit: std::time::Duration,
) -> Result<Option<tokio::sync::SemaphorePermit<'static>>, RuntimeError> {
    if len <= LARGE_OUTPUT {
        return Ok(None);
    }
    match tokio::time::timeout_at(deadline.into(), LARGE_OUTPUTS.acquire()).await {
        // Never closed.
        Ok(permit) => Ok(permit.ok()),
        Err(_) => Err(RuntimeError::Timeout { limit }),
    }
}

/// Check what a tool returned: its structured output and content blocks
/// together within the output limit, the structured output as
/// [`output`] checks it (`null` when there is none, which a capability
/// with an output schema refuses), the blocks redacted, scanned and
/// bounded ([`crate::content`]).
pub(crate) async fn returned(
    returned: wit::Output,
    capability: &Capability,
    limits: &Limits,
    deadline: std::time::Instant,
    network: &dyn CallNetwork,
) -> Result<(Value, Vec<warden_core::content::ContentBlock>), RuntimeError> {
    let structured = returned.structured.as_ref().map_or(0, String::len) as u64;
    let total = structured.saturating_add(crate::content::bytes(&returned.content));
    if total > limits.max_output_bytes {
        return Err(RuntimeError::OutputTooLarge {
            limit: limits.max_output_bytes,
            actual: total,
        });
    }
    let value = match &returned.structured {
        Some(text) => {
            let _turn = output_turn(text.len(), deadline, limits.timeout).await?;
            output(text, capability, limits, network)?
        }
        None if capability.output.is_some() => {
            return Err(RuntimeError::InvalidOutput {
                reason: format!(
                    "`{}` declares an output schema, and the tool returned no structured output",
                    capability.id()
                ),
            });
        }
        None => Value::Null,
    };
    Ok((value, crate::content::received(returned.content, network)))
}

/// Turn a structured guest failure into a typed error.
pub(crate) fn failure(failure: wit::Failure, state: &CallState) -> RuntimeError {
    if state.http.limit_hit {
        return RuntimeError::RequestLimit {
            limit: state.limits.max_http_requests,
        };
    }
    let message = failure
        .message
        .map(|m| redact_bounded(state.network.as_ref(), &m, MAX_FAILURE_MESSAGE_BYTES).0);
    let kind = match failure.kind {
        wit::FailureKind::Input => FailureKind::Input,
        wit::FailureKind::AuthRequired => {
            let needed = state.auth_needed.clone();
            return RuntimeError::AuthRequired {
                vendor: needed.as_ref().map(|n| n.vendor.clone()),
                scopes: needed.map(|n| n.scopes).unwrap_or_default(),
                extension: extension(&state.capability_id).to_owned(),
            };
        }
        wit::FailureKind::NetworkDenied => {
            let reason = state
                .denied
                .clone()
                .or(message)
                .unwrap_or_else(|| "the host refused a network request of the tool".to_owned());
            return RuntimeError::NetworkDenied { reason };
        }
        wit::FailureKind::OutputTooLarge => FailureKind::OutputTooLarge,
        wit::FailureKind::Client => FailureKind::Client,
        wit::FailureKind::OperationFailed => FailureKind::OperationFailed,
        wit::FailureKind::Executor => FailureKind::Executor,
    };
    RuntimeError::GuestFailure {
        kind,
        code: code_without_secrets(
            state.network.as_ref(),
            &failure.code,
            sanitize_code(&failure.code),
        ),
        message,
    }
}

/// The extension part of `<extension>.<name>`.
fn extension(capability_id: &str) -> &str {
    capability_id
        .split_once('.')
        .map_or(capability_id, |(extension, _)| extension)
}

/// A guest code kept only if it is short snake_case; otherwise a placeholder.
fn sanitize_code(code: &str) -> String {
    let valid = !code.is_empty()
        && code.len() <= MAX_CODE_BYTES
        && code
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if valid {
        code.to_owned()
    } else {
        "invalid_code".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_must_be_short_snake_case() {
        assert_eq!(sanitize_code("not_found"), "not_found");
        assert_eq!(sanitize_code("Bearer abc123"), "invalid_code");
        assert_eq!(sanitize_code(&"a".repeat(65)), "invalid_code");
        assert_eq!(sanitize_code(""), "invalid_code");
    }

    #[test]
    fn extension_is_the_id_prefix() {
        assert_eq!(extension("github.get_repo"), "github");
        assert_eq!(extension("plain"), "plain");
    }
}

#[cfg(test)]
mod turns {
    use std::time::{Duration, Instant};

    use super::*;

    #[tokio::test]
    async fn large_outputs_take_turns_until_the_deadline() {
        let later = || Instant::now() + Duration::from_secs(60);
        let limit = Duration::from_secs(1);
        let small = output_turn(LARGE_OUTPUT, Instant::now(), limit).await;
        assert!(small.unwrap().is_none(), "a small output needs no turn");
        let first = output_turn(LARGE_OUTPUT + 1, later(), limit).await.unwrap();
        let second = output_turn(16 << 20, later(), limit).await.unwrap();
        assert!(first.is_some() && second.is_some());
        let soon = Instant::now() + Duration::from_millis(50);
        let third = output_turn(2 << 20, soon, limit).await;
        assert!(
            matches!(third, Err(RuntimeError::Timeout { .. })),
            "{third:?}"
        );
        drop(first);
        assert!(
            output_turn(2 << 20, later(), limit)
                .await
                .unwrap()
                .is_some()
        );
    }
}
