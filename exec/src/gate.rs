//! The approval gate: every command a tool runs is classified, approved when
//! needed, and only then started on the backend.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use talaria_approval::{Approval, ApprovalPolicy, Approver};
use tokio_util::sync::CancellationToken;

use crate::backend::Backend;
use crate::runner::run;
use crate::{ExecError, ExecOutput, ExecRequest, shell_quote};

/// Who asks to run a command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecOrigin {
    /// The plugin providing the tool.
    pub plugin: String,
    /// The tool that runs the command (shown to the user when asking).
    pub tool: String,
    /// The session the call belongs to (scopes "session" approvals and
    /// background processes).
    pub session_id: String,
}

impl ExecOrigin {
    /// An origin from its parts.
    pub fn new(
        plugin: impl Into<String>,
        tool: impl Into<String>,
        session_id: impl Into<String>,
    ) -> Self {
        Self {
            plugin: plugin.into(),
            tool: tool.into(),
            session_id: session_id.into(),
        }
    }
}

/// What tools use to run commands.
#[async_trait]
pub trait Executor: Send + Sync {
    /// Runs `request` to completion (see [`run`](crate::run)), unless it is
    /// denied ([`ExecError::Denied`]) or cancelled.
    async fn execute(
        &self,
        request: ExecRequest,
        origin: &ExecOrigin,
        cancel: &CancellationToken,
    ) -> Result<ExecOutput, ExecError>;

    /// Whether commands run in a sandbox.
    fn sandboxed(&self) -> bool;
}

/// Shells whose `-c` script is what the user should judge.
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash"];

/// The command line the approval layer classifies.
///
/// For `sh`, `bash`, `zsh` or `dash` (by name or path) run with `-c` (also
/// clustered: `-lc`, `-ec`…), it is the script; positional arguments after
/// it are added on a second line, since the script can run them (`"$@"`).
/// Otherwise it is the program and its arguments, shell-quoted and joined.
pub fn command_text(request: &ExecRequest) -> String {
    shell_script(request).unwrap_or_else(|| {
        std::iter::once(&request.program)
            .chain(&request.args)
            .map(|word| shell_quote(word))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// The `-c` script of a shell invocation with what follows it, if it is one.
fn shell_script(request: &ExecRequest) -> Option<String> {
    let name = Path::new(&request.program).file_name()?.to_str()?;
    if !SHELLS.contains(&name) {
        return None;
    }
    let mut has_c = false;
    let mut args = request.args.iter();
    let script = loop {
        let arg = args.next()?;
        if arg == "--" {
            break args.next()?;
        }
        let Some(flags) = arg.strip_prefix(['-', '+']) else {
            break arg;
        };
        if arg.starts_with("--") {
            // Long options (--login, --norc…) take no value.
            continue;
        }
        has_c |= arg.starts_with('-') && flags.contains('c');
        if flags.contains(['o', 'O']) {
            // `-o pipefail`, `-O extglob`: the next word is the option's value.
            args.next()?;
        }
    };
    if !has_c {
        return None;
    }
    let rest: Vec<String> = args.map(|word| shell_quote(word)).collect();
    if rest.is_empty() {
        Some(script.clone())
    } else {
        Some(format!("{script}\n{}", rest.join(" ")))
    }
}

/// The [`Executor`] tools get: checks each command with the approval policy
/// (asking the surface's approver when needed), then runs it on the backend.
pub struct GatedExecutor {
    backend: Arc<dyn Backend>,
    policy: Arc<ApprovalPolicy>,
    approver: Arc<dyn Approver>,
}

impl GatedExecutor {
    /// Gates `backend` with `policy`, asking `approver`.
    pub fn new(
        backend: Arc<dyn Backend>,
        policy: Arc<ApprovalPolicy>,
        approver: Arc<dyn Approver>,
    ) -> Self {
        Self {
            backend,
            policy,
            approver,
        }
    }

    /// The backend commands run on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The approval policy.
    pub fn policy(&self) -> &Arc<ApprovalPolicy> {
        &self.policy
    }

    /// Decides whether `request` may run for `origin` (hardline commands
    /// never; dangerous ones in a sandbox, in yolo mode, or when approved),
    /// asking the approver when needed. A refusal is [`ExecError::Denied`]
    /// with the policy's message, which names the finding.
    pub async fn approve(
        &self,
        request: &ExecRequest,
        origin: &ExecOrigin,
    ) -> Result<Approval, ExecError> {
        self.policy
            .check(
                &origin.session_id,
                &origin.tool,
                &command_text(request),
                self.backend.sandboxed(),
                self.approver.as_ref(),
            )
            .await
            .map_err(|denied| ExecError::Denied(denied.message))
    }
}

impl fmt::Debug for GatedExecutor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatedExecutor")
            .field("backend", &self.backend.name())
            .field("sandboxed", &self.backend.sandboxed())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Executor for GatedExecutor {
    async fn execute(
        &self,
        request: ExecRequest,
        origin: &ExecOrigin,
        cancel: &CancellationToken,
    ) -> Result<ExecOutput, ExecError> {
        // The user may take a while to answer; a cancel must not wait for them.
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ExecError::Cancelled),
            approval = self.approve(&request, origin) => approval?,
        };
        run(self.backend.as_ref(), &request, cancel).await
    }

    fn sandboxed(&self) -> bool {
        self.backend.sandboxed()
    }
}

#[cfg(test)]
mod tests {
    use super::command_text;
    use crate::ExecRequest;

    fn text(program: &str, args: &[&str]) -> String {
        let args = args.iter().map(|a| (*a).to_owned()).collect();
        command_text(&ExecRequest::new(program, args, "/"))
    }

    #[test]
    fn shell_scripts_are_classified_as_written() {
        assert_eq!(text("sh", &["-c", "rm -rf build"]), "rm -rf build");
        assert_eq!(text("bash", &["-lc", "ls | wc -l"]), "ls | wc -l");
        assert_eq!(text("/bin/bash", &["-e", "-c", "echo hi"]), "echo hi");
        assert_eq!(text("/usr/bin/zsh", &["-ec", "x"]), "x");
        assert_eq!(text("dash", &["-o", "errexit", "-c", "y"]), "y");
        assert_eq!(text("bash", &["--norc", "-c", "z"]), "z");
        assert_eq!(text("bash", &["-c", "--", "z"]), "z");
    }

    #[test]
    fn positional_args_of_a_script_are_shown_too() {
        assert_eq!(
            text("sh", &["-c", "\"$@\"", "sh", "rm", "-rf", "my dir"]),
            "\"$@\"\nsh rm -rf 'my dir'"
        );
    }

    #[test]
    fn other_commands_are_quoted_and_joined() {
        assert_eq!(text("rm", &["-rf", "my dir"]), "rm -rf 'my dir'");
        assert_eq!(text("bash", &["script.sh"]), "bash script.sh");
        assert_eq!(text("bash", &["-x", "script.sh"]), "bash -x script.sh");
        assert_eq!(text("shx", &["-c", "a"]), "shx -c a");
        assert_eq!(text("sh", &["-c"]), "sh -c");
    }
}
