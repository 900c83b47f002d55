//! The registry is the single source: a new row shows up in dispatch, help,
//! completion and the JSON listing with nothing else edited.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use talaria_agent::{Agent, AgentOptions, PluginCommandSpec, Surface};
use talaria_commands::{
    ArgKind, ArgSpec, ArgValues, BUILTINS, Builtin, Context, Effect, Invocation, Pending, Registry,
    Reply, SkillCommand, Surfaces,
};
use talaria_kernel::NoEvents;
use talaria_profile::{ConfigFile, EnvLayer, Overrides, ProfileHome, Settings};

struct TestAgent {
    _dir: tempfile::TempDir,
    home: ProfileHome,
    agent: Agent,
}

async fn agent() -> TestAgent {
    let dir = tempfile::tempdir().unwrap();
    let home = ProfileHome::at(dir.path().join("home"));
    let overrides = Overrides {
        provider: Some("openai".into()),
        model: Some("test-model".into()),
        // Nothing listens there: these tests never reach the model.
        base_url: Some("http://127.0.0.1:9/v1".into()),
    };
    let settings = Settings::resolve(
        &overrides,
        &EnvLayer::default(),
        ConfigFile::default(),
        &home,
    )
    .unwrap();
    let options = AgentOptions {
        surface: Surface::Terminal,
        cwd: dir.path().to_path_buf(),
        approver: Arc::new(talaria_approval::DenyAll),
        resume: None,
        editor: None,
        messenger: None,
        clarifier: None,
        browsers: None,
        chat_user: None,
        principal: talaria_agent::Principal::owner(),
    };
    let agent = Agent::build(&settings, &home, options).await.unwrap();
    TestAgent {
        _dir: dir,
        home,
        agent,
    }
}

async fn run(registry: &Registry, t: &mut TestAgent, pending: &mut Pending, line: &str) -> Reply {
    let cwd = t.home.root().to_path_buf();
    let mut ctx = Context {
        agent: &mut t.agent,
        pending,
        registry,
        home: &t.home,
        cwd: &cwd,
        surface: Surfaces::CLI,
        events: &NoEvents,
    };
    registry.dispatch(&mut ctx, line).await
}

struct Values;
impl ArgValues for Values {
    fn values(&self, kind: ArgKind) -> Vec<String> {
        match kind {
            ArgKind::Toolset => vec!["file".into(), "web".into()],
            _ => Vec::new(),
        }
    }
}

async fn wave(_: &mut Context<'_>, invocation: Invocation) -> Reply {
    Reply::text(format!(
        "waving at {}",
        invocation.arg(0).unwrap_or("nobody")
    ))
}

const WAVE_ARGS: &[ArgSpec] = &[ArgSpec::optional("who", ArgKind::Choice(&["alice", "bob"]))];

#[tokio::test]
async fn a_new_row_is_dispatched_helped_completed_and_listed() {
    let mut rows = BUILTINS.to_vec();
    rows.push(Builtin {
        name: "wave",
        aliases: &["hi"],
        args: WAVE_ARGS,
        flags: &[],
        description: "Wave at someone",
        category: "General",
        surfaces: Surfaces::CLI,
        run: |ctx, invocation| Box::pin(wave(ctx, invocation)),
    });
    let registry = Registry::new(&rows, Surfaces::CLI);
    let mut t = agent().await;
    let mut pending = Pending::default();

    assert_eq!(
        run(&registry, &mut t, &mut pending, "/hi bob").await.text,
        "waving at bob"
    );
    let wrong = run(&registry, &mut t, &mut pending, "/wave carol").await;
    assert!(
        wrong.is_error && wrong.text.contains("not one of alice, bob"),
        "{wrong:?}"
    );
    assert!(
        registry.help().contains("/wave [alice|bob]  "),
        "{}",
        registry.help()
    );
    assert_eq!(
        registry.complete("/wa", &Values),
        (0, vec!["/wave".to_string()])
    );
    assert_eq!(
        registry.complete("/wave a", &Values),
        (6, vec!["alice".to_string()])
    );
    let json = registry.to_json();
    let wave = json
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "wave")
        .unwrap();
    assert_eq!(wave["aliases"][0], "hi");
    assert_eq!(wave["surfaces"][0], "cli");
    // Not offered where its row says it is not.
    assert!(
        Registry::new(&rows, Surfaces::GATEWAY)
            .find("wave")
            .is_none()
    );
}

#[test]
fn every_command_the_issue_names_is_registered_with_help() {
    let registry = Registry::new(BUILTINS, Surfaces::CLI);
    for name in [
        "help", "new", "retry", "undo", "title", "compact", "resume", "sessions", "model",
        "provider", "tools", "toolsets", "skills", "plugins", "skin", "yolo", "usage", "config",
        "clear", "quit",
    ] {
        let command = registry
            .find(name)
            .unwrap_or_else(|| panic!("/{name} missing"));
        assert!(!command.description.is_empty());
        assert!(registry.help().contains(&format!("/{name}")));
    }
    // Terminal-only commands are not offered to chat platforms.
    let gateway = Registry::new(BUILTINS, Surfaces::GATEWAY);
    assert!(gateway.find("clear").is_none() && gateway.find("model").is_some());
    // Names and aliases are unique.
    let mut names: Vec<&str> = BUILTINS
        .iter()
        .flat_map(|b| std::iter::once(b.name).chain(b.aliases.iter().copied()))
        .collect();
    let count = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), count);
}

