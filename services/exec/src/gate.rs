//! The approval gate: every command a tool runs is classified, approved when
//! needed, and only then started on the backend.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use talaria_approval::{
    Admitted, Approval, ApprovalPolicy, ApprovalRequest, Approver, CommandCheck, Decision, Finding,
};
use tokio_util::sync::CancellationToken;

use crate::backend::{Backend, CwdKind};
use crate::confine::{Confinement, Controls};
use crate::runner::run;
use crate::workspace::place;
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
    /// The session's working directory. A command whose working directory
    /// is outside it is not treated as sandboxed and always needs approval
    /// (a sandbox binds the command's directory writable). `None`: the
    /// caller picked the directory itself and nothing is checked.
    pub workspace: Option<PathBuf>,
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
            workspace: None,
        }
    }

    /// Confines commands of this origin to `workspace` (see [`Self::workspace`]).
    pub fn with_workspace(mut self, workspace: impl Into<PathBuf>) -> Self {
        self.workspace = Some(workspace.into());
        self
    }
}

/// What the gate decided for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admission {
    /// Why it may run.
    pub(crate) approval: Approval,
    /// Whether it runs sandboxed and inside the session's working directory,
    /// so text later written to its stdin may skip asking like a command.
    pub(crate) sandboxed: bool,
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

/// Shows the user where a command outside the workspace would run, whatever
/// finding they are asked about.
struct ShowWhere<'a> {
    inner: &'a dyn Approver,
    where_: &'a str,
}

#[async_trait]
impl Approver for ShowWhere<'_> {
    async fn ask(&self, request: &ApprovalRequest) -> Decision {
        let mut request = request.clone();
        if !request.finding.description.contains(self.where_) {
            request.finding.description =
                format!("{} ({})", request.finding.description, self.where_);
        }
        self.inner.ask(&request).await
    }
}

/// Programs that run what they read on stdin as code (by their file name;
/// version suffixes like `python3.12` are ignored).
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "ash",
    "csh",
    "tcsh",
    "fish",
    "busybox",
    "python",
    "pypy",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "irb",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "expect",
    "psql",
    "sqlite",
    "mysql",
    "mariadb",
    "r",
    "rscript",
    "julia",
    "ghci",
    "guile",
    "racket",
    "sbcl",
    "pwsh",
    "nu",
    "xonsh",
    "osascript",
    "env",
    "xargs",
    "sudo",
    "doas",
    "su",
    "ssh",
];

/// Whether `request`'s stdin may be run as code: some word of its command
/// line names a shell or interpreter (`env bash`, `nice python3`…).
fn runs_its_stdin(request: &ExecRequest) -> bool {
    std::iter::once(&request.program)
        .chain(&request.args)
        .any(|word| is_interpreter(word))
}

/// Whether `word` (a program name or path) names a shell or interpreter.
fn is_interpreter(word: &str) -> bool {
    let Some(name) = Path::new(word).file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let name = name
        .to_ascii_lowercase()
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
        .to_owned();
    INTERPRETERS.contains(&name.as_str())
}

/// How much of the confinement's protection a command keeps: what the user approved of the
/// profile's controls (a change, or reading a secret), it may do.
fn controls_for(admitted: &Admitted) -> Controls {
    match &admitted.protected {
        None => Controls::Protected,
        Some(finding) if finding.id == PROTECTED_READ => Controls::Open,
        Some(_) => Controls::Writable,
    }
}

/// The finding id of reading a protected secret (`talaria-approval`'s).
const PROTECTED_READ: &str = "protected-read";

