//! The package's schemas and this crate agree: every input schema property
//! is a field the runtime accepts, and every output the runtime produces has
//! exactly the shape its output schema describes (keys, required keys and
//! JSON types, recursively). The host validates both sides, so a drift
//! would surface as failed calls; this catches it at `cargo test`.

use serde_json::{Value, json};
use warden_guest::http::Response;

use crate::ops::tests::planned;
use crate::ops::{Finish, Operation};

fn schema(op: Operation, side: &str) -> Value {
    let text = match (op, side) {
        (Operation::GetRepo, "input") => {
            include_str!("../../../packages/github/schemas/github/get_repo.input.v1.json")
        }
        (Operation::GetRepo, _) => {
            include_str!("../../../packages/github/schemas/github/get_repo.output.v1.json")
        }
        (Operation::ListIssues, "input") => {
            include_str!("../../../packages/github/schemas/github/list_issues.input.v1.json")
        }
        (Operation::ListIssues, _) => {
            include_str!("../../../packages/github/schemas/github/list_issues.output.v1.json")
        }
        (Operation::GetIssue, "input") => {
            include_str!("../../../packages/github/schemas/github/get_issue.input.v1.json")
        }
        (Operation::GetIssue, _) => {
            include_str!("../../../packages/github/schemas/github/get_issue.output.v1.json")
        }
        (Operation::CreateIssue, "input") => {
            include_str!("../../../packages/github/schemas/github/create_issue.input.v1.json")
        }
        (Operation::CreateIssue, _) => {
            include_str!("../../../packages/github/schemas/github/create_issue.output.v1.json")
        }
        (Operation::CommentIssue, "input") => {
            include_str!("../../../packages/github/schemas/github/comment_issue.input.v1.json")
        }
        (Operation::CommentIssue, _) => {
            include_str!("../../../packages/github/schemas/github/comment_issue.output.v1.json")
        }
        (Operation::GetFileContent, "input") => {
            include_str!("../../../packages/github/schemas/github/get_file_content.input.v1.json")
        }
        (Operation::GetFileContent, _) => {
            include_str!("../../../packages/github/schemas/github/get_file_content.output.v1.json")
        }
        (Operation::SearchIssues, "input") => {
            include_str!("../../../packages/github/schemas/github/search_issues.input.v1.json")
        }
        (Operation::SearchIssues, _) => {
            include_str!("../../../packages/github/schemas/github/search_issues.output.v1.json")
        }
    };
    serde_json::from_str(text).expect("schema is JSON")
}

/// An input that sets every optional field, valid for the runtime.
fn full_input(op: Operation) -> Value {
    let ids = json!({ "owner": "octo-org", "repo": "hello.world" });
    let extra = match op {
        Operation::GetRepo => json!({}),
        Operation::ListIssues => json!({
            "state": "all", "labels": ["bug"], "assignee": "none", "creator": "octocat", "sort": "updated",
            "direction": "asc", "since": "2024-01-31T00:00:00Z", "per_page": 100, "page": 2
        }),
        Operation::GetIssue => json!({ "issue_number": 12 }),
        Operation::CreateIssue => json!({
            "title": "Crash on start", "body": "Steps", "labels": ["bug"], "assignees": ["octocat"], "milestone": 1
        }),
        Operation::CommentIssue => json!({ "issue_number": 12, "body": "Thanks" }),
        Operation::GetFileContent => json!({ "path": "src/lib.rs", "ref": "main" }),
        Operation::SearchIssues => {
            return json!({ "q": "is:issue crash", "sort": "updated", "order": "asc", "per_page": 10, "page": 3 });
        }
    };
    let mut input = ids;
    input
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    input
}

fn check(schema: &Value, value: &Value, at: &str) {
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
            _ => panic!("{at}: bad type"),
        };
        let actual = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        assert!(
            types.contains(&actual),
            "{at}: {actual} is not one of {types:?}"
        );
    }
    if let Some(expected) = schema.get("const") {
        assert_eq!(value, expected, "{at}");
    }
    if let (Some(props), Value::Object(map)) =
        (schema.get("properties").and_then(Value::as_object), value)
    {
        for (key, v) in map {
            let sub = props
                .get(key)
                .unwrap_or_else(|| panic!("{at}: `{key}` is not in the output schema"));
            check(sub, v, &format!("{at}.{key}"));
        }
        for key in schema["required"].as_array().into_iter().flatten() {
            assert!(
                map.contains_key(key.as_str().unwrap()),
                "{at}: required `{key}` missing"
            );
        }
        assert_eq!(
            schema["additionalProperties"], false,
            "{at}: objects are closed"
        );
    }
    if let (Some(items), Value::Array(values)) = (schema.get("items"), value) {
        for (i, v) in values.iter().enumerate() {
            check(items, v, &format!("{at}[{i}]"));
        }
    }
}

