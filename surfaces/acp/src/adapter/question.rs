//! `clarify` questions put to the editor's user. An editor that offered form
//! elicitation gets an `elicitation/create` form: the choices to pick from and
//! a field for the user's own words. Any other editor gets the question as a
//! `session/request_permission` whose options are the choices plus "Skip":
//! the one way every ACP client answers, but it cannot carry free text, so
//! there the tool asks for choices (see `worker::EditorClarifier`).

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, ElicitationAction, ElicitationContentValue, ElicitationFormMode,
    ElicitationSchema, ElicitationSessionScope, EnumOption, PermissionOption, PermissionOptionKind,
    RequestPermissionOutcome, RequestPermissionRequest, StringPropertySchema, ToolCallId,
    ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::{Client, Error};
use tokio::sync::oneshot;

use crate::types::{QuestionAsk, QuestionReply};

/// The form's field holding the picked choice.
const CHOICE_FIELD: &str = "choice";
/// The form's field holding the user's own words.
const ANSWER_FIELD: &str = "answer";
/// The permission option that skips the question.
const SKIP: &str = "skip";

/// Asks the editor and sends the reply back; gives up when the question's
/// receiver is dropped (the turn was cancelled).
pub(super) async fn serve(
    cx: ConnectionTo<Client>,
    session: String,
    ask: QuestionAsk,
    forms: bool,
    mut reply: oneshot::Sender<QuestionReply>,
) -> Result<(), Error> {
    let asked = async {
        if forms {
            by_form(&cx, &session, &ask).await
        } else {
            by_options(&cx, &session, &ask).await
        }
    };
    tokio::select! {
        answer = asked => {
            let _ = reply.send(answer);
        }
        () = reply.closed() => {}
    }
    Ok(())
}

async fn by_form(cx: &ConnectionTo<Client>, session: &str, ask: &QuestionAsk) -> QuestionReply {
    let mut scope = ElicitationSessionScope::new(session.to_owned());
    if let Some(id) = &ask.tool_call_id {
        scope = scope.tool_call_id(ToolCallId::new(id.clone()));
    }
    let mut schema = ElicitationSchema::new();
    if !ask.choices.is_empty() {
        let options: Vec<EnumOption> = ask
            .choices
            .iter()
            .map(|choice| EnumOption::new(choice.clone(), choice.clone()))
            .collect();
        schema = schema.property(
            CHOICE_FIELD,
            StringPropertySchema::new()
                .title("Pick one")
                .one_of(options),
            false,
        );
    }
    let title = if ask.choices.is_empty() {
        "Your answer"
    } else {
        "Or answer in your own words"
    };
    schema = schema.property(
        ANSWER_FIELD,
        StringPropertySchema::new().title(title),
        ask.choices.is_empty(),
    );
    let request =
        CreateElicitationRequest::new(ElicitationFormMode::new(scope, schema), &ask.question);
    match cx.send_request(request).block_task().await {
        Ok(response) => match response.action {
            ElicitationAction::Accept(accepted) => {
                let field = |name: &str| match accepted.content.as_ref()?.get(name)? {
                    ElicitationContentValue::String(text) if !text.trim().is_empty() => {
                        Some(text.trim().to_owned())
                    }
                    _ => None,
                };
                // The user's own words win over a choice left selected.
                match field(ANSWER_FIELD).or_else(|| field(CHOICE_FIELD)) {
                    Some(answer) => QuestionReply::Answered(answer),
                    None => QuestionReply::Declined,
                }
            }
            _ => QuestionReply::Declined,
        },
        Err(error) => QuestionReply::Failed(error.message),
    }
}

async fn by_options(cx: &ConnectionTo<Client>, session: &str, ask: &QuestionAsk) -> QuestionReply {
    let id = ask
        .tool_call_id
        .clone()
        .unwrap_or_else(|| "clarify".to_owned());
    let fields = ToolCallUpdateFields::new().title(ask.question.clone());
    let mut options: Vec<PermissionOption> = ask
        .choices
        .iter()
        .enumerate()
        .map(|(i, choice)| {
            PermissionOption::new(
                format!("choice-{i}"),
                choice.clone(),
                PermissionOptionKind::AllowOnce,
            )
        })
        .collect();
    options.push(PermissionOption::new(
        SKIP,
        "Skip the question",
        PermissionOptionKind::RejectOnce,
    ));
    let request =
        RequestPermissionRequest::new(session.to_owned(), ToolCallUpdate::new(id, fields), options);
    match cx.send_request(request).block_task().await {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => selected
                .option_id
                .0
                .strip_prefix("choice-")
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| ask.choices.get(i))
                .map_or(QuestionReply::Declined, |choice| {
                    QuestionReply::Answered(choice.clone())
                }),
            _ => QuestionReply::Declined,
        },
        Err(error) => QuestionReply::Failed(error.message),
    }
}
