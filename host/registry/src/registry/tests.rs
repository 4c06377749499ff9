use serde_json::json;

use super::*;

fn tool(name: &str, cap: &str) -> ToolDef {
    ToolDef::new(
        name,
        format!("{cap} tool"),
        json!({"type": "object"}),
        Executor::key(cap),
    )
}

fn names(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .tools()
        .map(|t| t.model_name().to_owned())
        .collect()
}

fn cap_of(snapshot: &Snapshot, name: &str) -> String {
    snapshot
        .lookup(name)
        .unwrap()
        .def()
        .capability_id()
        .to_owned()
}

#[test]
fn latest_active_same_placement_registration_wins() {
    let registry = Registry::new("loc".into());
    let _v1 = registry
        .transform("package:gh", |d| d.add(tool("read", "gh.v1")).map(drop))
        .unwrap();
    let _v2 = registry
        .transform("package:gh", |d| d.add(tool("read", "gh.v2")).map(drop))
        .unwrap();
    let snap = registry.snapshot();
    assert_eq!(names(&snap), ["read"]);
    assert_eq!(cap_of(&snap, "read"), "gh.v2");
}

#[test]
fn latest_wins_per_placement_not_per_tool() {
    let registry = Registry::new("loc".into());
    let _v1 = registry
        .transform("package:gh", |d| {
            d.add(tool("a", "gh.a"))?.add(tool("b", "gh.b"))?;
            Ok(())
        })
        .unwrap();
    let _v2 = registry
        .transform("package:gh", |d| d.add(tool("a", "gh.a2")).map(drop))
        .unwrap();
    // v2 shadows the whole of v1: `b` is gone until v2 closes.
    assert_eq!(names(&registry.snapshot()), ["a"]);
}

#[test]
fn close_removes_only_that_registration_and_reveals_the_next() {
    let registry = Registry::new("loc".into());
    let v1 = registry
        .transform("p", |d| d.add(tool("read", "v1")).map(drop))
        .unwrap();
    let v2 = registry
        .transform("p", |d| d.add(tool("read", "v2")).map(drop))
        .unwrap();
    let v3 = registry
        .transform("p", |d| d.add(tool("read", "v3")).map(drop))
        .unwrap();
    let other = registry
        .transform("q", |d| d.add(tool("write", "q")).map(drop))
        .unwrap();
    // Closing a shadowed registration changes nothing visible.
    assert!(v2.close());
    assert_eq!(cap_of(&registry.snapshot(), "read"), "v3");
    assert!(v3.close());
    assert_eq!(cap_of(&registry.snapshot(), "read"), "v1");
    assert_eq!(names(&registry.snapshot()), ["read", "write"]);
    drop(v1); // dropping closes too
    assert_eq!(names(&registry.snapshot()), ["write"]);
    let id = other.detach();
    assert_eq!(names(&registry.snapshot()), ["write"]);
    assert!(registry.close(id));
    assert!(!registry.close(id));
    assert_eq!(names(&registry.snapshot()), Vec::<String>::new());
}

#[test]
fn snapshots_are_isolated_from_later_changes() {
    let registry = Registry::new("loc".into());
    let v1 = registry
        .transform("p", |d| d.add(tool("read", "v1")).map(drop))
        .unwrap();
    let before = registry.snapshot();
    let _v2 = registry
        .transform("p", |d| d.add(tool("read", "v2")).map(drop))
        .unwrap();
    let _q = registry
        .transform("q", |d| d.add(tool("more", "q")).map(drop))
        .unwrap();
    drop(v1);
    assert_eq!(names(&before), ["read"]);
    assert_eq!(cap_of(&before, "read"), "v1");
    let after = registry.snapshot();
    assert_eq!(names(&after), ["more", "read"]);
    assert_eq!(cap_of(&after, "read"), "v2");
    assert!(after.generation() > before.generation());
}

/// Every call takes a snapshot, so the registry keeps the last one: each
/// kind of change must drop it.
#[test]
fn the_kept_snapshot_follows_every_change() {
    let registry = Registry::new("loc".into());
    let first = registry.snapshot();
    assert!(names(&first).is_empty());
    let p = registry
        .transform("p", |d| d.add(tool("read", "p")).map(drop))
        .unwrap();
    let added = registry.snapshot();
    assert_eq!(names(&added), ["read"]);
    assert_eq!(registry.snapshot().generation(), added.generation());
    assert!(p.close());
    assert!(names(&registry.snapshot()).is_empty());
}

#[test]
fn namespaces_flatten_to_model_names() {
    let registry = Registry::new("loc".into());
    let _r = registry
        .transform("mcp:linear", |d| {
            d.add(tool("create issue", "linear.create").with_namespace("linear"))?;
            Ok(())
        })
        .unwrap();
    let snap = registry.snapshot();
    let t = snap.lookup("linear_create_issue").unwrap();
    assert_eq!(t.def().name, "create issue");
    assert_eq!(t.permission_action(), "linear_create_issue");
}

