"""The language server's JSON-RPC on stdio: a reader whose framing survives a broken message, and a writer
that never sends part of one.

pygls' own loop (``pygls.io_.run_async``) reads a header line at a time and trusts ``Content-Length``. A length
that is too small leaves the rest of the body in the stream, where the next ``readline`` swallows it together
with the next message's header line; a header block without a length is skipped and its body is read as header
lines the same way. Either way the broken message and the ones after it were dropped without an answer, and a
body that was not JSON, or JSON that was not a JSON-RPC message, was only logged.

:class:`MessageReader` keeps a byte buffer instead, so it can look past a frame: a frame's body that does not
parse is examined against what follows it (a complete JSON value that ends before or after the declared length,
the next ``Content-Length:`` header right after it, nothing more arriving for a moment), and the reader
resynchronises at the next ``Content-Length:`` header (which a JSON body cannot contain: raw line breaks are not
allowed inside JSON strings). Each message lost that way gets one error answer, with the request's id when it
can be read from what arrived (JSON-RPC's null id otherwise): -32700 (parse error) for a body that is not JSON,
-32600 (invalid request) for broken framing and for JSON that is not a JSON-RPC 2.0 message, -32602 (invalid
params) for a request whose params do not match its method. Well-framed messages take the fast path: one
``json.loads`` of exactly ``Content-Length`` bytes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import select
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO, Final

from spade_lsp_server._idle_gc import IdleCollector

log = logging.getLogger(__name__)

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602

#: The largest body accepted (a 5 MB document can double in size as escaped JSON).
MAX_BODY: Final = 256 * 1024 * 1024
#: The longest header block accepted before the reader decides it is not one.
MAX_HEADERS: Final = 8 * 1024
#: How long the reader waits for more bytes before deciding that a broken frame has ended.
IDLE_S: Final = 0.5
_READ_SIZE: Final = 1 << 16

#: The start of a frame, as searched for when resynchronising: the digits and the raw line break after them make
#: it something no JSON body can contain (a JSON string holds no raw line break).
_MARKER: Final = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
#: The start of a frame where one is expected (its line may still be arriving).
_MARKER_AT: Final = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_MARKER_PREFIX: Final = b"content-length:"
_HEADER_LINE: Final = re.compile(rb"([A-Za-z0-9-]+)[ \t]*:[ \t]*(.*?)[ \t]*")
_HEADER_START: Final = re.compile(rb"[A-Za-z0-9-]*")
_TERMINATOR: Final = re.compile(rb"\r\n\r\n|\n\n|\r\n\n|\n\r\n")
_WHITESPACE: Final = b" \t\r\n"
_TOKEN: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+', re.DOTALL)
_DECODER: Final = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class Fault:
    """A message that could not be delivered: the error to answer and the id to answer it under."""

    code: int
    message: str
    id: int | str | None = None


class FrameWriter:
    """Writes every byte of each message, one message at a time. With ``PYTHONUNBUFFERED`` set (editors and
    containers often set it) stdout is a raw ``FileIO``, whose ``write`` may take only part of a large message
    when a signal interrupts it (the server stopped and continued, as job control or a debugger does); pygls'
    writer ignored the count, so the rest of the message was lost and the client read the next one's header
    inside its body."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            view = memoryview(data)
            while view:
                written = self._stream.write(view)
                if written is None:  # a non-blocking stream that took nothing: wait until it can take more
                    select.select([], [self._stream], [])
                    continue
                view = view[written:]
            self._stream.flush()

    def close(self) -> None:
        self._stream.close()


class _Eof(Exception):
    pass


