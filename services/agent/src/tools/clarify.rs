//! `clarify`: asks the user a question, optionally with up to four choices
//! (Hermes's arguments: `question`, `choices`). A source of its own, not a
//! plain [`NativeTool`](super::NativeTool): waiting for the user must end
//! with the turn, so it needs the call's cancel token. Offered only when the
//! surface gives the agent a [`Clarifier`].

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use talaria_kernel::{CancellationToken, ToolContext, ToolResult, ToolSpec, ValidatedCall};
use talaria_tools::{ToolEntry, ToolFlags, ToolSource};

use crate::clarifier::{Clarifier, ClarifyAnswer, NoAnswer};

/// The tool's name, as Hermes skills call it.
pub const CLARIFY: &str = "clarify";
/// Most choices shown; more are cut, as Hermes does.
pub const MAX_CHOICES: usize = 4;

/// The `clarify` tool over one clarifier.
#[derive(Clone)]
pub struct ClarifyTool {
    clarifier: Arc<dyn Clarifier>,
}

impl ClarifyTool {
    /// The tool asking through `clarifier`.
    pub fn new(clarifier: Arc<dyn Clarifier>) -> Self {
        Self { clarifier }
    }

    fn spec(&self) -> ToolSpec {
        let mut description = String::from(
            "Ask the user a question and wait for the answer, when you need a decision, a \
             missing detail or feedback before going on. Give up to 4 `choices` for a \
             multiple-choice question (the one you recommend first; each option only in \
             `choices`, not in the question); the user picks one or answers in their own \
             words. Omit `choices` for an open question. Do not use it to confirm commands \
             (they are approved separately) or for low-stakes decisions you can make yourself.",
        );
        let mut required = vec!["question"];
        if !self.clarifier.takes_free_text() {
            description.push_str(
                " Here the user can only pick one of your choices: always give choices; ask an \
                 open question in your reply instead.",
            );
            required.push("choices");
        }
        ToolSpec {
            name: CLARIFY.into(),
            description,
            parameters: json!({
                "type": "object",
                "properties": {
                    "question": {
                        "type": "string",
                        "description": "The question, and only the question."
                    },
                    "choices": {
                        "type": "array",
                        "items": {"type": "string"},
                        "maxItems": MAX_CHOICES,
                        "description": "Up to 4 answers to pick from, the recommended one first."
                    }
                },
                "required": required
            }),
            refunds_iteration: false,
        }
    }

    /// Asks; `Err` is a message the model reads as an error result.
    async fn run(&self, arguments: &Value, cancel: &CancellationToken) -> Result<Value, String> {
        let (question, choices) = parse(arguments)?;
        if choices.is_empty() && !self.clarifier.takes_free_text() {
            return Err(
                "here the user can only pick one of your choices: give 1 to 4 \
                        `choices`, or ask an open question in your reply instead"
                    .into(),
            );
        }
        let answer = self
            .clarifier
            .ask(&question, &choices, cancel)
            .await
            .map_err(|error| {
                format!(
                    "the question could not be asked ({error}); use your best judgement and \
                     proceed"
                )
            })?;
        let user_response = match answer {
            ClarifyAnswer::Answered(text) => text,
            ClarifyAnswer::NoAnswer(why) => unanswered(why),
        };
        Ok(json!({
            "question": question,
            "choices_offered": (!choices.is_empty()).then_some(choices),
            "user_response": user_response,
        }))
    }
}

/// What the model reads when the user gave no answer.
fn unanswered(why: NoAnswer) -> String {
    let what = match why {
        NoAnswer::Declined => "The user dismissed the question without answering.".to_owned(),
        NoAnswer::TimedOut(after) => {
            let secs = after.as_secs();
            let within = match secs {
                60 => "a minute".to_owned(),
                s if s > 60 && s.is_multiple_of(60) => format!("{} minutes", s / 60),
                1 => "a second".to_owned(),
                s => format!("{s} seconds"),
            };
            format!("The user did not answer within {within}.")
        }
        NoAnswer::Cancelled => "The question was withdrawn before the user answered.".to_owned(),
    };
    format!("{what} Use your best judgement and proceed.")
}

