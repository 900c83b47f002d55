use std::os::unix::fs::PermissionsExt;

use super::*;

const T0: u64 = 1_800_000_000;

fn store() -> (tempfile::TempDir, PairingStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = PairingStore::new(dir.path().join("pairing"));
    (dir, store)
}

fn issued(request: CodeRequest) -> String {
    match request {
        CodeRequest::Issued(code) => code,
        other => panic!("expected a code, got {other:?}"),
    }
}

#[test]
fn a_code_pairs_its_user_once_and_the_files_are_private() {
    let (_dir, store) = store();
    let code = issued(store.request_code("irc", "ann", "Ann", T0).unwrap());
    assert!(!store.is_approved("irc", "ann").unwrap());
    let listed = store.pending(T0 + 60).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].user_id.as_str(), listed[0].age_secs),
        ("ann", 60)
    );

    let text = std::fs::read_to_string(store.file()).unwrap();
    assert!(!text.contains(&code), "only a hash of the code is kept");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store.file()), 0o600);
    assert_eq!(mode(&store.dir), 0o700);

    let typed = format!(" {}-{} ", &code[..4], code[4..].to_lowercase());
    let approved = store.approve("irc", &typed, T0 + 120).unwrap();
    assert_eq!(approved.user_id, "ann");
    assert!(store.is_approved("irc", "ann").unwrap());
    assert!(
        !store.is_approved("telegram", "ann").unwrap(),
        "per platform"
    );
    assert!(store.pending(T0 + 120).unwrap().is_empty());
    assert!(matches!(
        store.approve("irc", &code, T0 + 130),
        Err(PairingError::UnknownCode { .. })
    ));

    let users = store.approved().unwrap();
    assert_eq!(users.len(), 1);
    assert_eq!(
        (users[0].user_name.as_str(), users[0].approved_at),
        ("Ann", T0 + 120)
    );
    assert!(store.revoke("irc", "ann").unwrap());
    assert!(!store.revoke("irc", "ann").unwrap());
    assert!(!store.is_approved("irc", "ann").unwrap());
}

#[test]
fn codes_expire_after_an_hour() {
    let (_dir, store) = store();
    let code = issued(store.request_code("irc", "bob", "", T0).unwrap());
    assert!(matches!(
        store.approve("irc", &code, T0 + CODE_TTL_SECS),
        Err(PairingError::UnknownCode { .. })
    ));
    assert!(store.pending(T0 + CODE_TTL_SECS).unwrap().is_empty());
}

#[test]
fn one_request_per_user_per_ten_minutes_and_three_waiting_per_platform() {
    let (_dir, store) = store();
    let first = issued(store.request_code("irc", "u1", "", T0).unwrap());
    assert_eq!(
        store.request_code("irc", "u1", "", T0 + 599).unwrap(),
        CodeRequest::AskedRecently
    );
    // Later, a new code replaces the user's old one.
    let second = issued(store.request_code("irc", "u1", "", T0 + 600).unwrap());
    assert_ne!(first, second);
    assert!(store.approve("irc", &first, T0 + 601).is_err());
    issued(store.request_code("irc", "u2", "", T0 + 600).unwrap());
    issued(store.request_code("irc", "u3", "", T0 + 600).unwrap());
    assert_eq!(
        store.request_code("irc", "u4", "", T0 + 600).unwrap(),
        CodeRequest::TooManyPending
    );
    issued(store.request_code("telegram", "u4", "", T0 + 600).unwrap());
    assert_eq!(store.pending(T0 + 600).unwrap().len(), 4);
}

#[test]
fn five_wrong_codes_lock_the_platforms_pairing_for_an_hour() {
    let (_dir, store) = store();
    let code = issued(store.request_code("irc", "eve", "", T0).unwrap());
    for left in (0..FAILED_APPROVALS_BEFORE_LOCKOUT).rev() {
        match store.approve("irc", "AAAAAAAA", T0 + 1) {
            Err(PairingError::UnknownCode { attempts_left, .. }) => assert_eq!(attempts_left, left),
            other => panic!("{other:?}"),
        }
    }
    // Locked: even the right code waits, and no new codes are handed out.
    let locked = store.approve("irc", &code, T0 + 2).unwrap_err();
    assert!(
        locked.to_string().contains("opens again in 60 minutes"),
        "{locked}"
    );
    assert_eq!(
        store.request_code("irc", "new", "", T0 + 2).unwrap(),
        CodeRequest::LockedOut {
            remaining_secs: LOCKOUT_SECS - 1
        }
    );
    assert!(store.request_code("telegram", "new", "", T0 + 2).is_ok());
    // An hour later it opens; a right code clears the count.
    let code = issued(
        store
            .request_code("irc", "eve2", "", T0 + 1 + LOCKOUT_SECS)
            .unwrap(),
    );
    assert!(
        store
            .approve("irc", "AAAAAAAA", T0 + 2 + LOCKOUT_SECS)
            .is_err()
    );
    store.approve("irc", &code, T0 + 3 + LOCKOUT_SECS).unwrap();
    match store.approve("irc", "AAAAAAAA", T0 + 4 + LOCKOUT_SECS) {
        Err(PairingError::UnknownCode { attempts_left, .. }) => {
            assert_eq!(attempts_left, FAILED_APPROVALS_BEFORE_LOCKOUT - 1);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_broken_file_is_reported_and_kept_and_bad_platforms_are_refused() {
    let (_dir, store) = store();
    std::fs::create_dir_all(&store.dir).unwrap();
    std::fs::write(store.file(), "{ not json").unwrap();
    let error = store.request_code("irc", "x", "", T0).unwrap_err();
    assert!(matches!(error, PairingError::Corrupt { .. }), "{error}");
    assert!(error.to_string().contains("state.json"), "{error}");
    assert!(store.is_approved("irc", "x").is_err(), "fails closed");
    assert_eq!(std::fs::read_to_string(store.file()).unwrap(), "{ not json");
    for bad in ["", "IRC", "../x", "a b"] {
        assert!(matches!(
            store.request_code(bad, "x", "", T0),
            Err(PairingError::Platform(_))
        ));
    }
}

#[test]
fn two_writers_keep_each_others_changes() {
    let (_dir, store) = store();
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || {
                let platform = format!("p{i}");
                let code = issued(store.request_code(&platform, "u", "", T0).unwrap());
                store.approve(&platform, &code, T0 + 1).unwrap();
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(store.approved().unwrap().len(), 8);
}
