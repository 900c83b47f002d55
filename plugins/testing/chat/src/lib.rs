//! Test plugin `chat-probe`: a chat adapter for a line protocol the host's
//! tests serve on 127.0.0.1.
//!
//! - `open(attempt)` connects to the config's `host`:`port` (TLS through
//!   `chat-host.tls-connect` when `tls` is "true", else a `wasi:sockets` TCP
//!   socket) and sends `HELLO <attempt>`.
//! - The server's `MSG <chat> <user> <text...>` lines are inbound messages (a
//!   DM when the chat starts with '@'); `SLOWDOWN <ms>` makes the next send
//!   `retryable(ms)`. The server closing makes `next-events` fail.
//! - `send` writes `SEND <chat> <text>`; to chat `!panic` it panics (a trap).
//! - `typing` writes `TYPING <chat>`, `close` writes `BYE`.
//! - With `stall` "true", `next-events` waits for input only, ignoring its
//!   timeout and host-work (the host must cut it off).
//! - Identities (`chat-identity`): a user `weak:NAME` is a weak `mask`, a
//!   user `nick:NAME` a `nick` (name only), any other a strong `user`; each
//!   is also known as `USER@probe`. `allowed_users` entries starting with
//!   `bad` are refused.

use std::cell::RefCell;

use talaria_plugin_sdk::chat_bindings::exports::talaria::plugin::chat_adapter::Connection;
use talaria_plugin_sdk::chat_types::{
    Capabilities, Chat, ChatDetails, ChatKind, InboundMessage, LengthUnit, Outbound, SendOutcome,
    Sender, WebhookRequest, WebhookResponse,
};
use talaria_plugin_sdk::{
    ChatAdapter, ChatConnection, ChatIdentity, IdStrength, SenderIdentity, chat_host, config,
    serde_json,
};
use wasip2::clocks::monotonic_clock;
use wasip2::io::poll;
use wasip2::io::streams::{InputStream, OutputStream, StreamError};
use wasip2::sockets::network::{ErrorCode, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress};
use wasip2::sockets::tcp::TcpSocket;

pub struct Loopback;

fn setting(name: &str, default: &str) -> String {
    config::get(name)
        .ok()
        .flatten()
        .unwrap_or_else(|| default.to_owned())
}

impl ChatAdapter for Loopback {
    type Connection = Line;

    fn platform() -> String {
        setting("platform", "loopback")
    }
}

impl ChatIdentity for Loopback {
    fn identify(message: InboundMessage) -> SenderIdentity {
        let user = message.sender.id;
        let (kind, strength) = if user.starts_with("weak:") {
            ("mask", IdStrength::Weak)
        } else if user.starts_with("nick:") {
            ("nick", IdStrength::NameOnly)
        } else {
            ("user", IdStrength::Strong)
        };
        SenderIdentity {
            kind: kind.into(),
            strength,
            also_known_as: vec![format!("{user}@probe")],
        }
    }

    fn check_allowed_user(entry: String) -> Result<(), String> {
        if entry.starts_with("bad") {
            return Err(format!(
                "chat-probe refuses {entry:?}: no entry may start with bad"
            ));
        }
        Ok(())
    }
}

/// One connection: the streams (dropped before the socket that owns them),
/// what was read but not parsed, and protocol state.
pub struct Line {
    input: InputStream,
    output: OutputStream,
    _socket: Option<TcpSocket>,
    state: RefCell<State>,
}

#[derive(Default)]
struct State {
    buffer: Vec<u8>,
    closed: bool,
    slowdown: Option<u64>,
    received: u64,
    sent: u64,
    nick: String,
    stall: bool,
}

