//! The `near:agent` `headers-json` handling (`warden_runtime::fuzzing`):
//! - a guest's `headers-json` is accepted exactly when it is blank or a
//!   JSON object of string values, as those pairs;
//! - the `headers-json` a guest is given (built from the parsed pairs, or
//!   from `name: value` lines when the input is not accepted) is a JSON
//!   object of lower-case names, none credential-like, with visible ASCII
//!   values;
//! - a query parameter refused as credential-like is one the URL has.

use serde_json::{Map, Value};
use warden_runtime::fuzzing;

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = fuzzing::parse_headers(&text);
    let object = if text.trim().is_empty() {
        Some(Map::new())
    } else {
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) if map.values().all(Value::is_string) => Some(map),
            _ => None,
        }
    };
    let pairs = match (parsed, object) {
        (Ok(pairs), Some(map)) => {
            let expected: Vec<(String, String)> = map
                .into_iter()
                .map(|(k, v)| (k, v.as_str().expect("a string").to_owned()))
                .collect();
            assert_eq!(pairs, expected);
            pairs
        }
        (Err(why), None) => {
            assert!(why.starts_with("headers-json"), "{why}");
            text.lines()
                .filter_map(|line| line.split_once(':'))
                .map(|(name, value)| (name.to_owned(), value.trim_start().to_owned()))
                .collect()
        }
        (parsed, object) => panic!("parsed {parsed:?}, but the text is {object:?}"),
    };
    let shown: Value = serde_json::from_str(&fuzzing::response_headers_json(pairs))
        .expect("the guest's headers-json is JSON");
    let shown = shown.as_object().expect("an object");
    for (name, value) in shown {
        assert_eq!(name, &name.to_ascii_lowercase());
        assert!(
            !fuzzing::HIDDEN_RESPONSE_PARTS
                .iter()
                .any(|p| name.contains(p)),
            "shows {name}"
        );
        let value = value.as_str().expect("a string value");
        assert!(
            value
                .bytes()
                .all(|b| b == b'\t' || (0x20..0x7f).contains(&b)),
            "shows {value:?}"
        );
    }
    if let Some(name) = fuzzing::denied_query(&text) {
        let url = url::Url::parse(&text).expect("a refused URL parses");
        assert!(
            url.query_pairs()
                .any(|(n, _)| n.to_ascii_lowercase().trim() == name),
            "refused `{name}`, which {url} does not have"
        );
    }
}
