//! Validation of every identifier that reaches a GitHub URL or body, run
//! before any request. The input schemas say the same things, but schemas are
//! not a security boundary: these checks are.
//!
//! Each check returns an `input` failure with a stable code naming the field
//! class (`invalid_owner`, `invalid_path`, ...) and a message stating the rule,
//! never the offending value.

use warden_guest::Failure;

/// Longest GitHub user or organization login.
pub(crate) const OWNER_MAX: usize = 39;
/// Longest GitHub repository name.
pub(crate) const REPO_MAX: usize = 100;
/// Longest file path we send (bytes).
pub(crate) const PATH_MAX: usize = 1024;
/// Longest git ref (branch, tag or commit SHA) we send (bytes).
pub(crate) const REF_MAX: usize = 255;
/// Largest issue number we accept (GitHub numbers fit in a signed 32-bit int).
pub(crate) const ISSUE_NUMBER_MAX: u64 = i32::MAX as u64;
/// GitHub's largest page size.
pub(crate) const PER_PAGE_MAX: u32 = 100;
/// Highest page we ask for on list endpoints.
pub(crate) const PAGE_MAX: u32 = 1000;
/// GitHub search returns at most this many results per query.
pub(crate) const SEARCH_RESULT_WINDOW: u32 = 1000;
/// Longest label name GitHub stores.
pub(crate) const LABEL_MAX: usize = 50;
/// Most labels per filter or per new issue.
pub(crate) const LABELS_MAX: usize = 20;
/// GitHub allows at most ten assignees per issue.
pub(crate) const ASSIGNEES_MAX: usize = 10;
/// Longest issue title GitHub accepts (characters).
pub(crate) const TITLE_MAX: usize = 256;
/// Longest issue or comment body GitHub accepts (characters).
pub(crate) const BODY_MAX: usize = 65_536;
/// Longest search query GitHub accepts (characters).
pub(crate) const QUERY_MAX: usize = 256;

fn bad(code: &str, message: impl Into<String>) -> Failure {
    Failure::input(code, message)
}

/// A user or organization login: 1..=39 ASCII letters, digits or hyphens, not
/// starting with a hyphen. (Legacy logins may contain doubled or trailing
/// hyphens, so those are allowed.)
pub(crate) fn owner(value: &str) -> Result<(), Failure> {
    login(value, "invalid_owner", "owner")
}

/// An assignee or creator login, by the same rule as [`owner`].
pub(crate) fn assignee(value: &str) -> Result<(), Failure> {
    login(value, "invalid_login", "a login")
}

fn login(value: &str, code: &str, what: &str) -> Result<(), Failure> {
    let ok = (1..=OWNER_MAX).contains(&value.len())
        && !value.starts_with('-')
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(bad(
            code,
            format!(
                "{what} must be 1-{OWNER_MAX} ASCII letters, digits or hyphens, not starting with a hyphen"
            ),
        ))
    }
}

/// A repository name: 1..=100 ASCII letters, digits, `.`, `-` or `_`, and
/// not `.` or `..`.
pub(crate) fn repo(value: &str) -> Result<(), Failure> {
    let ok = (1..=REPO_MAX).contains(&value.len())
        && value != "."
        && value != ".."
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    if ok {
        Ok(())
    } else {
        Err(bad(
            "invalid_repo",
            format!(
                "repo must be 1-{REPO_MAX} ASCII letters, digits, '.', '-' or '_' (not '.' or '..'), without the owner"
            ),
        ))
    }
}

/// A file path inside a repository: relative (`src/lib.rs`), `/`-separated,
/// at most 1024 bytes, no empty, `.` or `..` segment, no backslash, no
/// control character.
pub(crate) fn path(value: &str) -> Result<(), Failure> {
    let rule = "path must be a relative file path like `src/lib.rs`: no leading or trailing '/', no empty, '.' or '..' segment, no backslash or control character, at most 1024 bytes";
    if value.is_empty() || value.len() > PATH_MAX || value.starts_with('/') || value.contains('\\')
    {
        return Err(bad("invalid_path", rule));
    }
    if value.chars().any(char::is_control) {
        return Err(bad("invalid_path", rule));
    }
    if value
        .split('/')
        .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return Err(bad("invalid_path", rule));
    }
    Ok(())
}

