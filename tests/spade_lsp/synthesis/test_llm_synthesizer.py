"""The LLM synthesizer through the real litellm client against a scripted loopback server: criteria, then
functions, and every function validated (parse, signature, allow-list, one sandboxed run) before it is offered."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from spade_lsp.errors import LLMError
from spade_lsp.llm import LiteLLMClient
from spade_lsp.sandbox import ModuleSource, SandboxCase, SandboxLimits, run_assertions
from spade_lsp.synthesis import Candidate, Instruction, PromptContext, placeholders_of
from spade_lsp.synthesis._llm import EXAMPLE_RESPONSE, LLMSynthesizer, synthetic_example
from spade_lsp.synthesis._sidecar import header, render_function
from spade_lsp.taxonomy import CATEGORY_IDS, COUNT, EXCLUSION, INCLUSION, QUALITATIVE_ASSESSMENT
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply

PROMPT = (
    "You write product emails about {topic}.\n"
    "Keep it under {max_words} words. Never mention the price.\n"
    "Use a friendly tone."
)
SENTENCES = [
    ("You write product emails about {topic}.", ()),
    ("Keep it under {max_words} words.", (COUNT,)),
    ("Never mention the price.", (EXCLUSION,)),
    ("Use a friendly tone.", (QUALITATIVE_ASSESSMENT,)),
]
FAST = SandboxLimits(timeout_s=2.0, grace_s=0.5, memory_mb=512)

Criterion = dict[str, Any]
Functions = list[dict[str, str]]


def instructions() -> list[Instruction]:
    out = []
    for version, (text, categories) in enumerate(SENTENCES, start=1):
        start = PROMPT.index(text)
        out.append(Instruction(text, categories, version, "sentence", start, start + len(text)))
    return out


def context() -> PromptContext:
    return PromptContext(PROMPT, tuple(placeholders_of(PROMPT)))


def criterion(text: str, category: str, phrase: str, index: int) -> Criterion:
    return {"criterion": text, "category": category, "source_phrase": phrase, "sentence_index": index}


def fn(source: str, note: str = "") -> dict[str, str]:
    return {"source": source, "note": note}


def payload(request: dict[str, Any]) -> dict[str, Any]:
    """What the synthesizer sent: its first user message (re-asks add messages after it, and a lower structured
    mode sends no ``response_format``)."""
    loaded: dict[str, Any] = json.loads(next(m["content"] for m in request["messages"] if m["role"] == "user"))
    return loaded


def model(
    criteria: list[Criterion] | str, functions: Mapping[str, Functions | str]
) -> Callable[[dict[str, Any]], Reply]:
    """A scripted model: the criteria answer, then per criterion its functions (a str is sent as raw content)."""

    def script(request: dict[str, Any]) -> Reply:
        asked = payload(request).get("criterion")
        if asked is None:
            return chat_reply(criteria if isinstance(criteria, str) else json.dumps({"criteria": criteria}))
        answer = functions[asked]
        return chat_reply(answer if isinstance(answer, str) else json.dumps({"functions": answer}))

    return script


def synthesize(stub: OpenAIStub, *, example: SandboxCase | None = None) -> tuple[LLMSynthesizer, list[Candidate]]:
    client = LiteLLMClient("openai/x", api_base=stub.api_base, api_key="k", max_retries=0)
    synthesizer = LLMSynthesizer(client, example=example, limits=FAST)
    return synthesizer, synthesizer.synthesize(instructions(), context())


WORDS = """\
import re

def assert_under_max_words(example: dict, prompt: str, response: str) -> bool:
    return len(re.findall(r"\\w+", response)) < checks.bound(example, "max_words")
"""
PRICE = """```python
def assert_no_price(example: dict, prompt: str, response: str) -> bool:
    return not checks.contains_any(response, ["price", "$"])
```"""
TONE_LLM = """\
def assert_friendly_tone(example: dict, prompt: str, response: str) -> bool:
    return ask_llm("Is the tone of this email friendly?", response) and len(response) > 0
"""
TONE_VADER = """\
def assert_friendly_tone(example: dict, prompt: str, response: str) -> bool:
    return checks.sentiment(response) >= 0.05
