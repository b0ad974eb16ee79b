"""The sidecar module ``NAME_assertions.py``: rendering candidates into it without losing the user's work.

Every generated function is preceded by ``# spade: generated <digest>``, the digest of its own text. On the
next run a function whose text still matches its digest is spade's to rewrite; any other ``assert_*``
function (edited, or written by hand) is kept byte for byte, and a candidate with its name is skipped.
Output is deterministic: the same module and candidates give the same bytes, so a re-run changes nothing.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from spade_lsp._files import atomic_write_text, read_sidecar_text
from spade_lsp.assertions import ASSERTION_PREFIX
from spade_lsp.errors import InputError
from spade_lsp.synthesis import Candidate

MARKER: Final = "# spade: generated"
_MARKER_LINE = re.compile(r"^# spade: generated ([0-9a-f]{12})\s*$")
IMPORTS: Final = ("from spade_lsp import checks", "from spade_lsp.assertions import ask_llm, assertion")


class SidecarSyntaxError(InputError):
    """The sidecar module does not parse; the message names the file and line."""


@dataclass(slots=True)
class SidecarUpdate:
    """What writing candidates into a sidecar module did."""

    path: Path
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept_edited: list[str] = field(default_factory=list)
    written: bool = False


@dataclass(frozen=True, slots=True)
class _Chunk:
    text: str
    name: str | None = None  # set for assert_* functions
    generated: bool = False  # still exactly as spade wrote it


def _digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:12]


def render_function(candidate: Candidate) -> str:
    """One candidate as decorated Python source, without the marker line."""
    arguments = [
        f"category={candidate.category!r}",
        f"sentence={candidate.sentence!r}",
        f"version={candidate.version!r}",
        f"synthesizer={candidate.synthesizer!r}",
    ]
    if candidate.removed_in is not None:
        arguments.append(f"removed_in={candidate.removed_in!r}")
    if candidate.check is not None:
        arguments.append(f"check={dict(candidate.check)!r}")
    if candidate.asks_llm:
        arguments.append("asks_llm=True")
    arguments.append(f"description={candidate.description!r}")
    decorator = "@assertion(\n" + "".join(f"    {argument},\n" for argument in arguments) + ")\n"
    if candidate.source is not None:
        return decorator + candidate.source.strip() + "\n"
    docstring = ""
    if len(candidate.sentences) > 1 or candidate.removed_in is not None:
        lines = ["Serves:", *(f"- {sentence}" for sentence in candidate.sentences or (candidate.sentence,))]
        if candidate.removed_in is not None:
            lines.append(f"Its sentence is no longer in the prompt: removed or reworded in v{candidate.removed_in}.")
        body = "\n    ".join(line.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') for line in lines)
        docstring = f'    """{body}\n    """\n'
    if candidate.expression is None:
        raise ValueError(f"candidate {candidate.name} has neither an expression nor source")
    return (
        decorator
        + f"def {candidate.name}(example: dict, prompt: str, response: str) -> bool:\n"
        + docstring
        + f"    return {candidate.expression}\n"
    )


def _generated_block(candidate: Candidate) -> str:
    body = render_function(candidate)
    return f"{MARKER} {_digest(body)}\n{body}"


def header(prompt_name: str) -> str:
    return (
        f'"""Assertions on the outputs of {prompt_name}, run by spade-lsp (`spade eval`).\n\n'
        f"Functions under a `{MARKER}` line are rewritten by `spade synthesize` until you edit them; edited\n"
        'and hand-written `assert_*` functions are never touched.\n"""\n\n' + "\n".join(IMPORTS) + "\n"
    )


def parse_module(path: Path, source: str) -> ast.Module:
    """The module's syntax tree, or :class:`SidecarSyntaxError` naming the line (never a traceback)."""
    try:
        return ast.parse(source, filename=str(path))
    except SyntaxError as error:
        line = f":{error.lineno}" if error.lineno else ""
        raise SidecarSyntaxError(f"{path}{line}: syntax error: {error.msg}; fix it and run again") from error


def _chunks(path: Path, source: str) -> list[_Chunk]:
    tree = parse_module(path, source)
    lines = source.splitlines()
    chunks: list[_Chunk] = []
    cursor = 0  # 0-based index of the first line not yet in a chunk
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith(ASSERTION_PREFIX):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        marker = _MARKER_LINE.match(lines[first - 1]) if first > 0 else None
        start = first - 1 if marker else first
        end = node.end_lineno or node.lineno
        if start > cursor:
            chunks.append(_Chunk("\n".join(lines[cursor:start])))
        body = "\n".join(lines[first:end])
        generated = marker is not None and marker.group(1) == _digest(body)
        chunks.append(_Chunk("\n".join(lines[start:end]), node.name, generated))
        cursor = end
    if cursor < len(lines):
        chunks.append(_Chunk("\n".join(lines[cursor:])))
    return chunks


def _ensure_imports(text: str) -> str:
    missing = [line for line in IMPORTS if line not in text]
    if not missing:
        return text
    return "\n".join(missing) + "\n\n\n" + text


def plan_sidecar(
    path: Path,
    old: str | None,
    candidates: Sequence[Candidate],
    *,
    prompt_name: str,
    remove_stale: bool = True,
) -> tuple[str, SidecarUpdate]:
    """The module text that ``candidates`` make of ``old`` (None: no module yet), without writing anything.

    The editor's path: the language server applies the text as a WorkspaceEdit, so unsaved edits in the
    buffer (passed as ``old``) are kept. ``remove_stale`` drops unedited generated functions that are no
    longer among the candidates (their instruction left the prompt); adding one assertion passes False.
    """
    update = SidecarUpdate(path)
    wanted = {candidate.name: candidate for candidate in candidates}
    chunks = _chunks(path, old) if old is not None else [_Chunk(header(prompt_name))]
    pieces: list[str] = []
    placed: set[str] = set()
    for chunk in chunks:
        if chunk.name is None:
            pieces.append(chunk.text)
        elif not chunk.generated:
            pieces.append(chunk.text)
            placed.add(chunk.name)
            if chunk.name in wanted:
                update.kept_edited.append(chunk.name)
        elif chunk.name in wanted:
            block = _generated_block(wanted[chunk.name])
            pieces.append(block)
            placed.add(chunk.name)
            (update.unchanged if block.strip() == chunk.text.strip() else update.updated).append(chunk.name)
        elif remove_stale:
            update.removed.append(chunk.name)
        else:
            pieces.append(chunk.text)
            placed.add(chunk.name)
    for candidate in candidates:
        if candidate.name not in placed:
            pieces.append(_generated_block(candidate))
            update.added.append(candidate.name)
    text = "\n\n\n".join(piece.strip("\n") for piece in pieces if piece.strip()) + "\n"
    text = _ensure_imports(text) if candidates else text
    parse_module(path, text)  # what we write must parse; a failure here is a bug, not the user's
    return text, update


def update_sidecar(
    path: Path, candidates: Sequence[Candidate], *, prompt_name: str, remove_stale: bool = True
) -> SidecarUpdate:
    """Write ``candidates`` into the module at ``path`` (created if missing); see :func:`plan_sidecar`."""
    old = read_sidecar_text(path)
    text, update = plan_sidecar(path, old, candidates, prompt_name=prompt_name, remove_stale=remove_stale)
    if text != old:
        atomic_write_text(path, text)
        update.written = True
    return update
