//! The seed's "Manifest and packaging" test list, and the API around it.

use std::fs;

use warden_core::{Effect, GatePolicy, Origin, Permission};
use warden_manifest::{
    Code, Implementation, MemFiles, Trust, ValidationOptions, load_from_files, load_package,
};

use crate::{check, check_with, ui_dir};

fn valid(name: &str) -> String {
    fs::read_to_string(ui_dir().join("valid").join(name)).expect("fixture")
}

fn codes_of(name: &str, text: &str) -> Vec<Code> {
    check(name, text).expect_err("invalid").codes()
}

#[test]
fn manifest_parses_as_v3() {
    let package = check("seed.toml", &valid("seed_example.toml")).expect("valid");
    assert_eq!(package.id, "example");
    assert_eq!(package.requested_trust, Trust::ThirdParty);
    assert_eq!(
        package.implementation,
        Implementation::Wasm {
            module: "wasm/example_tool.wasm".into()
        }
    );
    let v2 = valid("seed_example.toml").replace(".v3\"", ".v2\"");
    assert_eq!(codes_of("v2.toml", &v2), [Code::SchemaVersion]);
}

#[test]
fn capability_ids_use_the_extension_prefix() {
    let package = check("seed.toml", &valid("seed_example.toml")).expect("valid");
    for cap in &package.capabilities {
        assert!(cap.id.starts_with("example."), "{}", cap.id);
        assert_eq!(cap.local_name(&package.id), "search");
    }
    let other = valid("seed_example.toml").replace("\"example.search\"", "\"examples.search\"");
    assert_eq!(codes_of("prefix.toml", &other), [Code::CapabilityId]);
}

#[test]
fn every_capability_declares_a_gate_matrix_with_loop_run() {
    let package = check("full.toml", &valid("wasm_full.toml")).expect("valid");
    for cap in package
        .capabilities
        .iter()
        .filter(|c| c.visibility == warden_core::Visibility::Model)
    {
        assert!(
            cap.origin_gate_matrix.declared(Origin::LoopRun).is_some(),
            "{}",
            cap.id
        );
    }
    let create = package.capability("example.create_record").expect("tool");
    assert_eq!(
        create.origin_gate_matrix.policy(Origin::Automation),
        GatePolicy::Forbidden,
        "omitted is forbidden"
    );
    let status = package.capability("example.status").expect("tool");
    assert_eq!(
        status.origin_gate_matrix.policy(Origin::LoopRun),
        GatePolicy::Ungated
    );
    // The allowlist is a review rule, not a parser rule: without it the same
    // manifest loads, a lint says so, and authorization treats the cell as
    // `gated_unless_granted`.
    let package = check_with(
        "full.toml",
        &valid("wasm_full.toml"),
        &ValidationOptions::default().source(warden_manifest::Source::Bundled),
    )
    .expect("the format accepts it");
    let lints = warden_manifest::lints(&package, &ValidationOptions::default());
    assert!(
        lints
            .iter()
            .any(|l| l.code == warden_manifest::LintCode::UngatedLoopRun
                && l.capability == "example.status"),
        "{lints:?}"
    );
}

#[test]
fn every_capability_has_matching_schema_and_prompt_assets() {
    let package = check("seed.toml", &valid("seed_example.toml")).expect("valid");
    let cap = &package.capabilities[0];
    assert_eq!(
        cap.input_schema.as_ref().and_then(|s| s["type"].as_str()),
        Some("object")
    );
    assert!(cap.output_schema.is_some());
    assert!(
        cap.prompt
            .as_deref()
            .is_some_and(|p| p.starts_with("Search Example records"))
    );
}

#[test]
fn credential_capabilities_include_use_secret_and_a_recipe() {
    let package = check("seed.toml", &valid("seed_example.toml")).expect("valid");
    let cred = &package.capabilities[0].credentials[0];
    assert_eq!(cred.audience.host, "api.example.com");
    assert!(cred.required);
    assert!(package.capabilities[0].effects.contains(&Effect::UseSecret));
    assert!(package.auth.contains_key(&cred.vendor));
    let no_secret =
        valid("seed_example.toml").replace("[\"network\", \"use_secret\"]", "[\"network\"]");
    assert_eq!(
        codes_of("x.toml", &no_secret),
        [Code::CredentialRequiresUseSecret]
    );
    let no_recipe = valid("seed_example.toml")
        .replace("[auth.example]", "[auth.other]")
        .replace("[auth.example.", "[auth.other.");
    assert_eq!(
        codes_of("x.toml", &no_recipe),
        [Code::MissingAuthRecipe, Code::UnusedAuthRecipe]
    );
    // A vendor whose recipe the host composition supplies needs none in the manifest.
    let mut opts = ValidationOptions::default();
    opts.host_auth_vendors.insert("other".into());
    let no_table = valid("seed_example.toml")
        .split("[auth.example]")
        .next()
        .expect("head")
        .replace("vendor = \"example\"", "vendor = \"other\"");
    check_with("x.toml", &no_table, &opts).expect("host-supplied recipe");
}

