//! Resolving path arguments against the working directory, and turning I/O
//! errors (including the sandbox's WASI errors) into messages for the model.

use std::io;
use std::path::{Component, Path, PathBuf};

use talaria_plugin_sdk::ToolError;

/// A path argument resolved for opening.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// What to open: absolute under the working directory when it is known.
    pub full: PathBuf,
    /// The path as the model wrote it, for messages.
    pub shown: String,
}

/// Resolves `path` against the working directory `cwd` (the absolute path the
/// host granted; `None` when the host granted none).
///
/// Relative paths are joined to `cwd`; `.` and `..` are resolved lexically; a
/// result outside `cwd` is refused up front with a clear message (the sandbox
/// would refuse it anyway, with a less helpful error).
pub fn resolve(path: &str, cwd: Option<&str>) -> Result<Target, ToolError> {
    if path.trim().is_empty() {
        return Err(ToolError::invalid("`path` is empty"));
    }
    if path.contains('\0') {
        return Err(ToolError::invalid("`path` contains a NUL character"));
    }
    let shown = path.to_string();
    let Some(cwd) = cwd else {
        return Ok(Target {
            full: PathBuf::from(path),
            shown,
        });
    };
    let cwd = Path::new(cwd);
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        cwd.join(path)
    };
    let full = normalize(&joined);
    if !full.starts_with(normalize(cwd)) {
        return Err(ToolError::denied(format!(
            "cannot access {path}: not permitted (outside the granted directories; \
             only the working directory {} and what is below it is accessible)",
            cwd.display()
        )));
    }
    Ok(Target { full, shown })
}

/// Resolves `.` and `..` without touching the filesystem.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// `ENOTCAPABLE` of WASI: the sandbox refused the path.
#[cfg(target_arch = "wasm32")]
const WASI_ENOTCAPABLE: i32 = 76;

/// Whether `e` is the sandbox (or the OS) refusing access.
fn is_denied(e: &io::Error) -> bool {
    #[cfg(target_arch = "wasm32")]
    if e.raw_os_error() == Some(WASI_ENOTCAPABLE) {
        return true;
    }
    e.kind() == io::ErrorKind::PermissionDenied
}

/// The model-facing error for `verb`ing `target` failing with `e`
/// ("cannot open src/x.rs: no such file or directory").
pub fn io_error(verb: &str, target: &Target, e: &io::Error) -> ToolError {
    let shown = &target.shown;
    if is_denied(e) {
        // Inside the sandbox a refusal is the capability boundary: the path
        // (or a symlink on it) leads outside the granted directories, or the
        // directory was granted read-only.
        let writing = matches!(verb, "write" | "create" | "delete");
        let why = match (cfg!(target_arch = "wasm32"), writing) {
            (true, false) => "not permitted (outside the granted directories)",
            (true, true) => {
                "not permitted (outside the granted directories, or the directory is granted \
                 read-only)"
            }
            (false, _) => "permission denied",
        };
        return ToolError::denied(format!("cannot {verb} {shown}: {why}"));
    }
    let what = match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_string(),
        io::ErrorKind::IsADirectory => "it is a directory".to_string(),
        io::ErrorKind::NotADirectory => "a component of the path is not a directory".to_string(),
        io::ErrorKind::AlreadyExists => "it already exists".to_string(),
        io::ErrorKind::StorageFull => "no space left on the device".to_string(),
        io::ErrorKind::ReadOnlyFilesystem => "the filesystem is read-only".to_string(),
        io::ErrorKind::InvalidData => "it is not valid UTF-8 text".to_string(),
        _ => e.to_string(),
    };
    let mut message = format!("cannot {verb} {shown}: {what}");
    if e.kind() == io::ErrorKind::NotFound {
        message.push_str(&similar_names_hint(target));
    }
    ToolError::failed(message)
}

