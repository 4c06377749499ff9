//! The database's clock. Hosts sharing one PostgreSQL read lease and grant
//! expiry by it rather than by their own clocks, which may disagree by
//! minutes (a host whose clock ran an hour fast made a one-minute grant that
//! every other host honoured for an hour and a minute).
//!
//! The database is asked once a minute per host; in between, the time is
//! the last reading advanced by the host's monotonic clock (which a wall
//! clock's steps and skew do not move), taken at the middle of the round
//! trip that read it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;

use super::{pg_error, pool_error};
use crate::UnixMillis;
use crate::store::StoreError;

/// How long one reading of the database's clock is used.
const READING_LIFETIME: Duration = Duration::from_secs(60);

/// The database's time in Unix milliseconds, in SQL.
const DB_NOW: &str = "SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

/// The last reading of the database's clock: its time, and when (on the
/// host's monotonic clock) it was that time.
#[derive(Debug, Default)]
pub(super) struct DbClock {
    reading: Mutex<Option<(UnixMillis, Instant)>>,
}

impl DbClock {
    /// The database's time now.
    pub(super) async fn now(&self, pool: &Pool) -> Result<UnixMillis, StoreError> {
        if let Some(now) = self.by_last_reading(Instant::now()) {
            return Ok(now);
        }
        let client = pool.get().await.map_err(pool_error)?;
        let sent = Instant::now();
        let db: i64 = client
            .query_one(DB_NOW, &[])
            .await
            .map_err(pg_error)?
            .get(0);
        let answered = Instant::now();
        let at = sent + answered.duration_since(sent) / 2;
        *self.reading.lock().unwrap_or_else(|e| e.into_inner()) = Some((db, at));
        Ok(advanced(db, at, answered))
    }

    fn by_last_reading(&self, now: Instant) -> Option<UnixMillis> {
        let reading = *self.reading.lock().unwrap_or_else(|e| e.into_inner());
        let (db, at) = reading?;
        (now.duration_since(at) < READING_LIFETIME).then(|| advanced(db, at, now))
    }
}

/// `db` read at `at`, advanced to `now`.
fn advanced(db: UnixMillis, at: Instant, now: Instant) -> UnixMillis {
    let elapsed = i64::try_from(now.duration_since(at).as_millis()).unwrap_or(i64::MAX);
    db.saturating_add(elapsed)
}