/// The [`Executor`] tools get: checks each command with the approval policy
/// (asking the surface's approver when needed), then runs it on the backend.
pub struct GatedExecutor {
    backend: Arc<dyn Backend>,
    policy: Arc<ApprovalPolicy>,
    approver: Arc<dyn Approver>,
    confinement: Confinement,
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
            confinement: Confinement::new(),
        }
    }

    /// Records what processes the agent starts on this machine outside the backend (MCP
    /// servers, the browser) may not touch; the backend's own commands are confined by the
    /// backend, which is given the same.
    pub fn with_confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = confinement;
        self
    }

    /// See [`with_confinement`](Self::with_confinement).
    pub fn confinement(&self) -> &Confinement {
        &self.confinement
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
    ///
    /// When `origin` has a workspace, `request.cwd` is first resolved (and
    /// replaced by the resolved directory, which the command must then run
    /// in); a directory outside the workspace makes the command need
    /// approval whatever it is, with the directory named, even on a sandbox.
    /// Stdin given to a shell or interpreter is screened with the command.
    pub async fn approve(
        &self,
        request: &mut ExecRequest,
        origin: &ExecOrigin,
    ) -> Result<Approval, ExecError> {
        Ok(self.admit(request, origin).await?.approval)
    }

    /// [`approve`](Self::approve), also saying whether the request counts as sandboxed.
    pub(crate) async fn admit(
        &self,
        request: &mut ExecRequest,
        origin: &ExecOrigin,
    ) -> Result<Admission, ExecError> {
        let mut text = command_text(request);
        if let Some(stdin) = request.stdin.as_deref().filter(|_| runs_its_stdin(request)) {
            text.push('\n');
            text.push_str(&String::from_utf8_lossy(stdin));
        }
        let outside = match &origin.workspace {
            Some(workspace) => {
                let placed = place(&request.cwd, workspace, self.backend.cwd_kind())?;
                request.cwd = placed.cwd;
                placed.outside
            }
            None => None,
        };
        let cwd = self.screen_cwd(&request.cwd);
        let Some(workspace) = outside else {
            let sandboxed = self.backend.sandboxed();
            let check = CommandCheck {
                session_id: &origin.session_id,
                tool: &origin.tool,
                command: &text,
                cwd: cwd.as_deref(),
                sandboxed,
                unmatched: None,
            };
            let admitted = self
                .policy
                .admit(check, self.approver.as_ref())
                .await
                .map_err(|denied| ExecError::Denied(denied.message))?;
            request.controls = controls_for(&admitted);
            return Ok(Admission {
                approval: admitted.approval,
                sandboxed,
            });
        };
        let dir = request.cwd.display().to_string();
        let where_ = format!(
            "runs in {dir}, outside the session's working directory {}",
            workspace.display()
        );
        // Text no rule matches is judged as running there; its id names the
        // directory, so approving one directory approves no other.
        let unmatched = Finding {
            id: format!("outside-workdir:{dir}"),
            description: where_.clone(),
        };
        let approver = ShowWhere {
            inner: self.approver.as_ref(),
            where_: &where_,
        };
        let check = CommandCheck {
            session_id: &origin.session_id,
            tool: &origin.tool,
            command: &text,
            cwd: cwd.as_deref(),
            sandboxed: false,
            unmatched: Some(unmatched),
        };
        let admitted = self
            .policy
            .admit(check, &approver)
            .await
            .map_err(|denied| {
                if denied.message.contains(&where_) {
                    ExecError::Denied(denied.message)
                } else {
                    ExecError::Denied(format!("{} ({where_})", denied.message))
                }
            })?;
        request.controls = controls_for(&admitted);
        Ok(Admission {
            approval: admitted.approval,
            sandboxed: false,
        })
    }

    /// The approver the gate asks (file tools and plugins ask through it too).
    pub fn approver(&self) -> &Arc<dyn Approver> {
        &self.approver
    }

    /// The directory relative paths in a command for `cwd` are read against
    /// when screening for protected paths: a host directory, resolved when it
    /// can be. `None` (the policy's own working directory) for other backends,
    /// whose paths are not this machine's.
    pub(crate) fn screen_cwd(&self, cwd: &Path) -> Option<PathBuf> {
        (self.backend.cwd_kind() == CwdKind::Host && cwd.is_absolute())
            .then(|| cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned()))
    }

    /// Screens `text` (a command, or input for a running program) like a
    /// command for `origin`, run in `cwd` (relative paths in it are read
    /// against it); `sandboxed` lets dangerous text run without asking. With
    /// `unmatched`, the text is not a shell line (a script, input for a
    /// program that is not a shell): only the lists apply, and text no rule
    /// matches still needs approval of that finding outside a sandbox or yolo
    /// mode.
    pub(crate) async fn screen(
        &self,
        text: &str,
        origin: &ExecOrigin,
        cwd: Option<&Path>,
        sandboxed: bool,
        unmatched: Option<Finding>,
    ) -> Result<Approval, ExecError> {
        let check = CommandCheck {
            session_id: &origin.session_id,
            tool: &origin.tool,
            command: text,
            cwd,
            sandboxed,
            unmatched,
        };
        self.policy
            .check_command(check, self.approver.as_ref())
            .await
            .map_err(|denied| ExecError::Denied(denied.message))
    }

    /// Decides whether code that runs with the user's rights whatever it says (a script) may
    /// run for `origin`: `text` is screened like a command and, when no rule matches it, still
    /// needs the user's approval of `finding` outside a sandbox or yolo mode (the interpreter's
    /// command line alone would classify as safe). Relative paths in it are
    /// read against `origin`'s workspace (where scripts run), when it has one.
    pub async fn approve_code(
        &self,
        text: &str,
        origin: &ExecOrigin,
        finding: Finding,
    ) -> Result<Approval, ExecError> {
        self.approve_text(text, origin, finding, self.backend.sandboxed())
            .await
    }

    /// [`approve_code`](Self::approve_code) for something that runs elsewhere than the
    /// backend (an MCP server's tool): `sandboxed` says whether that place is a sandbox.
    pub async fn approve_text(
        &self,
        text: &str,
        origin: &ExecOrigin,
        finding: Finding,
        sandboxed: bool,
    ) -> Result<Approval, ExecError> {
        let cwd = origin
            .workspace
            .as_deref()
            .and_then(|dir| self.screen_cwd(dir));
        self.screen(text, origin, cwd.as_deref(), sandboxed, Some(finding))
            .await
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
        mut request: ExecRequest,
        origin: &ExecOrigin,
        cancel: &CancellationToken,
    ) -> Result<ExecOutput, ExecError> {
        // The user may take a while to answer; a cancel must not wait for them.
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ExecError::Cancelled),
            approval = self.admit(&mut request, origin) => approval?,
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
