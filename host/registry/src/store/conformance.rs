//! Behaviour every [`ApprovalStore`] must have, run against each backend:
//! [`run`] on an empty store, [`claims_race`] on another empty store.
//! Exported with the `testing` feature so a backend outside this crate (and
//! the PostgreSQL run in `tests/`) is held to the same suite.

use std::sync::Arc;

use serde_json::json;
use warden_core::Origin;

use super::*;

/// A pending request `id` of `location`, made at `created_at`.
pub fn request(id: &str, location: &str, created_at: UnixMillis) -> ApprovalRequest {
    ApprovalRequest {
        id: ApprovalId(id.into()),
        capability_id: "gh.op".into(),
        package: Some(PackageIdentity::bundled("gh", "d1")),
        scope: InvocationScope::location(location).with_session("s1"),
        origin: Origin::LoopRun,
        input: json!({"repo": "a/b", "n": 1.5}),
        fingerprint: Fingerprint(format!("fp-{id}")),
        rule: Rule::GatedNoGrant,
        created_at,
        state: ApprovalState::Pending,
        resolved_at: None,
    }
}

fn grant(id: &str, expires_at: Option<UnixMillis>) -> Grant {
    Grant {
        id: GrantId(id.into()),
        capability_id: "gh.op".into(),
        package_digest: Some(format!("digest-{id}")),
        location: "loc".into(),
        session: None,
        origin: Origin::LoopRun,
        created_at: 1,
        expires_at,
    }
}