#[test]
fn completion_covers_arguments_flags_and_commands() {
    let registry = Registry::new(BUILTINS, Surfaces::CLI);
    assert_eq!(registry.complete("/toolsets en", &Values).1, ["enable"]);
    assert_eq!(
        registry.complete("/toolsets enable w", &Values),
        (17, vec!["web".to_string()])
    );
    assert_eq!(registry.complete("/model gpt --", &Values).1, ["--now"]);
    assert!(
        registry
            .complete("/help mo", &Values)
            .1
            .contains(&"model".to_string())
    );
    assert!(registry.complete("/", &Values).1.len() >= 20);
    assert!(registry.complete("hello /mo", &Values).1.is_empty());
}

#[test]
fn plugin_commands_and_skills_join_without_taking_builtin_names() {
    let mut registry = Registry::new(BUILTINS, Surfaces::CLI);
    let notices = registry.add_plugin_commands(vec![
        PluginCommandSpec {
            plugin: "probe".into(),
            name: "echo-args".into(),
            aliases: vec!["ea".into(), "q".into()],
            description: "Echo".into(),
            args_hint: "<text>".into(),
            category: String::new(),
        },
        PluginCommandSpec {
            plugin: "probe".into(),
            name: "model".into(),
            aliases: vec![],
            description: "Hijack".into(),
            args_hint: String::new(),
            category: "Testing".into(),
        },
    ]);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("/model already belongs to builtin"),
        "{notices:?}"
    );
    let echo = registry.find("ea").unwrap();
    assert_eq!(echo.source(), "plugin:probe");
    assert_eq!(echo.category, "Plugins");
    assert_eq!(echo.aliases, ["ea"], "the taken alias /q is dropped");
    registry.add_skills(vec![
        SkillCommand {
            name: "arxiv".into(),
            description: "Search papers".into(),
        },
        SkillCommand {
            name: "help".into(),
            description: "Shadowed".into(),
        },
    ]);
    assert_eq!(registry.find("arxiv").unwrap().source(), "skill");
    assert_eq!(registry.find("help").unwrap().source(), "builtin");
    let help = registry.help();
    assert!(
        help.find("Plugins\n").unwrap() < help.find("Skills\n").unwrap(),
        "{help}"
    );
}

#[tokio::test]
async fn unknown_commands_suggest_close_names() {
    let registry = Registry::new(BUILTINS, Surfaces::CLI);
    let mut t = agent().await;
    let reply = run(&registry, &mut t, &mut Pending::default(), "/modle x").await;
    assert!(reply.is_error);
    assert!(
        reply.text.contains("did you mean /model?"),
        "{}",
        reply.text
    );
}

#[tokio::test]
async fn session_changes_wait_for_the_next_session_unless_now() {
    let registry = Registry::new(BUILTINS, Surfaces::CLI);
    let mut t = agent().await;
    let mut pending = Pending::default();
    let reply = run(&registry, &mut t, &mut pending, "/model big-model").await;
    assert_eq!(reply.effect, Effect::None);
    assert!(
        reply.text.contains("applies from the next session"),
        "{}",
        reply.text
    );
    assert_eq!(pending.model.as_deref(), Some("big-model"));
    assert_eq!(
        t.agent.model().model,
        "test-model",
        "the running session keeps its model"
    );
    let reply = run(
        &registry,
        &mut t,
        &mut pending,
        "/toolsets disable web --now",
    )
    .await;
    assert_eq!(reply.effect, Effect::Reload);
    assert!(pending.disable_toolsets.contains("web"));
    let reply = run(&registry, &mut t, &mut pending, "/new").await;
    assert_eq!(reply.effect, Effect::NewSession);
    assert!(reply.text.contains("model → big-model"), "{}", reply.text);
}

#[tokio::test]
async fn yolo_usage_undo_and_tools_answer_from_the_agent() {
    let registry = Registry::new(BUILTINS, Surfaces::CLI);
    let mut t = agent().await;
    let mut pending = Pending::default();
    assert!(!t.agent.yolo());
    run(&registry, &mut t, &mut pending, "/yolo").await;
    assert!(t.agent.yolo());
    run(&registry, &mut t, &mut pending, "/yolo off").await;
    assert!(!t.agent.yolo());
    let usage = run(&registry, &mut t, &mut pending, "/usage").await.text;
    assert!(
        usage.contains("tokens in") && usage.contains("cache read"),
        "{usage}"
    );
    assert!(run(&registry, &mut t, &mut pending, "/undo").await.is_error);
    let tools = run(&registry, &mut t, &mut pending, "/tools").await.text;
    assert!(tools.contains("todo"), "{tools}");
    let help = run(&registry, &mut t, &mut pending, "/help model")
        .await
        .text;
    assert!(help.starts_with("/model [name] [--now]"), "{help}");
    assert_eq!(
        run(&registry, &mut t, &mut pending, "/quit").await.effect,
        Effect::Quit
    );
}