fn issue(number: u64) -> Value {
    json!({
        "number": number, "title": "Crash", "state": "closed", "state_reason": "completed",
        "user": { "login": "octocat" }, "labels": [{ "name": "bug" }], "assignees": [{ "login": "hubot" }],
        "milestone": { "number": 1, "title": "v1" }, "comments": 2, "locked": false,
        "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-02T00:00:00Z", "closed_at": "2024-01-03T00:00:00Z",
        "html_url": "https://github.com/o/r/issues/1", "repository_url": "https://api.github.com/repos/o/r",
        "pull_request": { "url": "x" }, "body": "text"
    })
}

fn provider_answer(finish: Finish) -> Value {
    match finish {
        Finish::Repo => json!({
            "full_name": "o/r", "name": "r", "owner": { "login": "o" }, "description": null, "private": true,
            "visibility": "private", "fork": false, "archived": false, "default_branch": "main",
            "html_url": "https://github.com/o/r", "homepage": "https://o.dev", "language": "Rust", "topics": [],
            "license": null, "stargazers_count": 1, "forks_count": 0, "open_issues_count": 3, "has_issues": true,
            "created_at": "2020-01-01T00:00:00Z", "updated_at": "2020-01-01T00:00:00Z", "pushed_at": "2020-01-01T00:00:00Z"
        }),
        Finish::IssuePage { .. } => json!([issue(1), issue(2)]),
        Finish::Issue | Finish::CreatedIssue => issue(3),
        Finish::Comment { .. } => json!({
            "id": 99, "html_url": "https://github.com/o/r/issues/1#issuecomment-99", "user": { "login": "octocat" },
            "created_at": "2024-01-01T00:00:00Z", "body": "Thanks"
        }),
        Finish::File => json!({
            "type": "file", "encoding": "base64", "size": 3, "path": "src/lib.rs", "sha": "abc",
            "content": "Zm9v\n", "html_url": "https://github.com/o/r/blob/main/src/lib.rs"
        }),
        Finish::Search { .. } => {
            json!({ "total_count": 2, "incomplete_results": false, "items": [issue(1), issue(2)] })
        }
    }
}

#[test]
fn input_schemas_list_exactly_the_fields_the_runtime_accepts() {
    for op in Operation::ALL {
        let input = full_input(op);
        let schema = schema(op, "input");
        let props = schema["properties"].as_object().unwrap();
        let given: Vec<&String> = input.as_object().unwrap().keys().collect();
        let mut listed: Vec<&String> = props.keys().collect();
        let mut sorted = given.clone();
        sorted.sort();
        listed.sort();
        assert_eq!(
            sorted, listed,
            "{op:?}: the full input must set every schema property"
        );
        assert_eq!(schema["additionalProperties"], false, "{op:?}");
        planned(op, &input.to_string()).unwrap_or_else(|f| panic!("{op:?}: {f}"));
        for required in schema["required"].as_array().unwrap() {
            let mut missing = input.clone();
            missing
                .as_object_mut()
                .unwrap()
                .remove(required.as_str().unwrap());
            assert!(
                planned(op, &missing.to_string()).is_err(),
                "{op:?}: `{required}` is required by the schema"
            );
        }
    }
}

#[test]
fn outputs_match_their_output_schemas() {
    for op in Operation::ALL {
        let plan = planned(op, &full_input(op).to_string()).unwrap();
        let response = Response {
            status: 200,
            headers: vec![(
                "link".into(),
                "<https://api.github.com/x?page=4>; rel=\"next\"".into(),
            )],
            body: serde_json::to_vec(&provider_answer(plan.finish)).unwrap(),
        };
        let output = plan
            .finish
            .output(&response)
            .unwrap_or_else(|f| panic!("{op:?}: {f}"));
        check(&schema(op, "output"), &output, op.name());
    }
}
