//! `cargo xtask new <name> [--http <host>]`: scaffold a tool.
//!
//! Writes a guest crate `guests/<name>/` (added to the guest workspace) and
//! its package `packages/<name>/`: a v3 manifest with one tool, its input and
//! output schemas and prompt doc. `cargo xtask bundle` then builds it and the
//! `warden` binary serves it like the other bundled packages.
//!
//! - Without `--http`: a pure tool `<name>.hello` (no network, no secrets).
//! - With `--http <host>`: `<name>.get`, a GET on `https://<host>` with an API
//!   key the host injects for that audience only, and the `api_key` recipe a
//!   user connects it with.
//!
//! One name is used for the crate, the component module, the extension id
//! and the vendor, so it must be valid as all four: lowercase ASCII letters,
//! digits and `_`, starting with a letter (no `-`, which a Rust crate name
//! would turn into `_` and an extension id would keep).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::{guests, workspace};

/// Options of `cargo xtask new`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The tool's name: crate, package, extension id and vendor.
    name: String,
    /// Scaffold an HTTP tool for this API host (e.g. `api.example.com`).
    #[arg(long, value_name = "HOST")]
    http: Option<String>,
}

/// Names a new tool may not take: directories of the guest workspace and the
/// host's own namespaces.
const RESERVED: &[&str] = &[
    "sdk", "fixtures", "target", "src", "warden", "ironclaw", "test",
];

/// The longest name accepted (the extension id limit is 128 bytes; a crate
/// name this long is already unwieldy).
const MAX_NAME: usize = 64;

/// Scaffold the crate and package, then print the next steps.
pub(crate) fn run(args: &Args) -> Result<()> {
    let name = &args.name;
    check_name(name)?;
    if let Some(host) = &args.http {
        check_host(host)?;
    }
    let root = workspace::root();
    let crate_dir = workspace::guests_dir().join(name);
    let package_dir = root.join("packages").join(name);
    if let Some(existing) = guests::discover()?.iter().find(|g| &g.name == name) {
        bail!(
            "a guest crate named `{name}` already exists ({}); pick another name",
            existing.dir.display()
        );
    }
    for dir in [&crate_dir, &package_dir] {
        if dir.exists() {
            bail!(
                "{} already exists; pick another name or remove it",
                dir.display()
            );
        }
    }

    let files = scaffold(name, args.http.as_deref());
    if let Err(error) = write_all(&crate_dir, &package_dir, &files) {
        // Leave nothing half-written behind: both directories are new.
        let _ = std::fs::remove_dir_all(&crate_dir);
        let _ = std::fs::remove_dir_all(&package_dir);
        return Err(error);
    }
    if let Err(error) = add_member(&workspace::guests_dir().join("Cargo.toml"), name) {
        let _ = std::fs::remove_dir_all(&crate_dir);
        let _ = std::fs::remove_dir_all(&package_dir);
        return Err(error);
    }
    // The same validation `bundle` and `warden install` run.
    crate::check::packages(std::slice::from_ref(&package_dir))?;

    let tool = if args.http.is_some() { "get" } else { "hello" };
    let input = if args.http.is_some() {
        r#"{"path": "/"}"#
    } else {
        r#"{"name": "Ada"}"#
    };
    println!("new: created {} and {}", rel(&crate_dir), rel(&package_dir));
    println!("next:");
    println!("  cargo xtask bundle");
    if args.http.is_some() {
        println!("  cargo run -q --bin warden -- secret set {name} {name}_api_key");
    }
    println!("  cargo run -q --bin warden -- call {name}.{tool} --input '{input}'");
    Ok(())
}

/// One file to write: which directory, the path inside it, the contents.
struct File {
    in_package: bool,
    path: String,
    text: String,
}

fn scaffold(name: &str, http: Option<&str>) -> Vec<File> {
    let host = http.unwrap_or_default();
    let description = match http {
        Some(host) => format!("Reads resources of the {host} API with a user's API key."),
        None => "Greets someone by name. Scaffolded by `cargo xtask new`.".to_owned(),
    };
    let fill = |template: &str| {
        template
            .replace("{{name}}", name)
            .replace("{{type_name}}", &type_name(name))
            .replace("{{host}}", host)
            .replace("{{description}}", &description)
    };
    let (tool, lib, manifest, input, output, prompt) = match http {
        Some(_) => (
            "get",
            include_str!("../templates/http/lib.rs.tmpl"),
            include_str!("../templates/http/manifest.toml.tmpl"),
            include_str!("../templates/http/input.json.tmpl"),
            include_str!("../templates/http/output.json.tmpl"),
            include_str!("../templates/http/prompt.md.tmpl"),
        ),
        None => (
            "hello",
            include_str!("../templates/pure/lib.rs.tmpl"),
            include_str!("../templates/pure/manifest.toml.tmpl"),
            include_str!("../templates/pure/input.json.tmpl"),
            include_str!("../templates/pure/output.json.tmpl"),
            include_str!("../templates/pure/prompt.md.tmpl"),
        ),
    };
    let crate_file = |path: &str, template: &str| File {
        in_package: false,
        path: path.to_owned(),
        text: fill(template),
    };
    let package_file = |path: String, template: &str| File {
        in_package: true,
        path,
        text: fill(template),
    };
    vec![
        crate_file("Cargo.toml", include_str!("../templates/Cargo.toml.tmpl")),
        crate_file("src/lib.rs", lib),
        package_file("manifest.toml".to_owned(), manifest),
        package_file(format!("schemas/{name}/{tool}.input.v1.json"), input),
        package_file(format!("schemas/{name}/{tool}.output.v1.json"), output),
        package_file(format!("prompts/{name}/{tool}.md"), prompt),
    ]
}

