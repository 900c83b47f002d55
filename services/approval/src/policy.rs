//! The approval policy: classification plus yolo, sandbox, remembered approvals and asking.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::always::AlwaysStore;
use crate::approver::{ApprovalRequest, Approver, Decision, Rating};
use crate::classifier::{Classifier, Finding, Risk};
use crate::error::ApprovalError;
use crate::protected::{PathContext, PathScreen, ProtectedPaths};

/// How long the user has to answer before the request is denied.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a command was allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// No rule matched.
    Safe,
    /// Dangerous, allowed because the session runs in yolo mode.
    Yolo,
    /// Dangerous, allowed because the backend is sandboxed.
    Sandboxed,
    /// The user allowed this one call.
    Once,
    /// A rater judged it low risk (`approvals.mode: smart`).
    Rated(Rating),
    /// The user allowed this finding for the session (now or earlier).
    Session,
    /// The user allowed this finding always (now or earlier).
    Always {
        /// Set when the approval could not be saved: it holds for this process only.
        save_error: Option<String>,
    },
}

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeniedKind {
    /// A hardline rule matched; nothing can allow it.
    Hardline,
    /// The user was asked and said no.
    User,
    /// The user did not answer in time.
    Timeout,
    /// It needs approval and nobody can answer (`approvals.mode: deny`, no terminal).
    NoApprover,
}

/// A refused command, with a message meant for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Denied {
    /// Why it was refused.
    pub kind: DeniedKind,
    /// The rule that matched.
    pub finding: Finding,
    /// E.g. "denied by the user: recursive delete" (only when a user was asked).
    pub message: String,
}

/// Decides whether a command may run, asking the user through an [`Approver`] when needed.
#[derive(Debug)]
pub struct ApprovalPolicy {
    classifier: &'static Classifier,
    /// Switchable during a session (`/yolo`); nothing cached depends on it.
    yolo: AtomicBool,
    timeout: Duration,
    /// Session id → finding ids approved for that session.
    sessions: Mutex<HashMap<String, HashSet<String>>>,
    always: Mutex<AlwaysStore>,
    /// The profile's control files; changing them needs the user, whatever the mode.
    protected: ProtectedPaths,
    screen: PathScreen,
}

impl ApprovalPolicy {
    /// A policy using the built-in patterns whose "always" approvals live in `always_file` (a
    /// TOML file in the profile; missing means none yet). A corrupt file is an error naming it.
    pub fn load(always_file: impl Into<PathBuf>) -> Result<Self, ApprovalError> {
        Ok(Self {
            classifier: Classifier::builtin()?,
            yolo: AtomicBool::new(false),
            timeout: DEFAULT_TIMEOUT,
            sessions: Mutex::new(HashMap::new()),
            always: Mutex::new(AlwaysStore::load(always_file.into())?),
            protected: ProtectedPaths::default(),
            screen: PathScreen::default(),
        })
    }

    /// Protects `paths`: a command that changes one (or reads a read-protected one) needs the
    /// user's approval even in yolo mode and in a sandbox. `context` says how the command's
    /// paths are spelled (`~`, `$TALARIA_HOME`, the working directory).
    pub fn with_protected(mut self, paths: ProtectedPaths, context: &PathContext) -> Self {
        let paths = paths.with_resolved();
        self.screen = PathScreen::new(&paths, context);
        self.protected = paths;
        self
    }

    /// The protected paths (for file tools and sandboxes, which check paths, not commands).
    pub fn protected(&self) -> &ProtectedPaths {
        &self.protected
    }

    /// The risk of `command` under this policy: the classifier's, raised to
    /// [`Risk::Protected`] when it touches a protected path. `cwd` is where it runs (`None`: the
    /// working directory the policy was given).
    pub fn risk(&self, command: &str, cwd: Option<&Path>) -> Risk {
        self.raise_for_paths(self.classifier.classify(command), command, cwd)
    }

    /// Like [`risk`](Self::risk) for text that is not a shell command line (a script): only the
    /// lists apply, not bash's syntax.
    fn text_risk(&self, text: &str, cwd: Option<&Path>) -> Risk {
        self.raise_for_paths(self.classifier.classify_text(text), text, cwd)
    }

    fn raise_for_paths(&self, risk: Risk, command: &str, cwd: Option<&Path>) -> Risk {
        match risk {
            Risk::Hardline(finding) => Risk::Hardline(finding),
            Risk::Protected(finding) => Risk::Protected(finding),
            other => match self.screen.screen(command, cwd) {
                Some(finding) => Risk::Protected(finding),
                None => other,
            },
        }
    }

    /// In yolo mode dangerous commands run without asking; hardline ones are still refused.
    pub fn with_yolo(self, yolo: bool) -> Self {
        self.set_yolo(yolo);
        self
    }

    /// Turns yolo mode on or off from now on.
    pub fn set_yolo(&self, yolo: bool) {
        self.yolo.store(yolo, Ordering::Relaxed);
    }

