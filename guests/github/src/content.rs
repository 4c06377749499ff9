//! `get_file_content`: GitHub's contents answer decoded to UTF-8 text, or a
//! clear refusal for directories, symlinks, submodules, binary and large files.

use serde::{Deserialize, Serialize};
use warden_guest::{Failure, FailureKind};

use crate::compact::{parse, unexpected};

/// Largest file returned as text (bytes). Larger files are refused rather
/// than truncated, so a model never edits from a partial view by mistake.
pub(crate) const FILE_MAX: u64 = 128 * 1024;

#[derive(Deserialize)]
struct RawFile {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    sha: String,
    size: u64,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
}

/// A text file.
#[derive(Debug, Serialize)]
pub(crate) struct FileContent {
    path: String,
    sha: String,
    size: u64,
    /// Encoding of `text`: always `utf-8`.
    encoding: &'static str,
    text: String,
    html_url: Option<String>,
}

fn not_a_file(what: &str) -> Failure {
    Failure::input(
        "not_a_file",
        format!("the path is a {what}, not a file; give the path of a file"),
    )
}

fn too_large() -> Failure {
    Failure::new(
        FailureKind::OutputTooLarge,
        "file_too_large",
        format!(
            "the file is larger than {} KiB; this tool returns only small text files",
            FILE_MAX / 1024
        ),
    )
}

pub(crate) fn file(body: &[u8]) -> Result<FileContent, Failure> {
    let value: serde_json::Value = parse(body)?;
    if value.is_array() {
        return Err(not_a_file("directory"));
    }
    let raw: RawFile = serde_json::from_value(value).map_err(|_| unexpected())?;
    match raw.kind.as_str() {
        "file" => {}
        "dir" => return Err(not_a_file("directory")),
        "symlink" => return Err(not_a_file("symlink")),
        "submodule" => return Err(not_a_file("submodule")),
        _ => return Err(unexpected()),
    }
    if raw.size > FILE_MAX {
        return Err(too_large());
    }
    // Files over 1 MB come back with `encoding: "none"` and no content.
    if raw.encoding.as_deref() != Some("base64") {
        return Err(too_large());
    }
    let bytes = decode_base64(raw.content.as_deref().unwrap_or_default()).ok_or_else(unexpected)?;
    if bytes.len() as u64 > FILE_MAX {
        return Err(too_large());
    }
    if bytes.contains(&0) {
        return Err(binary());
    }
    let text = String::from_utf8(bytes).map_err(|_| binary())?;
    Ok(FileContent {
        path: raw.path,
        sha: raw.sha,
        size: raw.size,
        encoding: "utf-8",
        text,
        html_url: raw.html_url,
    })
}

fn binary() -> Failure {
    Failure::input(
        "binary_file",
        "the file is not UTF-8 text; this tool returns only text files",
    )
}

/// Decode standard base64 (RFC 4648, padded), skipping the line breaks
/// GitHub inserts every 60 characters. `None` on any other malformation.
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    fn value(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    }
    let symbols: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\n' | b'\r'))
        .collect();
    if !symbols.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(symbols.len() / 4 * 3);
    let quads = symbols.len() / 4;
    for (i, quad) in symbols.chunks_exact(4).enumerate() {
        let padding = quad.iter().rev().take_while(|&&b| b == b'=').count();
        if padding > 2 || (padding > 0 && i + 1 != quads) {
            return None;
        }
        let mut n = 0u32;
        for &c in &quad[..4 - padding] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * padding as u32;
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - padding]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(content: &str, size: u64) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "type": "file", "encoding": "base64", "size": size, "name": "lib.rs", "path": "src/lib.rs",
            "sha": "abc123", "content": content, "html_url": "https://github.com/o/r/blob/main/src/lib.rs",
            "_links": { "self": "https://api.github.com/repos/o/r/contents/src/lib.rs" }
        }))
        .unwrap()
    }

    #[test]
    fn base64_round_trips() {
        assert_eq!(decode_base64("").unwrap(), b"");
        assert_eq!(decode_base64("Zg==").unwrap(), b"f");
        assert_eq!(decode_base64("Zm8=").unwrap(), b"fo");
        assert_eq!(decode_base64("Zm9v").unwrap(), b"foo");
        assert_eq!(decode_base64("Zm9v\nYmFy\n").unwrap(), b"foobar");
        assert_eq!(decode_base64("/+8=").unwrap(), [0xff, 0xef]);
        for bad in ["Zm9", "Zm9v!", "Z===", "Zg==Zm9v", "Zm 9v"] {
            assert!(decode_base64(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn text_files_are_decoded() {
        // "fn main() {}\n" wrapped like GitHub does.
        let out = file(&answer("Zm4gbWFp\nbigpIHt9Cg==\n", 13)).unwrap();
        assert_eq!(out.text, "fn main() {}\n");
        assert_eq!(
            (out.path.as_str(), out.sha.as_str(), out.size, out.encoding),
            ("src/lib.rs", "abc123", 13, "utf-8")
        );
    }

    #[test]
    fn binary_large_and_non_files_are_refused() {
        assert_eq!(file(&answer("AAEC", 3)).unwrap_err().code, "binary_file");
        assert_eq!(file(&answer("/w==", 1)).unwrap_err().code, "binary_file");
        let large = file(&answer("", FILE_MAX + 1)).unwrap_err();
        assert_eq!(
            (large.kind, large.code.as_str()),
            (FailureKind::OutputTooLarge, "file_too_large")
        );
        let none = serde_json::to_vec(&json!({
            "type": "file", "encoding": "none", "size": 5_000_000, "path": "big.bin", "sha": "s", "content": ""
        }))
        .unwrap();
        assert_eq!(file(&none).unwrap_err().code, "file_too_large");
        assert_eq!(
            file(b"[{\"type\":\"file\"}]").unwrap_err().code,
            "not_a_file"
        );
        let link =
            serde_json::to_vec(&json!({ "type": "symlink", "size": 3, "path": "l", "sha": "s" }))
                .unwrap();
        assert_eq!(file(&link).unwrap_err().code, "not_a_file");
        assert_eq!(file(b"not json").unwrap_err().code, "unexpected_response");
    }
}
