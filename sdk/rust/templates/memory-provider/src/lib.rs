//! A memory provider: the user's messages are kept as notes (in the plugin's
//! key-value store, so they outlive the session) and the notes sharing the
//! most words with the next message are recalled before it is answered.
//!
//! The host keeps one instance per session and calls it one call at a time:
//! `initialize` first, `prefetch` before each turn, `sync_turn` after it,
//! `shutdown` last. Turn it on with `talaria memory use word-notes`.

use talaria_plugin_sdk::{
    Memory, MemoryScope, Message, ProviderOptions, Role, SessionKind, config, kv, log,
};

/// The key the notes are stored under, one per line.
const NOTES_KEY: &str = "notes";

/// The provider of one session.
pub struct WordNotes {
    notes: Vec<String>,
    recall_limit: usize,
    max_notes: usize,
    /// Sub-agent and cron sessions read the notes but do not add to them.
    writes: bool,
}

fn setting(name: &str, default: usize) -> usize {
    config::get(name)
        .ok()
        .flatten()
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(default)
}

/// The lowercase words of `text` of at least three letters.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| word.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// The `limit` notes sharing the most words with `query`, best first; notes
/// sharing none are never recalled.
pub fn recall(notes: &[String], query: &str, limit: usize) -> Vec<String> {
    let wanted = words(query);
    let mut scored: Vec<(usize, &String)> = notes
        .iter()
        .map(|note| {
            let have = words(note);
            (wanted.iter().filter(|w| have.contains(w)).count(), note)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    // Ties: the newest note first.
    scored.sort_by(|a, b| b.0.cmp(&a.0));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, note)| note.clone())
        .collect()
}

/// Keeps the newest `max` notes.
pub fn remember(notes: &mut Vec<String>, note: &str, max: usize) {
    let note = note.split_whitespace().collect::<Vec<_>>().join(" ");
    if note.is_empty() || notes.contains(&note) {
        return;
    }
    notes.insert(0, note);
    notes.truncate(max);
}

impl Memory for WordNotes {
    fn initialize(scope: MemoryScope) -> Result<(Self, ProviderOptions), String> {
        let stored = kv::get_string(NOTES_KEY).map_err(|e| format!("reading the notes: {e}"))?;
        let notes = stored
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        let provider = WordNotes {
            notes,
            recall_limit: setting("recall_limit", 3),
            max_notes: setting("max_notes", 500),
            writes: scope.kind == SessionKind::Primary,
        };
        Ok((provider, ProviderOptions::default()))
    }

    fn prefetch(&mut self, query: String) -> Result<String, String> {
        let recalled = recall(&self.notes, &query, self.recall_limit);
        Ok(recalled
            .iter()
            .map(|note| format!("- the user once said: {note}"))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    fn sync_turn(&mut self, turn: Vec<Message>) -> Result<(), String> {
        if !self.writes {
            return Ok(());
        }
        for message in turn.iter().filter(|m| m.role == Role::User) {
            remember(&mut self.notes, &message.content, self.max_notes);
        }
        kv::set(NOTES_KEY, self.notes.join("\n")).map_err(|e| format!("saving the notes: {e}"))?;
        log::debug(format!("word-notes keeps {} notes", self.notes.len()));
        Ok(())
    }
}

talaria_plugin_sdk::export_memory!(WordNotes);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recalls_the_notes_sharing_the_most_words() {
        let notes = vec![
            "my cat is called Miso".to_owned(),
            "I drink green tea every morning".to_owned(),
            "the green door needs paint".to_owned(),
        ];
        let recalled = recall(&notes, "Which tea do I drink?", 2);
        assert_eq!(recalled[0], "I drink green tea every morning");
        assert_eq!(recalled.len(), 1, "the others share no word");
        assert!(recall(&notes, "quantum physics", 3).is_empty());
    }

    #[test]
    fn keeps_the_newest_notes_once_each() {
        let mut notes = Vec::new();
        for note in ["one  note", "two", "one note", "three"] {
            remember(&mut notes, note, 2);
        }
        assert_eq!(notes, ["three", "two"]);
    }
}
