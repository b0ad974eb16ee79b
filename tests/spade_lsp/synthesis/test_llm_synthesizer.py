"""The LLM synthesizer through the real litellm client against a scripted loopback server: one request per
instruction, picks from the typed library checked against the sentence, and free-form functions validated
(parse, signature, allow-list, one sandboxed run) before they are offered."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from spade_lsp.errors import LLMError
from spade_lsp.llm import LiteLLMClient
from spade_lsp.sandbox import ModuleSource, SandboxCase, SandboxLimits, run_assertions
from spade_lsp.synthesis import Candidate, Instruction, PromptContext, placeholders_of
from spade_lsp.synthesis._llm import (
    EXAMPLE_RESPONSE,
    FAMILIES,
    MAX_REQUEST_CHARS,
    PICKED,
    LLMSynthesizer,
    plausible_families,
    synthetic_example,
)
from spade_lsp.synthesis._sidecar import header, render_function
from spade_lsp.taxonomy import COUNT, EXCLUSION, INCLUSION, PRESENTATION_FORMAT, QUALITATIVE_ASSESSMENT
from tests.support.openai_stub import OpenAIStub, Reply, chat_reply

PROMPT = (
    "You write product emails about {topic}.\n"
    "Keep it under {max_words} words. Never mention the price.\n"
    "Use a friendly tone. Answer in {language}."
)
SENTENCES = [
    ("You write product emails about {topic}.", (INCLUSION,)),
    ("Keep it under {max_words} words.", (COUNT,)),
    ("Never mention the price.", (EXCLUSION,)),
    ("Use a friendly tone.", (QUALITATIVE_ASSESSMENT,)),
    ("Answer in {language}.", (PRESENTATION_FORMAT,)),
]
FAST = SandboxLimits(timeout_s=2.0, grace_s=0.5, memory_mb=512)

Pick = dict[str, str]


def instructions(prompt: str = PROMPT, sentences: list[tuple[str, tuple[str, ...]]] = SENTENCES) -> list[Instruction]:
    out = []
    for version, (text, categories) in enumerate(sentences, start=1):
        start = prompt.index(text)
        out.append(Instruction(text, categories, version, "sentence", start, start + len(text)))
    return out


def context(prompt: str = PROMPT) -> PromptContext:
    return PromptContext(prompt, tuple(placeholders_of(prompt)))


def pick(family: str, amount: str = "", unit: str = "", text: str = "") -> Pick:
    return {"family": family, "amount": amount, "unit": unit, "text": text}


def payload(request: dict[str, Any]) -> dict[str, Any]:
    """What the synthesizer sent: its first user message (re-asks add messages after it)."""
    loaded: dict[str, Any] = json.loads(next(m["content"] for m in request["messages"] if m["role"] == "user"))
    return loaded


def model(answers: Mapping[str, list[Pick] | str]) -> Callable[[dict[str, Any]], Reply]:
    """A scripted model: per instruction its picks (a str is sent as raw content; an instruction it does not
    know gets no check)."""

    def script(request: dict[str, Any]) -> Reply:
        answer = answers.get(payload(request)["instruction"], [pick("none")])
        return chat_reply(answer if isinstance(answer, str) else json.dumps({"checks": answer}))

    return script


def synthesize(
    stub: OpenAIStub,
    *,
    example: SandboxCase | None = None,
    prompt: str = PROMPT,
    sentences: list[tuple[str, tuple[str, ...]]] = SENTENCES,
) -> tuple[LLMSynthesizer, list[Candidate]]:
    client = LiteLLMClient("openai/x", api_base=stub.api_base, api_key="k", max_retries=0)
    synthesizer = LLMSynthesizer(client, example=example, limits=FAST)
    return synthesizer, synthesizer.synthesize(instructions(prompt, sentences), context(prompt))


PRICE = """```python
def assert_no_price(example: dict, prompt: str, response: str) -> bool:
    return not checks.contains_any(response, ["price", "$"])
```"""


def test_picks_become_library_checks_with_metadata_one_request_per_instruction() -> None:
    answers = {
        "You write product emails about {topic}.": [pick("mentions_input", text="{topic}")],
        "Keep it under {max_words} words.": [pick("max_count", "{max_words}", "words")],
        "Never mention the price.": [pick("excludes", text="price")],
        "Use a friendly tone.": [pick("positive_tone"), pick("ask", text="Is the tone friendly?")],
        "Answer in {language}.": [pick("language", text="{language}")],
    }
    with OpenAIStub(model(answers)) as stub:
        synthesizer, candidates = synthesize(stub)
        requests = list(stub.requests)
        assert synthesize(stub)[1] == candidates  # deterministic

    assert [c.expression for c in candidates] == [
        "checks.mentions(response, checks.value(example, 'topic'))",
        "checks.count(response, 'words') <= checks.bound(example, 'max_words')",
        "not checks.contains_phrase(response, 'price')",
        "checks.sentiment(response) >= 0",
        "ask_llm('Is the tone friendly?', response, prompt=prompt)",
        "checks.in_language(response, checks.value(example, 'language'))",
    ]
    assert all(c.synthesizer == PICKED and c.source is None for c in candidates)  # spade's code: no review
    assert [c.version for c in candidates] == [1, 2, 3, 4, 4, 5]
    assert candidates[2].category == EXCLUSION and candidates[2].sentence == "Never mention the price."
    assert [c.asks_llm for c in candidates] == [False, False, False, False, True, False]
    assert synthesizer.rejected == [] and synthesizer.dropped == []
    # one request per instruction, each carrying the instruction and a little context, never the whole prompt
    assert len(requests) == len(SENTENCES)
    sent = payload(requests[1])
    assert sent["instruction"] == "Keep it under {max_words} words." and sent["categories"] == [COUNT]
    assert sent["prompt_inputs"] == ["topic", "max_words", "language"] and "prompt" not in sent
    # the request offers the families the sentence could mean: a count for a limit, never a language
    schema = requests[1]["response_format"]["json_schema"]["schema"]
    offered = schema["properties"]["checks"]["items"]["properties"]["family"]["enum"]
    assert offered == sent["families"] == [
        "max_count", "min_count", "exact_count", "mentions_input", "ask", "code", "none"
    ]  # fmt: skip
    assert set(offered) <= set(FAMILIES)

    # what the sidecar renders runs in the sandbox on real outputs, inputs varying per example
    module = header("emails.prompt") + "\n\n" + "\n\n".join(render_function(c) for c in candidates)
    good = SandboxCase(
        {"topic": "green tea", "max_words": "20", "language": "French"},
        "",
        "Bonjour ! Vous allez adorer notre merveilleux green tea, doux et parfumé.",
    )
    bad = SandboxCase(
        {"topic": "green tea", "max_words": "5", "language": "German"},
        "",
        "The price is awful and terrible, and coffee is what we sell now, sadly.",
    )
    result = run_assertions(ModuleSource(module), [good, bad], limits=FAST, ask_llm=lambda q, r, c: "adorer" in r)
    assert result.module_error is None
    # VADER scores English: on the French reply the tone check does not apply (no verdict, and no error)
    assert [(e.case, e.name, e.kind) for e in result.errors] == [(0, "assert_positive_tone", "not_applicable")]
    assert result.passed == [[True, True, True, None, True, True], [False] * 6]


@pytest.mark.parametrize(
    ("sentence", "cued"),
    [
        ("Write 3 tweets of at most 40 words each.", {"max_count", "min_count", "exact_count", "max_count_per_item"}),
        ("Never use the word 'cheap'.", {"excludes"}),
        ("Answer in French, in markdown.", {"language", "markdown"}),
        ("Do not use markdown.", {"no_markdown", "excludes"}),
        (
            "Start with a title and end with a question.",
            {"starts_with", "ends_with", "has_section", "ends_with_question"},
        ),
        ("Use a warm, friendly tone.", {"positive_tone"}),
        ("Don't add any text below the list.", {"ends_with_list", "excludes"}),
        ("Always include a call to action.", {"call_to_action"}),
        ("Encourage readers to contact your company.", {"invites_contact"}),
        (
            "Refrain from speculating unless it is stated in the transcript.",
            {"sourced_numbers", "sourced_names", "excludes"},
        ),
        ("Think step by step.", set()),
    ],
)
def test_the_families_offered_are_the_ones_the_sentence_cues(sentence: str, cued: set[str]) -> None:
    offered = plausible_families(Instruction(sentence, (), 1), PromptContext(sentence, ()))
    assert set(offered) == cued | {"ask", "code", "none"}


def test_words_the_sentence_does_not_quote_are_no_inclusion_check() -> None:
    """ "Mention the warranty period." names content a response words its own way: the model's "includes" pick is
    rejected; quoted words are the words themselves."""
    prompt = 'Mention the warranty period. Always include "Free returns".'
    sentences = [("Mention the warranty period.", (INCLUSION,)), ('Always include "Free returns".', (INCLUSION,))]
    answers = {
        "Mention the warranty period.": [pick("includes", text="warranty period")],
        'Always include "Free returns".': [pick("includes", text="Free returns")],
    }
    with OpenAIStub(model(answers)) as stub:
        synthesizer, candidates = synthesize(stub, prompt=prompt, sentences=sentences)
    assert [c.expression for c in candidates if not c.asks_llm] == ["checks.contains_phrase(response, 'free returns')"]
    assert "the instruction quotes none of these words" in [reason for _, reason in synthesizer.rejected]


def test_a_pick_takes_its_words_from_the_sentence_and_one_it_does_not_support_is_rejected() -> None:
    answers = {
        "Keep it under {max_words} words.": [
            pick("max_count", "100", "words"),  # the right check, a number the sentence does not state
            pick("min_count", "{topic}", "sentences"),  # a check the sentence does not ask for
        ],
        "Never mention the price.": [pick("excludes", text="cost, price"), pick("includes", text="discount")],
        "Use a friendly tone.": [pick("language", text="French"), pick("json"), pick("neutral_tone")],
        "Answer in {language}.": [pick("language", text="Klingon"), pick("markdown"), pick("code", text="oops")],
    }
    with OpenAIStub(model(answers)) as stub:
        synthesizer, candidates = synthesize(stub)
    # the family the model chose, with the sentence's own words: its limit, its phrase, its input; where every
    # pick was rejected ("Use a friendly tone."), the offline reading of the sentence
    assert [(c.synthesizer, c.expression) for c in candidates] == [
        ("llm-library", "checks.count(response, 'words') <= checks.bound(example, 'max_words')"),
        ("llm-library", "not checks.contains_phrase(response, 'price')"),
        ("llm-library", "checks.in_language(response, checks.value(example, 'language'))"),
        ("offline", "checks.sentiment(response) >= 0"),
    ]
    reasons = [reason for _, reason in synthesizer.rejected]
    assert reasons == [
        "the instruction does not speak of sentences",
        "'discount' is not in the instruction",
        "the instruction does not ask for French",
        "the instruction does not ask for JSON",
        "the instruction does not ask for a neutral tone",
        "the instruction does not speak of markdown",
        "has top-level code besides the function (line 1: Expr)",
    ]


def test_a_cued_family_is_written_only_where_the_sentence_asks_for_it() -> None:
    answers = {
        "Always include a call to action.": [pick("call_to_action"), pick("invites_contact")],
        "Do not add any text after the list.": [pick("ends_with_list")],
    }
    prompt = " ".join(answers)
    with OpenAIStub(model(answers)) as stub:
        synthesizer, candidates = synthesize(stub, prompt=prompt, sentences=[(s, (INCLUSION,)) for s in answers])
    assert [c.name for c in candidates] == ["assert_call_to_action", "assert_nothing_after_the_list"]
    assert candidates[1].expression == "checks.ends_with_list(response)"
    assert [reason for _, reason in synthesizer.rejected] == [
        "the instruction does not ask for invites the reader to get in touch (contact, reach out)"
    ]


def test_what_the_sentence_cues_is_written_even_when_the_model_picks_nothing() -> None:
    """A small model answering "none" to "Refrain from speculating" loses no check: the sentence's own cue words
    give the library's check, written as the offline synthesizer writes it and labelled as such."""
    sentence = "Refrain from speculating unless it is stated in the {report}."
    with OpenAIStub(model({sentence: [pick("none")]})) as stub:
        _, candidates = synthesize(stub, prompt=sentence, sentences=[(sentence, (EXCLUSION,))])
    assert [(c.name, c.synthesizer, c.expression) for c in candidates] == [
        (
            "assert_states_only_sourced_numbers",
            "offline",
            "checks.sourced_numbers(response, example, prompt, inputs=['report'])",
        ),
        (
            "assert_states_only_sourced_names",
            "offline",
            "checks.sourced_names(response, example, prompt, inputs=['report'])",
        ),
    ]