/// A git ref (branch, tag or commit SHA) by `git check-ref-format` rules:
/// at most 255 bytes; no `..`, `@{`, space, control character or any of
/// `~^:?*[\`; no leading `-` or `/`, no trailing `/` or `.`, no `//`; no
/// component starting with `.` or ending with `.lock`; not `@`.
pub(crate) fn git_ref(value: &str) -> Result<(), Failure> {
    let rule = "ref must be a branch, tag or commit SHA: no '..', '@{', spaces, control characters or any of ~^:?*[\\, no leading '-' or '/', no trailing '/' or '.', at most 255 bytes";
    let forbidden_char = |c: char| c.is_control() || c == ' ' || "~^:?*[\\".contains(c);
    let ok = !value.is_empty()
        && value.len() <= REF_MAX
        && value != "@"
        && !value.contains("..")
        && !value.contains("@{")
        && !value.contains("//")
        && !value.starts_with('-')
        && !value.starts_with('/')
        && !value.ends_with('/')
        && !value.ends_with('.')
        && !value.chars().any(forbidden_char)
        && value
            .split('/')
            .all(|part| !part.starts_with('.') && !part.ends_with(".lock"));
    if ok {
        Ok(())
    } else {
        Err(bad("invalid_ref", rule))
    }
}

/// An issue or pull request number: 1..=2^31-1.
pub(crate) fn issue_number(value: u64) -> Result<(), Failure> {
    if (1..=ISSUE_NUMBER_MAX).contains(&value) {
        Ok(())
    } else {
        Err(bad(
            "invalid_issue_number",
            format!("issue_number must be between 1 and {ISSUE_NUMBER_MAX}"),
        ))
    }
}

/// A milestone number, by the same rule as [`issue_number`].
pub(crate) fn milestone(value: u64) -> Result<(), Failure> {
    if (1..=ISSUE_NUMBER_MAX).contains(&value) {
        Ok(())
    } else {
        Err(bad(
            "invalid_milestone",
            format!("milestone must be between 1 and {ISSUE_NUMBER_MAX}"),
        ))
    }
}

/// `per_page` in 1..=100 and `page` in 1..=1000.
pub(crate) fn pagination(per_page: u32, page: u32) -> Result<(), Failure> {
    if !(1..=PER_PAGE_MAX).contains(&per_page) {
        return Err(bad(
            "invalid_pagination",
            format!("per_page must be between 1 and {PER_PAGE_MAX}"),
        ));
    }
    if !(1..=PAGE_MAX).contains(&page) {
        return Err(bad(
            "invalid_pagination",
            format!("page must be between 1 and {PAGE_MAX}"),
        ));
    }
    Ok(())
}

/// Search pagination: as [`pagination`], and the page must lie inside the
/// first 1000 results, which is all GitHub search returns.
pub(crate) fn search_pagination(per_page: u32, page: u32) -> Result<(), Failure> {
    pagination(per_page, page)?;
    if u64::from(per_page) * u64::from(page - 1) >= u64::from(SEARCH_RESULT_WINDOW) {
        return Err(bad(
            "invalid_pagination",
            format!(
                "GitHub search returns only the first {SEARCH_RESULT_WINDOW} results: lower page or narrow the query"
            ),
        ));
    }
    Ok(())
}

/// A label name: 1..=50 characters, no comma (labels are joined with commas
/// in filters), no control character, not only whitespace.
pub(crate) fn label(value: &str) -> Result<(), Failure> {
    let ok = !value.trim().is_empty()
        && value.chars().count() <= LABEL_MAX
        && !value.contains(',')
        && !value.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(bad(
            "invalid_label",
            format!(
                "each label must be 1-{LABEL_MAX} characters, without commas or control characters"
            ),
        ))
    }
}

/// A list of labels: at most 20, each valid, no duplicates.
pub(crate) fn labels(values: &[String]) -> Result<(), Failure> {
    if values.len() > LABELS_MAX {
        return Err(bad("invalid_label", format!("at most {LABELS_MAX} labels")));
    }
    values.iter().try_for_each(|l| label(l))?;
    if has_duplicates(values) {
        return Err(bad("invalid_label", "labels must not repeat"));
    }
    Ok(())
}

