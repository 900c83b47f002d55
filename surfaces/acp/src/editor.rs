//! The editor as the agent's place for files and commands: what the session
//! gives the plugin host when the editor offered `fs/*` or `terminal/*` in
//! `initialize`. Calls become [`EditorCall`]s on the session's outbound
//! channel; the adapter turns them into requests to the editor.

use std::path::Path;

use async_trait::async_trait;
use talaria_exec::{ExecError, ExecOutput, ExecRequest};
use tokio::sync::{mpsc, oneshot};

use crate::sink::CallIds;
use crate::types::{EditorCall, EditorOffers, Outbound, TerminalRun};

/// One session's editor.
#[derive(Debug)]
pub struct EditorBridge {
    out: mpsc::UnboundedSender<Outbound>,
    calls: CallIds,
    offers: EditorOffers,
}

impl EditorBridge {
    pub fn new(out: mpsc::UnboundedSender<Outbound>, calls: CallIds, offers: EditorOffers) -> Self {
        Self { out, calls, offers }
    }

    /// Sends `call`, then waits for what `reply` brings.
    async fn ask<T>(
        &self,
        call: EditorCall,
        reply: oneshot::Receiver<Result<T, String>>,
    ) -> Result<T, String> {
        self.out
            .send(Outbound::Editor(call))
            .map_err(|_| "the editor has disconnected".to_owned())?;
        reply
            .await
            .map_err(|_| "the editor has disconnected".to_owned())?
    }
}

#[async_trait]
impl talaria_plugin_host::Editor for EditorBridge {
    fn serves_files(&self) -> bool {
        self.offers.files
    }

    fn runs_commands(&self) -> bool {
        self.offers.terminal
    }

    async fn read_text_file(&self, path: &Path) -> Result<String, String> {
        let (reply, answer) = oneshot::channel();
        let path = path.to_path_buf();
        self.ask(EditorCall::Read { path, reply }, answer).await
    }

    async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), String> {
        let (reply, answer) = oneshot::channel();
        let call = EditorCall::Write {
            path: path.to_path_buf(),
            content: content.to_owned(),
            reply,
        };
        self.ask(call, answer).await
    }

    async fn run_command(
        &self,
        tool: &str,
        request: &ExecRequest,
    ) -> Result<ExecOutput, ExecError> {
        let tool_call_id = self
            .calls
            .lock()
            .ok()
            .and_then(|calls| calls.get(tool).cloned());
        let run = TerminalRun {
            tool_call_id,
            program: request.program.clone(),
            args: request.args.clone(),
            cwd: request.cwd.clone(),
            env: request.env.clone(),
            output_limit: u64::try_from(request.output_cap).unwrap_or(u64::MAX),
            timeout: request.timeout,
        };
        let (reply, answer) = oneshot::channel();
        // Dropping this future drops `answer`: the adapter then kills the command.
        let end = self
            .ask(EditorCall::Run { run, reply }, answer)
            .await
            .map_err(|e| ExecError::Failed(format!("the editor's terminal: {e}")))?;
        Ok(ExecOutput {
            status: end.exit_code,
            stdout: end.output.into_bytes(),
            stderr: Vec::new(),
            timed_out: end.timed_out,
            truncated: end.truncated,
        })
    }
}
