//! Write transactions that survive other processes writing at the same time.
//!
//! Every write is `BEGIN IMMEDIATE`: the write lock is taken up front, so a
//! transaction never has to upgrade a read lock half way (the deadlock-prone
//! path that returns SQLITE_BUSY without waiting). When another process holds
//! the lock, SQLite's own busy handler waits a little ([`BUSY_TIMEOUT`]); after
//! that the whole transaction is retried after a random 20–150 ms, so writers
//! that collided do not wake up in lock-step again, until [`RETRY_BUDGET`].

use std::time::{Duration, Instant};

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::error::{Result, StoreError};

/// How long SQLite's busy handler waits for a lock before returning BUSY.
/// Short on purpose: the jittered retry below spreads writers out better.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_millis(250);

/// Total time a write may spend waiting for the lock before giving up.
pub(crate) const RETRY_BUDGET: Duration = Duration::from_secs(10);

/// Bounds of the random pause between attempts, in milliseconds.
const JITTER_MS: (u64, u64) = (20, 150);

/// Runs `body` in a `BEGIN IMMEDIATE` transaction and commits it, retrying
/// the whole transaction while the database is busy. `body` may run more than
/// once, so it must not have effects outside the transaction.
pub(crate) fn write<T>(
    conn: &mut Connection,
    mut body: impl FnMut(&Transaction<'_>) -> Result<T>,
) -> Result<T> {
    with_retry(|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = body(&tx)?;
        tx.commit()?;
        Ok(value)
    })
}

/// Runs `attempt` until it succeeds, fails with something other than
/// busy/locked, or the retry budget is spent.
pub(crate) fn with_retry<T>(mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
    let started = Instant::now();
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        match attempt() {
            Err(error) if error.is_busy() => {
                let pause = Duration::from_millis(fastrand::u64(JITTER_MS.0..=JITTER_MS.1));
                if started.elapsed() + pause > RETRY_BUDGET {
                    return Err(StoreError::Busy {
                        attempts,
                        waited_ms: started.elapsed().as_millis(),
                    });
                }
                std::thread::sleep(pause);
            }
            other => return other,
        }
    }
}
