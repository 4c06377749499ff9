//! Package directories for tests, made from the bundled `packages/echo`.

use std::path::{Path, PathBuf};

/// The files of `packages/echo` a copy carries (its `SHA256SUMS` is left
/// out, so a copy may be edited).
pub const ECHO_FILES: &[&str] = &[
    "manifest.toml",
    "prompts/echo/echo.md",
    "schemas/echo/echo.input.v1.json",
    "schemas/echo/echo.output.v1.json",
    "wasm/echo.wasm",
];

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A copy of `packages/echo` in `dir`, with each `(from, to)` replaced in its
/// manifest (e.g. `("id = \"echo\"", "id = \"other\"")`).
pub fn echo_variant(dir: &Path, edits: &[(&str, &str)]) -> PathBuf {
    for rel in ECHO_FILES {
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("create dir");
        std::fs::copy(repo_root().join("packages/echo").join(rel), &to).expect("copy");
    }
    let manifest = dir.join("manifest.toml");
    let mut text = std::fs::read_to_string(&manifest).expect("manifest");
    for (from, to) in edits {
        assert!(text.contains(from), "the echo manifest has `{from}`");
        text = text.replace(from, to);
    }
    std::fs::write(&manifest, text).expect("write manifest");
    dir.to_path_buf()
}
