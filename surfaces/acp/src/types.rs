//! The surface's own small vocabulary. The adapter (`adapter.rs`) is the only
//! module that knows the `agent-client-protocol` crate; everything else speaks
//! these types, so a new major of that crate changes one file.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

/// What kind of work a tool call does, as an editor groups them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Read,
    Edit,
    Search,
    Execute,
    Fetch,
    Think,
    Other,
}

/// A file edit to show as a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    pub path: PathBuf,
    /// The file before (`None`: a new file).
    pub old_text: Option<String>,
    pub new_text: String,
}

/// One entry of the agent's plan (the `todo` tool's list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanItem {
    pub content: String,
    pub status: PlanStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

/// A slash command the session offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    pub name: String,
    pub description: String,
    /// What to type after the name, when it takes arguments.
    pub hint: Option<String>,
}

/// A started tool call, as the editor shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStart {
    pub id: String,
    pub title: String,
    pub kind: ToolKind,
    pub locations: Vec<PathBuf>,
    pub raw_input: Option<Value>,
    pub diff: Option<Diff>,
}

/// Something the session tells the editor (a `session/update`).
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// The user's message (replayed by `session/load`).
    UserText(String),
    /// Visible answer text.
    AgentText(String),
    /// Reasoning text.
    Thought(String),
    ToolStarted(ToolStart),
    ToolFinished {
        id: String,
        failed: bool,
        text: String,
    },
    Plan(Vec<PlanItem>),
    Commands(Vec<CommandInfo>),
    /// Tokens in the context after the last model call, the window, and the session's cost.
    Usage {
        used: u64,
        size: u64,
        cost_usd: f64,
    },
}

/// A question for the user before a tool runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionAsk {
    /// The tool call it is about, when known.
    pub tool_call_id: Option<String>,
    /// The tool that wants to run.
    pub tool: String,
    /// One line: why it needs approval.
    pub title: String,
    /// The command or text as the model wrote it.
    pub command: String,
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionAnswer {
    AllowOnce,
    /// "Always" in the editor: remembered for the rest of this session.
    AllowSession,
    Reject,
    /// The turn was cancelled or the editor could not ask.
    Cancelled,
}

/// A `clarify` question for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionAsk {
    /// The `clarify` tool call it belongs to, when known.
    pub tool_call_id: Option<String>,
    pub question: String,
    /// 0 to 4 answers to pick from.
    pub choices: Vec<String>,
}

/// The user's answer to a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionReply {
    /// A picked choice's text, or the user's own words.
    Answered(String),
    /// The user dismissed it.
    Declined,
    /// The editor could not ask.
    Failed(String),
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    EndTurn,
    Cancelled,
    /// A budget (iterations, tokens, cost) ran out.
    MaxTurnRequests,
}

/// What the editor offered in `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EditorOffers {
    /// Both `fs/read_text_file` and `fs/write_text_file`.
    pub files: bool,
    /// The `terminal/*` methods.
    pub terminal: bool,
    /// Form elicitation (`elicitation/create`): questions answered in the
    /// user's own words. Without it only choices can be offered (as a
    /// `session/request_permission`).
    pub questions: bool,
}

/// A command to run in the editor's terminal (already approved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalRun {
    /// The tool call it belongs to, when known: the editor shows the terminal there.
    pub tool_call_id: Option<String>,
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// Most output bytes the editor keeps (it drops the oldest beyond).
    pub output_limit: u64,
    /// Killed when it passes.
    pub timeout: Duration,
}

/// How a terminal command ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TerminalEnd {
    /// None when killed (by a signal, or for the timeout).
    pub exit_code: Option<i32>,
    /// Combined stdout and stderr, as the terminal kept it.
    pub output: String,
    /// The editor dropped output beyond its limit.
    pub truncated: bool,
    pub timed_out: bool,
}

/// Work done by the editor for a tool, offered in `initialize`.
#[derive(Debug)]
pub enum EditorCall {
    Read {
        path: PathBuf,
        reply: oneshot::Sender<Result<String, String>>,
    },
    Write {
        path: PathBuf,
        content: String,
        reply: oneshot::Sender<Result<(), String>>,
    },
    /// Dropping `reply`'s receiver (a cancelled tool) kills the command.
    Run {
        run: TerminalRun,
        reply: oneshot::Sender<Result<TerminalEnd, String>>,
    },
}

/// What the session asks the connection to do, in order.
#[derive(Debug)]
pub enum Outbound {
    Update(Update),
    Permission(PermissionAsk, oneshot::Sender<PermissionAnswer>),
    /// Dropping the reply's receiver (a cancelled tool) gives the question up.
    Question(QuestionAsk, oneshot::Sender<QuestionReply>),
    Editor(EditorCall),
    /// The turn is over: every update before this was sent first.
    TurnEnded(Result<Stop, String>, oneshot::Sender<Result<Stop, String>>),
}

/// An MCP server the editor passes with `session/new` or `session/load`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMcp {
    Stdio {
        name: String,
        command: PathBuf,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        name: String,
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// A stored session, for `session/list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionListing {
    pub id: String,
    pub cwd: PathBuf,
    pub title: Option<String>,
    /// RFC 3339.
    pub updated_at: Option<String>,
}