/// Round trips, resolution, lease claims, "approve, then call again" and
/// grants on an empty `store`.
pub async fn run(store: &dyn ApprovalStore) {
    // Requests round-trip and are listed per Location, oldest first.
    let a = request("a", "loc", 20);
    store.insert_approval(&a).await.unwrap();
    store
        .insert_approval(&request("b", "loc", 10))
        .await
        .unwrap();
    store
        .insert_approval(&request("c", "other", 5))
        .await
        .unwrap();
    assert!(matches!(
        store.insert_approval(&a).await,
        Err(StoreError::Duplicate { .. })
    ));
    assert_eq!(store.approval(&a.id).await.unwrap().as_ref(), Some(&a));
    assert_eq!(
        store.approval(&ApprovalId("zz".into())).await.unwrap(),
        None
    );
    let pending: Vec<_> = store
        .pending_approvals(&"loc".into())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id.0)
        .collect();
    assert_eq!(pending, ["b", "a"]);

    // Resolution happens once, with its lease and grant.
    let lease = Lease {
        id: LeaseId("l".into()),
        approval_id: a.id.clone(),
        fingerprint: a.fingerprint.clone(),
        issued_at: 30,
        expires_at: 100,
        state: LeaseState::Issued,
        claimed_at: None,
    };
    let resolved = Resolved {
        state: ApprovalState::Approved,
        lease: Some(lease.clone()),
        grant: Some(grant("g1", None)),
        at: 30,
    };
    assert!(store.resolve(&a.id, &resolved).await.unwrap());
    assert!(!store.resolve(&a.id, &resolved).await.unwrap());
    let stored = store.approval(&a.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.state, stored.resolved_at),
        (ApprovalState::Approved, Some(30))
    );
    assert_eq!(store.lease(&a.id).await.unwrap(), Some(lease));

    // Denial feedback is kept.
    let denied = Resolved {
        state: ApprovalState::Denied {
            feedback: Some("use the read tool".into()),
        },
        lease: None,
        grant: None,
        at: 31,
    };
    assert!(
        store
            .resolve(&ApprovalId("b".into()), &denied)
            .await
            .unwrap()
    );
    let b = store
        .approval(&ApprovalId("b".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b.state, denied.state);

    // A lease is claimed once, only with its fingerprint, only before expiry.
    let wrong = Fingerprint("other".into());
    assert!(!store.claim_lease(&a.id, &wrong, 40).await.unwrap());
    assert!(!store.claim_lease(&a.id, &a.fingerprint, 100).await.unwrap());
    assert!(store.claim_lease(&a.id, &a.fingerprint, 40).await.unwrap());
    assert!(!store.claim_lease(&a.id, &a.fingerprint, 41).await.unwrap());
    assert_eq!(
        store.lease(&a.id).await.unwrap().unwrap().state,
        LeaseState::Claimed
    );
    // A claim whose call never ran is handed back, once, and claimed again.
    assert!(!store.release_lease(&a.id, &wrong).await.unwrap());
    assert!(store.release_lease(&a.id, &a.fingerprint).await.unwrap());
    assert!(!store.release_lease(&a.id, &a.fingerprint).await.unwrap());
    assert_eq!(
        store.lease(&a.id).await.unwrap().unwrap().state,
        LeaseState::Issued
    );
    assert!(store.claim_lease(&a.id, &a.fingerprint, 40).await.unwrap());
    assert!(!store.claim_lease(&a.id, &a.fingerprint, 41).await.unwrap());

    // "Approve, then call again": an identical call claims the oldest
    // approved, unexpired, unclaimed request with its fingerprint, once;
    // and waits on a pending one instead of opening another.
    let same = Fingerprint("fp-same".into());
    let approve = async |id: &str, issued_at: UnixMillis, expires_at: UnixMillis| {
        let mut r = request(id, "loc", issued_at);
        r.fingerprint = same.clone();
        store.insert_approval(&r).await.unwrap();
        let lease = Lease {
            id: LeaseId(format!("lease-{id}")),
            approval_id: r.id.clone(),
            fingerprint: same.clone(),
            issued_at,
            expires_at,
            state: LeaseState::Issued,
            claimed_at: None,
        };
        let resolved = Resolved {
            state: ApprovalState::Approved,
            lease: Some(lease),
            grant: None,
            at: issued_at,
        };
        assert!(store.resolve(&r.id, &resolved).await.unwrap());
        r.id
    };
    let expired = approve("e0", 10, 35).await;
    let older = approve("e1", 20, 100).await;
    let newer = approve("e2", 30, 100).await;
    assert_eq!(store.pending_with(&same).await.unwrap(), None);
    let mut waiting = request("e3", "loc", 32);
    waiting.fingerprint = same.clone();
    store.insert_approval(&waiting).await.unwrap();
    assert_eq!(store.pending_with(&same).await.unwrap(), Some(waiting));
    assert_eq!(store.claim_approved(&wrong, 40).await.unwrap(), None);
    assert_eq!(
        store.claim_approved(&same, 40).await.unwrap(),
        Some(older.clone())
    );
    assert!(!store.claim_lease(&older, &same, 41).await.unwrap());
    assert!(store.claim_lease(&newer, &same, 41).await.unwrap());
    assert_eq!(store.claim_approved(&same, 42).await.unwrap(), None);
    assert_eq!(
        store.lease(&expired).await.unwrap().unwrap().state,
        LeaseState::Issued,
        "an expired lease is never claimed"
    );
    assert_eq!(
        store.lease(&older).await.unwrap().unwrap().claimed_at,
        Some(40)
    );

    // Grants: live ones only, revocable once, with the package they cover.
    store.insert_grant(&grant("g2", Some(50))).await.unwrap();
    let g2 = &store.grants("gh.op", &"loc".into(), 40).await.unwrap()[1];
    assert_eq!(g2, &grant("g2", Some(50)));
    let unpackaged = Grant {
        package_digest: None,
        ..grant("g3", None)
    };
    store.insert_grant(&unpackaged).await.unwrap();
    assert!(store.revoke_grant(&GrantId("g3".into())).await.unwrap());
    let ids = async |now| -> Vec<String> {
        store
            .grants("gh.op", &"loc".into(), now)
            .await
            .unwrap()
            .into_iter()
            .map(|g| g.id.0)
            .collect()
    };
    assert_eq!(ids(40).await, ["g1", "g2"]);
    assert_eq!(ids(50).await, ["g1"]);
    let mut other = grant("g4", None);
    other.capability_id = "gh.other".into();
    store.insert_grant(&other).await.unwrap();
    store
        .insert_grant(&Grant {
            location: "elsewhere".into(),
            ..grant("g5", None)
        })
        .await
        .unwrap();
    let live = async |now| -> Vec<String> {
        store
            .live_grants(&"loc".into(), now)
            .await
            .unwrap()
            .into_iter()
            .map(|g| g.id.0)
            .collect()
    };
    assert_eq!(live(40).await, ["g1", "g2", "g4"]);
    assert_eq!(live(50).await, ["g1", "g4"]);
    assert_eq!(
        store.live_grants(&"loc".into(), 40).await.unwrap()[2],
        other
    );
    assert!(
        store
            .grants("gh.none", &"loc".into(), 40)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.revoke_grant(&GrantId("g1".into())).await.unwrap());
    assert!(!store.revoke_grant(&GrantId("g1".into())).await.unwrap());
    assert!(ids(40).await == ["g2"]);
    assert_eq!(live(40).await, ["g2", "g4"]);
}

