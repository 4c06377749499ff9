//! `cargo xtask docs`: check the documentation, and build the book when
//! `mdbook` is installed.
//!
//! The files checked are `README.md`, `BENCHMARKS.md`, `SECURITY.md` and
//! every `docs/**/*.md`:
//!
//! - **Links.** Every relative link (`[text](path)`, `[label]: path`) names
//!   a file or directory that exists; a `#anchor` into a Markdown file names
//!   one of its headings, by the slug GitHub and mdBook give it (lowercase,
//!   whitespace to `-`, punctuation other than `-` and `_` dropped, `-1`,
//!   `-2`, … after a repeated heading). Links with a scheme (`https:`) are
//!   not followed.
//! - **The book's table of contents.** Every chapter under `docs/src/` is
//!   listed in `docs/src/SUMMARY.md`, and every entry there exists.
//! - **Commands.** In fenced blocks of language `sh`, `bash`, `shell`,
//!   `console` (prompt lines only) or none, every command that runs `warden`
//!   (after a `$ ` prompt and `NAME=value` assignments; as `warden`, a path
//!   ending in `/warden`, or `cargo run … --bin warden -- …`; anywhere in a
//!   pipeline or an `&&`/`||`/`;` chain) must name subcommands the binary
//!   has, and every `--long-flag` on it must appear in that subcommand's
//!   `--help`. The binary is `$WARDEN_BIN`, else `target/debug/warden`, else
//!   `target/release/warden`; when none exists it is built with
//!   `cargo build --workspace --bins` (features unified as in
//!   `cargo test --workspace`, so nothing compiles twice).
//! - **The book.** With `mdbook` on `PATH`, `mdbook build docs` (into
//!   `target/book`, set in `docs/book.toml`); without it, a line says it was
//!   skipped and the check still passes.
//!
//! Every problem is reported as `file:line: what is wrong`, all of them
//! before the command fails.
//!
//! ```text
//! cargo xtask docs
//! WARDEN_BIN=target/release/warden cargo xtask docs
//! ```

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

use crate::workspace;

/// The Markdown files at the top of the repository that are checked.
const TOP_LEVEL: &[&str] = &["README.md", "BENCHMARKS.md", "SECURITY.md"];

/// Options of `cargo xtask docs`.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct Args {
    /// Check links and commands only; do not build the book even when
    /// `mdbook` is installed.
    #[arg(long)]
    pub(crate) no_build: bool,
}

/// One problem found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    file: PathBuf,
    line: usize,
    what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.what)
    }
}

/// Check the documentation, then build the book if `mdbook` is installed.
pub(crate) fn run(args: &Args) -> Result<()> {
    let root = workspace::root();
    let files = markdown_files(root)?;
    let mut docs = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(root.join(path))
            .with_context(|| format!("reading {}", path.display()))?;
        docs.push(Doc::parse(path.clone(), &text));
    }
    let mut problems = Vec::new();
    let links = check_links(root, &docs, &mut problems)?;
    check_summary(root, &docs, &mut problems);

    let commands: Vec<(&Doc, usize, Vec<String>)> = docs
        .iter()
        .flat_map(|doc| {
            doc.command_lines.iter().flat_map(move |(line, text)| {
                invocations(text)
                    .into_iter()
                    .map(move |args| (doc, *line, args))
            })
        })
        .collect();
    let binary = warden_binary(root)?;
    let mut helps = Helps::new(binary.clone());
    for (doc, line, args) in &commands {
        if let Err(what) = helps.check(args) {
            problems.push(Problem {
                file: doc.path.clone(),
                line: *line,
                what,
            });
        }
    }
    println!(
        "docs: {} files, {links} relative links, {} `warden` commands checked against `{} --help`",
        docs.len(),
        commands.len(),
        binary.display()
    );
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("{problem}");
        }
        bail!("{} problem(s) in the documentation", problems.len());
    }
    if args.no_build {
        println!("docs: not building the book (--no-build)");
        return Ok(());
    }
    build_book(root)
}

