//! `github.*`: GitHub REST tools (repositories, issues, comments, file
//! contents, issue search) as one Warden component.
//!
//! The operation comes from the host's capability id (`github.get_repo`),
//! never from the input. Each call parses its input with unknown fields
//! refused, validates every identifier that reaches a URL, then sends one
//! request through host egress with the `github_runtime_token` handle (the
//! host injects the bearer token for `api.github.com`), maps errors to
//! stable codes without any provider text, and compacts the answer.
//!
//! ```text
//! capability id -> Operation -> ops::plan (parse + validate + URL) -> client::send -> Finish::output
//! ```

mod client;
mod compact;
mod content;
mod errors;
mod ops;
#[cfg(test)]
mod schema_sync;
mod url;
mod validate;

use warden_guest::{Call, Failure, Tool};

use crate::ops::Operation;

struct GitHub;

impl Tool for GitHub {
    fn run(call: &Call) -> Result<impl warden_guest::IntoOutput, Failure> {
        let operation = Operation::from_capability(call.capability_id())?;
        let plan = ops::plan(operation, call)?;
        let response = client::send(&plan)?;
        plan.finish.output(&response)
    }
}

warden_guest::export_tool!(GitHub);

#[cfg(test)]
mod tests {
    //! Through the SDK's real entry point (`warden_guest::run`) on the
    //! native target. Host imports are stubs that panic there, so a test that
    //! returns a failure proves the call stopped before any host call
    //! (credential or HTTP).

    use warden_guest::bindings::exports::warden::tool::tool::{CallContext, FailureKind, Request};

    use super::GitHub;

    fn invoke(capability_id: &str, input: &str) -> (FailureKind, String) {
        let request = Request {
            capability_id: capability_id.to_owned(),
            input: input.to_owned(),
            context: CallContext {
                call_id: "test".into(),
                origin: "loop-run".into(),
            },
        };
        let result = warden_guest::run::<GitHub>(request);
        // `run` installs a panic hook that logs through the host; put the
        // default one back so a failing assertion prints normally.
        drop(std::panic::take_hook());
        let failure = result.expect_err("the call must fail before any host call");
        (failure.kind, failure.code)
    }

    #[test]
    fn operation_comes_from_host_context_not_param_shape() {
        // Create-issue fields on the get_repo capability: refused, not routed.
        let create = r#"{"owner":"o","repo":"r","title":"pwn","body":"x"}"#;
        assert_eq!(invoke("github.get_repo", create).0, FailureKind::Input);
        // An `operation` field cannot pick an operation either.
        let (kind, _) = invoke(
            "github.get_repo",
            r#"{"owner":"o","repo":"r","operation":"create_issue"}"#,
        );
        assert_eq!(kind, FailureKind::Input);
        // A capability this component does not implement is an executor failure.
        for id in ["github.delete_repo", "create_issue", "other.get_repo"] {
            assert_eq!(
                invoke(id, r#"{"owner":"o","repo":"r"}"#),
                (FailureKind::Executor, "unknown_operation".into()),
                "{id}"
            );
        }
    }

    #[test]
    fn serde_rejects_unknown_fields_before_egress() {
        let (kind, code) = invoke(
            "github.create_issue",
            r#"{"owner":"o","repo":"r","title":"t","authorization":"Bearer x"}"#,
        );
        assert_eq!(kind, FailureKind::Input);
        assert!(code == "invalid_input" || code == "unknown_field", "{code}");
        let nested = r#"{"owner":"o","repo":"r","path":"README.md","ref":"main","extra":{"a":1}}"#;
        assert_eq!(
            invoke("github.get_file_content", nested).0,
            FailureKind::Input
        );
    }

    #[test]
    fn unsafe_identifiers_stop_before_egress() {
        let cases = [
            (
                "github.get_file_content",
                r#"{"owner":"o","repo":"r","path":"../../etc/passwd"}"#,
                "invalid_path",
            ),
            (
                "github.get_file_content",
                r#"{"owner":"o","repo":"r","path":"a","ref":"main..x"}"#,
                "invalid_ref",
            ),
            (
                "github.get_issue",
                r#"{"owner":"o","repo":"r","issue_number":0}"#,
                "invalid_issue_number",
            ),
            (
                "github.list_issues",
                r#"{"owner":"o","repo":"r","per_page":500}"#,
                "invalid_pagination",
            ),
            (
                "github.comment_issue",
                r#"{"owner":"o/x","repo":"r","issue_number":1,"body":"b"}"#,
                "invalid_owner",
            ),
        ];
        for (id, input, code) in cases {
            assert_eq!(
                invoke(id, input),
                (FailureKind::Input, code.to_owned()),
                "{id} {input}"
            );
        }
    }
}
