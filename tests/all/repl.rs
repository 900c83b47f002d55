//! The REPL through a real pseudo-terminal against the scripted model server:
//! streaming appears as it arrives, completion offers registry entries, a
//! plugin's command is dispatched, Ctrl-C mid-tool leaves a valid conversation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use crate::common::Home;
use rexpect::reader::Options;
use rexpect::session::{PtySession, spawn_with_options};
use talaria_testkit::assertions::assert_tool_calls_paired;
use talaria_testkit::{Role, Script, ScriptedServer, ServerOptions, Step, ToolCall};

/// Generous: a cold debug binary on a busy 2-core machine.
const EXPECT_MS: u64 = 30_000;

/// `talaria` in a pseudo-terminal in `work`, talking to `server`.
pub(crate) fn repl(
    home: &Home,
    work: &std::path::Path,
    server: &ScriptedServer,
    extra: &[&str],
) -> PtySession {
    let base = server.openai_base_url();
    // A new pty has no size; give it one (as a terminal window would) so the
    // line editor lays out completion lists.
    let mut command = Command::new("sh");
    command
        .args(["-c", "stty cols 120 rows 40 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_talaria"))
        .args([
            "--provider",
            "openai",
            "--model",
            "test-model",
            "--base-url",
            &base,
        ])
        .args(extra)
        .env_clear()
        .env("TALARIA_HOME", home.path())
        .env("HOME", home.path())
        .env("TALARIA_API_KEY", "sk-test")
        .env("TERM", "xterm-256color")
        .current_dir(work);
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    let options = Options::new()
        .timeout_ms(Some(EXPECT_MS))
        .strip_ansi_escape_codes(true);
    let mut session = spawn_with_options(command, options).expect("talaria starts in a pty");
    session.exp_string("/help lists commands").expect("banner");
    session
}

/// `text` as rexpect sees it: it turns each byte of output into one char.
fn as_read(text: &str) -> String {
    text.bytes().map(char::from).collect()
}

/// Waits for the prompt symbol of the default skin.
fn prompt(session: &mut PtySession) {
    session.exp_string(&as_read("› ")).expect("prompt");
}

fn quit(mut session: PtySession) {
    session.send_line("/quit").unwrap();
    session.exp_eof().expect("exits after /quit");
}

#[test]
fn streamed_text_appears_before_the_reply_is_finished() {
    let home = Home::new();
    let work = home.workdir();
    // The server sends its first ~900 bytes (the first words), then stays
    // silent for a minute.
    let options = ServerOptions {
        chunk_size: 900,
        ..ServerOptions::default()
    };
    let script = Script::new([Step::stall(std::time::Duration::from_secs(60))]);
    let server = ScriptedServer::spawn_with(script, options).unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    session.send_line("tell me something").unwrap();
    // The first chunk of STALL_TEXT is on screen while the stream is still open.
    session
        .exp_string("This reply")
        .expect("partial text shown while streaming");
    assert_eq!(server.requests().len(), 1);
    // Ctrl-C ends the stalled turn and returns to the prompt.
    session.send_control('c').unwrap();
    if let Err(e) = session.exp_string("interrupted") {
        panic!("{e:?} status {:?}", session.process().status());
    }
    prompt(&mut session);
    quit(session);
}

#[test]
fn ctrl_c_mid_tool_kills_the_command_and_keeps_the_conversation_valid() {
    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("terminal", r#"{"command": "sleep 97"}"#)]),
        Step::text("The sleep was interrupted."),
    ]))
    .unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    session.send_line("sleep for a while").unwrap();
    crate::common::wait_until("the sleep runs", std::time::Duration::from_secs(30), || {
        !crate::common::processes_running(&["sleep", "97"]).is_empty()
    });
    session.send_control('c').unwrap();
    session.exp_string("interrupted").expect("turn interrupted");
    crate::common::wait_until(
        "the sleep is killed",
        std::time::Duration::from_secs(10),
        || crate::common::processes_running(&["sleep", "97"]).is_empty(),
    );
    prompt(&mut session);
    session.send_line("what happened?").unwrap();
    session
        .exp_string("The sleep was interrupted.")
        .expect("next turn answered");
    prompt(&mut session);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_tool_calls_paired(&requests);
    let results = crate::common::tool_results(&server, 1);
    assert!(results[0].contains("interrupted"), "{results:?}");
    quit(session);
}

