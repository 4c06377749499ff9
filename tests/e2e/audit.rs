//! The audit log: one JSON line per decision and per call, with the
//! fingerprint instead of the input, read back with `warden audit tail`.

const SECRET_LOOKING_INPUT: &str = r#"{"text":"sk-live-DO-NOT-LOG-4242"}"#;

#[test]
fn decisions_and_calls_are_audited_without_their_input() {
    let warden = crate::warden();
    let call = |args: &[&str]| {
        let mut argv = vec![
            "--json",
            "call",
            "echo.echo",
            "--origin",
            "automation",
            "--input",
            SECRET_LOOKING_INPUT,
        ];
        argv.extend(args);
        warden.run(&argv)
    };
    let blocked = call(&[]);
    assert_eq!(blocked.code, 2, "{blocked:?}");
    let approval = blocked.json()["approval_id"].as_str().unwrap().to_owned();
    assert_eq!(warden.run(&["approvals", "approve", &approval]).code, 0);
    let ran = call(&[]);
    assert_eq!(ran.code, 0, "{ran:?}");

    let raw = warden.run(&["audit", "tail", "-n", "10"]);
    assert_eq!(raw.code, 0, "{raw:?}");
    assert!(
        !raw.stdout.contains("DO-NOT-LOG"),
        "the input never reaches the audit log: {}",
        raw.stdout
    );
    let on_disk = std::fs::read_to_string(warden.data_dir().join("audit.jsonl")).unwrap();
    assert!(!on_disk.contains("DO-NOT-LOG"), "{on_disk}");

    let tail = warden.run(&["--json", "audit", "tail", "-n", "10"]).json();
    let entries = tail.as_array().expect("a list");
    assert_eq!(entries.len(), 2, "{tail}");
    let (asked, done) = (&entries[0], &entries[1]);
    assert_eq!(asked["outcome"], "approval_required");
    assert_eq!(asked["approval_id"], approval.as_str());
    assert_eq!(done["outcome"], "ok");
    assert_eq!(
        done["approval_id"],
        approval.as_str(),
        "run by the approval"
    );
    for entry in entries {
        assert_eq!(entry["capability"], "echo.echo");
        assert_eq!(entry["origin"], "automation");
        assert_eq!(entry["fingerprint"], asked["fingerprint"], "the same call");
        assert_eq!(entry["fingerprint"].as_str().unwrap().len(), 64);
    }
    assert!(done["fuel"].as_u64().unwrap() > 0, "{done}");
}
