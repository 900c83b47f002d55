//! Every lookup is made as a principal: the owner sees every session, anyone else only their
//! own — listings, search (each pass), short ids, rows — and nothing in an error names a
//! session they may not see.

use talaria_kernel::Message;
use talaria_store::{ListQuery, NewSession, Principal, StoreError};

use crate::support::{new_session, test_db};

fn owned(id: &str, principal: &Principal, source: &str) -> NewSession {
    NewSession {
        source: source.into(),
        principal: principal.clone(),
        ..new_session(id, "/work")
    }
}

#[test]
fn each_principal_finds_only_its_own_sessions_and_the_owner_all() {
    let t = test_db();
    let alice = Principal::chat_user("irc", "alice");
    let bob = Principal::chat_user("irc", "bob");
    let owner = Principal::owner();
    for (id, who, text) in [
        ("a1aa0001", &alice, "remember my secret: alice-secret-777"),
        ("b1bb0001", &bob, "bob asks about the weather"),
        ("c1cc0001", &owner, "the owner's secret plan"),
    ] {
        t.db.create_session(&owned(id, who, "gateway:irc")).unwrap();
        t.db.append(id, &Message::user(text)).unwrap();
    }
    let listed = |viewer: &Principal| -> Vec<String> {
        let query = ListQuery {
            viewer: viewer.clone(),
            ..ListQuery::default()
        };
        let mut ids: Vec<String> =
            t.db.list(&query)
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect();
        ids.sort();
        ids
    };
    assert_eq!(listed(&bob), ["b1bb0001"]);
    assert_eq!(listed(&owner), ["a1aa0001", "b1bb0001", "c1cc0001"]);

    // Word, substring and short-term passes all keep to the viewer's sessions.
    for query in ["secret", "ecre", "7"] {
        let hits = t.db.search(query, 10, &bob).unwrap();
        assert!(hits.is_empty(), "{query}: {hits:?}");
        let hits = t.db.search(query, 10, &alice).unwrap();
        assert!(hits.iter().all(|h| h.session_id == "a1aa0001"), "{query}");
        assert!(!hits.is_empty(), "{query}");
    }
    assert_eq!(t.db.search("secret", 10, &owner).unwrap().len(), 2);

    // Another principal's session is as unknown as a missing one, by full id or prefix.
    assert!(matches!(
        t.db.resolve_id("a1aa0001", &bob),
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        t.db.resolve_id("a1", &bob),
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(t.db.resolve_id("a1", &alice).unwrap(), "a1aa0001");
    assert_eq!(t.db.session_as("a1aa0001", &bob).unwrap(), None);
    assert!(t.db.session_as("a1aa0001", &owner).unwrap().is_some());
    assert_eq!(t.db.session("a1aa0001").unwrap().unwrap().principal, alice);
}

#[test]
fn an_ambiguous_prefix_counts_only_visible_sessions_and_names_none() {
    let t = test_db();
    let alice = Principal::chat_user("irc", "alice");
    t.db.create_session(&owned("ab000001", &alice, "gateway:irc"))
        .unwrap();
    t.db.create_session(&owned("ab000002", &alice, "gateway:irc"))
        .unwrap();
    t.db.create_session(&new_session("ab000003", "/work"))
        .unwrap();
    match t.db.resolve_id("ab", &alice) {
        Err(error @ StoreError::Ambiguous { .. }) => {
            let message = error.to_string();
            assert!(message.contains("2 sessions"), "{message}");
            assert!(!message.contains("ab00000"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_chat_claims_only_its_gateway_sessions_from_before_principals() {
    let t = test_db();
    let alice = Principal::chat_user("irc", "alice");
    // Sessions stored before principals existed belong to the owner.
    t.db.create_session(&owned("legacy01", &Principal::owner(), "gateway:irc"))
        .unwrap();
    t.db.create_session(&owned("ownercli", &Principal::owner(), "cli"))
        .unwrap();
    t.db.create_session(&owned(
        "bobs0001",
        &Principal::chat_user("irc", "bob"),
        "gateway:irc",
    ))
    .unwrap();
    assert!(t.db.claim_legacy_chat_session("legacy01", &alice).unwrap());
    assert!(!t.db.claim_legacy_chat_session("ownercli", &alice).unwrap());
    assert!(!t.db.claim_legacy_chat_session("bobs0001", &alice).unwrap());
    assert_eq!(t.db.session("legacy01").unwrap().unwrap().principal, alice);
    assert!(
        t.db.session("ownercli")
            .unwrap()
            .unwrap()
            .principal
            .is_owner()
    );
}