#[test]
fn write_capabilities_include_external_write_and_default_to_ask() {
    let package = check("full.toml", &valid("wasm_full.toml")).expect("valid");
    for cap in package.capabilities.iter().filter(|c| c.is_write()) {
        assert_eq!(cap.default_permission, Permission::Ask, "{}", cap.id);
    }
    let write = valid("seed_example.toml").replace(
        "[\"network\", \"use_secret\"]",
        "[\"network\", \"use_secret\", \"external_write\"]",
    );
    // The format accepts a write that defaults to `allow`; the repository lint flags it.
    let allowed = check("x.toml", &write).expect("the format accepts it");
    let lints = warden_manifest::lints(&allowed, &crate::fixture_options());
    assert_eq!(
        lints.iter().map(|l| l.code).collect::<Vec<_>>(),
        [warden_manifest::LintCode::WriteDefaultsToAsk]
    );
    let asked = write.replace(
        "default_permission = \"allow\"",
        "default_permission = \"ask\"",
    );
    check("x.toml", &asked).expect("ask is fine");
}

#[test]
fn bundled_package_assets_include_every_manifest_ref() {
    let text = valid("seed_example.toml");
    let assets = ui_dir().join("assets");
    let read = |p: &str| fs::read(assets.join(p)).expect("asset");
    let all = MemFiles::new()
        .with(
            "schemas/example/search.input.v1.json",
            read("schemas/example/search.input.v1.json"),
        )
        .with(
            "schemas/example/search.output.v1.json",
            read("schemas/example/search.output.v1.json"),
        )
        .with(
            "prompts/example/search.md",
            read("prompts/example/search.md"),
        );
    let opts = ValidationOptions::default();
    let package = load_from_files("mem.toml", text.as_bytes(), "bundle".as_ref(), &all, &opts)
        .expect("in memory");
    assert_eq!(package.root, std::path::Path::new("bundle"));
    let short = MemFiles::new().with(
        "schemas/example/search.input.v1.json",
        read("schemas/example/search.input.v1.json"),
    );
    let err = load_from_files(
        "mem.toml",
        text.as_bytes(),
        "bundle".as_ref(),
        &short,
        &opts,
    )
    .expect_err("missing assets");
    assert_eq!(err.codes(), [Code::RefMissing, Code::RefMissing]);
    // A closure is a file source too.
    let closure = |p: &str| fs::read(assets.join(p));
    load_from_files(
        "mem.toml",
        text.as_bytes(),
        "bundle".as_ref(),
        &closure,
        &opts,
    )
    .expect("closure");
}

#[test]
fn legacy_shapes_are_refused_with_a_pointer_to_tools() {
    for shape in [
        "[[host_api]]\nname = \"x\"",
        "[capability_provider.tools]\nx = {}",
        "[[capabilities]]\nid = \"x\"",
    ] {
        let text = format!("{}\n{shape}\n", valid("seed_example.toml"));
        let err = check("legacy.toml", &text).expect_err("legacy");
        assert_eq!(err.codes(), [Code::LegacyShape], "{shape}");
        assert!(err.diagnostics[0].help.contains("[[tools]]"));
    }
}

#[test]
fn five_distinct_errors_are_all_reported() {
    let text = valid("seed_example.toml")
        .replace("id = \"example\"", "id = \"Example\"")
        .replace("version = \"0.1.0\"", "version = \" \"")
        .replace(
            "[\"network\", \"use_secret\"]",
            "[\"network\", \"use_secret\", \"teleport\"]",
        )
        .replace("host = \"api.example.com\"", "host = \"*.example.com\"")
        .replace(
            "access_token = \"/access_token\"",
            "access_token = \"access_token\"",
        );
    let err = check("five.toml", &text).expect_err("invalid");
    let mut codes = err.codes();
    codes.sort();
    assert_eq!(
        codes,
        [
            Code::EmptyValue,
            Code::InvalidId,
            Code::UnknownEffect,
            Code::Audience,
            Code::JsonPointer
        ],
        "{err}"
    );
    let audience = err
        .iter()
        .find(|d| d.code == Code::Audience)
        .expect("audience");
    assert_eq!(audience.path, "tools[0].credentials[0].audience.host");
    assert_eq!((audience.line, audience.file.as_str()), (28, "five.toml"));
}

