//! `github.get_file_content`: `GET /repos/{owner}/{repo}/contents/{path}?ref=`.

use serde::Deserialize;
use warden_guest::Failure;

use super::{Finish, Method, Plan};
use crate::url::ApiUrl;
use crate::validate;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetFileContent {
    owner: String,
    repo: String,
    path: String,
    #[serde(default, rename = "ref")]
    git_ref: Option<String>,
}

pub(crate) fn get(input: GetFileContent) -> Result<Plan, Failure> {
    validate::owner(&input.owner)?;
    validate::repo(&input.repo)?;
    validate::path(&input.path)?;
    if let Some(git_ref) = &input.git_ref {
        validate::git_ref(git_ref)?;
    }
    let url = ApiUrl::repo(&input.owner, &input.repo)
        .segment("contents")
        .file_path(&input.path)
        .query_opt("ref", input.git_ref)
        .build();
    Ok(Plan {
        method: Method::Get,
        url,
        body: None,
        finish: Finish::File,
    })
}

#[cfg(test)]
mod tests {
    use crate::ops::Operation;
    use crate::ops::tests::planned;

    fn input(path: &str, git_ref: Option<&str>) -> String {
        let mut v = serde_json::json!({ "owner": "o", "repo": "r", "path": path });
        if let Some(r) = git_ref {
            v["ref"] = r.into();
        }
        v.to_string()
    }

    #[test]
    fn path_segments_are_percent_encoded() {
        let plan = planned(
            Operation::GetFileContent,
            &input("docs/My File#1?.md", Some("release/v1.2")),
        )
        .unwrap();
        assert_eq!(
            plan.url,
            "https://api.github.com/repos/o/r/contents/docs/My%20File%231%3F.md?ref=release%2Fv1.2"
        );
        let plain = planned(Operation::GetFileContent, &input("src/lib.rs", None)).unwrap();
        assert_eq!(
            plain.url,
            "https://api.github.com/repos/o/r/contents/src/lib.rs"
        );
    }

    #[test]
    fn unsafe_paths_are_rejected_before_any_request() {
        for path in [
            "../x",
            "/etc/passwd",
            "a/../../b",
            "a\\b",
            "a//b",
            "a/./b",
            "",
            "a\u{0}b",
            "a\nb",
            "dir/",
        ] {
            assert_eq!(
                planned(Operation::GetFileContent, &input(path, None))
                    .unwrap_err()
                    .code,
                "invalid_path",
                "{path:?}"
            );
        }
    }

    #[test]
    fn unsafe_refs_are_rejected_before_any_request() {
        for r in [
            "main..dev",
            "a b",
            "a~1",
            "a^2",
            "a:b",
            "a?",
            "a*",
            "a[0]",
            "a\\b",
            "-rf",
            "",
            "a@{0}",
        ] {
            assert_eq!(
                planned(Operation::GetFileContent, &input("README.md", Some(r)))
                    .unwrap_err()
                    .code,
                "invalid_ref",
                "{r:?}"
            );
        }
    }
}
