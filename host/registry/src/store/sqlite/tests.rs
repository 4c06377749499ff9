use super::*;

#[test]
fn sqlite_store_conforms() {
    crate::store::conformance::run(&SqliteStore::open_in_memory().unwrap());
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