/// A TCP connection through `wasi:sockets` (checked by the host's grants).
fn tcp(host: &str, port: u16) -> Result<(InputStream, OutputStream, TcpSocket), String> {
    let octets: Vec<u8> = host.split('.').filter_map(|p| p.parse().ok()).collect();
    let [a, b, c, d] = octets[..] else {
        return Err(format!("host {host} is not an IPv4 address"));
    };
    let failed = |what: &str, e: ErrorCode| format!("{what} {host}:{port}: {e:?}");
    let network = wasip2::sockets::instance_network::instance_network();
    let socket = wasip2::sockets::tcp_create_socket::create_tcp_socket(IpAddressFamily::Ipv4)
        .map_err(|e| failed("socket for", e))?;
    let address = IpSocketAddress::Ipv4(Ipv4SocketAddress {
        port,
        address: (a, b, c, d),
    });
    socket
        .start_connect(&network, address)
        .map_err(|e| failed("connecting to", e))?;
    let ready = socket.subscribe();
    let (input, output) = loop {
        ready.block();
        match socket.finish_connect() {
            Err(ErrorCode::WouldBlock) => continue,
            Err(e) => return Err(failed("connecting to", e)),
            Ok(streams) => break streams,
        }
    };
    drop(ready);
    Ok((input, output, socket))
}

impl Line {
    fn write(&self, line: &str) -> Result<(), String> {
        self.output
            .blocking_write_and_flush(format!("{line}\n").as_bytes())
            .map_err(|e| format!("writing: {e:?}"))
    }
}

impl State {
    /// The complete lines read so far, as messages (protocol lines update
    /// the state).
    fn take_events(&mut self) -> Vec<InboundMessage> {
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line).trim_end().to_owned();
            if let Some(event) = self.parse(&line) {
                events.push(event);
            }
        }
        events
    }

    fn parse(&mut self, line: &str) -> Option<InboundMessage> {
        let mut words = line.splitn(4, ' ');
        match words.next()? {
            "SLOWDOWN" => {
                self.slowdown = words.next().and_then(|ms| ms.parse().ok());
                None
            }
            "MSG" => {
                let chat = words.next()?.to_owned();
                let user = words.next()?.to_owned();
                let text = words.next().unwrap_or_default().to_owned();
                let dm = chat.starts_with('@');
                self.received += 1;
                Some(InboundMessage {
                    addressed: dm || text.starts_with(&format!("{}:", self.nick)),
                    chat: Chat {
                        id: chat,
                        thread: None,
                        kind: if dm { ChatKind::Dm } else { ChatKind::Group },
                        title: None,
                    },
                    sender: Sender {
                        id: user.clone(),
                        is_bot: user.ends_with("bot"),
                        name: user,
                    },
                    text,
                    message_id: Some(format!("in{}", self.received)),
                    reply_to: None,
                    attachments: Vec::new(),
                    edit_of: None,
                    raw: serde_json::Value::String(line.to_owned()).to_string(),
                })
            }
            _ => None,
        }
    }
}

