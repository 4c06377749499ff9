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
//! - **Error codes.** `docs/src/error-codes.md` lists, in the first column
//!   of its tables, exactly the codes of `warden_core::ErrorCode`.
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

mod commands;
mod markdown;

use commands::{Helps, invocations};
use markdown::{Doc, is_external};

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
    check_error_codes(root, &mut problems);

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

/// The chapter that lists every error code.
const ERROR_CODES: &str = "docs/src/error-codes.md";

/// `docs/src/error-codes.md` lists exactly [`warden_core::ErrorCode::ALL`]:
/// each table row's first cell is one code in backticks.
fn check_error_codes(root: &Path, problems: &mut Vec<Problem>) {
    let file = PathBuf::from(ERROR_CODES);
    let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
        problems.push(Problem {
            file,
            line: 1,
            what: "the chapter of error codes is missing".into(),
        });
        return;
    };
    let listed = listed_codes(&text);
    for (word, line) in &listed {
        if word.parse::<warden_core::ErrorCode>().is_err() {
            problems.push(Problem {
                file: file.clone(),
                line: *line,
                what: format!("`{word}` is not an error code of the host"),
            });
        }
    }
    for code in warden_core::ErrorCode::ALL {
        if !listed.iter().any(|(word, _)| word == code.as_str()) {
            problems.push(Problem {
                file: file.clone(),
                line: 1,
                what: format!("error code `{code}` is not listed"),
            });
        }
    }
}

/// The backticked first cells of the table rows of `text`, with their lines.
fn listed_codes(text: &str) -> Vec<(String, usize)> {
    text.lines()
        .enumerate()
        .filter_map(|(at, line)| {
            let cell = line.strip_prefix("| `")?;
            let (word, _) = cell.split_once('`')?;
            Some((word.to_owned(), at + 1))
        })
        .collect()
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

    #[test]
    fn the_codes_of_a_table_are_its_backticked_first_cells() {
        let text = "# Codes\n\n| Code | Meaning |\n|---|---|\n| `timeout` | Late. |\n\
                    | plain | Not a code. |\n| `tool_failure` | Failed. |\n";
        assert_eq!(
            listed_codes(text),
            [("timeout".to_owned(), 5), ("tool_failure".to_owned(), 7)]
        );
    }

    use super::*;

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
