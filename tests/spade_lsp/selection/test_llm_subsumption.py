"""SPADE's two LLM calls for subsumption, through the real litellm client against the loopback stub."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from spade_lsp.errors import LLMError
from spade_lsp.llm import LiteLLMClient
from spade_lsp.selection import AssertionSpec, propose_llm_subsumptions
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply

SPECS = (
    AssertionSpec("assert_under_100_words", description="at most 100 words"),
    AssertionSpec("assert_under_150_words", description="at most 150 words"),
    AssertionSpec("assert_mentions_price", description="mentions the price"),
)


IMPLICATIONS = [
    {"assertion": "assert_under_100_words", "subsumes": ["assert_under_150_words"]},
    {"assertion": "assert_mentions_price", "subsumes": ["assert_under_100_words"]},
    {"assertion": "assert_under_150_words", "subsumes": ["assert_mentions_price"]},
]


def _sent(request: dict[str, Any]) -> Any:
    """What was asked: the first user message (a re-ask adds messages after it)."""
    return json.loads(next(m["content"] for m in request["messages"] if m["role"] == "user"))


def _model(request: dict[str, Any], implications: list[dict[str, Any]] = IMPLICATIONS) -> Reply:
    system = request["messages"][0]["content"]
    if system.startswith("You compare"):
        return chat_reply(json.dumps({"implications": implications}))
    pairs = _sent(request)
    verdicts = [
        {
            "subsumer": p["subsumer"]["name"],
            "subsumed": p["subsumed"]["name"],
            "holds": p["subsumer"]["name"] != "assert_under_150_words",  # the model rejects this one
        }
        for p in pairs
    ]
    return chat_reply(json.dumps({"pairs": verdicts}))


def test_two_calls_propose_then_confirm_and_the_examples_filter() -> None:
    # example 0 fails both word checks but not the price check, so "price subsumes 100 words" is refuted
    # by the examples; "150 words subsumes price" is proposed but the model rejects it on confirmation.
    fails = np.array([[True, True, False], [False, False, True]], dtype=np.bool_)
    with OpenAIStub(_model) as stub:
        client = LiteLLMClient("openai/x", api_base=stub.api_base, api_key="k", max_retries=0)
        pairs = propose_llm_subsumptions(client, SPECS, fails)
        assert [(p.subsumer, p.subsumed, p.origin) for p in pairs] == [
            ("assert_under_100_words", "assert_under_150_words", "llm")
        ]
        # the refuted pair (price -> 100 words: 100 words fails example 0, price passes it) was never asked
        asked = _sent(stub.requests[1])
        assert ("assert_mentions_price", "assert_under_100_words") not in {
            (p["subsumer"]["name"], p["subsumed"]["name"]) for p in asked
        }
        schema = stub.requests[0]["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["implications"]["items"]["properties"]["assertion"]["enum"] == [
            s.name for s in SPECS
        ]
        assert len(stub.requests) == 2


def test_an_unusable_answer_is_a_clear_error() -> None:
    with OpenAIStub(lambda request: chat_reply(json.dumps({"implications": [{"assertion": 3}]}))) as stub:
        client = LiteLLMClient("openai/x", api_base=stub.api_base, api_key="k", max_retries=0)
        with pytest.raises(LLMError, match="schema"):
            propose_llm_subsumptions(client, SPECS)


def test_a_proposal_naming_an_unknown_assertion_loses_only_that_pair() -> None:
    made_up = [*IMPLICATIONS[:1], {"assertion": "assert_made_up", "subsumes": ["assert_mentions_price"]}]
    with OpenAIStub(lambda request: _model(request, made_up)) as stub:
        client = LiteLLMClient("openai/x", api_base=stub.api_base, api_key="k", max_retries=0)
        pairs = propose_llm_subsumptions(client, SPECS)
        asked = _sent(stub.requests[-1])
    assert [(p.subsumer, p.subsumed) for p in pairs] == [("assert_under_100_words", "assert_under_150_words")]
    assert [(p["subsumer"]["name"], p["subsumed"]["name"]) for p in asked] == [
        ("assert_under_100_words", "assert_under_150_words")
    ]
    # the proposal is off its schema: the LLM layer asks twice more before the pairs are read one by one
    assert len(stub.requests) == 3 + 1