/// A list of assignee logins: at most 10, each valid, no duplicates.
pub(crate) fn assignees(values: &[String]) -> Result<(), Failure> {
    if values.len() > ASSIGNEES_MAX {
        return Err(bad(
            "invalid_login",
            format!("GitHub allows at most {ASSIGNEES_MAX} assignees"),
        ));
    }
    values.iter().try_for_each(|a| assignee(a))?;
    if has_duplicates(values) {
        return Err(bad("invalid_login", "assignees must not repeat"));
    }
    Ok(())
}

fn has_duplicates(values: &[String]) -> bool {
    values
        .iter()
        .enumerate()
        .any(|(i, v)| values[..i].iter().any(|w| w.eq_ignore_ascii_case(v)))
}

/// An issue title: not blank, at most 256 characters, no control characters.
pub(crate) fn title(value: &str) -> Result<(), Failure> {
    let ok = !value.trim().is_empty()
        && value.chars().count() <= TITLE_MAX
        && !value.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(bad(
            "invalid_title",
            format!("title must be 1-{TITLE_MAX} characters on one line"),
        ))
    }
}

/// An issue or comment body: at most 65536 characters; `required` bodies
/// (comments) must not be blank.
pub(crate) fn body(value: &str, required: bool) -> Result<(), Failure> {
    if required && value.trim().is_empty() {
        return Err(bad("invalid_body", "body must not be empty"));
    }
    if value.chars().count() > BODY_MAX {
        return Err(bad(
            "invalid_body",
            format!("body must be at most {BODY_MAX} characters"),
        ));
    }
    if value
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(bad(
            "invalid_body",
            "body must not contain control characters other than newlines and tabs",
        ));
    }
    Ok(())
}

/// A search query: not blank, at most 256 characters, no control characters.
pub(crate) fn query(value: &str) -> Result<(), Failure> {
    let ok = !value.trim().is_empty()
        && value.chars().count() <= QUERY_MAX
        && !value.chars().any(char::is_control);
    if ok {
        Ok(())
    } else {
        Err(bad(
            "invalid_query",
            format!("q must be 1-{QUERY_MAX} characters on one line"),
        ))
    }
}

