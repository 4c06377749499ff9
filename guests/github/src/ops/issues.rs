//! Issue operations on `/repos/{owner}/{repo}/issues`: list, get, create
//! and comment. The last two are the package's only writes.

use serde::Deserialize;
use serde_json::{Map, Value};
use warden_guest::Failure;

use super::{Finish, Method, Plan, default_page, default_per_page};
use crate::url::ApiUrl;
use crate::validate;

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum State {
    #[default]
    Open,
    Closed,
    All,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Sort {
    #[default]
    Created,
    Updated,
    Comments,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Direction {
    Asc,
    #[default]
    Desc,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListIssues {
    owner: String,
    repo: String,
    #[serde(default)]
    state: State,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    assignee: Option<String>,
    #[serde(default)]
    creator: Option<String>,
    #[serde(default)]
    sort: Sort,
    #[serde(default)]
    direction: Direction,
    #[serde(default)]
    since: Option<String>,
    #[serde(default = "default_per_page")]
    per_page: u32,
    #[serde(default = "default_page")]
    page: u32,
}

pub(crate) fn list(input: ListIssues) -> Result<Plan, Failure> {
    validate::owner(&input.owner)?;
    validate::repo(&input.repo)?;
    validate::labels(&input.labels)?;
    if let Some(assignee) = &input.assignee {
        validate::assignee(assignee)?;
    }
    if let Some(creator) = &input.creator {
        validate::assignee(creator)?;
    }
    if let Some(since) = &input.since {
        validate::timestamp(since)?;
    }
    validate::pagination(input.per_page, input.page)?;
    let state = match input.state {
        State::Open => "open",
        State::Closed => "closed",
        State::All => "all",
    };
    let sort = match input.sort {
        Sort::Created => "created",
        Sort::Updated => "updated",
        Sort::Comments => "comments",
    };
    let direction = match input.direction {
        Direction::Asc => "asc",
        Direction::Desc => "desc",
    };
    let labels = (!input.labels.is_empty()).then(|| input.labels.join(","));
    let url = ApiUrl::repo(&input.owner, &input.repo)
        .segment("issues")
        .query("state", state)
        .query_opt("labels", labels)
        .query_opt("assignee", input.assignee)
        .query_opt("creator", input.creator)
        .query("sort", sort)
        .query("direction", direction)
        .query_opt("since", input.since)
        .query("per_page", input.per_page.to_string())
        .query("page", input.page.to_string())
        .build();
    Ok(Plan {
        method: Method::Get,
        url,
        body: None,
        finish: Finish::IssuePage {
            page: input.page,
            per_page: input.per_page,
        },
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetIssue {
    owner: String,
    repo: String,
    issue_number: u64,
}

pub(crate) fn get(input: GetIssue) -> Result<Plan, Failure> {
    validate::owner(&input.owner)?;
    validate::repo(&input.repo)?;
    validate::issue_number(input.issue_number)?;
    let url = ApiUrl::repo(&input.owner, &input.repo)
        .segment("issues")
        .segment(&input.issue_number.to_string())
        .build();
    Ok(Plan {
        method: Method::Get,
        url,
        body: None,
        finish: Finish::Issue,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateIssue {
    owner: String,
    repo: String,
    title: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    assignees: Vec<String>,
    #[serde(default)]
    milestone: Option<u64>,
}

pub(crate) fn create(input: CreateIssue) -> Result<Plan, Failure> {
    validate::owner(&input.owner)?;
    validate::repo(&input.repo)?;
    validate::title(&input.title)?;
    if let Some(body) = &input.body {
        validate::body(body, false)?;
    }
    validate::labels(&input.labels)?;
    validate::assignees(&input.assignees)?;
    if let Some(milestone) = input.milestone {
        validate::milestone(milestone)?;
    }
    let mut body = Map::new();
    body.insert("title".into(), Value::String(input.title));
    if let Some(text) = input.body.filter(|b| !b.is_empty()) {
        body.insert("body".into(), Value::String(text));
    }
    if !input.labels.is_empty() {
        body.insert("labels".into(), input.labels.into());
    }
    if !input.assignees.is_empty() {
        body.insert("assignees".into(), input.assignees.into());
    }
    if let Some(milestone) = input.milestone {
        body.insert("milestone".into(), milestone.into());
    }
    let url = ApiUrl::repo(&input.owner, &input.repo)
        .segment("issues")
        .build();
    Ok(Plan {
        method: Method::Post,
        url,
        body: Some(Value::Object(body)),
        finish: Finish::CreatedIssue,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommentIssue {
    owner: String,
    repo: String,
    issue_number: u64,
    body: String,
}

pub(crate) fn comment(input: CommentIssue) -> Result<Plan, Failure> {
    validate::owner(&input.owner)?;
    validate::repo(&input.repo)?;
    validate::issue_number(input.issue_number)?;
    validate::body(&input.body, true)?;
    let url = ApiUrl::repo(&input.owner, &input.repo)
        .segment("issues")
        .segment(&input.issue_number.to_string())
        .segment("comments")
        .build();
    Ok(Plan {
        method: Method::Post,
        url,
        body: Some(serde_json::json!({ "body": input.body })),
        finish: Finish::Comment {
            issue_number: input.issue_number,
        },
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::ops::tests::planned;
    use crate::ops::{Finish, Operation};

    #[test]
    fn list_issues_url_carries_filters_and_pagination() {
        let plan = planned(
            Operation::ListIssues,
            r#"{"owner":"o","repo":"r","state":"all","labels":["bug","good first issue"],"sort":"updated","direction":"asc","since":"2024-01-01T00:00:00Z","per_page":50,"page":2}"#,
        )
        .unwrap();
        assert_eq!(
            plan.url,
            "https://api.github.com/repos/o/r/issues?state=all&labels=bug%2Cgood%20first%20issue&sort=updated&direction=asc&since=2024-01-01T00%3A00%3A00Z&per_page=50&page=2"
        );
        assert_eq!(
            plan.finish,
            Finish::IssuePage {
                page: 2,
                per_page: 50
            }
        );
        let defaults = planned(Operation::ListIssues, r#"{"owner":"o","repo":"r"}"#).unwrap();
        assert_eq!(
            defaults.url,
            "https://api.github.com/repos/o/r/issues?state=open&sort=created&direction=desc&per_page=30&page=1"
        );
    }

    #[test]
    fn list_issues_validates_before_any_request() {
        let cases = [
            (
                r#"{"owner":"o","repo":"r","per_page":0}"#,
                "invalid_pagination",
            ),
            (
                r#"{"owner":"o","repo":"r","per_page":101}"#,
                "invalid_pagination",
            ),
            (r#"{"owner":"o","repo":"r","page":0}"#, "invalid_pagination"),
            (
                r#"{"owner":"o","repo":"r","labels":["a,b"]}"#,
                "invalid_label",
            ),
            (
                r#"{"owner":"o","repo":"r","assignee":"*"}"#,
                "invalid_login",
            ),
            (
                r#"{"owner":"o","repo":"r","since":"yesterday"}"#,
                "invalid_since",
            ),
            (
                r#"{"owner":"o","repo":"r","state":"merged"}"#,
                "invalid_input",
            ),
            (r#"{"owner":"o","repo":"r","per_page":-1}"#, "invalid_input"),
        ];
        for (input, code) in cases {
            assert_eq!(
                planned(Operation::ListIssues, input).unwrap_err().code,
                code,
                "{input}"
            );
        }
    }

    #[test]
    fn get_issue_url_and_number_bounds() {
        let plan = planned(
            Operation::GetIssue,
            r#"{"owner":"o","repo":"r","issue_number":42}"#,
        )
        .unwrap();
        assert_eq!(plan.url, "https://api.github.com/repos/o/r/issues/42");
        for n in ["0", "2147483648", "1.5", "\"1\""] {
            let input = format!(r#"{{"owner":"o","repo":"r","issue_number":{n}}}"#);
            let code = planned(Operation::GetIssue, &input).unwrap_err().code;
            assert!(
                code == "invalid_issue_number" || code == "invalid_input",
                "{n}: {code}"
            );
        }
    }

    #[test]
    fn create_issue_sends_only_given_fields() {
        let plan = planned(
            Operation::CreateIssue,
            r#"{"owner":"o","repo":"r","title":"Crash","body":""}"#,
        )
        .unwrap();
        assert_eq!(plan.url, "https://api.github.com/repos/o/r/issues");
        assert_eq!(plan.body, Some(json!({ "title": "Crash" })));
        let full = planned(
            Operation::CreateIssue,
            r#"{"owner":"o","repo":"r","title":"Crash","body":"steps","labels":["bug"],"assignees":["octocat"],"milestone":3}"#,
        )
        .unwrap();
        assert_eq!(
            full.body,
            Some(
                json!({ "title": "Crash", "body": "steps", "labels": ["bug"], "assignees": ["octocat"], "milestone": 3 })
            )
        );
        assert_eq!(
            planned(
                Operation::CreateIssue,
                r#"{"owner":"o","repo":"r","title":" "}"#
            )
            .unwrap_err()
            .code,
            "invalid_title"
        );
        assert_eq!(
            planned(Operation::CreateIssue, r#"{"owner":"o","repo":"r"}"#)
                .unwrap_err()
                .code,
            "invalid_input"
        );
    }

    #[test]
    fn comment_issue_requires_a_body() {
        let plan = planned(
            Operation::CommentIssue,
            r#"{"owner":"o","repo":"r","issue_number":7,"body":"Thanks!"}"#,
        )
        .unwrap();
        assert_eq!(
            plan.url,
            "https://api.github.com/repos/o/r/issues/7/comments"
        );
        assert_eq!(plan.body, Some(json!({ "body": "Thanks!" })));
        assert_eq!(plan.finish, Finish::Comment { issue_number: 7 });
        let empty = planned(
            Operation::CommentIssue,
            r#"{"owner":"o","repo":"r","issue_number":7,"body":"  "}"#,
        );
        assert_eq!(empty.unwrap_err().code, "invalid_body");
    }
}
