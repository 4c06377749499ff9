use super::*;

#[tokio::test]
async fn sqlite_store_conforms() {
    crate::store::conformance::run(&SqliteStore::open_in_memory().unwrap()).await;
    crate::store::conformance::prunes(&SqliteStore::open_in_memory().unwrap()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("race.db")).unwrap();
    crate::store::conformance::claims_race(Arc::new(store)).await;
    let store = SqliteStore::open(dir.path().join("pending.db")).unwrap();
    crate::store::conformance::one_pending_per_fingerprint(Arc::new(store)).await;
}

/// Duplicate pending requests left by schema version 3: the oldest stays
/// pending, the others are settled, and the index then holds.
#[tokio::test]
async fn duplicates_from_before_one_pending_per_fingerprint_are_settled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.db");
    {
        let conn = Connection::open(&path).unwrap();
        for migration in &schema::MIGRATIONS[..3] {
            conn.execute_batch(migration).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
        for (id, at) in [("newer", 5), ("oldest", 1), ("middle", 3)] {
            conn.execute(
                "INSERT INTO approvals (id, capability_id, location, session, origin, input, \
                 fingerprint, rule, created_at, state) VALUES (?1, 'gh.op', 'loc', NULL, \
                 'loop_run', '{}', 'fp', '{\"rule\":\"gated_no_grant\"}', ?2, 'pending')",
                rusqlite::params![id, at],
            )
            .unwrap();
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    let pending = store.pending_approvals(&"loc".into()).await.unwrap();
    let ids: Vec<&str> = pending.iter().map(|r| r.id.0.as_str()).collect();
    assert_eq!(ids, ["oldest"]);
    let newer = store.approval(&ApprovalId("newer".into())).await.unwrap();
    assert_eq!(newer.unwrap().state, ApprovalState::Dismissed);
}

#[test]
fn migrations_set_user_version_and_refuse_newer_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.db");
    drop(SqliteStore::open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, SqliteStore::schema_version());
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::UnsupportedSchema { found: 99, .. }),
        "{err:?}"
    );
}

/// Rows written by schema version 1 (no package identity): a grant must
/// not cover any package after the migration, and an approval reads back
/// without a package.
#[tokio::test]
async fn rows_from_before_package_identity_bind_to_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute_batch(
            "INSERT INTO grants (id, capability_id, location, session, origin, created_at) \
             VALUES ('old', 'github.get_repo', 'loc', NULL, 'loop_run', 1); \
             INSERT INTO approvals (id, capability_id, location, session, origin, input, \
             fingerprint, rule, created_at, state) VALUES ('apr', 'github.get_repo', 'loc', \
             NULL, 'loop_run', '{}', 'fp', '{\"rule\":\"gated_no_grant\"}', 1, 'pending');",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert!(
        store
            .grants("github.get_repo", &"loc".into(), 2)
            .await
            .unwrap()
            .is_empty(),
        "a grant stored without a package digest must cover no package"
    );
    let approval = store
        .approval(&ApprovalId("apr".into()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(approval.package, None);
}

/// Many connections to one file (as several `warden` processes would be)
/// racing to claim the same approved call: exactly one wins.
#[test]
fn concurrent_identical_calls_claim_an_approval_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("approvals.db");
    let store = SqliteStore::open(&path).unwrap().db;
    let mut approved = crate::store::conformance::request("r", "loc", 1);
    approved.fingerprint = Fingerprint("fp-race".into());
    store.insert_approval(&approved).unwrap();
    let lease = Lease {
        id: LeaseId("lease-r".into()),
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
    assert!(store.resolve(&approved.id, &resolved).unwrap());
    let winners: usize = std::thread::scope(|s| {
        let racers: Vec<_> = (0..8)
            .map(|_| {
                let path = &path;
                let fingerprint = &approved.fingerprint;
                s.spawn(move || {
                    let store = SqliteStore::open(path).unwrap().db;
                    store.claim_approved(fingerprint, 3).unwrap().is_some() as usize
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).sum()
    });
    assert_eq!(winners, 1);
}
