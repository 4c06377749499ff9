//! GitHub's JSON reduced to what a model needs. Raw shapes are read leniently
//! (unknown provider fields are ignored, optional ones may be absent or
//! null); outputs are small, typed and bounded: long texts are truncated and
//! flagged, never passed through whole.

use serde::{Deserialize, Serialize};
use warden_guest::Failure;

/// Longest repository description returned (characters).
pub(crate) const DESCRIPTION_MAX: usize = 1_000;
/// Longest issue body returned by `get_issue` (characters).
pub(crate) const ISSUE_BODY_MAX: usize = 8_000;

/// `text` cut to `max` characters, and whether anything was cut.
pub(crate) fn truncate(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (text[..at].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

pub(crate) fn unexpected() -> Failure {
    Failure::operation_failed(
        "unexpected_response",
        "GitHub answered with an unexpected shape",
    )
}

/// Parse a provider body; a shape mismatch is `unexpected_response`, with
/// no provider text in the message.
pub(crate) fn parse<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Failure> {
    serde_json::from_slice(body).map_err(|_| unexpected())
}

#[derive(Deserialize)]
pub(crate) struct RawUser {
    login: String,
}

fn login(user: Option<RawUser>) -> Option<String> {
    user.map(|u| u.login)
}

/// Issue labels come as objects, and in some payloads as plain names.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum RawLabel {
    Name(String),
    Object { name: Option<String> },
}

fn label_names(labels: Vec<RawLabel>) -> Vec<String> {
    labels
        .into_iter()
        .filter_map(|l| match l {
            RawLabel::Name(name) => Some(name),
            RawLabel::Object { name } => name,
        })
        .collect()
}

#[derive(Deserialize)]
pub(crate) struct RawMilestone {
    number: u64,
    title: String,
}

#[derive(Deserialize)]
pub(crate) struct RawIssue {
    number: u64,
    title: String,
    state: String,
    #[serde(default)]
    state_reason: Option<String>,
    #[serde(default)]
    user: Option<RawUser>,
    #[serde(default)]
    labels: Vec<RawLabel>,
    #[serde(default)]
    assignees: Option<Vec<RawUser>>,
    #[serde(default)]
    milestone: Option<RawMilestone>,
    #[serde(default)]
    comments: u64,
    #[serde(default)]
    locked: bool,
    created_at: String,
    updated_at: String,
    #[serde(default)]
    closed_at: Option<String>,
    html_url: String,
    #[serde(default)]
    repository_url: Option<String>,
    #[serde(default)]
    pull_request: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    body: Option<String>,
}

/// One issue or pull request in a list.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct IssueSummary {
    number: u64,
    title: String,
    state: String,
    user: Option<String>,
    labels: Vec<String>,
    comments: u64,
    created_at: String,
    updated_at: String,
    html_url: String,
    is_pull_request: bool,
    /// `owner/repo`, on search results (which span repositories).
    #[serde(skip_serializing_if = "Option::is_none")]
    repository: Option<String>,
}

/// `https://api.github.com/repos/o/r` -> `o/r`.
fn repository_name(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://api.github.com/repos/")?;
    let mut parts = rest.split('/');
    let (owner, repo) = (parts.next()?, parts.next()?);
    (parts.next().is_none() && !owner.is_empty() && !repo.is_empty())
        .then(|| format!("{owner}/{repo}"))
}

impl IssueSummary {
    pub(crate) fn from_raw(raw: RawIssue, with_repository: bool) -> Self {
        let repository = if with_repository {
            raw.repository_url.as_deref().and_then(repository_name)
        } else {
            None
        };
        IssueSummary {
            number: raw.number,
            title: raw.title,
            state: raw.state,
            user: login(raw.user),
            labels: label_names(raw.labels),
            comments: raw.comments,
            created_at: raw.created_at,
            updated_at: raw.updated_at,
            html_url: raw.html_url,
            is_pull_request: raw.pull_request.is_some(),
            repository,
        }
    }
}

