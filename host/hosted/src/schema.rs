//! [`InputCheck`]: a remote tool's input schema, compiled once per catalog
//! with the host's one checker ([`warden_core::schema`]), checked before any
//! approval is asked and before anything is sent. Its `format` keywords are
//! annotations, as JSON Schema has them by default: the server decides what
//! it accepts, and the gateway refuses only what the schema's assertions do.

use serde_json::Value;
use warden_core::schema::{Formats, SchemaCheck};

use crate::error::HostedError;

/// A compiled input schema.
#[derive(Debug)]
pub struct InputCheck {
    schema: SchemaCheck,
}

impl InputCheck {
    /// Compile `schema`; a schema that does not compile refuses the tool.
    pub fn compile(schema: &Value) -> Result<Self, HostedError> {
        SchemaCheck::compile(schema, Formats::Annotate)
            .map(|schema| Self { schema })
            .map_err(|reason| {
                HostedError::InvalidInput(format!("the input schema does not compile: {reason}"))
            })
    }

    /// Check `input` (JSON text). Messages never echo the input's values.
    pub fn check(&self, input: &str) -> Result<(), HostedError> {
        self.schema
            .check_text(input)
            .map(drop)
            .map_err(|refused| HostedError::InvalidInput(refused.to_string()))
    }
}