#[test]
fn tab_completes_commands_and_their_arguments_from_the_registry() {
    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([])).unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    // One match completes in place; /help shows the completed command.
    session.send("/hel\t").unwrap();
    session.send(" mod\t").unwrap();
    session.send_line("").unwrap();
    session
        .exp_string("/model [name] [--now]")
        .expect("/help model after completion");
    prompt(&mut session);
    // Several matches are listed.
    session.send("/tool\t").unwrap();
    session.flush().unwrap();
    session
        .exp_string("/tools")
        .expect("common prefix completed");
    session.send("\t").unwrap();
    session.flush().unwrap();
    session
        .exp_regex(r"/tools\s+/toolsets")
        .expect("both /tools and /toolsets offered");
    // The line still holds "/tools"; finish it as /toolsets.
    session.send_line("ets").unwrap();
    session.exp_string("file").expect("toolsets listed");
    quit(session);
    assert!(
        server.requests().is_empty(),
        "commands never reach the model"
    );
}

#[test]
fn plugin_commands_and_skins_come_from_the_command_and_skin_worlds() {
    let home = Home::new();
    let work = home.workdir();
    crate::common::install_test_plugin(&home, "commands-probe");
    let server = ScriptedServer::spawn(Script::new([])).unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    session.send_line("/ea hello there").unwrap();
    session
        .exp_string("echo-args: hello there (session ")
        .expect("plugin command ran");
    prompt(&mut session);
    session.send_line("/fail-command").unwrap();
    session
        .exp_string("this command always fails")
        .expect("plugin error shown");
    prompt(&mut session);
    session.send_line("/skin probe-dark").unwrap();
    session
        .exp_string("probe> ")
        .expect("the plugin's skin changes the prompt");
    session.send_line("/skin").unwrap();
    session
        .exp_string("probe-light")
        .expect("the data skin is listed");
    session.send_line("/skin list").unwrap();
    session
        .exp_string("probe-light")
        .expect("`/skin list` lists too (the first listing's line was read)");
    session.send_line("/quit").unwrap();
    session.exp_eof().unwrap();
    assert!(
        home.read("config.yaml").contains("skin: probe-dark"),
        "the choice is saved"
    );
    // Outside the REPL the plugin's skins are there too.
    let list = crate::common::stdout(&crate::common::run(home.talaria(&["skin", "list"])));
    assert!(list.contains("* probe-dark"), "{list}");
    assert!(list.contains("probe-light"), "{list}");
    crate::common::assert_code(
        &crate::common::run(home.talaria(&["skin", "use", "probe-light"])),
        0,
    );
    assert!(home.read("config.yaml").contains("skin: probe-light"));

    // A plugin's skin saved in the config draws the first prompt too.
    crate::common::assert_code(
        &crate::common::run(home.talaria(&["skin", "use", "probe-dark"])),
        0,
    );
    let mut session = repl(&home, work.path(), &server, &[]);
    session
        .exp_string("probe> ")
        .expect("the first prompt is drawn in the saved plugin skin");
    quit(session);
}

#[test]
fn undo_retry_title_and_usage_work_on_the_live_session() {
    let home = Home::new();
    let work = home.workdir();
    let server = ScriptedServer::spawn(Script::new([
        Step::text("first answer"),
        Step::text("second answer"),
        Step::text("retried answer"),
    ]))
    .unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    session.send_line("one").unwrap();
    session.exp_string("first answer").unwrap();
    prompt(&mut session);
    session.send_line("two").unwrap();
    session.exp_string("second answer").unwrap();
    prompt(&mut session);
    session.send_line("/retry").unwrap();
    session.exp_string("retried answer").unwrap();
    prompt(&mut session);
    session.send_line("/title Fixing the build").unwrap();
    session.exp_string("title set: Fixing the build").unwrap();
    session.send_line("/usage").unwrap();
    session.exp_string("tokens in").unwrap();
    session.exp_string("cache read").unwrap();
    prompt(&mut session);
    quit(session);
    // The retried request carries "one" and its answer, then "two" once.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let users: Vec<String> = requests[2]
        .messages()
        .into_iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.text)
        .collect();
    assert_eq!(users, ["one", "two"]);
    let listed = crate::common::run(home.talaria(&["sessions", "list"]));
    assert!(
        crate::common::stdout(&listed).contains("Fixing the build"),
        "{}",
        crate::common::stdout(&listed)
    );
}

#[test]
fn a_pipe_gets_plain_text_without_colours_or_spinner() {
    let home = Home::new();
    let work = home.workdir();
    let server =
        ScriptedServer::spawn(Script::new([Step::text("# Title\n\n- **bold** item\n")])).unwrap();
    let mut command = home.talaria(&[
        "--provider",
        "openai",
        "--model",
        "test-model",
        "--base-url",
        &server.openai_base_url(),
    ]);
    command
        .env("TALARIA_API_KEY", "sk-test")
        .current_dir(work.path());
    let output = crate::common::run_with_input(command, "render this");
    crate::common::assert_code(&output, 0);
    let out = crate::common::stdout(&output);
    assert_eq!(out, "# Title\n\n- **bold** item\n");
    assert!(
        !crate::common::stderr(&output).contains('\x1b'),
        "no escape codes on a pipe"
    );
}

