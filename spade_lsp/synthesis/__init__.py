"""Assertion synthesis: instructions of a prompt in, candidate assertion functions out.

SPADE's two steps, behind one interface: criteria are read from each instruction sentence and its categories,
then each criterion becomes one or more Python functions. The offline synthesizer (the default) parses bounds,
formats and phrases itself; the LLM synthesizer asks a model. Either way a :class:`Candidate` records the
sentence, version and category it came from, and the sidecar module renders it (:mod:`._sidecar`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from spade_lsp._lazy import lazy_exports
from spade_lsp._prompts import PLACEHOLDER_PATTERN, placeholders_of, render_prompt
from spade_lsp._types import ChangeKind

if TYPE_CHECKING:  # the names below load on first use: the synthesizers import pydantic and the sandbox
    from spade_lsp.synthesis._llm import NAME as LLM_SYNTHESIZER
    from spade_lsp.synthesis._llm import LLMSynthesizer
    from spade_lsp.synthesis._offline import OfflineSynthesizer, example_blocks
    from spade_lsp.synthesis._sidecar import IMPORTS as SIDECAR_IMPORTS
    from spade_lsp.synthesis._sidecar import SidecarUpdate, plan_sidecar, render_function


__all__ = [
    "LLM_SYNTHESIZER",
    "PLACEHOLDER_PATTERN",
    "SIDECAR_IMPORTS",
    "Candidate",
    "Instruction",
    "LLMSynthesizer",
    "OfflineSynthesizer",
    "PromptContext",
    "SidecarUpdate",
    "Synthesizer",
    "code_sha",
    "earlier_instructions",
    "example_blocks",
    "placeholders_of",
    "plan_sidecar",
    "render_function",
    "render_prompt",
]


@dataclass(frozen=True, slots=True)
class Instruction:
    """One sentence of the prompt's newest version, with its categories and the version that introduced it."""

    text: str
    categories: tuple[str, ...]
    version: int | None
    kind: str = "sentence"
    start: int = 0
    end: int = 0
    removed_in: int | None = None
    """Set for an instruction of an earlier version: the version that removed it (or reworded it away)."""
    reworded: bool = False
    """With ``removed_in``: the sentence was reworded in that version rather than removed."""


@dataclass(frozen=True, slots=True)
class PromptContext:
    """What a synthesizer may read besides the sentence: the whole template and its input fields."""

    text: str
    inputs: tuple[str, ...]
    example_inputs: Mapping[str, Any] = field(default_factory=dict)
    earlier: tuple[Instruction, ...] = ()
    """Instructions earlier versions had and the newest no longer has (removed, or the old wording of a reworded
    one), from :func:`earlier_instructions`: SPADE mines every delta, and a removed limit may be a relaxed one."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One assertion to offer: a name, a boolean ``expression`` over ``example``, ``prompt`` and ``response``
    (or a whole function ``source`` from an LLM), and where it came from."""

    name: str
    category: str
    sentence: str
    version: int | None
    synthesizer: str
    description: str
    expression: str | None = None
    source: str | None = None
    check: Mapping[str, Any] | None = None
    asks_llm: bool = False
    sentences: tuple[str, ...] = ()
    """Every sentence the check serves, ``sentence`` first, when it serves more than one (equivalent checks
    are one candidate)."""
    removed_in: int | None = None
    """Set when the check comes only from an instruction of an earlier version: the version that removed it."""


def earlier_instructions(deltas: Sequence[Any]) -> list[Instruction]:
    """Removed and reworded-away sentences of a prompt's history, oldest first, each with the version that
    introduced it and the version that removed it. ``deltas`` are the history's deltas in order (objects with
    ``to_number`` and ``changes`` of ``kind``, ``old_text``, ``new_text``, ``similarity`` and ``labels``, as
    ``History.deltas`` returns them). A sentence whose text the newest version still holds is left out."""
    introduced: dict[str, int] = {}
    gone: dict[str, Instruction] = {}
    for delta in deltas:
        for change in delta.changes:
            kind = str(change.kind)
            new, old = change.new_text, change.old_text
            if new is not None:
                introduced.setdefault(" ".join(new.split()), delta.to_number)
                gone.pop(" ".join(new.split()), None)  # back again
            if old is None or kind == ChangeKind.ADDED.value:
                continue
            if kind == ChangeKind.MODIFIED.value and float(change.similarity) >= 1.0:
                continue  # moved, not changed
            key = " ".join(old.split())
            gone[key] = Instruction(
                text=old.strip(),
                categories=tuple(change.labels),
                version=introduced.get(key),
                removed_in=delta.to_number,
                reworded=kind == ChangeKind.MODIFIED.value,
            )
    return list(gone.values())


def code_sha(candidate: Candidate) -> str:
    """What identifies a check across runs and synthesizers: its code (the expression, or a model-written
    function's source), hashed. Verdicts on the labelled examples are stored under it."""
    code = candidate.expression if candidate.expression is not None else candidate.source or ""
    return hashlib.sha256(code.strip().encode("utf-8")).hexdigest()[:16]


class Synthesizer(Protocol):
    name: str

    def synthesize(self, instructions: Sequence[Instruction], context: PromptContext) -> list[Candidate]:
        """Candidates for the instructions, in instruction order; names unique within the list."""
        ...


__getattr__ = lazy_exports(__name__, globals())
