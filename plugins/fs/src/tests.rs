//! Tool-level tests: the tools run natively over a temporary directory that
//! stands in for the granted working directory.

use serde_json::{Value, json};
use talaria_plugin_sdk::{CallContext, ToolError, dispatch, validate};

use crate::testdir::TestDir;

type Tools = (
    crate::ReadFile,
    crate::WriteFile,
    crate::Patch,
    crate::SearchFiles,
);

fn ctx(dir: &TestDir) -> CallContext {
    CallContext {
        session_id: "s".into(),
        call_id: "c".into(),
        cwd: Some(dir.path_str().to_string()),
    }
}

fn call(dir: &TestDir, tool: &str, args: Value) -> Result<Value, ToolError> {
    let out = dispatch::<Tools>(tool, &args.to_string(), &ctx(dir))?;
    Ok(serde_json::from_str(&out).unwrap())
}

fn err(r: Result<Value, ToolError>) -> ToolError {
    match r {
        Err(e) => e,
        Ok(v) => panic!("expected an error, got {v}"),
    }
}

#[test]
fn tool_set_is_valid_with_the_expected_names_and_flags() {
    validate::<Tools>().unwrap();
    let specs = <Tools as talaria_plugin_sdk::ToolSet>::specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["read_file", "write_file", "patch", "search_files"]);
    for s in &specs {
        assert_eq!(s.flags.path_argument.as_deref(), Some("path"), "{}", s.name);
        let read_only = s.name == "read_file" || s.name == "search_files";
        assert_eq!(s.flags.read_only, read_only, "{}", s.name);
    }
    let params: Value = serde_json::from_str(&specs[2].parameters).unwrap();
    assert_eq!(params["required"], json!(["mode"]));
    assert_eq!(
        params["properties"]["mode"]["enum"],
        json!(["replace", "patch"])
    );
    let params: Value = serde_json::from_str(&specs[3].parameters).unwrap();
    assert_eq!(params["required"], json!(["pattern"]));
}

#[test]
fn read_file_numbers_lines_and_pages() {
    let dir = TestDir::new();
    let text: String = (1..=700).map(|i| format!("line {i}\n")).collect();
    dir.write("big.txt", &text);
    let out = call(&dir, "read_file", json!({"path": "big.txt"})).unwrap();
    let content = out["content"].as_str().unwrap();
    assert!(content.starts_with("     1\tline 1\n     2\tline 2\n"));
    assert!(content.ends_with("   500\tline 500"));
    assert_eq!(out["total_lines"], 700);
    assert_eq!(out["truncated"], true);
    assert_eq!(out["next_offset"], 501);
    assert_eq!(
        out["hint"],
        "Showing lines 1-500 of 700. Use offset=501 to read more."
    );

    let out = call(
        &dir,
        "read_file",
        json!({"path": "big.txt", "offset": 699, "limit": 10}),
    )
    .unwrap();
    assert_eq!(out["content"], "   699\tline 699\n   700\tline 700");
    assert_eq!(out["truncated"], false);
    assert!(out.get("next_offset").is_none());

    // Absolute paths under the working directory work too.
    let abs = dir.path().join("big.txt");
    let out = call(&dir, "read_file", json!({"path": abs, "limit": 1})).unwrap();
    assert_eq!(out["content"], "     1\tline 1");

    let e = err(call(
        &dir,
        "read_file",
        json!({"path": "big.txt", "offset": 800}),
    ));
    assert_eq!(
        e,
        ToolError::invalid("offset 800 is past the end of big.txt (700 lines)")
    );
}

#[test]
fn read_file_refusals() {
    let dir = TestDir::new();
    dir.write("bin.dat", b"\x7fELF\0\0\x01");
    dir.write("src/main.rs", "fn main() {}\n");
    dir.write("empty.txt", "");
    let e = err(call(&dir, "read_file", json!({"path": "bin.dat"})));
    assert!(e.message().contains("looks like a binary file"), "{e}");
    let e = err(call(&dir, "read_file", json!({"path": "src/mian.rs"})));
    assert_eq!(
        e,
        ToolError::failed(
            "cannot read src/mian.rs: no such file or directory; similar names in src/: main.rs"
        )
    );
    let e = err(call(&dir, "read_file", json!({"path": "src"})));
    assert!(
        e.message()
            .contains("it is a directory; it contains: main.rs"),
        "{e}"
    );
    let e = err(call(&dir, "read_file", json!({"path": "/etc/passwd"})));
    assert!(
        matches!(&e, ToolError::Denied(m) if m.starts_with("cannot access /etc/passwd: not permitted (outside the granted directories")),
        "{e}"
    );
    let e = err(call(&dir, "read_file", json!({"path": "../x"})));
    assert!(matches!(e, ToolError::Denied(_)));
    let e = err(call(&dir, "read_file", json!({})));
    assert!(
        matches!(&e, ToolError::InvalidArguments(m) if m.contains("missing field `path`")),
        "{e}"
    );
    let out = call(&dir, "read_file", json!({"path": "empty.txt"})).unwrap();
    assert_eq!(
        (out["content"].as_str(), out["total_lines"].as_u64()),
        (Some(""), Some(0))
    );
    assert_eq!(out["hint"], "The file is empty.");
}

