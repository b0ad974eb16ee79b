"""What a judge looks at: one (input, output) pair with its context, human label and grading note, made from a
prompt's examples file (the prompt's newest recorded version rendered with each example's inputs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spade_lsp._examples import Example, read_examples
from spade_lsp._files import examples_path
from spade_lsp._prompts import PromptText, parse_prompt, prompt_kind, render_conversation
from spade_lsp.errors import InputError
from spade_lsp.store import prompt_id as stored_prompt_id
from spade_lsp.workspace import Workspace, synced_head

__all__ = ["JudgeItem", "PromptItems", "item_from_example", "items_from_examples"]


@dataclass(frozen=True, slots=True)
class JudgeItem:
    """``input`` is the user message the pipeline sent (the rendered prompt), ``output`` its response,
    ``context`` the example's inputs; ``reference`` is a second response for pairwise units."""

    id: str
    input: str
    output: str
    context: Mapping[str, Any] = field(default_factory=dict)
    label: int | None = None  # 1 good, 0 bad, None unlabelled
    note: str | None = None  # the example's grading note
    reference: str | None = None


@dataclass(frozen=True, slots=True)
class PromptItems:
    """The items of a prompt's examples, and where they came from."""

    prompt_key: str
    prompt_id: int
    version: int | None
    items: list[JudgeItem]
    skipped: list[str]  # examples without an output (nothing to judge)
    warnings: list[str]


def item_from_example(example: Example, template: PromptText) -> JudgeItem | None:
    """None when the example has no output to judge. The judge reads the prompt as rendered for the example (a
    conversation as its role sections), or the prompt the example recorded."""
    if example.output is None:
        return None
    rendered = example.prompt if example.prompt is not None else render_conversation(template, example.inputs)[0]
    reference = example.extra.get("reference")
    return JudgeItem(
        id=example.id,
        input=rendered,
        output=example.output,
        context=dict(example.inputs),
        label=example.label,
        note=example.grading_note,
        reference=reference if isinstance(reference, str) else None,
    )


def items_from_examples(workspace: Workspace, prompt: Path) -> PromptItems:
    """The judge items of ``prompt``'s examples file; :class:`InputError` saying what to add when there is none."""
    source = examples_path(prompt)
    if not source.exists():
        raise InputError(
            f"{source}: no examples to judge; add lines like "
            '{"id": "a", "inputs": {...}, "output": "...", "label": "good", "grading_note": "..."}'
        )
    warnings, version, text = synced_head(workspace, prompt)
    template = parse_prompt(text, source=str(prompt), kind=prompt_kind(prompt))
    items: list[JudgeItem] = []
    skipped: list[str] = []
    for example in read_examples(source, warnings):
        item = item_from_example(example, template)
        if item is None:
            skipped.append(example.id)
        else:
            items.append(item)
    if skipped:
        warnings.append(f"{len(skipped)} example(s) have no output to judge: {', '.join(skipped[:5])}")
    if not items:
        raise InputError(f"{source}: no example has an output to judge")
    key = workspace.history.prompt_key(prompt)
    prompt_id = stored_prompt_id(workspace.store, key)
    if prompt_id is None:  # synced_head records it
        raise InputError(f"{prompt}: not recorded in the store; save the prompt first")
    return PromptItems(key, prompt_id, version, items, skipped, warnings)
