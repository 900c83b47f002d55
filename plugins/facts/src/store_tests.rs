#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::Value;

use super::*;
use crate::kv::MemoryKv;

fn new_fact(content: &str) -> NewFact<'_> {
    NewFact {
        content,
        category: None,
        tags: &[],
        source: "s-1",
    }
}

fn add(store: &mut FactStore, content: &str) -> Added {
    store.add(new_fact(content), 1_700_000_000).unwrap()
}

fn meta(kv: &MemoryKv) -> Value {
    serde_json::from_str(&kv.text(META_KEY).unwrap()).unwrap()
}

#[test]
fn added_facts_survive_a_reload_with_their_fields() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    let tags = ["Editor".to_owned()];
    let added = store
        .add(
            NewFact {
                content: " The user  prefers tabs ",
                category: Some("user_pref"),
                tags: &tags,
                source: "s-9",
            },
            1_700_000_123,
        )
        .unwrap();
    assert_eq!(
        added,
        Added {
            id: "f-1".into(),
            duplicate: false
        }
    );
    store.save(&kv).unwrap();

    let reloaded = FactStore::load(&kv).unwrap();
    let fact = reloaded.get("f-1").unwrap();
    assert_eq!(fact.content, "The user prefers tabs");
    assert_eq!(fact.category, "user_pref");
    assert_eq!(fact.tags, ["editor"]);
    assert_eq!(fact.trust, DEFAULT_TRUST);
    assert_eq!(fact.created, 1_700_000_123);
    assert_eq!(fact.source, "s-9");
    assert_eq!(meta(&kv)["next_id"], 2);
    assert_eq!(kv.keys(), [META_KEY, "facts/shard/0000"]);
}

#[test]
fn identical_content_is_stored_once() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    let first = add(&mut store, "Deploys run on Fridays.");
    let again = add(&mut store, "deploys   run on fridays");
    assert_eq!(again.id, first.id);
    assert!(again.duplicate);
    assert_eq!(store.facts().len(), 1);
    assert!(store.add(new_fact("   "), 0).is_none());
}

#[test]
fn removed_facts_are_gone_and_their_ids_not_reused() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    add(&mut store, "one");
    add(&mut store, "two");
    store.save(&kv).unwrap();
    assert!(store.remove("f-2"));
    assert!(!store.remove("f-2"));
    store.save(&kv).unwrap();

    let mut reloaded = FactStore::load(&kv).unwrap();
    assert!(reloaded.get("f-2").is_none());
    assert_eq!(add(&mut reloaded, "three").id, "f-3");
    // Removing a fact frees its content: the same text is new again.
    assert!(!add(&mut reloaded, "two").duplicate);
}

#[test]
fn every_save_bumps_the_generation_and_an_idle_save_writes_nothing() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    assert_eq!(store.generation(), 0);
    add(&mut store, "one");
    store.save(&kv).unwrap();
    assert_eq!(store.generation(), 1);
    store.rate("f-1", true);
    store.save(&kv).unwrap();
    assert_eq!(meta(&kv)["generation"], 2);
    let writes = kv.sets();
    store.save(&kv).unwrap();
    assert_eq!(kv.sets(), writes);
}

#[test]
fn a_full_shard_rolls_over_to_the_next() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    for n in 0..SHARD_MAX_FACTS + 3 {
        add(&mut store, &format!("fact number {n}"));
    }
    store.save(&kv).unwrap();
    assert_eq!(store.shard_count(), 2);
    assert_eq!(meta(&kv)["shards"], 2);
    let second: Value = serde_json::from_str(&kv.text("facts/shard/0001").unwrap()).unwrap();
    assert_eq!(second["facts"].as_array().unwrap().len(), 3);

    let reads = kv.gets();
    let reloaded = FactStore::load(&kv).unwrap();
    assert_eq!(reloaded.facts().len(), SHARD_MAX_FACTS + 3);
    // The meta, both shards and the probe past the last: no listing.
    assert_eq!(kv.gets() - reads, 4);
}

#[test]
fn a_shard_rolls_over_by_size_before_it_has_its_fill_of_facts() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    let long = "word ".repeat(399);
    for n in 0..200 {
        add(&mut store, &format!("{n} {long}"));
    }
    store.save(&kv).unwrap();
    assert!(store.shard_count() >= 2);
    for shard in 0..store.shard_count() {
        let text = kv.text(&shard_key(shard)).unwrap();
        assert!(
            text.len() <= SHARD_MAX_BYTES,
            "shard {shard}: {}",
            text.len()
        );
    }
}

