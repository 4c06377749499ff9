//! `github.get_repo`: `GET /repos/{owner}/{repo}`.

use serde::Deserialize;
use warden_guest::Failure;

use super::{Finish, Method, Plan};
use crate::url::ApiUrl;
use crate::validate;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetRepo {
    owner: String,
    repo: String,
}

pub(crate) fn get(input: GetRepo) -> Result<Plan, Failure> {
    validate::owner(&input.owner)?;
    validate::repo(&input.repo)?;
    Ok(Plan {
        method: Method::Get,
        url: ApiUrl::repo(&input.owner, &input.repo).build(),
        body: None,
        finish: Finish::Repo,
    })
}

#[cfg(test)]
mod tests {
    use crate::ops::Operation;
    use crate::ops::tests::planned;

    #[test]
    fn get_repo_url() {
        let plan = planned(Operation::GetRepo, r#"{"owner":"rust-lang","repo":"rust"}"#).unwrap();
        assert_eq!(plan.url, "https://api.github.com/repos/rust-lang/rust");
    }

    #[test]
    fn get_repo_refuses_smuggled_segments() {
        for input in [
            r#"{"owner":"o/../x","repo":"r"}"#,
            r#"{"owner":"o","repo":"r/issues"}"#,
            r#"{"owner":"o","repo":".."}"#,
            r#"{"owner":"o","repo":"r?x=1"}"#,
        ] {
            let code = planned(Operation::GetRepo, input).unwrap_err().code;
            assert!(
                code == "invalid_owner" || code == "invalid_repo",
                "{input}: {code}"
            );
        }
        assert_eq!(
            planned(Operation::GetRepo, r#"{"owner":"o"}"#)
                .unwrap_err()
                .code,
            "invalid_input"
        );
    }
}
