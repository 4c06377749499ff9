//! The deployment's package set: which packages every host of a deployment
//! runs, as (id, content digest, where to fetch it, the trust the
//! installing host granted). An install, replace or uninstall on any host
//! records a row (an uninstall a tombstone), each change with the next
//! revision from one sequence, so a host learns that something changed
//! with one `max(revision)` read and converges to the set. A package
//! installed from a file has no registry reference: its bytes are kept in
//! the row (at most [`MAX_STORED_PACKAGE_BYTES`]).

use super::{PgStore, pg_error};
use crate::StoreError;

/// The advisory lock every change to the set holds until it commits
/// ("wpkgset"): revisions are then taken in commit order, so a host that
/// read revision N has seen every change up to N (a sequence alone hands
/// out numbers at statement time, and a slow writer's lower revision could
/// commit after a faster one's higher, never to be noticed).
const PACKAGE_SET_LOCK: i64 = 0x0077_706b_6773_6574;

/// Bound on the bytes of a package kept in the store (its component and
/// its package layer together).
pub const MAX_STORED_PACKAGE_BYTES: usize = 32 << 20;

/// One package of the set (or the tombstone of one removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageRecord {
    /// The package id.
    pub id: String,
    /// Its content digest.
    pub digest: String,
    /// The registry reference to pull it from (pinned by digest); `None`:
    /// its bytes are in the store.
    pub reference: Option<String>,
    /// The trust the installing host granted it.
    pub trust: String,
    /// An uninstall: every host removes its copy.
    pub removed: bool,
    /// The change's revision (set by the store).
    pub revision: i64,
}

/// A package's bytes kept in the store: its component (path and bytes)
/// and the rest of it as a `.tar.gz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPackage {
    /// The component's path in the package and its bytes.
    pub module: Option<(String, Vec<u8>)>,
    /// The other files, as a `.tar.gz`.
    pub package_layer: Vec<u8>,
}

impl StoredPackage {
    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.module.as_ref().map_or(0, |(_, m)| m.len()) + self.package_layer.len()
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl PgStore {
    /// The revision of the newest change to the package set (0: none yet).
    pub async fn package_set_revision(&self) -> Result<i64, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_one(
                "SELECT coalesce(max(revision), 0)::BIGINT FROM warden_packages",
                &[],
            )
            .await
            .map_err(pg_error)?;
        row.try_get(0).map_err(pg_error)
    }

    /// Every package of the set and every tombstone, by id.
    pub async fn package_set(&self) -> Result<Vec<PackageRecord>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT id, digest, reference, trust, removed, revision \
                 FROM warden_packages ORDER BY id",
                &[],
            )
            .await
            .map_err(pg_error)?;
        rows.iter()
            .map(|row| {
                Ok(PackageRecord {
                    id: row.try_get(0).map_err(pg_error)?,
                    digest: row.try_get(1).map_err(pg_error)?,
                    reference: row.try_get(2).map_err(pg_error)?,
                    trust: row.try_get(3).map_err(pg_error)?,
                    removed: row.try_get(4).map_err(pg_error)?,
                    revision: row.try_get(5).map_err(pg_error)?,
                })
            })
            .collect()
    }

    /// Record `record` (its `removed` and `revision` ignored) as the
    /// package the set runs under its id, with its bytes when it has no
    /// reference. The new revision.
    pub async fn record_package(
        &self,
        record: &PackageRecord,
        bytes: Option<&StoredPackage>,
    ) -> Result<i64, StoreError> {
        if record.reference.is_none() && bytes.is_none() {
            return Err(StoreError::Config(format!(
                "package `{}` has neither a registry reference nor its bytes to keep",
                record.id
            )));
        }
        if let Some(bytes) = bytes
            && bytes.len() > MAX_STORED_PACKAGE_BYTES
        {
            return Err(StoreError::Config(format!(
                "package `{}` is {} bytes, over the {MAX_STORED_PACKAGE_BYTES} the store keeps; \
                 publish it to a registry (`warden publish`) and install it from there",
                record.id,
                bytes.len()
            )));
        }
        let (module_path, module) = match bytes.and_then(|b| b.module.as_ref()) {
            Some((path, module)) => (Some(path.as_str()), Some(module.as_slice())),
            None => (None, None),
        };
        let layer = bytes.map(|b| b.package_layer.as_slice());
        let now = self.clock_now().await?;
        let mut client = self.client().await?;
        let tx = locked(&mut client).await?;
        let row = tx
            .query_one(
                "INSERT INTO warden_packages \
                   (id, digest, reference, trust, removed, revision, recorded_at, \
                    module_path, module, package_layer) \
                 VALUES ($1, $2, $3, $4, FALSE, nextval('warden_package_revision'), $5, $6, $7, $8) \
                 ON CONFLICT (id) DO UPDATE SET digest = $2, reference = $3, trust = $4, \
                   removed = FALSE, revision = nextval('warden_package_revision'), \
                   recorded_at = $5, module_path = $6, module = $7, package_layer = $8 \
                 RETURNING revision",
                &[
                    &record.id,
                    &record.digest,
                    &record.reference,
                    &record.trust,
                    &now,
                    &module_path,
                    &module,
                    &layer,
                ],
            )
            .await
            .map_err(pg_error)?;
        let revision = row.try_get(0).map_err(pg_error)?;
        tx.commit().await.map_err(pg_error)?;
        Ok(revision)
    }

    /// Record that package `id` is uninstalled everywhere (a tombstone,
    /// its bytes dropped). The new revision, or `None` when the set does
    /// not hold it.
    pub async fn record_removal(&self, id: &str) -> Result<Option<i64>, StoreError> {
        let now = self.clock_now().await?;
        let mut client = self.client().await?;
        let tx = locked(&mut client).await?;
        let row = tx
            .query_opt(
                "UPDATE warden_packages SET removed = TRUE, \
                   revision = nextval('warden_package_revision'), recorded_at = $2, \
                   module_path = NULL, module = NULL, package_layer = NULL \
                 WHERE id = $1 AND NOT removed RETURNING revision",
                &[&id, &now],
            )
            .await
            .map_err(pg_error)?;
        let revision = row.map(|r| r.try_get(0).map_err(pg_error)).transpose()?;
        tx.commit().await.map_err(pg_error)?;
        Ok(revision)
    }

    /// The bytes kept for package `id` at `digest`, if the set holds them.
    pub async fn stored_package(
        &self,
        id: &str,
        digest: &str,
    ) -> Result<Option<StoredPackage>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT module_path, module, package_layer FROM warden_packages \
                 WHERE id = $1 AND digest = $2 AND NOT removed AND package_layer IS NOT NULL",
                &[&id, &digest],
            )
            .await
            .map_err(pg_error)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let path: Option<String> = row.try_get(0).map_err(pg_error)?;
        let module: Option<Vec<u8>> = row.try_get(1).map_err(pg_error)?;
        Ok(Some(StoredPackage {
            module: path.zip(module),
            package_layer: row.try_get(2).map_err(pg_error)?,
        }))
    }

    async fn clock_now(&self) -> Result<i64, StoreError> {
        self.clock.now(&self.pool).await
    }
}

/// A transaction holding [`PACKAGE_SET_LOCK`] until it ends.
async fn locked(
    client: &mut deadpool_postgres::Client,
) -> Result<deadpool_postgres::Transaction<'_>, StoreError> {
    let tx = client.transaction().await.map_err(pg_error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PACKAGE_SET_LOCK])
        .await
        .map_err(pg_error)?;
    Ok(tx)
}
