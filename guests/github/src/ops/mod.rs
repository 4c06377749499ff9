//! The seven operations: input types, validation and the request each one
//! plans. Planning is pure (no host call), so it is tested natively; the
//! request is sent by [`crate::client`] and its answer shaped by [`Finish`].

mod contents;
mod issues;
mod repo;
mod search;

use serde::de::DeserializeOwned;
use warden_guest::http::Response;
use warden_guest::{Call, Failure};

use crate::{compact, content};

/// An operation, selected from the host's capability id only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    GetRepo,
    ListIssues,
    GetIssue,
    CreateIssue,
    CommentIssue,
    GetFileContent,
    SearchIssues,
}

impl Operation {
    /// Every operation, in manifest order.
    pub(crate) const ALL: [Operation; 7] = [
        Operation::GetRepo,
        Operation::ListIssues,
        Operation::GetIssue,
        Operation::CreateIssue,
        Operation::CommentIssue,
        Operation::GetFileContent,
        Operation::SearchIssues,
    ];

    /// The capability name (`get_repo`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Operation::GetRepo => "get_repo",
            Operation::ListIssues => "list_issues",
            Operation::GetIssue => "get_issue",
            Operation::CreateIssue => "create_issue",
            Operation::CommentIssue => "comment_issue",
            Operation::GetFileContent => "get_file_content",
            Operation::SearchIssues => "search_issues",
        }
    }

    /// The operation for a host capability id, which must be exactly
    /// `github.<name>`. Anything else is an executor failure: the host routed
    /// a capability this component does not implement.
    pub(crate) fn from_capability(capability_id: &str) -> Result<Self, Failure> {
        capability_id
            .strip_prefix("github.")
            .and_then(|name| Self::ALL.into_iter().find(|op| op.name() == name))
            .ok_or_else(|| {
                Failure::executor(
                    "unknown_operation",
                    "this component implements no such GitHub capability",
                )
            })
    }
}

/// Where the typed input comes from: the SDK's [`Call::input`] (which refuses
/// unknown fields on top of each type's `deny_unknown_fields`), or a string
/// in native tests.
pub(crate) trait InputSource {
    fn parse<T: DeserializeOwned>(&self) -> Result<T, Failure>;
}

impl InputSource for Call {
    fn parse<T: DeserializeOwned>(&self) -> Result<T, Failure> {
        self.input()
    }
}

/// HTTP method of a planned request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Get,
    Post,
}

impl Method {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
        }
    }
}

/// One validated GitHub request and how to shape its answer.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) method: Method,
    pub(crate) url: String,
    pub(crate) body: Option<serde_json::Value>,
    pub(crate) finish: Finish,
}

/// How a successful answer becomes the tool's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    Repo,
    IssuePage { page: u32, per_page: u32 },
    Issue,
    CreatedIssue,
    Comment { issue_number: u64 },
    File,
    Search { page: u32, per_page: u32 },
}

/// Parse and validate the input of `op` and plan its request. Nothing is
/// sent: every check happens before any host call.
pub(crate) fn plan(op: Operation, input: &impl InputSource) -> Result<Plan, Failure> {
    match op {
        Operation::GetRepo => repo::get(input.parse()?),
        Operation::ListIssues => issues::list(input.parse()?),
        Operation::GetIssue => issues::get(input.parse()?),
        Operation::CreateIssue => issues::create(input.parse()?),
        Operation::CommentIssue => issues::comment(input.parse()?),
        Operation::GetFileContent => contents::get(input.parse()?),
        Operation::SearchIssues => search::issues(input.parse()?),
    }
}

impl Finish {
    /// The compact output for a 2xx `response`.
    pub(crate) fn output(self, response: &Response) -> Result<serde_json::Value, Failure> {
        let body = &response.body;
        let link = response.header("link");
        let value = match self {
            Finish::Repo => to_value(compact::repo(body)?),
            Finish::IssuePage { page, per_page } => {
                to_value(compact::issue_page(body, link, page, per_page)?)
            }
            Finish::Issue => to_value(compact::issue(body)?),
            Finish::CreatedIssue => to_value(compact::created_issue(body)?),
            Finish::Comment { issue_number } => to_value(compact::comment(body, issue_number)?),
            Finish::File => to_value(content::file(body)?),
            Finish::Search { page, per_page } => {
                to_value(compact::search_page(body, link, page, per_page)?)
            }
        };
        value.map_err(|_| {
            Failure::executor(
                "unserializable_output",
                "the tool could not serialize its output",
            )
        })
    }
}

fn to_value(value: impl serde::Serialize) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(value)
}

/// Defaults shared by paginated inputs.
pub(crate) fn default_per_page() -> u32 {
    30
}

