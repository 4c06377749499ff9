//! The stable error codes of a failed call: one enum, one spelling on every
//! surface (`warden call --json`, the MCP result's `_meta`, the host API,
//! the audit log). A code is a contract: clients branch on it, so a code is
//! never renamed; a new failure gets a new code.

use std::fmt;
use std::str::FromStr;

use crate::vocabulary::{UnknownWord, vocabulary};

vocabulary! {
    /// Why a call failed, as a machine reads it.
    #[non_exhaustive]
    ErrorCode, "error code" {
        // The host, before any lane runs.
        /// No tool of that name is published (or it was uninstalled).
        UnknownTool = "unknown_tool",
        /// The gate matrix or the capability's permission denies the call.
        NotPermitted = "not_permitted",
        /// A person declined the approval.
        UserDeclined = "user_declined",
        /// The approval was dismissed without an answer.
        UserDismissed = "user_dismissed",
        /// The input changed since it was approved.
        ApprovalInputChanged = "approval_input_changed",
        /// The package changed since the call was approved.
        ApprovalPackageChanged = "approval_package_changed",
        /// The approval expired before it was answered or used.
        ApprovalExpired = "approval_expired",
        /// Any other refusal of the authorization step.
        Refused = "refused",
        /// The call waits for a person's approval (not a failure yet).
        ApprovalRequired = "approval_required",
        /// The approval was already used by a call.
        ApprovalAlreadyUsed = "approval_already_used",
        /// The approval is still waiting for an answer.
        ApprovalPending = "approval_pending",
        /// No approval has that id.
        ApprovalNotFound = "approval_not_found",
        /// The approval cannot be used for this call.
        ApprovalUnusable = "approval_unusable",
        /// No usable account for a credential the call needs.
        AuthRequired = "auth_required",
        /// The tool's lane cannot run under `--record`/`--replay`.
        TapeUnsupported = "tape_unsupported",
        /// A call made for an authenticated caller needs an account only
        /// the deployment holds (a lane that cannot send a call's own
        /// accounts), and the operator does not share that vendor's
        /// accounts with callers.
        AccountNotShared = "account_not_shared",
        // Installing and compiling (the WASM lane).
        /// The host's runtime configuration is invalid.
        InvalidConfig = "invalid_config",
        /// The engine failed.
        EngineError = "engine_error",
        /// The component did not compile.
        CompileFailed = "compile_failed",
        /// The component is larger, or took longer or more memory to compile,
        /// than allowed.
        CompileLimitExceeded = "compile_limit_exceeded",
        /// The component imports what the host does not provide.
        ImportNotAllowed = "import_not_allowed",
        /// The component lacks an export its world requires.
        ExportMissing = "export_missing",
        /// A schema of the package is not a valid JSON Schema.
        InvalidSchema = "invalid_schema",
        /// The schema a component reports for a tool is unusable.
        InvalidToolSchema = "invalid_tool_schema",
        /// The component does not implement the capability.
        UnknownCapability = "unknown_capability",
        // Running a call.
        /// The input does not match the tool's input schema.
        InvalidInput = "invalid_input",
        /// The guest used up its fuel.
        FuelExhausted = "fuel_exhausted",
        /// The guest grew its memory past its limit.
        MemoryLimit = "memory_limit",
        /// The call ran past its deadline.
        Timeout = "timeout",
        /// The caller cancelled the call while it ran (MCP
        /// `notifications/cancelled`); it was stopped.
        Cancelled = "cancelled",
        /// The guest panicked.
        GuestPanic = "guest_panic",
        /// The guest reached unreachable code.
        GuestUnreachable = "guest_unreachable",
        /// The guest overflowed its stack.
        GuestStackOverflow = "guest_stack_overflow",
        /// The guest trapped otherwise.
        GuestTrap = "guest_trap",
        /// The output is larger than the tool's bound.
        OutputTooLarge = "output_too_large",
        /// The output does not match the tool's output schema, or is not JSON.
        InvalidOutput = "invalid_output",
        /// The tool reported a failure of its own.
        ToolFailure = "tool_failure",
        /// The network policy refused a request.
        NetworkDenied = "network_denied",
        /// The call made more requests, or moved more bytes, than allowed.
        RequestLimit = "request_limit",
        /// A request failed on the network (a first-party service's).
        NetworkError = "network_error",
        /// The host's memory budget for concurrent calls is spent.
        MemoryBudgetExceeded = "memory_budget_exceeded",
        /// A host service the call needs is unavailable.
        HostUnavailable = "host_unavailable",
        /// A fault of the host (a bug): reported, never a guest's doing.
        InternalError = "internal_error",
        // Hosted MCP servers.
        /// The server's URL is not one the host may reach.
        InvalidEndpoint = "invalid_endpoint",
        /// The MCP session could not be established or was lost.
        ConnectionFailed = "connection_failed",
        /// The server is down: no connection, or its name does not resolve.
        ServerUnavailable = "server_unavailable",
        /// The server speaks no protocol version the host does.
        ProtocolUnsupported = "protocol_unsupported",
        /// The server refused to list its tools.
        DiscoveryRefused = "discovery_refused",
    }
}

/// A test (or a client) may compare a code with its spelling.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, word: &&str) -> bool {
        self.as_str() == *word
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_one_snake_case_word_that_reads_back() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            let word = code.as_str();
            assert!(
                word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{word}"
            );
            assert!(seen.insert(word), "`{word}` is spelled twice");
            assert_eq!(word.parse::<ErrorCode>(), Ok(*code));
            assert_eq!(serde_json::to_value(code).unwrap(), word);
        }
        assert!("approval-required".parse::<ErrorCode>().is_err());
    }
}
