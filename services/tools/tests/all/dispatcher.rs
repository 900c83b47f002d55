//! The dispatcher over fake sources: selection, scheduling, order, budgets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use talaria_kernel::{
    CancellationToken, ToolCall, ToolContext, ToolDispatcher, ToolResult, ToolSpec, ValidatedCall,
};
use talaria_tools::{
    DispatchOptions, Dispatcher, Profile, ResultBudget, SchemaMode, Selection, TOOL_SCHEMA,
    ToolEntry, ToolFlags, ToolSource, Toolsets,
};

/// `read` (read-only), `write` (path-scoped on `path`), `shell` (unflagged),
/// `huge` (3,000 lines). Records concurrency and start order.
#[derive(Default)]
struct Fake {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    started: Mutex<Vec<String>>,
}

fn entry(name: &str, toolset: &str, flags: ToolFlags) -> ToolEntry {
    ToolEntry {
        spec: ToolSpec {
            name: name.into(),
            description: format!("the {name} tool"),
            parameters: if name == "write" {
                serde_json::json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"]
                })
            } else {
                serde_json::json!({"type": "object"})
            },
            refunds_iteration: false,
        },
        flags,
        toolset: toolset.into(),
    }
}

#[async_trait]
impl ToolSource for Fake {
    fn tools(&self) -> Vec<ToolEntry> {
        vec![
            entry("read", "file", ToolFlags::read_only()),
            entry(
                "write",
                "file",
                ToolFlags {
                    path_argument: Some("path".into()),
                    ..ToolFlags::default()
                },
            ),
            entry("shell", "terminal", ToolFlags::default()),
            entry("huge", "file", ToolFlags::read_only()),
        ]
    }

    async fn call(
        &self,
        call: &ValidatedCall,
        _context: &ToolContext,
        _cancel: &CancellationToken,
    ) -> ToolResult {
        self.started.lock().unwrap().push(call.call.id.clone());
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let content = if call.call.name == "huge" {
            (1..=3000)
                .map(|i| match i {
                    1500 => format!("row {i} GITHUB_TOKEN={SECRET}\n"),
                    _ => format!("row {i}\n"),
                })
                .collect()
        } else if let Some(echo) = call.arguments.get("echo").and_then(|v| v.as_str()) {
            echo.to_owned()
        } else {
            format!("{} done", call.call.id)
        };
        ToolResult::ok(&call.call, content)
    }
}

/// A key in GitHub's format (not a real one).
const SECRET: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

fn call(id: &str, name: &str, args: serde_json::Value) -> ValidatedCall {
    ValidatedCall {
        call: ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        },
        arguments: args,
    }
}

fn dispatcher(selection: Selection) -> (Dispatcher, Arc<Fake>, tempfile::TempDir) {
    dispatcher_with(selection, SchemaMode::Full)
}

fn dispatcher_with(
    selection: Selection,
    schemas: SchemaMode,
) -> (Dispatcher, Arc<Fake>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let fake = Arc::new(Fake::default());
    let (dispatcher, notices) = Dispatcher::new(
        vec![fake.clone()],
        DispatchOptions {
            toolsets: Toolsets::default(),
            profile: Profile::for_surface("cli"),
            selection,
            cwd: dir.path().to_path_buf(),
            budget: ResultBudget::default(),
            spill_root: dir.path().join("sessions"),
            schemas,
            redact_secrets: true,
        },
    );
    assert!(notices.is_empty(), "{notices:?}");
    (dispatcher, fake, dir)
}

async fn run(dispatcher: &Dispatcher, calls: &[ValidatedCall]) -> Vec<ToolResult> {
    dispatcher
        .execute(
            calls,
            &ToolContext {
                session_id: "s1".into(),
            },
            &CancellationToken::new(),
        )
        .await
}

#[tokio::test]
async fn read_only_calls_run_eight_at_a_time_and_answer_in_order() {
    let (dispatcher, fake, _dir) = dispatcher(Selection::default());
    let calls: Vec<_> = (0..12)
        .map(|i| call(&format!("c{i}"), "read", serde_json::json!({})))
        .collect();
    let results = run(&dispatcher, &calls).await;
    let ids: Vec<_> = results.iter().map(|r| r.call_id.as_str()).collect();
    let expected: Vec<String> = (0..12).map(|i| format!("c{i}")).collect();
    assert_eq!(ids, expected);
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 8);
}