def recover_id(raw: bytes | str) -> int | str | None:
    """The ``id`` member of the top-level object that ``raw`` starts (or was meant to start), when it can be read:
    a number or a string at depth one, even in a body cut short or broken further on."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    start = text.find("{")
    if start < 0:
        return None
    depth = 0
    expect_key = False
    key: str | None = None
    after_colon = False
    for match in _TOKEN.finditer(text, start):
        token = match.group()
        if token in "{[":
            depth += 1
            expect_key, key, after_colon = token == "{", None, False
        elif token in "}]":
            depth -= 1
            if depth <= 0:
                return None
        elif token == ",":
            expect_key, key, after_colon = depth == 1, None, False
        elif token == ":":
            after_colon = True
        elif depth == 1 and expect_key and not after_colon and token.startswith('"'):
            key = _string(token)
            expect_key = False
        elif depth == 1 and after_colon and key == "id":
            value = _id_value(token)
            if value is not None:
                return value
            key, after_colon = None, False
        else:
            after_colon = after_colon and depth != 1
    return None


def lost_ids(raw: bytes) -> list[int | str]:
    """The ids of the requests in a segment lost to broken framing: every complete request object in it, and the
    top-level id of an object cut short."""
    text = raw.decode("utf-8", "surrogateescape")
    ids: list[int | str] = []
    position = text.find("{")
    while position >= 0:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except ValueError:
            found = recover_id(text[position:])
            end = position + 1
        else:
            found = _message_id(value) if isinstance(value, dict) and "method" in value else None
        if found is not None and found not in ids:
            ids.append(found)
        position = text.find("{", end)
    return ids


def _string(token: str) -> str | None:
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _id_value(token: str) -> int | str | None:
    if token.startswith('"'):
        return _string(token)
    try:
        return int(token)
    except ValueError:
        return None


def _message_id(value: Any) -> int | str | None:
    """A request id as JSON-RPC defines it (a string or an integer), or None."""
    if isinstance(value, dict):
        value = value.get("id")
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value


def invalid_message(message: Any) -> Fault | None:
    """What makes parsed JSON not a JSON-RPC 2.0 message this server can take (batches are not LSP)."""
    if isinstance(message, list):
        return Fault(INVALID_REQUEST, "Invalid Request: batches are not supported")
    if not isinstance(message, dict):
        return Fault(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    msg_id = _message_id(message)
    if message.get("jsonrpc") != "2.0":
        return Fault(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', msg_id)
    if "id" in message and msg_id is None:
        return Fault(INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    if "method" in message:
        if not isinstance(message["method"], str):
            return Fault(INVALID_REQUEST, 'Invalid Request: "method" must be a string', msg_id)
        params = message.get("params")
        if params is not None and not isinstance(params, dict | list):
            return Fault(INVALID_REQUEST, 'Invalid Request: "params" must be an object or an array', msg_id)
        return None
    if msg_id is not None and ("result" in message or "error" in message):
        return None  # a response to one of the server's requests
    return Fault(INVALID_REQUEST, 'Invalid Request: no "method"', msg_id)


class MessageReader:
    """Parsed messages and framing faults from a byte stream (see the module's docstring)."""

    def __init__(self, read: Callable[[], Any], *, idle_s: float = IDLE_S) -> None:
        """``read()`` returns an awaitable of the next chunk of bytes (empty at the end of the stream)."""
        self._read = read
        self._idle_s = idle_s
        self._buffer = bytearray()
        self._pending: asyncio.Future[bytes] | None = None
        self._eof = False
        self._queued: list[Fault] = []  # faults for further requests lost in one broken segment

    async def _fill(self, timeout: float | None = None) -> bool:
        """Append the next chunk; False when ``timeout`` passed first (the read stays pending)."""
        if self._eof:
            raise _Eof
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._read())
        if timeout is not None:
            done, _ = await asyncio.wait({self._pending}, timeout=timeout)
            if not done:
                return False
        chunk = await self._pending
        self._pending = None
        if not chunk:
            self._eof = True
            raise _Eof
        self._buffer += chunk
        return True

    async def next(self) -> tuple[Any, Fault | None] | None:
        """The next message, as ``(parsed JSON, None)``, or ``(None, fault)`` for a message that was lost;
        None at the end of the stream."""
        if self._queued:
            return None, self._queued.pop(0)
        try:
            return await self._next()
        except _Eof:
            rest = bytes(self._buffer).strip(_WHITESPACE)
            self._buffer.clear()
            if rest:
                ended = "Invalid Request: the stream ended inside a message"
                return None, Fault(INVALID_REQUEST, ended, recover_id(rest))
            return None

    async def _next(self) -> tuple[Any, Fault | None]:
        buffer = self._buffer
        # a header block: skip blank lines, then wait for its end
        while True:
            start = 0
            while start < len(buffer) and buffer[start] in _WHITESPACE:
                start += 1
            del buffer[:start]
            if not buffer:
                await self._fill()
                continue
            name = _HEADER_START.match(buffer)
            assert name is not None
            if name.end() == len(buffer) and len(buffer) < 256:
                await self._fill()  # a header name still arriving
                continue
            if not (name.end() > 0 and bytes(buffer[name.end() : name.end() + 1]) in (b":", b" ", b"\t")):
                return await self._resync(Fault(INVALID_REQUEST, "Invalid Request: a message without headers"))
            end = _TERMINATOR.search(buffer, 0, MAX_HEADERS + 4)
            if end is None:
                if len(buffer) > MAX_HEADERS:
                    return await self._resync(Fault(INVALID_REQUEST, "Invalid Request: the headers do not end"))
                await self._fill()
                continue
            break
        length = self._content_length(bytes(buffer[: end.start()]))
        if isinstance(length, str):
            return await self._resync(Fault(INVALID_REQUEST, f"Invalid Request: {length}"))
        body_start = end.end()
        # the body: exactly ``length`` bytes on the fast path
        while len(buffer) < body_start + length:
            if not await self._fill(self._idle_s):
                fault = self._ended_early(body_start, length)
                if fault is not None:
                    return None, fault
        body = bytes(buffer[body_start : body_start + length])
        try:
            message = json.loads(body)
        except ValueError:
            return await self._broken_body(body_start, length)
        del buffer[: body_start + length]
        return message, None

    @staticmethod
    def _content_length(headers: bytes) -> int | str:
        """The header block's Content-Length, or what is wrong with it."""
        lengths: set[int] = set()
        for line in re.split(rb"\r?\n", headers):
            match = _HEADER_LINE.fullmatch(line)
            if match is None:
                return "a malformed header line"
            if match.group(1).lower() == b"content-length":
                value = match.group(2)
                if not value.isdigit():
                    return f"Content-Length {value[:40].decode('latin-1')!r} is not a number"
                lengths.add(int(value))
        if not lengths:
            return "a message without a Content-Length header"
        if len(lengths) > 1:
            return "conflicting Content-Length headers"
        [length] = lengths
        if length > MAX_BODY:
            return f"Content-Length {length} exceeds the limit of {MAX_BODY} bytes"
        return length

    def _ended_early(self, body_start: int, length: int) -> Fault | None:
        """Nothing more arrived for a while before ``length`` bytes: when what did arrive is a complete JSON
        value, the declared length was too large (the client waits for an answer that would never come)."""
        value, end = _decode_at(self._buffer, body_start)
        if end is None or bytes(self._buffer[end:]).strip(_WHITESPACE):
            return None
        del self._buffer[:end]
        fault = f"Invalid Request: Content-Length {length} exceeds the message"
        return Fault(INVALID_REQUEST, fault, _message_id(value))

    async def _broken_body(self, body_start: int, length: int) -> tuple[Any, Fault | None]:
        """A body of ``length`` bytes that is not JSON: a wrong length (the message ends before or after it) or
        a malformed body."""
        buffer = self._buffer
        body_end = body_start + length
        while True:
            value, end = _decode_at(buffer, body_start)
            if end is not None:
                if end > body_end:  # the message goes on past the declared length
                    del buffer[:end]
                    fault = f"Content-Length {length} is shorter than the message"
                    return None, Fault(INVALID_REQUEST, f"Invalid Request: {fault}", _message_id(value))
                rest = bytes(buffer[end:]).lstrip(_WHITESPACE)
                if end < body_end and _MARKER_AT.match(rest):  # the next message starts inside the declared length
                    del buffer[:end]
                    fault = f"Content-Length {length} exceeds the message"
                    return None, Fault(INVALID_REQUEST, f"Invalid Request: {fault}", _message_id(value))
                if end < body_end and len(rest) < len(_MARKER_PREFIX) and _MARKER_PREFIX.startswith(rest.lower()):
                    try:  # the next header may be starting: wait for enough of it to tell
                        if await self._fill(self._idle_s):
                            continue
                    except _Eof:
                        pass
                break  # a value with more after it within the length, or not UTF-8: malformed
            if _state(buffer, body_start, body_end) == "invalid":
                break  # broken within its own length: the length is trusted
            # the body is JSON cut short at the declared length: a length too small, or a sender that cut it
            beyond = bytes(buffer[body_end:]).lstrip(_WHITESPACE)
            if beyond and _MARKER_AT.match(beyond):
                break  # the next message follows at once: the body itself was cut short
            if beyond and _state(buffer, body_start, len(buffer)) == "invalid":
                fault = f"Content-Length {length} does not frame the message"
                return await self._resync(Fault(INVALID_REQUEST, f"Invalid Request: {fault}"))
            try:
                if await self._fill(self._idle_s):
                    continue
            except _Eof:
                pass
            break  # nothing more came
        body = bytes(buffer[body_start:body_end])
        del buffer[:body_end]
        return None, Fault(PARSE_ERROR, "Parse error: the message is not valid JSON", recover_id(body))

    async def _resync(self, fault: Fault) -> tuple[Any, Fault | None]:
        """Drop bytes up to the next ``Content-Length:`` header after the start of the buffer (or until a
        complete JSON value with nothing after it, or until nothing more arrives), answering for what was lost."""
        buffer = self._buffer
        while True:
            marker = _MARKER.search(buffer, 1)
            if marker is not None:
                lost = bytes(buffer[: marker.start()])
                del buffer[: marker.start()]
                break
            _, end = _decode_at(buffer, _first_value(buffer))
            if end is not None and not bytes(buffer[end:]).strip(_WHITESPACE):
                lost = bytes(buffer[:end])
                del buffer[:end]
                break
            if len(buffer) > MAX_BODY or not await self._fill(self._idle_s):
                lost = bytes(buffer)
                buffer.clear()
                break
        ids = [fault.id] if fault.id is not None else []
        ids += [i for i in lost_ids(lost) if i not in ids]
        if not ids:
            return None, fault
        self._queued += [Fault(fault.code, fault.message, i) for i in ids[1:]]
        return None, Fault(fault.code, fault.message, ids[0])


