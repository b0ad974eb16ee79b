"""Reading the user's JSON and JSONL files, with errors that name the file and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spade_lsp.errors import InputError


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as error:
        raise InputError(f"{path}: no such file") from error
    except IsADirectoryError as error:
        raise InputError(f"{path}: is a directory") from error
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: not valid UTF-8 ({error.reason} at byte {error.start})") from error
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror}") from error


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; a malformed line is an error naming it."""
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}:{number}: invalid JSON: {error.msg} (column {error.colno})") from error
        if not isinstance(value, dict):
            raise InputError(f"{path}:{number}: expected a JSON object, got {type(value).__name__}")
        rows.append((number, value))
    if not rows:
        raise InputError(f"{path}: no JSON lines")
    return rows


def read_json_file(path: Path) -> Any:
    """One JSON document; an unreadable file or invalid JSON is an error naming the file (and line)."""
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}: invalid JSON: {error.msg} (column {error.colno})") from error


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
