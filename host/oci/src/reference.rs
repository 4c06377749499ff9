//! `oci://REGISTRY/REPOSITORY[:TAG][@sha256:…]`: where a package is
//! published, in the grammar of the OCI distribution specification.

use warden_core::spec::NetworkTarget;

use crate::{Digest, OciError};

/// The tag a reference without one means.
pub const DEFAULT_TAG: &str = "latest";

/// The scheme prefix every reference is written with.
pub const SCHEME: &str = "oci://";

/// A parsed reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    host: String,
    port: Option<u16>,
    repository: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

impl Reference {
    /// Parse `oci://HOST[:PORT]/REPOSITORY[:TAG][@DIGEST]`. Without a tag
    /// or digest the tag is [`DEFAULT_TAG`].
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let bad = |reason: String| OciError::Reference {
            reference: crate::shown(text),
            reason,
        };
        let Some(rest) = text.strip_prefix(SCHEME) else {
            return Err(bad(format!("does not start with `{SCHEME}`")));
        };
        if text.len() > 512 {
            return Err(bad("is longer than 512 bytes".into()));
        }
        let Some((registry, path)) = rest.split_once('/') else {
            return Err(bad("names no repository (`oci://HOST/REPOSITORY`)".into()));
        };
        let (host, port) = registry_host(registry).map_err(|r| bad(r.into()))?;
        let (path, digest) = match path.split_once('@') {
            Some((path, digest)) => (path, Some(Digest::parse(digest)?)),
            None => (path, None),
        };
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag)),
            _ => (path, None),
        };
        check_repository(repository).map_err(bad)?;
        if let Some(tag) = tag {
            check_tag(tag).map_err(bad)?;
        }
        let tag = match (tag, &digest) {
            (Some(tag), _) => Some(tag.to_owned()),
            (None, Some(_)) => None,
            (None, None) => Some(DEFAULT_TAG.to_owned()),
        };
        Ok(Reference {
            host,
            port,
            repository: repository.to_owned(),
            tag,
            digest,
        })
    }

    /// `HOST[:PORT]`, as the registry's API and its credentials know it.
    pub fn registry(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }

    /// The repository path.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag, when the reference names one.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The digest, when the reference pins one.
    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// The same repository and tag, pinned to `digest`.
    pub fn pinned(&self, digest: Digest) -> Reference {
        Reference {
            digest: Some(digest),
            ..self.clone()
        }
    }

    /// The same repository at `tag`, unpinned (a newer version's reference).
    pub fn at_tag(&self, tag: &str) -> Result<Reference, OciError> {
        check_tag(tag).map_err(|reason| OciError::Reference {
            reference: crate::shown(tag),
            reason,
        })?;
        Ok(Reference {
            tag: Some(tag.to_owned()),
            digest: None,
            ..self.clone()
        })
    }

    /// The same repository and tag, without the digest (what `upgrade`
    /// resolves again).
    pub fn unpinned(&self) -> Reference {
        Reference {
            digest: None,
            tag: self.tag.clone().or_else(|| Some(DEFAULT_TAG.to_owned())),
            ..self.clone()
        }
    }

    /// What the manifest is fetched by: the digest when pinned, else the tag.
    pub fn manifest_reference(&self) -> &str {
        match (&self.digest, &self.tag) {
            (Some(digest), _) => digest.as_str(),
            (None, Some(tag)) => tag,
            (None, None) => DEFAULT_TAG,
        }
    }

    /// `https://HOST[:PORT]/v2/REPOSITORY/` + `rest`.
    pub(crate) fn api_url(&self, rest: &str) -> String {
        format!("https://{}/v2/{}/{rest}", self.registry(), self.repository)
    }

    /// The registry as an egress target.
    pub(crate) fn target(&self) -> NetworkTarget {
        NetworkTarget {
            scheme: "https".into(),
            host_pattern: self.host.clone(),
            port: self.port,
        }
    }
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry(), self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Reference {
    type Err = OciError;

    fn from_str(text: &str) -> Result<Self, OciError> {
        Reference::parse(text)
    }
}