/// `mdbook build docs` when `mdbook` is on `PATH`; a note otherwise.
fn build_book(root: &Path) -> Result<()> {
    let version = Command::new("mdbook").arg("--version").output();
    match version {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            println!(
                "docs: `mdbook` is not on PATH; skipped building the book \
                 (links and commands were checked)"
            );
            Ok(())
        }
        Err(error) => Err(error).context("running `mdbook --version`"),
        Ok(_) => {
            println!("docs: mdbook build docs (into target/book)");
            let status = Command::new("mdbook")
                .args(["build", "docs"])
                .current_dir(root)
                .status()
                .context("running `mdbook build docs`")?;
            if !status.success() {
                bail!("`mdbook build docs` failed");
            }
            Ok(())
        }
    }
}

/// The files checked, relative to the root: the top-level three and every
/// `docs/**/*.md`, sorted.
fn markdown_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = TOP_LEVEL
        .iter()
        .map(PathBuf::from)
        .filter(|p| root.join(p).is_file())
        .collect();
    let mut under_docs = Vec::new();
    walk(root, Path::new("docs"), &mut under_docs)?;
    under_docs.sort();
    files.extend(under_docs);
    Ok(files)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let full = root.join(dir);
    if !full.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(&full).with_context(|| format!("listing {}", full.display()))? {
        let entry = entry?;
        let relative = dir.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(root, &relative, out)?;
        } else if relative.extension().is_some_and(|e| e == "md") {
            out.push(relative);
        }
    }
    Ok(())
}

/// What the checks need of one Markdown file.
#[derive(Debug, Default)]
struct Doc {
    /// Relative to the repository root.
    path: PathBuf,
    /// Link targets outside code, with their line.
    links: Vec<(usize, String)>,
    /// Heading slugs, de-duplicated as the renderers do.
    slugs: HashSet<String>,
    /// Logical shell lines of command blocks (continuations joined), with
    /// the line they start on.
    command_lines: Vec<(usize, String)>,
}

