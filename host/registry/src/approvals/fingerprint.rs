//! GatedCall fingerprints: sha256 over a canonical JSON document.
//!
//! Canonical JSON here: object keys sorted by their UTF-8 bytes, no
//! whitespace, strings escaped as `serde_json` does, numbers as
//! `serde_json` prints them. The fingerprinted document is
//! `{"capability_id":…,"input":…,"origin":…[,"package":{"digest":…,"extension_id":…}],"scope":{"location":…[,"session":…]}}`;
//! the origin is included so an approval given to one origin cannot be
//! resumed by another, and the package (its content digest) so an approval
//! given to one version of a package cannot run another.

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
    ///
    /// The document is written straight out in canonical form (its keys are
    /// listed here in sorted order), with no intermediate `Value`: a call
    /// computes this on its hot path.
    pub fn of(
        capability_id: &str,
        package: Option<&PackageIdentity>,
        scope: &InvocationScope,
        origin: Origin,
        input: &Value,
    ) -> Self {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"{\"capability_id\":");
        write_string(capability_id, &mut out);
        out.extend_from_slice(b",\"input\":");
        write_canonical(input, &mut out);
        out.extend_from_slice(b",\"origin\":");
        write_string(origin.as_str(), &mut out);
        if let Some(package) = package {
            out.extend_from_slice(b",\"package\":{\"digest\":");
            write_string(&package.digest, &mut out);
            out.extend_from_slice(b",\"extension_id\":");
            write_string(&package.extension_id, &mut out);
            out.push(b'}');
        }
        out.extend_from_slice(b",\"scope\":{\"location\":");
        write_string(&scope.location.0, &mut out);
        if let Some(session) = &scope.session {
            out.extend_from_slice(b",\"session\":");
            write_string(session, &mut out);
        }
        out.extend_from_slice(b"}}");
        Fingerprint(hex::encode(Sha256::digest(&out)))
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `value` as canonical JSON (sorted keys, no whitespace).
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            serde_json::to_writer(&mut *out, value).expect("writing to a Vec cannot fail");
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            // serde_json's map is a BTreeMap (sorted by the keys' bytes)
            // unless its `preserve_order` feature is on: sort only then.
            if map.keys().is_sorted() {
                write_members(map.iter(), out);
            } else {
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_unstable_by_key(|(key, _)| *key);
                write_members(members.into_iter(), out);
            }
            out.push(b'}');
        }
    }
}

fn write_members<'a>(members: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut Vec<u8>) {
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(key, out);
        out.push(b':');
        write_canonical(value, out);
    }
}

/// `s` as a JSON string, escaped as `serde_json` escapes it.
fn write_string(s: &str, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, s).expect("writing to a Vec cannot fail");
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

    /// The document as it was built before the direct writer (a map turned
    /// into canonical JSON): stored approvals and audit lines keep their
    /// fingerprints.
    fn reference(
        capability_id: &str,
        package: Option<&PackageIdentity>,
        scope: &InvocationScope,
        origin: Origin,
        input: &Value,
    ) -> Fingerprint {
        let mut scope_doc = json!({ "location": scope.location.0 });
        if let Some(session) = &scope.session {
            scope_doc["session"] = session.as_str().into();
        }
        let mut doc = json!({
            "capability_id": capability_id,
            "input": input,
            "origin": origin.as_str(),
            "scope": scope_doc,
        });
        if let Some(package) = package {
            doc["package"] =
                json!({ "digest": package.digest, "extension_id": package.extension_id });
        }
        let canonical = canonical_json(&doc);
        Fingerprint(hex::encode(Sha256::digest(canonical.as_bytes())))
    }

    #[test]
    fn the_direct_writer_gives_the_canonical_documents_digest() {
        let package = PackageIdentity::installed("gh", "sha256:d1");
        let plain = InvocationScope::location("loc");
        let session = InvocationScope::location("l\u{e9}\"o").with_session("caller:\n\u{1}");
        let inputs = [
            json!(null),
            json!({}),
            json!({"z": [1, 2.5, -3, 1e300, true, null], "a": {"y": "\u{2028}\\", "b": {}}}),
            json!("plain string"),
            json!([{"k": "v"}, [], "é"]),
        ];
        for input in &inputs {
            for scope in [&plain, &session] {
                for pkg in [None, Some(&package)] {
                    for origin in [Origin::LoopRun, Origin::Automation] {
                        assert_eq!(
                            Fingerprint::of("gh.op", pkg, scope, origin, input),
                            reference("gh.op", pkg, scope, origin, input),
                            "{input} {scope:?} {pkg:?} {origin:?}"
                        );
                    }
                }
            }
        }
    }
}
