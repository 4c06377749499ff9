//! What a tool returns: JSON (any `Serialize` value), content blocks for
//! the model to see (images, audio, resources, links, text), or both.
//!
//! ```ignore
//! use warden_guest::{Content, Output};
//! let chart = Output::content([Content::image("image/png", png_bytes)])
//!     .with(Content::text("Sales by month, 2026"));
//! let both = Output::json(serde_json::json!({"rows": 12}))?.with(Content::text("12 rows"));
//! ```

use serde::Serialize;

use crate::Failure;
use crate::bindings::exports::warden::tool::tool as wit;

/// A tool's result: structured JSON, content blocks, or both.
#[derive(Debug, Default)]
pub struct Output {
    structured: Option<String>,
    content: Vec<Content>,
}

impl Output {
    /// Structured output: `value` as JSON (checked by the host against the
    /// capability's output schema).
    pub fn json(value: impl Serialize) -> Result<Self, Failure> {
        let text = serde_json::to_string(&value)
            .map_err(|e| Failure::executor("unserializable_output", e.to_string()))?;
        Ok(Output {
            structured: Some(text),
            content: Vec::new(),
        })
    }

    /// Content blocks only (a capability that declares an output schema
    /// must also return JSON: use [`Output::json`] then [`Output::with`]).
    pub fn content(blocks: impl IntoIterator<Item = Content>) -> Self {
        Output {
            structured: None,
            content: blocks.into_iter().collect(),
        }
    }

    /// Add one content block after those already there.
    pub fn with(mut self, block: Content) -> Self {
        self.content.push(block);
        self
    }

    pub(crate) fn into_wit(self) -> wit::Output {
        wit::Output {
            structured: self.structured,
            content: self.content.into_iter().map(|c| c.0).collect(),
        }
    }
}

/// What [`crate::Tool::run`] may return: an [`Output`], or any `Serialize`
/// value as structured output.
pub trait IntoOutput {
    /// The output, or the failure of serializing it.
    fn into_output(self) -> Result<Output, Failure>;
}

impl<T: Serialize> IntoOutput for T {
    fn into_output(self) -> Result<Output, Failure> {
        Output::json(self)
    }
}

impl IntoOutput for Output {
    fn into_output(self) -> Result<Output, Failure> {
        Ok(self)
    }
}

/// One content block. The host redacts staged secrets from its text,
/// withholds a binary block that carries one, and bounds the blocks (see
/// `wit/warden.wit`).
#[derive(Debug, Clone)]
pub struct Content(wit::ContentBlock);

impl Content {
    fn of(body: wit::ContentBody) -> Self {
        Content(wit::ContentBlock {
            body,
            annotations: None,
        })
    }

    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(wit::ContentBody::Text(text.into()))
    }

    /// An image: its media type (`image/png`) and bytes (not base64).
    pub fn image(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::of(wit::ContentBody::Image(wit::Media {
            mime_type: mime_type.into(),
            data,
        }))
    }

    /// Audio: its media type (`audio/wav`) and bytes (not base64).
    pub fn audio(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Self::of(wit::ContentBody::Audio(wit::Media {
            mime_type: mime_type.into(),
            data,
        }))
    }

    /// A text resource embedded whole.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: Option<&str>,
        text: impl Into<String>,
    ) -> Self {
        Self::of(wit::ContentBody::Resource(wit::EmbeddedResource {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            contents: wit::ResourceContents::Text(text.into()),
        }))
    }

    /// A binary resource embedded whole.
    pub fn resource_blob(uri: impl Into<String>, mime_type: Option<&str>, blob: Vec<u8>) -> Self {
        Self::of(wit::ContentBody::Resource(wit::EmbeddedResource {
            uri: uri.into(),
            mime_type: mime_type.map(str::to_owned),
            contents: wit::ResourceContents::Blob(blob),
        }))
    }

    /// A link to a resource the reader may fetch.
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::of(wit::ContentBody::ResourceLink(wit::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }))
    }

    /// Say who the block is for (`user`, `assistant`) and how important
    /// it is, from 0 to 1.
    pub fn annotated(mut self, audience: &[&str], priority: Option<f64>) -> Self {
        let annotations = self.0.annotations.get_or_insert(wit::Annotations {
            audience: Vec::new(),
            priority: None,
            last_modified: None,
        });
        annotations.audience = audience.iter().map(|a| (*a).to_owned()).collect();
        annotations.priority = priority;
        self
    }
}
