//! `talaria pairing`: the owner lists pairing requests, approves a code the
//! gateway handed out, and revokes a user; wrong codes fail and count.

use talaria_pairing::{CodeRequest, PairingStore};

use crate::common::*;

#[test]
fn the_owner_approves_a_code_and_revokes_the_user() {
    let home = Home::new();
    let output = run(home.talaria(&["pairing", "list"]));
    assert_code(&output, 0);
    assert_contains(&stdout(&output), "no pairing requests and no paired users");

    // What the gateway does when a stranger writes in private.
    let store = PairingStore::new(home.path().join("pairing"));
    let now = talaria_pairing::now();
    let CodeRequest::Issued(code) = store.request_code("irc", "u-42", "Ann", now).unwrap() else {
        panic!("a first request gets a code");
    };
    let listed = stdout(&run(home.talaria(&["pairing", "list"])));
    assert_contains(&listed, "waiting for approval");
    assert_contains(&listed, "u-42");
    assert!(!listed.contains(&code), "the code is never shown: {listed}");

    let wrong = run(home.talaria(&["pairing", "approve", "irc", "ZZZZZZZZ"]));
    assert_code(&wrong, 1);
    assert_contains(&stderr(&wrong), "4 more wrong codes lock irc's pairing");
    let bad = run(home.talaria(&["pairing", "approve", "IRC!", &code]));
    assert_code(&bad, 2);
    assert_contains(&stderr(&bad), "invalid platform name");

    let approved = run(home.talaria(&["pairing", "approve", "irc", &code.to_lowercase()]));
    assert_code(&approved, 0);
    assert_contains(&stdout(&approved), "paired u-42 (Ann) on irc");
    assert!(store.is_approved("irc", "u-42").unwrap());
    let listed = stdout(&run(home.talaria(&["pairing", "list"])));
    assert_contains(&listed, "paired:");

    let revoked = run(home.talaria(&["pairing", "revoke", "irc", "u-42"]));
    assert_code(&revoked, 0);
    assert_contains(&stdout(&revoked), "unpaired u-42 on irc");
    assert!(!store.is_approved("irc", "u-42").unwrap());
}
