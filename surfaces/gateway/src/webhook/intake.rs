//! What a route takes: each delivery once, and at most so many a minute.
//!
//! A replay is recognised by what was signed, never by the sender's delivery
//! id, which no signature covers: a route remembers the SHA-256 of every body
//! it queued for [`REPLAY_WINDOW_SECS`], in the gateway's database, so a
//! restart forgets nothing. (GitLab's token signs nothing: there the rule only
//! stops re-posts of a captured request, not a forged one.) A route whose
//! bodies legitimately repeat (`deduplicate: false`) remembers delivery ids
//! instead, since a sender's retries carry the same one. Over its rate a route
//! answers 429 and remembers nothing, so the sender's retry is taken later.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

/// How long a taken delivery is remembered.
pub const REPLAY_WINDOW_SECS: u64 = 7 * 24 * 3600;

/// Most deliveries remembered over all routes (the oldest go first).
pub const REMEMBERED_DELIVERIES: u64 = 50_000;

/// The window a route's rate is counted over.
pub const RATE_WINDOW_SECS: u64 = 60;

/// What identifies a delivery for the replay check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayKey([u8; 32]);

impl ReplayKey {
    /// The signed body's.
    pub fn of_body(body: &[u8]) -> Self {
        Self(
            Sha256::new()
                .chain_update(b"body\n")
                .chain_update(body)
                .finalize()
                .into(),
        )
    }

    /// A delivery id's, for routes whose bodies repeat.
    pub fn of_delivery_id(id: &str) -> Self {
        Self(
            Sha256::new()
                .chain_update(b"delivery-id\n")
                .chain_update(id.as_bytes())
                .finalize()
                .into(),
        )
    }
}

/// The delivery log could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the webhook delivery log ({path}): {source}")]
pub struct LogError {
    path: String,
    source: rusqlite::Error,
}

/// The deliveries each route has taken, by [`ReplayKey`].
#[derive(Debug)]
pub struct DeliveryLog {
    connection: Connection,
    path: String,
    window_secs: u64,
    most: u64,
}

impl DeliveryLog {
    /// The log in the database at `path` (the gateway's), created on first use.
    pub fn open(path: &Path) -> Result<Self, LogError> {
        let shown = path.display().to_string();
        let connection = crate::router::open(path).map_err(|source| LogError {
            path: shown.clone(),
            source,
        })?;
        Self::with(connection, shown, REPLAY_WINDOW_SECS, REMEMBERED_DELIVERIES)
    }

    /// A log kept in memory only (tests, and a service built without a home).
    pub fn in_memory() -> Result<Self, LogError> {
        Self::bounded_in_memory(REPLAY_WINDOW_SECS, REMEMBERED_DELIVERIES)
    }

    /// A log in memory remembering `most` deliveries for `window_secs`.
    pub fn bounded_in_memory(window_secs: u64, most: u64) -> Result<Self, LogError> {
        let path = ":memory:".to_owned();
        let connection = Connection::open_in_memory().map_err(|source| LogError {
            path: path.clone(),
            source,
        })?;
        Self::with(connection, path, window_secs, most)
    }

    /// The log at `path` remembering `most` deliveries for `window_secs`.
    pub fn bounded(path: &Path, window_secs: u64, most: u64) -> Result<Self, LogError> {
        let mut log = Self::open(path)?;
        (log.window_secs, log.most) = (window_secs, most);
        Ok(log)
    }

    fn with(
        connection: Connection,
        path: String,
        window_secs: u64,
        most: u64,
    ) -> Result<Self, LogError> {
        let log = Self {
            connection,
            path,
            window_secs,
            most,
        };
        log.connection
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS webhook_deliveries (
                     route TEXT NOT NULL,
                     key BLOB NOT NULL,
                     taken_at INTEGER NOT NULL,
                     PRIMARY KEY (route, key)
                 );
                 CREATE INDEX IF NOT EXISTS webhook_deliveries_taken_at
                     ON webhook_deliveries (taken_at);",
            )
            .map_err(|source| log.fail(source))?;
        Ok(log)
    }

    fn fail(&self, source: rusqlite::Error) -> LogError {
        LogError {
            path: self.path.clone(),
            source,
        }
    }

    fn since(&self, now: u64) -> i64 {
        i64::try_from(now.saturating_sub(self.window_secs)).unwrap_or(i64::MAX)
    }

    /// Whether `route` took the delivery `key` within the window before `now`
    /// (Unix seconds).
    pub fn contains(&self, route: &str, key: &ReplayKey, now: u64) -> Result<bool, LogError> {
        self.connection
            .query_row(
                "SELECT 1 FROM webhook_deliveries WHERE route = ?1 AND key = ?2 AND taken_at >= ?3",
                params![route, key.0.as_slice(), self.since(now)],
                |_| Ok(()),
            )
            .optional()
            .map(|found| found.is_some())
            .map_err(|source| self.fail(source))
    }

    /// Records that `route` took the delivery `key` at `now`, and forgets what
    /// is past the window or over the bound.
    pub fn record(&self, route: &str, key: &ReplayKey, now: u64) -> Result<(), LogError> {
        let now_secs = i64::try_from(now).unwrap_or(i64::MAX);
        let most = i64::try_from(self.most).unwrap_or(i64::MAX);
        self.connection
            .execute(
                "INSERT OR REPLACE INTO webhook_deliveries (route, key, taken_at) VALUES (?1, ?2, ?3)",
                params![route, key.0.as_slice(), now_secs],
            )
            .and_then(|_| {
                self.connection.execute(
                    "DELETE FROM webhook_deliveries WHERE taken_at < ?1",
                    params![self.since(now)],
                )
            })
            .and_then(|_| {
                self.connection.execute(
                    "DELETE FROM webhook_deliveries WHERE rowid IN (
                         SELECT rowid FROM webhook_deliveries
                         ORDER BY taken_at DESC, rowid DESC LIMIT -1 OFFSET ?1)",
                    params![most],
                )
            })
            .map(|_| ())
            .map_err(|source| self.fail(source))
    }

    /// How many deliveries are remembered.
    #[cfg(test)]
    fn remembered(&self) -> u64 {
        self.connection
            .query_row("SELECT COUNT(*) FROM webhook_deliveries", [], |row| {
                row.get::<_, i64>(0)
            })
            .map_or(0, |n| u64::try_from(n).unwrap_or(0))
    }
}