def test_what_the_inputs_decide_is_written_even_when_the_model_picks_nothing() -> None:
    """A label the inputs decide and a greeting by an input's name need no model to read: written as the offline
    synthesizer writes them, whatever the model picked."""
    label = "If the message mentions heavy bleeding or shortness of breath, the label is URGENT_CLINICAL."
    greeting = "Greet the patient by their first name."
    prompt = f"Patient: {{patient_name}}\nMessage: {{message}}\n{label} {greeting}"
    with OpenAIStub(model({label: [pick("none")], greeting: [pick("none")]})) as stub:
        _, candidates = synthesize(stub, prompt=prompt, sentences=[(label, (INCLUSION,)), (greeting, (INCLUSION,))])
    assert [(c.synthesizer, c.expression) for c in candidates] == [
        (
            "offline",
            "checks.labelled_when_mentioned(response, example, ['heavy bleeding', 'shortness of breath'], "
            "'URGENT_CLINICAL', fields=['message'])",
        ),
        ("offline", "checks.greets_by_name(response, checks.value(example, 'patient_name'), first_name=True)"),
    ]


def test_an_instruction_whose_every_pick_is_rejected_gets_its_offline_reading() -> None:
    """The model saw a check in "Never mention prices." but gave "excludes" no phrase: the sentence keeps the
    check the offline synthesizer reads in it, and the rejected pick is still reported."""
    sentence = "Never mention prices."
    with OpenAIStub(model({sentence: [pick("excludes")]})) as stub:
        synthesizer, candidates = synthesize(stub, prompt=sentence, sentences=[(sentence, (EXCLUSION,))])
    assert [(c.synthesizer, c.expression) for c in candidates] == [("offline", "checks.count(response, 'prices') <= 0")]
    assert [reason for _, reason in synthesizer.rejected] == ["no phrase given"]


