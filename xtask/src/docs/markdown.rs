//! What `cargo xtask docs` reads of a Markdown file: fenced blocks (and
//! which of them hold shell commands), ATX headings and the anchors GitHub
//! and mdBook give them, and link targets outside code.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// What the checks need of one Markdown file.
#[derive(Debug, Default)]
pub(super) struct Doc {
    /// Relative to the repository root.
    pub(super) path: PathBuf,
    /// Link targets outside code, with their line.
    pub(super) links: Vec<(usize, String)>,
    /// Heading slugs, de-duplicated as the renderers do.
    pub(super) slugs: HashSet<String>,
    /// Logical shell lines of command blocks (continuations joined), with
    /// the line they start on.
    pub(super) command_lines: Vec<(usize, String)>,
}

impl Doc {
    pub(super) fn parse(path: PathBuf, text: &str) -> Doc {
        let mut doc = Doc {
            path,
            ..Doc::default()
        };
        let mut seen: HashMap<String, usize> = HashMap::new();
        // The open fence: its character, length, and whether its lines are commands.
        let mut fence: Option<(char, usize, BlockKind)> = None;
        let mut pending: Option<(usize, String)> = None;
        for (index, raw) in text.lines().enumerate() {
            let number = index + 1;
            let trimmed = raw.trim_start();
            if let Some((ch, len, kind)) = fence {
                if is_fence_close(trimmed, ch, len) {
                    if let Some(open) = pending.take() {
                        doc.command_lines.push(open);
                    }
                    fence = None;
                    continue;
                }
                let line = match kind {
                    BlockKind::Other => continue,
                    BlockKind::Shell => Some(trimmed),
                    BlockKind::Console => match &pending {
                        Some(_) => Some(trimmed),
                        None => trimmed
                            .strip_prefix("$ ")
                            .or_else(|| (trimmed == "$").then_some("")),
                    },
                };
                let Some(line) = line else { continue };
                let (start, mut joined) = pending.take().unwrap_or((number, String::new()));
                match line.strip_suffix('\\') {
                    Some(head) => {
                        joined.push_str(head);
                        joined.push(' ');
                        pending = Some((start, joined));
                    }
                    None => {
                        joined.push_str(line);
                        doc.command_lines.push((start, joined));
                    }
                }
                continue;
            }
            if let Some((ch, len, info)) = fence_open(trimmed) {
                fence = Some((ch, len, BlockKind::of(info)));
                continue;
            }
            if let Some(heading) = heading_text(trimmed) {
                let base = slug(&strip_links(heading));
                let count = seen.entry(base.clone()).or_insert(0);
                let id = if *count == 0 {
                    base.clone()
                } else {
                    format!("{base}-{count}")
                };
                *count += 1;
                doc.slugs.insert(id);
            }
            for target in link_targets(raw) {
                doc.links.push((number, target));
            }
        }
        if let Some(open) = pending.take() {
            doc.command_lines.push(open);
        }
        doc
    }
}

/// Which lines of a fenced block are commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    /// `sh`, `bash`, `shell` or no language: every line.
    Shell,
    /// `console`: lines after a `$ ` prompt.
    Console,
    /// Anything else (`toml`, `json`, `rust`, `text`, …).
    Other,
}

impl BlockKind {
    fn of(info: &str) -> BlockKind {
        let language = info
            .split(|c: char| c.is_whitespace() || c == ',' || c == '{')
            .next()
            .unwrap_or("");
        match language {
            "" | "sh" | "bash" | "shell" => BlockKind::Shell,
            "console" => BlockKind::Console,
            _ => BlockKind::Other,
        }
    }
}

/// A fence opening (three or more backticks or tildes): its character,
/// length and info string.
fn fence_open(line: &str) -> Option<(char, usize, &str)> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = line.chars().take_while(|c| *c == ch).count();
    if len < 3 {
        return None;
    }
    let info = line[len..].trim();
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some((ch, len, info))
}

fn is_fence_close(line: &str, ch: char, len: usize) -> bool {
    let run = line.chars().take_while(|c| *c == ch).count();
    run >= len && line[run..].trim().is_empty()
}

