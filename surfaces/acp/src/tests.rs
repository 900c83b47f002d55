//! In-process tests: the protocol crate's client side drives the server over
//! `tokio::io::duplex` against the scripted model.

use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, ListSessionsRequest, LoadSessionRequest,
    NewSessionRequest, PermissionOptionKind, PromptRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, ResumeSessionRequest,
    SelectedPermissionOutcome, SessionNotification, SessionUpdate, StopReason, ToolCallStatus,
    ToolKind,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use talaria_profile::{Overrides, ProfileHome};
use talaria_testkit::{Script, ScriptedServer, Step, ToolCall};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::AcpOptions;

/// What the client saw.
#[derive(Default)]
struct Seen {
    updates: Vec<SessionUpdate>,
    permissions: Vec<RequestPermissionRequest>,
}

type Shared = Arc<Mutex<Seen>>;

fn options(home: &Path, model: &ScriptedServer) -> AcpOptions {
    std::fs::write(
        home.join("config.yaml"),
        "retry:\n  base_delay_ms: 20\n  max_delay_ms: 100\n",
    )
    .unwrap();
    AcpOptions::new(
        ProfileHome::at(home),
        Overrides {
            provider: Some("openai".into()),
            model: Some("test-model".into()),
            base_url: Some(model.openai_base_url()),
        },
    )
}

/// Runs `body` as a client of a fresh server; permission requests are answered with `answer`.
async fn session<T>(
    options: AcpOptions,
    answer: PermissionOptionKind,
    body: impl AsyncFnOnce(ConnectionTo<Agent>, Shared) -> Result<T, agent_client_protocol::Error>,
) -> (T, Shared) {
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let (client_read, client_write) = tokio::io::split(client_end);
    let seen = Shared::default();
    let server = crate::serve(options, server_read, server_write);
    let (on_update, on_ask) = (seen.clone(), seen.clone());
    let client = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                on_update.lock().unwrap().updates.push(notification.update);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let option = request
                    .options
                    .iter()
                    .find(|o| o.kind == answer)
                    .map(|o| o.option_id.clone())
                    .unwrap();
                on_ask.lock().unwrap().permissions.push(request);
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            ByteStreams::new(client_write.compat_write(), client_read.compat()),
            {
                let seen = seen.clone();
                async move |cx| body(cx, seen).await
            },
        );
    let (served, result) = tokio::join!(server, client);
    served.unwrap();
    (result.unwrap(), seen)
}

async fn start(
    cx: &ConnectionTo<Agent>,
    cwd: &Path,
) -> Result<String, agent_client_protocol::Error> {
    cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await?;
    let session = cx
        .send_request(NewSessionRequest::new(cwd))
        .block_task()
        .await?;
    Ok(session.session_id.0.to_string())
}

async fn prompt(
    cx: &ConnectionTo<Agent>,
    session: &str,
    text: &str,
) -> Result<StopReason, agent_client_protocol::Error> {
    let response = cx
        .send_request(PromptRequest::new(
            session.to_owned(),
            vec![ContentBlock::from(text.to_owned())],
        ))
        .block_task()
        .await?;
    Ok(response.stop_reason)
}

