//! Random TOML-ish input never panics the parser or the rules.

use proptest::prelude::*;

use crate::check;

/// Lines drawn from the manifest's own vocabulary, so the rules run deep.
fn line() -> impl Strategy<Value = String> {
    let keys = prop::sample::select(vec![
        "schema_version",
        "id",
        "name",
        "version",
        "description",
        "trust",
        "kind",
        "module",
        "effects",
        "default_permission",
        "visibility",
        "origin_gate_matrix",
        "input_schema_ref",
        "prompt_doc_ref",
        "handle",
        "vendor",
        "scopes",
        "audience",
        "injection",
        "method",
        "server",
        "namespace",
        "max_tools",
        "network_targets",
        "port",
        "limits",
        "host",
    ]);
    let values = prop::sample::select(vec![
        "\"reborn.extension_manifest.v3\"",
        "\"example\"",
        "\"example.search\"",
        "[]",
        "[\"network\", \"use_secret\"]",
        "{ loop_run = \"ungated\" }",
        "{ type = \"header\" }",
        "{ scheme = \"https\", host = \"*.x\" }",
        "0",
        "-1",
        "99999999999999999999",
        "true",
        "\"../x\"",
        "\"wasm\"",
        "\"https://a.b/c?d#e\"",
        "[{ scheme = \"http\" }]",
        "\"\u{e9}\"",
    ]);
    let headers = prop::sample::select(vec![
        "[runtime]",
        "[[tools]]",
        "[[tools.credentials]]",
        "[auth.example]",
        "[mcp]",
        "[[mcp.credentials]]",
        "[auth.example.token_response]",
        "[metadata]",
        "[[host_api]]",
        "[tools.limits]",
        "[[",
    ]);
    prop_oneof![
        (keys, values).prop_map(|(k, v)| format!("{k} = {v}")),
        headers.prop_map(str::to_owned),
        "[ -~]{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn structured_input_never_panics(lines in prop::collection::vec(line(), 0..40)) {
        let text = lines.join("\n");
        if let Err(diags) = check("fuzz.toml", &text) {
            prop_assert!(!diags.is_empty());
            let _ = diags.to_json();
            let _ = diags.to_string();
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let root = crate::ui_dir().join("assets");
        let files = warden_manifest::MemFiles::new();
        let result = warden_manifest::load_from_files("fuzz.toml", &bytes, &root, &files, &Default::default());
        if let Err(diags) = result {
            prop_assert!(diags.iter().all(|d| d.line >= 1 && d.column >= 1));
        }
    }
}
