#![allow(clippy::unwrap_used, clippy::expect_used)]

use talaria_plugin_sdk::{ToolSet, parse_args, validate};

use super::*;
use crate::kv::MemoryKv;

const NOW: u64 = 1_700_000_000;

fn store_call(kv: &MemoryKv, arguments: Value) -> Result<Value, ToolError> {
    let args = parse_args::<FactStoreTool>(&arguments.to_string())?;
    fact_store(kv, args, "s-1", NOW)
}

fn feedback_call(kv: &MemoryKv, arguments: Value) -> Result<Value, ToolError> {
    let args = parse_args::<FactFeedbackTool>(&arguments.to_string())?;
    fact_feedback(kv, args)
}

fn add(kv: &MemoryKv, content: &str) -> String {
    let answer = store_call(kv, json!({"action": "add", "content": content})).unwrap();
    answer["fact_id"].as_str().unwrap().to_owned()
}

fn result_ids(answer: &Value, list: &str) -> Vec<String> {
    answer[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_tools_and_their_schemas_are_well_formed() {
    validate::<(FactStoreTool, FactFeedbackTool)>().unwrap();
    let specs = <(FactStoreTool, FactFeedbackTool)>::specs();
    let store: Value = serde_json::from_str(&specs[0].parameters).unwrap();
    assert_eq!(
        store["properties"]["action"]["enum"],
        json!(["add", "search", "remove", "list", "export"])
    );
    assert_eq!(store["required"], json!(["action"]));
    assert_eq!(store["properties"]["tags"]["type"], "array");
    let feedback: Value = serde_json::from_str(&specs[1].parameters).unwrap();
    assert_eq!(feedback["required"], json!(["fact_id", "helpful"]));
    assert!(specs.iter().all(|s| s.flags.never_parallel));
}

#[test]
fn add_stores_a_fact_with_the_calling_session_and_dedupes() {
    let kv = MemoryKv::default();
    let answer = store_call(
        &kv,
        json!({"action": "add", "content": "The user prefers tabs", "category": "user_pref",
               "tags": "editor, style"}),
    )
    .unwrap();
    assert_eq!(answer, json!({"fact_id": "f-1", "status": "added"}));
    let again = store_call(
        &kv,
        json!({"action": "add", "content": "the user prefers TABS."}),
    );
    assert_eq!(
        again.unwrap(),
        json!({"fact_id": "f-1", "status": "duplicate"})
    );

    let export = store_call(&kv, json!({"action": "export"})).unwrap();
    assert_eq!(
        export,
        json!({"version": 1, "count": 1, "facts": [{
            "id": "f-1", "content": "The user prefers tabs", "category": "user_pref",
            "tags": ["editor", "style"], "trust": 0.5, "created": NOW, "source": "s-1", "hits": 0
        }]})
    );
}

#[test]
fn add_without_content_and_search_without_query_are_invalid() {
    let kv = MemoryKv::default();
    let error = store_call(&kv, json!({"action": "add"})).unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments(m) if m.contains("content")));
    let error = store_call(&kv, json!({"action": "search", "query": " "})).unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments(m) if m.contains("query")));
    let error = store_call(&kv, json!({"action": "forget"})).unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments(_)));
    let error = store_call(&kv, json!({"action": "list", "limit": 0})).unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments(m) if m.contains("limit")));
}

#[test]
fn search_finds_relevant_facts_best_first_with_scores() {
    let kv = MemoryKv::default();
    add(&kv, "The project database is Postgres 16");
    add(&kv, "The user drinks tea");
    add(&kv, "Postgres backups run nightly");
    let answer = store_call(
        &kv,
        json!({"action": "search", "query": "postgres database"}),
    )
    .unwrap();
    assert_eq!(result_ids(&answer, "results"), ["f-1", "f-3"]);
    assert_eq!(answer["count"], 2);
    assert!(answer["results"][0]["score"].as_f64().unwrap() > 0.0);
    let limited = store_call(
        &kv,
        json!({"action": "search", "query": "postgres", "limit": 1}),
    )
    .unwrap();
    assert_eq!(limited["count"], 1);
    let none = store_call(&kv, json!({"action": "search", "query": "weather"})).unwrap();
    assert_eq!(none, json!({"results": [], "count": 0}));
}

#[test]
fn remove_takes_ids_in_any_form_and_says_whether_it_removed() {
    let kv = MemoryKv::default();
    add(&kv, "one");
    add(&kv, "two");
    let answer = store_call(&kv, json!({"action": "remove", "fact_id": 2})).unwrap();
    assert_eq!(answer, json!({"fact_id": "f-2", "removed": true}));
    let answer = store_call(&kv, json!({"action": "remove", "fact_id": "f-2"})).unwrap();
    assert_eq!(answer["removed"], false);
    let error = store_call(&kv, json!({"action": "remove"})).unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments(m) if m.contains("fact_id")));
    let export = store_call(&kv, json!({"action": "export"})).unwrap();
    assert_eq!(result_ids(&export, "facts"), ["f-1"]);
}

#[test]
fn list_pages_through_the_facts_newest_first() {
    let kv = MemoryKv::default();
    for n in 1..=5 {
        add(&kv, &format!("fact {n}"));
    }
    store_call(
        &kv,
        json!({"action": "add", "content": "tagged", "category": "Project"}),
    )
    .unwrap();
    let page = store_call(&kv, json!({"action": "list", "offset": 1, "limit": 2})).unwrap();
    assert_eq!(result_ids(&page, "facts"), ["f-5", "f-4"]);
    assert_eq!(page["count"], 2);
    assert_eq!(page["total"], 6);
    assert_eq!(page["offset"], 1);
    let projects = store_call(&kv, json!({"action": "list", "category": "project"})).unwrap();
    assert_eq!(result_ids(&projects, "facts"), ["f-6"]);
    assert_eq!(projects["total"], 1);
}

#[test]
fn feedback_moves_trust_and_with_it_the_search_order() {
    let kv = MemoryKv::default();
    add(&kv, "The editor theme is solarized");
    add(&kv, "The editor font is iosevka");
    add(&kv, "Deploys run on Fridays");
    let order = |kv: &MemoryKv| {
        let answer = store_call(kv, json!({"action": "search", "query": "editor"})).unwrap();
        result_ids(&answer, "results")
    };
    assert_eq!(order(&kv), ["f-2", "f-1"]);
    let answer = feedback_call(&kv, json!({"fact_id": "f-2", "helpful": false})).unwrap();
    assert_eq!(
        answer,
        json!({"fact_id": "f-2", "helpful": false, "trust": 0.3})
    );
    assert_eq!(order(&kv), ["f-1", "f-2"]);
    let error = feedback_call(&kv, json!({"fact_id": "f-99", "helpful": true})).unwrap_err();
    assert!(matches!(error, ToolError::InvalidArguments(m) if m.contains("f-99")));
    assert!(feedback_call(&kv, json!({"fact_id": "f-1"})).is_err());
}

#[test]
fn an_unavailable_store_is_a_failed_call() {
    let kv = MemoryKv::default();
    kv.set_failing(true);
    let error = store_call(&kv, json!({"action": "list"})).unwrap_err();
    assert!(matches!(error, ToolError::Failed(m) if m.contains("facts/meta")));
}
