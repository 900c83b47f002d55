//! Test plugin `memory-recorder`: a memory provider with the 0.1.2 lifecycle.
//! It keeps the user messages of the turns synced in this instance and
//! recalls them in `prefetch`, so a recall proves the instance lived across
//! turns; each call is logged so tests can count them; `[config]` makes it
//! slow, failing or trapping.

use talaria_plugin_sdk::{
    Memory, MemoryScope, Message, ProviderOptions, Role, SessionKind, config, log,
};

struct Recorder {
    scope: MemoryScope,
    turns: Vec<String>,
    quiet: bool,
}

fn setting(name: &str) -> String {
    config::get(name).ok().flatten().unwrap_or_default()
}

/// Panics or fails when `[config]` says so for `call`.
fn misbehave(call: &str) -> Result<(), String> {
    if setting("trap_on") == call {
        panic!("memory-recorder was told to trap in {call}");
    }
    if setting("fail_on") == call {
        return Err(format!("memory-recorder was told to fail in {call}"));
    }
    Ok(())
}

fn kind_name(kind: SessionKind) -> &'static str {
    match kind {
        SessionKind::Primary => "primary",
        SessionKind::SubAgent => "sub-agent",
        SessionKind::Cron => "cron",
        SessionKind::Flush => "flush",
    }
}

impl Recorder {
    fn note(&self, line: String) {
        if !self.quiet {
            log::info(format!("memory-recorder: {line}"));
        }
    }
}

impl Memory for Recorder {
    fn initialize(scope: MemoryScope) -> Result<(Self, ProviderOptions), String> {
        misbehave("initialize")?;
        let recorder = Recorder {
            quiet: setting("quiet") == "true",
            turns: Vec::new(),
            scope,
        };
        recorder.note(format!(
            "initialize session={} kind={} platform={} profile={} user={} parent={}",
            recorder.scope.session_id,
            kind_name(recorder.scope.kind),
            recorder.scope.platform,
            recorder.scope.profile,
            recorder.scope.user_id.as_deref().unwrap_or("-"),
            recorder.scope.parent_session.as_deref().unwrap_or("-"),
        ));
        let options = ProviderOptions {
            write_in_secondary: setting("write_in_secondary") == "true",
        };
        Ok((recorder, options))
    }

    fn system_prompt_block(&mut self) -> Option<String> {
        self.note("system-prompt-block".into());
        (!self.quiet).then(|| "The memory-recorder provider is on for this session.".into())
    }

    fn prefetch(&mut self, query: String) -> Result<String, String> {
        self.note(format!("prefetch {query:?}"));
        misbehave("prefetch")?;
        let sleep_ms: u64 = setting("prefetch_sleep_ms").parse().unwrap_or(0);
        if sleep_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(sleep_ms));
        }
        if self.quiet || self.turns.is_empty() {
            return Ok(String::new());
        }
        Ok(format!(
            "Earlier in this session: {}",
            self.turns.join(" | ")
        ))
    }

    fn sync_turn(&mut self, turn: Vec<Message>) -> Result<(), String> {
        misbehave("sync-turn")?;
        let user = turn
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let reply = turn
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        self.note(format!(
            "sync-turn {} messages user={user:?} reply={reply:?}",
            turn.len()
        ));
        self.turns.push(user);
        Ok(())
    }

    fn queue_prefetch(&mut self, query: String) {
        self.note(format!("queue-prefetch {query:?}"));
    }

    fn on_pre_compress(&mut self, messages: Vec<Message>) -> Option<String> {
        self.note(format!("on-pre-compress {} messages", messages.len()));
        (!self.quiet).then(|| "memory-recorder asks to keep: RECORDER-KEEP".into())
    }

    fn on_memory_write(&mut self, action: String, target: String, content: String) {
        self.note(format!("on-memory-write {action} {target} {content:?}"));
    }

    fn on_delegation(&mut self, task: String, summary: String, child_session: String) {
        self.note(format!(
            "on-delegation task={task:?} summary={summary:?} child={child_session}"
        ));
    }

    fn on_session_end(&mut self, messages: Vec<Message>) {
        self.note(format!("on-session-end {} messages", messages.len()));
    }

    fn shutdown(&mut self) {
        self.note("shutdown".into());
    }
}

talaria_plugin_sdk::export_memory!(Recorder);