def _first_value(buffer: bytearray) -> int:
    """Where the first JSON object or array of a lost segment starts (its end when there is none)."""
    positions = [p for p in (buffer.find(b"{"), buffer.find(b"[")) if p >= 0]
    return min(positions) if positions else len(buffer)


def _decode_at(buffer: bytearray, start: int) -> tuple[Any, int | None]:
    """The JSON value that starts at byte ``start`` (after whitespace) and the byte where it ends, or (None,
    None) when the bytes there do not (yet) hold a complete one."""
    text = bytes(buffer[start:]).decode("utf-8", "surrogateescape")
    stripped = len(text) - len(text.lstrip())
    try:
        value, end = _DECODER.raw_decode(text, stripped)
    except ValueError:
        return None, None
    return value, start + len(text[:end].encode("utf-8", "surrogateescape"))


def _state(buffer: bytearray, start: int, end: int) -> str:
    """Whether the bytes ``start:end`` hold a "complete" JSON value, the beginning of one cut short
    ("incomplete"), or bytes that no continuation can make JSON ("invalid")."""
    text = bytes(buffer[start:end]).decode("utf-8", "surrogateescape")
    try:
        _DECODER.raw_decode(text, len(text) - len(text.lstrip()))
    except json.JSONDecodeError as error:
        cut = error.msg.startswith("Unterminated string") or error.pos >= len(text.rstrip())
        return "incomplete" if cut else "invalid"
    except ValueError:
        return "invalid"
    return "complete"


