//! [`InputCheck`]: a remote tool's input schema, compiled once per catalog,
//! checked before any approval is asked and before anything is sent.

use jsonschema::Validator;
use serde_json::Value;

use crate::error::HostedError;
use crate::server::sanitize;

/// A compiled input schema.
#[derive(Debug)]
pub struct InputCheck {
    validator: Validator,
}

impl InputCheck {
    /// Compile `schema`; a schema that does not compile refuses the tool.
    pub fn compile(schema: &Value) -> Result<Self, HostedError> {
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|e| {
                HostedError::InvalidInput(format!(
                    "the input schema does not compile: {}",
                    sanitize(&e.to_string())
                ))
            })
    }

    /// Check `input` (JSON text). Messages never echo the input's values.
    pub fn check(&self, input: &str) -> Result<(), HostedError> {
        let value: Value = serde_json::from_str(input).map_err(|e| {
            HostedError::InvalidInput(format!(
                "not valid JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        match self.validator.iter_errors(&value).next() {
            None => Ok(()),
            Some(error) => Err(HostedError::InvalidInput(format!(
                "at `{}`: {}",
                sanitize(&error.instance_path().to_string()),
                sanitize(&error.masked().to_string())
            ))),
        }
    }
}