#[test]
fn diagnostics_render_for_people_and_tools() {
    let text = valid("seed_example.toml")
        .replace("host = \"api.example.com\"", "host = \"*.example.com\"");
    let err = check("m.toml", &text).expect_err("invalid");
    let human = err.to_string();
    assert!(human.contains("error[audience]"), "{human}");
    assert!(human.contains("--> m.toml:28:39"), "{human}");
    assert!(human.contains("^^^^^^^^^^^^^^^"), "{human}");
    let json: serde_json::Value = serde_json::from_str(&err.to_json()).expect("json");
    let d = &json["diagnostics"][0];
    assert_eq!(d["code"], "audience");
    assert_eq!(d["path"], "tools[0].credentials[0].audience.host");
    assert_eq!(d["line"], 28);
    assert!(d["help"].as_str().is_some_and(|h| h.contains("https")));
    let boxed: Box<dyn std::error::Error> = Box::new(err);
    assert!(boxed.to_string().contains("1 problem"));
}

#[test]
fn directory_loader_and_module_check() {
    let dir = std::env::temp_dir().join(format!("warden-manifest-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("schemas/example")).expect("mkdir");
    fs::create_dir_all(dir.join("prompts/example")).expect("mkdir");
    let assets = ui_dir().join("assets");
    for p in [
        "schemas/example/search.input.v1.json",
        "schemas/example/search.output.v1.json",
        "prompts/example/search.md",
    ] {
        fs::copy(assets.join(p), dir.join(p)).expect("copy");
    }
    fs::write(dir.join("manifest.toml"), valid("seed_example.toml")).expect("write");
    let package = load_package(&dir, &ValidationOptions::default()).expect("valid dir");
    assert_eq!(package.root, dir);
    let err = load_package(&dir, &ValidationOptions::default().require_module(true))
        .expect_err("no module");
    assert_eq!(err.codes(), [Code::ModuleMissing]);
    fs::create_dir_all(dir.join("wasm")).expect("mkdir");
    fs::write(dir.join("wasm/example_tool.wasm"), b"\0asm").expect("write");
    load_package(&dir, &ValidationOptions::default().require_module(true)).expect("module present");
    let gone = load_package(&dir.join("nope"), &ValidationOptions::default()).expect_err("no dir");
    assert_eq!(gone.codes(), [Code::ManifestUnreadable]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn manifest_size_and_encoding_are_bounded() {
    let opts = ValidationOptions {
        max_manifest_bytes: 64,
        ..ValidationOptions::default()
    };
    let err = check_with("big.toml", &valid("seed_example.toml"), &opts).expect_err("too large");
    assert_eq!(err.codes(), [Code::ManifestTooLarge]);
    let bytes = b"id = \"caf\xe9\"\n";
    let err = load_from_files(
        "latin1.toml",
        bytes,
        "x".as_ref(),
        &MemFiles::new(),
        &ValidationOptions::default(),
    )
    .expect_err("not utf8");
    assert_eq!(err.codes(), [Code::ManifestNotUtf8]);
    assert_eq!(
        (err.diagnostics[0].line, err.diagnostics[0].column),
        (1, 10)
    );
}

#[test]
fn trust_is_a_request_the_host_caps() {
    let package = check("mcp.toml", &valid("mcp_notion.toml")).expect("valid");
    assert_eq!(package.requested_trust, Trust::FirstPartyRequested);
    assert_eq!(
        package.effective_trust(Trust::ThirdParty),
        Trust::ThirdParty
    );
    let Implementation::Mcp(mcp) = &package.implementation else {
        panic!("mcp")
    };
    assert_eq!(mcp.audience.host, "mcp.notion.com");
    assert_eq!(mcp.credentials[0].audience, mcp.audience);
    assert!(
        warden_manifest::summary(&package)
            .starts_with("notion-mcp 0.1.0 (mcp): 1 tool, 1 credential [notion]")
    );
}
