//! `talaria plugin new --kind command|skin|hooks`: each Rust template passes
//! its own tests, builds with `talaria plugin build`, installs, and then does
//! its job in a session. (The tool, memory and adapter templates have tests
//! of their own: cli.rs, memory_providers.rs, gateway.rs.)

use std::path::{Path, PathBuf};

use talaria_testkit::{Script, ScriptedServer, Step};

use crate::common::*;

/// `plugin new NAME --kind KIND` in `projects`, its `cargo test` run (it must
/// pass `tests` tests) and `plugin build` run, then the package installed.
fn new_tested_built_installed(
    home: &Home,
    projects: &Path,
    name: &str,
    kind: &str,
    tests: usize,
) -> PathBuf {
    let mut new = home.talaria(&["plugin", "new", name, "--kind", kind]);
    // The checkout's SDK, shared with the other template tests' builds (the
    // copy a project gets by default is built in cli.rs).
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk/rust");
    new.current_dir(projects).env("TALARIA_PLUGIN_SDK", sdk);
    let created = run(new);
    assert_code(&created, 0);
    assert_contains(&stdout(&created), &format!("Created rust {kind}"));
    let project = projects.join(name);

    let mut test = std::process::Command::new("cargo");
    test.args(["test"]).current_dir(&project);
    rust_toolchain_env(&mut test);
    let tested = test.output().unwrap();
    assert_code(&tested, 0);
    assert_contains(
        &stdout(&tested),
        &format!("test result: ok. {tests} passed"),
    );

    let mut build = home.talaria(&["plugin", "build", name]);
    build.current_dir(projects);
    rust_toolchain_env(&mut build);
    assert_code(&run(build), 0);
    home.install_package(&project.join("dist").join(name), "none");
    project
}

#[test]
fn command_skin_and_hooks_templates_pass_their_tests_build_and_work_installed() {
    let home = Home::new();
    let projects = home.workdir();

    // A command plugin: it answers in the terminal.
    new_tested_built_installed(&home, projects.path(), "my-units", "command", 2);
    let server = ScriptedServer::spawn(Script::new([])).unwrap();
    let work = home.workdir();
    let mut session = crate::repl::repl(&home, work.path(), &server, &[]);
    session.send_line("/convert 10 km mi").unwrap();
    session
        .exp_string("10 km = 6.21 mi")
        .expect("the command answers");
    session.send_line("/quit").unwrap();
    session.exp_eof().unwrap();

    // A skin plugin: listed with the others, and chosen by name.
    new_tested_built_installed(&home, projects.path(), "my-tint", "skin", 2);
    let skins = stdout(&run(home.talaria(&["skin", "list"])));
    // The template names its skin as the plugin.
    assert_contains(&skins, "my-tint");
    assert_code(&run(home.talaria(&["skin", "use", "my-tint"])), 0);
    assert_contains(&home.read("config.yaml"), "skin: my-tint");

    // A hooks plugin: a denied terminal command is refused, and the model
    // reads why; another one runs.
    new_tested_built_installed(&home, projects.path(), "my-guard", "hooks", 1);
    let info = stdout(&run(home.talaria(&["plugin", "info", "my-guard"])));
    assert_contains(&info, "pre-tool");
    let server = ScriptedServer::spawn(Script::new([
        Step::tool_call("terminal", r#"{"command": "git  push -f origin main"}"#),
        Step::tool_call("terminal", r#"{"command": "echo allowed"}"#),
        Step::text("done"),
    ]))
    .unwrap();
    let output = run(home.query_in(work.path(), &server, "push it", &["--yolo"]));
    assert_code(&output, 0);
    let results: Vec<String> = server
        .requests()
        .iter()
        .flat_map(talaria_testkit::RecordedRequest::messages)
        .flat_map(|m| m.tool_results)
        .map(|r| r.content)
        .collect();
    assert!(
        results
            .iter()
            .any(|r| r.contains("my-guard refuses commands containing `git push -f`")),
        "{results:?}"
    );
    assert!(results.iter().any(|r| r.contains("allowed")), "{results:?}");
}
