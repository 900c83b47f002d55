//! The pairing state of a profile: one JSON file, replaced atomically, private
//! (0600 in a 0700 directory), changed under an exclusive lock so the gateway
//! and `talaria pairing` never lose each other's changes. A file that does not
//! parse is reported and left as it is.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::code;

/// How long a code is valid.
pub const CODE_TTL_SECS: u64 = 3600;
/// How often one user may ask for a code.
pub const REQUEST_INTERVAL_SECS: u64 = 600;
/// Codes waiting per platform.
pub const MAX_PENDING_PER_PLATFORM: usize = 3;
/// Failed approvals of a platform before its pairing is locked.
pub const FAILED_APPROVALS_BEFORE_LOCKOUT: u32 = 5;
/// How long the lock lasts.
pub const LOCKOUT_SECS: u64 = 3600;

const STATE_FILE: &str = "state.json";
const LOCK_FILE: &str = ".lock";

/// Why a pairing operation failed.
#[derive(Debug, thiserror::Error)]
pub enum PairingError {
    /// No waiting code of this platform matches.
    #[error(
        "no pairing request of {platform} has this code (it may have expired after an hour); \
         {attempts_left} more wrong codes lock {platform}'s pairing for an hour"
    )]
    UnknownCode {
        platform: String,
        attempts_left: u32,
    },
    /// Too many wrong codes.
    #[error(
        "pairing on {platform} is locked after {FAILED_APPROVALS_BEFORE_LOCKOUT} wrong codes; \
         it opens again in {} minutes",
        .remaining_secs.div_ceil(60)
    )]
    LockedOut {
        platform: String,
        remaining_secs: u64,
    },
    /// A platform name the store cannot file.
    #[error("invalid platform name {0:?}: use lower-case letters, digits, '-' and '_'")]
    Platform(String),
    /// The state file is not valid; it is left untouched.
    #[error("{}: {message}; fix or remove the file (pairings are kept there)", .path.display())]
    Corrupt { path: PathBuf, message: String },
    /// Reading or writing failed.
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The OS's random source failed.
    #[error("cannot draw a pairing code: {0}")]
    Random(String),
}

/// The outcome of a stranger asking to pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeRequest {
    /// A new code (any earlier one of the same user is replaced).
    Issued(String),
    /// This user asked less than [`REQUEST_INTERVAL_SECS`] ago.
    AskedRecently,
    /// [`MAX_PENDING_PER_PLATFORM`] codes are waiting already.
    TooManyPending,
    /// The platform's pairing is locked for this many more seconds.
    LockedOut { remaining_secs: u64 },
}

/// Who a code paired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    pub user_id: String,
    pub user_name: String,
}

/// A code waiting for the owner (the code itself is not kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRequest {
    pub platform: String,
    pub user_id: String,
    pub user_name: String,
    pub age_secs: u64,
}

