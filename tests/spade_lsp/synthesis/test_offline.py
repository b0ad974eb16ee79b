"""The offline synthesizer reads bounds, formats and phrases from sentences and writes real checks."""

from __future__ import annotations

from typing import Any

import pytest

from spade_lsp import checks
from spade_lsp.synthesis import Candidate, Instruction, PromptContext, placeholders_of
from spade_lsp.synthesis._offline import OfflineSynthesizer
from spade_lsp.taxonomy import COUNT, EXAMPLE_DEMONSTRATION, EXCLUSION, INCLUSION, QUALITATIVE_ASSESSMENT


def synthesize(sentence: str, *categories: str, prompt: str | None = None) -> list[Candidate]:
    text = prompt if prompt is not None else sentence
    start = text.index(sentence)
    instruction = Instruction(sentence, tuple(categories), 2, "sentence", start, start + len(sentence))
    return OfflineSynthesizer().synthesize([instruction], PromptContext(text, tuple(placeholders_of(text))))


def run(candidate: Candidate, response: str, example: dict[str, Any] | None = None) -> bool:
    assert candidate.expression is not None
    scope = {"checks": checks, "example": example or {}, "prompt": "", "response": response}
    return bool(eval(candidate.expression, scope))  # the test's own generated expression, not user code


def by_check(candidates: list[Candidate], **fields: Any) -> Candidate:
    for candidate in candidates:
        if candidate.check and all(candidate.check.get(k) == v for k, v in fields.items()):
            return candidate
    raise AssertionError(f"no candidate with {fields}: {[c.check for c in candidates]}")


@pytest.mark.parametrize(
    ("sentence", "unit", "low", "high"),
    [
        ("Keep it not exceeding 100 words.", "words", None, 100),
        ("Write under 50 words.", "words", None, 49),
        ("Give three bullet points.", "bullets", 3, 3),
        ("List between 5 and 7 tips.", "list_items", 5, 7),
        ("Use at least two paragraphs.", "paragraphs", 2, None),
        ("The summary shouldn't be longer than a couple of sentences.", "sentences", None, 2),
        ("Do not use hashtags.", "hashtags", None, 0),
    ],
)
def test_count_bounds_are_parsed_with_direction(sentence: str, unit: str, low: Any, high: Any) -> None:
    candidate = by_check(synthesize(sentence, COUNT), family="count", unit=unit)
    assert (candidate.check or {})["min"] == low and (candidate.check or {})["max"] == high
    assert candidate.category == COUNT and candidate.version == 2 and candidate.sentence == sentence


def test_count_checks_measure_the_response() -> None:
    at_most = by_check(synthesize("Keep it not exceeding 5 words.", COUNT), unit="words")
    assert run(at_most, "one two three four five")
    assert not run(at_most, "one two three four five six")
    bullets = by_check(synthesize("Give three bullet points.", COUNT), unit="bullets")
    assert run(bullets, "- a\n- b\n- c") and not run(bullets, "- a\n- b")


def test_placeholder_bound_is_read_from_the_example_at_run_time() -> None:
    prompt = "The email should be no more than [word_count] words long.\n[word_count]: {word_count}"
    candidate = by_check(synthesize(prompt.splitlines()[0], COUNT, prompt=prompt), unit="words")
    assert (candidate.check or {})["max"] == "{word_count}"
    assert run(candidate, "a b c", {"word_count": 3}) and not run(candidate, "a b c d", {"word_count": 3})
    with pytest.raises(KeyError, match="word_count"):
        run(candidate, "a b c", {})


def test_json_with_keys() -> None:
    candidate = by_check(synthesize('Answer in JSON with keys "name" and "score".', "Structural/PresentationFormat"),
                         family="json")  # fmt: skip
    assert candidate.check == {"family": "json", "keys": ["name", "score"]}
    assert run(candidate, '```json\n{"name": "x", "score": 1}\n```')
    assert not run(candidate, '{"name": "x"}') and not run(candidate, "not json")


def test_exclusion_of_quoted_words_with_inflections_and_word_boundaries() -> None:
    candidates = synthesize('Never use words like: "Feature", "Religion"', EXCLUSION)
    combined = by_check(candidates, family="excludes", phrases=["feature", "religion"])
    assert combined.category == EXCLUSION
    assert not run(combined, "Our new FEATURES are great")
    assert run(combined, "A featureless plain") is True  # whole words only
    assert {tuple((c.check or {}).get("phrases", ())) for c in candidates} >= {("feature",), ("religion",)}


def test_inclusion_of_a_named_phrase_and_an_input_field() -> None:
    candidates = synthesize("Always include a call to action.", INCLUSION)
    phrase = by_check(candidates, family="includes")
    assert run(phrase, "Click here: a Call-To-Action.") and not run(phrase, "Bye.")
    prompt = "Mention {product} in the first line."
    mentions = by_check(synthesize(prompt, "Content/DataPlaceholders", prompt=prompt), family="mentions")
    assert run(mentions, "Try the Acme Rocket today", {"product": "Acme Rocket"})
    assert not run(mentions, "Try it today", {"product": "Acme Rocket"})


def test_vague_criterion_yields_several_candidates_and_an_llm_question() -> None:
    candidates = synthesize("Be concise.", QUALITATIVE_ASSESSMENT)
    assert len([c for c in candidates if not c.asks_llm]) >= 3
    asks = [c for c in candidates if c.asks_llm]
    assert len(asks) == 1 and "ask_llm(" in (asks[0].expression or "")
    assert all(c.category == QUALITATIVE_ASSESSMENT for c in candidates)


def test_example_demonstration_copies_the_example_sections() -> None:
    prompt = (
        "Split the text into exercises.\nExample output:\n# Morning Routine\n\n## Summary\nShort.\n\n"
        "## Equipment\n- mat\n\n## Exercises\n- squat\n"
    )
    candidates = synthesize("Example output:", EXAMPLE_DEMONSTRATION, prompt=prompt)
    sections = by_check(candidates, family="headings", headings=["Summary", "Equipment", "Exercises"])
    assert sections.category == EXAMPLE_DEMONSTRATION
    assert run(sections, "# X\n## Summary\nx\n## Equipment\n- y\n## Exercises\n- z")
    assert not run(sections, "# X\n## Summary\nx")


def test_sentences_inside_the_example_are_not_instructions() -> None:
    prompt = "Example output:\n## Summary\n- Use at least 40 words.\n"
    sentence = "- Use at least 40 words."
    start = prompt.index(sentence)
    instruction = Instruction(sentence, (COUNT,), 1, "bullet", start, start + len(sentence))
    assert OfflineSynthesizer().synthesize([instruction], PromptContext(prompt, ())) == []


def test_no_instruction_no_candidate() -> None:
    assert synthesize("{docs}", "Content/DataPlaceholders") == []


def test_names_are_unique_and_output_is_deterministic() -> None:
    prompt = "Keep it under 100 words.\nBe concise.\nBe brief and clear."
    instructions = [
        Instruction(line, (QUALITATIVE_ASSESSMENT,), 1, "sentence", prompt.index(line), prompt.index(line) + len(line))
        for line in prompt.splitlines()
    ]
    first = OfflineSynthesizer().synthesize(instructions, PromptContext(prompt, ()))
    second = OfflineSynthesizer().synthesize(instructions, PromptContext(prompt, ()))
    assert first == second
    names = [c.name for c in first]
    assert len(names) == len(set(names)) and all(n.startswith("assert_") and n.isidentifier() for n in names)
