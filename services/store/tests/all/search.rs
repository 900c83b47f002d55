//! Full-text search: words, phrases, hostile punctuation, substrings, CJK.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::*;
use talaria_kernel::{Message, Role};
use talaria_store::{MatchKind, SearchHit};

fn seeded() -> TestDb {
    let t = test_db();
    t.db.create_session(&new_session("s1", "/a")).unwrap();
    t.db.create_session(&new_session("s2", "/b")).unwrap();
    let s1 = [
        Message::user("How do I run the database migration?"),
        Message::assistant("Run `talaria db migrate --force` (it's safe: \"idempotent\")."),
        Message::user("The deserializer panics on empty input"),
        Message::user("数据库迁移失败了，请帮我看看"),
        Message::user("C++ and C# are languages; so is Go"),
    ];
    let s2 = [
        Message::user("Migration notes: the database schema changed twice"),
        Message::assistant("Résumé of the café discussion"),
        Message::user("AND OR NOT NEAR(a b) content:x ^start * -minus"),
    ];
    t.db.append_batch("s1", &s1).unwrap();
    t.db.append_batch("s2", &s2).unwrap();
    t
}

fn places(hits: &[SearchHit]) -> Vec<(String, u64)> {
    let mut places: Vec<_> = hits
        .iter()
        .map(|h| (h.session_id.clone(), h.message_seq))
        .collect();
    places.sort();
    places
}

fn place(session: &str, seq: u64) -> (String, u64) {
    (session.to_owned(), seq)
}

#[test]
fn words_match_whole_words_with_snippets_and_scores() {
    let t = seeded();
    let hits =
        t.db.search("migration", 10, &talaria_store::Principal::owner())
            .unwrap();
    assert_eq!(places(&hits), [place("s1", 1), place("s2", 1)]);
    assert!(
        hits.iter()
            .all(|h| h.kind == MatchKind::Word && h.score > 0.0)
    );
    assert!(hits[0].score >= hits[1].score, "best first");
    assert!(
        hits.iter()
            .all(|h| h.snippet.to_lowercase().contains("**migration**")),
        "{hits:?}"
    );
    assert_eq!(
        hits.iter().find(|h| h.session_id == "s1").unwrap().role,
        Role::User
    );
    assert!(hits.iter().all(|h| h.created_at > 0));

    // Every term must match; case and diacritics do not matter.
    assert_eq!(
        places(
            &t.db
                .search("DATABASE schema", 10, &talaria_store::Principal::owner())
                .unwrap()
        ),
        [place("s2", 1)]
    );
    assert_eq!(
        places(
            &t.db
                .search("resume cafe", 10, &talaria_store::Principal::owner())
                .unwrap()
        ),
        [place("s2", 2)]
    );
}

#[test]
fn quoted_phrases_match_in_order() {
    let t = seeded();
    assert_eq!(
        places(
            &t.db
                .search(
                    "\"database migration\"",
                    10,
                    &talaria_store::Principal::owner()
                )
                .unwrap()
        ),
        [place("s1", 1)]
    );
    assert!(
        t.db.search(
            "\"migration database\"",
            10,
            &talaria_store::Principal::owner()
        )
        .unwrap()
        .is_empty()
    );
}

#[test]
fn punctuation_and_fts_syntax_are_searched_literally_never_errors() {
    let t = seeded();
    let hostile = [
        r#"it's safe: "idempotent""#,
        r#"talaria db migrate --force"#,
        r#"unbalanced "quote"#,
        r#"NEAR(a b)"#,
        "AND OR NOT",
        "content:x",
        "^start * -minus",
        "(((",
        "\"",
        "\"\"",
        "'; DROP TABLE messages; --",
        "%_\\",
        "*",
        "a\0b",
        "`",
    ];
    for query in hostile {
        let result = t.db.search(query, 10, &talaria_store::Principal::owner());
        assert!(result.is_ok(), "{query:?}: {result:?}");
    }
    assert_eq!(
        places(
            &t.db
                .search(
                    r#"it's safe: "idempotent""#,
                    10,
                    &talaria_store::Principal::owner()
                )
                .unwrap()
        ),
        [place("s1", 2)]
    );
    assert_eq!(
        places(
            &t.db
                .search("migrate --force", 10, &talaria_store::Principal::owner())
                .unwrap()
        ),
        [place("s1", 2)]
    );
    assert_eq!(
        places(
            &t.db
                .search("NEAR(a b)", 10, &talaria_store::Principal::owner())
                .unwrap()
        ),
        [place("s2", 3)]
    );
    assert_eq!(
        places(
            &t.db
                .search("AND OR NOT", 10, &talaria_store::Principal::owner())
                .unwrap()
        ),
        [place("s2", 3)]
    );
    assert_eq!(
        places(
            &t.db
                .search("C++", 10, &talaria_store::Principal::owner())
                .unwrap()
        ),
        [place("s1", 5)]
    );
    assert_eq!(t.db.messages("s1").unwrap().len(), 5, "nothing was dropped");
}

