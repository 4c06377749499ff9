//! The `warden` command lines of the documentation: finding them in a
//! shell line (not a shell: enough to see what a line runs), and checking
//! their subcommands and long flags against the binary's `--help`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::Command;

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
pub(super) fn invocations(line: &str) -> Vec<Vec<String>> {
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
pub(super) struct Helps {
    binary: PathBuf,
    cache: HashMap<Vec<String>, Option<String>>,
}

impl Helps {
    pub(super) fn new(binary: PathBuf) -> Helps {
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
    pub(super) fn check(&mut self, args: &[String]) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
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
}
