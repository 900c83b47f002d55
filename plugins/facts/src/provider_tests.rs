#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::RefCell;
use std::rc::Rc;

use serde_json::json;
use talaria_plugin_sdk::parse_args;

use super::*;
use crate::kv::MemoryKv;
use crate::tools::{FactStoreTool, fact_store};

/// A model that answers every prompt with the same text, recording prompts.
#[derive(Clone)]
struct ScriptedModel {
    answer: Rc<RefCell<Result<String, String>>>,
    prompts: Rc<RefCell<Vec<String>>>,
}

impl Default for ScriptedModel {
    /// Answers nothing (no fact in the turn).
    fn default() -> Self {
        Self {
            answer: Rc::new(RefCell::new(Ok(String::new()))),
            prompts: Rc::default(),
        }
    }
}

impl ScriptedModel {
    fn answering(answer: &str) -> Self {
        let model = Self::default();
        *model.answer.borrow_mut() = Ok(answer.to_owned());
        model
    }

    fn calls(&self) -> usize {
        self.prompts.borrow().len()
    }
}

impl Model for ScriptedModel {
    fn complete(&self, _instructions: &str, prompt: &str, _max: u32) -> Result<String, String> {
        self.prompts.borrow_mut().push(prompt.to_owned());
        self.answer.borrow().clone()
    }
}

fn scope(kind: SessionKind) -> MemoryScope {
    MemoryScope {
        session_id: "s-42".into(),
        kind,
        platform: "cli".into(),
        profile: "default".into(),
        user_id: None,
        parent_session: None,
        model: "test-model".into(),
    }
}

fn open_with(
    kv: &MemoryKv,
    model: &ScriptedModel,
    settings: Settings,
    kind: SessionKind,
) -> Provider {
    Provider::open(
        Box::new(kv.clone()),
        Box::new(model.clone()),
        settings,
        &scope(kind),
    )
    .unwrap()
}

fn open(kv: &MemoryKv) -> Provider {
    open_with(
        kv,
        &ScriptedModel::default(),
        Settings::default(),
        SessionKind::Primary,
    )
}

fn extracting() -> Settings {
    Settings {
        extract: true,
        ..Settings::default()
    }
}

/// A `fact_store` call, as a fresh tool instance makes it.
fn tool(kv: &MemoryKv, arguments: serde_json::Value) -> serde_json::Value {
    let args = parse_args::<FactStoreTool>(&arguments.to_string()).unwrap();
    fact_store(kv, args, "s-tool", 1).unwrap()
}

fn message(role: Role, content: &str) -> Message {
    Message {
        role,
        content: content.into(),
        tool_call_id: None,
        name: None,
    }
}

fn contents(provider: &Provider) -> Vec<(String, String, String)> {
    provider
        .store()
        .facts()
        .iter()
        .map(|f| (f.content.clone(), f.category.clone(), f.source.clone()))
        .collect()
}

#[test]
fn prefetch_recalls_relevant_facts_as_bullets_and_nothing_otherwise() {
    let kv = MemoryKv::default();
    tool(
        &kv,
        json!({"action": "add", "content": "The user's editor is Helix"}),
    );
    tool(
        &kv,
        json!({"action": "add", "content": "Deploys happen on Fridays"}),
    );
    let mut provider = open(&kv);
    assert_eq!(
        provider.recall_for("Which editor do I use?").unwrap(),
        "Stored facts that may bear on this message:\n- [f-1] The user's editor is Helix"
    );
    assert_eq!(
        provider.recall_for("Tell me a joke about cats").unwrap(),
        ""
    );
    assert_eq!(provider.recall_for("   ").unwrap(), "");
}

