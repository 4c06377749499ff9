//! Rules of the real v3 format beyond the seed's list: standard_op, source
//! tiers, lanes this host does not run, resource_profile limits and lints.

use std::fs;

use warden_core::{GatePolicy, Origin};
use warden_manifest::{Code, ValidationOptions};

use crate::{check, check_with, ui_dir};

fn valid(name: &str) -> String {
    fs::read_to_string(ui_dir().join("valid").join(name)).expect("fixture")
}

/// The issue-13 attack: a made-up `standard_op` used to skip the input
/// schema. It is refused (naming the op and the known ones), and the tool
/// without a schema is refused too; a real op passes `check` but the
/// package reports that this host will not run it, so it is never published
/// with a made-up `{"type": "object"}` schema.
#[test]
fn a_made_up_standard_op_does_not_waive_the_input_schema() {
    let attack = valid("seed_example.toml")
        .replace(
            "id = \"example.search\"",
            "id = \"example.search\"\nstandard_op = \"made.up\"",
        )
        .replace(
            "input_schema_ref = \"schemas/example/search.input.v1.json\"\n",
            "",
        );
    let err = check("attack.toml", &attack).expect_err("refused");
    let op = err
        .iter()
        .find(|d| d.code == Code::StandardOp)
        .expect("standard_op diagnostic");
    assert!(op.message.contains("`made.up`"), "{err}");
    assert!(
        op.note
            .as_deref()
            .is_some_and(|n| n.contains("send_message")),
        "{err}"
    );
    assert!(err.codes().contains(&Code::MissingAsset), "{err}");

    // A real op gets the host's contract: its schemas, and the host's
    // description ahead of the package's addendum. The host runs it.
    let real = check("op.toml", &valid("standard_op.toml")).expect("a real op passes check");
    for cap in &real.capabilities {
        let op = cap.standard_op.as_deref().expect("bound");
        let contract = warden_manifest::standard::messaging_op(op).expect("bindable");
        assert_eq!(cap.input_schema, Some(contract.input_schema()), "{op}");
        assert_eq!(cap.output_schema, Some(contract.output_schema()), "{op}");
        assert!(cap.description.starts_with(contract.description), "{op}");
        assert_eq!(cap.refs.input_schema, None, "no package file is named");
    }
    assert_eq!(real.unsupported_lane(&[]), None);
}

#[test]
fn source_tiers_gate_bundled_and_user_features() {
    use warden_manifest::Source;
    let as_source = |name: &str, source: Source| {
        check_with(
            name,
            &valid(name),
            &ValidationOptions::default()
                .source(source)
                .allow_ungated_loop_run("example.status"),
        )
    };
    // Trust words, first_party runtimes and [admin_configuration] are bundled-only.
    for name in ["first_party_api_key.toml", "mcp_notion.toml", "memory.toml"] {
        as_source(name, Source::Bundled).expect("bundled");
        for source in [Source::Installed, Source::User] {
            let err = as_source(name, source).expect_err("not bundled");
            assert!(
                err.codes().iter().all(|c| *c == Code::SourceTier),
                "{name}: {err}"
            );
        }
    }
    let fp = as_source("first_party_api_key.toml", Source::Installed).expect_err("installed");
    let paths: Vec<_> = fp.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        paths,
        ["trust", "runtime.kind", "admin_configuration"],
        "{fp}"
    );
    // A plain wasm package passes from every source.
    for source in Source::ALL {
        as_source("wasm_full.toml", *source).expect("any source");
    }
    // `mcp-` ids are for user-registered packages; reserved prefixes for bundled ones.
    let user = valid("seed_example.toml")
        .replace("id = \"example", "id = \"mcp-example")
        .replace("\"example.search", "\"mcp-example.search");
    let opts = |source| ValidationOptions::default().source(source);
    check_with("u.toml", &user, &opts(Source::User)).expect("user");
    assert_eq!(
        check_with("u.toml", &user, &opts(Source::Installed))
            .expect_err("installed")
            .codes(),
        [Code::SourceTier]
    );
    let reserved = valid("seed_example.toml")
        .replace("id = \"example", "id = \"warden.example")
        .replace("\"example.search", "\"warden.example.search");
    check_with("r.toml", &reserved, &opts(Source::Bundled)).expect("bundled");
    assert_eq!(
        check_with("r.toml", &reserved, &opts(Source::User))
            .expect_err("user")
            .codes(),
        [Code::SourceTier]
    );
    assert_eq!(ValidationOptions::default().source, Source::Installed);
    assert_eq!("bundled".parse::<Source>(), Ok(Source::Bundled));
    assert!("system".parse::<Source>().is_err());
}

#[test]
fn lanes_this_host_does_not_run_are_named() {
    let lane = |name: &str| {
        check(name, &valid(name))
            .expect("valid")
            .unsupported_lane(&[])
    };
    assert!(
        lane("channel_only.toml")
            .expect("channel")
            .contains("[channel]")
    );
    assert!(lane("memory.toml").expect("memory").contains("[memory]"));
    assert!(
        lane("device_link.toml")
            .expect("device")
            .contains("device_link")
    );
    let fp = check("fp.toml", &valid("first_party_api_key.toml")).expect("valid");
    assert!(
        fp.unsupported_lane(&[])
            .expect("unregistered")
            .contains("`example_mail`")
    );
    assert_eq!(fp.unsupported_lane(&["example_mail"]), None);
    // Every reason at once, not the first one found.
    use warden_manifest::Unsupported;
    let pager = check("c.toml", &valid("channel_only.toml")).expect("valid");
    assert_eq!(
        pager.unsupported(&[]),
        [
            Unsupported::Channel,
            Unsupported::FirstPartyService("pager".into())
        ]
    );
    // The memory lane's assets are not the package's: one reason, no
    // missing prompt docs.
    let memory = check("m.toml", &valid("memory.toml")).expect("valid");
    assert!(memory.capabilities[0].prompt.is_none());
    assert_eq!(
        memory.unsupported(&["mem0"]),
        [Unsupported::Memory],
        "{memory:?}"
    );
    assert_eq!(lane("wasm_full.toml"), None);
    assert_eq!(lane("seed_example.toml"), None);
}

#[test]
fn resource_profile_maps_to_the_runtime_limits() {
    let package = check("full.toml", &valid("wasm_full.toml")).expect("valid");
    let create = package.capability("example.create_record").expect("tool");
    assert_eq!(create.limits.timeout_ms, Some(5000));
    assert_eq!(create.limits.max_output_bytes, Some(65536));
    assert_eq!(create.limits.memory_bytes, Some(33_554_432));
    assert_eq!(create.limits.fuel, None);
    assert_eq!(create.max_egress_bytes, Some(0));
}

#[test]
fn a_missing_gate_matrix_is_accepted_and_flagged() {
    let text = valid("seed_example.toml").replace(
        "origin_gate_matrix = { loop_run = \"gated_unless_granted\", product = \"forbidden\", automation = \"forbidden\" }\n",
        "",
    );
    let package = check("nogate.toml", &text).expect("the format makes it optional");
    let cap = &package.capabilities[0];
    for origin in Origin::ALL {
        assert_eq!(
            cap.origin_gate_matrix.policy(*origin),
            GatePolicy::Forbidden
        );
    }
    let lints = warden_manifest::lints(&package, &crate::fixture_options());
    assert_eq!(
        lints.iter().map(|l| l.code).collect::<Vec<_>>(),
        [warden_manifest::LintCode::GateMatrixMissing]
    );
    assert!(
        lints[0]
            .to_string()
            .starts_with("warning[gate_matrix_missing]: `example.search`")
    );
}
