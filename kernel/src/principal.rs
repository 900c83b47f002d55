//! Who a session belongs to, and so who may find it.

use serde::{Deserialize, Serialize};

/// The person or party a session belongs to: the profile's owner (the terminal, editors, the
/// owner's CLI and cron jobs), a chat user or a group on a platform, an API or MCP client (a
/// named key), a webhook route. Every lookup — listings, search, resuming, ids in errors — is
/// made as one: the owner sees every session, anyone else only their own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Principal(String);

impl Default for Principal {
    fn default() -> Self {
        Self::owner()
    }
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Principal {
    /// The stored name of the owner.
    pub const OWNER: &'static str = "owner";

    /// The profile's owner.
    pub fn owner() -> Self {
        Self(Self::OWNER.to_owned())
    }

    /// A person on a chat platform, by the platform's id of them.
    pub fn chat_user(platform: &str, user_id: &str) -> Self {
        Self(format!("chat:{platform}:{user_id}"))
    }

    /// A group chat (or a thread of one) on a platform: its shared sessions belong to it.
    pub fn chat_group(platform: &str, chat_id: &str, thread: Option<&str>) -> Self {
        match thread {
            Some(thread) => Self(format!("group:{platform}:{chat_id}/{thread}")),
            None => Self(format!("group:{platform}:{chat_id}")),
        }
    }

    /// A client of the OpenAI-compatible API, by the name of its key.
    pub fn api_client(key_name: &str) -> Self {
        Self(format!("api:{key_name}"))
    }

    /// A client of `talaria mcp serve`, by the name of its key.
    pub fn mcp_client(key_name: &str) -> Self {
        Self(format!("mcp:{key_name}"))
    }

    /// A webhook route.
    pub fn webhook(route: &str) -> Self {
        Self(format!("webhook:{route}"))
    }

    /// A principal as stored (`owner`, `chat:telegram:1001` …).
    pub fn from_stored(stored: impl Into<String>) -> Self {
        Self(stored.into())
    }

    /// As stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the owner, who sees across principals.
    pub fn is_owner(&self) -> bool {
        self.0 == Self::OWNER
    }

    /// Whether a session belonging to `owner_of_session` is visible to this principal.
    pub fn sees(&self, owner_of_session: &str) -> bool {
        self.is_owner() || self.0 == owner_of_session
    }

    /// The principal a lookup filters on: `None` for the owner (no filter).
    pub fn filter(&self) -> Option<&str> {
        (!self.is_owner()).then_some(self.0.as_str())
    }

    /// A file-name-safe name for this principal's own files (memory): readable letters kept,
    /// a short hash keeping different principals apart.
    pub fn file_name(&self) -> String {
        let readable: String = self
            .0
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect();
        // FNV-1a: stable across builds, enough to keep names that sanitise alike apart.
        let hash = self
            .0
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            });
        format!("{readable}-{:08x}", hash & 0xffff_ffff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_sees_everyone_and_others_only_themselves() {
        let alice = Principal::chat_user("irc", "alice");
        let bob = Principal::chat_user("irc", "bob");
        assert!(Principal::owner().sees(alice.as_str()));
        assert!(alice.sees(alice.as_str()));
        assert!(!alice.sees(bob.as_str()));
        assert!(!alice.sees(Principal::OWNER));
        assert_eq!(Principal::default(), Principal::owner());
    }

    #[test]
    fn file_names_are_safe_and_distinct() {
        let a = Principal::chat_user("irc", "a/b");
        let b = Principal::chat_user("irc", "a_b");
        assert_ne!(a.file_name(), b.file_name());
        assert!(!a.file_name().contains('/'));
        assert_eq!(
            a.file_name(),
            Principal::chat_user("irc", "a/b").file_name()
        );
        assert_eq!(
            Principal::chat_group("telegram", "-100", Some("7")).as_str(),
            "group:telegram:-100/7"
        );
    }
}
