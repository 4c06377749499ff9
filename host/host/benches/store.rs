//! Approval-store throughput, SQLite (a WAL file, the embedded default)
//! versus PostgreSQL (a throwaway local cluster, the server option), same
//! run, through the approval flow a call takes:
//!
//! - `approval_cycle`: a gated call opens a request, a person approves it,
//!   the identical call claims it (check, resolve, check).
//! - `granted_check`: a call a grant covers (the hot path of a granted tool:
//!   no approval to claim, the grants read).
//! - `granted_check_x8`: eight of those at once (the pool's concurrency).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::json;
use warden_core::{Effect, GateMatrix, GatePolicy, Origin, Permission, Visibility};
use warden_registry::{
    ApprovalConfig, ApprovalStore, Approvals, Authorizer, Gate, GatedCall, GrantTerms,
    InvocationScope, PackageIdentity, PgStore, Resolution, SqliteStore, ToolPolicy, now_millis,
};
use warden_tests::TestPostgres;

fn main() {
    // Set up before the first sample, which would otherwise include it.
    world();
    divan::main();
    // Statics are never dropped: stop the cluster here.
    if let Some(world) = WORLD.get() {
        drop(world.owned.lock().unwrap().take());
    }
}

struct World {
    rt: tokio::runtime::Runtime,
    sqlite: Approvals,
    postgres: Approvals,
    /// The SQLite file's directory and the cluster, dropped at the end.
    owned: Mutex<Option<(tempfile::TempDir, TestPostgres)>>,
}

static WORLD: OnceLock<World> = OnceLock::new();

fn world() -> &'static World {
    WORLD.get_or_init(setup)
}

fn setup() -> World {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let pg = TestPostgres::start();
    let url = pg.create_database("bench");
    let dir = tempfile::tempdir().unwrap();
    let sqlite: Arc<dyn ApprovalStore> =
        Arc::new(SqliteStore::open(dir.path().join("approvals.sqlite3")).unwrap());
    let postgres: Arc<dyn ApprovalStore> = Arc::new(rt.block_on(PgStore::connect(&url)).unwrap());
    let world = World {
        sqlite: Approvals::new(sqlite, ApprovalConfig::default()),
        postgres: Approvals::new(postgres, ApprovalConfig::default()),
        rt,
        owned: Mutex::new(Some((dir, pg))),
    };
    for approvals in [&world.sqlite, &world.postgres] {
        world.rt.block_on(grant(approvals));
    }
    world
}

fn policy(capability_id: &str) -> ToolPolicy {
    ToolPolicy {
        capability_id: capability_id.into(),
        gate: GateMatrix {
            loop_run: Some(GatePolicy::GatedUnlessGranted),
            ..Default::default()
        },
        default_permission: Permission::Allow,
        effects: vec![Effect::Network],
        visibility: Visibility::Model,
        package: Some(package()),
    }
}

fn package() -> PackageIdentity {
    PackageIdentity::bundled("bench", "digest-1")
}

fn call(capability_id: &str, n: u64) -> GatedCall {
    GatedCall {
        capability_id: capability_id.into(),
        scope: InvocationScope::location("bench"),
        origin: Origin::LoopRun,
        input: json!({ "n": n }),
        package: Some(package()),
    }
}

/// Approves one call of `bench.granted` with a grant for the Location.
async fn grant(approvals: &Approvals) {
    let policy = policy("bench.granted");
    let first = call("bench.granted", 0);
    let Gate::Blocked(request) = approvals
        .check(&Authorizer::default(), &policy, &first, now_millis())
        .await
        .unwrap()
    else {
        panic!("the first call asks");
    };
    let terms = Resolution::ApproveAndGrant(GrantTerms::default());
    approvals
        .resolve(&request.id, terms, now_millis())
        .await
        .unwrap();
    // The approved call itself claims its lease; the grant covers the rest.
    let gate = approvals
        .check(&Authorizer::default(), &policy, &first, now_millis())
        .await
        .unwrap();
    assert!(matches!(gate, Gate::Approved(_)), "{gate:?}");
}

async fn cycle(approvals: &Approvals, n: u64) {
    let policy = policy("bench.gated");
    let call = call("bench.gated", n);
    let authorizer = Authorizer::default();
    let Gate::Blocked(request) = approvals
        .check(&authorizer, &policy, &call, now_millis())
        .await
        .unwrap()
    else {
        panic!("a new call asks");
    };
    approvals
        .resolve(&request.id, Resolution::ApproveOnce, now_millis())
        .await
        .unwrap();
    let gate = approvals
        .check(&authorizer, &policy, &call, now_millis())
        .await
        .unwrap();
    assert!(matches!(gate, Gate::Approved(_)), "{gate:?}");
}

async fn granted(approvals: &Approvals, n: u64) {
    let gate = approvals
        .check(
            &Authorizer::default(),
            &policy("bench.granted"),
            &call("bench.granted", n),
            now_millis(),
        )
        .await
        .unwrap();
    assert!(matches!(gate, Gate::Run(_)), "{gate:?}");
}

fn store(backend: &str) -> &'static Approvals {
    match backend {
        "sqlite" => &world().sqlite,
        _ => &world().postgres,
    }
}

static NEXT: AtomicU64 = AtomicU64::new(1);

#[divan::bench(args = ["sqlite", "postgres"], sample_count = 200)]
fn approval_cycle(backend: &str) {
    let approvals = store(backend);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    world().rt.block_on(cycle(approvals, n));
}

#[divan::bench(args = ["sqlite", "postgres"], sample_count = 400)]
fn granted_check(backend: &str) {
    let approvals = store(backend);
    world().rt.block_on(granted(approvals, 1));
}

#[divan::bench(args = ["sqlite", "postgres"], sample_count = 200)]
fn granted_check_x8(backend: &str) {
    let approvals = store(backend);
    world().rt.block_on(async {
        let calls: Vec<_> = (0..8)
            .map(|n| {
                let approvals = approvals.clone();
                tokio::spawn(async move { granted(&approvals, n).await })
            })
            .collect();
        for call in calls {
            call.await.unwrap();
        }
    });
}