def test_a_refused_opening_picked_as_starts_with_is_written_as_its_refusal() -> None:
    sentence = "Never begin your reply with 'Sure'."
    with OpenAIStub(model({sentence: [pick("starts_with", text="Sure")]})) as stub:
        _, candidates = synthesize(stub, prompt=sentence, sentences=[(sentence, (PRESENTATION_FORMAT,))])
    assert [c.expression for c in candidates] == ["not checks.starts_with(response, 'Sure')"]


def test_the_same_check_from_two_instructions_is_one_candidate_serving_both() -> None:
    prompt = "Never mention the price.\nDo not talk about the price."
    sentences = [("Never mention the price.", (EXCLUSION,)), ("Do not talk about the price.", (EXCLUSION,))]
    answers = {text: [pick("excludes", text="price")] for text, _ in sentences}
    with OpenAIStub(model(answers)) as stub:
        _, candidates = synthesize(stub, prompt=prompt, sentences=sentences)
    assert len(candidates) == 1
    assert candidates[0].sentences == ("Never mention the price.", "Do not talk about the price.")


def test_every_request_fits_a_small_context_however_long_the_prompt() -> None:
    filler = "Background paragraph that asks nothing. " * 2000  # about 80,000 characters
    prompt = f"{filler}\nKeep it under 40 words.\n{filler}"
    sentences = [("Keep it under 40 words.", (COUNT,))]
    with OpenAIStub(model({"Keep it under 40 words.": [pick("max_count", "40", "words")]})) as stub:
        _, candidates = synthesize(stub, prompt=prompt, sentences=sentences)
        sizes = [sum(len(m["content"]) for m in r["messages"]) for r in stub.requests]
    assert [c.expression for c in candidates] == ["checks.count(response, 'words') <= 40"]
    assert sizes and max(sizes) <= MAX_REQUEST_CHARS


