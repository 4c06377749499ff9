//! Hosts on one PostgreSQL read lease and grant expiry by the database's
//! clock, not their own: a host whose clock runs an hour fast cannot make a
//! one-second lease or grant that the other hosts honour for an hour.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use warden_core::{Effect, GateMatrix, GatePolicy, Origin, Permission, Visibility};
use warden_registry::{
    ApprovalConfig, Approvals, Authorizer, Gate, GatedCall, GrantTerms, InvocationScope,
    PackageIdentity, PgStore, Resolution, ToolPolicy, now_millis,
};
use warden_tests::TestPostgres;

const HOUR: i64 = 3_600_000;

fn policy() -> ToolPolicy {
    ToolPolicy {
        capability_id: "clock.op".into(),
        gate: GateMatrix {
            loop_run: Some(GatePolicy::GatedUnlessGranted),
            ..Default::default()
        },
        default_permission: Permission::Allow,
        effects: vec![Effect::Network],
        visibility: Visibility::Model,
        package: Some(PackageIdentity::bundled("clock", "digest-1")),
    }
}

fn call(n: u64) -> GatedCall {
    GatedCall {
        capability_id: "clock.op".into(),
        scope: InvocationScope::location("clock"),
        origin: Origin::LoopRun,
        input: json!({ "n": n }),
        package: Some(PackageIdentity::bundled("clock", "digest-1")),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_with_a_fast_clock_cannot_stretch_a_lease_or_a_grant() {
    let pg = tokio::task::spawn_blocking(TestPostgres::start)
        .await
        .unwrap();
    let store = PgStore::connect(&pg.create_database("clock"))
        .await
        .unwrap();
    let config = ApprovalConfig {
        lease_ttl: Duration::from_secs(1),
    };
    let approvals = Approvals::new(Arc::new(store), config);
    let (authorizer, policy) = (Authorizer::default(), policy());
    let fast = || now_millis() + HOUR;
    let check = async |n: u64, now: i64| {
        approvals
            .check(&authorizer, &policy, &call(n), now)
            .await
            .unwrap()
    };

    // The fast host answers an approval: the lease lives one second.
    let Gate::Blocked(asked) = check(1, fast()).await else {
        panic!("a gated call asks")
    };
    approvals
        .resolve(&asked.id, Resolution::ApproveOnce, fast())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // By a host's own clocks the lease ran an hour more.
    let again = check(1, now_millis()).await;
    assert!(matches!(again, Gate::Blocked(_)), "{again:?}");

    // A two-second grant, made by the fast host.
    let Gate::Blocked(asked) = check(2, fast()).await else {
        panic!("a gated call asks")
    };
    let terms = GrantTerms {
        ttl: Some(Duration::from_secs(2)),
        ..GrantTerms::default()
    };
    approvals
        .resolve(&asked.id, Resolution::ApproveAndGrant(terms), fast())
        .await
        .unwrap();
    let granted = check(3, now_millis()).await;
    assert!(matches!(granted, Gate::Run(_)), "{granted:?}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let after = check(4, now_millis()).await;
    assert!(matches!(after, Gate::Blocked(_)), "{after:?}");
    // A host whose clock is an hour slow sees it ended as well.
    let slow = check(5, now_millis() - HOUR).await;
    assert!(matches!(slow, Gate::Blocked(_)), "{slow:?}");
}