impl ChatConnection for Line {
    fn open(attempt: u32) -> Result<Connection, String> {
        let host = setting("host", "127.0.0.1");
        let port: u16 = setting("port", "0")
            .parse()
            .map_err(|e| format!("port: {e}"))?;
        let (input, output, socket) = if setting("tls", "false") == "true" {
            let (input, output) = chat_host::tls_connect(&host, port).map_err(|e| e.to_string())?;
            (input, output, None)
        } else {
            let (input, output, socket) = tcp(&host, port)?;
            (input, output, Some(socket))
        };
        let line = Line {
            input,
            output,
            _socket: socket,
            state: RefCell::new(State {
                nick: setting("nick", "talaria"),
                stall: setting("stall", "false") == "true",
                ..State::default()
            }),
        };
        line.write(&format!("HELLO {attempt}"))?;
        Ok(Connection::new(line))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            platform: setting("platform", "loopback"),
            max_message_length: 400,
            length_unit: LengthUnit::Chars,
            markdown: false,
            edit: false,
            typing: true,
            prompt_hint: "Plain text, one line per message.".into(),
        }
    }

    fn next_events(&self, timeout_ms: u32) -> Result<Vec<InboundMessage>, String> {
        let mut state = self.state.borrow_mut();
        let timer = monotonic_clock::subscribe_duration(u64::from(timeout_ms) * 1_000_000);
        let work = chat_host::host_work();
        loop {
            let events = state.take_events();
            if !events.is_empty() {
                return Ok(events);
            }
            if state.closed {
                return Err("the server closed the connection".into());
            }
            let readable = self.input.subscribe();
            let ready = if state.stall {
                poll::poll(&[&readable])
            } else {
                poll::poll(&[&readable, &work, &timer])
            };
            drop(readable);
            if ready.contains(&0) {
                match self.input.read(4096) {
                    Ok(bytes) => state.buffer.extend(bytes),
                    Err(StreamError::Closed) => state.closed = true,
                    Err(StreamError::LastOperationFailed(e)) => {
                        return Err(format!("reading: {}", e.to_debug_string()));
                    }
                }
            }
            if ready.iter().any(|&i| i > 0) {
                return Ok(state.take_events());
            }
        }
    }

    fn send(&self, message: Outbound) -> SendOutcome {
        if let Some(ms) = self.state.borrow_mut().slowdown.take() {
            return SendOutcome::Retryable(ms);
        }
        if message.chat_id == "!panic" {
            panic!("asked to panic");
        }
        if message.chat_id.starts_with("#gone") {
            return SendOutcome::DeadTarget(format!("{} is gone", message.chat_id));
        }
        match self.write(&format!("SEND {} {}", message.chat_id, message.text)) {
            Ok(()) => {
                let mut state = self.state.borrow_mut();
                state.sent += 1;
                SendOutcome::Sent(Some(format!("out{}", state.sent)))
            }
            Err(e) => SendOutcome::Failed(e),
        }
    }

    fn typing(&self, chat_id: String, _thread: Option<String>) {
        let _ = self.write(&format!("TYPING {chat_id}"));
    }

    fn chat_info(&self, chat_id: String) -> Result<ChatDetails, String> {
        if chat_id.is_empty() {
            return Err("no chat id".into());
        }
        Ok(ChatDetails {
            chat: Chat {
                kind: if chat_id.starts_with('@') {
                    ChatKind::Dm
                } else {
                    ChatKind::Group
                },
                id: chat_id,
                thread: None,
                title: None,
            },
            members: Some(2),
            topic: Some("loopback".into()),
        })
    }

    fn fetch_attachment(&self, id: String, max_bytes: u64) -> Result<Vec<u8>, String> {
        // "big:N" claims to fit but returns N bytes, for the host's own check.
        if let Some(n) = id
            .strip_prefix("big:")
            .and_then(|n| n.parse::<usize>().ok())
        {
            return Ok(vec![b'x'; n]);
        }
        let bytes = format!("attachment {id}").into_bytes();
        if bytes.len() as u64 > max_bytes {
            return Err(format!("{id} is over {max_bytes} bytes"));
        }
        Ok(bytes)
    }

    fn webhook(&self, request: WebhookRequest) -> (WebhookResponse, Vec<InboundMessage>) {
        let mut state = self.state.borrow_mut();
        let mut body = request.body;
        body.push(b'\n');
        let pending = std::mem::replace(&mut state.buffer, body);
        let events = state.take_events();
        state.buffer = pending;
        let response = WebhookResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: format!(
                "{} {}: {} events",
                request.method,
                request.path,
                events.len()
            )
            .into_bytes(),
        };
        (response, events)
    }

    fn close(&self) {
        let _ = self.write("BYE");
    }
}

#[cfg(target_arch = "wasm32")]
talaria_plugin_sdk::chat_bindings::__export_chat_adapter_plugin!(
    Loopback with_types_in talaria_plugin_sdk::chat_bindings
);
