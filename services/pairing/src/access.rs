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
    /// These user ids, anywhere: compared without regard to ASCII case,
    /// `*` matching any run of characters and `?` any one (IRC masks).
    pub allowed_users: Vec<String>,
    /// Anyone in these chats.
    pub allowed_chats: Vec<String>,
}

/// How hard it is for someone else to be reported with a sender's id, as
/// the platform's adapter says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Strength {
    /// The platform vouches for it (a services account, a numeric user id).
    Strong,
    /// Anyone with the same traits gets it (an IRC `nick!user@host`): it is
    /// matched and paired, as the owner's masks say.
    Weak,
    /// Anyone may claim it once it is free (a bare nick): never matched
    /// against `allowed_users`, never paired.
    NameOnly,
    /// The adapter does not say (before plugin API 0.1.3): taken at its word.
    #[default]
    Unstated,
}

/// The sender of an inbound message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sender<'a> {
    pub platform: &'a str,
    pub user_id: &'a str,
    pub user_name: &'a str,
    pub chat_id: &'a str,
    pub chat: ChatKind,
    /// How far `user_id` can be trusted.
    pub strength: Strength,
    /// Other names of the sender `allowed_users` entries may match (an IRC
    /// user signed in to an account is still matched by masks).
    pub aliases: &'a [String],
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
/// elsewhere. A sender known only by a name anyone may take is matched by
/// no user allowlist and never paired. A pairing store that cannot be read
/// lets no stranger in.
pub fn authorize(
    allow_all: bool,
    access: &PlatformAccess,
    store: &PairingStore,
    sender: &Sender<'_>,
    now: u64,
) -> Result<Verdict, PairingError> {
    let identified = sender.strength != Strength::NameOnly;
    let user_listed = identified
        && access.allowed_users.iter().any(|entry| {
            std::iter::once(sender.user_id)
                .chain(sender.aliases.iter().map(String::as_str))
                .any(|name| matches_entry(entry, name))
        });
    if allow_all
        || access.allow_all
        || user_listed
        || access
            .allowed_chats
            .iter()
            .any(|chat| chat == sender.chat_id)
        || (identified && store.is_approved(sender.platform, sender.user_id)?)
    {
        return Ok(Verdict::Allowed);
    }
    if sender.chat != ChatKind::Direct {
        return Ok(Verdict::Ignored);
    }
    if !identified {
        return Ok(Verdict::NotNow(format!(
            "I cannot tell who you are on {platform}: the name you write under can be taken by \
             anyone, so I cannot pair with it. Ask my owner to allow you in \
             gateway.platforms.{platform}.allowed_users.",
            platform = sender.platform
        )));
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

/// Whether `entry` of an allowlist names `id`: equal without regard to ASCII
/// case, where `*` stands for any run of characters and `?` for any one.
pub fn matches_entry(entry: &str, id: &str) -> bool {
    let (pattern, text) = (entry.as_bytes(), id.as_bytes());
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was, and the text position it now stands up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c.eq_ignore_ascii_case(&text[t]) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                // The last `*` takes one more character.
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
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
            strength: Strength::Strong,
            aliases: &[],
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

    #[test]
    fn entries_match_masks_with_wildcards_regardless_of_case() {
        assert!(matches_entry("alice!alice@*", "alice!alice@10.0.0.1"));
        assert!(matches_entry(
            "Alice!*@*.Example.org",
            "alice!al@h.example.org"
        ));
        assert!(matches_entry("a?c", "abc") && !matches_entry("a?c", "ac"));
        assert!(matches_entry("*!*@host", "x!y@host"));
        assert!(matches_entry("$a:alice", "$a:ALICE"));
        assert!(!matches_entry("alice!alice@*", "alice!mallory@10.0.0.1"));
        assert!(
            !matches_entry("alice", "alice!alice@h"),
            "no implicit wildcard"
        );
        assert!(!matches_entry("1001", "10011"));
        assert!(matches_entry("*a*b*", "xxaxxbxx") && !matches_entry("*a*b", "xbxa"));
    }

    #[test]
    fn a_name_anyone_may_take_is_never_listed_or_paired_and_aliases_match() {
        let dir = tempfile::tempdir().unwrap();
        let store = PairingStore::new(dir.path());
        let access = PlatformAccess {
            allowed_users: vec!["alice!alice@*".into(), "$a:bob".into()],
            allowed_chats: vec!["#team".into()],
            ..PlatformAccess::default()
        };
        let verdict = |s: &Sender<'_>| authorize(false, &access, &store, s, T0).unwrap();
        let mask = Sender {
            strength: Strength::Weak,
            ..sender("alice!alice@10.0.0.1", "alice", ChatKind::Direct)
        };
        assert_eq!(verdict(&mask), Verdict::Allowed);
        let impostor = Sender {
            strength: Strength::Weak,
            ..sender("alice!mallory@10.0.0.9", "alice", ChatKind::Direct)
        };
        assert!(matches!(verdict(&impostor), Verdict::PairWith(_)));
        // Signed in to an account and still matched by her mask.
        let aliases = ["alice!alice@10.0.0.1".to_owned()];
        let account = Sender {
            aliases: &aliases,
            ..sender("$a:alice", "alice", ChatKind::Direct)
        };
        assert_eq!(verdict(&account), Verdict::Allowed);
        let nick = Sender {
            strength: Strength::NameOnly,
            aliases: &aliases,
            ..sender("$a:bob", "bob", ChatKind::Direct)
        };
        let pending = store.pending(T0).unwrap().len();
        assert!(
            matches!(verdict(&nick), Verdict::NotNow(ref m) if m.contains("cannot tell who you are")),
            "a name-only id matches nothing, even an entry equal to it"
        );
        assert_eq!(
            store.pending(T0).unwrap().len(),
            pending,
            "and gets no code"
        );
        let in_group = Sender {
            strength: Strength::NameOnly,
            ..sender("bob", "#team", ChatKind::Group)
        };
        assert_eq!(
            verdict(&in_group),
            Verdict::Allowed,
            "allowed chats still admit"
        );
    }
}