#[test]
fn only_changed_shards_are_rewritten() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    for n in 0..SHARD_MAX_FACTS + 1 {
        add(&mut store, &format!("fact number {n}"));
    }
    store.save(&kv).unwrap();
    let writes = kv.sets();
    store.rate("f-1", false);
    store.save(&kv).unwrap();
    // Shard 0 and the meta.
    assert_eq!(kv.sets() - writes, 2);
}

#[test]
fn a_shard_the_meta_does_not_count_yet_is_still_loaded() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    add(&mut store, "saved in full");
    store.save(&kv).unwrap();
    // A save that wrote its new shard and stopped before the meta.
    kv.set(
        "facts/shard/0001",
        br#"{"facts":[{"id":"f-9","content":"orphan","category":"general","trust":0.5,"created":1}]}"#,
    )
    .unwrap();
    let mut store = FactStore::load(&kv).unwrap();
    assert_eq!(store.facts().len(), 2);
    assert_eq!(store.shard_count(), 2);
    assert_eq!(add(&mut store, "next").id, "f-10");
}

#[test]
fn refresh_reloads_only_after_another_writer_saved() {
    let kv = MemoryKv::default();
    let mut reader = FactStore::load(&kv).unwrap();
    let revision = reader.revision();
    assert!(!reader.refresh(&kv).unwrap());

    let mut writer = FactStore::load(&kv).unwrap();
    add(&mut writer, "written elsewhere");
    writer.save(&kv).unwrap();

    assert!(!reader.is_current(&kv).unwrap());
    assert!(reader.refresh(&kv).unwrap());
    assert!(reader.revision() > revision);
    assert_eq!(reader.facts()[0].content, "written elsewhere");
    assert!(reader.is_current(&kv).unwrap());
}

#[test]
fn a_stale_writer_still_moves_the_generation_forward() {
    let kv = MemoryKv::default();
    let mut first = FactStore::load(&kv).unwrap();
    let mut second = FactStore::load(&kv).unwrap();
    add(&mut first, "a");
    first.save(&kv).unwrap();
    add(&mut second, "b");
    second.save(&kv).unwrap();
    assert_eq!(meta(&kv)["generation"], 2);
    assert!(!first.is_current(&kv).unwrap());
}

#[test]
fn newest_first_orders_by_creation() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    store.add(new_fact("old"), 100).unwrap();
    store.add(new_fact("new"), 200).unwrap();
    store.add(new_fact("newer, same second"), 200).unwrap();
    let order: Vec<&str> = store
        .newest_first()
        .iter()
        .map(|f| f.content.as_str())
        .collect();
    assert_eq!(order, ["newer, same second", "new", "old"]);
}

#[test]
fn damaged_and_unavailable_stores_are_errors_naming_the_key() {
    let kv = MemoryKv::default();
    kv.set(META_KEY, b"{not json").unwrap();
    let error = FactStore::load(&kv).unwrap_err();
    assert!(
        error.to_string().contains("facts/meta is damaged"),
        "{error}"
    );

    let kv = MemoryKv::default();
    kv.set_failing(true);
    let error = FactStore::load(&kv).unwrap_err();
    assert!(
        error.to_string().contains("could not use facts/meta"),
        "{error}"
    );
    assert!(matches!(ToolError::from(error), ToolError::Failed(_)));
}

#[test]
fn ten_thousand_facts_load_from_a_few_dozen_shards() {
    let kv = MemoryKv::default();
    let mut store = FactStore::load(&kv).unwrap();
    for n in 0..10_000 {
        let content = format!(
            "fact {n}: the service number {n} listens on port {}",
            8000 + n
        );
        store.add(new_fact(&content), n).unwrap();
    }
    store.save(&kv).unwrap();
    let shards = store.shard_count();
    assert_eq!(shards as usize, 10_000usize.div_ceil(SHARD_MAX_FACTS));
    let reads = kv.gets();
    let reloaded = FactStore::load(&kv).unwrap();
    assert_eq!(reloaded.facts().len(), 10_000);
    assert_eq!(kv.gets() - reads, 1 + shards as usize + 1);
    let found = crate::recall::Recall::default().search(&reloaded, "port 8042", None, 5);
    // Fact 8042 names 8042 twice (its number), fact 42 once (its port).
    let ids: Vec<&str> = found.iter().map(|f| f.fact.id.as_str()).collect();
    assert_eq!(ids, ["f-8043", "f-43"]);
}