/// The text of an ATX heading (`## Text ##`), or `None`.
fn heading_text(line: &str) -> Option<&str> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let text = rest.trim();
    // A closing sequence of `#`s after a space is not part of the text.
    let text = match text.trim_end_matches('#') {
        stripped if stripped.ends_with(' ') || stripped.is_empty() => stripped.trim_end(),
        _ => text,
    };
    // An explicit id (`{#id}`) is not supported here; keep the text as is.
    Some(text)
}

/// The anchor GitHub and mdBook give a heading: lowercase; whitespace
/// becomes `-`; letters, digits, `-` and `_` stay; everything else
/// (punctuation, backticks, emphasis marks) is dropped.
fn slug(heading: &str) -> String {
    let mut out = String::new();
    for ch in heading.chars() {
        if ch.is_alphanumeric() || ch == '-' || ch == '_' {
            out.extend(ch.to_lowercase());
        } else if ch.is_whitespace() {
            out.push('-');
        }
    }
    out
}

/// `[text](target)` → `text`, so a link in a heading adds only its text.
fn strip_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](") else {
            break;
        };
        let close = open + close;
        let Some(end) = rest[close + 2..].find(')') else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[close + 2 + end + 1..];
    }
    out.push_str(rest);
    out
}

/// A line with its inline code spans blanked out (`` `a](b)` `` is code,
/// not a link).
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let bytes: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == '`' {
            let run = bytes[i..].iter().take_while(|c| **c == '`').count();
            // Find the closing run of the same length.
            let mut j = i + run;
            let mut closed = None;
            while j < bytes.len() {
                if bytes[j] == '`' {
                    let other = bytes[j..].iter().take_while(|c| **c == '`').count();
                    if other == run {
                        closed = Some(j + other);
                        break;
                    }
                    j += other;
                } else {
                    j += 1;
                }
            }
            match closed {
                Some(end) => {
                    out.extend(std::iter::repeat_n(' ', end - i));
                    i = end;
                }
                None => {
                    out.extend(&bytes[i..i + run]);
                    i += run;
                }
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The link targets of one line of prose: inline links and images
/// (`[text](target "title")`) and reference definitions (`[label]: target`).
fn link_targets(line: &str) -> Vec<String> {
    let text = without_code_spans(line);
    let mut targets = Vec::new();
    let trimmed = text.trim_start();
    if text.len() - trimmed.len() <= 3
        && trimmed.starts_with('[')
        && let Some(close) = trimmed.find("]:")
        && !trimmed[1..close].contains(']')
        && !trimmed.starts_with("[^")
    {
        let target = trimmed[close + 2..].split_whitespace().next().unwrap_or("");
        if !target.is_empty() {
            targets.push(target.trim_matches(['<', '>']).to_owned());
        }
        return targets;
    }
    let mut from = 0;
    while let Some(found) = text[from..].find("](") {
        let start = from + found + 2;
        let mut depth = 0usize;
        let mut end = None;
        for (offset, ch) in text[start..].char_indices() {
            match ch {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = Some(start + offset);
                    break;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let inner = text[start..end].trim();
        let target = match inner.strip_prefix('<') {
            Some(angled) => angled.split('>').next().unwrap_or(""),
            None => inner.split_whitespace().next().unwrap_or(""),
        };
        // An empty target (`[text]()`) is kept: it is reported.
        targets.push(target.to_owned());
        from = end + 1;
    }
    targets
}

/// Whether a link target leaves the repository (`https:`, `mailto:`, …).
pub(super) fn is_external(target: &str) -> bool {
    let scheme: String = target.chars().take_while(|c| *c != ':').collect();
    target.len() > scheme.len()
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_github_and_mdbook() {
        assert_eq!(slug("Using `warden`"), "using-warden");
        assert_eq!(
            slug("Many hosts on one PostgreSQL"),
            "many-hosts-on-one-postgresql"
        );
        // Punctuation is dropped, each space stays a hyphen (no collapsing).
        assert_eq!(
            slug("Cold start — warm vs empty"),
            "cold-start--warm-vs-empty"
        );
        assert_eq!(slug("The `near:agent@0.4.1` lane"), "the-nearagent041-lane");
        assert_eq!(
            slug("snake_case and kebab-case"),
            "snake_case-and-kebab-case"
        );
        assert_eq!(
            slug("Secrets: what may leave a call?"),
            "secrets-what-may-leave-a-call"
        );
        assert_eq!(slug("Ünïcode Stays"), "ünïcode-stays");
    }

    #[test]
    fn repeated_headings_get_numbered_anchors() {
        let doc = Doc::parse("a.md".into(), "# Notes\n\n## Notes\n\n### Notes\n");
        let mut slugs: Vec<_> = doc.slugs.into_iter().collect();
        slugs.sort();
        assert_eq!(slugs, ["notes", "notes-1", "notes-2"]);
    }

    #[test]
    fn headings_inside_code_blocks_are_not_headings() {
        let doc = Doc::parse("a.md".into(), "# Real\n\n```sh\n# a comment\n```\n");
        assert_eq!(doc.slugs, HashSet::from(["real".to_owned()]));
    }

    #[test]
    fn heading_text_drops_the_closing_hashes_and_link_targets() {
        assert_eq!(heading_text("## Limits ##"), Some("Limits"));
        assert_eq!(heading_text("#hashtag"), None);
        assert_eq!(heading_text("####### seven"), None);
        assert_eq!(
            slug(&strip_links("See [the book](docs/x.md) now")),
            "see-the-book-now"
        );
    }

    #[test]
    fn links_are_found_outside_code_with_titles_and_anchors() {
        assert_eq!(
            link_targets(r#"See [limits](limits.md#memory "Limits") and ![img](a.png)."#),
            ["limits.md#memory", "a.png"]
        );
        assert_eq!(
            link_targets("A [link](<with space.md>) here"),
            ["with space.md"]
        );
        assert_eq!(link_targets("Nested [x](a_(b).md) parens"), ["a_(b).md"]);
        // Code spans are not links.
        assert!(link_targets("Run `[x](not-a-link.md)` as is").is_empty());
        assert!(link_targets("`_meta[\"warden/auth\"]` (a field)").is_empty());
        // Reference definitions.
        assert_eq!(
            link_targets("[book]: docs/src/SUMMARY.md"),
            ["docs/src/SUMMARY.md"]
        );
    }

    #[test]
    fn links_in_fenced_blocks_are_not_checked() {
        let doc = Doc::parse(
            "a.md".into(),
            "[one](a.md)\n\n```rust\nlet x = [a](b);\n```\n~~~\n[two](c.md)\n~~~\n[three](d.md)\n",
        );
        assert_eq!(doc.links, [(1, "a.md".to_owned()), (9, "d.md".to_owned())]);
    }

    #[test]
    fn external_links_are_recognised_by_their_scheme() {
        assert!(is_external("https://example.com/x"));
        assert!(is_external("mailto:security@example.com"));
        assert!(!is_external("docs/src/limits.md"));
        assert!(!is_external("limits.md#a:b"));
        assert!(!is_external("#anchor"));
    }

    #[test]
    fn continuation_lines_are_joined_and_console_blocks_take_prompt_lines() {
        let doc = Doc::parse(
            "a.md".into(),
            "```sh\nwarden serve --http 0.0.0.0:8443 \\\n  --tls-cert c.pem\n```\n\
             ```console\n$ warden list\necho.echo  output line\nwarden not-a-command\n```\n",
        );
        assert_eq!(
            doc.command_lines,
            [
                (
                    2,
                    "warden serve --http 0.0.0.0:8443  --tls-cert c.pem".to_owned()
                ),
                (6, "warden list".to_owned())
            ]
        );
        assert_eq!(BlockKind::of(""), BlockKind::Shell);
        assert_eq!(BlockKind::of("bash"), BlockKind::Shell);
        assert_eq!(BlockKind::of("toml"), BlockKind::Other);
        assert_eq!(BlockKind::of("text"), BlockKind::Other);
    }
}