#[test]
fn prefetch_reads_one_key_when_nothing_changed_and_reloads_after_a_tool_call() {
    let kv = MemoryKv::default();
    tool(
        &kv,
        json!({"action": "add", "content": "The staging host is bravo"}),
    );
    let mut provider = open(&kv);
    provider.recall_for("staging").unwrap();
    let reads = kv.gets();
    provider.recall_for("staging host").unwrap();
    assert_eq!(kv.gets() - reads, 1);

    tool(
        &kv,
        json!({"action": "add", "content": "The production host is alpha"}),
    );
    let recalled = provider.recall_for("production host").unwrap();
    assert!(
        recalled.contains("[f-2] The production host is alpha"),
        "{recalled}"
    );
    tool(&kv, json!({"action": "remove", "fact_id": "f-2"}));
    let recalled = provider.recall_for("production host").unwrap();
    assert!(!recalled.contains("f-2"), "{recalled}");
}

#[test]
fn recall_limit_caps_and_zero_disables_recall() {
    let kv = MemoryKv::default();
    for n in 0..8 {
        tool(
            &kv,
            json!({"action": "add", "content": format!("rust crate number {n}")}),
        );
        tool(
            &kv,
            json!({"action": "add", "content": format!("unrelated note {n}")}),
        );
    }
    let model = ScriptedModel::default();
    let limited = Settings {
        recall_limit: 3,
        ..Settings::default()
    };
    let mut provider = open_with(&kv, &model, limited, SessionKind::Primary);
    assert_eq!(
        provider.recall_for("rust crate").unwrap().lines().count(),
        1 + 3
    );
    let off = Settings {
        recall_limit: 0,
        ..Settings::default()
    };
    let mut provider = open_with(&kv, &model, off, SessionKind::Primary);
    assert_eq!(provider.recall_for("rust crate").unwrap(), "");
}