#[tokio::test]
async fn overlapping_writes_run_one_after_the_other() {
    let (dispatcher, fake, _dir) = dispatcher(Selection::default());
    let calls = [
        call("w1", "write", serde_json::json!({"path": "src/a.rs"})),
        call(
            "w2",
            "write",
            serde_json::json!({"path": "./src/../src/a.rs"}),
        ),
    ];
    run(&dispatcher, &calls).await;
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 1);
    assert_eq!(*fake.started.lock().unwrap(), ["w1", "w2"]);

    let fake_disjoint = {
        let (dispatcher, fake, _dir) = self::dispatcher(Selection::default());
        let calls = [
            call("w1", "write", serde_json::json!({"path": "src/a.rs"})),
            call("w2", "write", serde_json::json!({"path": "src/b.rs"})),
        ];
        run(&dispatcher, &calls).await;
        fake
    };
    assert_eq!(fake_disjoint.max_in_flight.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn unflagged_tools_run_alone() {
    let (dispatcher, fake, _dir) = dispatcher(Selection::default());
    let calls = [
        call("r1", "read", serde_json::json!({})),
        call("s", "shell", serde_json::json!({})),
        call("r2", "read", serde_json::json!({})),
    ];
    run(&dispatcher, &calls).await;
    assert_eq!(fake.max_in_flight.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_disabled_toolset_is_neither_listed_nor_callable() {
    let (dispatcher, fake, _dir) = dispatcher(Selection {
        enabled: None,
        disabled: vec!["terminal".into()],
    });
    let names: Vec<_> = dispatcher.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["read", "write", "huge"]);
    let results = run(&dispatcher, &[call("s", "shell", serde_json::json!({}))]).await;
    assert!(results[0].is_error, "{results:?}");
    assert!(fake.started.lock().unwrap().is_empty());
}

#[tokio::test]
async fn large_results_are_spilled_under_the_session() {
    let (dispatcher, _fake, dir) = dispatcher(Selection::default());
    let results = run(&dispatcher, &[call("h1", "huge", serde_json::json!({}))]).await;
    let file = dir.path().join("sessions/s1/tool-output/h1.txt");
    assert!(results[0].content.contains(&file.display().to_string()));
    assert!(results[0].content.starts_with("row 1\n"));
    assert_eq!(std::fs::read_to_string(file).unwrap().lines().count(), 3000);
}

#[tokio::test]
async fn secrets_never_reach_results_or_spill_files() {
    let (dispatcher, _fake, dir) = dispatcher(Selection::default());
    let shown = format!("{{\"apiKey\": \"{SECRET}\"}}");
    let results = run(
        &dispatcher,
        &[
            call("r1", "read", serde_json::json!({ "echo": shown })),
            call("h1", "huge", serde_json::json!({})),
        ],
    )
    .await;
    assert_eq!(results[0].content, r#"{"apiKey": "ghp_ab…[REDACTED]"}"#);
    let spilled =
        std::fs::read_to_string(dir.path().join("sessions/s1/tool-output/h1.txt")).unwrap();
    assert!(!spilled.contains(SECRET), "the spill file holds the key");
    assert!(
        spilled.contains("row 1500 GITHUB_TOKEN=ghp_ab…[REDACTED]"),
        "{spilled}"
    );
}

#[tokio::test]
async fn a_marker_is_never_written_back() {
    let (dispatcher, fake, _dir) = dispatcher(Selection::default());
    let marker = "GITHUB_TOKEN=ghp_ab…[REDACTED]";
    let results = run(
        &dispatcher,
        &[
            call(
                "w1",
                "write",
                serde_json::json!({ "path": ".env", "text": marker }),
            ),
            call(
                "s1",
                "shell",
                serde_json::json!({ "command": format!("echo '{marker}' > .env") }),
            ),
            call("r1", "read", serde_json::json!({ "echo": marker })),
        ],
    )
    .await;
    for refused in &results[..2] {
        assert!(refused.is_error, "{refused:?}");
        assert!(
            refused.content.contains("redaction marker"),
            "{}",
            refused.content
        );
    }
    // A read-only tool may be given one (searching for it, say).
    assert!(!results[2].is_error);
    assert_eq!(*fake.started.lock().unwrap(), ["r1"]);
}

#[tokio::test]
async fn lazy_schemas_offer_an_index_and_answer_schemas_on_demand() {
    let (full, _, _dir) = dispatcher(Selection::default());
    let (lazy, fake, _dir2) = dispatcher_with(Selection::default(), SchemaMode::Lazy);
    let offered = lazy.specs();
    let names: Vec<&str> = offered.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["read", "write", "shell", "huge", TOOL_SCHEMA]);
    let write = offered.iter().find(|s| s.name == "write").unwrap();
    assert_eq!(write.parameters, serde_json::json!({"type": "object"}));
    let size = |specs: &[ToolSpec]| serde_json::to_string(specs).unwrap().len();
    assert!(size(&offered[..4]) < size(&full.specs()));

    let results = run(
        &lazy,
        &[
            call("s1", TOOL_SCHEMA, serde_json::json!({"names": ["write"]})),
            call("w1", "write", serde_json::json!({})),
            call("w2", "write", serde_json::json!({"path": "a.txt"})),
        ],
    )
    .await;
    let schema: serde_json::Value = serde_json::from_str(&results[0].content).unwrap();
    assert_eq!(schema["write"]["parameters"]["required"][0], "path");
    assert!(results[1].is_error && results[1].content.contains(TOOL_SCHEMA));
    assert_eq!(results[2].content, "w2 done");
    assert_eq!(
        *fake.started.lock().unwrap(),
        ["w2"],
        "a call missing arguments never runs"
    );

    let (auto, _, _dir3) = dispatcher_with(Selection::default(), SchemaMode::Auto);
    assert_eq!(
        auto.specs(),
        full.specs(),
        "four tools stay below the auto threshold"
    );
}
