//! One content model for every lane: the blocks a tool returns beside (or
//! instead of) its structured output, as MCP defines them: text, an image,
//! audio, an embedded resource, a link to a resource, each with the
//! sender's `annotations` and `_meta`.
//!
//! Binary data is held decoded, so a lane can scan what a block carries
//! (a secret hidden in an image's bytes is not in its base64 text) and a
//! surface can save it. [`ContentBlock::from_mcp`] reads one MCP block and
//! names what is wrong with a bad one; [`ContentBlock::to_mcp`] writes it
//! back; [`bound`] applies the bounds below; [`describe`] renders blocks as
//! text for a reader that sees only text.
//!
//! ```
//! use warden_core::content::{Body, ContentBlock};
//! let block = ContentBlock::from_mcp(&serde_json::json!(
//!     {"type": "image", "mimeType": "image/png", "data": "iVBORw=="})).unwrap();
//! let Body::Image(image) = &block.body else { unreachable!() };
//! assert_eq!(image.data, b"\x89PNG");
//! assert_eq!(block.to_mcp()["data"], "iVBORw==");
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

/// Blocks one result keeps; past it, one note says how many were withheld.
pub const MAX_BLOCKS: usize = 64;
/// Bytes of one block (decoded data, or text); a larger block is replaced
/// by a note naming its kind and size.
pub const MAX_BLOCK_BYTES: usize = 4 << 20;
/// Bytes of all blocks of one result; past it, one note says how many
/// blocks were withheld.
pub const MAX_CONTENT_BYTES: usize = 8 << 20;

/// One block of a tool's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentBlock {
    /// What the block carries.
    pub body: Body,
    /// The sender's `annotations` (audience, priority, lastModified), as sent.
    pub annotations: Option<Map<String, Value>>,
    /// The sender's `_meta`, as sent.
    pub meta: Option<Map<String, Value>>,
}

/// What a block carries.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Body {
    /// Text.
    Text(String),
    /// An image (`mimeType` such as `image/png`).
    Image(Media),
    /// Audio (`mimeType` such as `audio/wav`).
    Audio(Media),
    /// A resource embedded whole.
    Resource(Resource),
    /// A link to a resource the reader may fetch.
    ResourceLink(ResourceLink),
}

/// Image or audio data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    /// Its media type, as the sender named it.
    pub mime_type: String,
    /// The bytes, decoded from base64.
    pub data: Vec<u8>,
}

/// An embedded resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its media type, when named.
    pub mime_type: Option<String>,
    /// Its text or bytes.
    pub contents: ResourceContents,
    /// The resource's own `_meta`.
    pub meta: Option<Map<String, Value>>,
}

/// What an embedded resource holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Bytes, decoded from base64.
    Blob(Vec<u8>),
}

/// A link to a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A title for people.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its media type, when named.
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    pub size: Option<u64>,
}

/// Why a block could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContentError {
    /// The block is not a JSON object.
    #[error("a content block is not a JSON object")]
    NotAnObject,
    /// `type` names no kind this model knows.
    #[error("unknown content type `{0}`")]
    UnknownType(String),
    /// A required field is absent or not of its type.
    #[error("the {kind} block's `{field}` is missing or not a {expected}")]
    Field {
        /// The block's kind.
        kind: &'static str,
        /// The field.
        field: &'static str,
        /// The JSON type it must have.
        expected: &'static str,
    },
    /// Data that must be base64 is not.
    #[error("the {kind} block's `{field}` is not base64")]
    NotBase64 {
        /// The block's kind.
        kind: &'static str,
        /// The field.
        field: &'static str,
    },
}