#[test]
fn substrings_match_through_trigrams() {
    let t = seeded();
    // Neither is a whole word anywhere.
    let hits =
        t.db.search("serializ", 10, &talaria_store::Principal::owner())
            .unwrap();
    assert_eq!(places(&hits), [place("s1", 3)]);
    assert_eq!(hits[0].kind, MatchKind::Substring);
    assert!(
        hits[0].snippet.contains("**serializ**"),
        "{}",
        hits[0].snippet
    );
    assert_eq!(
        places(
            &t.db
                .search("igrat", 10, &talaria_store::Principal::owner())
                .unwrap()
        ),
        [place("s1", 1), place("s1", 2), place("s2", 1)]
    );
}

#[test]
fn word_hits_rank_before_substring_hits_without_repeats() {
    let t = seeded();
    t.db.append("s2", &Message::user("a migrations table"))
        .unwrap();
    let hits =
        t.db.search("migration", 10, &talaria_store::Principal::owner())
            .unwrap();
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert_eq!(hits[0].kind, MatchKind::Word);
    assert_eq!(hits[1].kind, MatchKind::Word);
    assert_eq!(hits[2].kind, MatchKind::Substring);
    assert_eq!(
        (hits[2].session_id.as_str(), hits[2].message_seq),
        ("s2", 4)
    );
}

#[test]
fn chinese_text_is_found_by_any_part() {
    let t = seeded();
    for query in ["数据库迁移", "迁移失败", "请帮我看看"] {
        let hits =
            t.db.search(query, 10, &talaria_store::Principal::owner())
                .unwrap();
        assert_eq!(places(&hits), [place("s1", 4)], "{query}");
        assert!(
            hits[0].snippet.contains(&format!("**{query}**")),
            "{}",
            hits[0].snippet
        );
    }
    // Two characters: shorter than a trigram, found by the scan.
    let hits =
        t.db.search("迁移", 10, &talaria_store::Principal::owner())
            .unwrap();
    assert_eq!(places(&hits), [place("s1", 4)]);
    assert_eq!(hits[0].kind, MatchKind::Scan);
    assert!(hits[0].snippet.contains("**迁移**"), "{}", hits[0].snippet);
}

#[test]
fn short_terms_fall_back_to_like() {
    let t = seeded();
    // "Go" is a word too; "C#" is found by the word index as "c".
    assert_eq!(
        places(
            &t.db
                .search("go", 10, &talaria_store::Principal::owner())
                .unwrap()
        ),
        [place("s1", 5)]
    );
    // Shorter than a trigram and not a whole word: only LIKE finds it.
    let hits =
        t.db.search("ig", 10, &talaria_store::Principal::owner())
            .unwrap();
    assert_eq!(
        places(&hits),
        [place("s1", 1), place("s1", 2), place("s2", 1)]
    );
    assert!(hits.iter().all(|h| h.kind == MatchKind::Scan));
    // A long term narrowed by a short one.
    assert_eq!(
        places(
            &t.db
                .search("igrat ow", 10, &talaria_store::Principal::owner())
                .unwrap()
        ),
        [place("s1", 1)]
    );
    // LIKE wildcards are literal.
    assert!(
        t.db.search("%", 10, &talaria_store::Principal::owner())
            .unwrap()
            .is_empty()
    );
    assert!(
        t.db.search("_", 10, &talaria_store::Principal::owner())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn limits_and_empty_queries() {
    let t = seeded();
    assert_eq!(
        t.db.search("migration", 1, &talaria_store::Principal::owner())
            .unwrap()
            .len(),
        1
    );
    assert!(
        t.db.search("migration", 0, &talaria_store::Principal::owner())
            .unwrap()
            .is_empty()
    );
    assert!(
        t.db.search("   ", 10, &talaria_store::Principal::owner())
            .unwrap()
            .is_empty()
    );
    assert!(
        t.db.search("", 10, &talaria_store::Principal::owner())
            .unwrap()
            .is_empty()
    );
    assert!(
        t.db.search("xylophone", 10, &talaria_store::Principal::owner())
            .unwrap()
            .is_empty()
    );
}