#[test]
fn write_file_creates_parents_and_reports() {
    let dir = TestDir::new();
    let out = call(
        &dir,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"path": "a/b/c.txt", "bytes_written": 8, "lines": 2, "created": true})
    );
    assert_eq!(dir.read("a/b/c.txt"), "one\ntwo\n");
    let out = call(
        &dir,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "x"}),
    )
    .unwrap();
    assert_eq!(out["created"], false);
    assert_eq!(dir.read("a/b/c.txt"), "x");
    let e = err(call(
        &dir,
        "write_file",
        json!({"path": "/tmp/../etc/x", "content": ""}),
    ));
    assert!(matches!(e, ToolError::Denied(_)));
    let e = err(call(
        &dir,
        "write_file",
        json!({"path": "a", "content": ""}),
    ));
    assert_eq!(e, ToolError::failed("cannot write a: it is a directory"));
}

#[test]
fn patch_replace_edits_the_file() {
    let dir = TestDir::new();
    dir.write("m.rs", "fn main() {\n    let x = 1;\n}\n");
    let out = call(
        &dir,
        "patch",
        json!({"mode": "replace", "path": "m.rs", "old_string": "x = 1", "new_string": "x = 2"}),
    )
    .unwrap();
    assert_eq!(out["replacements"], 1);
    assert!(
        out["diff"]
            .as_str()
            .unwrap()
            .contains("-    let x = 1;\n+    let x = 2;")
    );
    assert_eq!(dir.read("m.rs"), "fn main() {\n    let x = 2;\n}\n");
    let e = err(call(
        &dir,
        "patch",
        json!({"mode": "replace", "path": "m.rs", "old_string": "let x = 3;", "new_string": ""}),
    ));
    assert!(
        e.message().contains("The most similar parts of the file"),
        "{e}"
    );
    assert_eq!(dir.read("m.rs"), "fn main() {\n    let x = 2;\n}\n");
    let e = err(call(
        &dir,
        "patch",
        json!({"mode": "replace", "path": "m.rs", "old_string": "a"}),
    ));
    assert!(e.message().contains("needs `new_string`"), "{e}");
    let e = err(call(&dir, "patch", json!({"mode": "rewrite"})));
    assert!(e.message().contains("unknown variant `rewrite`"), "{e}");
}

#[test]
fn patch_mode_applies_a_multi_file_diff() {
    let dir = TestDir::new();
    dir.write("src/a.rs", "one\ntwo\nthree\nfour\nfive\n");
    dir.write("old.txt", "bye\n");
    let patch = "\
diff --git a/src/a.rs b/src/a.rs
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,4 +1,4 @@
 one
-two
+TWO
 three
 four
--- /dev/null
+++ b/new/file.txt
@@ -0,0 +1,2 @@
+hello
+world
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
";
    let out = call(&dir, "patch", json!({"mode": "patch", "patch": patch})).unwrap();
    assert_eq!(
        out["summary"],
        "src/a.rs: modified, +1 -1; new/file.txt: created, +2 -0; old.txt: deleted"
    );
    assert_eq!(dir.read("src/a.rs"), "one\nTWO\nthree\nfour\nfive\n");
    assert_eq!(dir.read("new/file.txt"), "hello\nworld\n");
    assert!(!dir.path().join("old.txt").exists());
}

#[test]
fn patch_mode_is_all_or_nothing() {
    let dir = TestDir::new();
    dir.write("a.txt", "a\nb\nc\n");
    dir.write("b.txt", "x\ny\nz\n");
    let patch = "\
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 a
-b
+B
 c
--- a/b.txt
+++ b/b.txt
@@ -1,3 +1,3 @@
 x
-not there
+Y
 z
";
    let e = err(call(
        &dir,
        "patch",
        json!({"mode": "patch", "patch": patch}),
    ));
    let msg = e.message();
    assert!(
        msg.starts_with("hunk 1 of b.txt (`@@ -1,3 +1,3 @@`) does not apply"),
        "{msg}"
    );
    assert!(msg.contains("Nothing was changed"), "{msg}");
    assert_eq!(dir.read("a.txt"), "a\nb\nc\n");
    assert_eq!(dir.read("b.txt"), "x\ny\nz\n");
}

