"""LLM-proposed subsumption: SPADE's two calls, through :mod:`spade_lsp.llm` (cached like every call).

1. Propose: given every assertion (name and what it checks), which other assertions' criteria does each imply?
2. Confirm: for each proposed pair, does every output failing the second also fail the first?

Only confirmed pairs survive, and then only those the examples do not refute (the empirical filter): an LLM
is never the last word on a subsumption the data contradicts. A proposal naming an assertion that does not
exist loses that pair only: an answer the LLM layer gives up on (still off the schema after its re-asks) is
read here too when it holds JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from spade_lsp.errors import LLMError
from spade_lsp.llm import LLMClient, ask_json
from spade_lsp.selection._matrix import AssertionSpec, BoolMatrix, Subsumption
from spade_lsp.selection._subsumption import empirically_possible

_PROPOSE = (
    "You compare data-quality assertions on an LLM pipeline's outputs. Assertion A subsumes assertion B when "
    "every output that fails B also fails A (A's criteria imply B's). For each assertion, list the names of the "
    "other assertions it subsumes; list none when unsure."
)
_CONFIRM = (
    "For each pair, answer whether the subsumer really subsumes the subsumed assertion: every output that fails "
    "the subsumed assertion must also fail the subsumer. Answer false when in doubt."
)


def _propose_schema(names: Sequence[str]) -> dict[str, Any]:
    name = {"type": "string", "enum": list(names)}
    return {
        "type": "object",
        "properties": {
            "implications": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"assertion": name, "subsumes": {"type": "array", "items": name}},
                    "required": ["assertion", "subsumes"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["implications"],
        "additionalProperties": False,
    }


def _confirm_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "pairs": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "subsumer": {"type": "string"},
                        "subsumed": {"type": "string"},
                        "holds": {"type": "boolean"},
                    },
                    "required": ["subsumer", "subsumed", "holds"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["pairs"],
        "additionalProperties": False,
    }


class _Implication(BaseModel):
    assertion: str
    subsumes: list[str]


class _Proposal(BaseModel):
    implications: list[_Implication]


class _Verdict(BaseModel):
    subsumer: str
    subsumed: str
    holds: bool


class _Confirmation(BaseModel):
    pairs: list[_Verdict]


def _ask(client: LLMClient, system: str, payload: str, schema: dict[str, Any], what: str) -> Any:
    """The JSON the model answered, even one off the schema: the rules below judge it pair by pair."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": payload}]
    return ask_json(client, messages, schema, what=what)


def _describe(spec: AssertionSpec) -> dict[str, Any]:
    item: dict[str, Any] = {"name": spec.name}
    if spec.description:
        item["description"] = spec.description
    if spec.check is not None:
        item["check"] = dict(spec.check)
    return item


def propose_llm_subsumptions(
    client: LLMClient,
    assertions: Sequence[AssertionSpec],
    fails: BoolMatrix | None = None,
) -> list[Subsumption]:
    """Pairs the model proposes and then confirms, filtered by the examples in ``fails`` when given."""
    if len(assertions) < 2:
        return []
    names = [a.name for a in assertions]
    index = {name: j for j, name in enumerate(names)}
    payload = json.dumps([_describe(a) for a in assertions], ensure_ascii=False)
    first = _ask(client, _PROPOSE, payload, _propose_schema(names), "subsumption proposals")
    try:
        proposal = _Proposal.model_validate(first)
    except ValidationError as error:
        raise LLMError(
            f"the model's subsumption proposals do not match the schema: {error.errors()[0]['msg']}"
        ) from error
    candidates: list[tuple[str, str]] = []
    for item in proposal.implications:
        for other in item.subsumes:
            pair = (item.assertion, other)
            if item.assertion in index and other in index and item.assertion != other and pair not in candidates:
                candidates.append(pair)
    if fails is not None:  # no need to ask about pairs the examples already refute
        candidates = [(a, b) for a, b in candidates if empirically_possible(fails, index[a], index[b])]
    if not candidates:
        return []
    described = {a.name: _describe(a) for a in assertions}
    pairs = [{"subsumer": described[a], "subsumed": described[b]} for a, b in candidates]
    second = _ask(
        client, _CONFIRM, json.dumps(pairs, ensure_ascii=False), _confirm_schema(), "subsumption confirmations"
    )
    try:
        confirmation = _Confirmation.model_validate(second)
    except ValidationError as error:
        raise LLMError(f"the model's confirmations do not match the schema: {error.errors()[0]['msg']}") from error
    confirmed = {(v.subsumer, v.subsumed) for v in confirmation.pairs if v.holds}
    return [Subsumption(a, b, "llm") for a, b in candidates if (a, b) in confirmed]