    /// Whether yolo mode is on.
    pub fn yolo(&self) -> bool {
        self.yolo.load(Ordering::Relaxed)
    }

    /// How long to wait for an answer before denying (default [`DEFAULT_TIMEOUT`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The classifier the policy uses.
    pub fn classifier(&self) -> &Classifier {
        self.classifier
    }

    /// Whether the user allowed the finding `id` always (in an earlier session or this one).
    pub fn always_allows(&self, id: &str) -> bool {
        lock(&self.always).contains(id)
    }

    /// Forgets the session-scoped approvals of `session_id`.
    pub fn end_session(&self, session_id: &str) {
        lock(&self.sessions).remove(session_id);
    }

    /// Decides whether `tool` may run `command` in `session_id`. A `sandboxed` backend skips
    /// asking about dangerous commands; hardline commands are refused regardless; protected
    /// ones (the profile's controls) are asked about even in yolo mode and in a sandbox.
    pub async fn check(
        &self,
        session_id: &str,
        tool: &str,
        command: &str,
        sandboxed: bool,
        approver: &dyn Approver,
    ) -> Result<Approval, Denied> {
        self.check_as(session_id, tool, command, sandboxed, approver, None)
            .await
    }

    /// Like [`check`](Self::check), for text that needs approval even when no rule matches it
    /// (a script, which runs with the user's rights whatever it says): then the user judges
    /// `unmatched`. Text that matches a rule is decided as a command would be.
    pub async fn check_as(
        &self,
        session_id: &str,
        tool: &str,
        command: &str,
        sandboxed: bool,
        approver: &dyn Approver,
        unmatched: Option<Finding>,
    ) -> Result<Approval, Denied> {
        let check = CommandCheck {
            session_id,
            tool,
            command,
            cwd: None,
            sandboxed,
            unmatched,
        };
        self.check_command(check, approver).await
    }

    /// The general form of [`check`](Self::check) and [`check_as`](Self::check_as): also says
    /// where the command runs, so relative paths in it are read as the shell will.
    pub async fn check_command(
        &self,
        check: CommandCheck<'_>,
        approver: &dyn Approver,
    ) -> Result<Approval, Denied> {
        self.admit(check, approver)
            .await
            .map(|admitted| admitted.approval)
    }

    /// [`check_command`](Self::check_command), also saying which protected finding the user
    /// approved, if any: a sandbox keeping the controls read-only must then let the command
    /// do what was approved.
    pub async fn admit(
        &self,
        check: CommandCheck<'_>,
        approver: &dyn Approver,
    ) -> Result<Admitted, Denied> {
        // Text judged as a whole when no rule matches (a script) is not a shell line.
        let risk = if check.unmatched.is_some() {
            self.text_risk(check.command, check.cwd)
        } else {
            self.risk(check.command, check.cwd)
        };
        let (finding, protected) = match risk {
            Risk::Safe => match check.unmatched {
                Some(finding) => (finding, false),
                None => return Ok(Admitted::plain(Approval::Safe)),
            },
            Risk::Hardline(finding) => {
                let message = format!("blocked: {} (hardline: never allowed)", finding.description);
                return Err(denied(DeniedKind::Hardline, finding, message));
            }
            Risk::Protected(finding) => (finding, true),
            Risk::Dangerous(finding) => (finding, false),
        };
        // A protected command changes the controls yolo mode and sandboxes are part of: neither
        // skips the question, and no stored "always" answer applies.
        if !protected {
            if self.yolo() {
                return Ok(Admitted::plain(Approval::Yolo));
            }
            if check.sandboxed {
                return Ok(Admitted::plain(Approval::Sandboxed));
            }
            if lock(&self.always).contains(&finding.id) {
                return Ok(Admitted::plain(Approval::Always { save_error: None }));
            }
        }
        let approved = protected.then(|| finding.clone());
        let request = ApprovalRequest {
            command: check.command.to_owned(),
            finding,
            tool: check.tool.to_owned(),
            session_id: check.session_id.to_owned(),
            protected,
        };
        let approval = self.ask(request, protected, approver).await?;
        Ok(Admitted {
            approval,
            protected: approved,
        })
    }

    /// Decides whether `tool` (a file tool or plugin, which names paths rather than running
    /// commands) may `access` `path` (absolute, symlinks resolved by the caller). A path that
    /// is not protected for that access is [`Approval::Safe`]; a protected one is decided like
    /// a protected command: asked about even in yolo mode and in a sandbox, "always" holding
    /// for the session only, refused where nobody can answer.
    pub async fn check_path(
        &self,
        session_id: &str,
        tool: &str,
        path: &Path,
        access: PathAccess,
        approver: &dyn Approver,
    ) -> Result<Approval, Denied> {
        let Some(finding) = self.path_finding(path, access) else {
            return Ok(Approval::Safe);
        };
        let verb = match access {
            PathAccess::Read => "read",
            PathAccess::Write => "write",
        };
        let request = ApprovalRequest {
            command: format!("{tool}: {verb} {}", path.display()),
            finding,
            tool: tool.to_owned(),
            session_id: session_id.to_owned(),
            protected: true,
        };
        self.ask(request, true, approver).await
    }

