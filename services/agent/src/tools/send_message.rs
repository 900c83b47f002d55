//! `send_message`: writes to a chat through the gateway (Hermes's arguments:
//! `action` send|list|react|unreact, `target` "platform:chat_id[:thread_id]",
//! `message`, `emoji`, `message_id`). Offered only when the surface gives
//! the agent a [`Messenger`]; it writes only where the messenger allows.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use talaria_kernel::{ToolContext, ToolSpec};

use super::NativeTool;
use crate::messenger::{MessageTarget, Messenger};

/// The `send_message` tool over one messenger.
pub struct SendMessageTool {
    messenger: Arc<dyn Messenger>,
}

impl SendMessageTool {
    /// The tool delivering through `messenger`.
    pub fn new(messenger: Arc<dyn Messenger>) -> Self {
        Self { messenger }
    }
}

#[async_trait]
impl NativeTool for SendMessageTool {
    fn toolset(&self) -> &'static str {
        "messaging"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "send_message".into(),
            description: "Send a message to a chat: the current one, or a home channel the user \
                configured. `action: list` shows the chats you may write to; `action: send` \
                (the default) sends `message` to `target` (`platform:chat_id[:thread_id]` as \
                listed, a platform name for its home channel, or omitted / `origin` for the \
                current chat)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {
                        "type": "string",
                        "enum": ["send", "list", "react", "unreact"],
                        "default": "send"
                    },
                    "target": {
                        "type": "string",
                        "description": "Where to send: `platform:chat_id[:thread_id]`, a platform name, or `origin`."
                    },
                    "message": {"type": "string", "description": "The text to send."},
                    "emoji": {"type": "string", "description": "For react/unreact."},
                    "message_id": {"type": "string", "description": "For react/unreact."}
                }
            }),
            refunds_iteration: false,
        }
    }

    async fn call(&self, arguments: &Value, _context: &ToolContext) -> Result<Value, String> {
        let text_arg = |name: &str| match arguments.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(other) => Err(format!("'{name}' must be a string, not {other}")),
        };
        let targets = self.messenger.targets();
        match text_arg("action")?.unwrap_or("send") {
            "list" => Ok(json!({
                "targets": targets.iter().map(|t| json!({
                    "target": t.address(),
                    "label": t.label,
                    "current": t.current,
                })).collect::<Vec<_>>()
            })),
            "send" => {
                let message = text_arg("message")?
                    .filter(|m| !m.trim().is_empty())
                    .ok_or("'message' is required to send, and must not be empty")?;
                let target = pick(&targets, text_arg("target")?)?;
                let id = self.messenger.send(target, message).await?;
                Ok(json!({"sent": true, "target": target.address(), "message_id": id}))
            }
            action @ ("react" | "unreact") => Err(format!(
                "'{action}' is not available: Talaria's chat adapters do not handle reactions yet"
            )),
            other => Err(format!(
                "unknown action '{other}': use send, list, react or unreact"
            )),
        }
    }
}