#[test]
fn search_content_with_context_and_paging() {
    let dir = TestDir::new();
    dir.write("src/a.rs", "fn alpha() {}\nlet x = 1;\nfn beta() {}\n");
    dir.write("src/b.py", "def gamma():\n    pass\n");
    dir.write(".git/config", "fn hidden() {}\n");
    dir.write("target/debug/x.rs", "fn ignored() {}\n");
    dir.write(".gitignore", "target/\n");
    dir.write("blob.bin", b"fn \0 binary");
    let out = call(&dir, "search_files", json!({"pattern": "fn \\w+"})).unwrap();
    assert_eq!(
        out["output"],
        "src/a.rs:1:fn alpha() {}\nsrc/a.rs:3:fn beta() {}"
    );
    assert_eq!(
        (out["total"].as_u64(), out["truncated"].as_bool()),
        (Some(2), Some(false))
    );

    let out = call(&dir, "search_files", json!({"pattern": "fn", "limit": 1})).unwrap();
    assert_eq!(out["output"], "src/a.rs:1:fn alpha() {}");
    assert_eq!(
        (out["total"].as_u64(), out["next_offset"].as_u64()),
        (Some(2), Some(1))
    );
    let out = call(
        &dir,
        "search_files",
        json!({"pattern": "fn", "limit": 1, "offset": 1}),
    )
    .unwrap();
    assert_eq!(out["output"], "src/a.rs:3:fn beta() {}");

    let out = call(
        &dir,
        "search_files",
        json!({"pattern": "let", "context": 1}),
    )
    .unwrap();
    assert_eq!(
        out["output"],
        "src/a.rs-1-fn alpha() {}\nsrc/a.rs:2:let x = 1;\nsrc/a.rs-3-fn beta() {}"
    );

    let out = call(
        &dir,
        "search_files",
        json!({"pattern": "a", "output_mode": "files_with_matches"}),
    )
    .unwrap();
    assert_eq!(out["files"], json!(["src/a.rs", "src/b.py"]));
    let out = call(
        &dir,
        "search_files",
        json!({"pattern": "a", "output_mode": "count", "file_glob": "*.rs"}),
    )
    .unwrap();
    assert_eq!(out["output"], "src/a.rs:2");
    assert_eq!(out["total_matches"], 2);
    let out = call(
        &dir,
        "search_files",
        json!({"pattern": "pass", "path": "src"}),
    )
    .unwrap();
    assert_eq!(out["output"], "src/b.py:2:    pass");

    let e = err(call(&dir, "search_files", json!({"pattern": "fn ("})));
    assert!(
        matches!(&e, ToolError::InvalidArguments(m) if m.starts_with("invalid regex `fn (`")),
        "{e}"
    );
}

#[test]
fn search_files_by_glob_or_name() {
    let dir = TestDir::new();
    dir.write("src/main.rs", "");
    dir.write("src/util/mod.rs", "");
    dir.write("tests/test_main.py", "");
    dir.write("README.md", "");
    let files = |args: Value| call(&dir, "search_files", args).unwrap()["files"].clone();
    assert_eq!(
        files(json!({"pattern": "*.rs", "target": "files"})),
        json!(["src/main.rs", "src/util/mod.rs"])
    );
    assert_eq!(
        files(json!({"pattern": "src/*.rs", "target": "files"})),
        json!(["src/main.rs"])
    );
    assert_eq!(
        files(json!({"pattern": "src/**/*.rs", "target": "files"})),
        json!(["src/main.rs", "src/util/mod.rs"])
    );
    assert_eq!(
        files(json!({"pattern": "main", "target": "files"})),
        json!(["src/main.rs", "tests/test_main.py"])
    );
    assert_eq!(
        files(json!({"pattern": "readme", "target": "files"})),
        json!(["README.md"])
    );
    let out = call(
        &dir,
        "search_files",
        json!({"pattern": "*", "target": "files", "limit": 2}),
    )
    .unwrap();
    assert_eq!(
        (
            out["total"].as_u64(),
            out["shown"].as_u64(),
            out["truncated"].as_bool()
        ),
        (Some(4), Some(2), Some(true))
    );
    let e = err(call(
        &dir,
        "search_files",
        json!({"pattern": "x", "path": "nope"}),
    ));
    assert!(
        e.message()
            .starts_with("cannot search nope: no such file or directory"),
        "{e}"
    );
}