    /// The finding for `access` to `path` if it is protected (same ids as for commands, so a
    /// session approval covers both routes).
    pub fn path_finding(&self, path: &Path, access: PathAccess) -> Option<Finding> {
        // Writing a secret is as bad as reading it: name it as a secret then.
        if let Some(secret) = self.protected.read_protected(path) {
            return Some(Finding {
                id: "protected-read".into(),
                description: format!(
                    "reads a protected secret of the Talaria profile ({})",
                    secret.display()
                ),
            });
        }
        let control = match access {
            PathAccess::Write => self.protected.write_protected(path)?,
            PathAccess::Read => return None,
        };
        Some(Finding {
            id: "protected-write".into(),
            description: format!(
                "changes a protected control file of the Talaria profile ({})",
                control.display()
            ),
        })
    }

    /// Asks about `request` (after remembered session answers); `protected` keeps an "always"
    /// answer to the session.
    async fn ask(
        &self,
        request: ApprovalRequest,
        protected: bool,
        approver: &dyn Approver,
    ) -> Result<Approval, Denied> {
        let session_id = request.session_id.clone();
        if lock(&self.sessions)
            .get(&session_id)
            .is_some_and(|ids| ids.contains(&request.finding.id))
        {
            return Ok(Approval::Session);
        }
        let answer = tokio::time::timeout(self.timeout, approver.ask(&request)).await;
        let finding = request.finding;
        match answer {
            Err(_elapsed) => {
                let message = format!(
                    "approval timed out after {}: {}",
                    format_duration(self.timeout),
                    finding.description
                );
                Err(denied(DeniedKind::Timeout, finding, message))
            }
            Ok(Decision::Deny) => {
                let message = format!("denied by the user: {}", finding.description);
                Err(denied(DeniedKind::User, finding, message))
            }
            Ok(Decision::Unavailable) => {
                let message = format!(
                    "refused: needs approval and nobody can answer \
                     (approvals.mode: deny / no terminal): {}",
                    finding.description
                );
                Err(denied(DeniedKind::NoApprover, finding, message))
            }
            Ok(Decision::Once) => Ok(Approval::Once),
            // Only a person approves the profile's controls; an approver that rated one
            // anyway is not listened to.
            Ok(Decision::Rated(_)) if protected => {
                let message = format!(
                    "refused: a protected command needs a person's approval, not a rating: {}",
                    finding.description
                );
                Err(denied(DeniedKind::NoApprover, finding, message))
            }
            Ok(Decision::Rated(rating)) => Ok(Approval::Rated(rating)),
            // "Always" for a protected command would let later sessions change the controls
            // unasked; it holds for this session only.
            Ok(Decision::Session | Decision::Always) if protected => {
                lock(&self.sessions)
                    .entry(session_id)
                    .or_default()
                    .insert(finding.id);
                Ok(Approval::Session)
            }
            Ok(Decision::Session) => {
                lock(&self.sessions)
                    .entry(session_id)
                    .or_default()
                    .insert(finding.id);
                Ok(Approval::Session)
            }
            Ok(Decision::Always) => {
                let saved = lock(&self.always).insert(&finding.id);
                Ok(Approval::Always {
                    save_error: saved.err().map(|e| e.to_string()),
                })
            }
        }
    }
}

/// A command allowed to run, and the protected finding the user approved for it (`None`
/// when it touches no control file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// Why it may run.
    pub approval: Approval,
    /// The protected finding the user approved (`protected-read` for a secret).
    pub protected: Option<Finding>,
}

impl Admitted {
    fn plain(approval: Approval) -> Self {
        Self {
            approval,
            protected: None,
        }
    }
}

/// A command to decide on, with where it runs.
#[derive(Debug, Clone, Default)]
pub struct CommandCheck<'a> {
    /// The session it belongs to (scopes "session" approvals).
    pub session_id: &'a str,
    /// The tool that wants to run it (shown to the user).
    pub tool: &'a str,
    /// The command text.
    pub command: &'a str,
    /// The directory it runs in (`None`: the working directory the policy was given).
    pub cwd: Option<&'a Path>,
    /// Whether the backend is a sandbox (dangerous commands then run unasked).
    pub sandboxed: bool,
    /// What the user judges when no rule matches (`None`: unmatched text is safe).
    pub unmatched: Option<Finding>,
}

/// How a tool means to use a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathAccess {
    /// Only reads it.
    Read,
    /// May change, create, replace or delete it.
    Write,
}

fn denied(kind: DeniedKind, finding: Finding, message: String) -> Denied {
    Denied {
        kind,
        finding,
        message,
    }
}

/// A poisoned lock only means another caller panicked mid-update of a set; the set is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// "60s" for whole seconds, Debug formatting ("1.5s", "250ms") otherwise.
fn format_duration(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{duration:?}")
    }
}