/// The retention sweep on an empty `store`: what was settled before the
/// cut goes (a resolved approval with its lease, an expired grant, a
/// revoked one), what was not stays (a pending approval however old, a
/// recent resolution, a live grant).
pub async fn prunes(store: &dyn ApprovalStore) {
    let resolve = |id: &str, at: UnixMillis| {
        let lease = Lease {
            id: LeaseId(format!("lease-{id}")),
            approval_id: ApprovalId(id.into()),
            fingerprint: Fingerprint(format!("fp-{id}")),
            issued_at: at,
            expires_at: at + 10,
            state: LeaseState::Issued,
            claimed_at: None,
        };
        Resolved {
            state: ApprovalState::Approved,
            lease: Some(lease),
            grant: None,
            at,
        }
    };
    for (id, created) in [("old", 10), ("recent", 10), ("waiting", 1)] {
        store
            .insert_approval(&request(id, "loc", created))
            .await
            .unwrap();
    }
    let old = ApprovalId("old".into());
    assert!(store.resolve(&old, &resolve("old", 100)).await.unwrap());
    let recent = ApprovalId("recent".into());
    assert!(
        store
            .resolve(&recent, &resolve("recent", 900))
            .await
            .unwrap()
    );
    store
        .insert_grant(&grant("expired", Some(200)))
        .await
        .unwrap();
    store.insert_grant(&grant("revoked", None)).await.unwrap();
    assert!(
        store
            .revoke_grant(&GrantId("revoked".into()))
            .await
            .unwrap()
    );
    store.insert_grant(&grant("live", None)).await.unwrap();
    store
        .insert_grant(&grant("later", Some(5_000)))
        .await
        .unwrap();

    // Deleted: "old" and its lease, "expired", "revoked".
    assert_eq!(store.prune(500).await.unwrap(), 4);
    assert_eq!(store.approval(&old).await.unwrap(), None);
    assert_eq!(store.lease(&old).await.unwrap(), None);
    assert!(store.approval(&recent).await.unwrap().is_some());
    assert!(store.lease(&recent).await.unwrap().is_some());
    let waiting = store.approval(&ApprovalId("waiting".into())).await.unwrap();
    assert_eq!(waiting.map(|w| w.state), Some(ApprovalState::Pending));
    let mut live: Vec<String> = store
        .live_grants(&"loc".into(), 0)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.id.0)
        .collect();
    live.sort();
    assert_eq!(live, ["later", "live"]);
    assert!(
        !store
            .revoke_grant(&GrantId("revoked".into()))
            .await
            .unwrap()
    );
    // Nothing left to delete.
    assert_eq!(store.prune(500).await.unwrap(), 0);
}

/// Sixteen concurrent claims of one approved call, half by approval id
/// (resume) and half by fingerprint (call again): exactly one wins. On a
/// backend shared by several hosts, this is "dispatch exactly once".
pub async fn claims_race(store: Arc<dyn ApprovalStore>) {
    let mut approved = request("race", "loc", 1);
    approved.fingerprint = Fingerprint("fp-race".into());
    store.insert_approval(&approved).await.unwrap();
    let lease = Lease {
        id: LeaseId("lease-race".into()),
        approval_id: approved.id.clone(),
        fingerprint: approved.fingerprint.clone(),
        issued_at: 2,
        expires_at: 1_000,
        state: LeaseState::Issued,
        claimed_at: None,
    };
    let resolved = Resolved {
        state: ApprovalState::Approved,
        lease: Some(lease),
        grant: None,
        at: 2,
    };
    assert!(store.resolve(&approved.id, &resolved).await.unwrap());
    let racers: Vec<_> = (0..16)
        .map(|i| {
            let (store, approved) = (store.clone(), approved.clone());
            tokio::spawn(async move {
                if i % 2 == 0 {
                    store
                        .claim_lease(&approved.id, &approved.fingerprint, 3)
                        .await
                        .unwrap()
                } else {
                    store
                        .claim_approved(&approved.fingerprint, 3)
                        .await
                        .unwrap()
                        .is_some()
                }
            })
        })
        .collect();
    let mut winners = 0;
    for racer in racers {
        winners += usize::from(racer.await.unwrap());
    }
    assert_eq!(winners, 1, "one approved call must be claimed exactly once");
    let lease = store.lease(&approved.id).await.unwrap().unwrap();
    assert_eq!(
        (lease.state, lease.claimed_at),
        (LeaseState::Claimed, Some(3))
    );
}

/// At most one request per fingerprint is pending, whichever of many
/// callers (hosts) opens it at once; once it is settled another may be.
pub async fn one_pending_per_fingerprint(store: Arc<dyn ApprovalStore>) {
    let same = |id: &str| {
        let mut r = request(id, "loc", 1);
        r.fingerprint = Fingerprint("fp-once".into());
        r
    };
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let (store, request) = (store.clone(), same(&format!("racer-{i}")));
            tokio::spawn(async move { store.insert_approval(&request).await })
        })
        .collect();
    let mut opened = Vec::new();
    for (i, racer) in racers.into_iter().enumerate() {
        match racer.await.unwrap() {
            Ok(()) => opened.push(format!("racer-{i}")),
            Err(StoreError::AlreadyPending) => {}
            Err(other) => panic!("racer-{i}: {other:?}"),
        }
    }
    assert_eq!(opened.len(), 1, "one request is pending: {opened:?}");
    let waiting = store.pending_with(&Fingerprint("fp-once".into())).await;
    assert_eq!(waiting.unwrap().unwrap().id.0, opened[0]);
    // Settled, it no longer holds the fingerprint.
    let dismissed = Resolved {
        state: ApprovalState::Dismissed,
        lease: None,
        grant: None,
        at: 2,
    };
    let id = ApprovalId(opened[0].clone());
    assert!(store.resolve(&id, &dismissed).await.unwrap());
    store.insert_approval(&same("after")).await.unwrap();
}
