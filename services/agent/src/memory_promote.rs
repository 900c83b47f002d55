//! The memories of others than the owner (`talaria memory others`, `talaria memory promote`):
//! what a chat user's, a group's or a client's sessions wrote stays theirs
//! (`memories/<who>/`) until the owner promotes an entry into their own `MEMORY.md`. The
//! entry passes the same checks as any memory write (the scanner, the size limit).

use talaria_memory::{MemoryStore, Target};
use talaria_profile::ProfileHome;

/// One other principal's memory: its directory name and how many entries each file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherMemory {
    /// The directory under `memories/` (a file-name-safe form of who it is).
    pub name: String,
    /// Entries in its `MEMORY.md`.
    pub notes: usize,
    /// Entries in its `USER.md`.
    pub profile: usize,
}

/// Every other principal's memory, by name.
pub fn others(home: &ProfileHome) -> Result<Vec<OtherMemory>, String> {
    let root = home.principal_memory_dir("");
    let listing = match std::fs::read_dir(&root) {
        Ok(listing) => listing,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(format!("cannot read {}: {error}", root.display())),
    };
    let mut found = Vec::new();
    for entry in listing.flatten() {
        if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let store = open(home, &name)?;
        let count = |target| store.entries(target).map(|e| e.len()).unwrap_or(0);
        found.push(OtherMemory {
            notes: count(Target::Memory),
            profile: count(Target::User),
            name,
        });
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// The `MEMORY.md` entries of `who`, in order (numbered from 1 by [`promote`]).
pub fn notes_of(home: &ProfileHome, who: &str) -> Result<Vec<String>, String> {
    open(home, who)?
        .entries(Target::Memory)
        .map_err(|e| e.to_string())
}

/// Adds entry `number` (from 1) of `who`'s `MEMORY.md` to the owner's; returns it.
pub fn promote(home: &ProfileHome, who: &str, number: usize) -> Result<String, String> {
    let notes = notes_of(home, who)?;
    let Some(entry) = number.checked_sub(1).and_then(|index| notes.get(index)) else {
        return Err(format!(
            "{who} has {} note(s) in MEMORY.md; there is no note {number}",
            notes.len()
        ));
    };
    let owner = MemoryStore::open(home.memory_dir()).map_err(|e| e.to_string())?;
    owner
        .add(Target::Memory, entry)
        .map_err(|e| format!("not promoted: {e}"))?;
    Ok(entry.clone())
}

/// The store of `who`, which must name an existing directory under `memories/`.
fn open(home: &ProfileHome, who: &str) -> Result<MemoryStore, String> {
    let plain = !who.is_empty()
        && who
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    let dir = home.principal_memory_dir(who);
    if !plain || !dir.is_dir() {
        return Err(format!(
            "no memory named {who:?}: `talaria memory others` lists them"
        ));
    }
    MemoryStore::open(dir).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_moves_only_when_promoted_and_is_checked_like_any_write() {
        let dir = tempfile::tempdir().unwrap();
        let home = ProfileHome::at(dir.path());
        assert!(others(&home).unwrap().is_empty());
        let alice = home.principal_memory_dir("irc_alice-0badf00d");
        std::fs::create_dir_all(&alice).unwrap();
        let store = MemoryStore::open(&alice).unwrap();
        store
            .add(Target::Memory, "alice deploys on Fridays")
            .unwrap();
        store
            .add(Target::User, "alice prefers short answers")
            .unwrap();

        let listed = others(&home).unwrap();
        assert_eq!(
            listed,
            [OtherMemory {
                name: "irc_alice-0badf00d".into(),
                notes: 1,
                profile: 1
            }]
        );
        let owner = MemoryStore::open(home.memory_dir()).unwrap();
        assert!(owner.entries(Target::Memory).unwrap().is_empty());
        assert!(promote(&home, "irc_alice-0badf00d", 2).is_err());
        assert_eq!(
            promote(&home, "irc_alice-0badf00d", 1).unwrap(),
            "alice deploys on Fridays"
        );
        assert_eq!(
            owner.entries(Target::Memory).unwrap(),
            ["alice deploys on Fridays"]
        );
        // Only names of directories under memories/: no way out of it.
        for bad in ["../x", "", ".", "irc_bob-00000000"] {
            assert!(notes_of(&home, bad).is_err(), "{bad}");
        }
    }
}