/// One issue with its (bounded) body.
#[derive(Debug, Serialize)]
pub(crate) struct IssueDetail {
    #[serde(flatten)]
    summary: IssueSummary,
    state_reason: Option<String>,
    assignees: Vec<String>,
    milestone: Option<Milestone>,
    locked: bool,
    closed_at: Option<String>,
    body: String,
    body_truncated: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct Milestone {
    number: u64,
    title: String,
}

impl IssueDetail {
    pub(crate) fn from_raw(mut raw: RawIssue) -> Self {
        let (body, body_truncated) = truncate(
            raw.body.take().as_deref().unwrap_or_default(),
            ISSUE_BODY_MAX,
        );
        let assignees = raw
            .assignees
            .take()
            .unwrap_or_default()
            .into_iter()
            .map(|u| u.login)
            .collect();
        let milestone = raw.milestone.take().map(|m| Milestone {
            number: m.number,
            title: m.title,
        });
        let (state_reason, locked, closed_at) =
            (raw.state_reason.take(), raw.locked, raw.closed_at.take());
        IssueDetail {
            summary: IssueSummary::from_raw(raw, false),
            state_reason,
            assignees,
            milestone,
            locked,
            closed_at,
            body,
            body_truncated,
        }
    }
}

/// A page of a list, with where to go next.
#[derive(Debug, Serialize)]
pub(crate) struct IssuePage {
    page: u32,
    per_page: u32,
    /// The next page number when GitHub's `Link` header offers one.
    next_page: Option<u32>,
    issues: Vec<IssueSummary>,
}

/// Whether a `Link` header has a `rel="next"` entry.
pub(crate) fn has_next(link: Option<&str>) -> bool {
    link.is_some_and(|link| {
        link.split(',')
            .any(|entry| entry.split(';').skip(1).any(|p| p.trim() == "rel=\"next\""))
    })
}

pub(crate) fn issue_page(
    body: &[u8],
    link: Option<&str>,
    page: u32,
    per_page: u32,
) -> Result<IssuePage, Failure> {
    let raw: Vec<RawIssue> = parse(body)?;
    Ok(IssuePage {
        page,
        per_page,
        next_page: has_next(link).then_some(page + 1),
        issues: raw
            .into_iter()
            .map(|i| IssueSummary::from_raw(i, false))
            .collect(),
    })
}

#[derive(Deserialize)]
struct RawSearch {
    total_count: u64,
    #[serde(default)]
    incomplete_results: bool,
    items: Vec<RawIssue>,
}

/// A page of search results.
#[derive(Debug, Serialize)]
pub(crate) struct SearchPage {
    total_count: u64,
    incomplete_results: bool,
    page: u32,
    per_page: u32,
    next_page: Option<u32>,
    items: Vec<IssueSummary>,
}

pub(crate) fn search_page(
    body: &[u8],
    link: Option<&str>,
    page: u32,
    per_page: u32,
) -> Result<SearchPage, Failure> {
    let raw: RawSearch = parse(body)?;
    Ok(SearchPage {
        total_count: raw.total_count,
        incomplete_results: raw.incomplete_results,
        page,
        per_page,
        next_page: has_next(link).then_some(page + 1),
        items: raw
            .items
            .into_iter()
            .map(|i| IssueSummary::from_raw(i, true))
            .collect(),
    })
}

#[derive(Deserialize)]
struct RawLicense {
    #[serde(default)]
    spdx_id: Option<String>,
}

#[derive(Deserialize)]
struct RawRepo {
    full_name: String,
    owner: RawUser,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    private: bool,
    #[serde(default)]
    visibility: Option<String>,
    #[serde(default)]
    fork: bool,
    #[serde(default)]
    archived: bool,
    default_branch: String,
    html_url: String,
    #[serde(default)]
    homepage: Option<String>,
    #[serde(default)]
    language: Option<String>,
    #[serde(default)]
    topics: Vec<String>,
    #[serde(default)]
    license: Option<RawLicense>,
    #[serde(default)]
    stargazers_count: u64,
    #[serde(default)]
    forks_count: u64,
    #[serde(default)]
    open_issues_count: u64,
    #[serde(default)]
    has_issues: bool,
    created_at: String,
    updated_at: String,
    #[serde(default)]
    pushed_at: Option<String>,
}

/// A repository.
#[derive(Debug, Serialize)]
pub(crate) struct Repo {
    full_name: String,
    owner: String,
    name: String,
    description: Option<String>,
    private: bool,
    visibility: Option<String>,
    fork: bool,
    archived: bool,
    default_branch: String,
    html_url: String,
    homepage: Option<String>,
    language: Option<String>,
    topics: Vec<String>,
    license: Option<String>,
    stargazers_count: u64,
    forks_count: u64,
    /// GitHub counts open pull requests here too.
    open_issues_count: u64,
    has_issues: bool,
    created_at: String,
    updated_at: String,
    pushed_at: Option<String>,
}

pub(crate) fn repo(body: &[u8]) -> Result<Repo, Failure> {
    let raw: RawRepo = parse(body)?;
    Ok(Repo {
        full_name: raw.full_name,
        owner: raw.owner.login,
        name: raw.name,
        description: raw.description.map(|d| truncate(&d, DESCRIPTION_MAX).0),
        private: raw.private,
        visibility: raw.visibility,
        fork: raw.fork,
        archived: raw.archived,
        default_branch: raw.default_branch,
        html_url: raw.html_url,
        homepage: raw.homepage.filter(|h| !h.is_empty()),
        language: raw.language,
        topics: raw.topics,
        license: raw.license.and_then(|l| l.spdx_id),
        stargazers_count: raw.stargazers_count,
        forks_count: raw.forks_count,
        open_issues_count: raw.open_issues_count,
        has_issues: raw.has_issues,
        created_at: raw.created_at,
        updated_at: raw.updated_at,
        pushed_at: raw.pushed_at,
    })
}

pub(crate) fn issue(body: &[u8]) -> Result<IssueDetail, Failure> {
    parse::<RawIssue>(body).map(IssueDetail::from_raw)
}

pub(crate) fn created_issue(body: &[u8]) -> Result<IssueSummary, Failure> {
    parse::<RawIssue>(body).map(|raw| IssueSummary::from_raw(raw, false))
}

#[derive(Deserialize)]
struct RawComment {
    id: u64,
    html_url: String,
    #[serde(default)]
    user: Option<RawUser>,
    created_at: String,
}

/// A comment just created.
#[derive(Debug, Serialize)]
pub(crate) struct Comment {
    id: u64,
    issue_number: u64,
    user: Option<String>,
    html_url: String,
    created_at: String,
}

pub(crate) fn comment(body: &[u8], issue_number: u64) -> Result<Comment, Failure> {
    let raw: RawComment = parse(body)?;
    Ok(Comment {
        id: raw.id,
        issue_number,
        user: login(raw.user),
        html_url: raw.html_url,
        created_at: raw.created_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issue_json(number: u64, pr: bool) -> serde_json::Value {
        let mut v = json!({
            "url": "https://api.github.com/repos/o/r/issues/1",
            "repository_url": "https://api.github.com/repos/o/r",
            "number": number,
            "title": "Crash",
            "state": "open",
            "state_reason": null,
            "user": { "login": "octocat", "id": 1, "avatar_url": "https://x" },
            "labels": [{ "id": 1, "name": "bug", "color": "f00" }, "plain"],
            "assignees": [{ "login": "hubot" }],
            "milestone": null,
            "comments": 3,
            "locked": false,
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-02T00:00:00Z",
            "closed_at": null,
            "html_url": "https://github.com/o/r/issues/1",
            "body": "b".repeat(20_000),
            "reactions": { "total_count": 0 }
        });
        if pr {
            v["pull_request"] = json!({ "url": "https://api.github.com/repos/o/r/pulls/1" });
        }
        v
    }

    #[test]
    fn list_keeps_only_what_a_model_needs() {
        let body = serde_json::to_vec(&json!([issue_json(1, false), issue_json(2, true)])).unwrap();
        let link = r#"<https://api.github.com/repositories/1/issues?page=3>; rel="next", <https://api.github.com/repositories/1/issues?page=9>; rel="last""#;
        let page = issue_page(&body, Some(link), 2, 30).unwrap();
        let out = serde_json::to_value(&page).unwrap();
        assert_eq!(out["next_page"], 3);
        assert_eq!(out["issues"][0]["labels"], json!(["bug", "plain"]));
        assert_eq!(out["issues"][0]["user"], "octocat");
        assert_eq!(out["issues"][0]["is_pull_request"], false);
        assert_eq!(out["issues"][1]["is_pull_request"], true);
        let keys: Vec<_> = out["issues"][0]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert!(
            !keys
                .iter()
                .any(|k| k == "body" || k == "reactions" || k == "repository"),
            "{keys:?}"
        );
        assert!(serde_json::to_string(&out).unwrap().len() < 1_000);
    }

    #[test]
    fn last_page_has_no_next() {
        let body = b"[]";
        assert_eq!(issue_page(body, None, 1, 30).unwrap().next_page, None);
        let link = r#"<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=1>; rel="first""#;
        assert_eq!(issue_page(body, Some(link), 2, 30).unwrap().next_page, None);
    }

    #[test]
    fn issue_body_is_truncated_and_flagged() {
        let body = serde_json::to_vec(&issue_json(7, false)).unwrap();
        let out = serde_json::to_value(issue(&body).unwrap()).unwrap();
        assert_eq!(out["number"], 7);
        assert_eq!(
            out["body"].as_str().unwrap().chars().count(),
            ISSUE_BODY_MAX
        );
        assert_eq!(out["body_truncated"], true);
        assert_eq!(out["assignees"], json!(["hubot"]));
    }

    #[test]
    fn search_items_name_their_repository() {
        let body = serde_json::to_vec(&json!({
            "total_count": 1, "incomplete_results": false, "items": [issue_json(5, false)]
        }))
        .unwrap();
        let out = serde_json::to_value(search_page(&body, None, 1, 30).unwrap()).unwrap();
        assert_eq!(out["items"][0]["repository"], "o/r");
        assert_eq!(out["total_count"], 1);
    }

    #[test]
    fn repo_is_compacted() {
        let body = serde_json::to_vec(&json!({
            "id": 1, "full_name": "o/r", "name": "r", "owner": { "login": "o" },
            "description": "d".repeat(5_000), "private": false, "visibility": "public",
            "default_branch": "main", "html_url": "https://github.com/o/r", "homepage": "",
            "topics": ["wasm"], "license": { "spdx_id": "MIT" }, "stargazers_count": 5,
            "created_at": "2020-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
            "pushed_at": null, "permissions": { "admin": true }
        }))
        .unwrap();
        let out = serde_json::to_value(repo(&body).unwrap()).unwrap();
        assert_eq!(out["license"], "MIT");
        assert_eq!(out["homepage"], serde_json::Value::Null);
        assert_eq!(out["description"].as_str().unwrap().len(), DESCRIPTION_MAX);
        assert!(out.get("permissions").is_none());
    }

    #[test]
    fn unexpected_shapes_do_not_echo_the_body() {
        let failure = repo(b"{\"message\":\"secret backend detail\"}").unwrap_err();
        assert_eq!(failure.code, "unexpected_response");
        assert!(!failure.message.unwrap().contains("secret"));
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), ("hé".to_owned(), true));
        assert_eq!(truncate("hé", 2), ("hé".to_owned(), false));
    }
}
