"""Assertion synthesis: instructions of a prompt in, candidate assertion functions out.

SPADE's two steps, behind one interface: criteria are read from each instruction sentence and its categories,
then each criterion becomes one or more Python functions. The offline synthesizer (the default) parses bounds,
formats and phrases itself; the LLM synthesizer asks a model. Either way a :class:`Candidate` records the
sentence, version and category it came from, and the sidecar module renders it (:mod:`._sidecar`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "Candidate",
    "Instruction",
    "PromptContext",
    "Synthesizer",
    "placeholders_of",
    "render_prompt",
]

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}|\{([A-Za-z_]\w*)\}")


def placeholders_of(text: str) -> list[str]:
    """``{var}`` and ``{{var}}`` names in order of first appearance."""
    names: dict[str, None] = {}
    for match in _PLACEHOLDER.finditer(text):
        names.setdefault(match.group(1) or match.group(2), None)
    return list(names)


def render_prompt(template: str, inputs: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The template with ``{var}``/``{{var}}`` filled from ``inputs``; names missing from inputs are listed."""
    missing: list[str] = []

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in inputs:
            missing.append(name)
            return match.group(0)
        return str(inputs[name])

    return _PLACEHOLDER.sub(fill, template), missing


@dataclass(frozen=True, slots=True)
class Instruction:
    """One sentence of the prompt's newest version, with its categories and the version that introduced it."""

    text: str
    categories: tuple[str, ...]
    version: int | None
    kind: str = "sentence"
    start: int = 0
    end: int = 0


@dataclass(frozen=True, slots=True)
class PromptContext:
    """What a synthesizer may read besides the sentence: the whole template and its input fields."""

    text: str
    inputs: tuple[str, ...]
    example_inputs: Mapping[str, Any] = field(default_factory=dict)


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


class Synthesizer(Protocol):
    name: str

    def synthesize(self, instructions: Sequence[Instruction], context: PromptContext) -> list[Candidate]:
        """Candidates for the instructions, in instruction order; names unique within the list."""
        ...