/// "; similar names in src/: main.rs, mod.rs" when the parent directory lists
/// cheaply and has close names; "; the directory src/ does not exist either"
/// when it is missing; otherwise "".
pub fn similar_names_hint(target: &Target) -> String {
    let Some(name) = target.full.file_name().and_then(|n| n.to_str()) else {
        return String::new();
    };
    let parent = match target.full.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let shown_parent = match Path::new(&target.shown).parent() {
        Some(p) if !p.as_os_str().is_empty() => format!("{}/", p.display()),
        _ => "the directory".to_string(),
    };
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return format!("; {shown_parent} does not exist either");
    };
    let names: Vec<String> = entries
        .take(2000)
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    let close = closest_names(name, &names, 5);
    if close.is_empty() {
        String::new()
    } else {
        format!("; similar names in {shown_parent}: {}", close.join(", "))
    }
}

/// Up to `max` of `candidates` that look like `name`: same name in another
/// case, a small edit distance, or one containing the other. Closest first.
pub fn closest_names(name: &str, candidates: &[String], max: usize) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(usize, &String)> = candidates
        .iter()
        .filter(|c| c.as_str() != name)
        .filter_map(|c| {
            let cl = c.to_lowercase();
            let distance = edit_distance(&lower, &cl);
            let allowed = (lower.chars().count() / 3).max(2);
            let stem = |s: &str| s.split('.').next().unwrap_or("").to_string();
            let related = distance <= allowed
                || (lower.len() >= 3 && cl.contains(&lower))
                || (cl.len() >= 3 && lower.contains(&cl))
                || (!stem(&lower).is_empty() && stem(&lower) == stem(&cl));
            related.then_some((distance, c))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(max)
        .map(|(_, c)| c.clone())
        .collect()
}

/// Levenshtein distance over chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_absolute_paths_under_the_cwd_resolve() {
        let t = resolve("src/main.rs", Some("/work/p")).unwrap();
        assert_eq!(t.full, PathBuf::from("/work/p/src/main.rs"));
        assert_eq!(t.shown, "src/main.rs");
        let t = resolve("/work/p/./a/../b.txt", Some("/work/p")).unwrap();
        assert_eq!(t.full, PathBuf::from("/work/p/b.txt"));
        assert_eq!(
            resolve(".", Some("/work/p")).unwrap().full,
            PathBuf::from("/work/p")
        );
        // Without a granted cwd the path is used as given.
        assert_eq!(resolve("a/b", None).unwrap().full, PathBuf::from("a/b"));
    }

    #[test]
    fn paths_outside_the_cwd_are_denied() {
        for path in [
            "/etc/passwd",
            "../escape",
            "a/../../x",
            "/work/pp/x",
            "/work",
        ] {
            let Err(ToolError::Denied(msg)) = resolve(path, Some("/work/p")) else {
                panic!("{path} should be denied");
            };
            assert!(
                msg.starts_with(&format!("cannot access {path}: not permitted")),
                "{msg}"
            );
            assert!(msg.contains("outside the granted directories"), "{msg}");
        }
        assert!(matches!(
            resolve(" ", Some("/w")),
            Err(ToolError::InvalidArguments(_))
        ));
    }

    #[test]
    fn edit_distance_and_close_names() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        let names: Vec<String> = ["main.rs", "mod.rs", "lib.rs", "README.md", "Main.java", "x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(closest_names("mian.rs", &names, 5), ["main.rs"]);
        assert_eq!(closest_names("mod.r", &names, 5), ["mod.rs"]);
        assert_eq!(closest_names("readme.md", &names, 5), ["README.md"]);
        assert_eq!(closest_names("main", &names, 2), ["main.rs", "Main.java"]);
    }

    #[test]
    fn not_found_lists_similar_names() {
        let dir = crate::testdir::TestDir::new();
        dir.write("src/main.rs", "fn main() {}\n");
        dir.write("src/lib.rs", "");
        let target = resolve("src/mian.rs", Some(dir.path_str())).unwrap();
        let e = std::fs::File::open(&target.full).unwrap_err();
        let msg = io_error("open", &target, &e).to_string();
        assert_eq!(
            msg,
            "cannot open src/mian.rs: no such file or directory; similar names in src/: main.rs"
        );
        let target = resolve("nope/x.rs", Some(dir.path_str())).unwrap();
        let e = std::fs::File::open(&target.full).unwrap_err();
        let msg = io_error("open", &target, &e).to_string();
        assert!(msg.ends_with("; nope/ does not exist either"), "{msg}");
    }
}