def test_an_unusable_answer_loses_its_instruction_and_no_usable_answer_at_all_is_an_llm_error() -> None:
    answers: dict[str, list[Pick] | str] = {
        "Keep it under {max_words} words.": "not json",
        "Never mention the price.": [pick("code", text=PRICE)],
    }
    with OpenAIStub(model(answers)) as stub:
        synthesizer, candidates = synthesize(stub)
    assert [c.name for c in candidates] == ["assert_no_price"]
    assert candidates[0].synthesizer == "llm" and candidates[0].source is not None  # model-written code
    assert candidates[0].source.startswith("def assert_no_price(") and "```" not in candidates[0].source
    dropped = dict(synthesizer.dropped)
    assert "not valid JSON" in dropped["Keep it under {max_words} words."]
    unusable = model(dict.fromkeys((t for t, _ in SENTENCES), "Sure! Here you go."))
    with OpenAIStub(unusable) as stub, pytest.raises(LLMError, match="no instruction got a usable answer"):
        synthesize(stub)


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
    codes = [pick("code", text=PRICE)] + [pick("code", text=source) for _, source, _ in BAD_FUNCTIONS]
    instructions_in_order = [text for text, _ in SENTENCES]
    answers = {text: codes[3 * i : 3 * i + 3] for i, text in enumerate(instructions_in_order[:3])}
    answers[instructions_in_order[3]] = codes[9:]  # the duplicate comes after the function it repeats
    with OpenAIStub(model(answers)) as stub:
        synthesizer, candidates = synthesize(stub)

    # the one usable function; the instructions left with none keep the offline reading of their sentence
    assert [c.name for c in candidates if c.synthesizer == "llm"] == ["assert_no_price"]
    assert [(c.name, c.synthesizer) for c in candidates if c.synthesizer != "llm"] == [
        ("assert_at_most_max_words_words", "offline"),
        ("assert_no_amounts_of_money", "offline"),
        ("assert_positive_tone", "offline"),
    ]
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


def test_the_example_for_the_one_run_is_synthetic_unless_given() -> None:
    case = synthetic_example(PromptContext(PROMPT, ("topic", "max_words"), {"topic": "green tea"}))
    assert case.example == {"topic": "green tea", "max_words": "max_words 3"}
    assert case.prompt.startswith("You write product emails about green tea.\nKeep it under max_words 3 words.")
    assert case.response == EXAMPLE_RESPONSE

    source = "def assert_hello(example, prompt, response):\n    return response.split()[0] == 'Hello'\n"
    with OpenAIStub(model({"Use a friendly tone.": [pick("code", text=source)]})) as stub:
        synthesizer, candidates = synthesize(stub, example=SandboxCase({}, "", ""))  # an empty response: IndexError
    assert [(c.name, c.synthesizer) for c in candidates] == [("assert_positive_tone", "offline")]  # in its place
    assert "IndexError" in dict(synthesizer.rejected)["assert_hello"]