impl Doc {
    fn parse(path: PathBuf, text: &str) -> Doc {
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
fn is_external(target: &str) -> bool {
    let scheme: String = target.chars().take_while(|c| *c != ':').collect();
    target.len() > scheme.len()
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Check every relative link of every file; returns how many were checked.
fn check_links(root: &Path, docs: &[Doc], problems: &mut Vec<Problem>) -> Result<usize> {
    let by_path: HashMap<&Path, &Doc> = docs.iter().map(|d| (d.path.as_path(), d)).collect();
    // Headings of Markdown files outside the checked set, read on demand.
    let mut other_slugs: HashMap<PathBuf, HashSet<String>> = HashMap::new();
    let mut count = 0;
    for doc in docs {
        for (line, target) in &doc.links {
            if is_external(target) {
                continue;
            }
            count += 1;
            if target.is_empty() {
                problems.push(Problem {
                    file: doc.path.clone(),
                    line: *line,
                    what: "a link with an empty target".into(),
                });
                continue;
            }
            let (path_part, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let resolved = if path_part.is_empty() {
                doc.path.clone()
            } else if let Some(absolute) = path_part.strip_prefix('/') {
                normalize(Path::new(absolute))
            } else {
                normalize(&doc.path.parent().unwrap_or(Path::new("")).join(path_part))
            };
            let mut problem = |what: String| {
                problems.push(Problem {
                    file: doc.path.clone(),
                    line: *line,
                    what,
                })
            };
            if resolved.components().next() == Some(Component::ParentDir) {
                problem(format!("link `{target}` leaves the repository"));
                continue;
            }
            let full = root.join(&resolved);
            if !full.exists() {
                problem(format!(
                    "link `{target}`: {} does not exist",
                    resolved.display()
                ));
                continue;
            }
            let Some(anchor) = anchor.filter(|a| !a.is_empty()) else {
                continue;
            };
            if resolved.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let slugs = match by_path.get(resolved.as_path()) {
                Some(target_doc) => &target_doc.slugs,
                None => {
                    if !other_slugs.contains_key(&resolved) {
                        let text = std::fs::read_to_string(&full)
                            .with_context(|| format!("reading {}", resolved.display()))?;
                        other_slugs
                            .insert(resolved.clone(), Doc::parse(resolved.clone(), &text).slugs);
                    }
                    &other_slugs[&resolved]
                }
            };
            if !slugs.contains(anchor) {
                let mut near: Vec<&String> = slugs
                    .iter()
                    .filter(|s| s.contains(anchor) || anchor.contains(s.as_str()))
                    .collect();
                near.sort();
                let hint = match near.first() {
                    Some(s) => format!(" (did you mean `#{s}`?)"),
                    None => String::new(),
                };
                problem(format!(
                    "link `{target}`: {} has no heading with the anchor `#{anchor}`{hint}",
                    resolved.display()
                ));
            }
        }
    }
    Ok(count)
}

/// `a/./b/../c` → `a/c`, without touching the file system. A path that
/// climbs above its start keeps its leading `..`.
fn normalize(path: &Path) -> PathBuf {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match parts.last() {
                Some(Component::Normal(_)) => {
                    parts.pop();
                }
                _ => parts.push(component),
            },
            other => parts.push(other),
        }
    }
    parts.iter().collect()
}

/// Every chapter under `docs/src/` is in `SUMMARY.md`, and every entry of
/// `SUMMARY.md` is a file under `docs/src/`.
fn check_summary(root: &Path, docs: &[Doc], problems: &mut Vec<Problem>) {
    let src = Path::new("docs/src");
    let summary_path = src.join("SUMMARY.md");
    let chapters: BTreeSet<&Path> = docs
        .iter()
        .map(|d| d.path.as_path())
        .filter(|p| p.starts_with(src) && *p != summary_path)
        .collect();
    let Some(summary) = docs.iter().find(|d| d.path == summary_path) else {
        if !chapters.is_empty() || root.join("docs").is_dir() {
            problems.push(Problem {
                file: summary_path,
                line: 0,
                what: "the book has no SUMMARY.md".into(),
            });
        }
        return;
    };
    let mut listed = BTreeSet::new();
    for (line, target) in &summary.links {
        if is_external(target) {
            continue;
        }
        let path_part = target.split('#').next().unwrap_or("");
        if path_part.is_empty() {
            problems.push(Problem {
                file: summary_path.clone(),
                line: *line,
                what: format!("entry `{target}` names no chapter file (a draft chapter)"),
            });
            continue;
        }
        let resolved = normalize(&src.join(path_part));
        if !resolved.starts_with(src) {
            problems.push(Problem {
                file: summary_path.clone(),
                line: *line,
                what: format!("entry `{target}` is outside docs/src/, where mdBook cannot read it"),
            });
        }
        listed.insert(resolved);
    }
    for chapter in chapters {
        if !listed.contains(chapter) {
            problems.push(Problem {
                file: chapter.to_path_buf(),
                line: 1,
                what: format!(
                    "chapter is not listed in {} (mdBook would not build it)",
                    summary_path.display()
                ),
            });
        }
    }
}

// ---------------------------------------------------------------------------
// Command lines

/// The words a shell would see on one logical line, split into simple
/// commands at `|`, `||`, `&&`, `;` and `&`; comments dropped, quotes
/// removed. Not a shell: enough to find what a line runs.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let end_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(ch) = chars.next() {
        match ch {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(next) = chars.next() {
                                word.push(next);
                            }
                        }
                        _ => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            '#' if !in_word => break,
            '|' | '&' | ';' => {
                end_word(&mut words, &mut word, &mut in_word);
                if chars.peek() == Some(&ch) {
                    chars.next();
                }
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            c if c.is_whitespace() => end_word(&mut words, &mut word, &mut in_word),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut words, &mut word, &mut in_word);
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

/// Programs that run the rest of the line as a command.
const WRAPPERS: &[&str] = &["time", "exec", "sudo", "env", "nohup"];

/// The arguments of every `warden` run on one logical line (the words after
/// `warden`). A line may start with a `$ ` prompt; each command may start
/// with `NAME=value` assignments; `warden` may be a path ending in
/// `/warden`, or `cargo run … --bin warden -- …`.
fn invocations(line: &str) -> Vec<Vec<String>> {
    let line = line.trim_start();
    let line = line.strip_prefix("$ ").unwrap_or(line);
    simple_commands(line)
        .into_iter()
        .filter_map(|words| {
            let mut rest = words.as_slice();
            while let Some((first, tail)) = rest.split_first() {
                if is_assignment(first) || WRAPPERS.contains(&first.as_str()) {
                    rest = tail;
                } else {
                    break;
                }
            }
            let (program, args) = rest.split_first()?;
            if program == "warden" || program.ends_with("/warden") {
                return Some(args.to_vec());
            }
            if program == "cargo" && args.first().is_some_and(|a| a == "run") {
                let runs_warden = args.windows(2).any(|w| w[0] == "--bin" && w[1] == "warden")
                    || args.iter().any(|a| a == "--bin=warden");
                let dashes = args.iter().position(|a| a == "--");
                if runs_warden {
                    return Some(dashes.map_or_else(Vec::new, |at| args[at + 1..].to_vec()));
                }
            }
            None
        })
        .collect()
}

/// `NAME=value`, a shell variable assignment.
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A word as a long flag (`--name`, `--name=value`, `[--name]`), or `None`.
fn long_flag(word: &str) -> Option<&str> {
    let word = word.trim_start_matches(['[', '(']);
    let rest = word.strip_prefix("--")?;
    let name = rest.split(['=', ']', ')', ',', '|']).next().unwrap_or("");
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    valid.then_some(name)
}

/// Whether `help` lists the long flag `name` (without its dashes) as a
/// whole word.
fn help_has_flag(help: &str, name: &str) -> bool {
    let needle = format!("--{name}");
    help.match_indices(&needle).any(|(at, _)| {
        let before = help[..at].chars().next_back();
        let after = help[at + needle.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
            && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// The long options a help text shows with a value (`--data-dir <DATA_DIR>`).
fn value_options(help: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for line in help.lines() {
        let line = line.trim_start();
        let line = match line.split_once(", ") {
            Some((short, long)) if short.starts_with('-') && !short.starts_with("--") => long,
            _ => line,
        };
        if let Some(rest) = line.strip_prefix("--")
            && let Some((name, after)) = rest.split_once(' ')
            && after.starts_with('<')
        {
            out.insert(name.to_owned());
        }
    }
    out
}

/// Whether a help text lists subcommands.
fn has_subcommands(help: &str) -> bool {
    help.lines().any(|l| l.trim_end() == "Commands:")
}

/// The positional words of `args` (options and their values skipped).
fn positionals<'a>(args: &'a [String], takes_value: &HashSet<String>) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            out.extend(iter.map(String::as_str));
            break;
        }
        if let Some(name) = arg.strip_prefix("--") {
            if !name.contains('=') && takes_value.contains(name) {
                iter.next();
            }
        } else if arg.starts_with('-') && arg.len() > 1 {
            // A short flag; the ones Warden has that take a value are
            // shown as `-n, --lines <LINES>` and are rare on doc lines.
        } else {
            out.push(arg);
        }
    }
    out
}

/// `warden … --help` outputs, run once each.
#[derive(Debug)]
struct Helps {
    binary: PathBuf,
    cache: HashMap<Vec<String>, Option<String>>,
}

impl Helps {
    fn new(binary: PathBuf) -> Helps {
        Helps {
            binary,
            cache: HashMap::new(),
        }
    }

    /// The help of `warden <path…>`, or `None` when the binary refuses the
    /// subcommand.
    fn help(&mut self, path: &[&str]) -> Option<String> {
        let key: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
        if let Some(found) = self.cache.get(&key) {
            return found.clone();
        }
        let output = Command::new(&self.binary)
            .args(path)
            .arg("--help")
            .env("NO_COLOR", "1")
            .output();
        let help = match output {
            Ok(out) if out.status.success() => {
                Some(String::from_utf8_lossy(&out.stdout).into_owned())
            }
            _ => None,
        };
        self.cache.insert(key, help.clone());
        help
    }

    /// Check one invocation's subcommands and long flags.
    fn check(&mut self, args: &[String]) -> Result<(), String> {
        let top = self
            .help(&[])
            .ok_or_else(|| format!("`{} --help` failed", self.binary.display()))?;
        let mut takes_value = value_options(&top);
        let found = positionals(args, &takes_value);
        let mut path: Vec<&str> = Vec::new();
        let mut help = top;
        if let Some(&sub) = found.first() {
            help = self.help(&[sub]).ok_or_else(|| {
                format!("`warden {sub}`: no such subcommand (`warden {sub} --help` failed)")
            })?;
            path.push(sub);
            if has_subcommands(&help) {
                takes_value.extend(value_options(&help));
                let after = positionals(args, &takes_value);
                if let Some(&sub2) = after.get(1) {
                    help = self.help(&[sub, sub2]).ok_or_else(|| {
                        format!(
                            "`warden {sub} {sub2}`: no such subcommand \
                             (`warden {sub} {sub2} --help` failed)"
                        )
                    })?;
                    path.push(sub2);
                }
            }
        }
        let mut unknown = Vec::new();
        for arg in args {
            if arg == "--" {
                break;
            }
            if let Some(flag) = long_flag(arg)
                && !help_has_flag(&help, flag)
                && !unknown.contains(&flag)
            {
                unknown.push(flag);
            }
        }
        if unknown.is_empty() {
            return Ok(());
        }
        let shown = unknown
            .iter()
            .map(|f| format!("`--{f}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let command = std::iter::once("warden")
            .chain(path.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        Err(format!(
            "`{command}` has no {shown} (not in `{command} --help`)"
        ))
    }
}

/// The `warden` binary the commands are checked against.
fn warden_binary(root: &Path) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("WARDEN_BIN") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!("WARDEN_BIN={} is not a file", path.display());
        }
        return Ok(path);
    }
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    };
    let name = format!("warden{}", std::env::consts::EXE_SUFFIX);
    let candidates = [
        target.join("debug").join(&name),
        target.join("release").join(&name),
    ];
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    println!("docs: no warden binary yet; cargo build --workspace --bins");
    let status = workspace::cargo()
        .args(["build", "--workspace", "--bins"])
        .current_dir(root)
        .status()
        .context("starting cargo build")?;
    if !status.success() {
        bail!("building warden failed");
    }
    let built = &candidates[0];
    if !built.is_file() {
        bail!("cargo build did not produce {}", built.display());
    }
    Ok(built.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

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
    fn paths_are_normalized_without_the_file_system() {
        assert_eq!(
            normalize(Path::new("docs/src/../../README.md")),
            Path::new("README.md")
        );
        assert_eq!(
            normalize(Path::new("docs/./src/a.md")),
            Path::new("docs/src/a.md")
        );
        assert_eq!(normalize(Path::new("docs/../../x")), Path::new("../x"));
    }

    #[test]
    fn a_prompt_and_env_assignments_are_skipped() {
        assert_eq!(
            invocations(
                "$ WARDEN_DATA_DIR=/tmp/w RUST_LOG=rmcp=debug warden serve --http 127.0.0.1:8765"
            ),
            [words(&["serve", "--http", "127.0.0.1:8765"])]
        );
        assert_eq!(
            invocations("./target/release/warden list --json"),
            [words(&["list", "--json"])]
        );
        assert_eq!(
            invocations("target/debug/warden --data-dir target/demo-data serve"),
            [words(&["--data-dir", "target/demo-data", "serve"])]
        );
    }

    #[test]
    fn pipes_chains_and_comments_split_commands() {
        assert_eq!(invocations("warden list | head -n 3"), [words(&["list"])]);
        assert_eq!(
            invocations(
                r#"printf %s "$TOKEN" | warden secret set github github_runtime_token --scope repo"#
            ),
            [words(&[
                "secret",
                "set",
                "github",
                "github_runtime_token",
                "--scope",
                "repo"
            ])]
        );
        assert_eq!(
            invocations(
                "warden mcp add docs https://x.example/mcp && warden mcp list; warden list"
            ),
            [
                words(&["mcp", "add", "docs", "https://x.example/mcp"]),
                words(&["mcp", "list"]),
                words(&["list"])
            ]
        );
        assert_eq!(
            invocations("warden audit tail -n 20   # the last decisions --not-a-flag"),
            [words(&["audit", "tail", "-n", "20"])]
        );
        // A `#` or `|` inside quotes is part of the word.
        assert_eq!(
            invocations(r##"warden call echo.echo --input '{"text": "#1 | a"}'"##),
            [words(&[
                "call",
                "echo.echo",
                "--input",
                r##"{"text": "#1 | a"}"##
            ])]
        );
        assert!(invocations("cargo xtask demo").is_empty());
        assert!(invocations("# warden list, in a comment").is_empty());
    }

    #[test]
    fn cargo_run_of_the_warden_binary_counts() {
        assert_eq!(
            invocations(
                r#"cargo run -q --bin warden -- call weather.hello --input '{"name": "Ada"}'"#
            ),
            [words(&[
                "call",
                "weather.hello",
                "--input",
                r#"{"name": "Ada"}"#
            ])]
        );
        assert!(invocations("cargo run --bin xtask -- docs").is_empty());
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

    #[test]
    fn long_flags_are_read_from_words_and_help_texts() {
        assert_eq!(long_flag("--input"), Some("input"));
        assert_eq!(long_flag("--scope=repo"), Some("scope"));
        assert_eq!(long_flag("[--grant]"), Some("grant"));
        assert_eq!(long_flag("--"), None);
        assert_eq!(long_flag("-n"), None);
        assert_eq!(long_flag("--{weird}"), None);
        let help = "Options:\n      --data-dir <DATA_DIR>  Where\n  -n, --lines <LINES>  How many\n      --json  Print JSON\n";
        assert!(help_has_flag(help, "json"));
        assert!(help_has_flag(help, "lines"));
        assert!(!help_has_flag(help, "data"));
        assert!(!help_has_flag(help, "jso"));
        assert_eq!(
            value_options(help),
            HashSet::from(["data-dir".to_owned(), "lines".to_owned()])
        );
    }

    #[test]
    fn option_values_are_not_taken_for_subcommands() {
        let takes = HashSet::from(["store".to_owned(), "data-dir".to_owned()]);
        let args = words(&[
            "--store",
            "postgres://db/w",
            "--json",
            "approvals",
            "approve",
            "ID",
        ]);
        assert_eq!(positionals(&args, &takes), ["approvals", "approve", "ID"]);
        let args = words(&["--data-dir=x", "list"]);
        assert_eq!(positionals(&args, &takes), ["list"]);
    }

    #[test]
    fn summary_must_list_every_chapter() {
        let summary = Doc::parse(
            "docs/src/SUMMARY.md".into(),
            "# Summary\n\n- [Intro](introduction.md)\n- [Gone]()\n- [Out](../benchmarks/x.md)\n",
        );
        let intro = Doc::parse("docs/src/introduction.md".into(), "# Intro\n");
        let orphan = Doc::parse("docs/src/orphan.md".into(), "# Orphan\n");
        let mut problems = Vec::new();
        check_summary(
            Path::new("/nonexistent"),
            &[summary, intro, orphan],
            &mut problems,
        );
        let found: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].starts_with("docs/src/SUMMARY.md:4: entry `` names no chapter"));
        assert!(
            found[1].starts_with("docs/src/SUMMARY.md:5: entry `../benchmarks/x.md` is outside")
        );
        assert!(found[2].starts_with("docs/src/orphan.md:1: chapter is not listed"));
    }
}
