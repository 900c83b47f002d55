"""A line-oriented TCP connection over `wasi:sockets`, the way a chat adapter
needs it: lines read as they come, a `wait` that wakes on input, on the
host's work (`chat-host.host-work`: an answer to send) or on a timeout, and
blocking writes. Python's own `socket` module cannot wait on the host's work
together with the socket, so this uses the WASI interfaces directly.

Every pollable is dropped (`with`) before the stream or socket it watches:
WASI refuses to drop a resource whose pollable is still alive.
"""

from typing import Optional

from componentize_py_types import Err
from protocol import LineBuffer
from wit_world.imports import (
    chat_host,
    instance_network,
    ip_name_lookup,
    monotonic_clock,
    poll,
    tcp_create_socket,
)
from wit_world.imports.network import (
    ErrorCode,
    IpAddress_Ipv4,
    IpAddress_Ipv6,
    IpAddressFamily,
    IpSocketAddress_Ipv4,
    IpSocketAddress_Ipv6,
    Ipv4SocketAddress,
    Ipv6SocketAddress,
)
from wit_world.imports.streams import StreamError_Closed

# How many bytes one read asks the socket for.
READ_SIZE = 16 * 1024
# The most `blocking_write_and_flush` takes in one call (WASI's limit).
WRITE_CHUNK = 4096

NANOS_PER_MS = 1_000_000


class ConnectionLost(Exception):
    """The connection failed or the server closed it."""


def error_text(error: Exception) -> str:
    """What a WASI error says, for a message."""
    value = error.value if isinstance(error, Err) else error
    if isinstance(value, StreamError_Closed):
        return "closed by the server"
    if isinstance(value, ErrorCode):
        return value.name.lower().replace("_", " ")
    # A variant case of the host's (`host-error`) carries its message.
    return str(getattr(value, "value", value))


def wait_for(pollable, deadline_ns: int) -> bool:
    """Waits until `pollable` is ready or the monotonic clock reaches
    `deadline_ns`; true when it is ready. Drops `pollable`."""
    with pollable, monotonic_clock.subscribe_instant(deadline_ns) as timer:
        poll.poll([pollable, timer])
        return pollable.ready()


def resolve(network, host: str, deadline_ns: int) -> list:
    """The addresses `host` resolves to (an address resolves to itself)."""
    try:
        with ip_name_lookup.resolve_addresses(network, host) as stream:
            addresses = []
            while True:
                try:
                    address = stream.resolve_next_address()
                except Err as error:
                    if error.value != ErrorCode.WOULD_BLOCK:
                        raise
                    if not wait_for(stream.subscribe(), deadline_ns):
                        raise ConnectionLost(f"looking up {host} timed out")
                    continue
                if address is None:
                    return addresses
                addresses.append(address)
    except Err as error:
        raise ConnectionLost(f"cannot look up {host}: {error_text(error)}")


def socket_address(address, port: int):
    """`address` with `port`, as the socket takes it."""
    if isinstance(address, IpAddress_Ipv4):
        return IpAddressFamily.IPV4, IpSocketAddress_Ipv4(Ipv4SocketAddress(port, address.value))
    assert isinstance(address, IpAddress_Ipv6)
    return IpAddressFamily.IPV6, IpSocketAddress_Ipv6(Ipv6SocketAddress(port, 0, address.value, 0))


class LineConnection:
    """One open TCP connection, read and written line by line."""

    # `socket` is None over TLS: the host holds that one.
    def __init__(self, socket, input_stream, output_stream, max_line: int):
        self.socket = socket
        self.input = input_stream
        self.output = output_stream
        self.buffer = LineBuffer(max_line)
        self.closed = False

    @staticmethod
    def connect_tcp(host: str, port: int, timeout_ms: int, max_line: int) -> "LineConnection":
        """Connects to the first address of `host` that answers, within
        `timeout_ms`. The host checks each address against the plugin's
        network grant: one not granted is refused (access denied)."""
        deadline = monotonic_clock.now() + timeout_ms * NANOS_PER_MS
        network = instance_network.instance_network()
        failures = []
        for address in resolve(network, host, deadline):
            family, remote = socket_address(address, port)
            socket = tcp_create_socket.create_tcp_socket(family)
            try:
                socket.start_connect(network, remote)
                while True:
                    try:
                        input_stream, output_stream = socket.finish_connect()
                        return LineConnection(socket, input_stream, output_stream, max_line)
                    except Err as error:
                        if error.value != ErrorCode.WOULD_BLOCK:
                            raise
                    if not wait_for(socket.subscribe(), deadline):
                        raise ConnectionLost(f"connecting to {host}:{port} timed out")
            except Err as error:
                socket.__exit__(None, None, None)
                failures.append(error_text(error))
            except ConnectionLost:
                socket.__exit__(None, None, None)
                raise
        reason = "; ".join(failures) if failures else "no address"
        raise ConnectionLost(f"cannot connect to {host}:{port}: {reason}")

    @staticmethod
    def connect_tls(host: str, port: int, max_line: int) -> "LineConnection":
        """A TLS connection to `host`:`port`, checked against the network
        grant like a socket and verified by the host (its trust roots)."""
        try:
            input_stream, output_stream = chat_host.tls_connect(host, port)
        except Err as error:
            raise ConnectionLost(f"cannot connect to {host}:{port} over TLS: {error_text(error)}")
        return LineConnection(None, input_stream, output_stream, max_line)

    def read_line(self) -> Optional[str]:
        """The next complete line received, reading what the socket has
        without waiting; None when no whole line has arrived yet."""
        line = self.buffer.pop()
        while line is None:
            try:
                data = self.input.read(READ_SIZE)
            except Err as error:
                self.closed = True
                raise ConnectionLost(error_text(error))
            if not data:
                return None
            self.buffer.push(data)
            line = self.buffer.pop()
        return line

    def wait(self, timeout_ms: int) -> str:
        """Waits up to `timeout_ms` for input: "readable", "host-work" (the
        host has something for this connection) or "timeout"."""
        if self.buffer.lines:
            return "readable"
        with self.input.subscribe() as readable, chat_host.host_work() as work, \
                monotonic_clock.subscribe_duration(timeout_ms * NANOS_PER_MS) as timer:
            poll.poll([readable, work, timer])
            if readable.ready():
                return "readable"
            return "host-work" if work.ready() else "timeout"

    def write_line(self, line: str) -> None:
        """Writes `line` and a line end, waiting until it is sent."""
        data = (line + "\r\n").encode("utf-8")
        try:
            for start in range(0, len(data), WRITE_CHUNK):
                self.output.blocking_write_and_flush(data[start : start + WRITE_CHUNK])
        except Err as error:
            self.closed = True
            raise ConnectionLost(error_text(error))

    def close(self) -> None:
        """Closes the streams, then the socket (children first)."""
        for resource in (self.input, self.output, self.socket):
            if resource is not None:
                resource.__exit__(None, None, None)