/// An ISO 8601 UTC timestamp `YYYY-MM-DDTHH:MM:SSZ`, as GitHub's `since`.
pub(crate) fn timestamp(value: &str) -> Result<(), Failure> {
    let b = value.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let two = |i: usize| u32::from(b[i] - b'0') * 10 + u32::from(b[i + 1] - b'0');
    let ok = b.len() == 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[19] == b'Z'
        && (1..=12).contains(&two(5))
        && (1..=31).contains(&two(8))
        && two(11) <= 23
        && two(14) <= 59
        && two(17) <= 60;
    if ok {
        Ok(())
    } else {
        Err(bad(
            "invalid_since",
            "since must be a UTC timestamp like 2024-01-31T00:00:00Z",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Result<(), Failure>) -> String {
        r.expect_err("expected a failure").code
    }

    #[test]
    fn owner_follows_github_login_rules() {
        for ok in ["octocat", "a", "rust-lang", "A1-b2", &"x".repeat(39)] {
            owner(ok).unwrap();
        }
        for bad in [
            "",
            "-lead",
            "has space",
            "dot.ted",
            "under_score",
            "slash/y",
            "ünï",
            &"x".repeat(40),
            "a%2e",
        ] {
            assert_eq!(code(owner(bad)), "invalid_owner", "{bad:?}");
        }
    }

    #[test]
    fn repo_follows_github_name_rules() {
        for ok in [
            "warden",
            "a.b",
            "my_repo-2",
            ".github",
            "a..b",
            &"r".repeat(100),
        ] {
            repo(ok).unwrap();
        }
        for bad in [
            "",
            ".",
            "..",
            "o/r",
            "a b",
            "a\\b",
            "a?b",
            "a#b",
            &"r".repeat(101),
        ] {
            assert_eq!(code(repo(bad)), "invalid_repo", "{bad:?}");
        }
    }

    #[test]
    fn path_rejects_traversal_and_absolute_paths() {
        for ok in [
            "README.md",
            "src/lib.rs",
            "docs/a b/c.md",
            ".github/workflows/ci.yml",
            "a..b/c",
        ] {
            path(ok).unwrap();
        }
        for bad in [
            "",
            "/etc/passwd",
            "../secret",
            "src/../../x",
            "src/./lib.rs",
            "a//b",
            "src/",
            "a\\b",
            "a\nb",
            "a\u{0}b",
            "a\u{7f}b",
            ".",
            "..",
        ] {
            assert_eq!(code(path(bad)), "invalid_path", "{bad:?}");
        }
        assert_eq!(code(path(&"a".repeat(1025))), "invalid_path");
    }

    #[test]
    fn ref_follows_check_ref_format() {
        for ok in [
            "main",
            "feature/x-1",
            "v1.2.3",
            "refs/heads/main",
            "0123456789abcdef0123456789abcdef01234567",
        ] {
            git_ref(ok).unwrap();
        }
        for bad in [
            "",
            "a..b",
            "has space",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[b",
            "a\\b",
            "-x",
            "/x",
            "x/",
            "x.",
            "a//b",
            "a@{1}",
            "@",
            ".hidden",
            "x/.y",
            "x.lock",
            "a\tb",
            "a\u{7f}",
        ] {
            assert_eq!(code(git_ref(bad)), "invalid_ref", "{bad:?}");
        }
        assert_eq!(code(git_ref(&"r".repeat(256))), "invalid_ref");
    }

    #[test]
    fn numbers_and_pagination_are_bounded() {
        issue_number(1).unwrap();
        issue_number(ISSUE_NUMBER_MAX).unwrap();
        assert_eq!(code(issue_number(0)), "invalid_issue_number");
        assert_eq!(
            code(issue_number(ISSUE_NUMBER_MAX + 1)),
            "invalid_issue_number"
        );
        pagination(1, 1).unwrap();
        pagination(100, 1000).unwrap();
        for (per_page, page) in [(0, 1), (101, 1), (30, 0), (30, 1001)] {
            assert_eq!(
                code(pagination(per_page, page)),
                "invalid_pagination",
                "{per_page}/{page}"
            );
        }
        search_pagination(100, 10).unwrap();
        search_pagination(30, 34).unwrap();
        assert_eq!(code(search_pagination(100, 11)), "invalid_pagination");
        assert_eq!(code(search_pagination(30, 35)), "invalid_pagination");
    }

    #[test]
    fn labels_assignees_and_text_are_bounded() {
        labels(&["bug".into(), "good first issue".into()]).unwrap();
        assert_eq!(code(labels(&["a,b".into()])), "invalid_label");
        assert_eq!(code(labels(&["bug".into(), "BUG".into()])), "invalid_label");
        assert_eq!(code(labels(&vec!["x".to_string(); 21])), "invalid_label");
        assert_eq!(code(labels(&[" ".into()])), "invalid_label");
        assignees(&["octocat".into()]).unwrap();
        assert_eq!(code(assignees(&["bad login".into()])), "invalid_login");
        let eleven: Vec<String> = (0..11).map(|i| format!("u{i}")).collect();
        assert_eq!(code(assignees(&eleven)), "invalid_login");
        title("Crash on start").unwrap();
        assert_eq!(code(title("  ")), "invalid_title");
        assert_eq!(code(title("a\nb")), "invalid_title");
        assert_eq!(code(title(&"t".repeat(257))), "invalid_title");
        body("", false).unwrap();
        body("line\n\tindented\r\n", true).unwrap();
        assert_eq!(code(body(" ", true)), "invalid_body");
        assert_eq!(code(body("a\u{1b}[31m", false)), "invalid_body");
        assert_eq!(code(body(&"b".repeat(65_537), false)), "invalid_body");
        query("is:issue repo:o/r crash").unwrap();
        assert_eq!(code(query("")), "invalid_query");
        assert_eq!(code(query(&"q".repeat(257))), "invalid_query");
    }

    #[test]
    fn since_is_a_utc_timestamp() {
        timestamp("2024-01-31T23:59:59Z").unwrap();
        for bad in [
            "2024-01-31",
            "2024-13-01T00:00:00Z",
            "2024-01-31T24:00:00Z",
            "2024-01-31T00:00:00+01:00",
            "x",
        ] {
            assert_eq!(code(timestamp(bad)), "invalid_since", "{bad:?}");
        }
    }
}
