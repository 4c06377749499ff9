//! What `warden call` does with a tool's content blocks: text is shown,
//! data (images, audio, a resource's bytes) is saved under `--output-dir`
//! with a line saying where, or named in a line saying how to save it.
//! Nothing is written unless the user named the directory, and no file is
//! overwritten (a taken name gets a suffix).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde_json::Value;
use warden_core::content::{Body, ContentBlock, ResourceContents};

/// Where each block's data was saved (`None`: not saved, or no data).
pub(super) fn save(
    dir: Option<&Path>,
    capability: &str,
    blocks: &[ContentBlock],
) -> Result<Vec<Option<PathBuf>>> {
    let Some(dir) = dir else {
        return Ok(vec![None; blocks.len()]);
    };
    if blocks.iter().any(|b| b.body.binary().is_some()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let stem: String = capability
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut saved = Vec::with_capacity(blocks.len());
    for (index, block) in blocks.iter().enumerate() {
        saved.push(match block.body.binary() {
            Some(data) => {
                let ext = extension(block.body.mime_type());
                Some(write_new(dir, &format!("{stem}-{}", index + 1), ext, data)?)
            }
            None => None,
        });
    }
    Ok(saved)
}

/// Write `data` to `dir/<name>.<ext>`, or `<name>-2.<ext>`, … when taken.
fn write_new(dir: &Path, name: &str, ext: &str, data: &[u8]) -> Result<PathBuf> {
    for attempt in 1..1000 {
        let file = match attempt {
            1 => format!("{name}.{ext}"),
            n => format!("{name}-{n}.{ext}"),
        };
        let path = dir.join(file);
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut out) => {
                out.write_all(data)
                    .with_context(|| format!("writing {}", path.display()))?;
                return Ok(path);
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => {
                return Err(error).with_context(|| format!("creating {}", path.display()));
            }
        }
    }
    anyhow::bail!("{} has no free name for {name}.{ext}", dir.display())
}

/// A file extension for a media type (`bin` when unknown).
fn extension(mime: Option<&str>) -> &'static str {
    let essence = mime
        .and_then(|m| m.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("image/png") => "png",
        Some("image/jpeg") => "jpg",
        Some("image/gif") => "gif",
        Some("image/webp") => "webp",
        Some("image/svg+xml") => "svg",
        Some("audio/wav" | "audio/x-wav" | "audio/wave") => "wav",
        Some("audio/mpeg") => "mp3",
        Some("audio/ogg") => "ogg",
        Some("text/plain") => "txt",
        Some("application/json") => "json",
        Some("application/pdf") => "pdf",
        _ => "bin",
    }
}

/// The blocks as lines for a terminal: text as it is, one bracketed line
/// for data (saved or how to save it) and for links.
pub(super) fn lines(blocks: &[ContentBlock], saved: &[Option<PathBuf>]) -> Vec<String> {
    blocks
        .iter()
        .zip(saved)
        .map(|(block, saved)| {
            let data = |what: String| match saved {
                Some(path) => format!("[{what}] saved to {}", path.display()),
                None => format!("[{what}] not shown: pass --output-dir DIR to save it"),
            };
            match &block.body {
                Body::Text(text) => text.clone(),
                Body::Image(media) | Body::Audio(media) => data(format!(
                    "{} {}, {} bytes",
                    block.body.kind(),
                    media.mime_type,
                    media.data.len()
                )),
                Body::Resource(resource) => match &resource.contents {
                    ResourceContents::Text(text) => format!("[resource {}]\n{text}", resource.uri),
                    ResourceContents::Blob(blob) => data(format!(
                        "resource {} {}, {} bytes",
                        resource.uri,
                        resource.mime_type.as_deref().unwrap_or("bytes"),
                        blob.len()
                    )),
                },
                Body::ResourceLink(link) => format!("[resource link {}: {}]", link.name, link.uri),
                _ => warden_core::content::describe(std::slice::from_ref(block)),
            }
        })
        .collect()
}

/// The blocks as MCP JSON; a saved block names its file (`savedTo`)
/// instead of carrying its base64.
pub(super) fn json(blocks: &[ContentBlock], saved: &[Option<PathBuf>]) -> Value {
    let blocks = blocks.iter().zip(saved).map(|(block, saved)| {
        let mut value = block.to_mcp();
        if let Some(path) = saved {
            if let Some(object) = value.as_object_mut() {
                object.remove("data");
                object.insert("savedTo".into(), path.display().to_string().into());
            }
            if let Some(resource) = value.get_mut("resource").and_then(Value::as_object_mut) {
                resource.remove("blob");
                resource.insert("savedTo".into(), path.display().to_string().into());
                if let Some(object) = value.as_object_mut() {
                    object.remove("savedTo");
                }
            }
        }
        value
    });
    Value::Array(blocks.collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn image() -> ContentBlock {
        ContentBlock::from_mcp(
            &json!({"type": "image", "mimeType": "image/png", "data": "iVBORw=="}),
        )
        .unwrap()
    }

    #[test]
    fn data_is_saved_under_a_free_name_and_named_in_lines_and_json() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mcp-x.pic-2.png"), b"taken").unwrap();
        let blocks = [ContentBlock::text("hi"), image()];
        let saved = save(Some(dir.path()), "mcp-x.pic", &blocks).unwrap();
        let path = dir.path().join("mcp-x.pic-2-2.png");
        assert_eq!(saved, [None, Some(path.clone())]);
        assert_eq!(std::fs::read(&path).unwrap(), b"\x89PNG");
        let lines = lines(&blocks, &saved);
        assert_eq!(lines[0], "hi");
        assert_eq!(
            lines[1],
            format!("[image image/png, 4 bytes] saved to {}", path.display())
        );
        let json = json(&blocks, &saved);
        assert_eq!(json[1]["savedTo"], path.display().to_string());
        assert!(json[1].get("data").is_none());
    }

    #[test]
    fn without_a_directory_nothing_is_written_and_the_line_says_how() {
        let saved = save(None, "t", &[image()]).unwrap();
        assert_eq!(saved, [None]);
        assert_eq!(
            lines(&[image()], &saved),
            ["[image image/png, 4 bytes] not shown: pass --output-dir DIR to save it"]
        );
        assert_eq!(json(&[image()], &saved)[0]["data"], "iVBORw==");
    }
}