impl Body {
    /// The block's MCP `type`: `text`, `image`, `audio`, `resource`,
    /// `resource_link`.
    pub fn kind(&self) -> &'static str {
        match self {
            Body::Text(_) => "text",
            Body::Image(_) => "image",
            Body::Audio(_) => "audio",
            Body::Resource(_) => "resource",
            Body::ResourceLink(_) => "resource_link",
        }
    }

    /// The bytes the block carries that are not text: image or audio data,
    /// a resource's blob.
    pub fn binary(&self) -> Option<&[u8]> {
        match self {
            Body::Image(media) | Body::Audio(media) => Some(&media.data),
            Body::Resource(Resource {
                contents: ResourceContents::Blob(blob),
                ..
            }) => Some(blob),
            _ => None,
        }
    }

    /// The media type of the data, when named.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Body::Text(_) => None,
            Body::Image(media) | Body::Audio(media) => Some(&media.mime_type),
            Body::Resource(resource) => resource.mime_type.as_deref(),
            Body::ResourceLink(link) => link.mime_type.as_deref(),
        }
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(Body::Text(text.into()))
    }

    /// A block with `body`, no annotations, no `_meta`.
    pub fn of(body: Body) -> Self {
        ContentBlock {
            body,
            annotations: None,
            meta: None,
        }
    }

    /// The note that stands for a block that was not passed on: its kind
    /// and why, for the reader to see that something was there.
    pub fn withheld(kind: &str, why: &str) -> Self {
        Self::text(format!("[{kind} content withheld: {why}]"))
    }

    /// Bytes the block carries (decoded data and text), as [`bound`]
    /// counts them.
    pub fn size(&self) -> usize {
        let fields = |map: &Option<Map<String, Value>>| {
            map.as_ref()
                .map_or(0, |m| serde_json::to_vec(m).map_or(0, |b| b.len()))
        };
        let body = match &self.body {
            Body::Text(text) => text.len(),
            Body::Image(media) | Body::Audio(media) => media.data.len() + media.mime_type.len(),
            Body::Resource(resource) => {
                resource.uri.len()
                    + fields(&resource.meta)
                    + match &resource.contents {
                        ResourceContents::Text(text) => text.len(),
                        ResourceContents::Blob(blob) => blob.len(),
                    }
            }
            Body::ResourceLink(link) => {
                link.uri.len()
                    + link.name.len()
                    + link.title.as_ref().map_or(0, String::len)
                    + link.description.as_ref().map_or(0, String::len)
            }
        };
        body + fields(&self.annotations) + fields(&self.meta)
    }

    /// Read one MCP content block.
    pub fn from_mcp(value: &Value) -> Result<Self, ContentError> {
        let object = value.as_object().ok_or(ContentError::NotAnObject)?;
        let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
        let body = match kind {
            "text" => Body::Text(string(object, "text", "text")?),
            "image" => Body::Image(media(object, "image")?),
            "audio" => Body::Audio(media(object, "audio")?),
            "resource" => {
                let resource = object.get("resource").and_then(Value::as_object).ok_or(
                    ContentError::Field {
                        kind: "resource",
                        field: "resource",
                        expected: "object",
                    },
                )?;
                Body::Resource(embedded(resource)?)
            }
            "resource_link" => Body::ResourceLink(ResourceLink {
                uri: string(object, "resource_link", "uri")?,
                name: string(object, "resource_link", "name")?,
                title: optional(object, "title"),
                description: optional(object, "description"),
                mime_type: optional(object, "mimeType"),
                size: object.get("size").and_then(Value::as_u64),
            }),
            other => return Err(ContentError::UnknownType(other.chars().take(40).collect())),
        };
        Ok(ContentBlock {
            body,
            annotations: object
                .get("annotations")
                .and_then(Value::as_object)
                .cloned(),
            meta: object.get("_meta").and_then(Value::as_object).cloned(),
        })
    }

    /// The block as MCP writes it.
    pub fn to_mcp(&self) -> Value {
        let mut block = match &self.body {
            Body::Text(text) => json!({"type": "text", "text": text}),
            Body::Image(media) | Body::Audio(media) => json!({
                "type": self.body.kind(),
                "mimeType": media.mime_type,
                "data": STANDARD.encode(&media.data),
            }),
            Body::Resource(resource) => {
                let mut inner = Map::new();
                inner.insert("uri".into(), resource.uri.clone().into());
                if let Some(mime) = &resource.mime_type {
                    inner.insert("mimeType".into(), mime.clone().into());
                }
                match &resource.contents {
                    ResourceContents::Text(text) => {
                        inner.insert("text".into(), text.clone().into())
                    }
                    ResourceContents::Blob(blob) => {
                        inner.insert("blob".into(), STANDARD.encode(blob).into())
                    }
                };
                if let Some(meta) = &resource.meta {
                    inner.insert("_meta".into(), Value::Object(meta.clone()));
                }
                json!({"type": "resource", "resource": inner})
            }
            Body::ResourceLink(link) => {
                let mut block =
                    json!({"type": "resource_link", "uri": link.uri, "name": link.name});
                for (key, value) in [
                    ("title", &link.title),
                    ("description", &link.description),
                    ("mimeType", &link.mime_type),
                ] {
                    if let Some(value) = value {
                        block[key] = value.clone().into();
                    }
                }
                if let Some(size) = link.size {
                    block["size"] = size.into();
                }
                block
            }
        };
        if let Some(annotations) = &self.annotations {
            block["annotations"] = Value::Object(annotations.clone());
        }
        if let Some(meta) = &self.meta {
            block["_meta"] = Value::Object(meta.clone());
        }
        block
    }
}

