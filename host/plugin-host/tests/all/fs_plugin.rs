//! The first-party `fs` plugin through the host: a read/write/patch/search
//! round trip in a temporary working directory, and a read-only grant.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::path::PathBuf;

use crate::common::*;
use serde_json::{Value, json};
use talaria_plugin_host::{Grants, Manifest, PluginTools};

struct Fixture {
    _root: tempfile::TempDir,
    cwd: PathBuf,
    tools: PluginTools,
}

async fn fixture(read_only: bool) -> Fixture {
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let cwd = cwd.canonicalize().unwrap();
    std::fs::write(cwd.join("existing.txt"), "alpha\nbeta\ngamma\n").unwrap();
    std::fs::write(root.path().join("outside.txt"), "outside").unwrap();
    let dir = fs_dir();
    let manifest = Manifest::load(&dir.join("plugin.toml")).unwrap();
    let mut grants = Grants::all_requested(&manifest);
    if read_only {
        grants = grants.read_only();
    }
    let host = cached_host(&root.path().join("host"));
    let plugin = host.load(&dir, &grants).await.unwrap();
    let tools = PluginTools::new(vec![plugin], &cwd).unwrap();
    Fixture {
        _root: root,
        cwd,
        tools,
    }
}

impl Fixture {
    async fn ok(&self, tool: &str, args: Value) -> Value {
        let out = call(&self.tools, "s", tool, args.clone()).await;
        assert!(!out.is_error, "{tool} {args}: {out:?}");
        serde_json::from_str(&out.content).unwrap()
    }

    async fn err(&self, tool: &str, args: Value) -> String {
        let out = call(&self.tools, "s", tool, args.clone()).await;
        assert!(out.is_error, "{tool} {args} succeeded: {out:?}");
        out.content
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_its_tools() {
    let f = fixture(false).await;
    let names: Vec<String> = f.tools.specs().into_iter().map(|s| s.name).collect();
    for tool in ["read_file", "write_file", "patch", "search_files"] {
        assert!(names.iter().any(|n| n == tool), "{names:?}");
    }
    assert!(f.tools.flags("read_file").unwrap().read_only);
    assert!(!f.tools.flags("write_file").unwrap().read_only);
}

#[tokio::test(flavor = "multi_thread")]
async fn read_write_patch_search_round_trip() {
    let f = fixture(false).await;

    let out = f
        .ok(
            "write_file",
            json!({ "path": "notes/todo.txt", "content": "one\ntwo\nthree\n" }),
        )
        .await;
    assert_eq!(out["created"], json!(true), "{out}");
    assert_eq!(
        std::fs::read_to_string(f.cwd.join("notes/todo.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );

    let out = f.ok("read_file", json!({ "path": "notes/todo.txt" })).await;
    let content = out["content"].as_str().unwrap();
    assert!(
        content.contains("one") && content.contains("three"),
        "{out}"
    );
    assert_eq!(out["total_lines"], json!(3), "{out}");

    // An absolute path inside the working directory works too.
    let absolute = f.cwd.join("existing.txt");
    let out = f
        .ok("read_file", json!({ "path": absolute.to_str().unwrap() }))
        .await;
    assert!(out["content"].as_str().unwrap().contains("beta"), "{out}");

    let out = f
        .ok(
            "patch",
            json!({
                "mode": "replace",
                "path": "notes/todo.txt",
                "old_string": "two",
                "new_string": "TWO",
            }),
        )
        .await;
    assert_eq!(out["replacements"], json!(1), "{out}");
    assert_eq!(
        std::fs::read_to_string(f.cwd.join("notes/todo.txt")).unwrap(),
        "one\nTWO\nthree\n"
    );

    let diff =
        "--- a/existing.txt\n+++ b/existing.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n";
    f.ok("patch", json!({ "mode": "patch", "patch": diff }))
        .await;
    assert_eq!(
        std::fs::read_to_string(f.cwd.join("existing.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );

    let out = f.ok("search_files", json!({ "pattern": "TWO|BETA" })).await;
    let text = out.to_string();
    assert!(
        text.contains("notes/todo.txt") && text.contains("existing.txt"),
        "{out}"
    );
    let out = f
        .ok(
            "search_files",
            json!({ "pattern": "*.txt", "target": "files" }),
        )
        .await;
    assert!(out.to_string().contains("todo.txt"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn paths_outside_the_working_directory_are_refused() {
    let f = fixture(false).await;
    for path in ["../outside.txt", "/etc/passwd"] {
        let message = f.err("read_file", json!({ "path": path })).await;
        assert!(!message.contains("root:x:0"), "{message}");
        assert!(!message.contains("outside\n"), "{message}");
    }
    f.err(
        "write_file",
        json!({ "path": "../escaped.txt", "content": "x" }),
    )
    .await;
    assert!(!f.cwd.parent().unwrap().join("escaped.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_grant_refuses_writes() {
    let f = fixture(true).await;
    let out = f.ok("read_file", json!({ "path": "existing.txt" })).await;
    assert!(out["content"].as_str().unwrap().contains("alpha"));

    f.err("write_file", json!({ "path": "new.txt", "content": "x" }))
        .await;
    assert!(!f.cwd.join("new.txt").exists());
    f.err(
        "write_file",
        json!({ "path": "existing.txt", "content": "clobbered" }),
    )
    .await;
    f.err(
        "patch",
        json!({
            "mode": "replace",
            "path": "existing.txt",
            "old_string": "alpha",
            "new_string": "ALPHA",
        }),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(f.cwd.join("existing.txt")).unwrap(),
        "alpha\nbeta\ngamma\n"
    );
    // Failed writes are ordinary tool errors, not plugin failures.
    assert!(!f.tools.is_disabled("fs", "s"));
    f.ok("search_files", json!({ "pattern": "beta" })).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn special_files_and_hard_links_cannot_reach_outside() {
    let f = fixture(false).await;
    let outside = f.cwd.parent().unwrap().join("outside.txt");
    std::fs::hard_link(&outside, f.cwd.join("link.txt")).unwrap();
    let out = f
        .ok(
            "write_file",
            json!({ "path": "link.txt", "content": "changed" }),
        )
        .await;
    assert!(
        out["note"].as_str().unwrap().contains("hard links"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside");
    assert_eq!(
        std::fs::read_to_string(f.cwd.join("link.txt")).unwrap(),
        "changed"
    );
    // A single-name file is still written in place.
    let out = f
        .ok(
            "write_file",
            json!({ "path": "existing.txt", "content": "x\n" }),
        )
        .await;
    assert!(out.get("note").is_none(), "{out}");

    // No writer ever comes: opening the FIFO would block the plugin.
    let status = std::process::Command::new("mkfifo")
        .arg(f.cwd.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    for _ in 0..4 {
        let e = f.err("read_file", json!({ "path": "pipe" })).await;
        assert!(e.contains("not a regular file"), "{e}");
    }
    let out = f.ok("read_file", json!({ "path": "existing.txt" })).await;
    assert_eq!(
        out["content"],
        json!("     1\tx"),
        "the plugin still works: {out}"
    );
}