/// The question and the choices to show, checked.
fn parse(arguments: &Value) -> Result<(String, Vec<String>), String> {
    let question = match arguments.get("question") {
        Some(Value::String(text)) if !text.trim().is_empty() => text.trim().to_owned(),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err("'question' is required and must not be empty".into());
        }
        Some(other) => return Err(format!("'question' must be a string, not {other}")),
    };
    let listed = match arguments.get("choices") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(other) => return Err(format!("'choices' must be a list of strings, not {other}")),
    };
    let mut choices = Vec::with_capacity(listed.len().min(MAX_CHOICES));
    for (i, item) in listed.iter().enumerate() {
        match item {
            Value::String(text) if !text.trim().is_empty() => choices.push(text.trim().to_owned()),
            Value::String(_) => return Err(format!("choices[{i}] is empty")),
            other => return Err(format!("choices[{i}] must be a string, not {other}")),
        }
    }
    // Hermes cuts a longer list rather than failing; `choices_offered` in the
    // result tells the model which ones the user saw.
    choices.truncate(MAX_CHOICES);
    Ok((question, choices))
}

#[async_trait]
impl ToolSource for ClarifyTool {
    fn tools(&self) -> Vec<ToolEntry> {
        vec![ToolEntry {
            spec: self.spec(),
            // One question at a time: the user answers them in order.
            flags: ToolFlags {
                never_parallel: true,
                ..ToolFlags::default()
            },
            toolset: CLARIFY.into(),
        }]
    }