fn string(
    object: &Map<String, Value>,
    kind: &'static str,
    field: &'static str,
) -> Result<String, ContentError> {
    object
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or(ContentError::Field {
            kind,
            field,
            expected: "string",
        })
}

fn optional(object: &Map<String, Value>, field: &str) -> Option<String> {
    object.get(field).and_then(Value::as_str).map(str::to_owned)
}

fn base64(text: &str, kind: &'static str, field: &'static str) -> Result<Vec<u8>, ContentError> {
    STANDARD
        .decode(text.trim())
        .map_err(|_| ContentError::NotBase64 { kind, field })
}

fn media(object: &Map<String, Value>, kind: &'static str) -> Result<Media, ContentError> {
    Ok(Media {
        mime_type: string(object, kind, "mimeType")?,
        data: base64(&string(object, kind, "data")?, kind, "data")?,
    })
}

fn embedded(resource: &Map<String, Value>) -> Result<Resource, ContentError> {
    const KIND: &str = "resource";
    let contents = match (resource.get("text"), resource.get("blob")) {
        (Some(Value::String(text)), _) => ResourceContents::Text(text.clone()),
        (_, Some(Value::String(blob))) => ResourceContents::Blob(base64(blob, KIND, "blob")?),
        _ => {
            return Err(ContentError::Field {
                kind: KIND,
                field: "text",
                expected: "string (or `blob`)",
            });
        }
    };
    Ok(Resource {
        uri: string(resource, KIND, "uri")?,
        mime_type: optional(resource, "mimeType"),
        contents,
        meta: resource.get("_meta").and_then(Value::as_object).cloned(),
    })
}

/// `blocks` within the bounds: a block over [`MAX_BLOCK_BYTES`] becomes a
/// note naming its kind and size; blocks past [`MAX_BLOCKS`] or past
/// [`MAX_CONTENT_BYTES`] in all are dropped, and one note at the end says
/// how many. Order is kept.
pub fn bound(blocks: Vec<ContentBlock>) -> Vec<ContentBlock> {
    let mut kept = Vec::with_capacity(blocks.len().min(MAX_BLOCKS));
    let mut total = 0usize;
    let mut dropped = 0usize;
    for block in blocks {
        let size = block.size();
        let block = if size > MAX_BLOCK_BYTES {
            let why = format!("{size} bytes, over the bound of {MAX_BLOCK_BYTES} per block");
            ContentBlock::withheld(block.body.kind(), &why)
        } else {
            block
        };
        let size = block.size();
        if kept.len() == MAX_BLOCKS || total + size > MAX_CONTENT_BYTES {
            dropped += 1;
            continue;
        }
        total += size;
        kept.push(block);
    }
    if dropped > 0 {
        kept.push(ContentBlock::text(format!(
            "[{dropped} more content blocks withheld: a result keeps at most \
             {MAX_BLOCKS} blocks and {MAX_CONTENT_BYTES} bytes]"
        )));
    }
    kept
}

