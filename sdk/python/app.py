"""A Talaria tool plugin in Python: one tool, `slugify`.

componentize-py generates the `wit_world` bindings from `wit/` at build time;
this module provides the `tool-provider` export as the class `ToolProvider`.
"""

import json
import re
import unicodedata

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


TOOLS = {
    "slugify": (
        "Turns text into a URL slug: lowercase ASCII letters and digits joined by a separator",
        SLUGIFY_SCHEMA,
        call_slugify,
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
