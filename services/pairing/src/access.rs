//! Whether the sender of an inbound message may talk to the agent.

use crate::store::{CodeRequest, PairingError, PairingStore};

/// Where a message was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatKind {
    /// A direct message to the bot.
    Direct,
    Group,
    Channel,
    Thread,
}

/// Who may talk on one platform (`gateway.platforms.<name>` in config.yaml).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlatformAccess {
    /// Anyone on the platform.
    pub allow_all: bool,
    /// These user ids, anywhere.
    pub allowed_users: Vec<String>,
    /// Anyone in these chats.
    pub allowed_chats: Vec<String>,
}

/// The sender of an inbound message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sender<'a> {
    pub platform: &'a str,
    pub user_id: &'a str,
    pub user_name: &'a str,
    pub chat_id: &'a str,
    pub chat: ChatKind,
}

/// What to do with the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allowed,
    /// A stranger in a direct message: answer with [`pairing_message`] for this code.
    PairWith(String),
    /// A stranger who cannot get a code now (asked recently, too many waiting,
    /// pairing locked): answer this, once.
    NotNow(String),
    /// Drop it without an answer (a stranger in a group).
    Ignored,
}

/// Decides for `sender`: the global allow-all (`gateway.allow_all`), then the
/// platform's allow-all, user and chat allowlists, then an approved pairing;
/// a stranger gets a pairing code in a direct message and is ignored
/// elsewhere. A pairing store that cannot be read lets no stranger in.
pub fn authorize(
    allow_all: bool,
    access: &PlatformAccess,
    store: &PairingStore,
    sender: &Sender<'_>,
    now: u64,
) -> Result<Verdict, PairingError> {
    let listed = |list: &[String], id: &str| list.iter().any(|entry| entry == id);
    if allow_all
        || access.allow_all
        || listed(&access.allowed_users, sender.user_id)
        || listed(&access.allowed_chats, sender.chat_id)
        || store.is_approved(sender.platform, sender.user_id)?
    {
        return Ok(Verdict::Allowed);
    }
    if sender.chat != ChatKind::Direct {
        return Ok(Verdict::Ignored);
    }
    let request = store.request_code(sender.platform, sender.user_id, sender.user_name, now)?;
    Ok(match request {
        CodeRequest::Issued(code) => Verdict::PairWith(code),
        // Already told: asking again gets no new answer (no code flood).
        CodeRequest::AskedRecently => Verdict::Ignored,
        CodeRequest::TooManyPending => Verdict::NotNow(
            "I am not taking new pairing requests right now; try again in an hour.".into(),
        ),
        CodeRequest::LockedOut { remaining_secs } => Verdict::NotNow(format!(
            "Pairing is paused; try again in {} minutes.",
            remaining_secs.div_ceil(60)
        )),
    })
}

/// What a stranger is told with their code.
pub fn pairing_message(platform: &str, code: &str) -> String {
    format!(
        "I don't know you yet. To talk with me, ask my owner to approve this pairing code \
         (valid for one hour): {code}\nThey run: talaria pairing approve {platform} {code}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_800_000_000;

    fn sender<'a>(user: &'a str, chat: &'a str, kind: ChatKind) -> Sender<'a> {
        Sender {
            platform: "irc",
            user_id: user,
            user_name: user,
            chat_id: chat,
            chat: kind,
        }
    }

    #[test]
    fn allowlists_and_pairings_let_in_and_strangers_pair_in_private_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = PairingStore::new(dir.path());
        let access = PlatformAccess {
            allowed_users: vec!["ann".into()],
            allowed_chats: vec!["#team".into()],
            ..PlatformAccess::default()
        };
        let verdict = |s: &Sender<'_>, now| authorize(false, &access, &store, s, now).unwrap();
        assert_eq!(
            verdict(&sender("ann", "ann", ChatKind::Direct), T0),
            Verdict::Allowed
        );
        assert_eq!(
            verdict(&sender("zed", "#team", ChatKind::Group), T0),
            Verdict::Allowed
        );
        assert_eq!(
            verdict(&sender("zed", "#other", ChatKind::Group), T0),
            Verdict::Ignored
        );
        assert!(store.pending(T0).unwrap().is_empty(), "no code in a group");

        let Verdict::PairWith(code) = verdict(&sender("zed", "zed", ChatKind::Direct), T0) else {
            panic!("a stranger in private gets a code");
        };
        assert!(pairing_message("irc", &code).contains(&format!("pairing approve irc {code}")));
        assert_eq!(
            verdict(&sender("zed", "zed", ChatKind::Direct), T0 + 5),
            Verdict::Ignored,
            "asking again gets no new code"
        );
        store.approve("irc", &code, T0 + 10).unwrap();
        assert_eq!(
            verdict(&sender("zed", "#other", ChatKind::Group), T0 + 11),
            Verdict::Allowed
        );

        let open = PlatformAccess {
            allow_all: true,
            ..PlatformAccess::default()
        };
        let anyone = sender("x", "#y", ChatKind::Channel);
        assert_eq!(
            authorize(false, &open, &store, &anyone, T0).unwrap(),
            Verdict::Allowed
        );
        let closed = PlatformAccess::default();
        assert_eq!(
            authorize(true, &closed, &store, &anyone, T0).unwrap(),
            Verdict::Allowed
        );
    }

    #[test]
    fn strangers_are_told_when_no_code_can_be_had() {
        let dir = tempfile::tempdir().unwrap();
        let store = PairingStore::new(dir.path());
        let access = PlatformAccess::default();
        for user in ["a", "b", "c"] {
            let s = sender(user, user, ChatKind::Direct);
            let verdict = authorize(false, &access, &store, &s, T0).unwrap();
            assert!(matches!(verdict, Verdict::PairWith(_)));
        }
        let fourth = sender("d", "d", ChatKind::Direct);
        let verdict = authorize(false, &access, &store, &fourth, T0).unwrap();
        assert!(matches!(verdict, Verdict::NotNow(ref m) if m.contains("not taking")));
    }
}
