"""Reading the user's JSON and JSONL files, with errors that name the file and line.

Every file is read through :func:`spade_lsp._files.read_limited` (a regular file, within a size limit), and
every JSON text through :func:`loads`, which turns what :func:`json.loads` does not report as a
``JSONDecodeError`` (nesting deep enough to exhaust the stack, a number too long to convert) into the same
one-line :class:`~spade_lsp.errors.InputError`, and refuses values nested deeper than :data:`MAX_JSON_DEPTH`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from spade_lsp._files import MAX_DATA_BYTES, read_limited_text
from spade_lsp.errors import InputError

MAX_JSON_DEPTH = 200
"""Deeper nesting than any real input needs. Deeper values are refused, so no code that walks them later
(validation, rendering, ``json.dumps``) can run out of stack."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _depth_over(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers more than ``limit`` deep (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values() if isinstance(child, dict | list))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False


def loads(text: str, *, where: str, with_line: bool = False) -> Any:
    """``json.loads`` for user input: any failure is an :class:`InputError` starting with ``where`` (with
    ``with_line``, the line of the error is appended: ``FILE:LINE``), one line, never a traceback."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        line = f":{error.lineno}" if with_line else ""
        raise InputError(f"{where}{line}: invalid JSON: {error.msg} (column {error.colno})") from error
    except RecursionError as error:
        raise InputError(f"{where}: invalid JSON: nested more than {MAX_JSON_DEPTH} levels deep") from error
    except ValueError as error:  # e.g. an integer with more digits than int() converts
        raise InputError(f"{where}: invalid JSON: {str(error).splitlines()[0]}") from error
    if _SURROGATE_ESCAPE.search(text) is not None:
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as error:
            raise InputError(
                f"{where}: invalid JSON: a lone surrogate escape (\\u{ord(error.object[error.start]):04x}) is not "
                "valid Unicode"
            ) from error
    deep_enough = text.count("[") + text.count("{") > MAX_JSON_DEPTH
    if deep_enough and _depth_over(value, MAX_JSON_DEPTH):
        raise InputError(f"{where}: invalid JSON: nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def _read_text(path: Path) -> str:
    return read_limited_text(
        path, limit=MAX_DATA_BYTES, what="a JSON input file", encoding="utf-8-sig", error=InputError
    )


def read_jsonl(
    path: Path, *, limit: int = MAX_DATA_BYTES, what: str = "a JSON lines file"
) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; a malformed line is an error naming it."""
    rows: list[tuple[int, dict[str, Any]]] = []
    text = read_limited_text(path, limit=limit, what=what, encoding="utf-8-sig")
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        value = loads(line, where=f"{path}:{number}")
        if not isinstance(value, dict):
            raise InputError(f"{path}:{number}: expected a JSON object, got {type(value).__name__}")
        rows.append((number, value))
    if not rows:
        raise InputError(f"{path}: no JSON lines")
    return rows


def read_json_file(path: Path) -> Any:
    """One JSON document; an unreadable file or invalid JSON is an error naming the file (and line)."""
    return loads(_read_text(path), where=str(path), with_line=True)


def read_versions_file(path: Path) -> list[str]:
    """A JSON list of prompt versions, oldest first: strings, or objects with a `text` or `content` field."""
    value = read_json_file(path)
    if not isinstance(value, list) or not value:
        raise InputError(f"{path}: expected a non-empty JSON list of versions (oldest first)")
    texts: list[str] = []
    for index, item in enumerate(value):
        if isinstance(item, dict):
            item = item.get("text", item.get("content"))
        if not isinstance(item, str):
            raise InputError(f"{path}: version {index + 1} is not a string (or an object with `text`)")
        texts.append(item)
    return texts
