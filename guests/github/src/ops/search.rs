//! `github.search_issues`: `GET /search/issues?q=`.

use serde::Deserialize;
use warden_guest::Failure;

use super::{Finish, Method, Plan, default_page, default_per_page};
use crate::url::ApiUrl;
use crate::validate;

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Sort {
    Comments,
    Reactions,
    Interactions,
    Created,
    Updated,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Order {
    Asc,
    #[default]
    Desc,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchIssues {
    q: String,
    /// Best match when absent.
    #[serde(default)]
    sort: Option<Sort>,
    #[serde(default)]
    order: Order,
    #[serde(default = "default_per_page")]
    per_page: u32,
    #[serde(default = "default_page")]
    page: u32,
}

pub(crate) fn issues(input: SearchIssues) -> Result<Plan, Failure> {
    validate::query(&input.q)?;
    validate::search_pagination(input.per_page, input.page)?;
    let sort = input.sort.map(|s| match s {
        Sort::Comments => "comments",
        Sort::Reactions => "reactions",
        Sort::Interactions => "interactions",
        Sort::Created => "created",
        Sort::Updated => "updated",
    });
    // `order` only means something with `sort`.
    let order = sort.map(|_| match input.order {
        Order::Asc => "asc",
        Order::Desc => "desc",
    });
    let url = ApiUrl::new()
        .segment("search")
        .segment("issues")
        .query("q", input.q)
        .query_opt("sort", sort)
        .query_opt("order", order)
        .query("per_page", input.per_page.to_string())
        .query("page", input.page.to_string())
        .build();
    Ok(Plan {
        method: Method::Get,
        url,
        body: None,
        finish: Finish::Search {
            page: input.page,
            per_page: input.per_page,
        },
    })
}

#[cfg(test)]
mod tests {
    use crate::ops::Operation;
    use crate::ops::tests::planned;

    #[test]
    fn search_url_encodes_the_query() {
        let plan = planned(Operation::SearchIssues, r#"{"q":"is:issue repo:o/r label:\"good first issue\" crash","sort":"updated","per_page":10}"#).unwrap();
        assert_eq!(
            plan.url,
            "https://api.github.com/search/issues?q=is%3Aissue%20repo%3Ao%2Fr%20label%3A%22good%20first%20issue%22%20crash&sort=updated&order=desc&per_page=10&page=1"
        );
        let best = planned(Operation::SearchIssues, r#"{"q":"is:pr author:octocat"}"#).unwrap();
        assert_eq!(
            best.url,
            "https://api.github.com/search/issues?q=is%3Apr%20author%3Aoctocat&per_page=30&page=1"
        );
    }

    #[test]
    fn search_stays_inside_the_result_window() {
        assert_eq!(
            planned(
                Operation::SearchIssues,
                r#"{"q":"x","per_page":100,"page":11}"#
            )
            .unwrap_err()
            .code,
            "invalid_pagination"
        );
        assert_eq!(
            planned(Operation::SearchIssues, r#"{"q":""}"#)
                .unwrap_err()
                .code,
            "invalid_query"
        );
        assert_eq!(
            planned(Operation::SearchIssues, r#"{"q":"x","sort":"stars"}"#)
                .unwrap_err()
                .code,
            "invalid_input"
        );
    }
}
