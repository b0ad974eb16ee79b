"""Which documents are spade's: prompt files (matched by the ``prompt_globs`` setting), sidecar modules
(``NAME_assertions.py`` beside a prompt) and examples files (``NAME.examples.jsonl`` beside a prompt). Also
URI <-> path, and finding a file's workspace root."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final, Literal
from urllib.parse import urlparse

from pygls.uris import from_fs_path, to_fs_path

from spade_lsp import PROMPT_SUFFIXES, examples_path, sidecar_path

#: Language ids an editor may give a prompt buffer that has no file name to match (``untitled:``).
PROMPT_LANGUAGE_IDS: Final = frozenset({"prompt", "prompty", "spade-prompt", "plaintext", "markdown"})
SIDECAR_SUFFIX: Final = "_assertions.py"
EXAMPLES_SUFFIX: Final = ".examples.jsonl"
_STRONG_MARKERS: Final = ("spade.toml", ".spade")
_WEAK_MARKERS: Final = ("pyproject.toml", ".git")

Kind = Literal["prompt", "sidecar", "examples"]


@dataclass(frozen=True, slots=True)
class DocumentRef:
    """A document spade handles. ``path`` is None for buffers with no file (``untitled:`` and other schemes):
    those get diagnostics from their text, and no history."""

    uri: str
    kind: Kind
    path: Path | None
    root: Path
    prompt: Path | None  # a prompt's own path, or the prompt a sidecar or examples file belongs to


def path_of(uri: str) -> Path | None:
    """The file behind a ``file:`` URI; None for every other scheme."""
    try:
        fs_path = to_fs_path(uri)
    except Exception:  # a malformed URI is simply not a file
        return None
    return Path(fs_path) if fs_path else None


def uri_of(path: Path) -> str:
    uri = from_fs_path(str(path))
    return uri if uri is not None else path.as_uri()


def uri_name(uri: str) -> str:
    """The last path segment of any URI (for matching a non-file document's name)."""
    return urlparse(uri).path.rsplit("/", 1)[-1]


@lru_cache(maxsize=64)
def _glob_pattern(globs: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for the globs: ``**/`` matches any directories (or none), ``*`` and ``?`` stay in a segment."""
    parts: list[str] = []
    for glob in globs:
        out = []
        i = 0
        while i < len(glob):
            if glob.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
            elif glob.startswith("**", i):
                out.append(".*")
                i += 2
            elif glob[i] == "*":
                out.append("[^/]*")
                i += 1
            elif glob[i] == "?":
                out.append("[^/]")
                i += 1
            else:
                out.append(re.escape(glob[i]))
                i += 1
        parts.append("".join(out))
    return re.compile("|".join(f"(?:{part})" for part in parts) if parts else "(?!)")


def matches(relative: str, globs: Sequence[str]) -> bool:
    """Does the workspace-relative POSIX path match one of the prompt globs?"""
    return _glob_pattern(tuple(globs)).fullmatch(relative) is not None


def relative_to(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def find_root(path: Path, folders: Iterable[Path]) -> Path:
    """The workspace root of a file, as the CLI finds it (spade.toml or .spade/, else pyproject.toml or .git),
    so the editor and the CLI share one store and one daemon. Without any marker: the editor's workspace folder
    that holds the file, else the file's directory."""
    start = path.parent
    for markers in (_STRONG_MARKERS, _WEAK_MARKERS):
        for directory in (start, *start.parents):
            if any((directory / marker).exists() for marker in markers):
                return directory
    holding = [folder for folder in folders if folder == start or folder in start.parents]
    return max(holding, key=lambda folder: len(folder.parts)) if holding else start


def _prompt_beside(
    file: Path, suffix: str, companion: Callable[[Path], Path], globs: Sequence[str], root: Path
) -> Path | None:
    """The prompt beside ``file`` whose ``companion`` file it is (the usual prompt suffixes first, then any
    other file in the directory that the prompt globs match), or None."""
    if not file.name.endswith(suffix):
        return None
    stem = file.name[: -len(suffix)]
    candidates = [file.with_name(stem + ending) for ending in PROMPT_SUFFIXES]
    with contextlib.suppress(OSError):
        candidates += sorted(p for p in file.parent.iterdir() if p.is_file() and p not in candidates)
    for candidate in candidates:
        if candidate.is_file() and companion(candidate) == file and matches(relative_to(candidate, root), globs):
            return candidate
    return None


def prompt_for_sidecar(sidecar: Path, globs: Sequence[str], root: Path) -> Path | None:
    """The prompt beside ``sidecar`` whose sidecar module it is, or None (then it is an ordinary module)."""
    return _prompt_beside(sidecar, SIDECAR_SUFFIX, sidecar_path, globs, root)


def prompt_for_examples(examples: Path, globs: Sequence[str], root: Path) -> Path | None:
    """The prompt beside ``examples`` whose examples file it is, or None (then it is just a JSONL file)."""
    return _prompt_beside(examples, EXAMPLES_SUFFIX, examples_path, globs, root)
