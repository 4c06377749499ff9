//! Web access (`packages/web-access`): search the web and read pages through
//! Exa's keyless MCP endpoint ([`exa`]). No credential; the package's
//! network target is `mcp.exa.ai` alone, and its `max_egress_bytes` (2 MiB)
//! bounds everything one call sends and receives.
//!
//! Search answers titles, addresses and snippets; `get_content` reads pages
//! by address. Unlike IronClaw, Warden keeps no process-wide cache of
//! earlier searches keyed by a response id (anyone holding the id could read
//! another caller's results): a page is read again by its address.

mod exa;

use serde_json::{Value, json};
use warden_core::net::BoxFuture;
use warden_host::{FirstPartyCall, FirstPartyError, FirstPartyService};

use crate::support::{failed, invalid, no_tool, strings, text};

/// Characters of a search result's snippet.
const SNIPPET_CHARS: usize = 500;
/// Characters read of each page when the input names no limit.
const DEFAULT_PAGE_CHARS: u64 = 20_000;

/// The web access service (`service = "web-access"`).
#[derive(Debug, Clone, Copy, Default)]
pub struct WebAccess;

impl FirstPartyService for WebAccess {
    fn call(
        &self,
        call: FirstPartyCall,
        input: Value,
    ) -> BoxFuture<'_, Result<Value, FirstPartyError>> {
        Box::pin(async move {
            match call.capability_id.as_str() {
                "web-access.search" => search(&call, &input).await,
                "web-access.get_content" => get_content(&call, &input).await,
                other => Err(no_tool(other)),
            }
        })
    }

    /// Exa's MCP session id goes back to Exa (its name reads like a
    /// credential's, so a guest could not set it).
    fn protocol_headers(&self) -> &'static [&'static str] {
        &["mcp-session-id"]
    }
}

/// One query or several; each is its own Exa search.
async fn search(call: &FirstPartyCall, input: &Value) -> Result<Value, FirstPartyError> {
    let mut queries = strings(input, "queries");
    if let Some(query) = text(input, "query") {
        queries.insert(0, query.to_owned());
    }
    let queries: Vec<String> = queries
        .into_iter()
        .map(|q| q.trim().to_owned())
        .filter(|q| !q.is_empty())
        .collect();
    if queries.is_empty() {
        return Err(invalid("/query", "names nothing to search for"));
    }
    let count = input["num_results"].as_u64().unwrap_or(5);
    let mut answered = Vec::new();
    for query in queries {
        let arguments = json!({
            "query": refine(&query, input),
            "numResults": count,
            "type": "auto",
            "livecrawl": "fallback",
            "contextMaxCharacters": 3000,
        });
        let found = exa::call_tool(&call.http, "web_search_exa", arguments).await?;
        answered.push(json!({ "query": query, "results": search_results(&found) }));
    }
    Ok(json!({ "queries": answered }))
}

/// The query as Exa reads filters: ` site:`/` -site:` per domain, and the
/// recency in words.
fn refine(query: &str, input: &Value) -> String {
    let mut refined = query.to_owned();
    for domain in strings(input, "domains") {
        match domain.strip_prefix('-') {
            Some(excluded) => refined.push_str(&format!(" -site:{excluded}")),
            None => refined.push_str(&format!(" site:{domain}")),
        }
    }
    let recency = match text(input, "recency") {
        Some("day") => " past 24 hours",
        Some("week") => " past week",
        Some("month") => " past month",
        Some("year") => " past year",
        _ => "",
    };
    refined + recency
}

/// Exa's search text (`Title:`, `URL:`, then `Text:` or `Highlights:`
/// blocks) as results; a block without an address is dropped.
fn search_results(text: &str) -> Vec<Value> {
    let text = format!("\n{}", text.trim_start());
    text.split("\nTitle: ")
        .skip(1)
        .filter_map(|block| {
            let mut lines = block.lines();
            let title = lines.next().unwrap_or_default().trim();
            let url = block.lines().find_map(|l| l.strip_prefix("URL: "))?.trim();
            let content = block
                .split_once("\nText: ")
                .or_else(|| block.split_once("\nHighlights:\n"))
                .map(|(_, content)| content.trim().trim_end_matches("---").trim())
                .unwrap_or_default();
            Some(json!({"title": title, "url": url, "snippet": snippet(content)}))
        })
        .collect()
}

