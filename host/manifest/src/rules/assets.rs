//! Schema and prompt refs: package-relative paths to files that exist, with
//! schemas ≤ 64 KiB compiling as JSON Schema and prompts ≤ 16 KiB of UTF-8.

use std::io::ErrorKind;
use warden_core::schema::{Formats, SchemaCheck};

use serde_json::Value;

use super::Ctx;
use crate::diag::Code;
use crate::model::AssetRefs;
use crate::options::{MAX_PROMPT_BYTES, MAX_REFERENCED_BYTES, MAX_SCHEMA_BYTES};
use crate::reader::Table;
use crate::span::L;

/// What a tool's refs resolve to.
#[derive(Debug, Default)]
pub(super) struct Assets {
    pub(super) input_schema: Option<Value>,
    pub(super) output_schema: Option<Value>,
    pub(super) prompt: Option<String>,
    pub(super) refs: AssetRefs,
}

/// Why `path` is not a package-relative path, if it is not. Refs use only
/// ASCII alphanumerics and `. _ - /`, at most 512 bytes; the `standard:`
/// namespace belongs to the host.
pub(crate) fn ref_problem(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        Some("is empty")
    } else if path.len() > 512 {
        Some("is longer than 512 bytes")
    } else if path.starts_with("standard:") {
        Some("is in the host's `standard:` namespace")
    } else if path.contains('\\') {
        Some("contains a backslash")
    } else if path.contains("://") || path.contains(':') {
        Some("is a URL or a drive path")
    } else if path.starts_with('/') {
        Some("is an absolute path")
    } else if path.split('/').any(|seg| seg == "..") {
        Some("contains `..`")
    } else if path.split('/').any(|seg| seg.is_empty() || seg == ".") {
        Some("has an empty or `.` segment")
    } else if !path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
    {
        Some("contains characters other than ASCII letters, digits, `.`, `_`, `-` and `/`")
    } else {
        None
    }
}

/// Check that `r` is package-relative; records an error and returns false otherwise.
pub(super) fn check_ref(cx: &mut Ctx<'_, '_>, r: &L<String>) -> bool {
    match ref_problem(&r.v) {
        Some(problem) => {
            cx.sink
                .error(Code::RefPath, &r.at, format!("ref `{}` {problem}", r.v));
            false
        }
        None => true,
    }
}

/// Check the schema and prompt refs of a tool. `input_schema_ref` is
/// required unless the tool binds a `standard_op` (whatever its visibility);
/// `prompt_doc_ref` is optional.
pub(super) fn check_tool_assets(
    t: &Table<'_, '_>,
    cx: &mut Ctx<'_, '_>,
    standard_op: bool,
) -> Assets {
    let sink = &mut cx.sink;
    let input = t.str(sink, "input_schema_ref");
    let output = t.str(sink, "output_schema_ref");
    let prompt = t.str(sink, "prompt_doc_ref");
    if !standard_op && !t.has("input_schema_ref") {
        sink.error(
            Code::MissingAsset,
            &t.at,
            "the tool has no `input_schema_ref`",
        );
    }
    let refs = AssetRefs {
        input_schema: input.as_ref().map(|r| r.v.clone()),
        output_schema: output.as_ref().map(|r| r.v.clone()),
        prompt_doc: prompt.as_ref().map(|r| r.v.clone()),
    };
    Assets {
        refs,
        input_schema: input.and_then(|r| schema(cx, &r)),
        output_schema: output.and_then(|r| schema(cx, &r)),
        prompt: prompt.and_then(|r| prompt_doc(cx, &r)),
    }
}

/// Whether `path` is the memory lane's, not a file of the package: a
/// `[memory]` package's schemas and guidance come from the host's tables
/// (`schemas/memory/*`), and the lane loads none of its assets (mem0 names
/// the native provider's prompt docs and ships none). Only the ref's form is
/// checked; Warden does not run the lane (`Package::unsupported_lane` says
/// so, once, instead of one missing file per tool).
fn host_served(cx: &Ctx<'_, '_>) -> bool {
    cx.memory
}

/// Read a ref with `limit`; records ref errors.
fn read(cx: &mut Ctx<'_, '_>, r: &L<String>, limit: usize) -> Option<Vec<u8>> {
    if !check_ref(cx, r) {
        return None;
    }
    match cx.files.read(&r.v, limit) {
        Ok(bytes) => {
            let before = cx.referenced_bytes;
            cx.referenced_bytes = before.saturating_add(bytes.len().min(limit + 1));
            if cx.referenced_bytes <= MAX_REFERENCED_BYTES {
                return Some(bytes);
            }
            if before <= MAX_REFERENCED_BYTES {
                cx.sink.error(
                    Code::ReferencesTooLarge,
                    &r.at,
                    format!(
                        "with `{}` the package references more than 4 MiB of schemas and \
                         prompt docs (each reference counted: every one is parsed on its own)",
                        r.v
                    ),
                );
            }
            None
        }
        Err(e) => {
            let d = cx.sink.error(
                Code::RefMissing,
                &r.at,
                format!("`{}` is not in the package", r.v),
            );
            if e.kind() != ErrorKind::NotFound {
                d.note(e.to_string());
            }
            None
        }
    }
}

fn schema(cx: &mut Ctx<'_, '_>, r: &L<String>) -> Option<Value> {
    if host_served(cx) {
        check_ref(cx, r);
        return None;
    }
    let bytes = read(cx, r, MAX_SCHEMA_BYTES)?;
    if bytes.len() > MAX_SCHEMA_BYTES {
        cx.sink.error(
            Code::SchemaTooLarge,
            &r.at,
            format!("schema `{}` is larger than 64 KiB", r.v),
        );
        return None;
    }
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            cx.sink
                .error(
                    Code::SchemaInvalid,
                    &r.at,
                    format!("schema `{}` is not JSON", r.v),
                )
                .note(format!("{}:{}:{}: {e}", r.v, e.line(), e.column()));
            return None;
        }
    };
    // The runtime's own checker: `check` accepts exactly what `install` does.
    if let Err(reason) = SchemaCheck::compile(&value, Formats::Assert) {
        cx.sink
            .error(
                Code::SchemaInvalid,
                &r.at,
                format!("schema `{}` is not a valid JSON Schema", r.v),
            )
            .note(reason);
        return None;
    }
    Some(value)
}

fn prompt_doc(cx: &mut Ctx<'_, '_>, r: &L<String>) -> Option<String> {
    if host_served(cx) {
        check_ref(cx, r);
        return None;
    }
    let bytes = read(cx, r, MAX_PROMPT_BYTES)?;
    if bytes.len() > MAX_PROMPT_BYTES {
        cx.sink.error(
            Code::PromptTooLarge,
            &r.at,
            format!("prompt doc `{}` is larger than 16 KiB", r.v),
        );
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(text) => {
            super::text::check_prompt(cx, r, &text);
            Some(text)
        }
        Err(_) => {
            cx.sink.error(
                Code::PromptNotUtf8,
                &r.at,
                format!("prompt doc `{}` is not UTF-8", r.v),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ref_problem;

    #[test]
    fn refs_must_be_package_relative() {
        assert_eq!(ref_problem("schemas/x/search.input.v1.json"), None);
        for bad in [
            "/etc/passwd",
            "../x.json",
            "a/../b",
            "https://x/y.json",
            "a\\b",
            "C:/x",
            "a//b",
            "schemas/a b.json",
            "schemas/é.json",
            "standard:messaging/send_message.input.v1",
            "./a",
            "",
        ] {
            assert!(ref_problem(bad).is_some(), "{bad}");
        }
    }
}
