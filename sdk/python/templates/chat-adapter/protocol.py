"""The line chat's wire format and settings: plain Python, no component
bindings, so `python3 -m unittest` runs its tests natively.

The protocol, one message per line (UTF-8, LF or CRLF):

- on connecting, the adapter signs in with `HELLO <nick>`;
- `<user>: <text>` from the server is a direct message from `<user>`;
- `#<room> <user>: <text>` is a message in the group chat `#<room>`; it
  addresses the bot when the text starts with `<nick>:` or `<nick>,`;
- the adapter writes `@<chat> <text>` for each line of an answer, and signs
  off with `BYE`.

To speak another protocol, change `parse_line` and `outgoing_lines` (the wire
format) and `Settings` (what config.yaml says).
"""

from dataclasses import dataclass
from typing import Callable, Optional

# The platform's name: its key in config.yaml (`gateway.platforms.<name>`),
# which is the plugin's name.
PLATFORM = "line-chat"

# The defaults of the settings (plugin.toml's network grant names this host
# and port).
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7777
DEFAULT_NICK = "talaria"


@dataclass(frozen=True)
class Settings:
    """The adapter's settings: the keys of `gateway.platforms.<name>` the
    host does not use itself, every value a string."""

    host: str
    port: int
    nick: str

    @staticmethod
    def load(get: Callable[[str], Optional[str]]) -> "Settings":
        """Reads the settings through `get` (a config lookup, None when
        unset); raises ValueError with a message for the user."""

        def value(key: str) -> Optional[str]:
            raw = get(key)
            raw = raw.strip() if raw is not None else ""
            return raw or None

        host = value("host") or DEFAULT_HOST
        if any(c.isspace() for c in host):
            raise ValueError(f"{PLATFORM}: `host` {host!r} contains spaces")
        port = DEFAULT_PORT
        raw_port = value("port")
        if raw_port is not None:
            if not raw_port.isdigit() or not 0 < int(raw_port) < 65536:
                raise ValueError(f"{PLATFORM}: `port` {raw_port!r} is not a port number")
            port = int(raw_port)
        nick = value("nick") or DEFAULT_NICK
        if not valid_name(nick):
            raise ValueError(
                f"{PLATFORM}: `nick` {nick!r} must be a word without ':' or ',' "
                "(and not start with # or @)"
            )
        return Settings(host=host, port=port, nick=nick)


def valid_name(name: str) -> bool:
    """A user's name: one word, without the characters the protocol uses."""
    return (
        bool(name)
        and not name.startswith(("#", "@"))
        and not any(c.isspace() or not c.isprintable() or c in ":," for c in name)
    )


def valid_chat(chat: str) -> bool:
    """A chat: a user (direct messages) or `#room`."""
    return valid_name(chat[1:]) if chat.startswith("#") else valid_name(chat)


@dataclass(frozen=True)
class Message:
    """A message from the server, before it becomes the host's record."""

    chat: str
    # "dm" or "group"
    kind: str
    sender: str
    text: str
    # Always true in a DM; in a group, the host answers unaddressed messages
    # only where the user configured it.
    addressed: bool
    # The platform's own payload, for hooks: here the line itself.
    raw: str


def parse_line(line: str, nick: str) -> Optional[Message]:
    """The message a line from the server carries, if it is one (other lines,
    such as a server's greeting, are not). The bot's own lines (from `nick`)
    are not messages either."""
    room = None
    rest = line
    if line.startswith("#"):
        room, space, rest = line.partition(" ")
        if not space:
            return None
    user, colon, text = rest.partition(":")
    text = text.strip()
    if not colon or not valid_name(user) or user == nick:
        return None
    if room is None:
        chat, kind, addressed = user, "dm", True
    elif valid_chat(room):
        chat, kind = room, "group"
        after = mention(text, nick)
        addressed = after is not None
        if after is not None:
            text = after
    else:
        return None
    if not text:
        return None
    return Message(chat=chat, kind=kind, sender=user, text=text, addressed=addressed, raw=line)


def mention(text: str, nick: str) -> Optional[str]:
    """The text after `nick:` or `nick,` at its start, when it names the bot."""
    if not text.startswith(nick):
        return None
    rest = text[len(nick) :]
    if not rest.startswith((":", ",")):
        return None
    return rest[1:].lstrip()


def outgoing_lines(chat: str, text: str) -> list[str]:
    """The lines that send `text` to `chat`: one `@<chat> <line>` per line of
    text that is not blank (a line break inside a line would end it early)."""
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        line = line.replace("\r", " ").replace("\0", " ").rstrip()
        if line.strip():
            lines.append(f"@{chat} {line}")
    return lines


class LineBuffer:
    """Bytes in, lines out. A line ends with `\\n`; a `\\r` before it is
    dropped. Lines are decoded as UTF-8, invalid bytes replaced. A line
    longer than the limit is dropped whole, so a peer cannot make the buffer
    grow without bound."""

    def __init__(self, max_line: int):
        self.max_line = max_line
        self.pending = bytearray()
        self.lines: list[str] = []
        # Inside an overlong line: bytes are dropped up to its end.
        self.discarding = False
        self.dropped = 0

    def push(self, data: bytes) -> None:
        while data:
            end = data.find(b"\n")
            head = data if end < 0 else data[:end]
            data = b"" if end < 0 else data[end + 1 :]
            if self.discarding:
                self.discarding = end < 0
                continue
            if len(self.pending) + len(head) > self.max_line + 1:
                self.pending.clear()
                self.dropped += 1
                self.discarding = end < 0
                continue
            self.pending += head
            if end >= 0:
                line = bytes(self.pending)
                self.pending.clear()
                if line.endswith(b"\r"):
                    line = line[:-1]
                if len(line) > self.max_line:
                    self.dropped += 1
                    continue
                self.lines.append(line.decode("utf-8", errors="replace"))

    def pop(self) -> Optional[str]:
        """The oldest complete line, if there is one."""
        return self.lines.pop(0) if self.lines else None
