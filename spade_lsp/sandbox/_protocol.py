"""Length-prefixed JSON frames between the parent and a worker: never pickle, so a worker can only send data.

Each frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON (always a list whose first
item names the message). Both sides read with ``os.read`` into a buffer, so a partial frame simply waits.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Final

__all__ = ["MAX_FRAME", "FrameBuffer", "ProtocolError", "encode"]

MAX_FRAME: Final = 64 * 1024 * 1024
_HEADER: Final = struct.Struct(">I")


class ProtocolError(Exception):
    """A peer sent something that is not a well-formed frame."""


def encode(message: list[Any]) -> bytes:
    """One frame; raises ``TypeError``/``ValueError`` when the message is not JSON data."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=True).encode("utf-8")
    return _HEADER.pack(len(body)) + body


class FrameBuffer:
    """Accumulates bytes from one file descriptor and yields complete messages."""

    def __init__(self, fd: int, max_frame: int = MAX_FRAME) -> None:
        self.fd = fd
        self.max_frame = max_frame
        self._buffer = bytearray()
        self.eof = False

    def fill(self, size: int = 1 << 16) -> bool:
        """Read what is available (one ``read`` call); False at end of file."""
        try:
            chunk = os.read(self.fd, size)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self._buffer += chunk
        return True

    def pop(self) -> list[Any] | None:
        """The next complete message, or None when more bytes are needed."""
        if len(self._buffer) < _HEADER.size:
            return None
        (length,) = _HEADER.unpack_from(self._buffer, 0)
        if length > self.max_frame:
            raise ProtocolError(f"frame of {length} bytes exceeds the limit")
        end = _HEADER.size + length
        if len(self._buffer) < end:
            return None
        body = bytes(self._buffer[_HEADER.size : end])
        del self._buffer[:end]
        try:
            message = json.loads(body)
        except (ValueError, RecursionError) as error:
            raise ProtocolError(f"malformed frame: {error}") from None
        if not isinstance(message, list) or not message or not isinstance(message[0], str):
            raise ProtocolError("a frame must be a non-empty list starting with its type")
        return message
