//! Invocation fingerprints: sha256 over a canonical JSON document.
//!
//! Canonical JSON here: object keys sorted by their UTF-8 bytes, no
//! whitespace, strings escaped as `serde_json` does, numbers as
//! `serde_json` prints them. The fingerprinted document is
//! `{"capability_id":…,"input":…,"origin":…[,"package":{"digest":…,"extension_id":…}],"scope":{"location":…[,"session":…]}}`;
//! the origin is included so an approval given to one origin cannot be
//! resumed by another, and the package (its content digest) so an approval
//! given to one version of a package cannot run another.

use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};
use warden_core::Origin;

use crate::{InvocationScope, PackageIdentity};

/// Lowercase hex sha256 of a canonical invocation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(pub String);

impl Fingerprint {
    /// The fingerprint of calling `capability_id` of `package` with `input`
    /// from `origin` in `scope`.
    pub fn of(
        capability_id: &str,
        package: Option<&PackageIdentity>,
        scope: &InvocationScope,
        origin: Origin,
        input: &Value,
    ) -> Self {
        let mut scope_doc = serde_json::Map::new();
        scope_doc.insert("location".into(), Value::String(scope.location.0.clone()));
        if let Some(session) = &scope.session {
            scope_doc.insert("session".into(), Value::String(session.clone()));
        }
        let mut doc = serde_json::Map::new();
        doc.insert("capability_id".into(), capability_id.into());
        doc.insert("input".into(), input.clone());
        doc.insert("origin".into(), origin.as_str().into());
        if let Some(package) = package {
            let mut package_doc = serde_json::Map::new();
            package_doc.insert("digest".into(), package.digest.clone().into());
            package_doc.insert("extension_id".into(), package.extension_id.clone().into());
            doc.insert("package".into(), Value::Object(package_doc));
        }
        doc.insert("scope".into(), Value::Object(scope_doc));
        let canonical = canonical_json(&Value::Object(doc));
        Fingerprint(hex::encode(Sha256::digest(canonical.as_bytes())))
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `value` as canonical JSON (sorted keys, no whitespace).
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            let _ = write!(out, "{value}");
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    let _ = write!(out, "{}", Value::String(s.to_owned()));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let v = json!({"b": [1, {"z": null, "a": "x\"y"}], "a": true});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":true,"b":[1,{"a":"x\"y","z":null}]}"#
        );
    }

    #[test]
    fn fingerprint_ignores_key_order_but_not_values() {
        let scope = InvocationScope::location("loc");
        let v1 = PackageIdentity::bundled("gh", "d1");
        let p = Some(&v1);
        let a = Fingerprint::of(
            "gh.op",
            p,
            &scope,
            Origin::LoopRun,
            &json!({"x": 1, "y": 2}),
        );
        let b = Fingerprint::of(
            "gh.op",
            p,
            &scope,
            Origin::LoopRun,
            &json!({"y": 2, "x": 1}),
        );
        let c = Fingerprint::of(
            "gh.op",
            p,
            &scope,
            Origin::LoopRun,
            &json!({"x": 1, "y": 3}),
        );
        let d = Fingerprint::of(
            "gh.op",
            p,
            &scope,
            Origin::Product,
            &json!({"x": 1, "y": 2}),
        );
        let e = Fingerprint::of(
            "gh.op",
            p,
            &scope.clone().with_session("s"),
            Origin::LoopRun,
            &json!({"x": 1, "y": 2}),
        );
        let v2 = PackageIdentity::installed("gh", "d2");
        let f = Fingerprint::of(
            "gh.op",
            Some(&v2),
            &scope,
            Origin::LoopRun,
            &json!({"x": 1, "y": 2}),
        );
        let g = Fingerprint::of(
            "gh.op",
            None,
            &scope,
            Origin::LoopRun,
            &json!({"x": 1, "y": 2}),
        );
        assert_eq!(a, b);
        assert_eq!(a.0.len(), 64);
        for other in [c, d, e, f, g] {
            assert_ne!(a, other);
        }
    }
}
