//! Line editing for the REPL: history per profile, multi-line input and
//! completion from the command registry.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, CompletionType, Config, EditMode, Editor, Helper, KeyCode, KeyEvent, Modifiers,
};
use talaria_commands::{ArgKind, ArgValues, Registry};

/// Argument values offered by completion, refreshed between turns.
#[derive(Debug, Clone, Default)]
pub struct ArgSnapshot {
    /// Stored session ids, newest first.
    pub sessions: Vec<String>,
    /// Toolsets of the session.
    pub toolsets: Vec<String>,
    /// Skin names.
    pub skins: Vec<String>,
    /// Model names seen in the configuration.
    pub models: Vec<String>,
    /// Dotted config keys.
    pub config_keys: Vec<String>,
}

impl ArgValues for ArgSnapshot {
    fn values(&self, kind: ArgKind) -> Vec<String> {
        match kind {
            ArgKind::Session => self.sessions.clone(),
            ArgKind::Toolset => self.toolsets.clone(),
            ArgKind::Skin => self.skins.clone(),
            ArgKind::Model => self.models.clone(),
            ArgKind::ConfigKey => self.config_keys.clone(),
            ArgKind::Provider => {
                let mut names: Vec<String> = talaria_providers::ProviderKind::ALL
                    .iter()
                    .map(|kind| kind.as_str().to_owned())
                    .collect();
                names.sort();
                names
            }
            ArgKind::Choice(_) | ArgKind::Command | ArgKind::Text => Vec::new(),
        }
    }
}

/// What completion reads: the registry and the argument values.
#[derive(Debug, Clone)]
pub struct CompletionSource {
    /// The session's commands.
    pub registry: Arc<Registry>,
    /// Argument values.
    pub values: ArgSnapshot,
}

struct ReplHelper {
    source: Arc<Mutex<CompletionSource>>,
    /// The prompt with colours (rustyline measures the plain one).
    styled_prompt: Arc<Mutex<String>>,
}

impl Completer for ReplHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let Ok(source) = self.source.lock() else {
            return Ok((pos, Vec::new()));
        };
        let head = line.get(..pos).unwrap_or(line);
        Ok(source.registry.complete(head, &source.values))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        default: bool,
    ) -> Cow<'b, str> {
        match self.styled_prompt.lock() {
            Ok(styled) if default && !styled.is_empty() => Cow::Owned(styled.clone()),
            _ => Cow::Borrowed(prompt),
        }
    }

    fn highlight_char(&self, _: &str, _: usize, _: CmdKind) -> bool {
        false
    }
}

impl Validator for ReplHelper {
    /// A line ending in `\` or an open ``` fence continues on the next line.
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if continues(ctx.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for ReplHelper {}

/// Whether the input so far asks for another line.
pub fn continues(input: &str) -> bool {
    let fences = input
        .lines()
        .filter(|line| line.trim_start().starts_with("```"))
        .count();
    input.ends_with('\\') || fences % 2 == 1
}

/// Joins continued lines: a trailing `\` is a line break the user asked for.
pub fn join_continued(input: &str) -> String {
    input.replace("\\\n", "\n")
}

/// One read from the terminal.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// A line (possibly several, joined).
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D on an empty line.
    Eof,
}

/// The line editor with the profile's history.
pub struct LineReader {
    editor: Editor<ReplHelper, FileHistory>,
    history: PathBuf,
    styled_prompt: Arc<Mutex<String>>,
}

impl LineReader {
    /// An editor reading history from (and appending to) `history`.
    pub fn new(history: PathBuf, source: Arc<Mutex<CompletionSource>>) -> rustyline::Result<Self> {
        let config = Config::builder()
            .max_history_size(10_000)?
            .history_ignore_dups(true)?
            .history_ignore_space(true)
            .auto_add_history(false)
            .completion_type(CompletionType::List)
            .edit_mode(EditMode::Emacs)
            .build();
        let mut editor: Editor<ReplHelper, FileHistory> = Editor::with_config(config)?;
        let styled_prompt = Arc::new(Mutex::new(String::new()));
        editor.set_helper(Some(ReplHelper {
            source,
            styled_prompt: styled_prompt.clone(),
        }));
        // Alt-Enter (and Ctrl-J on terminals that send it) inserts a newline.
        editor.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), Cmd::Newline);
        if history.exists() {
            // A damaged history file costs the history, not the session.
            let _ = editor.load_history(&history);
        }
        Ok(Self {
            editor,
            history,
            styled_prompt,
        })
    }

    /// Reads one input; `prompt` is measured, `styled` is what is shown.
    pub fn read(&mut self, prompt: &str, styled: &str) -> rustyline::Result<Input> {
        if let Ok(mut current) = self.styled_prompt.lock() {
            styled.clone_into(&mut current);
        }
        match self.editor.readline(prompt) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = self.editor.add_history_entry(line.as_str());
                    self.save();
                }
                Ok(Input::Line(join_continued(&line)))
            }
            Err(ReadlineError::Interrupted) => Ok(Input::Interrupted),
            Err(ReadlineError::Eof) => Ok(Input::Eof),
            Err(error) => Err(error),
        }
    }

    /// Appends this session's new entries to the history file.
    fn save(&mut self) {
        if let Some(dir) = self.history.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        // Append keeps entries other sessions wrote meanwhile.
        if self.editor.append_history(&self.history).is_err() {
            let _ = self.editor.save_history(&self.history);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backslashes_and_open_fences_continue_the_input() {
        assert!(continues("first line \\"));
        assert!(continues("```rust\nfn main() {}"));
        assert!(!continues("```rust\nfn main() {}\n```"));
        assert!(!continues("plain"));
        assert_eq!(join_continued("a \\\nb"), "a \nb");
    }
}