"""


def test_criteria_then_functions_become_validated_candidates_with_metadata() -> None:
    criteria = [
        criterion("Friendly tone.", QUALITATIVE_ASSESSMENT, "Use a friendly tone", 3),  # out of order on purpose
        criterion("Fewer than max_words words.", COUNT, "under {max_words}\nwords", 1),
        criterion("Does not mention the price.", EXCLUSION, "Never mention the price", 2),
        criterion("Mentions a discount.", INCLUSION, "mention a discount", 2),  # not in the prompt
        criterion("Is nice.", "Content/Niceness", "friendly tone", 3),  # not a taxonomy id
    ]
    functions = {
        "Friendly tone.": [fn(TONE_LLM, "asks a model"), fn(TONE_VADER, "VADER sentiment")],
        "Fewer than max_words words.": [fn(WORDS)],
        "Does not mention the price.": [fn(PRICE)],
    }
    with OpenAIStub(model(criteria, functions)) as stub:
        synthesizer, candidates = synthesize(stub)
        first = [c.name for c in candidates]
        assert synthesize(stub)[1] == candidates  # deterministic

    assert first == ["assert_under_max_words", "assert_no_price", "assert_friendly_tone", "assert_friendly_tone_2"]
    words, price, tone_llm, tone_vader = candidates
    assert (words.category, words.sentence, words.version) == (COUNT, "Keep it under {max_words} words.", 2)
    assert (price.category, price.version) == (EXCLUSION, 3)
    assert tone_vader.category == QUALITATIVE_ASSESSMENT and tone_vader.sentence == "Use a friendly tone."
    assert all(c.synthesizer == "llm" and c.expression is None for c in candidates)
    assert words.description == "Fewer than max_words words."
    assert tone_llm.description == "Friendly tone. (asks a model)"
    assert [c.asks_llm for c in candidates] == [False, False, True, False]
    # the source is the def alone: fences stripped, the top-level import moved inside, the name made unique
    assert price.source is not None and price.source.startswith("def assert_no_price(") and "```" not in price.source
    assert words.source is not None and words.source.startswith("def ") and "    import re" in words.source
    assert tone_vader.source is not None and tone_vader.source.startswith("def assert_friendly_tone_2(")
    assert synthesizer.rejected == []
    assert [reason for _, reason in synthesizer.dropped] == [
        "source phrase 'mention a discount' is not in the prompt",
        "unknown category 'Content/Niceness'",
    ]
    # structured output: the criteria schema offers exactly the taxonomy ids; one functions call per criterion
    schema = stub.requests[0]["response_format"]["json_schema"]
    assert schema["strict"] is True
    assert schema["schema"]["properties"]["criteria"]["items"]["properties"]["category"]["enum"] == list(CATEGORY_IDS)
    sent = payload(stub.requests[0])
    assert sent["prompt"] == PROMPT and sent["sentences"][1] == {
        "index": 1,
        "text": "Keep it under {max_words} words.",
        "categories": [COUNT],
    }
    # two runs, each three criteria calls (the answer naming an unknown category is asked again twice, then
    # read item by item) and three functions calls
    assert len(stub.requests) == 2 * (3 + 3)

    # what the sidecar renders runs in the sandbox on real outputs
    module = header("emails.prompt") + "\n\n" + "\n\n".join(render_function(c) for c in candidates)
    good = SandboxCase({"topic": "tea", "max_words": "20"}, "", "Hi! You will love our wonderful new tea.")
    bad = SandboxCase({"topic": "tea", "max_words": "5"}, "", "The price is $5, which is terrible and awful.")
    result = run_assertions(ModuleSource(module), [good, bad], limits=FAST, ask_llm=lambda q, r, c: "love" in r)
    assert result.module_error is None and not result.errors
    assert result.passed == [[True, True, True, True], [False, False, False, False]]
    categories = [COUNT, EXCLUSION, QUALITATIVE_ASSESSMENT, QUALITATIVE_ASSESSMENT]
    assert [a.info["category"] for a in result.assertions] == categories


BAD_FUNCTIONS: list[tuple[str, str, str]] = [
    (
        "imports os",
        "def assert_env(example, prompt, response):\n    import os\n    return 'HOME' in os.environ\n",
        "imports `os`, which the sandbox does not allow",
    ),
    (
        "imports subprocess",
        "import subprocess\n\ndef assert_shell(example, prompt, response):\n"
        "    return subprocess.run(['true']).returncode == 0\n",
        "imports `subprocess`, which the sandbox does not allow",
    ),
    (
        "wrong signature",
        "def assert_short(response: str) -> bool:\n    return len(response) < 100\n",
        "must take exactly (example, prompt, response); it takes (response: str)",
    ),
    (
        "raises on the example",
        "def assert_json_title(example, prompt, response):\n    import json\n"
        "    return json.loads(response)['title'] != ''\n",
        "fails on the example (exception): JSONDecodeError",
    ),
    (
        "fails when defined",
        "def assert_annotated(example: Undefined, prompt: str, response: str) -> bool:\n    return True\n",
        "does not load in the sandbox",
    ),
    (
        "does not parse",
        "def assert_broken(example, prompt, response):\n    return (\n",
        "does not parse",
    ),
    (
        "two functions",
        "def helper(x):\n    return x\n\ndef assert_two(example, prompt, response):\n    return helper(True)\n",
        "exactly one top-level function, found 2",
    ),
    (
        "not an assertion name",
        "def check_it(example, prompt, response):\n    return True\n",
        "is not named assert_*",
    ),
    (
        "uses open",
        "def assert_file(example, prompt, response):\n    return open('/etc/passwd').read() != ''\n",
        "`open` is not allowed",
    ),
    (
        "duplicate",
        "def assert_no_price_again(example: dict, prompt: str, response: str) -> bool:\n"
        "    return not checks.contains_any(response, ['price', '$'])\n",
        "duplicate of assert_no_price",
    ),
]


def test_each_unusable_function_is_rejected_with_its_reason_and_the_good_ones_survive() -> None:
    criteria = [criterion("Does not mention the price.", EXCLUSION, "Never mention the price", 2)]
    criteria += [criterion(what, EXCLUSION, "Never mention the price", 2) for what, _, _ in BAD_FUNCTIONS]
    functions: dict[str, Functions | str] = {"Does not mention the price.": [fn(PRICE)]}
    functions.update({what: [fn(source)] for what, source, _ in BAD_FUNCTIONS})
    with OpenAIStub(model(criteria, functions)) as stub:
        synthesizer, candidates = synthesize(stub)

    assert [c.name for c in candidates] == ["assert_no_price"]
    rejected = dict(synthesizer.rejected)
    assert len(rejected) == len(BAD_FUNCTIONS), synthesizer.rejected
    names = [
        "assert_env",
        "assert_shell",
        "assert_short",
        "assert_json_title",
        "assert_annotated",
        "assert_broken",
        "assert_two",
        "check_it",
        "assert_file",
        "assert_no_price_again",
    ]
    for name, (what, _, reason) in zip(names, BAD_FUNCTIONS, strict=True):
        assert reason in rejected[name], (what, rejected[name])


def test_invalid_json_for_the_criteria_is_a_clear_llm_error() -> None:
    with (
        OpenAIStub(model("Sure! Here are the criteria: ...", {})) as stub,
        pytest.raises(LLMError, match="not valid JSON"),
    ):
        synthesize(stub)
    schema_error = r"criteria answer does not match the schema: criteria\.0\.category"
    with (
        OpenAIStub(model(json.dumps({"criteria": [{"criterion": "x"}]}), {})) as stub,
        pytest.raises(LLMError, match=schema_error),
    ):
        synthesize(stub)


def test_unknown_category_and_unusable_function_answers_drop_only_their_criterion() -> None:
    criteria = [
        criterion("Is nice.", "Content/Niceness", "friendly tone", 3),
        criterion("Sentence nine.", COUNT, "friendly tone", 9),
        criterion("Friendly tone.", QUALITATIVE_ASSESSMENT, "friendly tone", 3),
        criterion("Does not mention the price.", EXCLUSION, "Never mention the price", 2),
        criterion("Fewer than max_words words.", COUNT, "under {max_words} words", 1),
    ]
    functions: dict[str, Functions | str] = {
        "Friendly tone.": "not json",
        "Does not mention the price.": [fn(PRICE)],
        "Fewer than max_words words.": [],
    }
    with OpenAIStub(model(criteria, functions)) as stub:
        synthesizer, candidates = synthesize(stub)
        asked = [payload(r).get("criterion") for r in stub.requests]

    assert [c.name for c in candidates] == ["assert_no_price"]
    # the criteria answer and the "not json" one are each asked again twice by the LLM layer; sentence order
    assert asked == [None] * 3 + ["Fewer than max_words words.", "Does not mention the price."] + ["Friendly tone."] * 3
    dropped = dict(synthesizer.dropped)
    assert dropped["Is nice."] == "unknown category 'Content/Niceness'"
    assert dropped["Sentence nine."] == "sentence 9 does not exist (there are 4)"
    assert "not valid JSON" in dropped["Friendly tone."]
    assert dropped["Fewer than max_words words."] == "the model wrote no function for it"


def test_the_example_for_the_one_run_is_synthetic_unless_given() -> None:
    case = synthetic_example(PromptContext(PROMPT, ("topic", "max_words"), {"topic": "green tea"}))
    assert case.example == {"topic": "green tea", "max_words": "max_words 3"}
    assert case.prompt.startswith("You write product emails about green tea.\nKeep it under max_words 3 words.")
    assert case.response == EXAMPLE_RESPONSE

    criteria = [criterion("Starts with Hello.", INCLUSION, "friendly tone", 3)]
    source = "def assert_hello(example, prompt, response):\n    return response.split()[0] == 'Hello'\n"
    with OpenAIStub(model(criteria, {"Starts with Hello.": [fn(source)]})) as stub:
        synthesizer, candidates = synthesize(stub, example=SandboxCase({}, "", ""))  # an empty response: IndexError
    assert candidates == []
    assert "IndexError" in dict(synthesizer.rejected)["assert_hello"]