#[test]
fn without_extract_a_turn_costs_no_model_call() {
    let kv = MemoryKv::default();
    let model = ScriptedModel::answering(r#"{"content": "The user likes tea"}"#);
    let mut provider = open_with(&kv, &model, Settings::default(), SessionKind::Primary);
    let turn = [
        message(Role::User, "I like tea"),
        message(Role::Assistant, "Noted"),
    ];
    provider.learn_from_turn(&turn).unwrap();
    assert_eq!(model.calls(), 0);
    assert!(provider.store().facts().is_empty());
}

#[test]
fn extraction_adds_the_models_facts_deduped_with_the_session_as_source() {
    let kv = MemoryKv::default();
    tool(
        &kv,
        json!({"action": "add", "content": "The user likes tea"}),
    );
    let model = ScriptedModel::answering(
        "{\"content\": \"The user likes tea.\"}\nnonsense\n\
         {\"content\": \"The project uses pnpm\", \"category\": \"project\", \"tags\": [\"js\"]}",
    );
    let mut provider = open_with(&kv, &model, extracting(), SessionKind::Primary);
    let turn = [
        message(Role::User, "We use pnpm here, and I like tea."),
        message(Role::Tool, "ignored tool output"),
        message(Role::Assistant, "Got it."),
    ];
    provider.learn_from_turn(&turn).unwrap();
    assert_eq!(model.calls(), 1);
    let prompt = model.prompts.borrow()[0].clone();
    assert!(prompt.contains("User: We use pnpm") && !prompt.contains("ignored tool output"));
    assert_eq!(
        contents(&provider),
        [
            (
                "The user likes tea".into(),
                "general".into(),
                "s-tool".into()
            ),
            (
                "The project uses pnpm".into(),
                "project".into(),
                "s-42".into()
            ),
        ]
    );
    // Saved: a tool call (a fresh instance) sees it.
    let listed = tool(&kv, json!({"action": "list"}));
    assert_eq!(listed["total"], 2);
}

#[test]
fn a_failing_model_is_an_error_and_adds_nothing() {
    let kv = MemoryKv::default();
    let model = ScriptedModel::default();
    *model.answer.borrow_mut() = Err("denied by the host: auxiliary-model".into());
    let mut provider = open_with(&kv, &model, extracting(), SessionKind::Primary);
    let error = provider
        .learn_from_turn(&[message(Role::User, "I like tea")])
        .unwrap_err();
    assert!(error.contains("auxiliary"), "{error}");
    assert!(provider.store().facts().is_empty());
}

#[test]
fn memory_tool_writes_become_facts_of_their_target() {
    let kv = MemoryKv::default();
    let mut provider = open(&kv);
    provider
        .mirror_memory_write("add", "user", "Name: Ada")
        .unwrap();
    provider
        .mirror_memory_write("replace", "memory", "Repo uses just")
        .unwrap();
    provider
        .mirror_memory_write("remove", "memory", "Repo uses make")
        .unwrap();
    provider.mirror_memory_write("add", "memory", "  ").unwrap();
    assert_eq!(
        contents(&provider),
        [
            ("Name: Ada".into(), "user".into(), "s-42".into()),
            ("Repo uses just".into(), "memory".into(), "s-42".into()),
        ]
    );
}

#[test]
fn delegated_and_scheduled_sessions_write_nothing() {
    for kind in [SessionKind::SubAgent, SessionKind::Cron] {
        let kv = MemoryKv::default();
        tool(
            &kv,
            json!({"action": "add", "content": "The user's editor is Helix"}),
        );
        let model = ScriptedModel::answering(r#"{"content": "A fact"}"#);
        let mut provider = open_with(&kv, &model, extracting(), kind);
        let writes = kv.sets();
        provider
            .mirror_memory_write("add", "user", "Name: Ada")
            .unwrap();
        provider
            .learn_from_turn(&[message(Role::User, "hello")])
            .unwrap();
        // They still recall; the count of it is not saved either.
        assert!(!provider.recall_for("editor").unwrap().is_empty());
        provider.flush_hits().unwrap();
        assert_eq!(kv.sets(), writes);
        assert_eq!(model.calls(), 0);
    }
}

#[test]
fn the_system_prompt_block_never_changes() {
    let kv = MemoryKv::default();
    let mut provider = open(&kv);
    let first = Memory::system_prompt_block(&mut provider);
    tool(&kv, json!({"action": "add", "content": "anything"}));
    provider.recall_for("anything").unwrap();
    assert_eq!(Memory::system_prompt_block(&mut provider), first);
    assert!(first.unwrap_or_default().contains("fact_store"));
}

#[test]
fn compression_keeps_the_facts_about_the_summarised_messages() {
    let kv = MemoryKv::default();
    tool(
        &kv,
        json!({"action": "add", "content": "The billing service is written in Go"}),
    );
    tool(
        &kv,
        json!({"action": "add", "content": "The user's cat is called Miso"}),
    );
    let mut provider = open(&kv);
    let messages = [
        message(Role::User, "Let's refactor the billing service"),
        message(Role::Tool, "cat Miso"),
        message(Role::Assistant, "Starting with the billing handlers."),
    ];
    let kept = provider.facts_for_compression(&messages).unwrap();
    assert!(kept.contains("[f-1]") && !kept.contains("[f-2]"), "{kept}");
    assert_eq!(
        provider.facts_for_compression(&[message(Role::User, "hello there")]),
        None
    );
}

#[test]
fn recall_counts_are_saved_when_the_session_ends() {
    let kv = MemoryKv::default();
    tool(
        &kv,
        json!({"action": "add", "content": "The staging host is bravo"}),
    );
    let mut provider = open(&kv);
    provider.recall_for("staging").unwrap();
    provider.recall_for("staging host").unwrap();
    let writes = kv.sets();
    Memory::on_session_end(&mut provider, Vec::new());
    assert!(kv.sets() > writes);
    let listed = tool(&kv, json!({"action": "list"}));
    assert_eq!(listed["facts"][0]["hits"], 2);
    // Nothing new to save: shutdown writes nothing.
    let writes = kv.sets();
    Memory::shutdown(&mut provider);
    assert_eq!(kv.sets(), writes);
}

#[test]
fn opening_fails_when_the_store_cannot_be_read() {
    let kv = MemoryKv::default();
    kv.set_failing(true);
    let opened = Provider::open(
        Box::new(kv),
        Box::new(ScriptedModel::default()),
        Settings::default(),
        &scope(SessionKind::Primary),
    );
    let error = opened.unwrap_err();
    assert!(error.contains("facts/meta"), "{error}");
}
