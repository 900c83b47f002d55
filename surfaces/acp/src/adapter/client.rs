//! Requests a session's tools make of the editor, when it offered them in
//! `initialize`: `fs/read_text_file`, `fs/write_text_file`, and a command's
//! whole life in a terminal (`terminal/create`, `wait_for_exit`, `output`,
//! `kill`, `release`), shown in the tool call that runs it.

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReadTextFileRequest,
    ReleaseTerminalRequest, SessionNotification, SessionUpdate, Terminal, TerminalId,
    TerminalOutputRequest, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
    WaitForTerminalExitRequest, WriteTextFileRequest,
};
use agent_client_protocol::{Client, Error};

use crate::types::{EditorCall, TerminalEnd, TerminalRun};

/// Does `call` with the editor and sends back what came of it.
pub(super) async fn serve(
    cx: ConnectionTo<Client>,
    session: String,
    call: EditorCall,
) -> Result<(), Error> {
    match call {
        EditorCall::Read { path, reply } => {
            let request = ReadTextFileRequest::new(session, path);
            let answer = cx.send_request(request).block_task().await;
            let _ = reply.send(answer.map(|r| r.content).map_err(|e| message(&e)));
        }
        EditorCall::Write {
            path,
            content,
            reply,
        } => {
            let request = WriteTextFileRequest::new(session, path, content);
            let answer = cx.send_request(request).block_task().await;
            let _ = reply.send(answer.map(|_| ()).map_err(|e| message(&e)));
        }
        EditorCall::Run { run, mut reply } => {
            let terminal = match create(&cx, &session, &run).await {
                Ok(terminal) => terminal,
                Err(error) => {
                    let _ = reply.send(Err(error));
                    return Ok(());
                }
            };
            let wait = cx
                .send_request(WaitForTerminalExitRequest::new(
                    session.clone(),
                    terminal.clone(),
                ))
                .block_task();
            let waited = tokio::select! {
                waited = tokio::time::timeout(run.timeout, wait) => Some(waited),
                // The tool was cancelled: the command must not outlive it.
                () = reply.closed() => None,
            };
            let end = match waited {
                Some(Ok(Ok(_exited))) => output(&cx, &session, &terminal, false).await,
                Some(Ok(Err(error))) => Err(message(&error)),
                Some(Err(_elapsed)) => {
                    kill(&cx, &session, &terminal).await;
                    output(&cx, &session, &terminal, true).await
                }
                None => {
                    kill(&cx, &session, &terminal).await;
                    Err("cancelled".to_owned())
                }
            };
            let release = ReleaseTerminalRequest::new(session, terminal);
            if let Err(error) = cx.send_request(release).block_task().await {
                eprintln!("talaria acp: releasing a terminal failed: {error}");
            }
            let _ = reply.send(end);
        }
    }
    Ok(())
}

/// The editor's error as one line for the tool's result.
fn message(error: &Error) -> String {
    match &error.data {
        Some(serde_json::Value::String(data)) => format!("{} ({data})", error.message),
        Some(data) => format!("{} ({data})", error.message),
        None => error.message.clone(),
    }
}

/// Starts the command and shows its terminal in its tool call.
async fn create(
    cx: &ConnectionTo<Client>,
    session: &str,
    run: &TerminalRun,
) -> Result<TerminalId, String> {
    let mut request = CreateTerminalRequest::new(session.to_owned(), run.program.clone())
        .args(run.args.clone())
        .env(
            run.env
                .iter()
                .map(|(name, value)| EnvVariable::new(name.clone(), value.clone()))
                .collect(),
        );
    request.cwd = Some(run.cwd.clone());
    request.output_byte_limit = Some(run.output_limit);
    let created = cx
        .send_request(request)
        .block_task()
        .await
        .map_err(|e| message(&e))?;
    let terminal = created.terminal_id;
    if let Some(call) = &run.tool_call_id {
        let fields = ToolCallUpdateFields::new().content(vec![ToolCallContent::Terminal(
            Terminal::new(terminal.clone()),
        )]);
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call.clone(), fields));
        let _ = cx.send_notification(SessionNotification::new(session.to_owned(), update));
    }
    Ok(terminal)
}

async fn kill(cx: &ConnectionTo<Client>, session: &str, terminal: &TerminalId) {
    let request = KillTerminalRequest::new(session.to_owned(), terminal.clone());
    if let Err(error) = cx.send_request(request).block_task().await {
        eprintln!("talaria acp: killing a terminal failed: {error}");
    }
}

/// What the terminal shows and how the command ended.
async fn output(
    cx: &ConnectionTo<Client>,
    session: &str,
    terminal: &TerminalId,
    timed_out: bool,
) -> Result<TerminalEnd, String> {
    let request = TerminalOutputRequest::new(session.to_owned(), terminal.clone());
    let shown = cx
        .send_request(request)
        .block_task()
        .await
        .map_err(|e| message(&e))?;
    let exit_code = shown
        .exit_status
        .and_then(|status| status.exit_code)
        .filter(|_| !timed_out)
        .map(|code| i32::try_from(code).unwrap_or(i32::MAX));
    Ok(TerminalEnd {
        exit_code,
        output: shown.output,
        truncated: shown.truncated,
        timed_out,
    })
}
