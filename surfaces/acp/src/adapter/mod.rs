//! The adapter over the `agent-client-protocol` crate (pinned in the root
//! Cargo.toml: its API is rebuilt between majors). Only this module names its
//! types: it turns requests into [`crate::worker`] jobs and the surface's
//! [`Update`]s into `session/update` notifications; `client` makes the
//! requests a session's tools send to the editor (files, terminals);
//! `question` puts `clarify` questions to the user.

mod client;
mod images;
mod question;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    self as acp, AgentCapabilities, AuthenticateRequest, AuthenticateResponse, AvailableCommand,
    AvailableCommandInput, AvailableCommandsUpdate, CancelNotification, ContentBlock, ContentChunk,
    Cost, ElicitationCapabilities, EmbeddedResourceResource, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse,
    PermissionOption, PermissionOptionKind, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    PromptCapabilities, PromptRequest, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities,
    SessionInfo, SessionListCapabilities, SessionNotification, SessionResumeCapabilities,
    SessionUpdate, StopReason, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, UnstructuredCommandInput, UsageUpdate,
};
use agent_client_protocol::{Agent, Client, Error, Lines};
use futures::{SinkExt, StreamExt};
use talaria_kernel::CancellationToken;
use talaria_store::{ListQuery, SessionDb};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot::error::TryRecvError;
use tokio::sync::{mpsc, oneshot};

use crate::AcpOptions;
use crate::lines::bounded_lines;
use crate::types::{
    ClientMcp, EditorOffers, Outbound, PermissionAnswer, PermissionAsk, PlanStatus, SessionListing,
    Stop, ToolKind, Update,
};
use crate::worker::{self, Job, SessionSpec};

/// Largest prompt accepted, in bytes of text.
const MAX_PROMPT_BYTES: usize = 1024 * 1024;
/// How long a turn's response waits for its editor work to finish (a
/// cancelled command's kill and release).
const EDITOR_GRACE: Duration = Duration::from_secs(5);
/// How long the sessions get to end (plugins' session-end hooks, indexing) when the editor leaves.
const END_GRACE: Duration = Duration::from_secs(10);

/// One live session on the connection.
struct Session {
    jobs: mpsc::UnboundedSender<Job>,
    /// The running turn's token, while one runs.
    running: Mutex<Option<CancellationToken>>,
}

impl Session {
    /// Claims the session for a turn; `false` while another turn runs.
    fn begin(&self, cancel: CancellationToken) -> bool {
        match self.running.lock() {
            Ok(mut running) if running.is_none() => {
                *running = Some(cancel);
                true
            }
            _ => false,
        }
    }

    fn finish(&self) {
        if let Ok(mut running) = self.running.lock() {
            *running = None;
        }
    }

    fn cancel(&self) {
        if let Ok(running) = self.running.lock()
            && let Some(token) = running.as_ref()
        {
            token.cancel();
        }
    }
}

struct State {
    options: AcpOptions,
    /// What the editor offered in `initialize` for tools to use.
    offers: Mutex<EditorOffers>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Sessions' threads report here when their agent has ended.
    ended: Mutex<Vec<oneshot::Receiver<()>>>,
}

impl State {
    fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions.lock().ok()?.get(id).cloned()
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(serde_json::Value::String(message.into()))
}

fn internal(message: impl Into<String>) -> Error {
    Error::internal_error().data(serde_json::Value::String(message.into()))
}