/// Issue 42 finding 6: a capability id is matched as written, never as the
/// model name it flattens to.
#[test]
fn capability_ids_are_matched_exactly() {
    let registry = Registry::new("loc".into());
    let _r = registry
        .transform("package:github", |d| {
            d.add(tool("get_repo", "github.get_repo").with_namespace("github"))
                .map(drop)
        })
        .unwrap();
    let snap = registry.snapshot().filtered(&["github_get_repo"]);
    let found = snap.by_capability_id("github.get_repo");
    assert_eq!(found.map(|t| t.model_name()), Some("github_get_repo"));
    for near in [
        "github.get.repo",
        "github_get.repo",
        "github_get_repo",
        "GITHUB.get_repo",
    ] {
        assert!(snap.by_capability_id(near).is_none(), "{near}");
    }
}

#[test]
fn different_tools_with_the_same_flat_name_are_refused_naming_both() {
    let registry = Registry::new("loc".into());
    let _a = registry
        .transform("package:github", |d| {
            d.add(tool("get_repo", "github.get_repo").with_namespace("github"))
                .map(drop)
        })
        .unwrap();
    let err = registry
        .transform("mcp:gh", |d| {
            d.add(tool("github.get_repo", "mcp.x")).map(drop)
        })
        .unwrap_err();
    let RegistryError::NameCollision {
        model_name,
        existing,
        incoming,
        ..
    } = &err
    else {
        panic!("expected a collision, got {err:?}");
    };
    assert_eq!(model_name, "github_get_repo");
    assert_eq!(existing, "github_get_repo");
    assert_eq!(incoming, "github.get_repo");
    assert!(err.to_string().contains("package:github"), "{err}");
    // Nothing was installed, the old tool is untouched.
    assert_eq!(
        cap_of(&registry.snapshot(), "github_get_repo"),
        "github.get_repo"
    );
}

#[test]
fn a_draft_refuses_two_tools_with_one_name() {
    let registry = Registry::new("loc".into());
    let err = registry
        .transform("p", |d| {
            d.add(tool("a.b", "x"))?.add(tool("a_b", "y"))?;
            Ok(())
        })
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::NameCollision { .. }),
        "{err:?}"
    );
    assert_eq!(registry.snapshot().tools().count(), 0);
}

#[test]
fn shadowed_tools_still_count_for_collisions() {
    let registry = Registry::new("loc".into());
    let _v1 = registry
        .transform("p", |d| d.add(tool("x", "p.x")).map(drop))
        .unwrap();
    let _v2 = registry.transform("p", |_| Ok(())).unwrap();
    // `x` is shadowed now, but closing v2 would reveal it: refuse.
    let err = registry
        .transform("q", |d| d.add(tool("x", "q.x")).map(drop))
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::NameCollision { .. }),
        "{err:?}"
    );
}

#[test]
fn snapshot_separates_native_from_codemode() {
    let registry = Registry::new("loc".into());
    let _r = registry
        .transform("builtin", |d| {
            d.add(tool("bash", "b.bash").with_codemode(false))?
                .add(tool("grep", "b.grep"))?;
            Ok(())
        })
        .unwrap();
    let snap = registry.snapshot();
    let native: Vec<_> = snap.native().map(|t| t.model_name()).collect();
    let code: Vec<_> = snap.codemode().map(|t| t.model_name()).collect();
    assert_eq!(native, ["bash"]);
    assert_eq!(code, ["grep"]);
}

#[test]
fn filtering_hides_by_permission_action_with_edit_shared() {
    let registry = Registry::new("loc".into());
    let _r = registry
        .transform("builtin", |d| {
            d.add(tool("edit", "b.edit"))?
                .add(tool("write", "b.write"))?
                .add(tool("patch", "b.patch"))?
                .add(tool("read", "b.read"))?
                .add(tool("fetch", "b.fetch").with_permission_action("web"))?;
            Ok(())
        })
        .unwrap();
    let snap = registry.snapshot().filtered(&["edit", "web"]);
    assert_eq!(names(&snap), ["read"]);
    assert!(snap.is_hidden("patch"));
    assert!(snap.lookup("write").is_some(), "filtering is not removal");
}

#[test]
fn registries_are_per_location() {
    let a = Registry::new("a".into());
    let b = Registry::new("b".into());
    let _r = a
        .transform("p", |d| d.add(tool("read", "x")).map(drop))
        .unwrap();
    assert_eq!(names(&a.snapshot()), ["read"]);
    assert_eq!(b.snapshot().tools().count(), 0);
    assert_eq!(b.snapshot().location().as_str(), "b");
}