#[test]
fn commands_json_derives_from_the_registry_with_plugin_commands_and_skills() {
    let home = Home::new();
    crate::common::install_test_plugin(&home, "commands-probe");
    home.write_config(
        "model:\n  provider: openai\n  name: test-model\n  base_url: http://127.0.0.1:9/v1\n",
    );
    let skill = home.path().join("skills/general/wave-hello");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: wave-hello\ndescription: Wave at the user.\n---\n\nWave.\n",
    )
    .unwrap();
    let mut command = home.talaria(&["commands", "--json"]);
    command.env("TALARIA_API_KEY", "sk-test");
    let output = crate::common::run(command);
    crate::common::assert_code(&output, 0);
    let listed: serde_json::Value = serde_json::from_str(&crate::common::stdout(&output)).unwrap();
    let find = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("/{name} missing from {listed}"))
    };
    assert_eq!(find("model")["usage"], "/model [name] [--now]");
    assert_eq!(find("echo-args")["source"], "plugin:commands-probe");
    assert_eq!(find("wave-hello")["source"], "skill");
    // The gateway's menu leaves terminal-only commands out.
    let mut gateway = home.talaria(&["commands", "--json", "--surface", "gateway"]);
    gateway.env("TALARIA_API_KEY", "sk-test");
    let gateway = crate::common::stdout(&crate::common::run(gateway));
    assert!(
        !gateway.contains("\"clear\"") && gateway.contains("\"usage\""),
        "{gateway}"
    );
}

#[test]
fn skins_are_listed_chosen_and_a_broken_one_is_reported_with_its_line() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("skins")).unwrap();
    std::fs::write(
        home.path().join("skins/broken.yaml"),
        "agent_name: Broken\ncolors:\n  accent: blurple\n",
    )
    .unwrap();
    let list = crate::common::run(home.talaria(&["skin", "list"]));
    crate::common::assert_code(&list, 0);
    let out = crate::common::stdout(&list);
    for name in ["default", "mono", "ocean", "ember", "broken"] {
        assert!(out.contains(name), "{name} missing:\n{out}");
    }
    let problem = format!("{}{}", out, crate::common::stderr(&list));
    assert!(
        problem.contains("broken.yaml:3") && problem.contains("colors.accent"),
        "{problem}"
    );
    let refused = crate::common::run(home.talaria(&["skin", "use", "broken"]));
    crate::common::assert_code(&refused, 2);
    assert!(
        crate::common::stderr(&refused).contains("blurple"),
        "{}",
        crate::common::stderr(&refused)
    );
    crate::common::assert_code(
        &crate::common::run(home.talaria(&["skin", "use", "ocean"])),
        0,
    );
    assert!(home.read("config.yaml").contains("skin: ocean"));
}

#[test]
fn a_dangerous_command_is_approved_inline_at_the_prompt() {
    let home = Home::new();
    let work = home.workdir();
    std::fs::create_dir(work.path().join("build")).unwrap();
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("terminal", r#"{"command": "rm -rf build"}"#)]),
        Step::text("Removed the build directory."),
    ]))
    .unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    session.send_line("clean up").unwrap();
    session
        .exp_string("needs approval")
        .expect("the question is asked in the terminal");
    session.exp_string("[d]eny?").unwrap();
    session.send_line("o").unwrap();
    session
        .exp_string("Removed the build directory.")
        .expect("turn finished");
    prompt(&mut session);
    assert!(!work.path().join("build").exists(), "approved once: it ran");
    quit(session);
}

#[test]
fn a_used_up_key_of_a_pool_is_skipped_by_the_next_session_of_the_process() {
    let home = Home::new();
    let work = home.workdir();
    // The environment's key (sk-test) comes first, then the pool's.
    home.write_config("model:\n  api_keys: [sk-second-key-2222]\n");
    let server = ScriptedServer::spawn(Script::new([
        Step::error(
            429,
            "You exceeded your current quota, please check your plan and billing details.",
        ),
        Step::text("first answer"),
        Step::text("second answer"),
    ]))
    .unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    session.send_line("one").unwrap();
    session.exp_string("first answer").unwrap();
    prompt(&mut session);
    session.send_line("/new").unwrap();
    prompt(&mut session);
    session.send_line("two").unwrap();
    session.exp_string("second answer").unwrap();
    prompt(&mut session);
    quit(session);
    let keys: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        keys,
        [
            "Bearer sk-test",
            "Bearer sk-second-key-2222",
            "Bearer sk-second-key-2222"
        ],
        "the quota error is not retried on its key, and the new session does not ask it again"
    );
}