    async fn call(
        &self,
        call: &ValidatedCall,
        _context: &ToolContext,
        cancel: &CancellationToken,
    ) -> ToolResult {
        if call.call.name != CLARIFY {
            return ToolResult::error(
                &call.call,
                format!("tool '{}' is not available", call.call.name),
            );
        }
        match self.run(&call.arguments, cancel).await {
            Ok(value) => ToolResult::ok(&call.call, value.to_string()),
            Err(message) => ToolResult::error(&call.call, message),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use talaria_kernel::ToolCall;

    use super::*;
    use crate::clarifier::ClarifyError;

    /// Answers with `answer` and keeps what it was asked.
    struct Scripted {
        answer: Result<ClarifyAnswer, ClarifyError>,
        free_text: bool,
        asked: Mutex<Vec<(String, Vec<String>)>>,
    }

    impl Scripted {
        fn new(answer: Result<ClarifyAnswer, ClarifyError>) -> Arc<Self> {
            Arc::new(Self {
                answer,
                free_text: true,
                asked: Mutex::new(Vec::new()),
            })
        }
    }

    #[async_trait]
    impl Clarifier for Scripted {
        async fn ask(
            &self,
            question: &str,
            choices: &[String],
            _cancel: &CancellationToken,
        ) -> Result<ClarifyAnswer, ClarifyError> {
            self.asked
                .lock()
                .unwrap()
                .push((question.to_owned(), choices.to_vec()));
            self.answer.clone()
        }

        fn takes_free_text(&self) -> bool {
            self.free_text
        }
    }

    async fn call(tool: &ClarifyTool, arguments: Value) -> ToolResult {
        let call = ToolCall {
            id: "c1".into(),
            name: CLARIFY.into(),
            arguments: arguments.to_string(),
        };
        let validated = ValidatedCall {
            call,
            arguments: arguments.clone(),
        };
        let context = ToolContext {
            session_id: "s".into(),
        };
        ToolSource::call(tool, &validated, &context, &CancellationToken::new()).await
    }

    fn response(result: &ToolResult) -> Value {
        serde_json::from_str(&result.content).unwrap()
    }

    #[tokio::test]
    async fn the_answer_and_the_choices_shown_come_back() {
        let clarifier = Scripted::new(Ok(ClarifyAnswer::Answered("staging".into())));
        let tool = ClarifyTool::new(clarifier.clone());
        let result = call(
            &tool,
            json!({"question": " Which target? ", "choices": ["staging", "prod"]}),
        )
        .await;
        assert!(!result.is_error, "{}", result.content);
        assert_eq!(
            response(&result),
            json!({"question": "Which target?", "choices_offered": ["staging", "prod"],
                   "user_response": "staging"})
        );
        let open = call(&tool, json!({"question": "Why?"})).await;
        assert_eq!(response(&open)["choices_offered"], Value::Null);
        let asked = clarifier.asked.lock().unwrap().clone();
        assert_eq!(asked[0].1, ["staging", "prod"]);
        assert!(asked[1].1.is_empty());
    }

    #[tokio::test]
    async fn bad_arguments_are_refused_and_nobody_is_asked() {
        let clarifier = Scripted::new(Ok(ClarifyAnswer::Answered("x".into())));
        let tool = ClarifyTool::new(clarifier.clone());
        for (arguments, expected) in [
            (json!({}), "'question' is required"),
            (json!({"question": "   "}), "'question' is required"),
            (json!({"question": 3}), "'question' must be a string"),
            (json!({"question": "q", "choices": "a"}), "must be a list"),
            (
                json!({"question": "q", "choices": ["a", ""]}),
                "choices[1] is empty",
            ),
            (
                json!({"question": "q", "choices": [{"label": "a"}]}),
                "choices[0] must be a string",
            ),
        ] {
            let result = call(&tool, arguments.clone()).await;
            assert!(result.is_error, "{arguments}");
            assert!(result.content.contains(expected), "{}", result.content);
        }
        assert!(clarifier.asked.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn more_than_four_choices_are_cut_to_four_as_hermes_does() {
        let clarifier = Scripted::new(Ok(ClarifyAnswer::Answered("a".into())));
        let tool = ClarifyTool::new(clarifier.clone());
        let result = call(
            &tool,
            json!({"question": "q", "choices": ["a", "b", "c", "d", "e"]}),
        )
        .await;
        assert_eq!(
            response(&result)["choices_offered"],
            json!(["a", "b", "c", "d"])
        );
        assert_eq!(clarifier.asked.lock().unwrap()[0].1.len(), MAX_CHOICES);
    }

    #[tokio::test]
    async fn no_answer_says_so_and_lets_the_model_go_on() {
        for (why, expected) in [
            (
                NoAnswer::TimedOut(Duration::from_secs(300)),
                "did not answer within 5 minutes",
            ),
            (NoAnswer::Declined, "dismissed the question"),
            (NoAnswer::Cancelled, "withdrawn"),
        ] {
            let tool = ClarifyTool::new(Scripted::new(Ok(ClarifyAnswer::NoAnswer(why))));
            let result = call(&tool, json!({"question": "q"})).await;
            assert!(!result.is_error);
            let text = response(&result)["user_response"]
                .as_str()
                .unwrap()
                .to_owned();
            assert!(
                text.contains(expected) && text.contains("best judgement"),
                "{text}"
            );
        }
        let failed = ClarifyTool::new(Scripted::new(Err(ClarifyError("chat gone".into()))));
        let result = call(&failed, json!({"question": "q"})).await;
        assert!(result.is_error);
        assert!(
            result.content.contains("chat gone") && result.content.contains("best judgement"),
            "{}",
            result.content
        );
    }

    #[tokio::test]
    async fn where_only_choices_can_be_shown_they_are_required() {
        let clarifier = Arc::new(Scripted {
            answer: Ok(ClarifyAnswer::Answered("a".into())),
            free_text: false,
            asked: Mutex::new(Vec::new()),
        });
        let tool = ClarifyTool::new(clarifier.clone());
        let spec = &tool.tools()[0].spec;
        assert_eq!(spec.parameters["required"], json!(["question", "choices"]));
        let result = call(&tool, json!({"question": "Why?"})).await;
        assert!(result.is_error);
        assert!(
            result
                .content
                .contains("ask an open question in your reply")
        );
        assert!(clarifier.asked.lock().unwrap().is_empty());
        let free = ClarifyTool::new(Scripted::new(Ok(ClarifyAnswer::Answered("a".into()))));
        assert_eq!(
            free.tools()[0].spec.parameters["required"],
            json!(["question"])
        );
        assert!(free.tools()[0].flags.never_parallel);
    }
}
