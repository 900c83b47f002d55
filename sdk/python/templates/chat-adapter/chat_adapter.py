"""The `connection` resource of `chat-adapter`: one open connection to the
line chat server. The host never calls it from two places at once and keeps
the rest: who may talk to the agent, sessions, splitting long answers,
retries and reconnecting (calling `open` again, with backoff).
"""

import json
from typing import List, Optional, Self, Tuple

from componentize_py_types import Err
from connection import ConnectionLost, LineConnection, error_text
from protocol import PLATFORM, Message, Settings, outgoing_lines, parse_line, valid_chat
from wit_world.exports import chat_adapter
from wit_world.imports import config, log
from wit_world.imports.chat_types import (
    Capabilities,
    Chat,
    ChatDetails,
    ChatKind,
    InboundMessage,
    LengthUnit,
    Outbound,
    SendOutcome,
    SendOutcome_DeadTarget,
    SendOutcome_Failed,
    SendOutcome_Sent,
    Sender,
    WebhookRequest,
    WebhookResponse,
)

# The longest line read from the server; longer ones are dropped.
MAX_INBOUND_LINE = 4096
# The longest text `send` is given (the host splits longer answers).
MAX_MESSAGE_BYTES = 1000
# How long connecting may take (within the host's 30 s call limit).
CONNECT_TIMEOUT_MS = 10_000


def setting(key: str) -> Optional[str]:
    """A key of the plugin's config section, None when unset or refused."""
    try:
        return config.get(key)
    except Err as error:
        log.log(log.Level.WARN, f"config {key}: {error_text(error)}")
        return None


def record(message: Message) -> InboundMessage:
    """The host's record of a message."""
    kind = ChatKind.DM if message.kind == "dm" else ChatKind.GROUP
    return InboundMessage(
        chat=Chat(id=message.chat, thread=None, kind=kind, title=None),
        sender=Sender(id=message.sender, name=message.sender, is_bot=False),
        text=message.text,
        message_id=None,
        reply_to=None,
        addressed=message.addressed,
        attachments=[],
        edit_of=None,
        # JSON: the line as a string.
        raw=json.dumps(message.raw),
    )


class Connection(chat_adapter.Connection):
    def __init__(self, line: LineConnection, nick: str):
        self.line = line
        self.nick = nick

    @classmethod
    def open(cls, attempt: int) -> Self:
        """Connects and signs in. After a lost connection the host calls this
        again, with backoff; `attempt` counts the tries since the last
        success. Raising Err(text) tells the host why it failed."""
        try:
            settings = Settings.load(setting)
        except ValueError as error:
            raise Err(str(error))
        log.log(
            log.Level.INFO,
            f"connecting to {settings.host}:{settings.port} as {settings.nick} (attempt {attempt})",
        )
        try:
            line = LineConnection.connect_tcp(
                settings.host, settings.port, CONNECT_TIMEOUT_MS, MAX_INBOUND_LINE
            )
            line.write_line(f"HELLO {settings.nick}")
        except ConnectionLost as error:
            raise Err(lost(error))
        return cls(line, settings.nick)

    def capabilities(self) -> Capabilities:
        return Capabilities(
            platform=PLATFORM,
            max_message_length=MAX_MESSAGE_BYTES,
            length_unit=LengthUnit.BYTES,
            markdown=False,
            edit=False,
            typing=False,
            prompt_hint="This chat shows plain text only (no Markdown); keep answers short, "
            "each line arrives as a message of its own.",
        )

    def next_events(self, timeout_ms: int) -> List[InboundMessage]:
        """The messages that arrived: those already there, else the first to
        arrive within `timeout_ms`. Returns early, maybe with none, when the
        host has work (a message to send); an error means the connection is
        lost, and the host opens a new one."""
        try:
            messages = self.read_messages()
            if not messages and self.line.wait(timeout_ms) == "readable":
                messages = self.read_messages()
        except ConnectionLost as error:
            raise Err(lost(error))
        return messages

    def send(self, message: Outbound) -> SendOutcome:
        if not valid_chat(message.chat_id):
            return SendOutcome_DeadTarget(f"{message.chat_id!r} is neither a user nor a #room")
        try:
            for out in outgoing_lines(message.chat_id, message.text):
                self.line.write_line(out)
        except ConnectionLost as error:
            return SendOutcome_Failed(lost(error))
        return SendOutcome_Sent(None)

    def typing(self, chat_id: str, thread: Optional[str]) -> None:
        """The protocol shows no typing."""

    def chat_info(self, chat_id: str) -> ChatDetails:
        if not valid_chat(chat_id):
            raise Err(f"{chat_id!r} is neither a user nor a #room")
        kind = ChatKind.GROUP if chat_id.startswith("#") else ChatKind.DM
        return ChatDetails(
            chat=Chat(id=chat_id, thread=None, kind=kind, title=None), members=None, topic=None
        )

    def fetch_attachment(self, id: str, max_bytes: int) -> bytes:
        raise Err(f"{PLATFORM} has no attachments")

    def webhook(self, request: WebhookRequest) -> Tuple[WebhookResponse, List[InboundMessage]]:
        response = WebhookResponse(
            status=404,
            headers=[("content-type", "text/plain")],
            body=f"{PLATFORM} has no webhooks".encode(),
        )
        return response, []

    def close(self) -> None:
        # Best effort: the server may be gone already.
        try:
            self.line.write_line("BYE")
        except ConnectionLost:
            pass
        self.line.close()

    def read_messages(self) -> List[InboundMessage]:
        """Every message among the complete lines received so far."""
        messages = []
        while (raw := self.line.read_line()) is not None:
            message = parse_line(raw, self.nick)
            if message is None:
                log.log(log.Level.DEBUG, f"ignored the line {raw!r}")
            else:
                messages.append(record(message))
        return messages


def lost(error: ConnectionLost) -> str:
    return f"{PLATFORM}: connection lost: {error}"
