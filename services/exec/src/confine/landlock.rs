//! The Landlock domain every confined process starts in.
//!
//! Being in a domain is what keeps a process from ptracing, or reading `/proc/PID/environ`,
//! `mem` or `fd/` of, any process outside it, even as root, and from mounting or unmounting.
//! The rules themselves are as loose as ordinary work allows: writes anywhere but `/proc`,
//! `/sys` and the raw devices of `/dev` (root's ways around a read-only bind: a core pattern,
//! a disk written directly); no device nodes made. Where no mount namespace could be made,
//! the control paths and secrets of the [`Mount`]s are left out of the rules too.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, BitFlags, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, path_beneath_rules,
};

use super::Mount;

/// The ABI whose rights are asked for; newer kernels offer more, older ones get what they have.
const ABI_USED: ABI = ABI::V3;

/// Kernel file systems a command never writes (root could escape through them).
const SYSTEM_DIRS: &[&str] = &["/proc", "/sys", "/dev"];

/// Character devices of `/dev` that are raw memory or I/O ports.
const RAW_CHAR_DEVICES: &[&str] = &["mem", "kmem", "port"];

/// Directories of `/dev` that hold block devices.
const BLOCK_DIRS: &[&str] = &["block", "disk", "mapper"];

/// Puts the calling thread (and what it starts) in a Landlock domain; with `fallback` (the
/// mounts no namespace could apply) their paths are also denied by rules. Returns the
/// kernel's ABI. Needs ABI 2 or later: before it, any domain forbids moving files between
/// directories.
pub(super) fn restrict(fallback: Option<&[Mount]>) -> Result<i32, String> {
    let mut handled = AccessFs::WriteFile | AccessFs::Truncate | AccessFs::MakeChar;
    handled |= AccessFs::MakeBlock;
    let mut writes: BitFlags<AccessFs> = AccessFs::WriteFile | AccessFs::Truncate;
    if fallback.is_some() {
        writes = AccessFs::from_write(ABI_USED) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
        handled |= AccessFs::from_write(ABI_USED) | AccessFs::ReadFile;
    }
    let error = |e: landlock::RulesetError| e.to_string();
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::Refer)
        .map_err(error)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)
        .map_err(error)?
        .create()
        .map_err(error)?;
    let root = PathFd::new("/").map_err(|e| e.to_string())?;
    let mut ruleset = ruleset
        .add_rule(PathBeneath::new(root, AccessFs::Refer))
        .map_err(error)?;

    let mut no_writes: Vec<PathBuf> = SYSTEM_DIRS.iter().map(PathBuf::from).collect();
    let mut no_reads: Vec<PathBuf> = Vec::new();
    let mut holes: Vec<PathBuf> = Vec::new();
    for mount in fallback.unwrap_or_default() {
        match mount {
            Mount::ReadOnly(path) => no_writes.extend(real(path)),
            Mount::Hidden(path) | Mount::View { path, .. } => {
                no_writes.extend(real(path));
                no_reads.extend(real(path));
            }
            Mount::Writable(path) => holes.extend(real(path)),
        }
    }
    let allowed_writes = beneath_all_but(&no_writes)
        .into_iter()
        .chain(writable_devices());
    ruleset = ruleset
        .add_rules(path_beneath_rules(allowed_writes, writes))
        .map_err(error)?;
    if fallback.is_some() {
        ruleset = ruleset
            .add_rules(path_beneath_rules(
                beneath_all_but(&no_reads),
                AccessFs::ReadFile,
            ))
            .map_err(error)?
            .add_rules(path_beneath_rules(holes, writes | AccessFs::ReadFile))
            .map_err(error)?;
    }
    let status = ruleset.restrict_self().map_err(error)?;
    match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => Ok(kernel_abi.unwrap_or(effective_abi as i32)),
        _ => Err("the kernel has no Landlock".to_owned()),
    }
}

/// `path` resolved, when it exists.
fn real(path: &Path) -> Option<PathBuf> {
    path.canonicalize().ok()
}

/// Paths under which rules cover the whole file system except the `excluded` paths (absolute
/// and resolved): `/` itself when nothing is excluded, otherwise each entry of a directory on
/// the way to an excluded path, recursively. What lies directly in those directories and is
/// created later is covered by no rule.
fn beneath_all_but(excluded: &[PathBuf]) -> Vec<PathBuf> {
    let mut allowed = Vec::new();
    walk(Path::new("/"), excluded, &mut allowed);
    allowed
}

fn walk(dir: &Path, excluded: &[PathBuf], allowed: &mut Vec<PathBuf>) {
    if excluded.iter().any(|path| path == dir) {
        return;
    }
    if !excluded.iter().any(|path| path.starts_with(dir)) {
        allowed.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_link = entry.file_type().is_ok_and(|kind| kind.is_symlink());
        if is_link {
            // A rule follows the link: one leading into (or above) an excluded path would
            // open what the walk keeps closed.
            let target = path.canonicalize();
            let reaches_excluded = target.as_ref().map_or(true, |target| {
                excluded
                    .iter()
                    .any(|path| path.starts_with(target) || target.starts_with(path))
            });
            if !reaches_excluded {
                allowed.push(path);
            }
            continue;
        }
        walk(&path, excluded, allowed);
    }
}

/// The entries of `/dev` commands may write: not block devices (or the directories listing
/// them), not raw memory or ports.
fn writable_devices() -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(entries) = std::fs::read_dir("/dev") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            match entry.file_type() {
                Ok(kind) if kind.is_block_device() || kind.is_symlink() => false,
                Ok(kind) if kind.is_char_device() => !RAW_CHAR_DEVICES.contains(&name.as_ref()),
                Ok(kind) if kind.is_dir() => !BLOCK_DIRS.contains(&name.as_ref()),
                Ok(_) => true,
                Err(_) => false,
            }
        })
        .map(|entry| entry.path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_cover_the_siblings_of_each_excluded_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["home/.talaria/skills", "home/project", "other"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("home/notes.txt"), "").unwrap();
        std::os::unix::fs::symlink(root.join("home/.talaria"), root.join("home/link")).unwrap();
        std::os::unix::fs::symlink(root.join("other"), root.join("home/fine-link")).unwrap();
        let excluded = vec![root.join("home/.talaria")];
        let mut allowed = Vec::new();
        walk(&root, &excluded, &mut allowed);
        allowed.sort();
        let mut expected = vec![
            root.join("home/fine-link"),
            root.join("home/notes.txt"),
            root.join("home/project"),
            root.join("other"),
        ];
        expected.sort();
        assert_eq!(allowed, expected);
    }

    #[test]
    fn raw_devices_are_not_writable() {
        let devices = writable_devices();
        assert!(devices.contains(&PathBuf::from("/dev/null")), "{devices:?}");
        assert!(!devices.contains(&PathBuf::from("/dev/mem")));
        assert!(
            !devices.iter().any(|path| {
                use std::os::unix::fs::FileTypeExt;
                path.symlink_metadata()
                    .is_ok_and(|meta| meta.file_type().is_block_device())
            }),
            "{devices:?}"
        );
    }
}