/// Serves one editor over `reader`/`writer` until it closes its end.
pub async fn serve<R, W>(options: AcpOptions, reader: R, writer: W) -> Result<(), Error>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (frames_tx, frames_rx) = futures::channel::mpsc::unbounded::<String>();
    let incoming = bounded_lines(reader, options.max_line_bytes, frames_tx.clone());
    let outgoing = frames_tx.sink_map_err(std::io::Error::other);
    let state = Arc::new(State {
        options,
        offers: Mutex::new(EditorOffers::default()),
        sessions: Mutex::new(HashMap::new()),
        ended: Mutex::new(Vec::new()),
    });
    let connection = connection(state.clone(), Lines::new(outgoing, incoming));
    let (served, ()) = futures::join!(connection, write_frames(frames_rx, writer));
    // The editor left: dropping the sessions' job channels ends their agents.
    let ended = match (state.sessions.lock(), state.ended.lock()) {
        (Ok(mut sessions), Ok(mut ended)) => {
            sessions.clear();
            std::mem::take(&mut *ended)
        }
        _ => Vec::new(),
    };
    let all = futures::future::join_all(ended);
    let _ = tokio::time::timeout(END_GRACE, all).await;
    served
}

/// Writes each frame as one line; stops when every sender is gone.
async fn write_frames<W: AsyncWrite + Unpin>(
    mut frames: futures::channel::mpsc::UnboundedReceiver<String>,
    mut writer: W,
) {
    while let Some(frame) = frames.next().await {
        let written = async {
            writer.write_all(frame.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await
        };
        if let Err(error) = written.await {
            eprintln!("talaria acp: cannot write to the editor: {error}");
            return;
        }
    }
}

async fn connection(
    state: Arc<State>,
    transport: impl agent_client_protocol::ConnectTo<Agent> + 'static,
) -> Result<(), Error> {
    let s_init = state.clone();
    let s_new = state.clone();
    let s_load = state.clone();
    let s_resume = state.clone();
    let s_list = state.clone();
    let s_prompt = state.clone();
    let s_cancel = state;
    Agent
        .v1()
        .name("talaria")
        .on_receive_request(
            // Protocol v1 whatever the client asks for: the only version this side speaks
            // (a client that cannot speak it disconnects, as the protocol says).
            async move |request: InitializeRequest, responder, _cx| {
                let offered = &request.client_capabilities;
                if let Ok(mut offers) = s_init.offers.lock() {
                    *offers = EditorOffers {
                        files: offered.fs.read_text_file && offered.fs.write_text_file,
                        terminal: offered.terminal,
                        questions: offered
                            .elicitation
                            .as_ref()
                            .is_some_and(ElicitationCapabilities::supports_form),
                    };
                }
                responder.respond(initialize_response())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |_request: AuthenticateRequest, responder, _cx| {
                // No methods are advertised: the profile holds the model's credentials.
                responder.respond(AuthenticateResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let state = s_new.clone();
                let spec = match spec(&state, &request.cwd, &request.mcp_servers, None) {
                    Ok(spec) => spec,
                    Err(error) => return responder.respond_with_error(error),
                };
                cx.clone().spawn(async move {
                    match open(&state, spec, &cx).await {
                        Ok(id) => {
                            let _ = responder.respond(NewSessionResponse::new(id));
                        }
                        Err(error) => {
                            let _ = responder.respond_with_error(error);
                        }
                    }
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let state = s_load.clone();
                let id = request.session_id.0.to_string();
                let spec = match spec(&state, &request.cwd, &request.mcp_servers, Some(id.clone()))
                {
                    Ok(spec) => spec,
                    Err(error) => return responder.respond_with_error(error),
                };
                cx.clone().spawn(async move {
                    let outcome = async {
                        let id = open(&state, spec, &cx).await?;
                        let session = state
                            .session(&id)
                            .ok_or_else(|| internal("the session ended while loading"))?;
                        let (tx, rx) = oneshot::channel();
                        session
                            .jobs
                            .send(Job::Replay { ended: tx })
                            .map_err(|_| internal("the session ended while loading"))?;
                        // Answered after the history's updates (the protocol's order).
                        rx.await
                            .map_err(|_| internal("the session ended while loading"))?
                            .map_err(internal)?;
                        Ok::<_, Error>(())
                    };
                    let _ = match outcome.await {
                        Ok(()) => responder.respond(LoadSessionResponse::new()),
                        Err(error) => responder.respond_with_error(error),
                    };
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, cx| {
                let state = s_resume.clone();
                let id = request.session_id.0.to_string();
                let spec = match spec(&state, &request.cwd, &request.mcp_servers, Some(id)) {
                    Ok(spec) => spec,
                    Err(error) => return responder.respond_with_error(error),
                };
                cx.clone().spawn(async move {
                    let _ = match open(&state, spec, &cx).await {
                        Ok(_) => responder.respond(ResumeSessionResponse::new()),
                        Err(error) => responder.respond_with_error(error),
                    };
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| match list(
                &s_list,
                request.cwd.as_deref(),
            ) {
                Ok(listings) => responder.respond(ListSessionsResponse::new(
                    listings.into_iter().map(session_info).collect(),
                )),
                Err(error) => responder.respond_with_error(error),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                let id = request.session_id.0.to_string();
                let Some(session) = s_prompt.session(&id) else {
                    return responder.respond_with_error(
                        acp::Error::session_not_found(request.session_id).into(),
                    );
                };
                let text = prompt_text(&request.prompt);
                let blocks = images::image_blocks(&request.prompt);
                if text.trim().is_empty() && blocks.is_empty() {
                    return responder.respond_with_error(invalid(
                        "the prompt has no text or image (text, images, resource links and \
                         embedded text are accepted)",
                    ));
                }
                if text.len() > MAX_PROMPT_BYTES {
                    return responder.respond_with_error(invalid(format!(
                        "the prompt is {} bytes; the limit is {MAX_PROMPT_BYTES}",
                        text.len()
                    )));
                }
                // Decoding and scaling is CPU work: off the connection's task.
                let store = talaria_agent::image_store(&s_prompt.options.home);
                let prepared =
                    tokio::task::spawn_blocking(move || images::prepare(blocks, &store)).await;
                let images = match prepared {
                    Ok(Ok(images)) => images,
                    Ok(Err(message)) => return responder.respond_with_error(invalid(message)),
                    Err(_) => {
                        return responder
                            .respond_with_error(internal("preparing the images failed"));
                    }
                };
                let cancel = CancellationToken::new();
                if !session.begin(cancel.clone()) {
                    return responder.respond_with_error(invalid(
                        "this session is still answering a prompt; cancel it or wait",
                    ));
                }
                let (ended, result) = oneshot::channel();
                if session
                    .jobs
                    .send(Job::Prompt {
                        text,
                        images,
                        cancel,
                        ended,
                    })
                    .is_err()
                {
                    session.finish();
                    return responder.respond_with_error(internal("the session has ended"));
                }
                cx.spawn(async move {
                    let outcome = result.await;
                    session.finish();
                    let _ = match outcome {
                        Ok(Ok(stop)) => responder.respond(PromptResponse::new(stop_reason(stop))),
                        Ok(Err(message)) => responder.respond_with_error(internal(message)),
                        Err(_) => responder.respond_with_error(internal("the session has ended")),
                    };
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                if let Some(session) = s_cancel.session(&notification.session_id.0) {
                    session.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await
}

fn initialize_response() -> InitializeResponse {
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        // Images are attached to the message; embedded context is read as text.
        .prompt_capabilities(PromptCapabilities::new().embedded_context(true).image(true))
        .mcp_capabilities(McpCapabilities::new().http(true))
        .session_capabilities(
            SessionCapabilities::new()
                .list(SessionListCapabilities::new())
                .resume(SessionResumeCapabilities::new()),
        );
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .agent_info(Implementation::new("talaria", env!("CARGO_PKG_VERSION")).title("Talaria"))
}

/// A session's spec from a request's cwd and MCP servers.
fn spec(
    state: &State,
    cwd: &Path,
    servers: &[McpServer],
    resume: Option<String>,
) -> Result<SessionSpec, Error> {
    if !cwd.is_absolute() {
        return Err(invalid(format!(
            "cwd {} must be an absolute path",
            cwd.display()
        )));
    }
    let cwd = cwd
        .canonicalize()
        .ok()
        .filter(|path| path.is_dir())
        .ok_or_else(|| invalid(format!("cwd {} is not a directory", cwd.display())))?;
    let mcp = servers
        .iter()
        .map(client_mcp)
        .collect::<Result<Vec<_>, _>>()?;
    let editor_id = resume.clone();
    if let Some(id) = &editor_id
        && state.session(id).is_some()
    {
        return Err(invalid(format!(
            "session {id} is already open on this connection"
        )));
    }
    let resume = match resume {
        Some(id) => {
            let db = SessionDb::shared(state.options.home.session_db())
                .map_err(|e| internal(format!("cannot open the session store: {e}")))?;
            // Exact ids only: an editor names sessions it was given. The id stays the
            // editor's; the conversation goes on where compressions continued it.
            match db.resolve_id(&id, &talaria_agent::Principal::owner()) {
                Ok(found) if found == id => Some(
                    db.latest_continuation(&found)
                        .map_err(|e| internal(format!("cannot read the session store: {e}")))?,
                ),
                _ => return Err(acp::Error::session_not_found(id).into()),
            }
        }
        None => None,
    };
    Ok(SessionSpec {
        home: state.options.home.clone(),
        overrides: state.options.overrides.clone(),
        cwd,
        mcp,
        resume,
        editor_id,
        offers: state.offers.lock().map(|o| *o).unwrap_or_default(),
    })
}

fn client_mcp(server: &McpServer) -> Result<ClientMcp, Error> {
    match server {
        McpServer::Stdio(stdio) => Ok(ClientMcp::Stdio {
            name: stdio.name.clone(),
            command: stdio.command.clone(),
            args: stdio.args.clone(),
            env: stdio
                .env
                .iter()
                .map(|v| (v.name.clone(), v.value.clone()))
                .collect(),
        }),
        McpServer::Http(http) => Ok(ClientMcp::Http {
            name: http.name.clone(),
            url: http.url.clone(),
            headers: http
                .headers
                .iter()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect(),
        }),
        _ => Err(invalid(
            "only stdio and http MCP servers are supported (mcpCapabilities)",
        )),
    }
}

/// Starts a session and its update forwarder; registers it under its id.
async fn open(
    state: &Arc<State>,
    spec: SessionSpec,
    cx: &ConnectionTo<Client>,
) -> Result<String, Error> {
    let (out_tx, out_rx) = mpsc::unbounded_channel();
    let editor_id = spec.editor_id.clone();
    let forms = spec.offers.questions;
    let started = worker::start(spec, out_tx).await.map_err(internal)?;
    let id = editor_id.unwrap_or_else(|| started.session_id.clone());
    for notice in &started.notices {
        eprintln!("talaria acp: session {id}: {notice}");
    }
    let session = Arc::new(Session {
        jobs: started.jobs,
        running: Mutex::new(None),
    });
    if let Ok(mut sessions) = state.sessions.lock() {
        sessions.insert(id.clone(), session);
    }
    if let Ok(mut ended) = state.ended.lock() {
        ended.push(started.ended);
    }
    cx.spawn(forward(cx.clone(), id.clone(), forms, out_rx))?;
    Ok(id)
}

/// Sends a session's outbound items in order: updates as notifications,
/// questions as requests (each on a task of its own), turn ends to their waiter.
async fn forward(
    cx: ConnectionTo<Client>,
    id: String,
    forms: bool,
    mut out: mpsc::UnboundedReceiver<Outbound>,
) -> Result<(), Error> {
    // Editor work still finishing (a cancelled command being killed and
    // released): a turn's response waits for it.
    let mut editor_work: Vec<oneshot::Receiver<()>> = Vec::new();
    while let Some(item) = out.recv().await {
        match item {
            Outbound::Update(update) => {
                let notification = SessionNotification::new(id.clone(), session_update(update));
                if cx.send_notification(notification).is_err() {
                    break;
                }
            }
            Outbound::Permission(ask, reply) => {
                let request = permission_request(&id, &ask);
                let asker = cx.clone();
                let _ = cx.spawn(async move {
                    let answer = match asker.send_request(request).block_task().await {
                        Ok(response) => match response.outcome {
                            RequestPermissionOutcome::Selected(selected) => {
                                answer_for(&selected.option_id.0)
                            }
                            _ => PermissionAnswer::Cancelled,
                        },
                        Err(error) => {
                            eprintln!("talaria acp: the permission request failed: {error}");
                            PermissionAnswer::Cancelled
                        }
                    };
                    let _ = reply.send(answer);
                    Ok(())
                });
            }
            Outbound::Question(ask, reply) => {
                let _ = cx.spawn(question::serve(cx.clone(), id.clone(), ask, forms, reply));
            }
            Outbound::Editor(call) => {
                let (done, finished) = oneshot::channel();
                editor_work.retain_mut(|work| matches!(work.try_recv(), Err(TryRecvError::Empty)));
                editor_work.push(finished);
                let work = client::serve(cx.clone(), id.clone(), call);
                let _ = cx.spawn(async move {
                    work.await?;
                    let _ = done.send(());
                    Ok(())
                });
            }
            Outbound::TurnEnded(result, ended) => {
                let pending = futures::future::join_all(editor_work.drain(..));
                let _ = tokio::time::timeout(EDITOR_GRACE, pending).await;
                let _ = ended.send(result);
            }
        }
    }
    Ok(())
}

const ALLOW_ONCE: &str = "allow-once";
const ALLOW_SESSION: &str = "allow-session";
const REJECT: &str = "reject";

fn answer_for(option: &str) -> PermissionAnswer {
    match option {
        ALLOW_ONCE => PermissionAnswer::AllowOnce,
        ALLOW_SESSION => PermissionAnswer::AllowSession,
        REJECT => PermissionAnswer::Reject,
        _ => PermissionAnswer::Cancelled,
    }
}

fn permission_request(session: &str, ask: &PermissionAsk) -> RequestPermissionRequest {
    let id = ask
        .tool_call_id
        .clone()
        .unwrap_or_else(|| format!("approval-{}", ask.tool));
    let fields = ToolCallUpdateFields::new()
        .title(ask.title.clone())
        .content(vec![text_content(format!("```\n{}\n```", ask.command))]);
    let options = vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_SESSION,
            "Always allow (this session)",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
    ];
    RequestPermissionRequest::new(session.to_owned(), ToolCallUpdate::new(id, fields), options)
}

fn text_content(text: String) -> ToolCallContent {
    ToolCallContent::Content(acp::Content::new(ContentBlock::from(text)))
}

fn kind(kind: ToolKind) -> acp::ToolKind {
    match kind {
        ToolKind::Read => acp::ToolKind::Read,
        ToolKind::Edit => acp::ToolKind::Edit,
        ToolKind::Search => acp::ToolKind::Search,
        ToolKind::Execute => acp::ToolKind::Execute,
        ToolKind::Fetch => acp::ToolKind::Fetch,
        ToolKind::Think => acp::ToolKind::Think,
        ToolKind::Other => acp::ToolKind::Other,
    }
}

fn chunk(text: String) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text))
}

fn session_update(update: Update) -> SessionUpdate {
    match update {
        Update::UserText(text) => SessionUpdate::UserMessageChunk(chunk(text)),
        Update::AgentText(text) => SessionUpdate::AgentMessageChunk(chunk(text)),
        Update::Thought(text) => SessionUpdate::AgentThoughtChunk(chunk(text)),
        Update::ToolStarted(start) => {
            let content = start
                .diff
                .map(|diff| {
                    vec![ToolCallContent::Diff(
                        acp::Diff::new(diff.path, diff.new_text).old_text(diff.old_text),
                    )]
                })
                .unwrap_or_default();
            SessionUpdate::ToolCall(
                ToolCall::new(start.id, start.title)
                    .kind(kind(start.kind))
                    .status(ToolCallStatus::InProgress)
                    .locations(
                        start
                            .locations
                            .into_iter()
                            .map(ToolCallLocation::new)
                            .collect(),
                    )
                    .raw_input(start.raw_input)
                    .content(content),
            )
        }
        Update::ToolFinished { id, failed, text } => {
            let status = if failed {
                ToolCallStatus::Failed
            } else {
                ToolCallStatus::Completed
            };
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                id,
                ToolCallUpdateFields::new()
                    .status(status)
                    .content(vec![text_content(text)]),
            ))
        }
        Update::Plan(items) => SessionUpdate::Plan(acp::Plan::new(
            items
                .into_iter()
                .map(|item| {
                    let status = match item.status {
                        PlanStatus::Pending => PlanEntryStatus::Pending,
                        PlanStatus::InProgress => PlanEntryStatus::InProgress,
                        PlanStatus::Completed => PlanEntryStatus::Completed,
                    };
                    PlanEntry::new(item.content, PlanEntryPriority::Medium, status)
                })
                .collect(),
        )),
        Update::Commands(commands) => {
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
                commands
                    .into_iter()
                    .map(|command| {
                        let mut available =
                            AvailableCommand::new(command.name, command.description);
                        if let Some(hint) = command.hint {
                            available = available.input(AvailableCommandInput::Unstructured(
                                UnstructuredCommandInput::new(hint),
                            ));
                        }
                        available
                    })
                    .collect(),
            ))
        }
        Update::Usage {
            used,
            size,
            cost_usd,
        } => SessionUpdate::UsageUpdate(
            UsageUpdate::new(used, size).cost(Cost::new(cost_usd, "USD")),
        ),
    }
}

fn stop_reason(stop: Stop) -> StopReason {
    match stop {
        Stop::EndTurn => StopReason::EndTurn,
        Stop::Cancelled => StopReason::Cancelled,
        Stop::MaxTurnRequests => StopReason::MaxTurnRequests,
    }
}

/// The prompt's text: text blocks, resource links as `[name](uri)`, embedded text resources in
/// fences. Images are read by [`images::image_blocks`]; audio is not accepted.
fn prompt_text(blocks: &[ContentBlock]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.clone()),
            ContentBlock::ResourceLink(link) => Some(format!("[{}]({})", link.name, link.uri)),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(text) => {
                    Some(format!("{}:\n```\n{}\n```", text.uri, text.text))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    parts.join("\n")
}

fn list(state: &State, cwd: Option<&Path>) -> Result<Vec<SessionListing>, Error> {
    let db = SessionDb::shared(state.options.home.session_db())
        .map_err(|e| internal(format!("cannot open the session store: {e}")))?;
    let query = ListQuery {
        limit: 100,
        cwd: cwd.map(|p| p.to_string_lossy().into_owned()),
        source: None,
        viewer: talaria_agent::Principal::owner(),
    };
    let rows = db
        .list(&query)
        .map_err(|e| internal(format!("cannot list sessions: {e}")))?;
    Ok(rows
        .into_iter()
        .map(|row| SessionListing {
            id: row.id,
            cwd: row.cwd.map(PathBuf::from).unwrap_or_default(),
            title: row.title.or(row.preview),
            updated_at: u64::try_from(row.updated_at).ok().map(|ms| {
                let at = std::time::UNIX_EPOCH + Duration::from_millis(ms);
                humantime::format_rfc3339_seconds(at).to_string()
            }),
        })
        .collect())
}

fn session_info(listing: SessionListing) -> SessionInfo {
    SessionInfo::new(listing.id, listing.cwd)
        .title(listing.title)
        .updated_at(listing.updated_at)
}
