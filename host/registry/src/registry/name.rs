//! Model-facing names: namespace flattening and sanitizing.
//!
//! The rule, applied to `<namespace>_<tool>` (or `<tool>` without a namespace):
//!
//! 1. every character outside `[A-Za-z0-9_-]` becomes `_` — so the dotted
//!    capability id `github.get_repo` becomes `github_get_repo`, exactly the
//!    name the tool `get_repo` in namespace `github` gets;
//! 2. an empty result is refused ([`RegistryError::InvalidName`]);
//! 3. a result longer than 64 characters keeps its first 55 characters,
//!    then `_` and the first 8 hex digits of the sha256 of the unsanitized
//!    flattened name, so long names stay distinct and deterministic.
//!
//! Names that differ before sanitizing may meet after it; the registry then
//! refuses the second tool with [`RegistryError::NameCollision`].

use sha2::{Digest, Sha256};

use super::RegistryError;

/// The longest model-facing name (the limit OpenAI and Anthropic share).
pub const MAX_NAME_LEN: usize = 64;

/// The flattened, unsanitized name: `<namespace>_<tool>` or `<tool>`.
pub fn flatten(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}_{name}"),
        _ => name.to_owned(),
    }
}

/// The model-facing name of `name` in `namespace`, sanitized to
/// `[A-Za-z0-9_-]{1,64}` (see the module docs for the rule).
pub fn model_name(namespace: Option<&str>, name: &str) -> Result<String, RegistryError> {
    let flat = flatten(namespace, name);
    let mut clean: String = flat
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || clean.is_empty() {
        return Err(RegistryError::InvalidName { name: flat });
    }
    if clean.len() > MAX_NAME_LEN {
        let digest = hex::encode(Sha256::digest(flat.as_bytes()));
        clean.truncate(MAX_NAME_LEN - 9);
        clean.push('_');
        clean.push_str(&digest[..8]);
    }
    Ok(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_flattens_with_underscore() {
        assert_eq!(
            model_name(Some("github"), "get_repo").unwrap(),
            "github_get_repo"
        );
        assert_eq!(model_name(None, "read").unwrap(), "read");
    }

    #[test]
    fn dots_and_other_characters_become_underscores() {
        assert_eq!(
            model_name(None, "github.get_repo").unwrap(),
            "github_get_repo"
        );
        assert_eq!(model_name(Some("my srv"), "a/b").unwrap(), "my_srv_a_b");
        assert_eq!(model_name(None, "ok-name_1").unwrap(), "ok-name_1");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let long = "x".repeat(100);
        let a = model_name(Some("ns"), &long).unwrap();
        assert_eq!(a.len(), MAX_NAME_LEN);
        assert_eq!(a, model_name(Some("ns"), &long).unwrap());
        assert_ne!(a, model_name(Some("ns2"), &long).unwrap());
    }

    #[test]
    fn empty_names_are_refused() {
        assert!(matches!(
            model_name(Some("ns"), ""),
            Err(RegistryError::InvalidName { .. })
        ));
    }
}
