"""Outgoing HTTP and HTTPS through the host (`wasi:http/outgoing-handler`).

componentize-py's Python has no `ssl` module, so `urllib` cannot do https://.
Requests sent here are made by the host instead: it checks each one against
the plugin's network grants, connects, and does TLS itself (verifying the
server's certificate against its trust roots).

    status, headers, body = http_client.get("https://example.org/")

`get` blocks until the whole body is read (or `max_bytes` of it).
"""

# Non-ASCII host names are sent IDNA-encoded. componentize-py snapshots the
# interpreter once the app is imported; a codec first looked up later cannot
# be loaded ("unknown encoding: idna"), so both it needs are imported here.
import dataclasses
import encodings.idna  # noqa: F401
import encodings.punycode  # noqa: F401
import re
import urllib.parse

from componentize_py_types import Err
from wit_world.imports import outgoing_handler, streams
from wit_world.imports import wasi_http_types as http_types

# How long connecting, the first response byte, and each later byte may take.
TIMEOUT_S = 10.0
# The most of a body `get` reads; the rest is left unread.
MAX_BODY_BYTES = 8 << 20
MAX_REDIRECTS = 5
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
# Headers not sent on to another origin when following a redirect.
CREDENTIALS = ("authorization", "cookie", "proxy-authorization")
# How the host's refusals begin (an `internal-error` error code).
DENIED_PREFIX = "denied: "


class HttpError(Exception):
    """A request that got no response. `str(error)` is the reason; when the
    host refused the request (no network grant covers it, a private address)
    it is the host's text, starting "denied: ", and `denied` is true."""

    def __init__(self, url: str, reason: str):
        super().__init__(reason)
        self.url = url
        self.denied = reason.startswith(DENIED_PREFIX)


def get(
    url: str,
    headers: dict[str, str] | None = None,
    *,
    timeout: float = TIMEOUT_S,
    max_bytes: int = MAX_BODY_BYTES,
    follow_redirects: bool = True,
) -> tuple[int, dict[str, str], bytes]:
    """GETs an http:// or https:// `url`: returns (status, headers, body).

    The response's header names are lowercase (a repeated header's values
    joined with ", "); the body is cut at `max_bytes`. Redirects are followed
    (at most MAX_REDIRECTS), each a new request the host checks the same way.
    Any status is a response (404 too). Raises ValueError for a URL or header
    that cannot be sent, HttpError when no response came.
    """
    headers = dict(headers or {})
    for _ in range(MAX_REDIRECTS + 1):
        status, response_headers, body = _send(url, headers, timeout, max_bytes)
        location = response_headers.get("location")
        if not follow_redirects or status not in REDIRECT_STATUSES or not location:
            return status, response_headers, body
        target = urllib.parse.urljoin(url, location)
        if _origin(target) != _origin(url):
            headers = {k: v for k, v in headers.items() if k.lower() not in CREDENTIALS}
        url = target
    raise HttpError(url, f"more than {MAX_REDIRECTS} redirects")


def describe(code: http_types.ErrorCode) -> str:
    """A wasi:http `error-code` in words: the host's own text for
    `internal-error`, else the case's name and details ("connection refused",
    "DNS error (rcode NXDOMAIN)")."""
    if isinstance(code, http_types.ErrorCode_InternalError):
        return code.value or "internal error"
    if isinstance(code, http_types.ErrorCode_HttpRequestDenied):
        return DENIED_PREFIX + "the host refused the request"
    words = re.findall(r"[A-Z][a-z]*", type(code).__name__.removeprefix("ErrorCode_"))
    text = " ".join(w.upper() if w in ("Dns", "Http", "Ip", "Tls") else w.lower() for w in words)
    detail = getattr(code, "value", None)
    if dataclasses.is_dataclass(detail):
        detail = ", ".join(f"{k} {v}" for k, v in vars(detail).items() if v is not None)
    return f"{text} ({detail})" if detail not in (None, "") else text


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.hostname, parts.port


def _send(
    url: str, headers: dict[str, str], timeout: float, max_bytes: int
) -> tuple[int, dict[str, str], bytes]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http:// or https:// URL: {url!r}")
    host = parts.hostname
    if ":" in host:  # IPv6
        host = f"[{host}]"
    elif not host.isascii():
        host = host.encode("idna").decode("ascii")
    authority = f"{host}:{parts.port}" if parts.port is not None else host
    safe = "/%:@!$&'()*+,;=~"
    path = urllib.parse.quote(parts.path or "/", safe=safe)
    if parts.query:
        path += "?" + urllib.parse.quote(parts.query, safe=safe + "?")
    try:
        fields = http_types.Fields.from_list([(name, str(value).encode()) for name, value in headers.items()])
    except Err as error:
        problem = type(error.value).__name__.removeprefix("HeaderError_")
        raise ValueError(f"a request header cannot be sent ({problem}): {', '.join(headers)}") from None
    request = http_types.OutgoingRequest(fields)
    options = http_types.RequestOptions()
    nanoseconds = int(timeout * 1e9)
    try:
        request.set_method(http_types.Method_Get())
        request.set_scheme(http_types.Scheme_Https() if scheme == "https" else http_types.Scheme_Http())
        request.set_authority(authority)
        request.set_path_with_query(path)
        options.set_connect_timeout(nanoseconds)
        options.set_first_byte_timeout(nanoseconds)
        options.set_between_bytes_timeout(nanoseconds)
    except Err:
        raise ValueError(f"cannot send a request to {url!r}") from None
    # Both are the host's from here on.
    try:
        future = outgoing_handler.handle(request, options)
    except Err as error:
        raise HttpError(url, describe(error.value)) from None
    # Resources are dropped before what they came from: the pollable before
    # the future, the stream before the body before the response.
    with future:
        with future.subscribe() as pollable:
            pollable.block()
        outcome = future.get()
    if outcome is None or isinstance(outcome, Err):  # not ready; taken before
        raise HttpError(url, "the response was lost")
    if isinstance(outcome.value, Err):
        raise HttpError(url, describe(outcome.value.value))
    with outcome.value.value as response:
        status = response.status()
        with response.headers() as fields:
            entries = fields.entries()
        with response.consume() as body, body.stream() as stream:
            data = _read(url, stream, max_bytes)
    response_headers: dict[str, str] = {}
    for name, value in entries:
        name, text = name.lower(), value.decode("latin-1")
        response_headers[name] = f"{response_headers[name]}, {text}" if name in response_headers else text
    return status, response_headers, data


def _read(url: str, stream: streams.InputStream, max_bytes: int) -> bytes:
    """The body, up to `max_bytes`, waiting for each chunk."""
    chunks: list[bytes] = []
    size = 0
    while size < max_bytes:
        try:
            chunk = stream.blocking_read(min(max_bytes - size, 64 << 10))
        except Err as error:
            if isinstance(error.value, streams.StreamError_Closed):
                break
            with error.value.value as failure:
                code = http_types.http_error_code(failure)
                reason = describe(code) if code is not None else failure.to_debug_string()
            raise HttpError(url, f"reading the response failed: {reason}") from None
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
