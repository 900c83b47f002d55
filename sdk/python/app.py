"""A Talaria tool plugin in Python: two tools, `slugify` (pure computation)
and `page_title` (outgoing HTTP with `urllib`).

componentize-py generates the `wit_world` bindings from `wit/` at build time;
this module provides the `tool-provider` export as the class `ToolProvider`.
"""

# urllib looks host names up through the `idna` codec. componentize-py
# snapshots the interpreter after importing this module, and a standard module
# first imported later cannot be found ("unknown encoding: idna"): keep this.
import encodings.idna  # noqa: F401
import html
import json
import re
import socket
import unicodedata
import urllib.error
import urllib.parse
import urllib.request

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log
from wit_world.imports.types import (
    CallContext,
    ToolError_Failed,
    ToolError_InvalidArguments,
    ToolFlags,
    ToolSpec,
)

SEPARATORS = ("-", "_", ".")
MAX_LENGTH = 200

SLUGIFY_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The text to turn into a slug."},
        "separator": {
            "type": "string",
            "enum": list(SEPARATORS),
            "description": "Joins the words (default '-').",
        },
        "max_length": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LENGTH,
            "description": "Cut the slug to at most this many characters, at a word boundary.",
        },
    },
    "required": ["text"],
    "additionalProperties": False,
}


def invalid(message: str) -> Err:
    """An error the model reads: its arguments were wrong."""
    return Err(ToolError_InvalidArguments(message))


def slugify(text: str, separator: str, max_length: int | None) -> str:
    """Lowercase ASCII words of `text` joined by `separator`."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = separator.join(words)
    if max_length is not None and len(slug) > max_length:
        cut = slug[: max_length + 1]
        boundary = cut.rfind(separator)
        slug = cut[:boundary] if boundary > 0 else slug[:max_length]
    return slug


def call_slugify(arguments: dict) -> dict:
    unknown = sorted(set(arguments) - set(SLUGIFY_SCHEMA["properties"]))
    if unknown:
        raise invalid(f"unknown argument(s) {', '.join(unknown)}; slugify takes text, separator, max_length")
    text = arguments.get("text")
    if not isinstance(text, str):
        raise invalid("text is required and must be a string")
    separator = arguments.get("separator", "-")
    if separator not in SEPARATORS:
        raise invalid(f"separator must be one of {', '.join(repr(s) for s in SEPARATORS)}")
    max_length = arguments.get("max_length")
    if max_length is not None and (
        not isinstance(max_length, int) or isinstance(max_length, bool) or not 1 <= max_length <= MAX_LENGTH
    ):
        raise invalid(f"max_length must be an integer from 1 to {MAX_LENGTH}")
    slug = slugify(text, separator, max_length)
    if not slug:
        raise Err(ToolError_Failed(f"{text!r} has no letters or digits to make a slug of"))
    return {"slug": slug}


PAGE_TITLE_SCHEMA = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "The http:// URL of the page."},
    },
    "required": ["url"],
    "additionalProperties": False,
}

# How much of a page the tool reads, and shows when it has no <title>.
MAX_PAGE_BYTES = 1 << 20
START_LENGTH = 200
FETCH_TIMEOUT_S = 8
TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def network_failure(url: str, error: OSError) -> Err:
    """A failed fetch, in words the model (and the plugin's author) can act on.

    urllib goes over wasi:sockets: the host checks each address the plugin
    connects to against its network grants. A refused connection fails like
    any connection error, and the host adds its reason, naming the missing
    grant, to this tool's error. A plugin with no network grant at all may
    not even look names up: that fails as "[Errno -4] Non-recoverable error"
    (EAI_FAIL), which happens only then.
    """
    reason = getattr(error, "reason", error)
    message = f"fetching {url} failed: {reason}"
    if isinstance(reason, socket.gaierror) and reason.errno == socket.EAI_FAIL:
        parts = urllib.parse.urlsplit(url)
        address = f"{parts.hostname}:{parts.port or 80}"
        message += (
            " (the host refuses name lookups to a plugin with no network grant; the user grants"
            f" one with: talaria plugin grant <plugin> network:{address})"
        )
    return Err(ToolError_Failed(message))


def call_page_title(arguments: dict) -> dict:
    unknown = sorted(set(arguments) - set(PAGE_TITLE_SCHEMA["properties"]))
    if unknown:
        raise invalid(f"unknown argument(s) {', '.join(unknown)}; page_title takes url")
    url = arguments.get("url")
    if not isinstance(url, str) or not re.match(r"http://[^/]", url, re.IGNORECASE):
        # componentize-py's Python has no ssl module: urllib cannot do https.
        raise invalid("url is required and must be an http:// URL (https:// is not supported here)")
    request = urllib.request.Request(url, headers={"User-Agent": "talaria-plugin"})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
            status = response.status
            charset = response.headers.get_content_charset() or "utf-8"
            body = response.read(MAX_PAGE_BYTES)
    except urllib.error.HTTPError as error:
        # An answer all the same (404, 500…): report it with its page.
        status = error.code
        charset = error.headers.get_content_charset() or "utf-8"
        body = error.read(MAX_PAGE_BYTES)
    except OSError as error:  # urllib.error.URLError, timeouts, resets
        raise network_failure(url, error)
    try:
        text = body.decode(charset, "replace")
    except LookupError:  # a charset Python does not know
        text = body.decode("utf-8", "replace")
    found = TITLE.search(text)
    if found:
        title = " ".join(html.unescape(found.group(1)).split())
        return {"url": url, "status": status, "title": title}
    return {"url": url, "status": status, "start": text[:START_LENGTH]}


TOOLS = {
    "slugify": (
        "Turns text into a URL slug: lowercase ASCII letters and digits joined by a separator",
        SLUGIFY_SCHEMA,
        call_slugify,
    ),
    "page_title": (
        "Fetches a web page (http://) and returns its HTTP status and <title> "
        "(or the start of the body when it has none)",
        PAGE_TITLE_SCHEMA,
        call_page_title,
    ),
}


class ToolProvider(exports.ToolProvider):
    def list_tools(self) -> list[ToolSpec]:
        flags = ToolFlags(never_parallel=False, read_only=True, path_argument=None)
        return [
            ToolSpec(name=name, description=description, parameters=json.dumps(schema), flags=flags)
            for name, (description, schema, _) in TOOLS.items()
        ]

    def call_tool(self, name: str, arguments: str, context: CallContext) -> str:
        tool = TOOLS.get(name)
        if tool is None:
            raise invalid(f"no tool {name!r}; this plugin has {', '.join(TOOLS)}")
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as error:
            raise invalid(f"arguments are not valid JSON: {error}")
        if parsed is None:
            parsed = {}
        if not isinstance(parsed, dict):
            raise invalid("arguments must be a JSON object")
        log.log(log.Level.DEBUG, f"{name} called (call {context.call_id})")
        return json.dumps(tool[2](parsed))
