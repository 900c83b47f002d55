//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

/// The real corpus, read in place: `$TALARIA_SHARED_DIR/fixtures/skills`, by
/// default the `shared/` directory next to the repository.
pub fn corpus() -> PathBuf {
    let shared = std::env::var_os("TALARIA_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let corpus = shared.join("fixtures/skills");
    assert!(
        corpus.is_dir(),
        "the skill corpus is missing: {} (set TALARIA_SHARED_DIR to the shared directory)",
        corpus.display()
    );
    corpus
}

/// A minimal valid SKILL.md.
pub fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nSteps.\n")
}

/// Writes `<root>/<rel>` (creating directories) and returns its path.
pub fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, content).unwrap();
    path
}

/// A scanner that accepts everything.
pub fn accept(_: &str) -> Result<(), String> {
    Ok(())
}

/// A scanner that refuses text mentioning "EVIL".
pub fn refuse_evil(text: &str) -> Result<(), String> {
    if text.contains("EVIL") {
        Err("prompt injection pattern 'EVIL'".to_owned())
    } else {
        Ok(())
    }
}
