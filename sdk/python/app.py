"""A Talaria tool plugin in Python: two tools, `slugify` (pure computation)
and `page_title` (outgoing HTTP and HTTPS with `http_client`, through the
host's `wasi:http`).

componentize-py generates the `wit_world` bindings from `wit/` at build time;
this module provides the `tool-provider` export as the class `ToolProvider`.
"""

import html
import json
import re
import unicodedata

import http_client
from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log
from wit_world.imports.types import (
    CallContext,
    ToolError_Denied,
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
        "url": {"type": "string", "description": "The http:// or https:// URL of the page."},
    },
    "required": ["url"],
    "additionalProperties": False,
}

# How much of a page the tool reads, and shows when it has no <title>.
MAX_PAGE_BYTES = 1 << 20
START_LENGTH = 200
FETCH_TIMEOUT_S = 8
TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)


def call_page_title(arguments: dict) -> dict:
    unknown = sorted(set(arguments) - set(PAGE_TITLE_SCHEMA["properties"]))
    if unknown:
        raise invalid(f"unknown argument(s) {', '.join(unknown)}; page_title takes url")
    url = arguments.get("url")
    if not isinstance(url, str) or not re.match(r"https?://[^/]", url, re.IGNORECASE):
        raise invalid("url is required and must be an http:// or https:// URL")
    try:
        status, headers, body = http_client.get(
            url, {"user-agent": "talaria-plugin"}, timeout=FETCH_TIMEOUT_S, max_bytes=MAX_PAGE_BYTES
        )
    except ValueError as error:  # a URL that cannot be sent
        raise invalid(f"cannot fetch {url}: {error}")
    except http_client.HttpError as error:
        if error.denied:
            # The host adds its reason (the network grant that is missing, and
            # the command that grants it) to this tool's error.
            raise Err(ToolError_Denied(f"fetching {url} was refused"))
        raise Err(ToolError_Failed(f"fetching {url} failed: {error}"))
    # Any status is an answer (404, 500…): report it with its page.
    charset = CHARSET.search(headers.get("content-type", ""))
    try:
        text = body.decode(charset.group(1) if charset else "utf-8", "replace")
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
        "Fetches a web page (http:// or https://) and returns its HTTP status and <title> "
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