/// A FIFO at `rel` in `dir` (native tests run on Unix).
#[cfg(unix)]
fn mkfifo(dir: &TestDir, rel: &str) -> std::path::PathBuf {
    let path = dir.path().join(rel);
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    path
}

#[cfg(unix)]
#[test]
fn special_files_are_refused_before_they_are_opened() {
    let dir = TestDir::new();
    let fifo = mkfifo(&dir, "pipe");
    // A writer waiting on the FIFO: without the check, read_file would read
    // its text instead of refusing (and with no writer it would block).
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        if let Ok(mut w) = std::fs::OpenOptions::new().write(true).open(&fifo) {
            let _ = w.write_all(b"from the pipe\n");
        }
    });
    for (tool, args) in [
        ("read_file", json!({"path": "pipe"})),
        ("write_file", json!({"path": "pipe", "content": "x"})),
        (
            "patch",
            json!({"mode": "replace", "path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
    ] {
        let e = err(call(&dir, tool, args));
        assert!(e.message().contains("not a regular file"), "{tool}: {e}");
    }
    let e = err(call(
        &dir,
        "patch",
        json!({"mode": "patch", "patch": "--- a/pipe\n+++ b/pipe\n@@ -1 +1 @@\n-a\n+b\n"}),
    ));
    assert!(
        e.message().contains("not a regular file"),
        "patch mode: {e}"
    );
    dir.write("a.txt", "needle\n");
    let out = call(&dir, "search_files", json!({"pattern": "needle"})).unwrap();
    assert_eq!(out["output"], "a.txt:1:needle");
    // Release the writer: open the FIFO for reading once.
    let _ = std::fs::read(dir.path().join("pipe"));
    writer.join().unwrap();
}

#[cfg(unix)]
#[test]
fn writes_through_a_hard_link_leave_the_other_name_alone() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let outside = TestDir::new();
    outside.write("secret.sh", "#!/bin/sh\necho original\n");
    let original = outside.path().join("secret.sh");
    std::fs::set_permissions(&original, std::fs::Permissions::from_mode(0o750)).unwrap();
    let dir = TestDir::new();
    let link = dir.path().join("link.sh");
    std::fs::hard_link(&original, &link).unwrap();

    let out = call(
        &dir,
        "write_file",
        json!({"path": "link.sh", "content": "#!/bin/sh\necho changed\n"}),
    )
    .unwrap();
    assert!(
        out["note"].as_str().unwrap().contains("hard links"),
        "{out}"
    );
    assert_eq!(outside.read("secret.sh"), "#!/bin/sh\necho original\n");
    assert_eq!(dir.read("link.sh"), "#!/bin/sh\necho changed\n");
    let meta = std::fs::metadata(&link).unwrap();
    assert_eq!(meta.nlink(), 1, "the link was broken");
    assert_eq!(meta.permissions().mode() & 0o777, 0o750, "mode kept");

    std::fs::remove_file(&link).unwrap();
    std::fs::hard_link(&original, &link).unwrap();
    call(
        &dir,
        "patch",
        json!({"mode": "replace", "path": "link.sh", "old_string": "original", "new_string": "patched"}),
    )
    .unwrap();
    assert_eq!(outside.read("secret.sh"), "#!/bin/sh\necho original\n");
    assert_eq!(dir.read("link.sh"), "#!/bin/sh\necho patched\n");

    std::fs::remove_file(&link).unwrap();
    std::fs::hard_link(&original, &link).unwrap();
    call(
        &dir,
        "patch",
        json!({"mode": "patch", "patch": "--- a/link.sh\n+++ b/link.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo original\n+echo diffed\n"}),
    )
    .unwrap();
    assert_eq!(outside.read("secret.sh"), "#!/bin/sh\necho original\n");
    assert_eq!(dir.read("link.sh"), "#!/bin/sh\necho diffed\n");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[cfg(unix)]
#[test]
fn a_file_with_one_name_is_written_in_place() {
    use std::os::unix::fs::MetadataExt;
    let dir = TestDir::new();
    dir.write("a.txt", "one\n");
    let inode = std::fs::metadata(dir.path().join("a.txt")).unwrap().ino();
    let out = call(
        &dir,
        "write_file",
        json!({"path": "a.txt", "content": "two\n"}),
    )
    .unwrap();
    assert!(out.get("note").is_none(), "{out}");
    assert_eq!(dir.read("a.txt"), "two\n");
    assert_eq!(
        std::fs::metadata(dir.path().join("a.txt")).unwrap().ino(),
        inode
    );
}