#[test]
fn an_mcp_call_is_approved_at_the_prompt_and_slash_mcp_shows_the_server() {
    let Some(entry) = crate::mcp::everything() else {
        return;
    };
    let home = Home::new();
    let work = home.workdir();
    home.write_config(&crate::mcp::everything_config(
        &entry,
        "    approval: every-call\n",
    ));
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "mcp_everything_echo",
            r#"{"message": "approved echo"}"#,
        )]),
        Step::text("The server echoed it."),
    ]))
    .unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    session.send_line("/mcp").unwrap();
    session
        .exp_string("everything")
        .expect("/mcp lists the server");
    session.exp_string("stdio: node").unwrap();
    prompt(&mut session);
    session.send_line("echo it").unwrap();
    session
        .exp_string("calls tool echo of MCP server everything")
        .expect("the question names the server and the tool");
    session.exp_string("[d]eny?").unwrap();
    session.send_line("o").unwrap();
    session
        .exp_string("The server echoed it.")
        .expect("turn finished");
    prompt(&mut session);
    assert_eq!(
        crate::common::tool_results(&server, 1),
        ["Echo: approved echo"]
    );
    quit(session);
}

#[test]
fn clarify_asks_at_the_prompt_a_number_picks_and_ctrl_c_skips_the_question() {
    let home = Home::new();
    let work = home.workdir();
    let ask = r#"{"question": "Which target?", "choices": ["staging", "prod"]}"#;
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new("clarify", ask)]),
        Step::text("Deploying to prod."),
        Step::tool_calls([ToolCall::new("clarify", r#"{"question": "Why?"}"#)]),
        Step::text("Going on without it."),
    ]))
    .unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    session.send_line("deploy").unwrap();
    session.exp_string("? Which target?").expect("the question");
    session.exp_string("2. prod").expect("its numbered choices");
    session.exp_string("(Ctrl-C skips): ").unwrap();
    session.send_line("2").unwrap();
    session
        .exp_string("Deploying to prod.")
        .expect("turn finished");
    prompt(&mut session);
    // Ctrl-C at the question skips it; the turn goes on.
    session.send_line("deploy again").unwrap();
    session.exp_string("? Why?").expect("the open question");
    session.exp_string("(Ctrl-C skips): ").unwrap();
    session.send_control('c').unwrap();
    session
        .exp_string("Going on without it.")
        .expect("the turn went on");
    prompt(&mut session);
    quit(session);

    let requests = server.requests();
    assert!(requests[0].tools_raw().contains("\"clarify\""));
    assert_tool_calls_paired(&requests);
    let picked: serde_json::Value =
        serde_json::from_str(&crate::common::tool_results(&server, 1)[0]).unwrap();
    assert_eq!(picked["user_response"], "prod");
    let skipped = crate::common::tool_results(&server, 3);
    let skipped: serde_json::Value = serde_json::from_str(skipped.last().unwrap()).unwrap();
    assert!(
        skipped["user_response"]
            .as_str()
            .unwrap()
            .contains("dismissed the question"),
        "{skipped}"
    );
}

#[test]
fn images_attach_by_command_or_by_a_dropped_path_to_the_next_message() {
    let home = Home::new();
    let work = home.workdir();
    let png = |shade: u8| {
        let image = image::RgbImage::from_pixel(4, 4, image::Rgb([shade, 0, 0]));
        let mut out = std::io::Cursor::new(Vec::new());
        image.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    };
    std::fs::write(work.path().join("one.png"), png(10)).unwrap();
    let dropped = work.path().join("two shot.png");
    std::fs::write(&dropped, png(200)).unwrap();
    let server = ScriptedServer::spawn(Script::new([Step::text("Two red squares.")])).unwrap();
    let mut session = repl(&home, work.path(), &server, &[]);
    prompt(&mut session);
    session.send_line("/image one.png").unwrap();
    session
        .exp_string("1 image(s) go with your next message")
        .expect("attached by /image");
    // What a terminal pastes when a file is dropped on it: the path, quoted.
    session
        .send_line(&format!("'{}'", dropped.display()))
        .unwrap();
    session
        .exp_string("2 image(s) go with your next message")
        .expect("attached by dropping");
    assert!(server.requests().is_empty(), "nothing sent yet");
    session.send_line("what are these?").unwrap();
    session.exp_string("Two red squares.").expect("the answer");
    prompt(&mut session);
    quit(session);
    let requests = server.requests();
    let user: Vec<_> = requests[0]
        .messages()
        .into_iter()
        .filter(|m| m.role == Role::User)
        .collect();
    assert_eq!(user.len(), 1);
    assert_eq!(user[0].text, "what are these?");
    assert_eq!(user[0].images.len(), 2, "{:?}", user[0].images);
}
