"""What the daemon and its clients share: file names under ``.spade/``, JSON-RPC framing and error codes.

Kept free of asyncio, the engine and any third-party import, so both ends (and the language server's start-up
path) load it for nothing. The protocol itself is described in ``docs/daemon-protocol.md``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

PROTOCOL_VERSION: Final = 1
STATE_DIR: Final = ".spade"
SOCKET_NAME: Final = "daemon.sock"
LOCK_NAME: Final = "daemon.lock"
INFO_NAME: Final = "daemon.json"
LOG_NAME: Final = "daemon.log"
#: The spawned daemon's stdout and stderr: where a crash before logging starts ends up.
OUT_NAME: Final = "daemon.out"
#: Longest message either end accepts (a sidecar module's text travels in one line).
MAX_MESSAGE_BYTES: Final = 64 * 1024 * 1024
#: ``sun_path`` holds 108 bytes on Linux, including the terminating NUL.
SUN_PATH_MAX: Final = 107

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
SPADE_ERROR: Final = -32000
JOB_NOT_FOUND: Final = -32001

FINISHED_STATUSES: Final = frozenset({"done", "failed", "cancelled"})


def state_dir(root: Path) -> Path:
    return root / STATE_DIR


def socket_path(root: Path) -> Path:
    """The daemon's socket for the workspace at ``root`` (which is resolved first)."""
    return state_dir(Path(root).resolve()) / SOCKET_NAME


@contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """An address ``bind``/``connect`` accept for the socket file ``path``: the path itself when it fits in
    ``sun_path``, else ``/proc/self/fd/<fd>/NAME`` through a descriptor of its directory (held open for the
    ``with`` block), so workspaces nested deeper than 107 bytes still work."""
    if len(os.fsencode(path)) <= SUN_PATH_MAX:
        yield str(path)
        return
    if not os.path.isdir("/proc/self/fd"):
        raise OSError(f"{path} is longer than {SUN_PATH_MAX} bytes and this system has no /proc/self/fd")
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{directory}/{path.name}"
    finally:
        os.close(directory)


def encode(message: Mapping[str, Any]) -> bytes:
    """One message as one line: ``json.dumps`` escapes every newline inside strings. Text that UTF-8 cannot
    carry (a lone surrogate from an editor buffer) is sent as ``\\u`` escapes; the receiver decides."""
    try:
        return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(message, separators=(",", ":")) + "\n").encode("ascii")


def request(request_id: int, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def notification(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": dict(params)}


def response(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
