"""Files a user keeps beside a prompt, and writing them safely."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Final

PROMPT_SUFFIXES: Final = (".prompt.md", ".prompt.txt", ".prompt", ".prompty")


def prompt_stem(prompt: Path) -> str:
    """``emails.prompt.md`` -> ``emails``: the NAME that sidecar files share."""
    name = prompt.name
    for suffix in PROMPT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return prompt.stem


def examples_path(prompt: Path) -> Path:
    """``NAME.examples.jsonl`` beside the prompt."""
    return prompt.with_name(f"{prompt_stem(prompt)}.examples.jsonl")


def sidecar_path(prompt: Path) -> Path:
    """``NAME_assertions.py`` beside the prompt (NAME made a valid module name)."""
    return prompt.with_name(f"{re.sub(r'[^0-9A-Za-z_]', '_', prompt_stem(prompt))}_assertions.py")


def atomic_write_text(path: Path, text: str) -> None:
    """Write beside the target and rename over it, so an interrupted write never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
