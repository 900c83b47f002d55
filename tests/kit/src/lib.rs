//! A scripted model server for Talaria's tests.
//!
//! [`ScriptedServer`] listens on 127.0.0.1 and speaks the OpenAI Chat Completions wire format
//! (`POST /v1/chat/completions`, `/chat/completions`), the OpenAI Responses wire format
//! (`POST /v1/responses`, `/responses`) and the Anthropic Messages wire format
//! (`POST /v1/messages`, `/messages`), streaming and not. Each request plays the next
//! [`Step`] of a [`Script`], whichever endpoint it hits, and is recorded as a
//! [`RecordedRequest`]; the [`assertions`] module checks recorded conversations.
//!
//! ```no_run
//! use talaria_testkit::{Script, ScriptedServer, Step, assertions};
//!
//! let server = ScriptedServer::spawn(Script::new([
//!     Step::tool_call("read_file", r#"{"path":"a.txt"}"#),
//!     Step::text("done"),
//! ]))?;
//! // ... run a client against server.openai_base_url() ...
//! assertions::assert_tool_calls_paired(&server.requests());
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The crate depends on no other Talaria crate: it is an independent oracle of the wire formats.

mod anthropic;
pub mod assertions;
#[cfg(feature = "devtools")]
mod devtools;
mod http;
pub mod inspircd;
pub mod mem0;
pub mod ngircd;
mod openai;
pub mod pki;
mod recorder;
mod render;
mod responses;
mod script;
mod server;
pub mod sshd;
mod static_files;
pub mod telegram;
mod website;

#[cfg(feature = "devtools")]
pub use devtools::{DevToolsCall, FakeDevTools, FakePage};
pub use mem0::{FakeMem0, Mem0Request};
pub use recorder::{Image, Message, RecordedRequest, Role, ToolResult, ToolUse, Wire, read_jsonl};
pub use script::{Script, ScriptError, Step, StepKind, ToolCall};
pub use server::{LineEnding, ScriptedServer, ServerOptions};
pub use static_files::StaticServer;
pub use website::{Page, Visit, WebSite};