/// The deliveries each route took in the last [`RATE_WINDOW_SECS`].
#[derive(Debug, Default)]
pub struct Rates {
    taken: BTreeMap<String, VecDeque<u64>>,
}

impl Rates {
    /// `Err(seconds until there is room)` when `route` took `per_minute`
    /// deliveries in the window before `now`.
    pub fn check(&mut self, route: &str, per_minute: u32, now: u64) -> Result<(), u64> {
        let Some(taken) = self.taken.get_mut(route) else {
            return Ok(());
        };
        while taken
            .front()
            .is_some_and(|at| now.saturating_sub(*at) >= RATE_WINDOW_SECS)
        {
            taken.pop_front();
        }
        match taken.front() {
            Some(oldest) if taken.len() >= per_minute.max(1) as usize => {
                Err((oldest + RATE_WINDOW_SECS).saturating_sub(now).max(1))
            }
            _ => Ok(()),
        }
    }

    /// Counts a delivery `route` took at `now`.
    pub fn take(&mut self, route: &str, now: u64) {
        self.taken
            .entry(route.to_owned())
            .or_default()
            .push_back(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_and_delivery_ids_are_keys_apart() {
        assert_eq!(ReplayKey::of_body(b"x"), ReplayKey::of_body(b"x"));
        assert_ne!(ReplayKey::of_body(b"x"), ReplayKey::of_body(b"y"));
        assert_ne!(ReplayKey::of_body(b"d-1"), ReplayKey::of_delivery_id("d-1"));
    }

    #[test]
    fn a_taken_delivery_is_remembered_per_route_for_the_window() {
        let log = DeliveryLog::bounded_in_memory(100, 1000).unwrap();
        let key = ReplayKey::of_body(b"{}");
        assert!(!log.contains("gh", &key, 1_000).unwrap());
        log.record("gh", &key, 1_000).unwrap();
        assert!(log.contains("gh", &key, 1_000).unwrap());
        assert!(log.contains("gh", &key, 1_100).unwrap());
        assert!(!log.contains("other", &key, 1_000).unwrap());
        assert!(!log.contains("gh", &key, 1_101).unwrap(), "past the window");
        log.record("gh", &ReplayKey::of_body(b"later"), 1_200)
            .unwrap();
        assert_eq!(log.remembered(), 1, "what is past the window is dropped");
    }

    #[test]
    fn the_log_is_bounded_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.db");
        let log = DeliveryLog::bounded(&path, 3600, 3).unwrap();
        for (n, body) in [b"a", b"b", b"c", b"d"].iter().enumerate() {
            log.record("gh", &ReplayKey::of_body(*body), 1_000 + n as u64)
                .unwrap();
        }
        assert_eq!(log.remembered(), 3);
        drop(log);
        let reopened = DeliveryLog::bounded(&path, 3600, 3).unwrap();
        assert!(
            !reopened
                .contains("gh", &ReplayKey::of_body(b"a"), 1_010)
                .unwrap()
        );
        for body in [b"b", b"c", b"d"] {
            assert!(
                reopened
                    .contains("gh", &ReplayKey::of_body(body), 1_010)
                    .unwrap()
            );
        }
    }

    #[test]
    fn a_route_over_its_rate_waits_for_the_oldest_to_leave_the_window() {
        let mut rates = Rates::default();
        for at in [100, 110, 120] {
            assert_eq!(rates.check("gh", 3, at), Ok(()));
            rates.take("gh", at);
        }
        assert_eq!(rates.check("gh", 3, 130), Err(30));
        assert_eq!(rates.check("other", 3, 130), Ok(()));
        assert_eq!(
            rates.check("gh", 3, 160),
            Ok(()),
            "the first left the window"
        );
    }
}