pub(crate) fn default_page() -> u32 {
    1
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Native stand-in for [`Call::input`]: plain serde, so these tests show
    /// that each input type refuses unknown fields on its own.
    pub(crate) struct Raw<'a>(pub(crate) &'a str);

    impl InputSource for Raw<'_> {
        fn parse<T: DeserializeOwned>(&self) -> Result<T, Failure> {
            serde_json::from_str(self.0).map_err(|e| Failure::input("invalid_input", e.to_string()))
        }
    }

    pub(crate) fn planned(op: Operation, input: &str) -> Result<Plan, Failure> {
        plan(op, &Raw(input))
    }

    #[test]
    fn capability_ids_map_to_operations_exactly() {
        for op in Operation::ALL {
            assert_eq!(
                Operation::from_capability(&format!("github.{}", op.name())).unwrap(),
                op
            );
        }
        for bad in [
            "get_repo",
            "github.",
            "github.delete_repo",
            "gitlab.get_repo",
            "github.get_repo.x",
            "GITHUB.get_repo",
        ] {
            assert_eq!(
                Operation::from_capability(bad).unwrap_err().code,
                "unknown_operation",
                "{bad}"
            );
        }
    }

    #[test]
    fn serde_rejects_unknown_fields_before_egress() {
        let cases = [
            (
                Operation::GetRepo,
                r#"{"owner":"o","repo":"r","url":"https://evil.example"}"#,
            ),
            (
                Operation::ListIssues,
                r#"{"owner":"o","repo":"r","headers":{"authorization":"x"}}"#,
            ),
            (
                Operation::GetIssue,
                r#"{"owner":"o","repo":"r","issue_number":1,"method":"DELETE"}"#,
            ),
            (
                Operation::CreateIssue,
                r#"{"owner":"o","repo":"r","title":"t","state":"closed"}"#,
            ),
            (
                Operation::CommentIssue,
                r#"{"owner":"o","repo":"r","issue_number":1,"body":"b","id":2}"#,
            ),
            (
                Operation::GetFileContent,
                r#"{"owner":"o","repo":"r","path":"a","branch":"main"}"#,
            ),
            (
                Operation::SearchIssues,
                r#"{"q":"is:issue x","operation":"create_issue"}"#,
            ),
        ];
        for (op, input) in cases {
            let failure = planned(op, input).unwrap_err();
            assert_eq!(failure.code, "invalid_input", "{op:?}");
            assert!(failure.message.unwrap().contains("unknown field"), "{op:?}");
        }
    }

    #[test]
    fn operation_comes_from_host_context_not_param_shape() {
        // A create_issue-shaped input on the get_repo capability is refused,
        // not routed to create_issue.
        let create = r#"{"owner":"o","repo":"r","title":"t","body":"b"}"#;
        assert_eq!(
            planned(Operation::GetRepo, create).unwrap_err().code,
            "invalid_input"
        );
        // The same identifiers on two capabilities plan two different requests.
        let ids = r#"{"owner":"o","repo":"r"}"#;
        let repo = planned(Operation::GetRepo, ids).unwrap();
        let list = planned(Operation::ListIssues, ids).unwrap();
        assert_eq!((repo.method, repo.finish), (Method::Get, Finish::Repo));
        assert!(
            list.url
                .starts_with("https://api.github.com/repos/o/r/issues?")
        );
        // Only the two write capabilities ever plan a POST.
        let comment = planned(
            Operation::CommentIssue,
            r#"{"owner":"o","repo":"r","issue_number":3,"body":"hi"}"#,
        )
        .unwrap();
        assert_eq!(comment.method, Method::Post);
    }

    #[test]
    fn every_plan_targets_the_credential_audience() {
        let inputs = [
            (Operation::GetRepo, r#"{"owner":"o","repo":"r"}"#),
            (Operation::ListIssues, r#"{"owner":"o","repo":"r"}"#),
            (
                Operation::GetIssue,
                r#"{"owner":"o","repo":"r","issue_number":1}"#,
            ),
            (
                Operation::CreateIssue,
                r#"{"owner":"o","repo":"r","title":"t"}"#,
            ),
            (
                Operation::CommentIssue,
                r#"{"owner":"o","repo":"r","issue_number":1,"body":"b"}"#,
            ),
            (
                Operation::GetFileContent,
                r#"{"owner":"o","repo":"r","path":"README.md"}"#,
            ),
            (Operation::SearchIssues, r#"{"q":"is:issue x"}"#),
        ];
        for (op, input) in inputs {
            let plan = planned(op, input).unwrap();
            assert!(
                plan.url.starts_with("https://api.github.com/"),
                "{op:?}: {}",
                plan.url
            );
            let writes = matches!(op, Operation::CreateIssue | Operation::CommentIssue);
            assert_eq!(plan.method == Method::Post, writes, "{op:?}");
            assert_eq!(plan.body.is_some(), writes, "{op:?}");
        }
    }
}