/// The target `wanted` names among `targets`.
fn pick<'a>(
    targets: &'a [MessageTarget],
    wanted: Option<&str>,
) -> Result<&'a MessageTarget, String> {
    let listed = || {
        if targets.is_empty() {
            "there is no chat to write to: configure a home_channel under gateway.platforms"
                .to_owned()
        } else {
            let all: Vec<String> = targets.iter().map(MessageTarget::address).collect();
            format!("you may write to: {}", all.join(", "))
        }
    };
    let wanted = wanted.map(str::trim).filter(|w| !w.is_empty());
    let found = match wanted {
        None | Some("origin") => targets
            .iter()
            .find(|t| t.current)
            .ok_or_else(|| format!("this session runs in no chat; name a target ({})", listed()))?,
        Some(address) => {
            let exact = targets.iter().find(|t| t.address() == address);
            let by_platform = || {
                let mut homes = targets
                    .iter()
                    .filter(|t| t.platform == address && !t.current);
                match (homes.next(), homes.next()) {
                    (Some(only), None) => Some(only),
                    _ => None,
                }
            };
            exact.or_else(by_platform).ok_or_else(|| {
                format!("'{address}' is not a chat you may write to; {}", listed())
            })?
        }
    };
    Ok(found)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Recorder {
        targets: Vec<MessageTarget>,
        sent: Mutex<Vec<(String, String)>>,
    }

    #[async_trait]
    impl Messenger for Recorder {
        fn targets(&self) -> Vec<MessageTarget> {
            self.targets.clone()
        }

        async fn send(&self, target: &MessageTarget, text: &str) -> Result<Option<String>, String> {
            self.sent
                .lock()
                .unwrap()
                .push((target.address(), text.to_owned()));
            Ok(Some("m1".into()))
        }
    }

    fn target(platform: &str, chat: &str, thread: Option<&str>, current: bool) -> MessageTarget {
        MessageTarget {
            platform: platform.into(),
            chat_id: chat.into(),
            thread: thread.map(Into::into),
            label: None,
            current,
        }
    }

    fn tool(targets: Vec<MessageTarget>) -> (SendMessageTool, Arc<Recorder>) {
        let recorder = Arc::new(Recorder {
            targets,
            ..Recorder::default()
        });
        (SendMessageTool::new(recorder.clone()), recorder)
    }

    fn context() -> ToolContext {
        ToolContext {
            session_id: "s".into(),
        }
    }

    #[tokio::test]
    async fn sends_to_the_current_chat_a_listed_target_or_a_platform_home() {
        let (tool, recorder) = tool(vec![
            target("irc", "#ops", None, true),
            // A Matrix room id holds a colon: targets match as listed.
            target("matrix", "!room:example.org", None, false),
            target("telegram", "-100", Some("7"), false),
        ]);
        for (wanted, expected) in [
            (json!({"message": "hi"}), "irc:#ops"),
            (json!({"message": "hi", "target": "origin"}), "irc:#ops"),
            (
                json!({"message": "hi", "target": "matrix:!room:example.org"}),
                "matrix:!room:example.org",
            ),
            (
                json!({"message": "hi", "target": "telegram"}),
                "telegram:-100:7",
            ),
        ] {
            let result = tool.call(&wanted, &context()).await.unwrap();
            assert_eq!(result["target"], expected);
            assert_eq!(result["message_id"], "m1");
        }
        assert_eq!(recorder.sent.lock().unwrap().len(), 4);
    }

    #[tokio::test]
    async fn never_writes_where_it_was_not_allowed() {
        let (tool, recorder) = tool(vec![target("irc", "#ops", None, false)]);
        let refused = [
            json!({"message": "hi", "target": "irc:#elsewhere"}),
            json!({"message": "hi", "target": "telegram:1"}),
            json!({"message": "hi"}),
            json!({"message": "  ", "target": "irc:#ops"}),
            json!({"message": 5, "target": "irc:#ops"}),
            json!({"action": "react", "message_id": "1", "emoji": "👍"}),
            json!({"action": "shout"}),
        ];
        for arguments in refused {
            let error = tool.call(&arguments, &context()).await.unwrap_err();
            assert!(!error.is_empty(), "{arguments}");
        }
        let error = tool
            .call(&json!({"message": "hi", "target": "irc:#x"}), &context())
            .await
            .unwrap_err();
        assert!(error.contains("you may write to: irc:#ops"), "{error}");
        assert!(recorder.sent.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn lists_what_it_may_write_to() {
        let (tool, _) = tool(vec![
            target("irc", "#ops", None, true),
            target("telegram", "5", None, false),
        ]);
        let listed = tool
            .call(&json!({"action": "list"}), &context())
            .await
            .unwrap();
        assert_eq!(listed["targets"][0]["target"], "irc:#ops");
        assert_eq!(listed["targets"][0]["current"], true);
        assert_eq!(listed["targets"][1]["target"], "telegram:5");
    }
}
