//! The manifest reader (`warden_manifest::load_from_files`): never panics,
//! and every diagnostic names the manifest file and a line and column that
//! exist in it, with a message; the renderings of a refusal never panic.

use std::path::Path;

use warden_manifest::{MemFiles, ValidationOptions, load_from_files};

/// Files a fuzzed manifest may reference (the seeds do).
fn files() -> MemFiles {
    MemFiles::new()
        .with(
            "schemas/say.json",
            r#"{"type":"object","properties":{"text":{"type":"string"}},"additionalProperties":false}"#,
        )
        .with("prompts/say.md", "Say something.")
        .with("wasm/echo.wasm", b"\0asm\x0d\0\x01\0".to_vec())
}

pub fn run(data: &[u8]) {
    let opts = ValidationOptions::default();
    let Err(diagnostics) =
        load_from_files("manifest.toml", data, Path::new("fuzz"), &files(), &opts)
    else {
        return;
    };
    assert!(!diagnostics.is_empty(), "a refusal without a diagnostic");
    // Positions are reported in the valid UTF-8 prefix (all of it, usually).
    let valid = match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&data[..e.valid_up_to()]).expect("valid prefix"),
    };
    let lines: Vec<&str> = valid.split('\n').collect();
    for diagnostic in &diagnostics {
        assert_eq!(diagnostic.file, "manifest.toml", "{diagnostic:?}");
        assert!(!diagnostic.message.is_empty(), "{diagnostic:?}");
        assert!(
            (1..=lines.len()).contains(&diagnostic.line),
            "line {} of a manifest of {} lines: {diagnostic:?}",
            diagnostic.line,
            lines.len()
        );
        let width = lines[diagnostic.line - 1].chars().count();
        assert!(
            (1..=width + 1).contains(&diagnostic.column),
            "column {} of a line of {width} characters: {diagnostic:?}",
            diagnostic.column
        );
    }
    let _ = diagnostics.render();
    let json: serde_json::Value =
        serde_json::from_str(&diagnostics.to_json()).expect("the JSON rendering is JSON");
    assert_eq!(
        json["diagnostics"].as_array().map(Vec::len),
        Some(diagnostics.len())
    );
}
