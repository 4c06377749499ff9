//! A server's content blocks as the lane passes them on: read into the
//! [`warden_core::content`] model, binary data scanned in its decoded form
//! for the secrets of the server's account, and bounded.
//!
//! Text was redacted before rmcp parsed the answer (egress redacts every
//! body). Base64 hides bytes from that search, so an image, audio or blob
//! is decoded and searched again; a block that carries a secret is
//! withheld whole (cutting bytes out of an image would only corrupt it),
//! and so is one whose base64 the first redaction broke. A block the model
//! cannot read becomes a note naming its kind and why: nothing is dropped
//! without a trace.

use serde_json::Value;
use warden_core::content::{self, ContentBlock};
use warden_egress::redact::{REDACTED, Redactor};

/// Why a block carrying a secret is not passed on.
pub(crate) const SECRET_FOUND: &str = "it carried a secret of this call";

/// `blocks` (MCP content blocks as JSON) in the content model: checked,
/// scanned with `redactor` (needed only when one carries binary data; see
/// [`carries_binary`]) and bounded.
pub(crate) fn received(blocks: &[Value], redactor: Option<&Redactor>) -> Vec<ContentBlock> {
    let read = blocks.iter().map(|raw| {
        let kind: String = raw
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .chars()
            .filter(|c| !c.is_control())
            .take(40)
            .collect();
        let kind = kind.as_str();
        match ContentBlock::from_mcp(raw) {
            Ok(block) => match (block.body.binary(), redactor) {
                (Some(bytes), Some(redactor)) if redactor.contains(bytes) => {
                    ContentBlock::withheld(kind, SECRET_FOUND)
                }
                (Some(_), None) => ContentBlock::withheld(kind, "it could not be scanned"),
                _ => block,
            },
            Err(_) if raw.to_string().contains(REDACTED) => {
                ContentBlock::withheld(kind, SECRET_FOUND)
            }
            Err(error) => {
                tracing::warn!(%error, "a hosted server sent a content block that is not valid");
                ContentBlock::withheld(kind, &error.to_string())
            }
        }
    });
    content::bound(read.collect())
}

/// Whether any of `blocks` may carry binary data (and so needs a redactor).
pub(crate) fn carries_binary(blocks: &[Value]) -> bool {
    blocks.iter().any(|block| {
        matches!(
            block.get("type").and_then(Value::as_str),
            Some("image" | "audio" | "resource")
        )
    })
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::json;
    use warden_core::content::Body;

    use super::*;

    const SECRET: &[u8] = b"ghp_abcdefghijklmnop0123456789";

    fn image(bytes: &[u8]) -> Value {
        json!({"type": "image", "mimeType": "image/png", "data": STANDARD.encode(bytes)})
    }

    fn note(block: &ContentBlock) -> &str {
        match &block.body {
            Body::Text(text) => text,
            other => panic!("not a note: {other:?}"),
        }
    }

    #[test]
    fn an_image_hiding_a_secret_in_its_bytes_is_withheld_and_a_clean_one_passes() {
        let redactor = Redactor::new([SECRET]);
        // Hex of the secret inside the bytes: invisible in base64 at this
        // alignment, found once decoded.
        let mut hidden = b"\x89PNG\r\n".to_vec();
        hidden.extend(b"tEXt:");
        hidden.extend(
            SECRET
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
                .bytes(),
        );
        let clean = b"\x89PNG\r\n\x1a\nclean".to_vec();
        let blocks = received(&[image(&hidden), image(&clean)], Some(&redactor));
        assert_eq!(
            note(&blocks[0]),
            "[image content withheld: it carried a secret of this call]"
        );
        assert!(matches!(&blocks[1].body, Body::Image(m) if m.data == clean));
    }

    #[test]
    fn a_block_the_text_redaction_broke_or_that_is_invalid_becomes_a_note() {
        let broken = json!({"type": "image", "mimeType": "image/png", "data": "iVBO[REDACTED]w=="});
        let invalid = json!({"type": "audio", "mimeType": "audio/wav", "data": "%%%"});
        let unknown = json!({"type": "hologram"});
        let blocks = received(&[broken, invalid, unknown], Some(&Redactor::default()));
        assert_eq!(
            note(&blocks[0]),
            "[image content withheld: it carried a secret of this call]"
        );
        assert_eq!(
            note(&blocks[1]),
            "[audio content withheld: the audio block's `data` is not base64]"
        );
        assert_eq!(
            note(&blocks[2]),
            "[hologram content withheld: unknown content type `hologram`]"
        );
    }

    #[test]
    fn binary_data_is_never_passed_unscanned() {
        let blocks = received(&[image(b"abc")], None);
        assert_eq!(
            note(&blocks[0]),
            "[image content withheld: it could not be scanned]"
        );
        assert!(carries_binary(&[image(b"abc")]));
        assert!(!carries_binary(&[json!({"type": "text", "text": "a"})]));
    }
}