async def serve(
    stop_event: threading.Event,
    stdin: BinaryIO,
    protocol: Any,
    *,
    idle_s: float = IDLE_S,
) -> None:
    """Read messages from ``stdin`` and hand them to ``protocol`` (a pygls ``JsonRPCProtocol``) until the stream
    ends or ``stop_event`` is set; answer every message that cannot be delivered."""
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spade-lsp-stdin")
    read1 = getattr(stdin, "read1", None)

    def read_chunk() -> bytes:
        return bytes(read1(_READ_SIZE) if read1 is not None else stdin.read(_READ_SIZE))

    reader = MessageReader(lambda: loop.run_in_executor(executor, read_chunk), idle_s=idle_s)
    collector = IdleCollector(loop)
    try:
        while not stop_event.is_set():
            item = await reader.next()
            if item is None:
                break
            collector.activity()
            message, fault = item
            if fault is None:
                fault = invalid_message(message)
            if fault is None:
                fault = deliver(protocol, message)
            if fault is not None:
                answer(protocol, fault, message)
    finally:
        collector.close()
        executor.shutdown(wait=False, cancel_futures=True)


def deliver(protocol: Any, message: dict[str, Any]) -> Fault | None:
    """Structure a valid JSON-RPC message as pygls does and hand it over; a request whose params do not match
    its method comes back as a fault to answer."""
    from pygls.exceptions import JsonRpcInvalidParams

    try:
        structured = protocol.structure_message(message)
    except JsonRpcInvalidParams:
        return Fault(INVALID_PARAMS, f"Invalid params for {message.get('method')!s:.80}", _message_id(message))
    except Exception as error:  # pygls wraps anything else as an internal error
        return Fault(INVALID_REQUEST, f"Invalid Request: {error or type(error).__name__}", _message_id(message))
    try:
        protocol.handle_message(structured)
    except Exception:
        log.exception("could not handle a message")
    return None


def answer(protocol: Any, fault: Fault, message: Any) -> None:
    """Send the error answer for a lost message; a notification or a response that is broken beyond framing is
    only logged (JSON-RPC answers neither)."""
    if isinstance(message, dict) and "method" not in message and fault.id is not None:
        log.warning("dropped a malformed response %r: %s", fault.id, fault.message)
        return
    if isinstance(message, dict) and "id" not in message and fault.code == INVALID_PARAMS:
        log.warning("dropped a notification: %s", fault.message)
        return
    log.warning("answered a lost message (id %r) with %d: %s", fault.id, fault.code, fault.message)
    protocol._send_data({"jsonrpc": "2.0", "id": fault.id, "error": {"code": fault.code, "message": fault.message}})
