"""Reading prompt files: validation of what a user might point spade at, and YAML front matter."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from spade_lsp._files import decode_text, read_limited
from spade_lsp.errors import ConfigError, PromptFileError

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(\r?\n|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class PromptText:
    """A prompt's full text, and its front matter blanked out (same length and line breaks), so sentence
    offsets and ranges found in ``body`` are valid in ``text``."""

    text: str
    body: str
    front_matter: dict[str, Any] = field(default_factory=dict)


def parse_prompt(text: str, *, source: str = "<prompt>") -> PromptText:
    """Split off YAML front matter (``---`` ... ``---`` at the very top), keeping offsets intact."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return PromptText(text=text, body=text)
    try:
        loaded = yaml.safe_load(match.group(1) or "") or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: invalid YAML front matter: {error}".splitlines()[0]) from error
    except RecursionError as error:
        raise ConfigError(f"{source}: invalid YAML front matter: nested too deeply") from error
    if not isinstance(loaded, dict):
        raise ConfigError(f"{source}: front matter must be a mapping of settings, not {type(loaded).__name__}")
    blank = re.sub(r"[^\r\n]", " ", match.group(0))
    return PromptText(text=text, body=blank + text[match.end() :], front_matter=loaded)


def decode_prompt(data: bytes, *, source: str, max_bytes: int) -> str:
    """Bytes of a prompt file as text, or a one-line :class:`PromptFileError` saying what is wrong."""
    if len(data) > max_bytes:
        raise PromptFileError(
            f"{source}: {len(data) / 1e6:.1f} MB is larger than the {max_bytes / 1e6:g} MB limit for a prompt "
            "(raise max_prompt_bytes in [tool.spade] if this really is a prompt)"
        )
    if b"\x00" in data[:8192]:
        raise PromptFileError(f"{source}: looks like a binary file (NUL bytes), not a prompt")
    return decode_text(data, source, error=PromptFileError, encoding="utf-8-sig")


def read_prompt_file(path: Path, *, max_bytes: int) -> str:
    """Read and validate a prompt file: a regular file of at most ``max_bytes`` (never more is read)."""
    data = read_limited(
        path,
        limit=max_bytes,
        what="a prompt",
        hint="raise max_prompt_bytes in [tool.spade] if this really is a prompt",
        error=PromptFileError,
    )
    return decode_prompt(data, source=str(path), max_bytes=max_bytes)