fn agent_text(seen: &Shared) -> String {
    seen.lock()
        .unwrap()
        .updates
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_its_answer_and_a_session_loads_back() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = ScriptedServer::spawn(Script::new([Step::text_with_reasoning(
        "Four.",
        "Two and two.",
    )]))
    .unwrap();
    let ((id, stop), seen) = session(
        options(home.path(), &model),
        PermissionOptionKind::AllowOnce,
        async |cx, _| {
            let id = start(&cx, work.path()).await?;
            let stop = prompt(&cx, &id, "2+2?").await?;
            Ok((id, stop))
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(agent_text(&seen), "Four.");
    let updates = seen.lock().unwrap().updates.clone();
    assert!(matches!(
        updates[0],
        SessionUpdate::AvailableCommandsUpdate(_)
    ));
    assert!(
        updates
            .iter()
            .any(|u| matches!(u, SessionUpdate::AgentThoughtChunk(_)))
    );
    assert!(
        updates
            .iter()
            .any(|u| matches!(u, SessionUpdate::UsageUpdate(_)))
    );

    // Loading it on a new connection replays it, before the response.
    let ((), seen) = session(
        options(home.path(), &model),
        PermissionOptionKind::AllowOnce,
        async |cx, seen| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            cx.send_request(LoadSessionRequest::new(id.clone(), work.path()))
                .block_task()
                .await?;
            let replayed = seen.lock().unwrap().updates.len();
            assert!(replayed >= 3, "the history came before the response");
            Ok(())
        },
    )
    .await;
    let users = seen
        .lock()
        .unwrap()
        .updates
        .iter()
        .filter(|u| matches!(u, SessionUpdate::UserMessageChunk(_)))
        .count();
    assert_eq!(users, 1);
    assert_eq!(agent_text(&seen), "Four.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_asks_permission_and_a_rejection_keeps_the_files() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "execute_code",
            r#"{"code": "open('made.txt', 'w').write('x')"}"#,
        )]),
        Step::text("I was not allowed to."),
    ]))
    .unwrap();
    let (stop, seen) = session(
        options(home.path(), &model),
        PermissionOptionKind::RejectOnce,
        async |cx, _| {
            let id = start(&cx, work.path()).await?;
            prompt(&cx, &id, "clean up").await
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        !work.path().join("made.txt").exists(),
        "rejected: it did not run"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.permissions.len(), 1);
    let call = seen
        .updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call.kind, ToolKind::Execute);
    assert_eq!(
        seen.permissions[0].tool_call.tool_call_id,
        call.tool_call_id
    );
    let finished = seen
        .updates
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCallUpdate(update) => Some(update.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(finished.tool_call_id, call.tool_call_id);
    assert_eq!(finished.fields.status, Some(ToolCallStatus::Failed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_tool_and_the_turn_says_cancelled() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = ScriptedServer::spawn(Script::new([
        Step::tool_calls([ToolCall::new(
            "execute_code",
            r#"{"code": "import time\ntime.sleep(30)"}"#,
        )]),
        Step::text("not reached"),
    ]))
    .unwrap();
    let (stop, _) = session(
        options(home.path(), &model),
        PermissionOptionKind::AllowOnce,
        async |cx, seen| {
            let id = start(&cx, work.path()).await?;
            let turn = cx
                .send_request(PromptRequest::new(
                    id.clone(),
                    vec![ContentBlock::from("wait".to_owned())],
                ))
                .block_task();
            let cancel = async {
                // Once the tool runs, cancel.
                loop {
                    let started = seen
                        .lock()
                        .unwrap()
                        .updates
                        .iter()
                        .any(|u| matches!(u, SessionUpdate::ToolCall(_)));
                    if started {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                cx.send_notification(CancelNotification::new(id.clone()))
            };
            let (response, sent) = tokio::join!(turn, cancel);
            sent?;
            Ok(response?.stop_reason)
        },
    )
    .await;
    assert_eq!(stop, StopReason::Cancelled);
    assert_eq!(model.remaining_steps(), 1, "no model call after the cancel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slash_command_runs_inside_a_prompt() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = ScriptedServer::spawn(Script::new([])).unwrap();
    let (stop, seen) = session(
        options(home.path(), &model),
        PermissionOptionKind::AllowOnce,
        async |cx, _| {
            let id = start(&cx, work.path()).await?;
            prompt(&cx, &id, "/tools").await
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    let text = agent_text(&seen);
    assert!(text.contains("todo"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_session_continues_the_conversation_and_is_listed() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = ScriptedServer::spawn(Script::new([
        Step::text("Noted: the code word is heron."),
        Step::text("It was heron."),
    ]))
    .unwrap();
    let (id, _) = session(
        options(home.path(), &model),
        PermissionOptionKind::AllowOnce,
        async |cx, _| {
            let id = start(&cx, work.path()).await?;
            prompt(&cx, &id, "remember the code word heron").await?;
            Ok(id)
        },
    )
    .await;
    let ((stop, listed), seen) = session(
        options(home.path(), &model),
        PermissionOptionKind::AllowOnce,
        async |cx, _| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let listed = cx
                .send_request(ListSessionsRequest::new().cwd(work.path().canonicalize().unwrap()))
                .block_task()
                .await?;
            cx.send_request(ResumeSessionRequest::new(id.clone(), work.path()))
                .block_task()
                .await?;
            Ok((prompt(&cx, &id, "what was it?").await?, listed))
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(agent_text(&seen), "It was heron.");
    let ids: Vec<String> = listed
        .sessions
        .iter()
        .map(|s| s.session_id.0.to_string())
        .collect();
    assert_eq!(ids, [id]);
    // No replay on resume, and the model saw the first turn.
    assert!(
        !seen
            .lock()
            .unwrap()
            .updates
            .iter()
            .any(|u| matches!(u, SessionUpdate::UserMessageChunk(_)))
    );
    let second = model.requests()[1].raw_body.clone();
    assert!(second.contains("remember the code word heron"), "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loading_a_compressed_session_goes_on_from_its_continuation_under_the_same_id() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = ScriptedServer::spawn(Script::new([
        Step::text("Noted."),
        Step::text("Still heron."),
    ]))
    .unwrap();
    let (id, _) = session(
        options(home.path(), &model),
        PermissionOptionKind::AllowOnce,
        async |cx, _| {
            let id = start(&cx, work.path()).await?;
            prompt(&cx, &id, "the code word is heron").await?;
            Ok(id)
        },
    )
    .await;
    // What a compression leaves: a continuation of the same source, holding the summary.
    let db = talaria_store::SessionDb::open(ProfileHome::at(home.path()).session_db()).unwrap();
    let first = db.session(&id).unwrap().unwrap();
    let continuation = talaria_store::NewSession {
        id: "continued".into(),
        title: None,
        source: first.source.clone(),
        model: first.model.clone(),
        cwd: first.cwd.clone(),
        parent_session_id: Some(id.clone()),
        principal: first.principal.clone(),
    };
    db.ensure_session(&continuation).unwrap();
    let summary = talaria_kernel::Message::user("[summary] the code word is heron");
    let kept = talaria_kernel::Message::assistant("Summarised and continuing.");
    db.append_batch("continued", &[summary, kept]).unwrap();

    let (stop, seen) = session(
        options(home.path(), &model),
        PermissionOptionKind::AllowOnce,
        async |cx, _| {
            cx.send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            cx.send_request(LoadSessionRequest::new(id.clone(), work.path()))
                .block_task()
                .await?;
            prompt(&cx, &id, "and now?").await
        },
    )
    .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        agent_text(&seen),
        "Summarised and continuing.Still heron.",
        "the replay is the continuation's, then the new answer"
    );
    let stored = db.messages("continued").unwrap();
    assert_eq!(stored.len(), 4, "the new turn went on in the continuation");
    assert_eq!(db.messages(&id).unwrap().len(), 2, "the first is unchanged");
}

/// A 1x1 PNG, as an editor sends an image block.
const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_in_a_prompt_reaches_the_model_and_a_bad_one_is_refused() {
    use agent_client_protocol::v1::schema::ImageContent;
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = ScriptedServer::spawn(Script::new([Step::text("One pixel.")])).unwrap();
    let ((image_capability, stop, refused), _) = session(
        options(home.path(), &model),
        PermissionOptionKind::AllowOnce,
        async |cx, _| {
            let initialized = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1))
                .block_task()
                .await?;
            let session = cx
                .send_request(NewSessionRequest::new(work.path()))
                .block_task()
                .await?;
            let id = session.session_id.0.to_string();
            let image = |data: &str| ContentBlock::Image(ImageContent::new(data, "image/png"));
            let response = cx
                .send_request(PromptRequest::new(
                    id.clone(),
                    vec![
                        ContentBlock::from("what is this?".to_owned()),
                        image(PIXEL_PNG),
                    ],
                ))
                .block_task()
                .await?;
            let refused = cx
                .send_request(PromptRequest::new(id, vec![image(&PIXEL_PNG[..40])]))
                .block_task()
                .await
                .unwrap_err();
            Ok((
                initialized.agent_capabilities.prompt_capabilities.image,
                response.stop_reason,
                refused.to_string(),
            ))
        },
    )
    .await;
    assert!(image_capability, "promptCapabilities.image");
    assert_eq!(stop, StopReason::EndTurn);
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        1,
        "the damaged image never reached the model"
    );
    let user = requests[0]
        .messages()
        .into_iter()
        .find(|m| m.role == talaria_testkit::Role::User)
        .unwrap();
    assert_eq!(user.text, "what is this?");
    assert_eq!(
        user.images,
        [talaria_testkit::Image::Inline {
            media_type: "image/png".into(),
            data: PIXEL_PNG.into(),
        }]
    );
    assert!(
        refused.contains("image 1 of the prompt is damaged"),
        "{refused}"
    );
}
