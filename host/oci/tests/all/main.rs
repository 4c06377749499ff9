//! The registry client against a local HTTPS registry that misbehaves on
//! purpose: every digest, bound, media type and redirect rule the client
//! keeps (the real registry's tests are in `tests/e2e/oci.rs`).

mod fake;
mod pull;