/// A paired user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovedUser {
    pub platform: String,
    pub user_id: String,
    pub user_name: String,
    /// Unix seconds.
    pub approved_at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// platform → user id → who.
    #[serde(default)]
    approved: BTreeMap<String, BTreeMap<String, Paired>>,
    #[serde(default)]
    pending: BTreeMap<String, Vec<Pending>>,
    /// platform → user id → when they last asked.
    #[serde(default)]
    asked: BTreeMap<String, BTreeMap<String, u64>>,
    #[serde(default)]
    failures: BTreeMap<String, Failures>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Paired {
    user_name: String,
    approved_at: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pending {
    salt: String,
    code_sha256: String,
    user_id: String,
    user_name: String,
    created_at: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Failures {
    count: u32,
    locked_until: u64,
}

impl State {
    /// Drops expired codes and stale request times.
    fn expire(&mut self, now: u64) {
        for codes in self.pending.values_mut() {
            codes.retain(|p| now.saturating_sub(p.created_at) < CODE_TTL_SECS);
        }
        self.pending.retain(|_, codes| !codes.is_empty());
        for users in self.asked.values_mut() {
            users.retain(|_, at| now.saturating_sub(*at) < REQUEST_INTERVAL_SECS);
        }
        self.asked.retain(|_, users| !users.is_empty());
    }

    fn locked_for(&self, platform: &str, now: u64) -> Option<u64> {
        let until = self.failures.get(platform)?.locked_until;
        (until > now).then(|| until - now)
    }
}

/// The pairing codes and approved users of one profile.
#[derive(Debug, Clone)]
pub struct PairingStore {
    dir: PathBuf,
}

impl PairingStore {
    /// The store in `dir` (the profile's `pairing/`), created on first write.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Whether `user_id` is paired on `platform`.
    pub fn is_approved(&self, platform: &str, user_id: &str) -> Result<bool, PairingError> {
        let state = self.read()?;
        Ok(state
            .approved
            .get(platform)
            .is_some_and(|users| users.contains_key(user_id)))
    }

    /// A stranger asks to pair: a new code, or why not.
    pub fn request_code(
        &self,
        platform: &str,
        user_id: &str,
        user_name: &str,
        now: u64,
    ) -> Result<CodeRequest, PairingError> {
        check_platform(platform)?;
        self.change(now, |state| {
            if let Some(remaining_secs) = state.locked_for(platform, now) {
                return Ok(CodeRequest::LockedOut { remaining_secs });
            }
            if state
                .asked
                .get(platform)
                .is_some_and(|users| users.contains_key(user_id))
            {
                return Ok(CodeRequest::AskedRecently);
            }
            let codes = state.pending.entry(platform.to_owned()).or_default();
            codes.retain(|p| p.user_id != user_id);
            if codes.len() >= MAX_PENDING_PER_PLATFORM {
                return Ok(CodeRequest::TooManyPending);
            }
            let random = |e: getrandom::Error| PairingError::Random(e.to_string());
            let issued = code::new_code().map_err(random)?;
            let salt = code::new_salt().map_err(random)?;
            codes.push(Pending {
                code_sha256: code::hash(&salt, &issued),
                salt,
                user_id: user_id.to_owned(),
                user_name: user_name.to_owned(),
                created_at: now,
            });
            state
                .asked
                .entry(platform.to_owned())
                .or_default()
                .insert(user_id.to_owned(), now);
            Ok(CodeRequest::Issued(issued))
        })
    }

    /// The owner approves `code` on `platform`: its user is paired. A wrong
    /// code counts towards the platform's lockout.
    pub fn approve(&self, platform: &str, code: &str, now: u64) -> Result<Approved, PairingError> {
        check_platform(platform)?;
        // The inner result is written either way: a wrong code's count must be kept.
        self.change(now, |state| {
            if let Some(remaining_secs) = state.locked_for(platform, now) {
                return Ok(Err(PairingError::LockedOut {
                    platform: platform.to_owned(),
                    remaining_secs,
                }));
            }
            let codes = state.pending.entry(platform.to_owned()).or_default();
            let found = codes
                .iter()
                .position(|p| code::same(&p.code_sha256, &code::hash(&p.salt, code)));
            let Some(index) = found else {
                let failures = state.failures.entry(platform.to_owned()).or_default();
                failures.count += 1;
                let attempts_left = FAILED_APPROVALS_BEFORE_LOCKOUT.saturating_sub(failures.count);
                if attempts_left == 0 {
                    *failures = Failures {
                        count: 0,
                        locked_until: now + LOCKOUT_SECS,
                    };
                }
                return Ok(Err(PairingError::UnknownCode {
                    platform: platform.to_owned(),
                    attempts_left,
                }));
            };
            let pending = codes.remove(index);
            state.failures.remove(platform);
            state
                .approved
                .entry(platform.to_owned())
                .or_default()
                .insert(
                    pending.user_id.clone(),
                    Paired {
                        user_name: pending.user_name.clone(),
                        approved_at: now,
                    },
                );
            Ok(Ok(Approved {
                user_id: pending.user_id,
                user_name: pending.user_name,
            }))
        })?
    }

    /// Unpairs `user_id` on `platform`; whether they were paired.
    pub fn revoke(&self, platform: &str, user_id: &str) -> Result<bool, PairingError> {
        check_platform(platform)?;
        self.change(crate::now(), |state| {
            let removed = state
                .approved
                .get_mut(platform)
                .is_some_and(|users| users.remove(user_id).is_some());
            state.approved.retain(|_, users| !users.is_empty());
            Ok(removed)
        })
    }

    /// Codes waiting for the owner, oldest first.
    pub fn pending(&self, now: u64) -> Result<Vec<PendingRequest>, PairingError> {
        let mut state = self.read()?;
        state.expire(now);
        let mut all: Vec<PendingRequest> = state
            .pending
            .into_iter()
            .flat_map(|(platform, codes)| {
                codes.into_iter().map(move |p| PendingRequest {
                    platform: platform.clone(),
                    user_id: p.user_id,
                    user_name: p.user_name,
                    age_secs: now.saturating_sub(p.created_at),
                })
            })
            .collect();
        all.sort_by_key(|p| std::cmp::Reverse(p.age_secs));
        Ok(all)
    }

    /// The paired users, by platform and user id.
    pub fn approved(&self) -> Result<Vec<ApprovedUser>, PairingError> {
        let state = self.read()?;
        Ok(state
            .approved
            .into_iter()
            .flat_map(|(platform, users)| {
                users
                    .into_iter()
                    .map(move |(user_id, paired)| ApprovedUser {
                        platform: platform.clone(),
                        user_id,
                        user_name: paired.user_name,
                        approved_at: paired.approved_at,
                    })
            })
            .collect())
    }

    fn file(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PairingError + '_ {
        move |source| PairingError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn read(&self) -> Result<State, PairingError> {
        let path = self.file();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(State::default()),
            Err(e) => return Err(Self::io(&path)(e)),
        };
        serde_json::from_str(&text).map_err(|e| PairingError::Corrupt {
            path,
            message: e.to_string(),
        })
    }

    /// Runs `change` on the state under the lock (expired entries dropped
    /// first, using `now`) and writes the result back.
    fn change<T>(
        &self,
        now: u64,
        change: impl FnOnce(&mut State) -> Result<T, PairingError>,
    ) -> Result<T, PairingError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(Self::io(&self.dir))?;
        let lock_path = self.dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(Self::io(&lock_path))?;
        lock.lock().map_err(Self::io(&lock_path))?;
        let mut state = self.read()?;
        state.expire(now);
        let result = change(&mut state)?;
        self.write(&state)?;
        Ok(result)
    }

    fn write(&self, state: &State) -> Result<(), PairingError> {
        let path = self.file();
        let text = serde_json::to_string_pretty(state).map_err(|e| PairingError::Corrupt {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let mut temp = tempfile::NamedTempFile::new_in(&self.dir).map_err(Self::io(&self.dir))?;
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .and_then(|()| temp.write_all(text.as_bytes()))
            .and_then(|()| temp.as_file().sync_all())
            .map_err(Self::io(&path))?;
        temp.persist(&path).map_err(|e| Self::io(&path)(e.error))?;
        Ok(())
    }
}

fn check_platform(platform: &str) -> Result<(), PairingError> {
    let fine = !platform.is_empty()
        && platform.len() <= 64
        && platform
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if fine {
        Ok(())
    } else {
        Err(PairingError::Platform(platform.to_owned()))
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