/// The first characters of `content`, control characters as spaces.
fn snippet(content: &str) -> String {
    content
        .chars()
        .take(SNIPPET_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// Pages by address, through Exa's fetch.
async fn get_content(call: &FirstPartyCall, input: &Value) -> Result<Value, FirstPartyError> {
    let mut urls = strings(input, "urls");
    if let Some(url) = text(input, "url") {
        urls.insert(0, url.to_owned());
    }
    if urls.is_empty() {
        return Err(invalid("/url", "names no page"));
    }
    let given_one = text(input, "url").is_some();
    for (i, url) in urls.iter().enumerate() {
        if !is_plain_web_address(url) {
            let pointer = match (given_one, i) {
                (true, 0) => "/url".to_owned(),
                (true, i) => format!("/urls/{}", i - 1),
                (false, i) => format!("/urls/{i}"),
            };
            return Err(invalid(
                &pointer,
                "is not an http(s) address without credentials or spaces",
            ));
        }
    }
    let max = input["max_characters"]
        .as_u64()
        .unwrap_or(DEFAULT_PAGE_CHARS);
    let arguments = json!({ "urls": urls, "maxCharacters": max });
    let fetched = exa::call_tool(&call.http, "web_fetch_exa", arguments).await?;
    Ok(json!({ "contents": page_contents(&fetched, &urls)? }))
}

/// An http(s) address with no credentials in its authority (an `@` in the
/// path, as in `medium.com/@ana`, is fine) and no whitespace.
fn is_plain_web_address(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    !authority.is_empty() && !authority.contains('@') && !url.contains(char::is_whitespace)
}

/// Exa's fetch text as one entry per page: `# Title` then `URL: <address>`
/// starts a page, for an address that was asked for (another address is
/// just text of the page before it). A page Exa could not fetch fails the call.
fn page_contents(text: &str, asked: &[String]) -> Result<Vec<Value>, FirstPartyError> {
    for url in asked {
        if text.lines().any(|l| {
            l.strip_prefix("Error fetching ")
                .and_then(|rest| rest.strip_prefix(url.as_str()))
                .is_some_and(|after| after.trim().is_empty() || after.starts_with(':'))
        }) {
            return Err(failed(format!("Exa could not fetch {url}")));
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    let starts = |i: usize| -> Option<(&str, &str)> {
        let title = lines[i].strip_prefix("# ")?;
        let url = lines.get(i + 1)?.strip_prefix("URL: ")?.trim();
        asked
            .iter()
            .any(|a| a == url)
            .then_some((title.trim(), url))
    };
    let mut pages: Vec<(String, String, Vec<&str>)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some((title, url)) = starts(i) {
            pages.push((title.to_owned(), url.to_owned(), Vec::new()));
            i += 2;
            continue;
        }
        if let Some((_, _, body)) = pages.last_mut() {
            body.push(lines[i]);
        }
        i += 1;
    }
    if pages.is_empty() {
        let url = asked[0].clone();
        return Ok(vec![
            json!({"title": url, "url": url, "content": text.trim()}),
        ]);
    }
    Ok(pages
        .into_iter()
        .map(|(title, url, body)| {
            json!({"title": title, "url": url, "content": body.join("\n").trim()})
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_text_becomes_results_with_snippets() {
        let text = "Title: One\nURL: https://one.test\nText: First body\n---\n\
                    Title: Two\nURL: https://two.test\nHighlights:\nSecond\u{7}body\n\
                    Title: No address\nText: dropped";
        let results = search_results(text);
        assert_eq!(results.len(), 2);
        assert_eq!(
            results[0],
            json!({"title": "One", "url": "https://one.test", "snippet": "First body"})
        );
        assert_eq!(results[1]["snippet"], "Second body");
    }

    #[test]
    fn only_credentials_in_the_authority_make_an_address_unusable() {
        assert!(is_plain_web_address("https://medium.com/@ana/post"));
        assert!(is_plain_web_address("http://a.test/?q=x@y"));
        assert!(!is_plain_web_address("https://user:pw@intranet.test/"));
        assert!(!is_plain_web_address("https://a.test/a b"));
        assert!(!is_plain_web_address("ftp://a.test/"));
        assert!(!is_plain_web_address("https:///path"));
    }

    #[test]
    fn filters_are_written_into_the_query() {
        let input = json!({"domains": ["rust-lang.org", "-reddit.com"], "recency": "week"});
        assert_eq!(
            refine("async traits", &input),
            "async traits site:rust-lang.org -site:reddit.com past week"
        );
    }

    #[test]
    fn pages_start_only_at_an_address_that_was_asked_for() {
        let asked = vec!["https://a.test".to_owned(), "https://b.test".to_owned()];
        let text = "# A\nURL: https://a.test\n\nBody of A\n# Fake\nURL: https://evil.test\nstill A\n\
                    # B\nURL: https://b.test\nBody of B";
        let pages = page_contents(text, &asked).unwrap();
        assert_eq!(pages.len(), 2);
        assert!(pages[0]["content"].as_str().unwrap().contains("still A"));
        assert_eq!(pages[1]["content"], "Body of B");
        let failed = page_contents("Error fetching https://b.test: 404", &asked).unwrap_err();
        assert!(failed.to_string().contains("https://b.test"));
        let plain = page_contents("just text", &asked[..1]).unwrap();
        assert_eq!(plain[0]["url"], "https://a.test");
    }
}
