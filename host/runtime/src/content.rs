//! The content blocks a `warden:tool@0.2.0` guest returns, in the lane
//! vocabulary ([`warden_core::content`]): text redacted like the
//! structured output, binary data (image, audio, a resource's blob)
//! searched for the call's staged secrets in its raw bytes and withheld
//! whole when it holds one (cutting bytes out of an image only corrupts
//! it), then bounded. A withheld block leaves a note naming its kind and
//! why: nothing is dropped without a trace.

use serde_json::{Map, Value};
use warden_core::content::{
    self, Body, ContentBlock, Media, Resource, ResourceContents, ResourceLink,
};
use warden_core::net::CallNetwork;

use crate::bindings::v0_2::exports::warden::tool::tool as wit;

/// Why a block carrying a secret is not passed on.
pub(crate) const SECRET_FOUND: &str = "it carried a secret of this call";

/// Bytes the guest's blocks carry, as the output limit counts them.
pub(crate) fn bytes(blocks: &[wit::ContentBlock]) -> u64 {
    let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
    blocks
        .iter()
        .map(|block| match &block.body {
            wit::ContentBody::Text(t) => t.len(),
            wit::ContentBody::Image(m) | wit::ContentBody::Audio(m) => {
                m.data.len() + m.mime_type.len()
            }
            wit::ContentBody::Resource(r) => {
                r.uri.len()
                    + text(&r.mime_type)
                    + match &r.contents {
                        wit::ResourceContents::Text(t) => t.len(),
                        wit::ResourceContents::Blob(b) => b.len(),
                    }
            }
            wit::ContentBody::ResourceLink(l) => {
                l.uri.len()
                    + l.name.len()
                    + text(&l.title)
                    + text(&l.description)
                    + text(&l.mime_type)
            }
        } as u64)
        .sum()
}

/// The guest's `blocks` as the call returns them: redacted, scanned, bounded.
pub(crate) fn received(
    blocks: Vec<wit::ContentBlock>,
    network: &dyn CallNetwork,
) -> Vec<ContentBlock> {
    let read = blocks
        .into_iter()
        .map(|block| match body(block.body, network) {
            Ok(body) => ContentBlock {
                body,
                annotations: block
                    .annotations
                    .map(|a| annotations(a, network))
                    .filter(|map| !map.is_empty()),
                meta: None,
            },
            Err(kind) => ContentBlock::withheld(kind, SECRET_FOUND),
        });
    content::bound(read.collect())
}

/// The block's body in the content model, its text redacted; `Err` with
/// its kind when its binary data holds a staged secret.
fn body(body: wit::ContentBody, network: &dyn CallNetwork) -> Result<Body, &'static str> {
    let redact = |text: String| network.redact(&text);
    let redact_some = |text: Option<String>| text.map(|t| network.redact(&t));
    let scanned = |data: Vec<u8>, kind| {
        if network.holds_secret(&data) {
            Err(kind)
        } else {
            Ok(data)
        }
    };
    Ok(match body {
        wit::ContentBody::Text(text) => Body::Text(redact(text)),
        wit::ContentBody::Image(media) => Body::Image(Media {
            mime_type: redact(media.mime_type),
            data: scanned(media.data, "image")?,
        }),
        wit::ContentBody::Audio(media) => Body::Audio(Media {
            mime_type: redact(media.mime_type),
            data: scanned(media.data, "audio")?,
        }),
        wit::ContentBody::Resource(resource) => Body::Resource(Resource {
            uri: redact(resource.uri),
            mime_type: redact_some(resource.mime_type),
            contents: match resource.contents {
                wit::ResourceContents::Text(text) => ResourceContents::Text(redact(text)),
                wit::ResourceContents::Blob(blob) => {
                    ResourceContents::Blob(scanned(blob, "resource")?)
                }
            },
            meta: None,
        }),
        wit::ContentBody::ResourceLink(link) => Body::ResourceLink(ResourceLink {
            uri: redact(link.uri),
            name: redact(link.name),
            title: redact_some(link.title),
            description: redact_some(link.description),
            mime_type: redact_some(link.mime_type),
            size: link.size,
        }),
    })
}

/// MCP's `annotations` object: `audience`, `priority` (kept when it is a
/// number from 0 to 1), `lastModified`.
fn annotations(annotations: wit::Annotations, network: &dyn CallNetwork) -> Map<String, Value> {
    let mut map = Map::new();
    if !annotations.audience.is_empty() {
        let audience = annotations
            .audience
            .iter()
            .map(|a| Value::from(network.redact(a)));
        map.insert("audience".into(), Value::Array(audience.collect()));
    }
    if let Some(priority) = annotations.priority.filter(|p| (0.0..=1.0).contains(p))
        && let Some(number) = serde_json::Number::from_f64(priority)
    {
        map.insert("priority".into(), Value::Number(number));
    }
    if let Some(modified) = annotations.last_modified {
        map.insert(
            "lastModified".into(),
            Value::from(network.redact(&modified)),
        );
    }
    map
}

#[cfg(test)]
mod tests {
    use warden_core::net::DenyAll;

    use super::*;
    use crate::state::OneSecret;

    fn block(body: wit::ContentBody) -> wit::ContentBlock {
        wit::ContentBlock {
            body,
            annotations: None,
        }
    }

    fn png(bytes: &[u8]) -> wit::ContentBody {
        wit::ContentBody::Image(wit::Media {
            mime_type: "image/png".into(),
            data: bytes.to_vec(),
        })
    }

    #[test]
    fn a_secret_in_an_image_withholds_the_image_and_text_is_redacted() {
        let hidden = [b"\x89PNG\0\xff".as_slice(), b"ghp_secret", b"\0\x01"].concat();
        let blocks = vec![
            block(png(&hidden)),
            block(png(b"\x89PNG clean")),
            block(wit::ContentBody::Text("token ghp_secret".into())),
        ];
        let bytes_before = bytes(&blocks);
        let kept = received(blocks, &OneSecret("ghp_secret"));
        assert_eq!(bytes_before, (hidden.len() + 9 + 10 + 9 + 16) as u64);
        assert_eq!(
            kept[0],
            ContentBlock::withheld("image", SECRET_FOUND),
            "{kept:?}"
        );
        assert!(matches!(&kept[1].body, Body::Image(m) if m.data == b"\x89PNG clean"));
        assert_eq!(kept[2].body, Body::Text("token [REDACTED]".into()));
    }

    #[test]
    fn annotations_become_mcp_fields_and_a_priority_out_of_range_is_dropped() {
        let annotated = |priority| wit::ContentBlock {
            body: wit::ContentBody::Text("hi".into()),
            annotations: Some(wit::Annotations {
                audience: vec!["user".into()],
                priority: Some(priority),
                last_modified: Some("2026-12-07T00:00:00Z".into()),
            }),
        };
        let kept = received(vec![annotated(0.5), annotated(7.0)], &DenyAll);
        let mcp = kept[0].to_mcp();
        assert_eq!(mcp["annotations"]["audience"][0], "user");
        assert_eq!(mcp["annotations"]["priority"], 0.5);
        assert_eq!(mcp["annotations"]["lastModified"], "2026-12-07T00:00:00Z");
        assert!(kept[1].to_mcp()["annotations"].get("priority").is_none());
    }
}