fn write_all(crate_dir: &Path, package_dir: &Path, files: &[File]) -> Result<()> {
    for file in files {
        let base = if file.in_package {
            package_dir
        } else {
            crate_dir
        };
        let path = base.join(&file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, &file.text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Add `name` to `members = [...]` of the guest workspace's `Cargo.toml`.
fn add_member(manifest: &Path, name: &str) -> Result<()> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let edited = with_member(&text, name).with_context(|| {
        format!(
            "{}: no one-line `members = [...]` to add `{name}` to; add it by hand",
            manifest.display()
        )
    })?;
    std::fs::write(manifest, edited).with_context(|| format!("writing {}", manifest.display()))
}

/// `text` with `"name"` appended to its one-line `members = [...]`.
fn with_member(text: &str, name: &str) -> Option<String> {
    let start = text.find("\nmembers = [")? + 1;
    let end = start + text[start..].find(']')?;
    if text[start..end].contains('\n') {
        return None;
    }
    let list = text[start..end].trim_end().trim_end_matches(',');
    Some(format!(
        "{}{list}, \"{name}\"{}",
        &text[..start],
        &text[end..]
    ))
}

fn check_name(name: &str) -> Result<()> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('_')
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid {
        bail!(
            "`{name}` is not a valid tool name: use lowercase ASCII letters, digits and single `_`, \
             starting with a letter, at most {MAX_NAME} bytes (it becomes the crate name, the \
             extension id and the vendor, e.g. `weather` or `my_tool`)"
        );
    }
    if RESERVED.contains(&name) {
        bail!("`{name}` is reserved; pick another name");
    }
    Ok(())
}

fn check_host(host: &str) -> Result<()> {
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    let labels: Vec<&str> = host.split('.').collect();
    let is_ip = host.parse::<std::net::IpAddr>().is_ok();
    if host.len() > 253 || labels.len() < 2 || !labels.iter().all(|l| label_ok(l)) || is_ip {
        bail!(
            "`--http {host}`: expected a lowercase DNS host name such as `api.example.com` \
             (no scheme, port, path, wildcard or IP address; the credential's audience is \
             `https://<host>`)"
        );
    }
    Ok(())
}

/// `my_tool` → `MyTool`, the tool's type in the generated crate.
fn type_name(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn rel(path: &Path) -> String {
    path.strip_prefix(workspace::root())
        .map(PathBuf::from)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_serve_as_crate_extension_and_vendor() {
        for good in ["weather", "my_tool", "a1"] {
            check_name(good).unwrap();
        }
        for bad in [
            "",
            "My",
            "1tool",
            "my-tool",
            "tool_",
            "a__b",
            "a.b",
            "sdk",
            &"x".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn hosts_are_plain_dns_names() {
        check_host("api.example.com").unwrap();
        for bad in [
            "localhost",
            "https://api.example.com",
            "api.example.com:443",
            "*.example.com",
            "10.0.0.1",
            "Api.Example.com",
            "a..b",
        ] {
            assert!(check_host(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_member_is_appended_to_the_one_line_list() {
        let text =
            "[workspace]\nresolver = \"3\"\nmembers = [\"sdk\", \"echo\", \"fixtures/*\"]\n\n[x]\n";
        assert_eq!(
            with_member(text, "weather").unwrap(),
            "[workspace]\nresolver = \"3\"\nmembers = [\"sdk\", \"echo\", \"fixtures/*\", \"weather\"]\n\n[x]\n"
        );
        assert!(with_member("[workspace]\nmembers = [\n  \"sdk\",\n]\n", "weather").is_none());
    }

    #[test]
    fn type_names_are_camel_case() {
        assert_eq!(type_name("my_tool"), "MyTool");
        assert_eq!(type_name("weather"), "Weather");
    }
}