/// `blocks` as text for a reader that sees only text: text as it is, one
/// bracketed line for what is not text (kind, media type, size, URI).
pub fn describe(blocks: &[ContentBlock]) -> String {
    let lines: Vec<String> = blocks
        .iter()
        .map(|block| match &block.body {
            Body::Text(text) => text.clone(),
            Body::Image(media) | Body::Audio(media) => format!(
                "[{}: {}, {} bytes]",
                block.body.kind(),
                media.mime_type,
                media.data.len()
            ),
            Body::Resource(resource) => match &resource.contents {
                ResourceContents::Text(text) => format!("[resource {}]\n{text}", resource.uri),
                ResourceContents::Blob(blob) => format!(
                    "[resource {}: {}, {} bytes]",
                    resource.uri,
                    resource.mime_type.as_deref().unwrap_or("bytes"),
                    blob.len()
                ),
            },
            Body::ResourceLink(link) => format!("[resource link {}: {}]", link.name, link.uri),
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(value: Value) {
        let block = ContentBlock::from_mcp(&value).unwrap();
        assert_eq!(block.to_mcp(), value);
    }

    #[test]
    fn every_kind_round_trips_with_annotations_and_meta() {
        round_trip(json!({"type": "text", "text": "hi", "annotations": {"priority": 0.5}}));
        round_trip(
            json!({"type": "image", "mimeType": "image/png", "data": "AAEC",
            "_meta": {"k": 1}}),
        );
        round_trip(json!({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}));
        round_trip(json!({"type": "resource", "resource":
            {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "a", "_meta": {"x": true}}}));
        round_trip(json!({"type": "resource", "resource": {"uri": "file:///b", "blob": "AP8="}}));
        round_trip(
            json!({"type": "resource_link", "uri": "file:///c", "name": "c",
            "title": "C", "description": "the c", "mimeType": "text/plain", "size": 3}),
        );
    }

    #[test]
    fn a_bad_block_names_what_is_wrong() {
        let error = |v: Value| ContentBlock::from_mcp(&v).unwrap_err().to_string();
        assert_eq!(error(json!([])), "a content block is not a JSON object");
        assert_eq!(
            error(json!({"type": "video"})),
            "unknown content type `video`"
        );
        assert_eq!(
            error(json!({"type": "image", "mimeType": "image/png", "data": "%%"})),
            "the image block's `data` is not base64"
        );
        assert_eq!(
            error(json!({"type": "audio", "data": "AA=="})),
            "the audio block's `mimeType` is missing or not a string"
        );
        assert_eq!(
            error(json!({"type": "resource", "resource": {"uri": "u"}})),
            "the resource block's `text` is missing or not a string (or `blob`)"
        );
    }

    #[test]
    fn bounds_replace_a_large_block_and_drop_past_the_result_bound() {
        let big = ContentBlock::of(Body::Image(Media {
            mime_type: "image/png".into(),
            data: vec![0; MAX_BLOCK_BYTES + 1],
        }));
        let bounded = bound(vec![ContentBlock::text("a"), big, ContentBlock::text("b")]);
        assert_eq!(bounded.len(), 3);
        assert_eq!(bounded[2], ContentBlock::text("b"));
        let Body::Text(note) = &bounded[1].body else {
            panic!("{bounded:?}")
        };
        assert!(
            note.starts_with("[image content withheld: 4194314 bytes"),
            "{note}"
        );

        let many = (0..MAX_BLOCKS + 3).map(|i| ContentBlock::text(i.to_string()));
        let bounded = bound(many.collect());
        assert_eq!(bounded.len(), MAX_BLOCKS + 1);
        assert_eq!(bounded[MAX_BLOCKS - 1], ContentBlock::text("63"));
        let Body::Text(note) = &bounded[MAX_BLOCKS].body else {
            panic!()
        };
        assert!(
            note.starts_with("[3 more content blocks withheld"),
            "{note}"
        );

        let half = || ContentBlock::text("x".repeat(MAX_BLOCK_BYTES));
        let bounded = bound(vec![half(), half(), half()]);
        assert_eq!(bounded.len(), 3);
        assert!(matches!(&bounded[2].body, Body::Text(t) if t.starts_with("[1 more")));
    }

    #[test]
    fn description_names_what_is_not_text() {
        let blocks = [
            ContentBlock::text("here"),
            ContentBlock::from_mcp(
                &json!({"type": "image", "mimeType": "image/png", "data": "AAEC"}),
            )
            .unwrap(),
            ContentBlock::from_mcp(
                &json!({"type": "resource_link", "uri": "file:///c", "name": "c"}),
            )
            .unwrap(),
        ];
        assert_eq!(
            describe(&blocks),
            "here\n[image: image/png, 3 bytes]\n[resource link c: file:///c]"
        );
    }
}
