//! What a discovered tool is: the identity its grants and approvals bind
//! to, and which `[mcp]` package may list a tool a caller names.

use warden_manifest::Capability;
use warden_registry::PackageIdentity;

/// The identity a discovered tool's grants and approvals are bound to: the
/// package's, its digest extended with the tool as published (what the
/// server listed, and the effects and permission it got). A package with
/// its own code changes digest with any change; a server changes its tools
/// under the same manifest, and a grant made for a read-only tool covered
/// it once the server re-listed it destructive, with another schema.
pub(in crate::location) fn tool_identity(
    package: &PackageIdentity,
    capability: &Capability,
) -> PackageIdentity {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(package.digest.as_bytes());
    hash.update(b"\n");
    // A capability always serializes (strings, JSON values, enums).
    hash.update(serde_json::to_vec(capability).unwrap_or_default());
    PackageIdentity {
        digest: hex::encode(hash.finalize()),
        ..package.clone()
    }
}

/// Whether `tool` names a tool `[mcp]` package `id` would discover on its
/// server: the capability id `<id>.<name>` or the model name `<id>_<name>`
/// (the id flattened as the registry flattens names), `<name>` being a name
/// discovery accepts (`[A-Za-z0-9_.-]+`). A model name never holds a `.`
/// (the registry sanitizes it away), so a name with one is a capability id,
/// matched by its prefix: `foo.bar.x` is `foo`'s (a remote `bar.x`) and
/// `foo.bar`'s (`x`), never `foo_bar`'s. A model name is ambiguous where one
/// flattened id and `_` begin another (`foo_bar_x` may be `foo`'s `bar_x` or
/// `foo.bar`'s `x`): both provide it (each server is asked).
pub(super) fn provides(id: &str, tool: &str) -> bool {
    let listable = warden_hosted::discovery::is_listable_name;
    if tool.contains('.') {
        return tool
            .strip_prefix(id)
            .and_then(|rest| rest.strip_prefix('.'))
            .is_some_and(listable);
    }
    let flat = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    flat(tool)
        .strip_prefix(&format!("{}_", flat(id)))
        .is_some_and(listable)
}

#[cfg(test)]
mod tests {
    use super::provides;

    #[test]
    fn a_capability_id_is_matched_by_its_package_prefix() {
        assert!(provides("foo", "foo.x"));
        assert!(provides("foo.bar", "foo.bar.x"));
        // A remote name may hold a `.` (`bar.x`): either package may list it.
        assert!(provides("foo", "foo.bar.x"));
        assert!(!provides("foo", "foo_bar.x"));
        assert!(!provides("foo", "foobar.x"));
        assert!(!provides("foo", "foo."));
    }

    #[test]
    fn a_model_name_is_matched_as_the_registry_flattens_it() {
        assert!(provides("fake-mcp", "fake-mcp_weather"));
        assert!(provides("my.pkg", "my_pkg_tool"));
        // Ambiguous: either package may list it.
        assert!(provides("foo", "foo_bar_x"));
        assert!(provides("foo.bar", "foo_bar_x"));
        assert!(!provides("foo", "foobar_x"));
        assert!(!provides("foo", "foo_"));
        assert!(!provides("fake-mcp", "fake_mcp_weather"));
    }
}
