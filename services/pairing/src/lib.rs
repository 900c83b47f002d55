//! Who may talk to the agent on a chat platform (the gateway's host side).
//!
//! - [`authorize`]: a message's sender is let in by the global or the
//!   platform's allow-all, the platform's user or chat allowlist, or an
//!   approved pairing; a stranger in a direct message gets a pairing code, a
//!   stranger in a group is ignored. How strong the sender's id is (as the
//!   chat adapter says) decides whether it may be matched or paired at all.
//! - [`PairingStore`]: the pairing codes and the approved users of a profile
//!   (`<home>/pairing/state.json`, mode 0600, one writer at a time across
//!   processes). Codes are 8 characters from an alphabet without look-alikes,
//!   valid for an hour, stored only as salted hashes; at most 3 wait per
//!   platform, a user gets at most one per 10 minutes, and 5 failed approvals
//!   lock the platform's pairing for an hour. The owner approves a code with
//!   `talaria pairing approve PLATFORM CODE`.
//!
//! Times are Unix seconds passed in by the caller, so the rules are tested
//! without waiting.

mod access;
mod code;
mod store;

pub use access::{
    ChatKind, PlatformAccess, Sender, Strength, Verdict, authorize, matches_entry, pairing_message,
};
pub use code::{ALPHABET, CODE_LENGTH};
pub use store::{
    Approved, ApprovedUser, CODE_TTL_SECS, CodeRequest, FAILED_APPROVALS_BEFORE_LOCKOUT,
    LOCKOUT_SECS, MAX_PENDING_PER_PLATFORM, PairingError, PairingStore, PendingRequest,
    REQUEST_INTERVAL_SECS,
};

/// Now, in Unix seconds (0 if the clock is before 1970).
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}