/// `HOST[:PORT]`: a DNS name (letters, digits, `-`, `.`), lowercase.
fn registry_host(registry: &str) -> Result<(String, Option<u16>), &'static str> {
    let (host, port) = match registry.rsplit_once(':') {
        Some((host, port)) => {
            let port: u16 = port
                .parse()
                .ok()
                .filter(|p| *p != 0)
                .ok_or("has a port that is not a number from 1 to 65535")?;
            // HTTPS's own port is the same registry as none.
            (host, (port != 443).then_some(port))
        }
        None => (registry, None),
    };
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return Err("has a registry host that is not a lowercase DNS name");
    }
    Ok((host.to_owned(), port))
}

/// The distribution grammar: `/`-separated components of lowercase
/// alphanumerics joined by `.`, `_`, `__` or runs of `-`.
fn check_repository(repository: &str) -> Result<(), String> {
    if repository.is_empty() || repository.len() > 255 {
        return Err("has a repository that is empty or longer than 255 bytes".into());
    }
    for component in repository.split('/') {
        if !component_ok(component) {
            return Err(format!(
                "has a repository component `{}` outside the distribution grammar \
                 (lowercase letters and digits, joined by `.`, `_`, `__` or `-`)",
                crate::shown(component)
            ));
        }
    }
    Ok(())
}

fn component_ok(component: &str) -> bool {
    let bytes = component.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &component[start..i];
        let ok = matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn check_tag(tag: &str) -> Result<(), String> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let ok = !tag.is_empty()
        && tag.len() <= 128
        && word(tag.as_bytes()[0])
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-');
    match ok {
        true => Ok(()),
        false => Err(format!(
            "has a tag `{}` outside `[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}}`",
            crate::shown(tag)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_digests_ports_and_nested_repositories() {
        let r = Reference::parse("oci://registry.example.com:5000/team/tools/echo:1.2.0").unwrap();
        assert_eq!(r.registry(), "registry.example.com:5000");
        assert_eq!(r.repository(), "team/tools/echo");
        assert_eq!(r.tag(), Some("1.2.0"));
        assert_eq!(r.manifest_reference(), "1.2.0");
        assert_eq!(
            r.api_url("manifests/1.2.0"),
            "https://registry.example.com:5000/v2/team/tools/echo/manifests/1.2.0"
        );

        let untagged = Reference::parse("oci://ghcr.io/acme/echo").unwrap();
        assert_eq!(untagged.tag(), Some(DEFAULT_TAG));
        assert_eq!(untagged.to_string(), "oci://ghcr.io/acme/echo:latest");

        let digest = Digest::of(b"x");
        let pinned = Reference::parse(&format!("oci://ghcr.io/acme/echo@{digest}")).unwrap();
        assert_eq!(pinned.tag(), None);
        assert_eq!(pinned.manifest_reference(), digest.as_str());
        let both = Reference::parse(&format!("oci://ghcr.io/acme/echo:v1@{digest}")).unwrap();
        assert_eq!(
            both.to_string(),
            format!("oci://ghcr.io/acme/echo:v1@{digest}")
        );
        assert_eq!(both.unpinned().to_string(), "oci://ghcr.io/acme/echo:v1");
    }

    #[test]
    fn refuses_what_the_grammar_does_not_allow_naming_it() {
        for (text, says) in [
            ("ghcr.io/acme/echo", "oci://"),
            ("oci://ghcr.io", "no repository"),
            ("oci://GHCR.io/acme/echo", "registry host"),
            ("oci://ghcr.io:0/acme/echo", "port"),
            ("oci://ghcr.io:99999/acme/echo", "port"),
            ("oci://ghcr.io/Acme/echo", "`Acme`"),
            ("oci://ghcr.io/acme//echo", "component"),
            ("oci://ghcr.io/acme/echo-/x", "`echo-`"),
            ("oci://ghcr.io/acme/echo:-v1", "tag"),
            ("oci://ghcr.io/acme/echo@sha512:00", "sha256"),
            ("oci://user@ghcr.io/acme/echo", "registry host"),
        ] {
            let error = Reference::parse(text).unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
        assert!(Reference::parse("oci://ghcr.io/a__b.c-d---e/f_g").is_ok());
        let explicit = Reference::parse("oci://ghcr.io:443/acme/echo:1").unwrap();
        assert_eq!(
            explicit,
            Reference::parse("oci://ghcr.io/acme/echo:1").unwrap()
        );
    }
}
