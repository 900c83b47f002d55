use super::*;

fn hunks(patch: &str) -> Vec<Hunk> {
    let mut files = parse(patch, Some("f")).unwrap();
    assert_eq!(files.len(), 1);
    files.remove(0).hunks
}

#[test]
fn parses_headers_counts_and_no_newline_markers() {
    let files = parse(
        "--- a/x.txt\t2024-01-01\n+++ b/x.txt\n@@ -1,2 +1,2 @@ fn ctx\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
        None,
    )
    .unwrap();
    assert_eq!(files[0].old_path.as_deref(), Some("a/x.txt"));
    assert_eq!(files[0].new_path.as_deref(), Some("b/x.txt"));
    let h = &files[0].hunks[0];
    assert_eq!(h.old_start, Some(1));
    assert_eq!(h.lines, [Line::Remove("a".into()), Line::Add("b".into())]);
    assert!(h.old_no_eol && h.new_no_eol);
}

#[test]
fn removed_lines_that_look_like_headers_stay_in_the_hunk() {
    let h = hunks("@@ -1,2 +1,1 @@\n--- not a header\n keep\n");
    assert_eq!(
        h[0].lines,
        [
            Line::Remove("-- not a header".into()),
            Line::Context("keep".into())
        ]
    );
}

#[test]
fn parse_errors() {
    assert!(
        parse("just prose", None)
            .unwrap_err()
            .starts_with("no diff found")
    );
    assert!(
        parse("@@ -1 +1 @@\n-a\n+b\n", None)
            .unwrap_err()
            .contains("pass `path`")
    );
    assert!(
        parse("--- a/x\n+++ b/x\n@@ bogus @@\n", None)
            .unwrap_err()
            .contains("malformed hunk header")
    );
}

#[test]
fn applies_at_the_stated_line_or_nearby() {
    let content = "a\nb\nc\nd\ne\nf\n";
    let h = hunks("@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n");
    assert_eq!(apply(content, &h, "f").unwrap().text, "a\nb\nC\nd\ne\nf\n");
    // Wrong line numbers: found nearby.
    let h = hunks("@@ -40,3 +40,3 @@\n d\n-e\n+E\n f\n");
    assert_eq!(apply(content, &h, "f").unwrap().text, "a\nb\nc\nd\nE\nf\n");
    // Several hunks shift later ones.
    let h = hunks("@@ -1,1 +1,2 @@\n a\n+a2\n@@ -5,2 +6,1 @@\n-e\n f\n");
    let applied = apply(content, &h, "f").unwrap();
    assert_eq!(applied.text, "a\na2\nb\nc\nd\nf\n");
    assert_eq!((applied.added, applied.removed), (1, 1));
}

#[test]
fn tolerates_whitespace_differences_keeping_file_context() {
    let content = "fn x() {\n    let a = 1;   \n    let b = 2;\n}\n";
    let h = hunks("@@ -1,3 +1,3 @@\n fn x() {\n   let a = 1;\n-    let b = 2;\n+    let b = 3;\n");
    assert_eq!(
        apply(content, &h, "f").unwrap().text,
        "fn x() {\n    let a = 1;   \n    let b = 3;\n}\n"
    );
}

#[test]
fn a_hunk_that_does_not_apply_explains_itself() {
    let content = "alpha\nbeta\ngamma\n";
    let h = hunks("@@ -1,2 +1,2 @@\n alpha\n-betta\n+BETA\n");
    let msg = apply(content, &h, "f").unwrap_err();
    assert!(
        msg.starts_with("hunk 1 of f (`@@ -1,2 +1,2 @@`) does not apply"),
        "{msg}"
    );
    assert!(msg.contains("The hunk expects:\n  alpha\n  betta"), "{msg}");
    assert!(msg.contains("most similar lines of the file"), "{msg}");
    assert!(msg.contains("     1\talpha\n     2\tbeta"), "{msg}");
}

#[test]
fn keeps_crlf_and_handles_missing_final_newline() {
    let h = hunks("@@ -1,2 +1,2 @@\n a\n-b\n+B\n");
    assert_eq!(apply("a\r\nb\r\n", &h, "f").unwrap().text, "a\r\nB\r\n");
    assert_eq!(apply("a\nb", &h, "f").unwrap().text, "a\nB");
    let h = hunks("@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+B\n");
    assert_eq!(apply("a\nb", &h, "f").unwrap().text, "a\nB\n");
}

#[test]
fn begin_patch_format() {
    let patch = "*** Begin Patch\n*** Update File: src/x.py\n@@ def f():\n-    return 1\n+    return 2\n*** Add File: n.txt\n+hi\n*** Delete File: old.txt\n*** End Patch\n";
    let files = parse(patch, None).unwrap();
    assert_eq!(files.len(), 3);
    let content = "def g():\n    return 1\n\ndef f():\n    return 1\n";
    let applied = apply(content, &files[0].hunks, "src/x.py").unwrap();
    assert_eq!(
        applied.text,
        "def g():\n    return 1\n\ndef f():\n    return 2\n"
    );
    assert_eq!(files[1].old_path, None);
    assert_eq!(apply("", &files[1].hunks, "n.txt").unwrap().text, "hi\n");
    assert_eq!(files[2].new_path, None);
}

#[test]
fn renders_regions_as_hunks() {
    let old = ["a", "b", "c"];
    let regions = [Region {
        old_start: 1,
        old_len: 1,
        new_lines: vec!["B".into(), "B2".into()],
    }];
    assert_eq!(
        render_regions(&old, &regions, "f", 3, 100),
        "--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c"
    );
    let capped = render_regions(&old, &regions, "f", 3, 2);
    assert!(capped.ends_with("\n… (4 more diff lines)"), "{capped}");
}
