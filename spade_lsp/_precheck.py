"""Candidates checked against the labelled examples before they are offered.

A suggestion that fails most of the good outputs tells a user the tool's checks are wrong; one that raises
tells them nothing. So when a prompt has labelled examples, every candidate runs on them in the sandbox (the
same run an evaluation makes) before it is written into the sidecar or offered in the editor, and one that
would flag more than ``tau`` of the good outputs, or that raises, is held back with the reason in words ("would
fail 4 of 4 good examples: ids a, b, c, d"). The user can still ask for it.

A cell whose check does not apply to the example (an input it reads is missing) counts neither way; a check
that needs a model runs only when the assistant model is configured (its answers are cached, so the evaluation
that follows asks nothing again) and is otherwise offered unjudged. The verdicts are stored per check's code,
so the editor's hints can say the same without running anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from spade_lsp._examples import Example, iter_examples
from spade_lsp._files import examples_path
from spade_lsp._prompts import PromptText, render_conversation
from spade_lsp.errors import InputError
from spade_lsp.sandbox import AskLLM, ModuleSource, SandboxCase, SandboxLimits, run_assertions
from spade_lsp.synthesis import SIDECAR_IMPORTS, Candidate, code_sha, render_function

__all__ = ["MAX_EXAMPLES", "Verdict", "example_cases", "labelled_examples", "precheck"]

#: At most this many labelled examples judge a candidate (the first ones of the file, good and bad alike): the
#: check costs one sandbox run whatever the file's size.
MAX_EXAMPLES: Final = 500
_IDS_SHOWN: Final = 5
#: Cell kinds that are a fault of the check itself, not of the output: such a check is held back.
_FAULTS: Final = frozenset({"exception", "not_bool", "signature", "forbidden", "crash", "memory", "timeout"})


@dataclass(frozen=True, slots=True)
class Verdict:
    """One candidate on the labelled examples: the good ones it fails, the bad ones it catches, and whether it
    is held back (``held_back`` says why, in words; None: offered)."""

    name: str
    sentence: str
    code_sha: str
    good: int
    good_failed: tuple[str, ...]
    bad: int
    bad_caught: tuple[str, ...]
    not_applicable: int = 0
    faults: tuple[str, ...] = ()
    needs_model: bool = False
    held_back: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sentence": self.sentence,
            "good": self.good,
            "good_failed": list(self.good_failed),
            "bad": self.bad,
            "bad_caught": list(self.bad_caught),
            "not_applicable": self.not_applicable,
            "faults": list(self.faults),
            "needs_model": self.needs_model,
            "held_back": self.held_back,
        }


@dataclass(slots=True)
class _Column:
    good_failed: list[str] = field(default_factory=list)
    bad_caught: list[str] = field(default_factory=list)
    good: int = 0
    bad: int = 0
    not_applicable: int = 0
    needs_model: int = 0
    faults: list[str] = field(default_factory=list)


def example_cases(examples: Sequence[Example], template: PromptText) -> tuple[list[SandboxCase], list[str]]:
    """Each example as the sandbox runs it (its prompt rendered from the template where it has none), and
    warnings for what is missing."""
    cases: list[SandboxCase] = []
    warnings: list[str] = []
    for example in examples:
        if example.output is None:
            warnings.append(f"example {example.id}: no `output`; its assertions see an empty response")
        prompt, messages = example.prompt, None
        if prompt is None:
            prompt, messages, missing = render_conversation(template, example.inputs)
            if missing:
                warnings.append(f"example {example.id}: no input for {', '.join(sorted(set(missing)))} in the prompt")
        cases.append(
            SandboxCase(example=dict(example.inputs), prompt=prompt, response=example.output or "", messages=messages)
        )
    return cases, warnings


def labelled_examples(prompt: Path) -> list[Example]:
    """The prompt's first :data:`MAX_EXAMPLES` labelled examples with an output ([] without a file), read
    without holding the rest of the file."""
    source = examples_path(prompt)
    if not source.exists():
        return []
    labelled: list[Example] = []
    seen: set[str] = set()  # a reused id is skipped, as every reader skips it (the first line keeps it)
    try:
        for _, example, _ in iter_examples(source):  # read as far as needed, not the whole file first
            if example is None or example.id in seen:
                continue
            seen.add(example.id)
            if example.label is not None and example.output is not None:
                labelled.append(example)
                if len(labelled) == MAX_EXAMPLES:
                    break
    except InputError:  # an unreadable file: nothing to check candidates on (eval reports the file's problems)
        return []
    return labelled


def precheck(
    candidates: Sequence[Candidate],
    examples: Sequence[Example],
    template: PromptText,
    *,
    tau: float,
    limits: SandboxLimits,
    ask_llm: AskLLM | None = None,
) -> dict[str, Verdict]:
    """Run the candidates on labelled examples in the sandbox; a verdict per candidate name. Without a good
    example nothing can be judged (every verdict offers its candidate)."""
    if not candidates or not examples:
        return {}
    text = "\n".join(SIDECAR_IMPORTS) + "\n\n\n" + "\n\n".join(render_function(c) for c in candidates)
    cases, _ = example_cases(examples, template)
    names = [c.name for c in candidates]
    result = run_assertions(ModuleSource(text, "<candidates>"), cases, names=names, limits=limits, ask_llm=ask_llm)
    column_of = {name: j for j, name in enumerate(result.names)}
    verdicts: dict[str, Verdict] = {}
    for candidate in candidates:
        column = _Column()
        j = column_of.get(candidate.name)
        for i, example in enumerate(examples):
            if j is None or result.module_error is not None:
                column.faults.append(result.module_error.message if result.module_error else "did not load")
                break
            _tally(column, example, result.passed[i][j], result.error(i, j))
        verdicts[candidate.name] = _verdict(candidate, column, tau)
    return verdicts


def _tally(column: _Column, example: Example, passed: bool | None, error: Any) -> None:
    kind = error.kind if error is not None else None
    if kind == "not_applicable":
        column.not_applicable += 1
        return
    if kind in ("needs_model", "llm_error"):
        column.needs_model += 1
        return
    if kind in _FAULTS:
        column.faults.append(f"{example.id}: {kind}: {error.message}")
    failed = passed is not True  # an unmeasurable output counts as a failure, as selection counts it
    if example.label == 1:
        column.good += 1
        if failed:
            column.good_failed.append(example.id)
    else:
        column.bad += 1
        if failed:
            column.bad_caught.append(example.id)


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_IDS_SHOWN])
    return shown + (f" and {len(ids) - _IDS_SHOWN} more" if len(ids) > _IDS_SHOWN else "")


def _verdict(candidate: Candidate, column: _Column, tau: float) -> Verdict:
    reason = None
    if column.faults:
        reason = f"raises on {len(column.faults)} example(s), first {column.faults[0]}"
    elif column.good and len(column.good_failed) > tau * column.good:
        reason = (
            f"would fail {len(column.good_failed)} of {column.good} good examples (more than tau {tau:g}): "
            f"ids {_ids(column.good_failed)}"
        )
    judged = column.good + column.bad
    return Verdict(
        name=candidate.name,
        sentence=candidate.sentence,
        code_sha=code_sha(candidate),
        good=column.good,
        good_failed=tuple(column.good_failed),
        bad=column.bad,
        bad_caught=tuple(column.bad_caught),
        not_applicable=column.not_applicable,
        faults=tuple(column.faults[:3]),
        needs_model=column.needs_model > 0 and judged == 0,
        held_back=reason,
    )
