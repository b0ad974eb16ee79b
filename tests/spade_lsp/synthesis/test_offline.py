"""The offline synthesizer reads bounds, formats and phrases from sentences and writes real checks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spade_lsp import checks
from spade_lsp.synthesis import Candidate, Instruction, OfflineSynthesizer, PromptContext, placeholders_of
from spade_lsp.synthesis._offline import _named_phrases
from spade_lsp.taxonomy import (
    COUNT,
    EXAMPLE_DEMONSTRATION,
    EXCLUSION,
    INCLUSION,
    PRESENTATION_FORMAT,
    QUALITATIVE_ASSESSMENT,
    WORKFLOW_DESCRIPTION,
)


def synthesize(sentence: str, *categories: str, prompt: str | None = None) -> list[Candidate]:
    text = prompt if prompt is not None else sentence
    start = text.index(sentence)
    instruction = Instruction(sentence, tuple(categories), 2, "sentence", start, start + len(sentence))
    return OfflineSynthesizer().synthesize([instruction], PromptContext(text, tuple(placeholders_of(text))))


def run(candidate: Candidate, response: str, example: dict[str, Any] | None = None) -> bool:
    assert candidate.expression is not None
    scope = {"checks": checks, "example": example or {}, "prompt": "", "response": response}
    return bool(eval(candidate.expression, scope))  # the test's own generated expression, not user code


def families(candidates: list[Candidate]) -> set[str]:
    """The check families among the candidates (an ``ask_llm`` question has none)."""
    return {str(candidate.check["family"]) for candidate in candidates if candidate.check}


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
        ("Try to identify at least 3-5 key points.", "list_items", 3, None),
        ("Give up to 3-5 tips.", "list_items", None, 5),
        ("Keep it to 80-120 words.", "words", 80, 120),  # a range to keep to, not its upper end alone
        ("Suggest three headlines.", "list_items", 3, 3),  # the items a list of them is
        ("Write {count} journal prompts.", "list_items", "{count}", "{count}"),  # as many as the input says
        ("Limit the reply to 2–3 sentences.", "sentences", 2, 3),
        ("Use three sentences maximum and keep the answer concise.", "sentences", None, 3),
        ("Paragraph text should be limited to a max of 3 sentences in length.", "sentences", None, 3),
        ("Write 200 words or less.", "words", None, 200),
        ("Give 3 tips or more.", "list_items", 3, None),
        ("Elaborate on the topic in about 200 words.", "words", 150, 250),  # approximate: a quarter either way
        ("Limit your response to 280 characters.", "characters", None, 280),
        ("Cap the answer at 50 words.", "words", None, 50),
        ("Don't use more than two hashtags.", "hashtags", None, 2),  # a negated comparison
        ("Never write fewer than 100 words.", "words", 100, None),
        ("No more than 2 links.", "links", None, 2),
        ("Don't exceed 3 bullet points.", "bullets", None, 3),
        ("Write a 3-sentence summary.", "sentences", 3, 3),
        ("Write a 100-word blurb.", "words", 75, 125),  # a size in words is approximate
        ("Keep your answer to one paragraph.", "paragraphs", None, 1),
    ],
)
def test_count_bounds_are_parsed_with_direction(sentence: str, unit: str, low: Any, high: Any) -> None:
    candidate = by_check(synthesize(sentence, COUNT), family="count", unit=unit)
    assert (candidate.check or {})["min"] == low and (candidate.check or {})["max"] == high
    banned = high == 0 and low is None  # "Do not use hashtags" leaves content out: no size is asked
    assert candidate.category == (EXCLUSION if banned else COUNT)
    assert candidate.version == 2 and candidate.sentence == sentence


@pytest.mark.parametrize(
    "sentence",
    [
        "Submit your final answer by adding two newline characters then the verdict.",
        "Leave two blank lines between sections.",
        "Then add two more sentences about the author.",
        "Write about {n} words.",  # approximate, and the margin is no bound of the input
    ],
)
def test_a_number_that_counts_something_else_or_loosely_is_no_count(sentence: str) -> None:
    measured = [c for c in synthesize(sentence, COUNT) if not c.asks_llm]
    assert measured == [], [c.expression for c in measured]


@pytest.mark.parametrize(
    ("sentence", "number"),
    [
        ("One of the sentences must use this fact from our keepers: {fact}", 1),
        ("Two of your bullets should mention the price.", 2),
    ],
)
def test_a_number_of_them_picks_some_out_and_counts_nothing(sentence: str, number: int) -> None:
    counted = [
        c.check for c in synthesize(sentence, COUNT) if c.check and number in (c.check.get("min"), c.check.get("max"))
    ]
    assert counted == []


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


def test_json_without_keys_is_any_json_value_a_later_sentence_may_shape() -> None:
    """ "Create a plan represented in JSON." then "The workflow should be a JSON array": the first asks for JSON,
    not for an object the second rules out."""
    candidate = by_check(
        synthesize("Create a plan represented in JSON.", "Structural/PresentationFormat"), family="json"
    )
    assert run(candidate, '[{"step": 1}]') and run(candidate, '```json\n{"plan": []}\n```')
    assert not run(candidate, "Here is the plan: step 1.") and not run(candidate, "42")


def test_exclusion_of_quoted_words_with_inflections_and_word_boundaries() -> None:
    candidates = synthesize('Never use words like: "Feature", "Religion"', EXCLUSION)
    combined = by_check(candidates, family="excludes", phrases=["feature", "religion"])
    assert combined.category == EXCLUSION
    assert not run(combined, "Our new FEATURES are great")
    assert run(combined, "A featureless plain") is True  # whole words only
    # the sentence asks for none of the words: one check, not one per word
    assert [c.check for c in candidates if (c.check or {}).get("family") == "excludes"] == [combined.check]


def test_inclusion_of_a_named_phrase_and_an_input_field() -> None:
    """A thing to mention named without quotes is content a response words its own way: a model's question, no
    word check; a quoted phrase is the words themselves; an input named is its value."""
    candidates = synthesize("Always mention the warranty period.", INCLUSION)
    assert "includes" not in families(candidates) and [c.asks_llm for c in candidates] == [True]
    quoted = by_check(synthesize('Always mention "2-year warranty".', INCLUSION), family="includes")
    assert run(quoted, "Comes with a 2-year warranty.") and not run(quoted, "Comes with a warranty.")
    prompt = "Mention {product} in the first line."
    mentions = by_check(synthesize(prompt, "Content/DataPlaceholders", prompt=prompt), family="mentions")
    assert run(mentions, "Try the Acme Rocket today", {"product": "Acme Rocket"})
    assert not run(mentions, "Try it today", {"product": "Acme Rocket"})


def test_vague_criterion_yields_several_candidates_and_an_llm_question() -> None:
    candidates = synthesize("Be concise.", QUALITATIVE_ASSESSMENT)
    assert len([c for c in candidates if not c.asks_llm]) >= 1
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


def phrase_checks(candidates: list[Candidate]) -> list[list[str]]:
    return [list((c.check or {})["phrases"]) for c in candidates if (c.check or {}).get("family") in PHRASE_FAMILIES]


PHRASE_FAMILIES = ("includes", "excludes")


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Mention the return policy.", [["return policy"]]),
        # "period" names an attribute of the warranty (answers say "a 2-year warranty"), "return policy" a thing
        ("Always include the warranty period and the return policy.", [["warranty", "return policy"]]),
        ("Be sure to mention the 2-year warranty period if it applies.", None),  # conditional: a check is optional
    ],
)
def test_a_phrase_is_checked_whole_never_by_its_single_words(sentence: str, expected: list[list[str]] | None) -> None:
    """The terms a sentence names (what a ban of them checks, and the words an input is named by) are whole
    phrases; asked for without quotes, they get no word check."""
    assert phrase_checks(synthesize(sentence, INCLUSION)) == []
    found = [_named_phrases(sentence)]
    if expected is not None:
        assert found == expected  # not vacuous: the terms are read, and whole
    for phrases in found:  # never "return" and "policy" on their own; a dropped attribute leaves its head noun
        assert all(len(phrase.split()) > 1 or phrase == "warranty" for phrase in phrases), phrases


@pytest.mark.parametrize(
    "sentence",
    [
        "Avoid jargon.",
        "Use plain words and avoid jargon.",
        "No jargon or buzzwords.",
        "Don't be vague.",
        "Refrain from speculating unless the transcript says so.",
        "Capture and include all relevant context.",
        "Include rich color provided in the transcript.",
        "Provide their definitions and explain them.",
        "Don't make up definitions.",
        "You'll help provide a helpful, clear, and concise summary.",
        'Craft an "existing user" onboarding email.',
        'Include a "Call To Action" encouraging the user to reply.',
        "Provide the title of the lecture.",
        "List any terms, jargons, or phrases that were pivotal to the lecture.",  # a list of kinds
        "List the most important points, facts, or arguments made during the talk.",
    ],
)
def test_qualities_kinds_and_slots_are_not_word_checks(sentence: str) -> None:
    candidates = synthesize(sentence, EXCLUSION, INCLUSION, QUALITATIVE_ASSESSMENT)
    assert phrase_checks(candidates) == []
    assert any(c.asks_llm for c in candidates)  # the criterion stays, as a question for a model


def test_a_literal_term_is_banned_with_its_inflections() -> None:
    ban = by_check(synthesize('Never use the word "synergy".', EXCLUSION), family="excludes")
    assert ban.check == {"family": "excludes", "phrases": ["synergy"]}
    assert not run(ban, "Synergies abound.") and run(ban, "Teams work well.")
    topic = by_check(synthesize("Do not mention competitors.", EXCLUSION), family="excludes")
    assert not run(topic, "A competitor is near.") and not run(topic, "COMPETITORS") and run(topic, "Hi.")


@pytest.mark.parametrize(
    ("phrase", "text", "found"),
    [
        ("mention", "she mentioned it", True),
        ("mention", "mentions", True),
        ("mentioned", "please mention it", True),
        ("mentions", "no mention", True),
        ("summary", "two summaries", True),
        ("summaries", "one summary", True),
        ("discounts", "a discount", True),
        ("discount", "big discounts", True),
        ("stop", "we stopped", True),
        ("stopped", "stop here", True),
        ("warranty period", "warranty periods", True),
        ("feature", "featureless", False),
    ],
)
def test_phrases_match_simple_inflections(phrase: str, text: str, found: bool) -> None:
    assert checks.contains_phrase(text, phrase) is found


@pytest.mark.parametrize(
    "sentence",
    [
        "Omission is acceptable if the text does not provide the warranty period.",
        "Mention the warranty period unless the customer does not ask for it.",
    ],
)
def test_negation_inside_a_condition_bans_nothing_and_asks_for_nothing(sentence: str) -> None:
    assert phrase_checks(synthesize(sentence, EXCLUSION, INCLUSION)) == []  # never "includes warranty period"


@pytest.mark.parametrize(
    ("sentence", "banned", "allowed"),
    [
        ("Make sure that you do not mention the competitor pricing.", "Competitor pricing is high.", "Hello."),
        ("Ensure that the response does not include the phrase 'as an AI'.", "As an AI, I can't.", "I can."),
        ("It is important that the reply does not mention refunds.", "Refunds take a week.", "Thanks!"),
        ("Write a reply which does not mention the warranty period.", "The warranty period is long.", "Hi."),
    ],
)
def test_a_negation_in_a_that_or_which_clause_is_an_exclusion(sentence: str, banned: str, allowed: str) -> None:
    candidates = synthesize(sentence, EXCLUSION, INCLUSION)
    assert [c for c in candidates if (c.check or {}).get("family") == "includes"] == []
    ban = by_check(candidates, family="excludes")
    assert ban.category == EXCLUSION
    assert not run(ban, banned) and run(ban, allowed)


def test_every_item_of_a_banned_list_is_banned_in_one_candidate() -> None:
    for sentence in ("Do not mention discounts, coupons or competitors.",
                     "Do not mention discounts, coupons, and competitors.",):  # fmt: skip
        candidates = synthesize(sentence, EXCLUSION)
        [ban] = [c for c in candidates if (c.check or {}).get("family") == "excludes"]
        assert (ban.check or {})["phrases"] == ["discounts", "coupons", "competitors"]
        assert not run(ban, "Use a coupon.") and not run(ban, "Our competitor.") and run(ban, "Hello.")
    # a comma that ends the list starts no item: "as this ..." and "keep it short" are no terms
    for sentence in ("Do not mention refunds, as this confuses users.", "Do not mention refunds, and keep it short."):
        assert phrase_checks(synthesize(sentence, EXCLUSION)) == [["refunds"]]


def test_a_label_outline_is_not_a_section_but_a_named_part_is() -> None:
    outline = synthesize("Pain: Introduce a common problem the reader has.", "Structural/PresentationFormat")
    assert not [c for c in outline if (c.check or {}).get("family") == "headings"]
    named = synthesize("Subject Line: Devise a compelling subject line.", "Structural/PresentationFormat")
    assert by_check(named, family="headings", headings=["Subject Line"])
    steps = synthesize("**Begin with Context:**", "Structural/PresentationFormat")
    assert not [c for c in steps if (c.check or {}).get("family") == "headings"]


def test_equivalent_checks_are_one_candidate_listing_every_sentence() -> None:
    prompt = "Keep it under 100 words.\nThe answer must stay below 100 words."
    instructions = [
        Instruction(line, (COUNT,), n, "sentence", prompt.index(line), prompt.index(line) + len(line))
        for n, line in enumerate(prompt.splitlines(), 1)
    ]
    [candidate] = OfflineSynthesizer().synthesize(instructions, PromptContext(prompt, ()))
    assert candidate.sentence == instructions[0].text and candidate.version == 1
    assert candidate.sentences == tuple(i.text for i in instructions)


def test_removed_and_reworded_instructions_become_candidates_naming_the_version() -> None:
    from types import SimpleNamespace

    from spade_lsp.synthesis import earlier_instructions

    def change(kind: str, old: str | None, new: str | None, similarity: float = 1.0) -> SimpleNamespace:
        return SimpleNamespace(kind=kind, old_text=old, new_text=new, similarity=similarity, labels=(COUNT,))

    deltas = [
        SimpleNamespace(to_number=1, changes=(change("added", None, "Write at most 50 words."),
                                              change("added", None, "Use three bullet points."))),
        SimpleNamespace(to_number=2, changes=(change("modified", "Write at most 50 words.",
                                                     "Write at most 80 words.", 0.9),)),
        SimpleNamespace(to_number=3, changes=(change("removed", "Use three bullet points.", None),)),
    ]  # fmt: skip
    earlier = earlier_instructions(deltas)
    assert [(i.text, i.version, i.removed_in, i.reworded) for i in earlier] == [
        ("Write at most 50 words.", 1, 2, True),
        ("Use three bullet points.", 1, 3, False),
    ]
    prompt = "Write at most 80 words."
    current = [Instruction(prompt, (COUNT,), 2, "sentence", 0, len(prompt))]
    candidates = OfflineSynthesizer().synthesize(current, PromptContext(prompt, (), earlier=tuple(earlier)))
    limits = {(c.check or {}).get("max"): c for c in candidates if (c.check or {}).get("unit") == "words"}
    assert limits[80].removed_in is None and limits[50].removed_in == 2 and "reworded in v2" in limits[50].description
    bullets = by_check(candidates, unit="bullets")
    assert bullets.removed_in == 3 and "removed in v3" in bullets.description

    from spade_lsp.synthesis._sidecar import render_function

    source = render_function(bullets)
    assert "removed or reworded in v3." in source and "- Use three bullet points." in source
    compile(source, "<sidecar>", "exec")


def test_avoid_jargon_is_measured_as_readability_never_as_a_word_ban() -> None:
    candidates = synthesize("Use a warm, friendly tone and avoid jargon.", EXCLUSION, QUALITATIVE_ASSESSMENT)
    assert phrase_checks(candidates) == []
    assert any("checks.reading_ease(response)" in (c.expression or "") for c in candidates)
    listing = synthesize("List any terms, jargon, or phrases pivotal in the text.", INCLUSION)
    assert not any("reading_ease" in (c.expression or "") for c in listing)  # listing jargon is not avoiding it


def test_language_checks_tolerate_short_answers() -> None:
    candidate = by_check(synthesize("Answer in French.", "Structural/PresentationFormat"), family="language")
    assert run(candidate, "Oui.")  # too short to tell: no evidence against
    assert run(candidate, "Ceci est un texte écrit entièrement en français pour le test.")
    assert not run(candidate, "This is a long answer written entirely in English, not in French at all.")


def test_a_closing_question_and_a_sign_off_are_checked_without_a_model() -> None:
    """ "End with a question." and "Always sign off as The Acme Team." get measured checks, no ``ask_llm``."""
    question = synthesize("End with a question.")
    assert [c.name for c in question] == ["assert_ends_with_a_question"] and not question[0].asks_llm
    assert run(question[0], "Thanks for writing, Ana. Could you send the order number?")
    assert run(question[0], "Could you send the order number?\n\nThe Acme Team")  # a sign-off may follow
    assert not run(question[0], "Is it broken? We will replace it.")
    sign_off = synthesize("Always sign off as The Acme Team.")
    assert [c.name for c in sign_off] == ["assert_signs_off_as_the_acme_team"] and not sign_off[0].asks_llm
    assert run(sign_off[0], "We are on it.\n\nBest,\nThe Acme Team")
    assert not run(sign_off[0], "We are on it.\n\nBest,\nJohn")
    assert [c.name for c in synthesize('Sign your replies with "Best, Acme".')] == ["assert_signs_off_as_best_acme"]
    by_input = [c for c in synthesize("Sign off as {sender_name}.") if c.check]
    assert [c.name for c in by_input] == ["assert_signs_off_as_sender_name"]
    sender = {"sender_name": "Jo"}
    # the rest of a signature and a line the prompt fixes after it may follow the name
    assert run(by_input[0], "Hope to see you soon! - Jo, Riverside Club\nReply STOP to opt out", sender)
    letter = "Jo here from the club!\n\nWe have new classes on Mondays and Thursdays, and the pool reopens soon."
    assert not run(by_input[0], f"{letter}\n\nBest,\nSam\nReply STOP to opt out", sender)
    assert synthesize("Sign in with your account before replying.") == []


@pytest.mark.parametrize(
    "sentence",
    [
        "Don't add any text below the exercises list.",
        "Do not write anything after the list.",
        "Never add notes after the final list.",
        "End with the list of steps.",
    ],
)
def test_nothing_may_follow_the_list(sentence: str) -> None:
    (candidate,) = [c for c in synthesize(sentence) if (c.check or {}).get("family") == "ends_with_list"]
    assert run(candidate, "# Plan\n\n- one\n- two\n  still the second item\n")
    assert not run(candidate, "# Plan\n\n- one\n- two\n\nEnjoy your workout!")
    assert not run(candidate, "No list at all.")


@pytest.mark.parametrize(
    ("sentence", "family"),
    [
        ("Closing: Encourage readers to contact your company if they have any questions.", "invites_contact"),
        ("Invite the customer to get in touch with support.", "invites_contact"),
        ("Include the team's contact details.", "invites_contact"),
        ('Include a "Call To Action" encouraging the user to try {product}.', "call_to_action"),
        ("Always include a Call To Action.", "call_to_action"),
        ("Encourage users to actively engage and try out {topic} for themselves.", "call_to_action"),
    ],
)
def test_an_invitation_to_get_in_touch_or_to_act_is_checked_by_its_words(sentence: str, family: str) -> None:
    candidates = synthesize(sentence, INCLUSION)
    (candidate,) = [c for c in candidates if c.name == f"assert_{family}"]
    assert candidate.category == INCLUSION
    reply = {
        "invites_contact": ("Questions? Reach out to our team any time.", "Thanks for reading our update."),
        "call_to_action": ("Sign up today and get started in minutes.", "Our product has many qualities."),
    }[family]
    assert run(candidate, reply[0]) and not run(candidate, reply[1])


@pytest.mark.parametrize(
    "sentence",
    [
        "Devise a subject line that encourages users to open the email.",
        "Do not include a call to action.",
        "Never ask readers to contact us.",
        "You are a support agent who encourages users to contact the team.",
    ],
)
def test_no_invitation_check_where_none_is_asked(sentence: str) -> None:
    names = {c.name for c in synthesize(sentence, INCLUSION)}
    assert not names & {"assert_invites_contact", "assert_call_to_action"}, names


@pytest.mark.parametrize(
    "sentence",
    [
        "-Refrain from speculating unless the information is explicitly stated in the transcript",
        "Don't make up facts or figures.",
        "Do not make anything up.",
        "Only use the information provided in the article.",
        "Answer based solely on the context below.",
        "Do not include anything that is not stated in the source text.",
        "Do not add facts that are not in the fact sheet: no customer counts, growth rates or awards.",
        "Every number, date, name, title, price and place must match the fact sheet exactly.",
        "Please don't invent discounts, prices or deadlines.",
        "No numbers that aren't in the article (sample sizes, effect sizes, p-values).",
        "- Only what the article says.",
        "Copy numbers exactly.",
        "Use only values from the forecast data.",
        "If the context does not contain the answer, say so; don't try to make up an answer.",
        "State the end date, the reverting rate and both monthly payment figures exactly as given above.",
        "Do not calculate, round or compare the figures.",
        "Don't convert hourly rates into annual figures.",
        "Don't do sums to turn the gift into meals.",
        "NEVER promise or guess a new delivery date.",
        "Never give a specific date or time for a contractor visit.",
        "Repeat the numbers from them exactly (distances, times, speeds, heights).",
        "Flight numbers, tails and times exactly as in the log.",
        "Never mention amounts, merchants or dates that aren't in the customer's message.",
        "No statistics, figures or legal references unless they're in the inputs.",
        "Do not invent benefits, PTO days, bonus targets, relocation support or review dates.",
        "Pay figures must match the offer details exactly.",
        "Everything you say about opening times must come from the venue notes.",
        "The notes are the only source for times and prices.",
        "Supervisors get challenged on made-up numbers.",
        "Don't guess other figures.",
    ],
)
def test_an_instruction_not_to_invent_checks_the_figures_against_the_inputs(sentence: str) -> None:
    (candidate,) = [c for c in synthesize(sentence, EXCLUSION) if (c.check or {}).get("family") == "sourced_numbers"]
    report = {"article": "Sales rose 12% to $3.4 million in the third quarter."}
    assert run(candidate, "Sales rose 12% to $3.4 million.", report)
    assert not run(candidate, "Sales rose 15% to $3.4 million.", report)
    assert not run(candidate, "Sales rose 12%; expect $5 million next year.", report)


@pytest.mark.parametrize(
    "sentence",
    [
        "Don't make up definitions.",  # a kind of content, not the source's figures
        "Feel free to speculate about future trends.",
        "Invent a catchy name for the product.",
        "Make up a short story about a dragon.",
        "Don't guess the user's age.",
        "Add emojis that are not in the brand list.",  # asked, not banned
        "All numbers must be rounded to one decimal.",
        "Only what matters to the reader.",
        "No dates that are in the past.",
        "Never promise a refund or a specific outcome.",
        "Don't give the customer a date for the fix.",
        "Mention the time exactly once.",
        "Round prices to the nearest dollar.",
        "Don't calculate anything for them, just explain the steps.",
        "Keep the tone calm and never guess at the cause of the outage.",
        "Choose only from the list below.",
    ],
)
def test_no_figure_check_where_inventing_is_asked_or_something_else_is_meant(sentence: str) -> None:
    assert not [c for c in synthesize(sentence, EXCLUSION) if (c.check or {}).get("family") == "sourced_numbers"]


@pytest.mark.parametrize(
    "sentence",
    [
        "Your objective is to create a workflow based on the users query.",  # a goal, not a tone
        "You can also provide the user with analytical insights and creative suggestions.",  # whom, not what
        "The response should ONLY include some combination of these components:",  # points elsewhere
        "You are now an evaluator for {topic}.",  # who the model is
        "Assistant is designed to assist with a wide range of tasks, from simple questions to in-depth explanations.",
        "The following text delimited by three backticks is the video's transcript:",  # the input's fence
        "Classify the sentiment as positive, negative, or neutral.",  # answers to choose from, not a tone
        "Mention the product name at least twice.",  # the name itself, never the word "product"
        "Write from the perspective of {persona}.",  # who writes, not what the text says
        "Do not include comments in the code.",  # a kind of content, not the word "comments"
        "Recommend professional help if the user mentions self-harm.",  # the condition's words; "help", no tone
        "Mention the warranty if the customer asks about returns.",  # owed by some answers only: a model's call
        "Sign off with your name.",  # which name is not in the sentence
        "Prices should include the currency symbol.",  # a kind of character, not the words "currency symbol"
        "Include a brief introduction and a conclusion.",  # one part's length, not the response's style
    ],
)
def test_sentences_that_ask_nothing_of_the_response_get_no_measured_check(sentence: str) -> None:
    measured = [c for c in synthesize(sentence, INCLUSION) if not c.asks_llm]
    assert measured == [], [c.expression for c in measured]


def test_an_objective_tone_is_still_a_tone_and_a_listed_object_keeps_only_its_terms() -> None:
    assert "assert_neutral_tone" in {c.name for c in synthesize("Use an objective tone.", QUALITATIVE_ASSESSMENT)}
    listed = synthesize(
        "The workflow should be a JSON array containing only the sequence index, function name and input."
    )
    assert "includes" not in families(listed)
    phrases = _named_phrases(
        "The workflow should be a JSON array containing only the sequence index, function name and input."
    )
    assert phrases and not [p for p in phrases if p.split()[0] in {"only", "and", "or"}], phrases
    json_keys = synthesize("Output a JSON list of objects with keys 'name' and 'email'.")
    assert not [c for c in json_keys if (c.check or {}).get("family") == "includes"]  # no "of objects"


def test_a_limit_after_each_is_per_part_and_a_part_s_limit_is_that_part_s() -> None:
    per_bullet = by_check(synthesize("Summarize it in 3 bullet points, each under 15 words.", COUNT), unit="words")
    assert (per_bullet.check or {})["per"] == "items" and (per_bullet.check or {})["max"] == 14
    assert run(per_bullet, "- one two three\n- four five") and not run(per_bullet, "- " + "word " * 15)
    title = [c for c in synthesize("The title should be at most 10 words.", COUNT) if not c.asks_llm]
    assert [(c.check or {}).get("section") for c in title] == ["title"]  # never the whole response
    summary = [c for c in synthesize("The summary should be at most 3 sentences.", COUNT) if not c.asks_llm]
    assert {(c.check or {}).get("section") for c in summary} == {None, "summary"}  # the summary may be all of it


@pytest.mark.parametrize(
    ("sentence", "expression"),
    [
        ("Begin your answer with 'Dear customer'.", "checks.starts_with(response, 'Dear customer')"),
        ("Wrap the code in triple backticks.", "checks.count(response, 'code_blocks') >= 1"),
        ("Use headings for each section.", "checks.count(response, 'headings') >= 1"),
        ("Include at least one emoji.", "checks.count(response, 'emojis') >= 1"),
        ("Never begin with 'Sure'.", "not checks.starts_with(response, 'Sure')"),  # a refused opening
        ('Do not end with "Best regards".', "not checks.ends_with(response, 'Best regards')"),
        ("Don't end with a question.", "not checks.ends_with_question(response)"),
        ("Use relevant hashtags.", "checks.count(response, 'hashtags') >= 1"),
        ("Do not include links.", "checks.count(response, 'links') <= 0"),
        ("Reply with a single number between 1 and 10.", "checks.number_in_range(response, 1, 10)"),
        ("Rate the answer on a scale of 0-100.", "checks.number_in_range(response, 0, 100)"),
        ("Wrap your final answer in <answer></answer> tags.", "checks.has_tag(response, 'answer')"),
        ("Answer in lowercase.", "checks.letter_case(response) == 'lower'"),
        (
            "Return a JSON object with the keys title, summary and tags.",
            "checks.json_has_keys(response, ['title', 'summary', 'tags'])",
        ),
        ("Return a JSON object.", "isinstance(checks.json_value(response), dict)"),
        ("Respond in all caps.", "checks.letter_case(response) == 'upper'"),
    ],
)
def test_common_format_instructions_get_their_one_check(sentence: str, expression: str) -> None:
    measured = [c.expression for c in synthesize(sentence, PRESENTATION_FORMAT) if not c.asks_llm]
    assert measured == [expression]  # "at least one emoji" is a count, not the words "at least"


def test_a_banned_kind_illustrated_with_names_bans_the_names() -> None:
    (candidate,) = [c for c in synthesize("Avoid mentioning competitors such as Acme or Globex.", EXCLUSION)]
    assert candidate.check == {"family": "excludes", "phrases": ["acme", "globex"]}
    assert run(candidate, "Our competitors cannot match this.")  # the kind's word is no competitor's name
    assert not run(candidate, "Unlike Globex, we ship in a day.")


@pytest.mark.parametrize(
    ("sentence", "reads_easily"),
    [
        ("The document needs to be easily read in simple and clear language.", True),
        ("Explain it in plain English.", True),
        ("Write clearly, for readers new to the topic.", True),
        ("Use bullet points for easy readability.", True),
        ("Avoid technical jargon.", True),
        ("Give our clients a clear picture of the company's financial health.", False),
        ("Clearly articulate the central thesis of the discussion.", False),
        ("Keep the structure simple: one heading per topic.", False),
    ],
)
def test_reading_ease_is_checked_only_where_the_sentence_is_about_the_wording(
    sentence: str, reads_easily: bool
) -> None:
    names = [c.name for c in synthesize(sentence, QUALITATIVE_ASSESSMENT) if not c.asks_llm]
    assert ("assert_readable" in names) is reads_easily, names


@pytest.mark.parametrize(
    "sentence",
    ["REMOVE hashtags and emojis.", "Omit any hashtags or emojis.", "Eliminate all hashtags, emojis nor icons."],
)
def test_a_verb_that_takes_elements_out_bans_them(sentence: str) -> None:
    candidates = [c for c in synthesize(sentence, PRESENTATION_FORMAT) if not c.asks_llm]
    assert [((c.check or {}).get("unit"), (c.check or {}).get("max")) for c in candidates] == [
        ("hashtags", 0),
        ("emojis", 0),
    ]
    assert candidates[0].description == "No hashtags."
    assert run(candidates[1], "Bees pollinate crops.")
    assert not run(candidates[1], "Bees pollinate crops 🐝")


def test_a_ban_on_several_elements_checks_each() -> None:
    candidates = [c for c in synthesize("No hashtags, emojis or links.", PRESENTATION_FORMAT) if not c.asks_llm]
    assert [(c.check or {}).get("unit") for c in candidates] == ["hashtags", "emojis", "links"]
    assert all((c.check or {}).get("max") == 0 for c in candidates)


def test_a_parenthesis_glosses_a_json_key_with_its_values_it_names_no_key() -> None:
    sentence = (
        'Return a JSON object with exactly two keys: "label" (one of "positive", "negative", "neutral") and '
        '"confidence" (a number between 0 and 1).'
    )
    json_check = by_check(synthesize(sentence, PRESENTATION_FORMAT), family="json")
    assert json_check.check is not None and json_check.check["keys"] == ["label", "confidence"]
    assert run(json_check, '{"label": "neutral", "confidence": 0.7}')
    assert not run(json_check, '{"label": "neutral"}')


@pytest.mark.parametrize(
    ("sentence", "titles"),
    [
        ('Format it in Markdown with a "## Ingredients" section and a "## Steps" section.', ["Ingredients", "Steps"]),
        ('End with a section titled "Next steps".', ["Next steps"]),
    ],
)
def test_a_quoted_section_title_asks_for_that_section(sentence: str, titles: list[str]) -> None:
    candidates = synthesize(sentence, PRESENTATION_FORMAT)
    found = [c.check["headings"][0] for c in candidates if c.check and c.check["family"] == "headings"]
    assert found == titles
    assert "ends_with" not in families(candidates)  # a section, not a phrase
    recipe = "\n".join(f"## {title}\n- something" for title in titles)
    assert all(run(c, recipe) for c in candidates if c.check and c.check["family"] == "headings")
    assert not any(run(c, "Just prose.") for c in candidates if c.check and c.check["family"] == "headings")


def test_each_headline_is_a_limit_on_every_headline_not_on_a_headline_section() -> None:
    limit = by_check(synthesize("Each headline must be under 12 words.", COUNT), unit="words")
    assert limit.check is not None and limit.check.get("per") == "items" and "section" not in limit.check
    assert run(limit, "Ten Ways To Sleep Better\nWhy Sleep Matters More Than Ever\nThe Science Of Rest")
    assert run(limit, "1. Ten Ways To Sleep Better\n2. Why Sleep Matters\n3. The Science Of Rest")
    long = "Why Sleep Matters More Than Ever Before In The History Of Modern Working Life"
    assert not run(limit, f"Ten Ways To Sleep Better\n{long}\nThe Science Of Rest")


@pytest.mark.parametrize(
    ("sentence", "breaking", "keeping"),
    [
        ("Do not use exclamation marks.", "What a deal!", "What a deal."),
        ("Avoid semicolons and em dashes.", "It works \u2014 mostly.", "It works, mostly."),
        ("Never use an ellipsis.", "Wait\u2026 what.", "Wait, what."),
        ("Never use SELECT *.", "SELECT *\nFROM orders;", "SELECT id, total\nFROM orders;"),  # a term of code
        ("Do not use GOTO statements.", "10 GOTO 20", "for i in range(3): pass"),
    ],
)
def test_punctuation_banned_by_name_and_code_banned_as_written(sentence: str, breaking: str, keeping: str) -> None:
    ban = by_check(synthesize(sentence, EXCLUSION), family="excludes")
    assert not run(ban, breaking)
    assert run(ban, keeping)


def test_a_quantity_of_something_is_no_literal_to_include() -> None:
    """ "Include the total cooking time": "Cook time: 35 minutes" complies, and holds no "total cooking"."""
    assert "includes" not in families(synthesize("Include the total cooking time in minutes.", INCLUSION))


@pytest.mark.parametrize(
    ("sentence", "unit", "high", "per"),
    [
        ("Limit the steps to at most 8.", "list_items", 8, None),
        ("Keep the bullet points to five or fewer.", "bullets", 5, None),
        ("Keep the sentences to 20 words each.", "words", 20, "sentences"),
        ("Keep the bullets to 10 words.", "words", 10, "items"),
    ],
)
def test_a_limit_set_on_named_parts(sentence: str, unit: str, high: int, per: str | None) -> None:
    limit = by_check(synthesize(sentence, COUNT), unit=unit, max=high)
    assert limit.check is not None and limit.check.get("per") == per


def test_a_limit_in_another_measure_is_no_count() -> None:
    assert "count" not in families(synthesize("Limit the steps to 8 minutes.", COUNT))


def test_a_limit_on_the_steps_of_a_prompt_with_a_steps_section_counts_in_that_section() -> None:
    prompt = (
        'Format it in Markdown with a "## Ingredients" section as a bulleted list and a "## Steps" section as a '
        "numbered list. Limit the steps to at most 8."
    )
    limit = by_check(synthesize("Limit the steps to at most 8.", COUNT, prompt=prompt), unit="list_items")
    recipe = "## Ingredients\n" + "".join(f"- item {i}\n" for i in range(6)) + "## Steps\n"
    assert run(limit, recipe + "".join(f"{i}. step\n" for i in range(1, 8)))  # 13 list items, 7 of them steps
    assert not run(limit, recipe + "".join(f"{i}. step\n" for i in range(1, 10)))


def test_a_labelled_input_line_ending_in_a_period_is_data_not_a_section() -> None:
    prompt = "Product: {product_name}. Features: {features}.\n\nWrite two short paragraphs."
    assert synthesize("Features: {features}.", prompt=prompt) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "Finish with a one-line call to action.",
        "For each problem, give the file name, a severity and a one-sentence explanation.",
        "Give it a 10-word title.",
    ],
)
def test_a_sized_part_is_no_size_of_the_whole_response(sentence: str) -> None:
    """A two-paragraph description that ends in a one-line call to action has more than one line."""
    assert "count" not in families(synthesize(sentence, COUNT))


def test_a_sized_response_keeps_its_size() -> None:
    assert by_check(synthesize("Write a 3-sentence summary.", COUNT), unit="sentences", min=3, max=3)


@pytest.mark.parametrize(
    "sentence", ["Highlight at least three features from the list.", "Include at least two examples."]
)
def test_things_to_mention_are_no_count_of_list_items(sentence: str) -> None:
    """Features woven into two paragraphs are highlighted; no list is asked for."""
    assert not [c for c in synthesize(sentence, COUNT) if c.check and c.check.get("unit") == "list_items"]


def test_the_edge_of_a_part_is_not_the_edge_of_the_response() -> None:
    candidates = synthesize('The subject line must be under 8 words and start with "Follow-up:".', PRESENTATION_FORMAT)
    assert "starts_with" not in families(candidates)
    included = by_check(candidates, family="includes")
    assert run(included, "Subject: Follow-up: our call\n\nHi Sam, ...")
    assert not run(included, "Subject: Our call\n\nHi Sam, ...")


def test_a_count_that_leaves_something_out_is_not_checked_whole() -> None:
    sentence = "Answer in no more than two sentences, not counting the citation."
    assert "count" not in families(synthesize(sentence, COUNT))


def test_quoted_examples_of_a_banned_kind_are_banned() -> None:
    ban = by_check(synthesize('Avoid superlatives such as "best" or "perfect".', EXCLUSION), family="excludes")
    assert not run(ban, "The best lamp you will ever own.")
    assert run(ban, "A bright, dimmable lamp.")


@pytest.mark.parametrize(
    "sentence", ['Use a friendly sign-off like "Cheers".', 'Use words like "innovative", "seamless" and "robust".']
)
def test_quoted_examples_of_a_kind_asked_for_are_not_each_required(sentence: str) -> None:
    """ "Best wishes" is a friendly sign-off: the example is one way to comply, not the way."""
    assert "includes" not in families(synthesize(sentence, INCLUSION))


def test_an_adverb_closing_the_object_is_no_part_of_a_term() -> None:
    """ "Do not give the final answer directly" bans a behaviour; "final answer directly" is no term."""
    candidates = synthesize("Do not give the final answer directly.", EXCLUSION)
    assert "excludes" not in families(candidates)


def test_a_limit_on_the_part_the_prompt_asks_for_is_a_limit_on_the_response() -> None:
    """ "Write a product title ... The title must be between 5 and 12 words": the response is the title."""
    prompt = "Write a product title for an online listing of {product}. The title must be between 5 and 12 words."
    candidates = synthesize("The title must be between 5 and 12 words.", COUNT, prompt=prompt)
    assert [c for c in candidates if c.check and c.check["family"] == "count"]
    assert not [c for c in candidates if c.check and "section" in c.check]
    both = by_check(candidates, unit="words", min=5, max=12)
    assert run(both, "Machine Washable Wool Beanie for Kids")
    assert not run(both, "Bamboo Cutting Boards")


def test_a_limit_on_a_part_of_a_longer_response_stays_on_that_part() -> None:
    prompt = "Write a blog post about {topic}. The title should be at most 10 words."
    limit = by_check(synthesize("The title should be at most 10 words.", COUNT, prompt=prompt), unit="words")
    assert limit.check is not None and limit.check.get("section") == "title"


@pytest.mark.parametrize(
    ("sentence", "lines"),
    [
        ("Each headline must be under 12 words and in Title Case.", None),
        ("Write three headlines in title case.", None),
        ("Write in title case.", None),
        ("Give the post a title in Title Case.", 1),
        ("The title must be in Title Case.", 1),
    ],
)
def test_title_case_is_checked_on_the_lines_the_sentence_speaks_of(sentence: str, lines: int | None) -> None:
    check = by_check(synthesize(sentence, PRESENTATION_FORMAT), family="title_case")
    assert check.check is not None and check.check["lines"] == lines
    assert run(check, "Ten Ways to Sleep Better\nWhy Sleep Matters More Than Ever")
    assert run(check, "Ten Ways to Sleep Better\nwhy sleep matters") is (lines == 1)
    assert not run(check, "Ten ways to sleep better")


@pytest.mark.parametrize("sentence", ["Use Title Case for all headings.", "Do not use title case."])
def test_no_title_case_check_for_headings_or_a_refusal(sentence: str) -> None:
    assert "title_case" not in families(synthesize(sentence, PRESENTATION_FORMAT))


@pytest.mark.parametrize(
    "sentence", ["Avoid yes/no questions.", "Do not ask yes or no questions.", "Ask no questions.", "Give no examples."]
)
def test_a_kind_of_question_or_content_to_leave_out_is_no_count_of_list_items(sentence: str) -> None:
    assert "count" not in families(synthesize(sentence, COUNT))


@pytest.mark.parametrize(
    ("sentence", "unit", "low", "high"),
    [
        ("Answer in one or two sentences.", "sentences", 1, 2),
        ("Use one or more hashtags.", "hashtags", 1, None),
        ("Give three or fewer tips.", "list_items", None, 3),
    ],
)
def test_counts_joined_by_or(sentence: str, unit: str, low: int | None, high: int | None) -> None:
    assert by_check(synthesize(sentence, COUNT), unit=unit, min=low, max=high)
    assert not [c for c in synthesize(sentence, COUNT) if c.check and c.check.get("min") == c.check.get("max")]


def test_a_count_per_thing_of_the_input_is_no_count_of_the_response() -> None:
    """ "One bullet per change": as many bullets as the commits hold changes, not one."""
    candidates = synthesize("Use one bullet per change, written in the past tense.", COUNT)
    assert not [c for c in candidates if c.check and c.check["family"] == "count" and c.check["max"] is not None]


def test_a_noun_after_a_determiner_is_no_verb() -> None:
    """ "in the list below" does not list anything: no phrase to include."""
    candidates = synthesize("For each review in the list below, return its sentiment.", INCLUSION)
    assert "includes" not in families(candidates)


def test_a_limit_on_a_part_of_an_answer_format_counts_in_that_part() -> None:
    prompt = (
        "Write a meta title and a meta description for the page.\n\n1. The meta title must be at most 60 "
        "characters.\n\nFormat your answer as:\nTitle: <title>\nDescription: <description>"
    )
    limit = by_check(synthesize("1. The meta title must be at most 60 characters.", COUNT, prompt=prompt), max=60)
    assert limit.check is not None and limit.check.get("section") == "title"
    assert run(limit, "Title: Repotting Houseplants, Step by Step\nDescription: " + "x" * 130)
    assert not run(limit, "Title: " + "Repotting " * 8 + "\nDescription: short")


def test_a_phrase_the_prompt_gives_an_input_for_refers_to_that_input() -> None:
    prompt = (
        "Given the page content in [content] and the target keyword [keyword], write a meta title. "
        "Include the target keyword."
    )
    candidates = synthesize("Include the target keyword.", INCLUSION, prompt=prompt)
    mention = by_check(candidates, family="mentions", field="keyword")
    assert "includes" not in families(candidates)
    assert run(mention, "Repotting Houseplants: When and How", {"keyword": "repotting houseplants"})
    assert not run(mention, "Moving With Pets", {"keyword": "repotting houseplants"})


def test_an_input_the_prompt_bans_naming_is_written_about_not_named() -> None:
    prompt = 'Write a haiku about {season}. It must have exactly three lines. Avoid the word "{season}" itself.'
    about = synthesize("Write a haiku about {season}.", prompt=prompt)
    assert "mentions" not in families(about)
    banned = synthesize('Avoid the word "{season}" itself.', EXCLUSION, prompt=prompt)
    assert "excludes" not in families(banned)  # no term "itself"
    ban = by_check(banned, field="season")
    assert run(ban, "Red leaves drift and fall", {"season": "autumn"})
    assert not run(ban, "Autumn leaves drift down", {"season": "autumn"})


def test_a_json_object_with_a_list_inside_is_an_object() -> None:
    candidates = synthesize('Return JSON only: an object whose key "days" is a list with one entry per day.')
    assert "json_list" not in families(candidates)
    keys = by_check(candidates, family="json")
    assert run(keys, '{"days": [{"day": 1}]}')
    assert not run(keys, '[{"day": 1}]')
    assert by_check(synthesize("Return a JSON array of objects with the keys id and label."), family="json_list")


def test_bold_section_names_are_sections_to_have() -> None:
    sentence = "Return Markdown with exactly these sections, in order: **Impact**, **Root cause**, **Next steps**."
    found = [c.check["headings"][0] for c in synthesize(sentence) if c.check and c.check["family"] == "headings"]
    assert found == ["Impact", "Root cause", "Next steps"]


def test_the_whole_summary_is_the_response() -> None:
    limit = by_check(synthesize("The whole summary must stay under 150 words.", COUNT), unit="words")
    assert limit.check is not None and "section" not in limit.check
    assert len([c for c in synthesize("The whole summary must stay under 150 words.", COUNT) if c.check]) == 1


def test_dates_and_amounts_kept_unchanged_are_the_inputs_figures() -> None:
    check = by_check(
        synthesize("Keep the original meaning and all dates and amounts unchanged."), family="sourced_numbers"
    )
    assert check.expression is not None
    scope = {"checks": checks, "prompt": "", "example": {"draft": "Your order ships June 12."}}
    assert eval(check.expression, {**scope, "response": "Your order will ship on June 12."})  # the test's own code
    assert not eval(check.expression, {**scope, "response": "Your order will ship on June 14."})


def test_items_inside_items_are_not_counted() -> None:
    """ "Each question has four options": parts of a list cannot tell options from questions."""
    sentence = "Each question has four options labelled A-D and exactly one correct answer."
    assert "count" not in families(synthesize(sentence, COUNT))


def test_a_warm_up_is_no_warm_tone() -> None:
    assert not [
        c for c in synthesize("Include a warm-up first and a cool-down last.") if c.name == "assert_positive_tone"
    ]
    assert [c for c in synthesize("Use a warm tone.") if c.name == "assert_positive_tone"]


def test_a_count_for_each_thing_no_part_marks_is_not_checked() -> None:
    """ "For each issue ... explain the fix in one or two sentences": the issues are not parts a check can split."""
    sentence = "For each issue, quote the relevant line in a code block and explain the fix in one or two sentences."
    assert not [c for c in synthesize(sentence, COUNT) if c.check and c.check.get("unit") == "sentences"]
    per_tweet = by_check(synthesize("For each tweet, use at most two hashtags.", COUNT), unit="hashtags", max=2)
    assert per_tweet.check is not None and per_tweet.check.get("per") == "items"


def test_a_count_at_the_end_is_no_count_of_the_whole() -> None:
    """ "Finish with two review questions" after a list of concepts: the response holds more than two items."""
    assert "count" not in families(synthesize("Finish with two review questions.", COUNT))


def test_names_kept_in_a_language_say_nothing_of_the_response_language() -> None:
    assert "language" not in families(synthesize("Keep product names in English."))
    assert by_check(synthesize("Answer in English."), family="language", code="en")


def test_without_numbering_is_no_numbered_items() -> None:
    check = by_check(synthesize("Put each on its own line, without numbering.", COUNT), unit="numbered_items", max=0)
    assert run(check, "Grow tomatoes on a balcony\nCompost without the smell")
    assert not run(check, "1. Grow tomatoes on a balcony\n2. Compost without the smell")


def test_all_caps_words_name_a_letter_case_not_a_term() -> None:
    assert "excludes" not in families(synthesize("Do not use ALL CAPS words.", EXCLUSION))


def test_a_json_keys_value_from_a_listed_set() -> None:
    prompt = (
        'Return a JSON object with the keys "category", "priority" and "summary". '
        'Priority must be one of "low", "medium" or "high".'
    )
    check = by_check(
        synthesize('Priority must be one of "low", "medium" or "high".', prompt=prompt), family="value_set"
    )
    assert run(check, '{"category": "bug", "priority": "High", "summary": "x"}')
    assert not run(check, '{"category": "bug", "priority": "critical", "summary": "x"}')
    assert not run(check, '{"category": "bug", "summary": "x"}')


def test_a_listed_set_for_the_objects_of_an_array_is_left_to_a_model() -> None:
    prompt = 'Respond with a JSON array of objects with the keys "id" and "label". Label must be one of "a" or "b".'
    assert "value_set" not in families(synthesize('Label must be one of "a" or "b".', prompt=prompt))


def test_an_answer_that_is_the_label_only_is_one_of_the_listed_labels() -> None:
    prompt = (
        "Classify the bug report into one of these labels: crash, ui, performance, data-loss, other.\n\n"
        "Report: {report}\n\nAnswer with the label only, in lowercase, with no punctuation."
    )
    label = by_check(
        synthesize("Answer with the label only, in lowercase, with no punctuation.", prompt=prompt), family="label"
    )
    assert run(label, "data-loss\n")
    assert not run(label, "performance.")
    assert not run(label, "The label is: other")
    listing = "Classify the bug report into one of these labels: crash, ui, performance, data-loss, other."
    assert "label" not in families(synthesize(listing, prompt=prompt))  # the labels alone ask for no bare answer


def test_a_bare_list_of_labels_and_the_category_word_only() -> None:
    prompt = (
        "Category for this insurance claim? One of AUTO, PROPERTY, HEALTH, LIABILITY, OTHER (use OTHER if none "
        "fits). Answer with the category word only.\n\n{claim}"
    )
    label = by_check(synthesize("Answer with the category word only.", prompt=prompt), family="label")
    assert label.check is not None and label.check["labels"] == ["AUTO", "PROPERTY", "HEALTH", "LIABILITY", "OTHER"]
    assert run(label, "LIABILITY")
    assert not run(label, "THEFT")
    assert not run(label, "This claim falls under LIABILITY.")


def test_a_limit_inside_an_answer_format_line_counts_in_its_section() -> None:
    prompt = "Respond in exactly this format:\n\nTITLE: <episode title, at most 8 words>\nSUMMARY: <2 or 3 sentences>"
    title = by_check(synthesize("TITLE: <episode title, at most 8 words>", prompt=prompt), unit="words", max=8)
    assert title.check is not None and title.check.get("section") == "title"
    assert run(title, "TITLE: Four Habits for Better Sleep\nSUMMARY: " + "A long summary sentence. " * 5)
    assert not run(title, "TITLE: " + "word " * 9 + "\nSUMMARY: Short.")


def test_listing_a_number_of_things_counts_a_list_s_items() -> None:
    prompt = (
        "Respond in exactly this format:\nTOPICS:\n- <topic>\n- <topic>\nGUEST: <name>\n\nList exactly three topics."
    )
    topics = by_check(synthesize("List exactly three topics.", prompt=prompt), unit="list_items", min=3, max=3)
    assert topics.check is not None and topics.check.get("section") == "topics"
    assert run(topics, "TOPICS:\n- a\n- b\n- c\nGUEST: Leo Hart")
    assert not run(topics, "TOPICS:\n- a\n- b\n- c\n- d\nGUEST: Leo Hart")


@pytest.mark.parametrize("sentence", ["No exclamation marks", "- No exclamation marks."])
def test_a_constraint_written_as_a_fragment_bans_what_it_names(sentence: str) -> None:
    ban = by_check(synthesize(sentence, EXCLUSION), family="excludes")
    assert run(ban, "We are sorry for the delay.")
    assert not run(ban, "We are so sorry!")
    assert "excludes" not in families(synthesize("No more than 3 bullets.", COUNT))


def test_a_json_key_holding_a_list_is_an_object() -> None:
    candidates = synthesize('Return JSON with a "reasons" key holding a list of labels from the allowed list.')
    assert "json_list" not in families(candidates)
    assert run(by_check(candidates, family="json"), '{"reasons": ["price"]}')


def test_a_section_titled_in_single_quotes_is_a_section_to_have() -> None:
    sentence = "You MUST include a section titled 'When to call the doctor' that lists the warning signs."
    section = by_check(synthesize(sentence), family="headings")
    assert run(section, "Your medicines:\n- Ibuprofen 400 mg\n\nWhen to call the doctor\n- Chest pain")
    assert not run(section, "Your medicines:\n- Ibuprofen 400 mg")


@pytest.mark.parametrize(
    "sentence",
    [
        "NEVER add medicines, tests or advice that are not in the note.",
        "NEVER change a medicine name, dose or schedule.",
    ],
)
def test_adding_nothing_the_source_lacks_is_the_sources_figures_not_a_ban(sentence: str) -> None:
    candidates = synthesize(sentence, EXCLUSION)
    assert "excludes" not in families(candidates)  # "medicines" and "tests" are what it may say, from the note
    sourced = by_check(candidates, family="sourced_numbers")
    note = {"note": "Colchicine 0.6 mg PO b.i.d."}
    assert run(sourced, "Take 0.6 mg of colchicine twice a day.", note)
    assert not run(sourced, "Take 1.2 mg of colchicine twice a day.", note)


def test_abbreviations_given_as_examples_of_a_banned_kind_are_banned() -> None:
    sentence = (
        "NEVER copy medical shorthand from the note such as PO, b.i.d., t.i.d., q6h or PRN; say it in plain words."
    )
    ban = by_check(synthesize(sentence, EXCLUSION), family="excludes")
    assert ban.check is not None and [p.lower() for p in ban.check["phrases"]] == [
        "po",
        "b.i.d.",
        "t.i.d.",
        "q6h",
        "prn",
    ]
    assert run(ban, "Take it by mouth twice a day.")
    assert not run(ban, "Take it PO b.i.d.")


def test_a_json_key_copied_word_for_word_from_an_input_and_one_drawing_on_the_allowed_labels() -> None:
    prompt = (
        "Extract why the customer cancelled.\n\nAllowed reason labels: price, missing_feature, bugs, other.\n\n"
        'Return a JSON object with two keys: "reasons" (a list of 1 to 3 labels from the allowed list) and "quote" '
        "(a phrase copied word for word from the survey answer that supports the first reason).\n\n"
        "Survey answer: {answer}"
    )
    sentence = prompt.split("\n\n")[2]
    candidates = synthesize(sentence, prompt=prompt)
    quote = by_check(candidates, family="verbatim", key="quote", field="answer")
    answer = {"answer": "Honestly it got too expensive for what we used."}
    assert run(quote, '{"reasons": ["price"], "quote": "too expensive"}', answer)
    assert not run(quote, '{"reasons": ["price"], "quote": "the price was too high"}', answer)
    reasons = by_check(candidates, family="value_set", key="reasons")
    assert run(reasons, '{"reasons": ["price", "Bugs"], "quote": "x"}')
    assert not run(reasons, '{"reasons": ["price", "boring_content"], "quote": "x"}')
    assert not run(reasons, '{"reasons": [], "quote": "x"}')


def test_items_under_a_dont_heading_are_banned() -> None:
    prompt = "Do:\n- Be warm and concise.\n\nDon't:\n- Use emoji.\n- Promise refunds yourself."
    ban = by_check(synthesize("Use emoji.", prompt=prompt), unit="emojis")
    assert run(ban, "Happy reading!") and not run(ban, "Happy reading! 📚")
    assert "count" not in families(synthesize("Be warm and concise.", prompt=prompt))


def test_no_sentence_of_a_kind_is_no_count_of_sentences() -> None:
    assert "count" not in families(synthesize("Write only the comment, no sentence like Here is the comment.", COUNT))


def test_a_positive_amount_is_no_tone_and_a_positive_professional_one_is_not_neutral() -> None:
    signs = synthesize("A positive amount is money coming in and is always Income.", QUALITATIVE_ASSESSMENT)
    assert "assert_positive_tone" not in {c.name for c in signs}
    tones = {c.name for c in synthesize("The comment must be positive and professional.", QUALITATIVE_ASSESSMENT)}
    assert "assert_positive_tone" in tones and "assert_neutral_tone" not in tones


def test_the_category_name_only_from_an_allowed_list() -> None:
    prompt = (
        "Categorise the transaction. Allowed categories: Groceries, Transport, Income, Other. Reply with the "
        "category name only, spelled exactly as in the list, and nothing else.\n\nInput: {description}\nOutput:"
    )
    sentence = "Reply with the category name only, spelled exactly as in the list, and nothing else."
    candidates = synthesize(sentence, prompt=prompt)
    assert "includes" not in families(candidates)  # neither "only" nor "spelled exactly" is a term to write
    label = by_check(candidates, family="label")
    assert run(label, "Income") and not run(label, "Category: Income")


def test_a_key_value_spec_s_max_length_is_an_upper_bound() -> None:
    limit = by_check(synthesize("max_length: 60 words for the paragraph", COUNT), unit="words")
    assert limit.check is not None and (limit.check["min"], limit.check["max"]) == (None, 60)


def test_a_part_after_then_is_no_count_of_the_whole() -> None:
    sentence = "format: first line is the object title, then a blank line, then one paragraph of plain text"
    assert "count" not in families(synthesize(sentence, PRESENTATION_FORMAT))


def test_what_to_mention_if_there_is_any_is_no_required_phrase() -> None:
    assert "includes" not in families(synthesize("Name every goalscorer and mention any red cards.", INCLUSION))
    assert "excludes" in families(synthesize("Do not mention any competitors.", EXCLUSION))


def test_a_part_that_stays_in_a_language_says_nothing_of_the_response_s() -> None:
    sentence = "Reply in the same language as the message (the sign-off stays in English)."
    assert "language" not in families(synthesize(sentence))


@pytest.mark.parametrize(
    ("sentence", "phrase"),
    [
        (
            'Its last sentence begins with "Attendees will leave" and states what they will take away.',
            "Attendees will leave",
        ),
        ('After the table, write one sentence that starts with "In short:" and answers the question.', "In short:"),
        ('Finish with one line starting with "Advice:" that gives one concrete improvement.', "Advice:"),
    ],
)
def test_the_edge_of_a_part_named_before_or_after_the_verb_is_that_part_s(sentence: str, phrase: str) -> None:
    candidates = synthesize(sentence)
    assert not families(candidates) & {"starts_with", "ends_with", "count"}
    contains = by_check(candidates, family="includes")
    assert run(contains, f"A first sentence here.\n{phrase} the rest.")


@pytest.mark.parametrize(
    "sentence",
    [
        'Each "What it means" cell is one plain-language sentence of at most 20 words.',
        'Format each item as one line: "<action> - <rationale>", where the rationale is a single sentence.',
        "After the table, write one sentence that answers the question.",
    ],
)
def test_the_size_of_a_part_is_no_size_of_the_response(sentence: str) -> None:
    assert not [c for c in synthesize(sentence, COUNT) if c.check and c.check.get("unit") in ("words", "sentences")]


def test_no_words_of_a_kind_bans_its_examples_and_counts_nothing() -> None:
    candidates = synthesize('It contains no hype words such as "revolutionary" or "game-changing".', EXCLUSION)
    assert "count" not in families(candidates)
    ban = by_check(candidates, family="excludes")
    assert run(ban, "A practical talk on training runs.") and not run(ban, "A revolutionary talk.")


def test_listing_an_input_s_number_of_things_with_a_qualifier() -> None:
    prompt = "Alert: {alert}\n\nList exactly {n} response actions the on-call engineer could take, as a numbered list."
    sentence = prompt.split("\n\n")[1]
    count = by_check(synthesize(sentence, COUNT, prompt=prompt), unit="list_items")
    assert run(count, "1. Isolate the host\n2. Rotate keys", {"n": 2})
    assert not run(count, "1. Isolate the host\n2. Rotate keys\n3. Page security", {"n": 2})


def test_an_instruction_in_another_language_is_left_to_a_model() -> None:
    """The readings are written for English: a Spanish rule gets a model's check rather than none at all."""
    [ask] = synthesize("- Menciona todos los ingredientes principales de la lista.")
    assert ask.asks_llm and "Menciona todos los ingredientes" in (ask.expression or "")
    assert not [c for c in synthesize("- Mention every main ingredient from the list.") if c.asks_llm]


def test_an_edge_written_without_quotes_after_the_line_or_the_words() -> None:
    sentence = "Begin with the line Dear residents, and end with the sign-off line {manager_name}, Building Management."
    candidates = synthesize(sentence, prompt=f"Rewrite the notice.\n\n{sentence}")
    opening = by_check(candidates, family="starts_with")
    closing = by_check(candidates, family="ends_with")
    example = {"manager_name": "Priya Shah"}
    notice = "Dear residents,\nThe lift is out on 3 May.\nPriya Shah, Building Management"
    assert run(opening, notice, example) and run(closing, notice, example)
    assert not run(opening, "Hello everyone,\nThe lift is out.", example)
    assert not run(closing, "Dear residents,\nThe lift is out.\nBuilding Management", example)


def test_web_addresses_kept_exactly_as_written() -> None:
    sentence = "Keep every date, phone number and web address exactly as written in the original."
    candidates = synthesize(sentence)
    kept = by_check(candidates, family="links_kept")
    by_check(candidates, family="sourced_numbers")
    draft = {"draft": "Book at https://example.org/book or call 0777 123 456 by 3 May."}
    assert run(kept, "Please book at https://example.org/book by 3 May.", draft)
    assert not run(kept, "Please book online by 3 May.", draft)


def test_a_position_label_is_no_section_and_its_case_and_size_are_that_part_s() -> None:
    sentence = "First line: the animal's common name in ALL CAPS, nothing else on that line."
    assert not families(synthesize(sentence)) & {"headings", "letter_case", "count"}
    assert not families(synthesize("Step 1: Restate last weekend's result in one sentence.", COUNT)) & {"count"}
    assert "letter_case" in families(synthesize("Write everything in all caps."))


def test_a_positive_thing_to_name_is_no_tone() -> None:
    names = {c.name for c in synthesize("Step 2: Name one positive thing about the team's effort.")}
    assert "assert_positive_tone" not in names


def test_a_negation_ends_at_its_semicolon() -> None:
    assert "excludes" not in families(synthesize('Do not repeat drug doses; write "as prescribed" instead.'))


def test_a_tag_the_prompt_asks_for_is_a_section() -> None:
    prompt = (
        "Put the summary inside <summary></summary> and the tags inside <tags></tags>.\n"
        "The summary is at most 3 sentences."
    )
    limit = by_check(synthesize("The summary is at most 3 sentences.", COUNT, prompt=prompt), max=3)
    assert limit.check is not None and limit.check.get("section") == "summary"
    tagged = "<summary>One. Two. Three.</summary>\n<tags>dog, vaccine, check-up, follow-up</tags>"
    assert run(limit, tagged)
    assert not run(limit, "<summary>One. Two. Three. Four.</summary>\n<tags>dog</tags>")


def test_a_nested_item_under_each_thing_is_per_thing() -> None:
    prompt = "Requirements:\n- Format\n  - numbered list, 5 to 8 items\n- Each item\n  - one line, 12 words max"
    limit = by_check(synthesize("one line, 12 words max", COUNT, prompt=prompt), unit="words")
    assert limit.check is not None and limit.check.get("per") == "items"
    assert run(limit, "1. Send the welcome pack today\n2. Collect the W-9 tax form")
    assert not run(limit, "1. Send the welcome pack " + "and more " * 6 + "\n2. Collect the form")
    assert "per" not in (by_check(synthesize("numbered list, 5 to 8 items", COUNT, prompt=prompt), min=5).check or {})


def test_a_schema_written_as_key_type_lines() -> None:
    prompt = (
        "Return ONLY valid JSON matching this schema:\n"
        '- queue: string, one of "billing", "technical", "account"\n- summary: string, at most 15 words'
    )
    queue = by_check(
        synthesize('- queue: string, one of "billing", "technical", "account"', prompt=prompt), key="queue"
    )
    assert run(queue, '{"queue": "billing", "summary": "x"}') and not run(queue, '{"queue": "delivery"}')
    summary = by_check(synthesize("- summary: string, at most 15 words", COUNT, prompt=prompt), unit="words")
    assert summary.check is not None and summary.check.get("section") == "summary"
    assert run(summary, '{"queue": "billing", "summary": "Refund for a double charge on the March invoice."}')
    assert not run(summary, '{"summary": "' + "word " * 16 + '"}')


@pytest.mark.parametrize(
    ("sentence", "prefix"),
    [
        ('Then give the label on the last line in the format "Label: X" where X is HOT, WARM or COLD.', "Label:"),
        ("Show your steps, then on the last line write Answer: followed by the final answer.", "Answer:"),
    ],
)
def test_what_the_last_line_opens_with(sentence: str, prefix: str) -> None:
    last = by_check(synthesize(sentence), family="last_line_starts_with")
    assert run(last, f"Some reasoning here.\n{prefix} 42")
    assert not run(last, f"{prefix} 42\nSome reasoning after it.")


def test_instructions_after_an_example_block_are_read() -> None:
    prompt = (
        'Write a charter offer.\n\nGood example, imitate this tone:\n"Dear Ms. Rossi, we are pleased to offer '
        'Aurora for 5 nights."\n\nUse 2 or 3 sentences, no exclamation marks, write the price exactly as given.'
    )
    sentence = "Use 2 or 3 sentences, no exclamation marks, write the price exactly as given."
    instruction = Instruction(
        sentence, (), 1, "sentence", prompt.index(sentence), prompt.index(sentence) + len(sentence)
    )
    found = families(OfflineSynthesizer().synthesize([instruction], PromptContext(prompt, ())))
    assert {"count", "excludes", "sourced_numbers"} <= found


def test_a_count_followed_by_each_is_per_the_part_named_before_it() -> None:
    limit = by_check(synthesize("Use short sentences of no more than 12 words each.", COUNT), unit="words")
    assert limit.check is not None and limit.check.get("per") == "sentences"
    assert run(limit, "Max finds a map. He runs to the park.")
    assert not run(limit, "Max finds a very old map in the attic and decides to follow it all the way.")


def test_what_a_character_count_includes_is_no_term() -> None:
    candidates = synthesize("- The rewrite must be under 250 characters, including spaces.", COUNT)
    assert "includes" not in families(candidates)
    assert "bullets" not in str([c.check for c in synthesize("- Plain text only: no markdown, bold or bullet points.")])


@pytest.mark.parametrize(
    "sentence",
    [
        "- Output only the bullets, with nothing before or after them.",
        "  - no intro or closing text, just the list",
        "Output only the list, with no introduction or closing remarks.",
    ],
)
def test_only_the_list(sentence: str) -> None:
    only = by_check(synthesize(sentence), family="only_list")
    assert run(only, "1. Isolate the host\n2. Rotate the keys")
    assert not run(only, "Here are the actions:\n1. Isolate the host\n2. Rotate the keys")


def test_an_ending_given_after_a_colon() -> None:
    closing = by_check(
        synthesize("- End with this exact closing line: Ride on! The Wheelwright Team"), family="ends_with"
    )
    assert run(closing, "Hi Lena,\nWe are on it.\n\nRide on! The Wheelwright Team")
    assert not run(closing, "Hi Lena,\nWe are on it.\n\nHappy riding,\nThe Wheelwright Team")


def test_bold_and_headers_banned_together_are_each_banned() -> None:
    """ "no bold/headers": bold spans and headings, each counted to none; "one bold claim" counts no bold."""
    candidates = synthesize("summarize the notes in max 5 bullets, plain text, no bold/headers.")
    bold = by_check(candidates, family="count", unit="bold")
    assert run(bold, "- Priya shipped the fix") and not run(bold, "- **Priya** shipped the fix")
    assert by_check(candidates, family="count", unit="headings").check["max"] == 0  # type: ignore[index]
    assert not [
        c for c in synthesize("Make one bold claim about the product.") if c.check and c.check.get("unit") == "bold"
    ]


def test_a_last_line_given_as_a_position_label_is_the_answer_line_and_no_remark_after_the_list() -> None:
    prompt = (
        "summarize standup notes in max 5 bullets, no intro or outro.\n"
        "last line: 'BLOCKERS: ' + the blockers, or 'BLOCKERS: none'."
    )
    last = by_check(synthesize("last line: 'BLOCKERS: ' + the blockers, or 'BLOCKERS: none'.", prompt=prompt),
                    family="last_line_starts_with")  # fmt: skip
    listed = "- Sam cut the release candidate.\n- Jin is fixing the crash.\nBLOCKERS: none"
    assert run(last, listed) and not run(last, "- Sam cut the release candidate.")
    only = by_check(synthesize("summarize standup notes in max 5 bullets, no intro or outro.", prompt=prompt),
                    family="only_list")  # fmt: skip
    assert run(only, listed)
    assert not run(only, "Here's today's summary:\n" + listed)
    assert not run(only, listed.replace("BLOCKERS: none", "Have a great day!"))


JSON_PROMPT = """Return a single JSON object with exactly these keys:
- "dish": the dish name, copied as given
- "contains": a list of the allergens that are clearly present
- "confidence": "high", "medium" or "low"; use "low" whenever an ingredient is too vague to judge
- "notes": one short sentence explaining what is in may_contain, or null if may_contain is empty"""


def test_json_keys_listed_in_the_items_below_the_sentence() -> None:
    keys = by_check(
        synthesize("Return a single JSON object with exactly these keys:", prompt=JSON_PROMPT), family="json"
    )
    assert keys.check is not None and keys.check["keys"] == ["dish", "contains", "confidence", "notes"]
    assert not run(keys, '{"dish": "Pho", "contains": [], "confidence": "high"}')


def test_a_schema_line_s_quoted_values_are_its_key_s_value_set_and_its_size_is_the_key_s() -> None:
    line = '- "confidence": "high", "medium" or "low"; use "low" whenever an ingredient is too vague to judge'
    candidates = synthesize(line, prompt=JSON_PROMPT)
    values = by_check(candidates, family="value_set")
    assert run(values, '{"confidence": "low"}') and not run(values, '{"confidence": "certain"}')
    assert "includes" not in families(candidates)  # one of the values, not each of them
    notes = '- "notes": one short sentence explaining what is in may_contain, or null if may_contain is empty'
    size = by_check(synthesize(notes, COUNT, prompt=JSON_PROMPT), family="count", unit="sentences")
    assert size.check is not None and size.check.get("section") == "notes"


@pytest.mark.parametrize(
    "sentence",
    [
        "Read the dish name and its ingredient list and work out which of the 14 major allergens the dish contains.",
        "Only list an allergen if you can tie it to a specific ingredient; don't guess from the dish name alone.",
        "say which tests were added or changed.",
        'If the diff adds or changes no tests, write "No tests added." and nothing else in that section.',
        "The final step is always escalation: name the owning team and the channel or pager from the owner notes.",
    ],
)
def test_nouns_before_a_conjunction_questions_conditions_and_things_to_name_are_no_terms(sentence: str) -> None:
    assert not {"includes", "excludes"} & families(synthesize(sentence))


def test_numbered_steps_are_counted_as_numbered_items_and_markdown_allowed_for_them_is_not_banned() -> None:
    steps = by_check(synthesize("Use at most 3 numbered steps when troubleshooting.", COUNT), family="count")
    assert steps.check is not None and (steps.check["unit"], steps.check["max"]) == ("numbered_items", 3)
    plain = "Plain text only: no markdown, no headings, no bold, and no bullet points apart from numbered steps."
    assert "markdown" not in families(synthesize(plain))


def test_a_one_line_title_at_the_start_is_sized_on_its_own_and_its_examples_are_patterns() -> None:
    sentence = 'Start with a one-line title in the imperative mood ("Fix ...", "Add ..."), at most 72 characters.'
    candidates = synthesize(sentence)
    size = by_check(candidates, family="count", unit="characters")
    assert run(size, "Add retry limit to webhook dispatcher\n\n### Summary\n" + "Webhooks were retried forever. " * 5)
    assert not run(size, "Add a ten-minute in-memory cache for exchange rate lookups in the rates client module\n")
    assert "starts_with" not in families(candidates)


def test_a_bold_label_naming_a_section_the_prompt_asks_for_sizes_that_section() -> None:
    prompt = "Use exactly these sections: `### Summary`, `### Changes`.\n- **Summary**: one or two sentences on why."
    size = by_check(synthesize("- **Summary**: one or two sentences on why.", COUNT, prompt=prompt), family="count")
    assert size.check is not None and size.check.get("section") == "summary"


def test_a_list_introduced_by_for_each_step_holds_per_step_rules() -> None:
    item = "- Start with an action in bold, then a colon and one or two sentences."
    prompt = f"Write 5 to 8 numbered steps.\n\nFor each step:\n{item}"
    size = by_check(synthesize(item, COUNT, prompt=prompt),
                    family="count", unit="sentences", min=1, max=2)  # fmt: skip
    assert size.check is not None and size.check.get("per") == "items"
    assert run(size, "1. **Check pods**: Confirm they run.\n2. **Roll back**: Undo it. Watch the graphs.")


@pytest.mark.parametrize(
    "sentence",
    [
        'Before the list, write one line starting with "Trigger:" that explains what the alert means.',
        "No emoji, no words in all caps other than STOP and PIN.",
    ],
)
def test_a_part_before_the_list_or_a_kind_of_word_is_no_count_of_the_response(sentence: str) -> None:
    counted = [c.check for c in synthesize(sentence) if c.check and c.check.get("unit") in ("lines", "words")]
    assert counted == []


def test_an_input_stated_exactly_as_given_is_mentioned() -> None:
    prompt = "Delivery window: {delivery_window}\n- State the delivery window exactly as given."
    candidates = synthesize("- State the delivery window exactly as given.", prompt=prompt)
    assert "includes" not in families(candidates)
    assert by_check(candidates, family="mentions").check == {"family": "mentions", "field": "delivery_window"}


def test_nothing_outside_the_tags_and_a_size_inside_a_tag() -> None:
    prompt = (
        "Then give your decision inside <decision></decision> tags.\n"
        "Finally, inside <agent_note></agent_note> tags, write a note of no more than two sentences.\n"
        "Don't write anything outside these four pairs of tags."
    )
    only = by_check(
        synthesize("Don't write anything outside these four pairs of tags.", prompt=prompt), family="only_tags"
    )
    assert run(only, "<decision>ELIGIBLE</decision>") and not run(only, "My assessment:\n<decision>ELIGIBLE</decision>")
    sentence = "Finally, inside <agent_note></agent_note> tags, write a note of no more than two sentences."
    size = by_check(synthesize(sentence, COUNT, prompt=prompt), family="count", unit="sentences")
    assert size.check is not None and size.check.get("section") == "agent_note"


def test_a_paragraph_s_label_scopes_its_sentences_to_that_labelled_part() -> None:
    prompt = (
        'Write three posts, each starting with its label on a line of its own ("X:", "LinkedIn:").\n\n'
        "X: no more than 280 characters. Exactly two hashtags.\n\nLinkedIn: between 80 and 150 words. No emojis at all."
    )
    tags = by_check(synthesize("Exactly two hashtags.", COUNT, prompt=prompt), family="count", unit="hashtags")
    assert tags.check is not None and tags.check.get("section") == "x"
    posts = "X:\nShoes out now #Run #Fast\n\nLinkedIn:\nWe launch today. #Run #Shoes #Launch #More"
    assert run(tags, posts)
    emojis = by_check(synthesize("No emojis at all.", COUNT, prompt=prompt), family="count", unit="emojis")
    assert emojis.check is not None and emojis.check.get("section") == "linkedin"
    rules = "Title: <title>\n\nRules:\n1. The meta title must be at most 60 characters."
    limit = by_check(
        synthesize("1. The meta title must be at most 60 characters.", COUNT, prompt=rules), family="count"
    )
    assert limit.check is not None and limit.check.get("section") == "title"  # "Rules:" heads a list, no part


def test_a_language_naming_a_currency_is_no_language_and_the_customer_s_is_their_message_s() -> None:
    assert "language" not in families(synthesize("Quote each price in Norwegian kroner as the catalogue lists it."))
    prompt = (
        "Customer name: {customer_name}\nTheir message:\n{customer_message}\n"
        "Always reply in the same language the customer wrote in."
    )
    same = by_check(
        synthesize("Always reply in the same language the customer wrote in.", prompt=prompt), family="language"
    )
    assert same.check is not None and same.check.get("same_as") == "customer_message"


@pytest.mark.parametrize(
    "sentence",
    [
        "Always answer in the language the customer wrote in.",
        "Reply in whatever language the guest used.",
        "Use the language they write in.",
    ],
)
def test_the_language_someone_wrote_in_is_their_message_s(sentence: str) -> None:
    prompt = f"Guest: {{guest_name}}\nGuest message: {{guest_message}}\n{sentence}"
    same = by_check(synthesize(sentence, prompt=prompt), family="language")
    assert same.check is not None and same.check.get("same_as") == "guest_message"
    assert run(
        same,
        "Merci beaucoup, nous vous attendons samedi avec plaisir.",
        {"guest_message": "Bonjour, une table pour deux samedi soir, s'il vous plaît ?", "guest_name": "Ana"},
    )
    assert not run(
        same,
        "Thank you, we look forward to seeing you on Saturday evening.",
        {"guest_message": "Bonjour, une table pour deux samedi soir, s'il vous plaît ?", "guest_name": "Ana"},
    )


@pytest.mark.parametrize(
    ("sentence", "expressions"),
    [
        ("Escribe en español.", ["checks.in_language(response, 'es')"]),
        ("La descripción debe tener como máximo 35 palabras.", ["checks.count(response, 'words') <= 35"]),
        (
            'Termina con una línea aparte que empiece por "Alérgenos:".',
            ["checks.starts_with(checks.last_line(response), 'Alérgenos:')"],
        ),
        (
            'No uses signos de exclamación ni las palabras "delicioso" o "exquisito".',
            [
                "not checks.contains_phrase(response, '!')",
                "not checks.contains_any(response, ['delicioso', 'exquisito'])",
            ],
        ),
        (
            "Réponds en français, au maximum 3 phrases.",
            ["checks.in_language(response, 'fr')", "checks.count(response, 'sentences') <= 3"],
        ),
        (
            'Schreibe mindestens 50 Wörter und beginne mit "Hallo".',
            ["checks.count(response, 'words') >= 50", "checks.starts_with(response, 'Hallo')"],
        ),
        ('Termine par "Cordialement".', ["checks.ends_with(response, 'Cordialement')"]),
    ],
)
def test_a_sentence_in_another_language_gets_the_readings_that_need_no_grammar(
    sentence: str, expressions: list[str]
) -> None:
    written = [c.expression for c in synthesize(sentence) if c.expression and not c.asks_llm]
    assert written == expressions


def test_what_the_prose_replaces_is_banned() -> None:
    candidates = synthesize("Write in short, friendly paragraphs rather than bullet points or headings.")
    assert by_check(candidates, family="count", unit="bullets").check["max"] == 0  # type: ignore[index]
    assert by_check(candidates, family="count", unit="headings").check["max"] == 0  # type: ignore[index]


def test_format_codes_and_markup_kept_as_written() -> None:
    source = {"source_text": 'Your %1$s recap is ready. <b>Pocketly Plus</b> <a href="https://p.app/plus">More</a>'}
    for sentence in (
        "Keep format placeholders exactly as they are (for example %1$s, %2$s, %d, %@).",
        'Keep HTML tags such as <b>...</b> and <a href="...">...</a> intact, including the URL inside href.',
        "Never translate, renumber or drop the placeholders.",
    ):
        kept = by_check(synthesize(sentence), family="codes_kept")
        assert run(kept, 'Il tuo %1$s è pronto. <b>Pocketly Plus</b> <a href="https://p.app/plus">Altro</a>', source)
        assert not run(kept, 'Il tuo %s è pronto. <b>Pocketly Plus</b> <a href="https://p.app/plus">Altro</a>', source)
    assert "codes_kept" not in families(synthesize("Use template variables for the greeting."))


def test_names_kept_untranslated_are_checked_where_the_source_uses_them() -> None:
    sentence = (
        "Leave our product and feature names in English: Pocketly, Pocketly Plus, Round-Ups and Spending Pots "
        "(singular: Spending Pot)."
    )
    candidates = synthesize(sentence)
    assert "language" not in families(candidates)  # the names' language, not the reply's
    kept = by_check(candidates, family="terms_kept")
    assert kept.check is not None
    assert kept.check["phrases"] == ["Pocketly", "Pocketly Plus", "Round-Ups", "Spending Pots", "Spending Pot"]
    source = {"source_text": "Get unlimited Spending Pots with Pocketly Plus."}
    assert run(kept, "Profitez de Spending Pots illimités avec Pocketly Plus.", source)
    assert not run(kept, "Profitez de cagnottes illimitées avec Pocketly Plus.", source)
    quoted = by_check(synthesize('Do not translate these brand names: "Acme Cloud", "Acme Go".'), family="terms_kept")
    assert quoted.check is not None and quoted.check["phrases"] == ["Acme Cloud", "Acme Go"]


def test_languages_named_as_cases_are_not_the_replys_language() -> None:
    sentence = "Address the user informally (du in German, tu in French and Italian, tú in Spanish, je in Dutch)."
    assert "language" not in families(synthesize(sentence))
    assert "language" in families(synthesize("Always answer in German."))


def test_only_listing_some_of_a_kind_names_no_term() -> None:
    sentence = "Only list tasks that somebody actually agreed to do."
    assert "includes" not in families(synthesize(sentence))


def test_a_sections_title_line_scopes_the_lines_under_it() -> None:
    prompt = (
        "Write up the meeting notes in two sections, each starting with its heading on its own line:\n\n"
        "Summary\n2 to 4 sentences on what was discussed, as plain prose (no bullet points).\n\n"
        "Action items\n- [Owner] Task\n"
    )
    sentence = "2 to 4 sentences on what was discussed, as plain prose (no bullet points)."
    candidates = synthesize(sentence, COUNT, prompt=prompt)
    count = by_check(candidates, family="count", unit="sentences")
    notes = "Summary\nWe met. We decided. We left.\n\nAction items\n- [Ana] Ship it. Today. Now. Really. Yes."
    assert run(count, notes)  # three sentences in the Summary; the action items' own do not count
    assert not run(count, "Summary\nWe met.\n\nAction items\n- [Ana] Ship it. Today.")
    assert run(by_check(candidates, family="count", unit="bullets"), notes)  # the bullets are another section's
    rules = "Rules:\n- Keep it under 50 words.\n"  # a label with a colon heads a list, which is the prompt's
    assert by_check(synthesize("- Keep it under 50 words.", COUNT, prompt=rules), family="count").check is not None


def test_a_prompts_own_part_heading_scopes_nothing() -> None:
    prompt = '## Output format\nMarkdown with three sections headed "### What", "### When" and "### How".\n'
    sentence = 'Markdown with three sections headed "### What", "### When" and "### How".'
    count = by_check(synthesize(sentence, prompt=prompt), family="count", unit="headings")
    assert count.check is not None and "section" not in count.check


def test_a_key_value_lists_line_sizes_its_own_value() -> None:
    prompt = (
        "Output exactly these keys, one per line, formatted as `Key: value`:\n"
        "Fault: what was wrong, max 15 words\nAction: what was done, max 25 words\n"
    )
    assert not [c for c in synthesize("Output exactly these keys, one per line, formatted as `Key: value`:",
                                      prompt=prompt) if (c.check or {}).get("unit") == "lines"]  # fmt: skip
    fault = by_check(synthesize("Fault: what was wrong, max 15 words", COUNT, prompt=prompt), family="count")
    record = "Fault: seized bearing on the yaw motor\nAction: " + "replaced it " * 12
    assert run(fault, record)  # the action's 24 words are the action's
    assert not run(fault, "Fault: " + "very " * 16 + "bad\nAction: none")


def test_nothing_before_or_after_a_key_value_list() -> None:
    candidates = synthesize("No headings, no bullets, no commentary before or after the list.")
    assert "ends_with_list" not in families(candidates)
    only = by_check(candidates, family="only_list")
    assert run(only, "Turbine: WTG-07\nFault: yaw misalignment, nacelle 12 degrees off wind\nParts: none")
    assert not run(only, "Here is the extracted data:\nTurbine: WTG-07\nParts: none")


def test_a_sentence_introducing_the_inputs_asks_no_mention() -> None:
    prompt = "Here is the transcript of a voice note from a turbine visit at {site_name}:\n{transcript}"
    sentence = "Here is the transcript of a voice note from a turbine visit at {site_name}:"
    assert "mentions" not in families(synthesize(sentence, prompt=prompt))


def test_terse_shorthand_conditions_and_open_lists_of_examples() -> None:
    prompt = 'rules:\n- open w/ "Hi {owner}, hive {hive}:" then the update\n'
    opening = by_check(synthesize('- open w/ "Hi {owner}, hive {hive}:" then the update', prompt=prompt),
                       family="starts_with")  # fmt: skip
    assert run(opening, "Hi Ann, hive 4: all calm.", {"owner": "Ann", "hive": "4"})
    varroa = '- varroa: if count > 3 per 100 bees, final line must start "ACTION:". if <= 3, no ACTION line'
    assert "count" not in families(synthesize(varroa, COUNT))  # a condition's count, and "3," is no "3 ... line"
    banned = by_check(synthesize("- NEVER name a treatment product or chemical (apivar, oxalic, formic etc)."),
                      family="excludes")  # fmt: skip
    assert banned.check is not None and banned.check["phrases"] == ["apivar", "oxalic", "formic"]
    jargon = "Do not use engineering jargon or abbreviations (e.g. PRV, DN150, trunk main, valve chamber)."
    terms = by_check(synthesize(jargon), family="excludes").check or {}
    assert [term.lower() for term in terms["phrases"]] == ["prv", "dn150", "trunk main", "valve chamber"]
    line = by_check(synthesize("Line 3: One sentence explaining the cause in plain language.", COUNT), family="count")
    assert line.check is not None and line.check["section"] == "line 3"  # that line's size, not the response's


def test_a_step_reported_on_its_own_labelled_line_is_sized_there() -> None:
    """'report each one on its own line, starting with "Step 1:"': "Step 4: ..., at most 50 words" sizes that line."""
    layout = 'Report each step on its own line, starting with "Step 1:", "Step 2:" and so on.\n'
    sentence = "Step 4: Write the final blurb, at most 50 words."
    size = by_check(synthesize(sentence, COUNT, prompt=layout + sentence), family="count")
    assert size.check is not None and size.check["section"] == "step 4"
    assert run(size, "Step 1: We won.\nStep 4: " + "word " * 40)
    assert not run(size, "Step 1: We won.\nStep 4: " + "word " * 60)
    # steps that are the model's to follow, not lines of the response: no size of a step, nor of the response
    assert "count" not in families(synthesize(sentence, COUNT, prompt=sentence))


def test_an_example_of_an_opening_is_not_the_opening() -> None:
    sentence = "Start with the hold colour and grade, then an em dash, e.g. `Yellow · V3 — `"
    assert not families(synthesize(sentence)) & {"starts_with"}


def test_phrases_a_sentence_describes_the_response_as_are_banned() -> None:
    sentence = 'You never describe anything as "fully accessible" or "100% accessible".'
    banned = by_check(synthesize(sentence), family="excludes")
    assert banned.check is not None and banned.check["phrases"] == ["fully accessible", "100% accessible"]


def test_the_form_to_write_is_not_banned_with_the_forms_it_replaces() -> None:
    sentence = 'Use the full chemical name, never a formula or abbreviation (write "dichloromethane", not "DCM").'
    assert all("dichloromethane" not in (c.check or {}).get("phrases", []) for c in synthesize(sentence))


def test_inputs_named_in_words_give_the_language_and_the_closing_line() -> None:
    prompt = (
        "Donor's preferred language: {donor_language}\nYou answer for {centre_name}.\n"
        "Always reply in the donor's preferred language.\nEnd the reply with the centre name on its own line.\n"
    )
    language = by_check(synthesize("Always reply in the donor's preferred language.", prompt=prompt), family="language")
    assert language.check is not None and language.check["field"] == "donor_language"
    ending = by_check(synthesize("End the reply with the centre name on its own line.", prompt=prompt),
                      family="ends_with")  # fmt: skip
    assert run(ending, "Bis bald!\nBlutspende Mitte", {"centre_name": "Blutspende Mitte"})
    assert not run(ending, "Bis bald!", {"centre_name": "Blutspende Mitte"})


def test_an_input_kept_from_the_reader_is_checked_for_leaks() -> None:
    prompt = "Order:\n{order_details}\n\nSeller metrics (context only):\n{seller_metrics}\n\nThread:\n{case_thread}\n"
    private = by_check(synthesize("Seller metrics (context only):", prompt=prompt), family="keeps_private")
    assert private.check is not None and private.check["fields"] == ["seller_metrics"]
    example = {"order_details": "Order 4471", "seller_metrics": "positive feedback 99.2%", "case_thread": "Buyer: lost"}
    assert run(private, "Buyer says the parcel was lost.", example)
    assert not run(private, "The seller has 99.2% positive feedback.", example)
    inline = synthesize("Interview panel feedback (INTERNAL, see below): {interviewer_feedback}")
    inline_check = by_check(inline, family="keeps_private").check
    assert inline_check is not None and inline_check["fields"] == ["interviewer_feedback"]
    for sentence, marker in (
        ("Do not mention confidential items: anything marked CONFIDENTIAL must not appear.", "CONFIDENTIAL"),
        ('Anything under "Confidential comments to the editor" must not appear in the letter in any form.',
         "Confidential comments to the editor"),
    ):  # fmt: skip
        marked = by_check(synthesize(sentence, EXCLUSION), family="keeps_private")
        assert marked.check is not None and marked.check["markers"] == [marker], sentence
    for sentence in (
        "Customer notes (optional):",  # a note on the label, not a private input
        "Facts (only use these facts - if something isn't listed, e.g. parking, don't mention it): {property_facts}",
        'Don\'t mention items in "the list" twice.',  # a repetition, nothing kept from the reader
        "Include anything marked URGENT at the top.",
    ):
        assert "keeps_private" not in families(synthesize(sentence, EXCLUSION)), sentence


@pytest.mark.parametrize(
    ("sentence", "kinds"),
    [
        ("Don't make up an ID.", ["ids"]),
        ("Never invent ticket numbers.", ["ids"]),
        ("Don't make up URLs, not even ones that look obvious.", ["links"]),
        ("- Links: use ONLY the links listed below.", ["links"]),
        ("- Only list links from the list above, exactly as given.", ["links"]),
        ("- Do not add anything new: no new phone numbers, websites, office hours or advice.", ["links"]),
        ("- Chapters: only timestamps that actually appear in the transcript, copied exactly.", ["timestamps"]),
    ],
)
def test_references_not_to_coin_are_checked_against_the_source(sentence: str, kinds: list[str]) -> None:
    check = by_check(synthesize(sentence, EXCLUSION), family="sourced_codes")
    assert check.check is not None and check.check["kinds"] == kinds
    assert run(check, "See INC-12 at https://x.io/a, 00:41:07.", {"notes": "INC-12 https://x.io/a 00:41:07"})
    assert not run(check, "See INC-13 at https://x.io/b, 00:41:08.", {"notes": "INC-12 https://x.io/a 00:41:07"})


def test_no_reference_check_where_none_is_banned() -> None:
    for sentence in (
        "Don't make up a name for the product.",
        "Include the order number.",
        "Add a link to the docs.",
        "Visit our website for more.",
    ):
        assert "sourced_codes" not in families(synthesize(sentence, EXCLUSION)), sentence


def test_invented_hours_and_estimates_are_the_grounding_check() -> None:
    for sentence in (
        "Only quote the opening hours given above. Never invent hours, dates or holiday openings.",
        "Never estimate or guess a value.",
        "Use only what the technician said.",
    ):
        assert "sourced_numbers" in families(synthesize(sentence)), sentence


def test_a_checklists_boxes_and_its_final_line_form() -> None:
    prompt = '- [ ] No emojis\n- [ ] Then one final line in the form "Serve: <temperature>"\n'
    assert by_check(synthesize("- [ ] No emojis", COUNT, prompt=prompt), family="count", unit="emojis")
    last = by_check(synthesize('- [ ] Then one final line in the form "Serve: <temperature>"', prompt=prompt),
                    family="last_line_starts_with")  # fmt: skip
    assert run(last, "Nose: pear.\n\nServe: 8-10°C")
    assert not run(last, "Nose: pear.")


def test_a_fixed_layouts_numbered_lines() -> None:
    prompt = (
        "Reply in exactly two lines:\nLine 1: the verdict, exactly one of APPROVE, REVIEW, REMOVE, and nothing else.\n"
        'Line 2: "Reason: " followed by one sentence explaining the verdict.\n'
    )
    verdict = by_check(
        synthesize("Line 1: the verdict, exactly one of APPROVE, REVIEW, REMOVE, and nothing else.", prompt=prompt),
        family="line_value",
    )
    assert run(verdict, "REVIEW\nReason: unsure.")
    assert not run(verdict, "REJECT\nReason: spam.")
    reason = 'Line 2: "Reason: " followed by one sentence explaining the verdict.'
    candidates = synthesize(reason, COUNT, prompt=prompt)
    opening = by_check(candidates, family="line_starts_with")
    assert run(opening, "APPROVE\nReason: it is a question about quilting.")
    assert not run(opening, "APPROVE\nIt is a question about quilting.")
    size = by_check(candidates, family="count", unit="sentences")
    assert run(size, "APPROVE\nReason: it is fine.")  # the line's one sentence, not the response's two
    assert not run(size, "APPROVE\nReason: it is fine. It asks a question.")


def test_a_maximum_before_its_number_is_a_ceiling_and_a_single_lines_opening_is_the_responses() -> None:
    candidates = synthesize(
        '- Maximum 2 sentences. Output a single line starting with "HINT: " and nothing else.', COUNT
    )
    assert by_check(candidates, family="count", unit="sentences").check == {
        "family": "count", "unit": "sentences", "min": None, "max": 2,
    }  # fmt: skip
    assert run(by_check(candidates, family="starts_with"), "HINT: look under the rug.")
    assert "starts_with" not in families(synthesize('Finish with one line starting with "Advice:".'))


def test_a_quotation_copied_from_an_input() -> None:
    prompt = (
        "Here is the statement of the director: {director_statement}\n"
        "3. One sentence from the statement of the director must be quoted word by word, in quotation marks.\n"
    )
    sentence = "3. One sentence from the statement of the director must be quoted word by word, in quotation marks."
    candidates = synthesize(sentence, COUNT, prompt=prompt)
    assert "count" not in families(candidates)  # one sentence picked from the statement, not the text's size
    quotes = by_check(candidates, family="quotes_from")
    example = {"director_statement": "Nobody in the village talks about it. I wanted to change that."}
    assert run(quotes, 'She says: "Nobody in the village talks about it."', example)
    assert not run(quotes, 'She says: "Nobody in this village talks about it."', example)


def test_a_films_details_in_parentheses_are_no_mentions() -> None:
    prompt = "Write a short text to the film {film_title} from {director} ({country}, {runtime} minutes)."
    found = {str((c.check or {}).get("field")) for c in synthesize(prompt, prompt=prompt)}
    assert "country" not in found and "runtime" not in found


def test_bans_after_so_no_and_of_an_inputs_value() -> None:
    sentence = 'We are a festival, not a critic. So no judgement like "masterpiece" or "must-see".'
    assert by_check(synthesize(sentence), family="excludes").check["phrases"] == ["masterpiece", "must-see"]  # type: ignore[index]
    prompt = "Solution (for your eyes only): {solution}\n- Never reveal the solution itself (no codes or digits).\n"
    banned = by_check(synthesize("- Never reveal the solution itself (no codes or digits).", prompt=prompt),
                      family="not_mentions")  # fmt: skip
    assert not run(banned, "HINT: try 4172.", {"solution": "4172"})
    assert run(banned, "HINT: look at the flasks.", {"solution": "4172"})


def test_an_openings_slot_is_the_input_it_names_and_a_kept_part_is_sized_alone() -> None:
    prompt = (
        "The {trail_name} trail is closed.\n"
        'ALWAYS start with a headline line in the form "CLOSED: <trail name>" and nothing else on that line.\n'
        "ALWAYS keep the body (everything after the headline) under 100 words.\n"
    )
    headline = 'ALWAYS start with a headline line in the form "CLOSED: <trail name>" and nothing else on that line.'
    opening = by_check(synthesize(headline, prompt=prompt), family="starts_with")
    assert run(opening, "CLOSED: Red Squirrel Trail\nThe trail ...", {"trail_name": "Red Squirrel Trail"})
    body = [
        c.check for c in synthesize("ALWAYS keep the body (everything after the headline) under 100 words.", COUNT,
                                    prompt=prompt) if c.check
    ]  # fmt: skip
    assert [check.get("section") for check in body] == ["body"]


def test_headings_listed_below_a_sentence_are_each_required_and_sizes_in_their_items_are_their_parts() -> None:
    prompt = (
        "## Output format\n"
        "Use exactly these headings, in this order, each followed by a short answer:\n"
        "- Date/time of loss\n"
        "- Circumstances (2-4 sentences, plain English)\n"
        "- Police / fire reference\n"
    )
    intro = "Use exactly these headings, in this order, each followed by a short answer:"
    drafted = synthesize(intro, prompt=prompt)
    assert {c.check["headings"][0] for c in drafted if c.check and c.check["family"] == "headings"} == {
        "Date/time of loss", "Circumstances", "Police / fire reference"
    }  # fmt: skip
    assert "count" not in families(drafted)  # the listed headings, not "at least one heading"
    answer = "Date/time of loss\n01/10/2024\n\nCircumstances\nA van hit the car. Nobody was hurt.\n\n"
    answer += "Police / fire reference\nNone"
    assert all(run(c, answer) for c in drafted if c.check)
    size = by_check(
        synthesize("- Circumstances (2-4 sentences, plain English)", COUNT, prompt=prompt), unit="sentences"
    )
    assert size.check["section"] == "circumstances"
    assert run(size, answer) and not run(size, answer.replace("A van hit the car. ", ""))


def test_an_amount_slot_in_a_closing_line_is_a_form_to_fill() -> None:
    """'End each section with a line "Section total: $X"': the last line opens with the form's words, not "$X"."""
    closing = by_check(synthesize('End each section with a line "Section total: $X".'), family="last_line_starts_with")
    assert run(closing, "## Food\n- Lunch $12\nSection total: $12")
    assert not run(closing, "## Food\n- Lunch $12\nTotal: $12")


def test_figures_kept_as_given_are_no_terms() -> None:
    candidates = synthesize("ALWAYS give the closure dates exactly as provided.")
    assert families(candidates) == {"sourced_numbers"}
    faq = "Answer only with facts stated in the FAQ. Do not add tide times or prices that the FAQ does not mention."
    assert families(synthesize(faq)) == {"sourced_numbers", "sourced_names"}  # what the FAQ lacks, not those words


@pytest.mark.parametrize(
    ("sentence", "names"),
    [
        ("Use only facts from the notes. Do not invent instructor credentials, awards or extras.", True),
        ("Only share rumours from the list above; never invent new locations, people or names.", True),
        ("Don't invent things which are not in my notes (for example lunch, prices, names of teachers).", True),
        ("Refrain from speculating.", True),  # about anything
        ("Keep all dates and amounts unchanged.", False),  # figures alone
        ("Never invent ticket numbers like PLAT-123.", False),
    ],
)
def test_a_grounding_sentence_about_more_than_figures_keeps_names_to_the_source(sentence: str, names: bool) -> None:
    assert ("sourced_names" in families(synthesize(sentence, prompt="Notes: {notes}\n" + sentence))) is names


def test_sizes_of_a_named_part_a_placed_line_and_each_cell_are_not_the_responses() -> None:
    for sentence in (
        'As a participant, I want "Strengths" to be one sentence of no more than 20 words.',
        'As a sponsor, I want one line directly under the table reading "Best prize: " and the team.',
        "Keep each cell to one sentence.",
    ):
        assert "count" not in families(synthesize(sentence, COUNT)), sentence


def test_a_json_schema_after_the_sentence_gives_the_required_keys() -> None:
    prompt = (
        "Your output must be one JSON object that validates against this JSON Schema:\n\n"
        '{{\n  "type": "object",\n  "required": ["title", "date"],\n  "properties": {{\n'
        '    "title": {{"type": "string", "maxLength": 60}},\n    "date": {{"type": "string"}}\n  }}\n}}\n'
    )
    sentence = "Your output must be one JSON object that validates against this JSON Schema:"
    keys = by_check(synthesize(sentence, prompt=prompt), family="json")
    assert keys.check is not None and keys.check["keys"] == ["title", "date"]
    from spade_lsp.synthesis._offline import _is_json_fragment

    assert _is_json_fragment('    "title": {{"type": "string", "maxLength": 60}},')
    assert not _is_json_fragment("Return the title in quotes.")


def test_an_action_to_describe_is_no_term() -> None:
    sentence = "safety_notes must always include wearing closed-toe shoes and wearing natural-fibre clothing."
    assert _named_phrases(sentence) == []
    assert _named_phrases("Always include the shipping costs.") == ["shipping"]


def test_sign_offs_given_or_named_by_an_input() -> None:
    closing = by_check(synthesize("- Finish with the sign-off on its own line: — Port Carrow Harbour Office"),
                       family="ends_with")  # fmt: skip
    assert run(closing, "Yes, there is.\n— Port Carrow Harbour Office")
    prompt = "- Coordinator name: {coordinator_name}\n7. End with the coordinator's name as the sign-off.\n"
    named = by_check(synthesize("7. End with the coordinator's name as the sign-off.", prompt=prompt),
                     family="ends_with")  # fmt: skip
    assert run(named, "Thanks so much,\nPriya", {"coordinator_name": "Priya"})
    assert "includes" not in families(synthesize("1. 80 words or fewer, including the sign-off.", COUNT))


def test_what_a_sentence_asks_only_under_its_condition_is_no_requirement() -> None:
    item = (
        "2. Then list issues as bullets. Each bullet starts with a severity label. Order them by severity, at most 8 "
        'bullets. If you find nothing, write "No issues found." instead of bullets.'
    )
    checks_found = [c.check for c in synthesize(item, COUNT) if c.check]
    assert {"family": "count", "unit": "bullets", "min": None, "max": 8} in checks_found
    assert {"family": "count", "unit": "bullets", "min": None, "max": 0} not in checks_found
    assert "includes" not in {check["family"] for check in checks_found}


def test_last_lines_given_by_their_opening_or_by_alternatives() -> None:
    sources = synthesize('- Finish with a final line starting "Sources:" that lists the passage numbers you cited.')
    assert "ends_with" not in families(sources)
    assert run(by_check(sources, family="last_line_starts_with"), "Pumps need care [1].\nSources: [1]")
    verdict = synthesize('End with "Verdict: APPROVE" or "Verdict: REQUEST CHANGES".')
    assert "ends_with" not in families(verdict)
    last = by_check(verdict, family="last_line_starts_with")
    assert run(last, "Summary: fine.\nVerdict: APPROVE") and run(last, "Summary: no.\nVerdict: REQUEST CHANGES")
    assert not run(last, "Summary: fine.")
    marker = by_check(synthesize('Always end with the exact text "Book your spot: [SIGNUP_LINK]" on its own line.'),
                      family="ends_with")  # fmt: skip
    assert not run(marker, "Join us.\nBook your spot: https://example.org/signup")


def test_no_terms_from_a_number_to_cite_names_to_withhold_or_a_compound() -> None:
    assert "includes" not in families(synthesize("Cite the passage number in square brackets, like [2]."))
    assert "excludes" not in families(synthesize('Never name guests; say "a guest", "two guests", etc.'))
    assert "includes" not in families(synthesize("You write the tap-list blurbs that go on the TV screens."))
    fees = by_check(synthesize("Never mention the 3D printer filament fees."), family="excludes")
    assert fees.check is not None and fees.check["phrases"] == ["3d printer filament"]


def test_a_bold_labels_value_and_its_alternative_forms() -> None:
    prompt = (
        "1. Use exactly these bold labels, each starting a new line: **Date:**, **Severity:**, **Follow-up needed:**\n"
        "2. **Severity:** must be exactly one word: Low, Medium or High.\n"
        '3. **Follow-up needed:** is a short list of "- " bullets, or the single word None.\n'
    )
    severity = synthesize("2. **Severity:** must be exactly one word: Low, Medium or High.", COUNT, prompt=prompt)
    value = by_check(severity, family="line_value")
    report = "**Date:** 3 May\n**Severity:** Medium\n**Follow-up needed:** None"
    assert run(value, report) and not run(value, report.replace("Medium", "Moderate"))
    assert run(by_check(severity, family="count", unit="words"), report)
    follow_up = '3. **Follow-up needed:** is a short list of "- " bullets, or the single word None.'
    assert "words" not in {(c.check or {}).get("unit") for c in synthesize(follow_up, COUNT, prompt=prompt)}


def test_code_fences_banned_in_every_wording_and_an_input_fence_counted_never() -> None:
    for sentence in (
        "- Output ONLY the YAML document. No ``` fences, no explanation before or after.",
        "No code fences.",
        "Do not wrap the output in code fences.",
        "Never put it inside backticks.",
    ):
        fences = by_check(synthesize(sentence, COUNT), family="count", unit="code_blocks")
        assert fences.check is not None and fences.check["max"] == 0, sentence
        assert run(fences, "event:\n  crop: plums") and not run(fences, "```yaml\nevent: {}\n```")
    assert "count" not in families(synthesize("The text delimited by three backticks is the transcript:", COUNT))


def test_an_input_copied_word_for_word_and_an_if_none_condition() -> None:
    prompt = "Compensation: {compensation}\n4. Put the compensation statement in its own paragraph, word for word.\n"
    copied = by_check(synthesize("4. Put the compensation statement in its own paragraph, word for word.",
                                 prompt=prompt), family="copied_input")  # fmt: skip
    example = {"compensation": "A £5 credit, valid until 31 December."}
    assert run(copied, "We are sorry.\n\nA £5 credit, valid until 31 December.\n\nKind regards", example)
    assert not run(copied, "We are sorry.\n\nYou will get some credit.", example)
    assert "includes" not in families(synthesize("- `closures` is a list of row codes; use `[]` if none are closed."))
    offer = "Do not offer anything more (no extra discounts, free drinks, priority booking, etc.)."
    offers = by_check(synthesize(offer), family="excludes")
    assert offers.check is not None and offers.check["phrases"][0] == "extra discounts"


def test_a_schema_line_in_words_is_an_instruction_and_a_name_never_to_name_is_banned() -> None:
    prompt = 'Return JSON with these fields.\n"confidence": "high" or "low"; use "low" when unsure\n'
    value = by_check(synthesize('"confidence": "high" or "low"; use "low" when unsure', prompt=prompt),
                     family="value_set")  # fmt: skip
    assert value.check is not None and value.check["values"] == ["high", "low"]
    banned = by_check(synthesize("Do not name Globex or Acme Corp."), family="excludes")
    assert banned.check is not None and banned.check["phrases"] == ["globex", "acme corp"]


def test_an_sms_with_a_hard_limit_an_exact_ending_and_a_24_hour_clock() -> None:
    limit = by_check(synthesize("- Hard limit: 160 characters total, spaces and punctuation included.", COUNT),
                     family="count", unit="characters")  # fmt: skip
    assert limit.check is not None and (limit.check["min"], limit.check["max"]) == (None, 160)
    ending = by_check(synthesize("- End with exactly: Reply STOP to opt out"), family="ends_with")
    assert run(ending, "N12 diverted tonight. Reply STOP to opt out")
    assert not run(ending, "N12 diverted tonight. Text STOP to unsubscribe")
    clock = by_check(synthesize("- Times in 24-hour format (e.g. 01:40), never am/pm."), family="count",
                     unit="am_pm_times")  # fmt: skip
    assert run(clock, "N3 leaves at 00:45, not 00:15.")
    assert not run(clock, "No service 1am-4:30am.") and not run(clock, "First bus 6 p.m.")
    phones = by_check(synthesize("- No links, no phone numbers, no emojis."), family="count", unit="phone_numbers")
    assert run(phones, "Use stop QM2 from 23:30 on 2025-06-14; fares up to 1 250 000 points.")
    assert not run(phones, "Call 0800 123 4567 for help.") and not run(phones, "Ring +44 20 7946 0958.")


@pytest.mark.parametrize(
    ("sentence", "unit"),
    [
        ("- Do not mention commit hashes.", "commit_hashes"),
        ("Never include commit hashes or the author's e-mail.", "commit_hashes"),
        ("Do not mention phone numbers.", "phone_numbers"),
        ("Avoid quoting email addresses.", "emails"),
    ],
)
def test_a_ban_on_mentioning_a_kind_of_thing_counts_that_kind(sentence: str, unit: str) -> None:
    """ "Do not mention commit hashes" bans every hash the response writes, not the words "commit hashes"."""
    ban = by_check(synthesize(sentence, EXCLUSION), family="count", unit=unit)
    assert ban.check is not None and (ban.check["min"], ban.check["max"]) == (None, 0)
    assert "excludes" not in families(synthesize(sentence, EXCLUSION))


def test_a_ban_on_commit_hashes_fails_a_changelog_that_cites_one() -> None:
    ban = by_check(synthesize("- Do not mention commit hashes.", EXCLUSION), family="count", unit="commit_hashes")
    assert run(ban, "## 2.5.1\n\n### Fixed\n- Fixed the timezone in reports.")
    assert not run(ban, "## 2.5.1\n\n### Fixed\n- Fixed the timezone in reports (d4e5f6a).")


def test_a_ban_on_the_given_hashtags_is_not_a_ban_on_every_hashtag() -> None:
    assert "count" not in families(synthesize("Don't mention the hashtags you were given.", EXCLUSION))


def test_a_ban_after_a_dash_and_a_third_person_bio() -> None:
    marks = by_check(synthesize("Tone: warm but plain, like a friend introducing them - no exclamation marks."),
                     family="excludes")  # fmt: skip
    assert marks.check is not None and marks.check["phrases"] == ["!"]
    third = by_check(synthesize("Write it in the third person, using the pronouns given in the notes."),
                     family="count", unit="first_person")  # fmt: skip
    by_check(synthesize("person: third person only, never I, we or you"), family="count", unit="first_person")
    assert run(third, 'Priya is a nurse. She rows in the stroke seat; "I love it," she says.')
    assert not run(third, "I am a nurse from Leeds and my crew rows with me.")
    assert not run(third, "We are rowing for our local hospital.")


def test_a_marker_in_quotes_is_no_phrase_and_a_value_used_when_a_condition_holds_is_not_required() -> None:
    marker = 'Output only the three bullets, using "- " as the bullet marker, with no heading or introduction.'
    assert "includes" not in families(synthesize(marker))
    conditional = 'Use "mixed" when the review contains both clear praise and clear complaints.'
    assert "includes" not in families(synthesize(conditional, INCLUSION))


def test_a_24_hour_clock_bans_am_and_pm_without_naming_them() -> None:
    clock = by_check(synthesize("Give all times in 24-hour format.", PRESENTATION_FORMAT), family="count",
                     unit="am_pm_times")  # fmt: skip
    assert clock.description == "No am/pm times."
    assert run(clock, "Doors open at 19:30.") and not run(clock, "Doors open at 7.30pm.")


def test_a_quality_on_a_schema_line_is_measured_on_that_key() -> None:
    prompt = 'Return ONLY a JSON object with exactly these keys:\n- "summary": plain English, max 20 words\n'
    readable = by_check(synthesize('- "summary": plain English, max 20 words', prompt=prompt), family="count")
    assert readable.check is not None and readable.check["section"] == "summary"
    [plain] = [c for c in synthesize('- "summary": plain English, max 20 words', prompt=prompt) if "readable" in c.name]
    assert plain.expression == "checks.reading_ease(checks.present_section(response, 'summary')) >= 30"
    fenced = '```json\n{"summary": "The boiler was serviced and we tested it. It works well now."}\n```'
    assert run(plain, fenced)
    [tone] = [c for c in synthesize("The tone should be warm.") if c.name == "assert_positive_tone"]
    assert tone.expression == "checks.sentiment(response) >= 0"


def test_inputs_named_by_their_last_words_are_mentioned_even_exactly_as_given() -> None:
    prompt = (
        "Write an SMS about route {route_number} on {service_date}.\nUse this stop instead: {alternative_stop}\n"
        "- Mention the route number, the date and the alternative stop exactly as given.\n"
    )
    sentence = "- Mention the route number, the date and the alternative stop exactly as given."
    fields = {c.check["field"] for c in synthesize(sentence, INCLUSION, prompt=prompt) if c.check and
              c.check.get("family") == "mentions"}  # fmt: skip
    assert fields == {"route_number", "service_date", "alternative_stop"}
    bio = "Write a bio of {rower_name}: {boat_role}, {charity_cause}.\nMention their role in the boat.\n"
    fields = {c.check["field"] for c in synthesize("Mention their role in the boat.", INCLUSION, prompt=bio)
              if c.check and c.check.get("family") == "mentions"}  # fmt: skip
    assert fields == {"boat_role"}
    two_dates = "Booked {start_date} to {end_date}.\nMention the date.\n"
    assert "mentions" not in families(synthesize("Mention the date.", INCLUSION, prompt=two_dates))
    specs = "Write a FAQ for {product}.\nUse only facts from this spec sheet and add no others: {specs}\n"
    sentence = "Use only facts from this spec sheet and add no others: {specs}"
    assert "mentions" not in families(synthesize(sentence, INCLUSION, prompt=specs))


def test_a_part_s_wording_does_not_apply_without_the_part_and_its_size_is_no_style() -> None:
    prompt = "Write two sections.\n## Summary\n## Actions\nSummary: 2 to 4 sentences, in clear language.\n"
    [plain] = [c for c in synthesize("Summary: 2 to 4 sentences, in clear language.", prompt=prompt)
               if "readable" in c.name]  # fmt: skip
    with pytest.raises(checks.NotApplicable):
        run(plain, "## Actions\n- Book the room.")
    short = "Justification: <short explanation of the mark>"
    grading = f"Output two lines:\nMark: <0-4>\n{short}\n"
    assert not [c for c in synthesize(short, prompt=grading) if "concise" in c.name]
    prose = "2 to 4 sentences on what was discussed, as plain prose (no bullet points)."
    assert not [c for c in synthesize(prose) if "readable" in c.name]


def test_bans_kinds_and_labels_read_as_what_they_say() -> None:
    spoken = "write in plain spoken sentences with no lists, symbols, emojis, URLs or markdown."
    assert by_check(synthesize(spoken), family="markdown").check == {"family": "markdown", "present": False}
    asked = "Never write long paragraphs, always use markdown."
    assert by_check(synthesize(asked), family="markdown").check == {"family": "markdown", "present": True}
    invent = "Don't invent things which are not in my notes (for example lunch, prices, names of teachers)."
    assert "excludes" not in families(synthesize(invent, EXCLUSION))
    assert "excludes" not in families(synthesize("Do not add any medication that was not dispensed.", EXCLUSION))
    assert "includes" not in families(synthesize("Include some warning signs that mean the owner should phone.",
                                                 INCLUSION))  # fmt: skip
    signs = "- Under ## When to Call Us, list at least three specific warning signs as bullet points."
    assert "ends_with" not in families(synthesize(signs))
    hints = "Make each hint more helpful than the last: hint 1 points to the area, hint 2 names the piece."
    assert "count" not in families(synthesize(hints, COUNT))
    action = "ACTION: <tool_name>(<arguments as one JSON object>)"
    assert "json" not in families(synthesize(action, prompt=f"Output exactly two lines:\nTHOUGHT: <why>\n{action}\n"))


def test_a_size_given_for_one_part_of_a_layout_counts_in_that_part() -> None:
    layout = "Write feedback with this layout:\n\nWhat happened:\n<1-2 sentences on why {move} was a problem>\n"
    slot = synthesize("<1-2 sentences on why {move} was a problem>", COUNT, prompt=layout)
    assert {(c.check or {}).get("section") for c in slot if (c.check or {}).get("family") == "count"} == {
        "what happened"
    }
    steps = (
        '3. Write a title in the form "<Defect type> – <Street name>", maximum 8 words.\n'
        "Output exactly these lines:\nPriority: <P1/P2>\nTitle: <title>\nDescription: <description>\n"
    )
    title = by_check(synthesize(steps.splitlines()[0], COUNT, prompt=steps), family="count", unit="words")
    assert title.check is not None and title.check.get("section") == "title"
    schema = (
        "Return only a JSON object with keys: customer_name, fault_summary.\n"
        "- fault_summary: one sentence of at most 20 words.\n"
    )
    summary = by_check(synthesize("- fault_summary: one sentence of at most 20 words.", COUNT, prompt=schema),
                       family="count", unit="words")  # fmt: skip
    assert summary.check is not None and summary.check.get("section") == "fault_summary"
    inline = 'Return a JSON object with keys "score" (integer 1-5) and "justification" (2-3 sentences citing a detail).'
    sentences = [c for c in synthesize(inline, COUNT) if (c.check or {}).get("unit") == "sentences"]
    assert sentences and {c.check.get("section") for c in sentences if c.check} == {"justification"}
    dialogue = "4. Reply with at most 3 sentences of spoken dialogue, then exactly one line of action in asterisks."
    assert not [c for c in synthesize(dialogue, COUNT) if (c.check or {}).get("unit") == "sentences"]
    spec = "max_length: 60 words for the paragraph\nformat: the title, then a blank line, then one paragraph"
    assert by_check(synthesize(spec, COUNT), family="count", unit="words").check["max"] == 60  # type: ignore[index]


def test_a_checklist_s_items_are_read_like_any_list_item() -> None:
    prompt = "Check your announcement against this list:\n[ ] No emoji and no exclamation marks\n"
    item = "[ ] No emoji and no exclamation marks"
    assert families(synthesize(item, prompt=prompt)) == {"count", "excludes"}
    body = "[ ] The body is 80 to 150 words (not counting the subject line)"
    words = by_check(synthesize(body, COUNT), family="count", unit="words", min=80, max=150)
    assert run(words, "Subject: Observing night\n\n" + "Clear skies tonight. " * 27)  # 81 words in the body
    assert not run(words, "Subject: " + "word " * 10 + "\n\n" + "Clear skies tonight. " * 24)
    cited = "No more than two sentences, not counting the citation."
    assert "count" not in families(synthesize(cited, COUNT))


def test_a_first_or_last_line_given_exactly_is_the_response_s_edge() -> None:
    subject = by_check(synthesize('The first line is the subject line, starting with "Subject: "'),
                       family="starts_with")  # fmt: skip
    assert run(subject, "Subject: Observing night\n\nHello all") and not run(subject, "Observing night")
    last = by_check(synthesize("The last line is exactly: Clear skies, HVAS Committee"), family="ends_with")
    assert last.check == {"family": "ends_with", "phrase": "Clear skies, HVAS Committee"}
    part = synthesize('The subject line must start with "Follow-up:".')
    assert "starts_with" not in families(part)
    matches = by_check(synthesize('2. A line starting "Matches:" with two example strings, each in backticks.'),
                       family="has_line_starting")  # fmt: skip
    assert run(matches, "1. `^` - Start.\n\nMatches: `AB1`, `CD2`\nVerdict: yes")
    assert not run(matches, "1. `^` - Start.\n\nVerdict: yes, it matches `AB1`")
    prompt = "Lift: {lift_name}\nRules:\n- Start with the lift name, then a colon.\n"
    lift = by_check(synthesize("- Start with the lift name, then a colon.", prompt=prompt), family="starts_with")
    assert run(lift, "GIPFELBAHN: CLOSED - HIGH WIND", {"lift_name": "Gipfelbahn"})
    assert not run(lift, "CLOSED: GIPFELBAHN - HIGH WIND", {"lift_name": "Gipfelbahn"})


def test_marks_letters_and_greetings_banned_by_name() -> None:
    marks = by_check(synthesize("No commas, slashes, apostrophes or umlauts (write AE, OE, UE)."), family="excludes")
    assert marks.check == {"family": "excludes", "phrases": [",", "/", "'", "’"]}  # not the letters to write instead
    assert not run(marks, "KESSELBAHN: CLOSED, MOUNTAIN RESCUE") and run(marks, "BAERENLIFT: CLOSED - WIND")
    quotes = by_check(synthesize("Output the ticker text only, on one line, without quotes."), family="excludes")
    assert not run(quotes, '"GIPFELBAHN: OPEN"') and run(quotes, "GIPFELBAHN: OPEN")
    capitals = by_check(synthesize("ALL CAPITALS, because the board has no lowercase font."), family="letter_case")
    assert capitals.check == {"family": "letter_case", "case": "upper"}
    greeting = synthesize("No greeting or sign-off.")
    assert families(greeting) == {"no_greeting", "no_sign_off"}
    assert not run(by_check(greeting, family="no_greeting"), "Hi! Great question. Your regex ...")
    assert not run(by_check(greeting, family="no_sign_off"), "Verdict: yes.\n\nHope this helps!")
    assert all(run(c, "1. `^` - Start.\nVerdict: yes.") for c in greeting)
    for counted in ("No more than 180 words, not counting the sign-off.", "Max 120 words excluding the greeting."):
        assert not {"no_greeting", "no_sign_off"} & families(synthesize(counted)), counted  # what a count leaves out
    minimised = '- Do not minimise it: no "out of an abundance of caution", "extremely unlikely", "minor" or similar.'
    banned = by_check(synthesize(minimised, EXCLUSION), family="excludes")
    assert banned.check == {"family": "excludes",
                            "phrases": ["out of an abundance of caution", "extremely unlikely", "minor"]}  # fmt: skip


@pytest.mark.parametrize(
    ("sentence", "banned"),
    [
        ("Never quote a price, even if the caller asks for one.", True),
        ("- Never mention price, discounts, delivery or shipping.", True),
        ("Do not include pricing.", True),
        ("Do not speculate about future stock prices.", False),  # none the source lacks, not none at all
        ("Never quote a price, fee or opening time unless it appears in the passages.", False),
        ("Do not mention the cost of living.", False),
    ],
)
def test_a_ban_on_prices_counts_amounts_of_money(sentence: str, banned: bool) -> None:
    found = [c for c in synthesize(sentence, EXCLUSION) if (c.check or {}).get("unit") == "prices"]
    assert bool(found) == banned
    if found:
        assert not run(found[0], "At just £6.99 with free delivery.") and run(found[0], "Call 0800 328 1140.")


def test_parts_named_by_a_bold_title_or_an_opening_each_count_in_that_part() -> None:
    prompt = (
        "Use exactly these headings, each on its own line in bold:\n"
        "**Why we are recalling this product** – 2 sentences maximum.\n**Contact us** – one sentence.\n"
        "Do not add any introduction, closing sign-off or other text outside the four sections.\n"
    )
    why = by_check(synthesize("**Why we are recalling this product** – 2 sentences maximum.", COUNT, prompt=prompt),
                   family="count", unit="sentences")  # fmt: skip
    assert why.check is not None and why.check.get("section") == "why we are recalling this product"
    notice = "**Why we are recalling this product**\nIt may contain plastic.\n\n**Contact us**\nCall us. Or write."
    assert run(why, notice)
    intro = synthesize(prompt.splitlines()[-1], prompt=prompt)
    assert not run(by_check(intro, family="starts_with_title"), "We are sorry to say...\n\n" + notice)
    assert run(by_check(intro, family="starts_with_title"), notice)
    breakdown = (
        "1. A numbered breakdown with one item per token, in order. Each item starts with the token in backticks, "
        "then an em dash, then a plain-English explanation of at most 15 words."
    )
    per_item = by_check(synthesize(breakdown, COUNT), family="count", unit="words")
    assert per_item.check is not None and per_item.check.get("per") == "items"
    assert run(per_item, "1. `^` — Start of the string.\n2. `$` — End of the string.")
    assert not run(per_item, "1. `^` — " + "This anchor means the match has to begin at the very first character. " * 2)
    assert "includes" not in families(synthesize("Include the by-the-glass price from the list.", INCLUSION))


def test_a_layout_s_headings_edges_and_lists_are_read_where_the_prompt_places_them() -> None:
    first = by_check(synthesize("- The first line must be exactly: ## {product_name} {version} ({release_date})"),
                     family="starts_with")  # fmt: skip
    assert run(first, "## Quill 2.4 (3 June)\n\n### Highlights", {"product_name": "Quill", "version": "2.4",
                                                                     "release_date": "3 June"})  # fmt: skip
    heading = by_check(synthesize('- Start with the heading "# What\'s On at {branch_name}".'), family="starts_with")
    assert not run(heading, "Here is the post:\n# What's On at Elm Road", {"branch_name": "Elm Road"})
    sections = (
        '- Then three sections, in this order: "## Children and Families", "## Adults", "## Notices". If a section '
        'has no events, keep the heading and write "Nothing scheduled this week." under it.'
    )
    assert {c.check["headings"][0] for c in synthesize(sections) if c.check and c.check["family"] == "headings"} == {
        "Children and Families", "Adults", "Notices"}  # fmt: skip
    notes = (
        "Format:\n- Then these sections: ### Highlights, ### Bug fixes.\n"
        "- No more than three bullet points under Highlights.\n"
    )
    highlights = by_check(synthesize("- No more than three bullet points under Highlights.", COUNT, prompt=notes),
                          family="count", unit="bullets")  # fmt: skip
    assert highlights.check is not None and highlights.check.get("section") == "highlights"
    assert run(highlights, "### Highlights\n- A\n- B\n\n### Bug fixes\n- C\n- D\n- E\n- F")
    guide = "## Overview\n## Key Terms\nThe very last line of the guide must be: Exam date: {exam_date}. Good luck!\n"
    last = by_check(synthesize("The very last line of the guide must be: Exam date: {exam_date}.", prompt=guide),
                    family="ends_with")  # fmt: skip
    assert last.check == {"family": "ends_with", "phrase": "Exam date: {exam_date}. Good luck!"}
    verdict = by_check(synthesize("The last line must be: Verdict: <pass or fail>"), family="last_line_starts_with")
    assert verdict.check is not None and verdict.check["phrase"] == "Verdict:"
    title = by_check(synthesize("Don't put a title above the first heading.", prompt=guide + "Don't put a title above "
                                "the first heading.\n"), family="starts_with")  # fmt: skip
    assert run(title, "## Overview\nOhm's law ...") and not run(title, "# Ohm's Law Study Guide\n## Overview\n...")


def test_a_json_key_s_list_items_and_opening_are_that_key_s() -> None:
    schema = (
        "Return only a JSON object with exactly these keys:\n"
        '- "strengths": a list of 2 or 3 strings; each one under 12 words.\n'
        '- "parent_message": a message under 60 words that starts with "Dear parent of {student_name},".\n'
    )
    strengths = by_check(synthesize(schema.splitlines()[1], COUNT, prompt=schema), family="count", unit="words")
    assert strengths.check is not None and (strengths.check.get("section"), strengths.check.get("per")) == (
        "strengths", "items")  # fmt: skip
    assert run(strengths, '{"strengths": ["Solves equations confidently", "Asks good questions"]}')
    assert not run(strengths, '{"strengths": ["Solves two-step equations with positive numbers confidently and '
                              'checks every single answer twice", "Asks good questions"]}')  # fmt: skip
    opening = by_check(synthesize(schema.splitlines()[2], prompt=schema), family="line_starts_with")
    assert opening.check is not None and opening.check["line"] == "parent_message"
    example = {"student_name": "Maya"}
    assert run(opening, '{"parent_message": "Dear parent of Maya, today we ..."}', example)
    assert not run(opening, '{"parent_message": "Hello! Maya did well today."}', example)


def test_a_size_on_a_labelled_line_of_the_answer_s_layout_is_that_part_s() -> None:
    layout = (
        "Answer in this format:\nURGENCY: one of EMERGENCY, TODAY, ROUTINE\nWhy: 1–2 plain sentences.\n"
        "Next step: one sentence.\n"
    )
    why = by_check(synthesize("Why: 1–2 plain sentences.", COUNT, prompt=layout), family="count", unit="sentences",
                   max=2)  # fmt: skip
    assert why.check is not None and why.check.get("section") == "why"
    assert run(why, "URGENCY: TODAY\nWhy: It may be a blockage.\nNext step: Call us. Then come in. Bring the cat.")
    # "Notes:" in a run of the layout's parts is a part; alone, a remark on the rules (the whole response's size)
    note = "Write the note in exactly this structure:\nSubject: Cycle count {zone}\nNotes: one or two sentences.\n"
    notes = by_check(synthesize(note.splitlines()[2], COUNT, prompt=note), family="count", unit="sentences", max=2)
    assert notes.check is not None and notes.check.get("section") == "notes"
    assert run(notes, "Subject: Cycle count M2\nAdjust:\n- MZ-1. - MZ-2. - MZ-3.\nNotes: Returns were not booked in.")
    remark = "Rules:\n- Notes: keep it under 50 words.\n"
    whole = by_check(synthesize(remark.splitlines()[1], COUNT, prompt=remark), family="count", unit="words")
    assert whole.check is not None and "section" not in whole.check
    release = "1. Headline: one line, max 100 characters, title case, no period.\n2. Optional subheadline: one plain "
    release += "sentence, or skip it.\n3. Body: three paragraphs.\n"
    headline = by_check(synthesize(release.splitlines()[0], COUNT, prompt=release), family="count", unit="characters")
    assert headline.check is not None and headline.check.get("section") == "headline"
    assert "count" not in families(synthesize(release.splitlines()[1], COUNT, prompt=release))
    rules = "Rules:\nLength: under 100 words.\nTone: warm.\n"
    length = by_check(synthesize("Length: under 100 words.", COUNT, prompt=rules), family="count", unit="words")
    assert length.check is not None and "section" not in length.check
    schema = "Return JSON with these fields:\n- claim_type: one of auto, property\n- summary: 2-3 sentences.\n"
    summary = by_check(synthesize("- summary: 2-3 sentences.", COUNT, prompt=schema), family="count", unit="sentences",
                       min=2, max=3)  # fmt: skip
    assert summary.check is not None and summary.check.get("section") == "summary"
    approx = by_check(synthesize("Summary: one line, max ~20 words", COUNT), family="count", unit="words")
    assert approx.check is not None and approx.check["max"] == 20 and approx.check["min"] is None
    hashtags = by_check(synthesize("Hashtags: max 5, at the end.", COUNT), family="count", unit="hashtags")
    assert hashtags.check is not None and hashtags.check["max"] == 5


def test_a_style_or_condition_named_beside_a_mark_or_label_bans_nothing() -> None:
    assert "excludes" not in families(synthesize('- AP style: "percent" spelled out, no Oxford comma.', EXCLUSION))
    paraphrase = "Never paraphrase inside quotation marks and never quote words that are not in the clause."
    assert "excludes" not in families(synthesize(paraphrase, EXCLUSION))
    warranty = "Warranty: only include this line if the register shows an active warranty."
    assert "headings" not in families(synthesize(warranty, INCLUSION))
    assert "includes" not in families(synthesize("Always include these, spelled exactly: {tags}", INCLUSION))


def test_a_rule_given_for_one_value_of_an_input_is_checked_on_that_value_alone() -> None:
    prompt = (
        "Platform: {platform}\nMatch the platform:\n- Instagram: can be longer, but hook people first.\n"
        "- X/Twitter: the whole post must be 280 characters or less.\n- LinkedIn: professional, 3 emoji max.\n"
    )
    [x] = [c for c in synthesize(prompt.splitlines()[3], COUNT, prompt=prompt) if c.check]
    assert x.check == {"family": "count", "unit": "characters", "min": None, "max": 280,
                       "when": {"input": "platform", "value": "X/Twitter"}}  # fmt: skip
    assert x.description.startswith("When platform is X/Twitter: ")
    assert not run(x, "word " * 80, {"platform": "X/Twitter"}) and run(x, "Short.", {"platform": "X/Twitter"})
    with pytest.raises(checks.NotApplicable):
        run(x, "word " * 80, {"platform": "Instagram"})
    assert not any(c.check and c.check["family"] == "headings" for c in synthesize(prompt.splitlines()[4],
                                                                                    prompt=prompt))  # fmt: skip
    tiers = "Tier: {tier}\nAdapt the offer to the customer's tier:\n- For Gold: at most 2 sentences.\n"
    gold = by_check(synthesize("- For Gold: at most 2 sentences.", COUNT, prompt=tiers), family="count")
    assert gold.check is not None and gold.check["when"] == {"input": "tier", "value": "Gold"}
    fields = "Return JSON with these fields:\n- summary: 2-3 sentences.\n"  # a part, not an input's value
    summary = by_check(synthesize("- summary: 2-3 sentences.", COUNT, prompt=fields), family="count", max=3)
    assert summary.check is not None and "when" not in summary.check


def test_a_rule_under_a_coded_label_is_for_that_value_of_the_one_coded_input() -> None:
    prompt = (
        "Garment: {garment}\nTechnician finding code: {finding_code}\nHow to decide:\n"
        "- OUR_FAULT: accept responsibility and offer compensation.\n"
        "- PRE_EXISTING: explain politely, and do not offer money, credit or any goodwill gesture.\n"
    )
    sentence = prompt.splitlines()[4]
    banned = by_check(synthesize(sentence, EXCLUSION, prompt=prompt), family="offers_none")
    assert banned.check is not None and banned.check["when"] == {"input": "finding_code", "value": "PRE_EXISTING"}
    example = {"garment": "wool coat", "finding_code": "PRE_EXISTING"}
    assert not run(banned, "As a goodwill gesture we have added £15 credit.", example)
    with pytest.raises(checks.NotApplicable):  # compensation is what the other code asks for
        run(banned, "We will pay £128.00 in compensation.", {**example, "finding_code": "OUR_FAULT"})
    # a coded label with no coded input to carry it (the labels the model answers with) guards nothing
    labels = "Post: {post}\nDecide:\n- REJECT: do not offer money.\n"
    rejected = by_check(synthesize(labels.splitlines()[2], EXCLUSION, prompt=labels), family="offers_none")
    assert rejected.check is not None and "when" not in rejected.check


def test_words_a_ban_lists_after_a_colon_and_a_closing_mark_are_read() -> None:
    hype = "- No hype words: revolutionary, game-changing, cutting-edge, world-class."
    banned = by_check(synthesize(hype, EXCLUSION), family="excludes")
    assert banned.check is not None
    assert banned.check["phrases"] == ["revolutionary", "game-changing", "cutting-edge", "world-class"]
    assert not run(banned, "A game-changing launch.") and run(banned, "A new launch.")
    assert "excludes" not in families(synthesize("Do not use jargon: keep it simple.", EXCLUSION))
    end = by_check(synthesize("8. End with ### on its own line."), family="last_line_is")
    assert run(end, "Media contact: ...\n\n###") and not run(end, "Media contact: ...\n###\nNotes to the client.")


def test_a_ban_outside_quotations_leaves_the_quotations_alone() -> None:
    candidates = synthesize('- Third person throughout. No "we" outside of quotes.', EXCLUSION)
    we = by_check(candidates, family="excludes")
    assert we.check is not None and we.check.get("outside_quotations") is True
    assert run(we, 'The company launched Quill. "We built it for nurses," said its founder.')
    assert not run(we, "The company launched Quill. We built it for nurses.")
    assert by_check(candidates, family="count", unit="first_person").check is not None


def test_a_rule_under_an_if_clause_on_an_input_s_value_is_checked_on_that_value_alone() -> None:
    prompt = 'Deposit: {deposit_info}\nRules:\n- If the deposit is "none", don\'t mention payment at all.\n'
    candidates = synthesize(prompt.splitlines()[2], EXCLUSION, prompt=prompt)
    banned = by_check(candidates, family="excludes")
    assert banned.check is not None and banned.check["when"] == {"input": "deposit_info", "value": "none"}
    assert not run(banned, "Payment is due on arrival.", {"deposit_info": "none"})
    with pytest.raises(checks.NotApplicable):
        run(banned, "Payment of the £20 deposit is due now.", {"deposit_info": "£20 per table"})
    assert any(c.asks_llm for c in candidates)  # a model still reads the whole item
    quiz = 'Difficulty: {difficulty}\n- If difficulty is "quick", write straight definition clues.\n'
    assert [c.asks_llm for c in synthesize(quiz.splitlines()[1], prompt=quiz)] == [True]  # nothing to measure


def test_an_if_clause_closed_by_a_colon_guards_its_rule_as_one_closed_by_a_comma() -> None:
    prompt = (
        "Fitting type: {fitting_type}\nBranch address: {branch_address}\nRules:\n"
        '- If fitting type is "mobile": do not mention the branch address.\n'
        '- If fitting type is "branch": include the branch address.\n'
    )
    lines = prompt.splitlines()
    banned = by_check(synthesize(lines[3], prompt=prompt), family="not_mentions")
    given = by_check(synthesize(lines[4], prompt=prompt), family="mentions")
    assert banned.check is not None and banned.check["when"] == {"input": "fitting_type", "value": "mobile"}
    assert given.check is not None and given.check["when"] == {"input": "fitting_type", "value": "branch"}
    branch = {"fitting_type": "branch", "branch_address": "Unit 2, Wakefield Road, Huddersfield"}
    mobile = {**branch, "fitting_type": "mobile"}
    assert run(given, "See you at Unit 2, Wakefield Road, Huddersfield.", branch)
    assert not run(given, "See you tomorrow.", branch)
    assert not run(banned, "Or come to Unit 2, Wakefield Road, Huddersfield.", mobile)
    assert run(banned, "The fitter will come to you.", mobile)
    with pytest.raises(checks.NotApplicable):  # each rule is for its own value alone
        run(given, "The fitter will come to you.", mobile)


def test_an_if_clause_on_a_word_of_an_input_s_value_guards_its_rule() -> None:
    prompt = (
        "- Membership status: {membership_status}\nThe offer we're running right now is: {current_offer}\n"
        "- If the status says the membership is frozen, don't mention the offer at all.\n"
        "- If the notes are empty, say so.\n- If the address is missing, ask for it.\n"
    )
    rule = by_check(synthesize(prompt.splitlines()[2], EXCLUSION, prompt=prompt), family="not_mentions")
    assert rule.check is not None and rule.check["when"] == {"input": "membership_status", "value": "frozen"}
    offer = "Bring a friend for free until 30 November"
    frozen = {"membership_status": "Frozen - parental leave", "current_offer": offer}
    assert not run(rule, "Hi Tariq! You can bring a friend for free until 30 November.", frozen)
    assert run(rule, "Hi Tariq, reply UNFREEZE whenever you are ready.", frozen)
    with pytest.raises(checks.NotApplicable):
        run(rule, "Bring a friend for free until 30 November!", {**frozen, "membership_status": "Active"})
    for line in prompt.splitlines()[3:]:  # a state that is no word of the value guards nothing
        assert not [c for c in synthesize(line, prompt=prompt) if (c.check or {}).get("when")]


@pytest.mark.parametrize(
    "sentence",
    [
        "Quotes are verbatim.",
        "Use the approved quotes exactly as given.",
        "Never paraphrase inside quotation marks.",
        "Do not create quotes for anyone else (customers, partners, investors), even if it would read better.",
        "Never change the quoted text.",
    ],
)
def test_quotes_kept_verbatim_are_checked_against_the_inputs(sentence: str) -> None:
    quotes = by_check(synthesize(sentence), family="quotes_verbatim")
    example = {
        "approved_quotes": 'Dana Ruiz, CEO: "Most of us learned about money the hard way. Teens deserve better."'
    }
    split = '"Most of us learned about money the hard way," said Dana Ruiz. "Teens deserve better."'
    assert run(quotes, split, example)
    assert run(quotes, "Dana Ruiz announced the account today.", example)  # quoting nothing breaks nothing
    assert not run(quotes, '"We learned about money the hard way," said Dana Ruiz.', example)  # tidied
    assert not run(quotes, '"This changes everything for families," said a customer.', example)  # invented


@pytest.mark.parametrize(
    "sentence",
    [
        "Quote one sentence of the statement verbatim.",
        "Do not use quotation marks.",
        "Include two quotes from the interview.",
    ],
)
def test_no_verbatim_quotes_check_where_a_quote_is_asked_for_or_quotation_marks_are_banned(sentence: str) -> None:
    assert "quotes_verbatim" not in families(synthesize(sentence))


def test_an_input_pasted_unchanged_is_copied_whole() -> None:
    prompt = "Boilerplate:\n{boilerplate}\n\n- The boilerplate is pasted unchanged.\n"
    copied = by_check(synthesize("- The boilerplate is pasted unchanged.", prompt=prompt), family="copied_input")
    example = {"boilerplate": "Harbor Lane is a member-owned credit union. Founded in 1952."}
    assert run(
        copied, "News.\n\nAbout Harbor Lane\nHarbor Lane is a member-owned credit union. Founded in 1952.", example
    )
    assert not run(copied, "News.\n\nAbout Harbor Lane\nHarbor Lane, founded in 1952, is a credit union.", example)
    tone = prompt + "- The tone is kept unchanged.\n"  # no input of that name
    assert "copied_input" not in families(synthesize("- The tone is kept unchanged.", prompt=tone))


def test_a_count_in_a_part_the_response_lacks_reads_none() -> None:
    """ "Summary: one or two sentences": a response without its summary breaks the floor, and no ceiling."""
    prompt = "Layout:\n- Summary: one or two sentences.\n- Details: the rest.\n"
    candidates = [c for c in synthesize("- Summary: one or two sentences.", COUNT, prompt=prompt)
                  if (c.check or {}).get("family") == "count"]  # fmt: skip
    between = next(c for c in candidates if c.check and c.check.get("min") and c.check.get("max"))
    at_most = next(c for c in candidates if c.check and not c.check.get("min"))
    assert run(between, "Summary: It rained. Roads closed.\nDetails: more.")
    assert not run(between, "Summary: It rained. Roads closed. Schools shut.\nDetails: more.")
    assert not run(between, "It rained and the roads closed.")
    assert run(at_most, "It rained and the roads closed.")


def test_a_json_key_drawn_from_an_input_list_is_checked_against_it() -> None:
    prompt = (
        "Match dates: {match_dates}\nRoles: {roles}\nOutput a JSON array. One object per person:\n"
        "  date: YYYY-MM-DD, must be one of the match dates - drop any other date\n"
        "  role: exactly one of the roles, else null\n"
    )
    unit = prompt[prompt.index("One object") :].rstrip("\n")
    candidates = synthesize(unit, prompt=prompt)
    dates, roles = by_check(candidates, key="date"), by_check(candidates, key="role")
    example = {"match_dates": "2024-11-09, 2024-11-23", "roles": "gate, tea hut"}
    assert run(dates, '[{"date": "2024-11-23", "role": "gate"}]', example)
    assert not run(dates, '[{"date": "2024-11-30", "role": "gate"}]', example)
    assert run(roles, '[{"date": "2024-11-23", "role": null}]', example)
    assert not run(roles, '[{"date": "2024-11-23", "role": "referee"}]', example)
    assert "json_values_from" not in families(synthesize(unit, prompt=prompt.replace("JSON array", "list")))


def test_a_labelled_line_copied_from_the_inputs_or_none() -> None:
    prompt = (
        "Title: {title}\nOutput exactly 2 lines:\nDECISION: ALLOW | REMOVE\n"
        "QUOTE: <words copied exactly from the title, or NONE>"
    )
    quote = by_check(synthesize("QUOTE: <words copied exactly from the title, or NONE>", prompt=prompt),
                     family="copied_label")  # fmt: skip
    example = {"title": "Submariner mirror grade 1:1, no box"}
    assert run(quote, "DECISION: REMOVE\nQUOTE: mirror grade 1:1", example)
    assert run(quote, "DECISION: ALLOW\nQUOTE: NONE", example)
    assert not run(quote, "DECISION: REMOVE\nQUOTE: replica watch", example)


def test_the_last_line_given_after_which_or_as_an_item_on_its_own_line() -> None:
    sms = "- Keep it under 320 characters, including the last line, which must be exactly: Reply STOP to opt out"
    stop = by_check(synthesize(sms), family="ends_with")
    assert run(stop, "Hi Ana, come back soon!\nReply STOP to opt out")
    assert not run(stop, "Hi Ana, come back soon!\nText STOP to unsubscribe")
    fixture = by_check(synthesize('6. Finish with the next fixture on its own line starting "Next up:".'),
                       family="last_line_starts_with")  # fmt: skip
    assert run(fixture, "We won 2-1.\nNext up: Rovers away, Saturday 10am")
    assert not run(fixture, "We won 2-1. Next up: Rovers away.\nThanks for coming!")


def test_a_part_named_note_and_a_json_key_hold_their_own_sizes() -> None:
    layout = (
        "Output format:\nDECISION: <APPROVE|REJECT>\n- Household limit: PASS/FAIL - reason\n"
        "OFFICER NOTE: one or two sentences."
    )
    note = by_check(synthesize("OFFICER NOTE: one or two sentences.", COUNT, prompt=layout), family="count", min=1)
    assert note.check is not None and note.check.get("section") == "officer note"
    remark = "Write the letter.\nNote: one or two sentences."  # a remark on the rules, not a part
    assert (
        by_check(synthesize("Note: one or two sentences.", COUNT, prompt=remark), family="count", min=1).check.get(
            "section"
        )
        is None
    )
    keys = "Output ONE JSON object.\nsummary: one sentence for the supervisor, max 25 words."
    summary = by_check(synthesize("summary: one sentence for the supervisor, max 25 words.", COUNT, prompt=keys),
                       family="count", unit="words")  # fmt: skip
    assert run(summary, '{"category": "missed_bin", "summary": "Grey bin missed on Thursday at 4 Elm Road."}')
    assert not run(summary, '{"summary": "' + "word " * 30 + '"}')


def test_a_ban_takes_its_quoted_words_from_its_own_sentence() -> None:
    privacy = '- Never include a commenter\'s name or street. Use "a resident", "several objectors", "one supporter".'
    assert not [c for c in synthesize(privacy, EXCLUSION) if "a resident" in str((c.check or {}).get("phrases"))]
    synergy = by_check(synthesize('Never use "synergy". Use "teamwork" instead.', EXCLUSION), family="excludes")
    assert synergy.check is not None and synergy.check["phrases"] == ["synergy"]


def test_one_line_each_is_the_size_of_each_item() -> None:
    prompt = 'Non-material matters raised\n<one line each, or "None.">'
    each = by_check(synthesize('<one line each, or "None.">', COUNT, prompt=prompt), family="count", unit="lines")
    assert each.check is not None and each.check.get("per") == "items"


def test_working_figures_out_is_no_ban_on_naming_them() -> None:
    assert "count" not in families(synthesize("Do not compute indirect costs yourself."))
    assert by_check(synthesize("Never quote a price."), family="count", unit="prices")


def test_the_author_thanking_the_model_asks_the_response_for_no_thanks() -> None:
    for closing in ("Thanks!", "Just the checklist please, no intro. Thanks!!", "Thank you so much."):
        assert "gratitude" not in {c.name.removeprefix("assert_") for c in synthesize(closing, QUALITATIVE_ASSESSMENT)}
    thank = synthesize("Thank the customer for their patience.", QUALITATIVE_ASSESSMENT)
    assert run(next(c for c in thank if c.name == "assert_gratitude"), "Thanks for waiting, Ana.")


def test_an_inputs_label_with_a_note_on_it_is_no_instruction() -> None:
    """ "Call transcript (auto-transcribed, may contain errors):" over {call_transcript} asks for no word "errors";
    the same colon over an input the label does not name is an instruction still."""
    label = "Call transcript (agent and caller, auto-transcribed, may contain errors):"
    assert synthesize(label, INCLUSION, prompt=f"{label}\n{{call_transcript}}\n") == []
    asked = "Reply in French:"
    assert families(synthesize(asked, PRESENTATION_FORMAT, prompt=f"{asked}\n{{message}}\n")) == {"language"}


def test_markdown_naming_an_elements_kind_bans_those_elements_and_allowed_bullets_are_not_asked_for() -> None:
    sentence = "Plain text. Hyphen bullets OK. No markdown headings or bold."
    drafted = synthesize(sentence, PRESENTATION_FORMAT)
    assert {c.check["family"] for c in drafted if c.check} == {"count"}  # no "no markdown", no "at least 1 bullet"
    assert {(c.check["unit"], c.check["max"]) for c in drafted if c.check} == {("headings", 0), ("bold", 0)}
    note = "Claim note\n\n- Leak under the sink\n- Extractor fan: model XF-20"
    assert all(run(c, note) for c in drafted if c.check)
    assert not all(run(c, "## Claim note\n\n**Leak** under the sink") for c in drafted if c.check)
    assert "count" not in families(synthesize("You can use bullet points where it helps.", PRESENTATION_FORMAT))


def test_sentence_starters_the_prompt_asks_for_are_no_quotations_of_the_inputs() -> None:
    sentence = (
        "Quote a short phrase copied exactly from their work (don't paraphrase inside quotation marks, and never "
        "quote something they didn't write), and give a hint or sentence starter for the redraft."
    )
    prompt = f"The student's work: {{student_work}}\n{sentence}"
    check = by_check(synthesize(sentence, INCLUSION, prompt=prompt), family="quotes_verbatim")
    work = {"student_work": "Lady Macbeth calls on the spirits to unsex her, which shows her ambition."}
    feedback = 'You write "calls on the spirits to unsex her". Try: "This image suggests that she..."'
    assert run(check, feedback, work)
    assert not run(check, feedback.replace("calls on the spirits", "summons the spirits"), work)


def test_what_a_value_stands_for_and_how_a_part_is_phrased_are_no_terms() -> None:
    prompt = "Return JSON.\n- vulnerability_flag: true for mentions of bereavement, illness or money worries.\n"
    flag = "- vulnerability_flag: true for mentions of bereavement, illness or money worries."
    assert not {"includes"} & families(synthesize(flag, INCLUSION, prompt=prompt))
    target = "Include exactly one target, phrased as a specific action the student can take next term."
    assert not {"includes"} & families(synthesize(target, INCLUSION))
    # whom the quiz is for, not a word it says
    assert "mentions" not in families(synthesize("Write a starter quiz for {year_group} {subject}.", INCLUSION))


def test_a_ban_ends_where_the_sentence_asks_for_something_else() -> None:
    sentence = "Early check-in can't be confirmed in advance: say we've noted it and will confirm on the day."
    assert "excludes" not in families(synthesize(sentence, EXCLUSION))
    assert families(synthesize('Never use these words: "cheap", "bargain".', EXCLUSION)) == {"excludes"}


def test_a_size_after_one_item_per_thing_is_each_items() -> None:
    sentence = "One bullet per user-visible change, max 25 words, written from the user's point of view."
    size = by_check(synthesize(sentence, COUNT), unit="words")
    assert size.check["per"] == "items"
    notes = "- You can now export reports as CSV.\n- Fixed an issue where the login page froze on slow networks."
    assert run(size, notes) and not run(size, f"{notes}\n- " + "word " * 26)


def test_a_slack_bold_title_names_a_part_and_its_size_is_that_parts() -> None:
    prompt = (
        "Format: Slack mrkdwn.\n3. *Still open* - one bullet each.\n4. *Resolved this shift* - one line, IDs only.\n"
    )
    size = by_check(synthesize("4. *Resolved this shift* - one line, IDs only.", COUNT, prompt=prompt), unit="lines")
    assert size.check["section"] == "resolved this shift"
    post = "*Still open*\n• PAY-1 disk at 86%\n• PAY-2 latency\n*Resolved this shift*\nINC-8812, INC-8813"
    assert checks.headings(post) == ["still open", "resolved this shift"]
    assert run(size, post) and not run(size, post + "\nINC-8814")


def test_words_owed_only_under_a_condition_are_not_asked_of_every_response() -> None:
    sentence = "If the review mentions an injury, do not admit fault: ask them to contact us directly at that email."
    assert "invites_contact" not in families(synthesize(sentence, INCLUSION))
    assert "invites_contact" in families(synthesize("Ask them to contact us directly at that email.", INCLUSION))


@pytest.mark.parametrize(
    ("sentence", "asked"),
    [
        ("Write a product description for {product_name}.", False),  # framed for it, not asked to name it
        ("Write the postmortem for {incident_id} affecting {service}.", False),
        ("Summarize {doc} in two sentences.", False),
        ("Write a tweet about {topic}.", True),
        ("Mention {product_name} in the first line.", True),
    ],
)
def test_an_input_is_asked_for_only_where_the_sentence_asks_to_mention_or_use_it(sentence: str, asked: bool) -> None:
    assert ("mentions" in families(synthesize(sentence, INCLUSION, prompt=sentence))) is asked


@pytest.mark.parametrize(
    ("sentence", "sized"),
    [
        ('- Then a blank line, the greeting "Hi everyone," and a one-sentence opener.', False),  # the opener's size
        ("Start with a single-sentence hook (max 30 words).", False),  # the hook's, both
        ("- Give one sentence on why the pairing works, naming a specific ingredient.", False),
        ("- Sum up the preparation in one short sentence.", False),
        ("1. One sentence giving the number of objections and of supporting comments.", False),
        ("Tell me the root cause in one sentence and quote the log line, then tell me what to do next.", False),
        ("- Reply in at most 3 sentences.", True),  # the response's
        ("- Answer in one sentence.", True),
        ("Write a two-sentence summary of the article.", True),
        ("Write a one-paragraph reply with a two-sentence closing.", True),  # the reply's paragraph, not the closing's
    ],
)
def test_the_size_of_a_part_a_sentence_adds_is_no_size_of_the_response(sentence: str, sized: bool) -> None:
    prompt = f"Write the message:\n{sentence}\n- No emojis.\n"
    counts = [c for c in synthesize(sentence, COUNT, prompt=prompt) if (c.check or {}).get("family") == "count"]
    assert bool([c for c in counts if not c.check.get("section") and not c.check.get("per")]) is sized, counts


def test_an_ending_is_read_from_the_quotes_after_its_verb_and_a_line_followed_by_more_is_no_last_line() -> None:
    both = synthesize('Start with "Hi <first name>," and finish with these two lines:', PRESENTATION_FORMAT)
    assert {c.check["family"] for c in both if c.check} == {"starts_with"}  # no ending "Hi", no two-line response
    closing = "Keep it short and finish with 'With warm thanks,' then the signatory's name and role on separate lines."
    line = by_check(synthesize(closing, PRESENTATION_FORMAT), family="has_line_starting")
    letter = "Thank you for your gift.\n\nWith warm thanks,\nAmina Okafor\nFundraising Manager"
    assert run(line, letter) and not run(line, "Thank you for your gift.\n\nBest wishes,\nAmina Okafor")


def test_a_size_in_brackets_after_a_part_is_that_parts_and_a_limit_label_is_no_section() -> None:
    headline = by_check(
        synthesize("Please write a short headline (max 10 words) on the first line, then the description.", COUNT),
        unit="words",
    )
    assert headline.check["section"] == "headline"
    listing = "Bright two-bed flat by the park\n\n" + "A light, quiet flat with a modern kitchen. " * 10
    assert run(headline, listing) and not run(headline, "A " * 12 + "flat\n\nThe description.")
    limit = "Word limit: {word_limit} words (hard limit - the portal cuts off anything over)"
    assert families(synthesize(limit, PRESENTATION_FORMAT, COUNT, prompt=limit)) == {"count"}  # no "Word limit" section


def test_a_signature_by_first_name_and_a_ban_on_what_it_stands_for() -> None:
    sentence = "Reply under 80 words, signed with {coordinator_name}'s first name only."
    signed = by_check(synthesize(sentence, PRESENTATION_FORMAT, prompt=sentence), family="signed_by")
    coordinator = {"coordinator_name": "Priya Shah"}
    assert run(signed, "See you Saturday!\nPriya", coordinator)
    assert not run(signed, "See you Saturday!\nThe volunteer team", coordinator)
    facts = (
        "Here's what we know about the property (only use these facts - if something isn't listed, don't mention "
        "it or hint at it): {property_facts}"
    )
    assert not {"excludes", "not_mentions"} & families(synthesize(facts, EXCLUSION, prompt=facts))


def test_a_rule_mapping_a_kind_of_input_to_an_outcome_asks_nothing_of_the_case() -> None:
    rule = "- Messages that are only thanks / pleasantries -> other, low."
    read = synthesize(rule, QUALITATIVE_ASSESSMENT, prompt=f"Classify the message.\n{rule}\n")
    assert [c for c in read if not c.asks_llm] == []  # no gratitude asked of the label
    swaps = "List each swap as: original → replacement (amount). Keep it friendly."
    assert "assert_positive_tone" in {c.name for c in synthesize(swaps, QUALITATIVE_ASSESSMENT)}  # a format, read whole


@pytest.mark.parametrize(
    ("sentence", "prompt", "section"),
    [
        ("Then `Reason:` in one or two sentences.", "Line 1: the verdict.\n{s}\n", "reason"),
        ("- summary (2-3 sentences)", "Output JSON, keys:\n{s}\n- buyer_claim (one sentence)\n", "summary"),
        ("- Title max 80 characters.", "Rules:\n{s}\n- No links.\n\nReturn the new title and description.", "title"),
    ],
)
def test_a_part_named_with_its_size_is_sized_alone(sentence: str, prompt: str, section: str) -> None:
    counts = [c for c in synthesize(sentence, COUNT, prompt=prompt.format(s=sentence)) if c.check]
    assert counts and {c.check.get("section") for c in counts} == {section}, counts


@pytest.mark.parametrize(
    "sentence",
    [
        "- Answer the seller's actual question first, in one or two sentences.",  # the opening's size
        "2. The exact error line from the log, copied as-is, in backticks (one line).",  # that item's
    ],
)
def test_the_size_of_an_opening_or_of_a_layout_item_is_no_size_of_the_response(sentence: str) -> None:
    prompt = f"Write the summary:\n1. A one-line headline.\n{sentence}\n3. What to do next.\n"
    counts = [c for c in synthesize(sentence, COUNT, prompt=prompt) if (c.check or {}).get("family") == "count"]
    assert not [c for c in counts if not c.check.get("section")], counts
    kept = "- Keep it to two sentences."
    assert by_check(synthesize(kept, COUNT, prompt=f"Write the summary:\n{kept}\n"), unit="sentences")


def test_a_ban_on_remarks_about_punctuation_bans_no_mark() -> None:
    remarks = "Don't comment on formatting, keyword casing, trailing/leading commas or CTE naming."
    assert "," not in str([c.expression for c in synthesize(remarks, EXCLUSION) if not c.asks_llm])
    marks = by_check(synthesize("Don't use commas or semicolons.", EXCLUSION), family="excludes")
    assert not run(marks, "Fine, thanks.") and run(marks, "Fine thanks.")


def test_politeness_and_empathy_are_no_positive_sentiment() -> None:
    assert "assert_positive_tone" not in {c.name for c in synthesize("Keep it polite.", QUALITATIVE_ASSESSMENT)}
    sorry = "Be empathetic - payout holds are stressful."
    assert "assert_positive_tone" not in {c.name for c in synthesize(sorry, QUALITATIVE_ASSESSMENT)}
    assert "assert_positive_tone" in {c.name for c in synthesize("Keep it friendly.", QUALITATIVE_ASSESSMENT)}


def test_a_ban_with_two_verbs_bans_their_shared_object() -> None:
    sentence = "Never mention or hint at compensation, that's the claims team's job."
    ban = by_check(synthesize(sentence, EXCLUSION), family="excludes")
    assert not run(ban, "You may be entitled to compensation.") and run(ban, "Sorry for the wait.")
    assert not [c for c in synthesize("Don't mention it or hint at it.", EXCLUSION) if not c.asks_llm]


def test_an_if_clause_on_it_is_on_the_input_given_just_before() -> None:
    sentence = "If it's \"provisional\", say we'll update them by {next_update_time}."
    prompt = f"Flight {{flight}} is late.\nEstimate status: {{estimate_status}}. {sentence}\n"
    said = by_check(synthesize(sentence, INCLUSION, prompt=prompt), family="mentions")
    provisional = {"estimate_status": "provisional", "next_update_time": "10:45"}
    assert run(said, "New time 12:30, next update by 10:45.", provisional)
    assert not run(said, "New time 12:30.", provisional)
    with pytest.raises(checks.NotApplicable):  # a rule for provisional estimates only
        run(said, "New time 12:30.", {**provisional, "estimate_status": "firm"})


def test_a_ban_on_the_number_of_a_counted_input_bans_its_value_and_email_addresses_are_a_unit() -> None:
    sentence = "Never include the number of customers affected (that figure is for internal use only)."
    prompt = f"Area: {{area}}\nCustomers affected: {{customers_affected}}\n{sentence}\n"
    ban = by_check(synthesize(sentence, EXCLUSION, prompt=prompt), family="not_mentions")
    affected = {"customers_affected": "3,870", "area": "Riverside"}
    assert not run(ban, "About 3,870 customers are out in Riverside.", affected)
    assert run(ban, "Power is out in Riverside.", affected)
    emails = by_check(synthesize("- No phone numbers, emails, or links.", EXCLUSION), unit="emails")
    assert not run(emails, "Message me at sam@shop.example.com") and run(emails, "Message me here on the app.")


def test_what_a_sentence_tells_is_asked_for_and_whom_it_tells_is_not() -> None:
    told = "Write an SMS telling residents on {street_name} that {new_date} is their new collection day."
    mentioned = {c.check["field"] for c in synthesize(told, INCLUSION, prompt=told) if c.check and "field" in c.check}
    assert mentioned == {"new_date"}
    quoted = "Quote the reference {case_reference} in the first line."
    assert by_check(synthesize(quoted, INCLUSION, prompt=quoted), family="mentions")


def test_an_if_clause_after_a_sentence_of_the_same_item_guards_its_own_rule_only() -> None:
    item = (
        "2. First paragraph: state the past-due amount and the disconnection date plainly. If the disconnection date "
        'is "none scheduled", '
        "don't mention disconnection anywhere in the letter."
    )
    prompt = f"Past due: {{past_due_amount}}\nDisconnection date: {{disconnection_date}}\n\n{item}\n"
    read = synthesize(item, INCLUSION, EXCLUSION, prompt=prompt)
    ban = by_check(read, family="excludes")
    none = {"disconnection_date": "none scheduled", "past_due_amount": "$412.60"}
    assert not run(ban, "Your balance of $412.60 risks disconnection.", none)
    with pytest.raises(checks.NotApplicable):
        run(ban, "Service may be disconnected on December 3.", {**none, "disconnection_date": "December 3"})
    amount = by_check(read, family="mentions")  # the first sentence's, for every letter
    assert run(amount, "You owe $412.60.", none) and not run(amount, "You owe some money.", none)


def test_an_earlier_count_the_newest_version_restates_is_not_offered() -> None:
    now = "Please give me exactly these five lines:"
    prompt = f"Triage the failed task.\n{now}\n"
    earlier = (
        Instruction("Please give me these four lines:", (COUNT,), 1, removed_in=2, reworded=True),
        Instruction("Keep it under 80 words.", (COUNT,), 1, removed_in=2),  # a limit, which may be a relaxed one
    )
    current = Instruction(now, (COUNT,), 2, "sentence", prompt.index(now), prompt.index(now) + len(now))
    counts = OfflineSynthesizer().synthesize([current], PromptContext(prompt, (), earlier=earlier))
    bounds = {(c.check["unit"], c.check["min"], c.check["max"]) for c in counts if c.check}
    assert bounds == {("lines", 5, 5), ("words", None, 79)}, bounds


def test_the_options_of_a_multiple_choice_question_are_no_items_of_the_quiz() -> None:
    sentence = "4. Multiple choice: 4 options A-D, exactly one correct."
    prompt = f"Write a five-question quiz on {{topic}}.\n{sentence}\n"
    assert not [c for c in synthesize(sentence, COUNT, prompt=prompt) if (c.check or {}).get("unit") == "list_items"]
    assert by_check(synthesize("Give 4 options.", COUNT), unit="list_items").check["max"] == 4


def test_quoted_alternatives_ask_for_one_of_them_and_a_sign_off_is_the_quote_after_its_verb() -> None:
    either = by_check(synthesize('Use "linked to" or "associated with" instead.', INCLUSION), family="includes")
    assert run(either, "Tea was linked to fewer fractures.") and not run(either, "Tea prevents fractures.")
    both = by_check(synthesize('Include the words "refund" and "receipt".', INCLUSION), family="includes")
    assert not run(both, "Your refund is on its way.")
    letter = 'Keep it under 150 words, no subject line, start with "Hi {first_name}," and sign off with just your name.'
    read = synthesize(letter, PRESENTATION_FORMAT, EXCLUSION, prompt=letter)
    # no signature, first name allowed; the subject line refused
    assert {c.check["family"] for c in read if c.check} == {"count", "starts_with", "subject_line"}
    recruiter = "- Sign off as {recruiter_name}, Talent Acquisition, on behalf of {manager_name}."
    signed = by_check(synthesize(recruiter, PRESENTATION_FORMAT, prompt=recruiter), family="signed_by")
    names = {"recruiter_name": "Dana Ruiz", "manager_name": "Omar Haddad"}
    assert run(signed, "Best,\nDana Ruiz\nTalent Acquisition", names)
    opening = 'Plain text, addressed to the employee as "you", and don\'t open with "Great question" or similar.'
    refused = by_check(synthesize(opening, PRESENTATION_FORMAT), family="not_starts_with")
    assert not run(refused, "Great question! You get 25 days.") and run(refused, "You get 25 days of leave.")


def test_a_line_of_an_output_form_and_the_prompts_own_format_label_size_no_part_of_their_own() -> None:
    prompt = (
        "FORMAT (plain text, exactly these three sections)\nPICKS\n1. [ID] Name (Institution) - one-line reason\n"
        "EXCLUDED\n- [ID] Name - reason\n"
    )
    form_line = "1. [ID] Name (Institution) - one-line reason"
    assert not [c for c in synthesize(form_line, COUNT, prompt=prompt) if c.check]
    label = "FORMAT (plain text, exactly these three sections)"
    assert {c.check.get("section") for c in synthesize(label, COUNT, prompt=prompt) if c.check} == {None}


def test_a_rule_given_for_one_channel_holds_for_that_channels_examples_only() -> None:
    rules = '- chat: start with "Hi" and their first name, no sign-off, under 90 words.'
    email = '- email: greeting, short paragraphs, sign off "Northgate Customer Care".'
    prompt = f"Customer: {{first_name}}\nChannel: {{channel}}\n\nHow to write the reply:\n{rules}\n{email}\n"
    opening = by_check(synthesize(rules, PRESENTATION_FORMAT, prompt=prompt), family="starts_with")
    assert run(opening, "Hi Sam, your card is frozen.", {"channel": "chat", "first_name": "Sam"})
    with pytest.raises(checks.NotApplicable):
        run(opening, "Dear Sam,\nYour card is frozen.", {"channel": "email", "first_name": "Sam"})
    signed = by_check(synthesize(email, PRESENTATION_FORMAT, prompt=prompt), family="signed_by")
    assert run(signed, "Dear Sam,\nDone.\nKind regards,\nNorthgate Customer Care", {"channel": "email"})


def test_kinds_a_count_finds_among_a_bans_bracketed_examples_are_banned() -> None:
    sentence = "Never copy sample values that could identify a person (emails, names, phone numbers) into the text."
    units = {c.check["unit"] for c in synthesize(sentence, EXCLUSION) if (c.check or {}).get("family") == "count"}
    assert units == {"emails", "phone_numbers"}
    asked = "Collect their contact details (emails, phone numbers)."
    assert not [c for c in synthesize(asked, INCLUSION) if (c.check or {}).get("family") == "count"]


@pytest.mark.parametrize(
    ("sentence", "examples", "banned", "allowed"),
    [
        ("Never include Jira keys (like PLAT-123) in the summary.", ["PLAT-123"], "Fixed in OPS-7.", "Fixed."),
        ("Write times in words, never as digits like 10:40.", ["10:40"], "At 9:15.", "At a quarter past nine."),
        ("Don't reference PR numbers like #482.", ["#482"], "Merged in #17.", "Merged last week."),
        ("Do not @mention anyone.", ["@name"], "Thanks @sam for the fix.", "Thanks, Sam, for the fix."),
        ("No @-mentions.", ["@name"], "cc @ops", "Mail ops@example.com."),
        (  # a kind whose tokens have one form, named without an example
            "Do not include PR numbers, author names or ticket IDs such as JIRA-123.",
            ["JIRA-123", "#1"],
            "Fixed the login bug (#231).",
            "Fixed the login bug.",
        ),
        ("Never include GitHub handles.", ["@name"], "Thanks to @octocat.", "Thanks to our contributors."),
    ],
)
def test_a_ban_illustrated_by_a_token_bans_its_form(
    sentence: str, examples: list[str], banned: str, allowed: str
) -> None:
    candidates = synthesize(sentence, EXCLUSION)
    candidate = by_check(candidates, family="no_form")
    assert candidate.check == {"family": "no_form", "examples": examples}
    assert not run(candidate, banned)
    assert run(candidate, allowed)
    # the example and its kind are no words to ban, nor is whoever the @mention would name
    assert "excludes" not in families(candidates), [c.check for c in candidates]


@pytest.mark.parametrize(
    "sentence",
    [
        "Refer to tickets by their key, like PLAT-123.",  # asks for keys: no ban
        "Don't invent ticket numbers like PLAT-123.",  # bans coining them: the grounding check's
        "Avoid competitors like GPT-4.",  # a name, not a kind of code
    ],
)
def test_a_token_is_no_form_ban_unless_the_ban_is_on_its_kind(sentence: str) -> None:
    assert "no_form" not in families(synthesize(sentence, EXCLUSION))


@pytest.mark.parametrize(
    ("prompt", "sentence", "field"),
    [
        (
            "Affected batch codes / dates: {batch_codes}\nHazard: {hazard}\n",
            "- List every affected batch code or date exactly as given, one per bullet point.",
            "batch_codes",
        ),
        (
            "Open permits:\n{open_permits}\nShift log:\n{shift_log}\n",
            "- Every permit in the open permits list must appear under Safety. Do not drop any, even if unmentioned.",
            "open_permits",
        ),
    ],
)
def test_every_identifier_an_input_lists_is_asked_for_whole(prompt: str, sentence: str, field: str) -> None:
    candidate = by_check(synthesize(sentence, prompt=prompt + sentence), family="ids_kept")
    assert candidate.check == {"family": "ids_kept", "fields": [field]}
    example = {field: "PTW-121 hot work, bay 4\nLOTO-044 conveyor 2", "hazard": "", "shift_log": "PTW-121 closed"}
    assert run(candidate, "Safety:\n- PTW-121 hot work\n- LOTO-044 conveyor", example)
    assert not run(candidate, "Safety:\n- PTW-12 hot work\n- LOTO-044 conveyor", example)  # not the one given


@pytest.mark.parametrize(
    "sentence",
    [
        "Keep each ticket reply under 50 words.",  # a rule per ticket, not a list to carry
        "Do not list every ticket ID.",
        "List every affected batch code.",  # no input holds them
    ],
)
def test_no_identifier_list_is_asked_for_without_a_list_to_carry(sentence: str) -> None:
    prompt = "Tickets: {tickets}\n" + sentence
    assert "ids_kept" not in families(synthesize(sentence, prompt=prompt))


@pytest.mark.parametrize(
    ("prompt", "sentence", "field", "first_name"),
    [
        ("Customer: {customer_name}\n", "Greet the customer by their first name.", "customer_name", True),
        ("Donor first name: {donor_first_name}\n", "Greet the donor by first name.", "donor_first_name", False),
        ("Customer: {customer_name}\n", "Address the customer as {customer_name}.", "customer_name", False),
        ("Guest: {guest_name}\n", "Open by greeting the guest by name.", "guest_name", False),
        ("", "A member called {member_name} asks; greet them by first name.", "member_name", True),
        (
            "Patient first name: {patient_first_name}\n",
            "Start with a greeting that uses the patient's first name.",
            "patient_first_name",
            False,  # the input is the first name already
        ),
    ],
)
def test_a_greeting_by_name_reads_the_input_that_gives_the_name(
    prompt: str, sentence: str, field: str, first_name: bool
) -> None:
    candidate = by_check(synthesize(sentence, prompt=prompt + sentence), family="greets_by_name")
    assert candidate.check == {"family": "greets_by_name", "field": field, "first_name": first_name}
    name = "Sarah Jones" if first_name else "Sarah"
    assert run(candidate, "Hi Sarah,\nThanks for your message.", {field: name})
    assert not run(candidate, "Hello,\nThanks for your message.\nBest wishes to Sarah", {field: name})


def test_no_greeting_check_without_the_input_that_names_the_reader() -> None:
    sentence = "Greet the customer by name."
    assert "greets_by_name" not in families(synthesize(sentence, prompt=f"Product: {{product_name}}\n{sentence}"))


@pytest.mark.parametrize(
    ("prompt", "sentence", "keywords", "label", "fields"),
    [
        (
            "Message: {message}\n",
            "If the message mentions severe abdominal pain, heavy bleeding or shortness of breath, the label is "
            "URGENT_CLINICAL.",
            ["severe abdominal pain", "heavy bleeding", "shortness of breath"],
            "URGENT_CLINICAL",
            ["message"],
        ),
        (
            "Ticket: {ticket_text}\n",
            "Anything mentioning a gas smell, smoke or sparking is P1, whatever tone they use.",
            ["gas smell", "smoke", "sparking"],
            "P1",
            [],
        ),
        (
            "Email: {email}\n",
            'Use "complaint" when the email mentions a refund or a delay.',
            ["refund", "delay"],
            "complaint",
            ["email"],
        ),
        (  # whom to send them to, as the label is
            "Message: {message}\n",
            "If the message mentions eye pain or an eye injury, tell them to contact an eye doctor or, if urgent, "
            "emergency services.",
            ["eye pain", "eye injury"],
            "eye doctor",
            ["message"],
        ),
    ],
)
def test_a_label_the_inputs_decide_by_what_they_mention(
    prompt: str, sentence: str, keywords: list[str], label: str, fields: list[str]
) -> None:
    candidate = by_check(synthesize(sentence, prompt=prompt + sentence), family="labelled_when_mentioned")
    assert candidate.check == {
        "family": "labelled_when_mentioned",
        "keywords": keywords,
        "label": label,
        "fields": fields,
    }
    field = fields[0] if fields else "text"
    example = {field: f"Hello, there is {keywords[-1]} here."}
    assert run(candidate, f"Category: {label}", example)
    assert not run(candidate, "Category: OTHER", example)


@pytest.mark.parametrize(
    "sentence",
    [
        'Never name guests or give their personal details; say "a guest", "two guests", etc.',
        "Refer to members of the public by role only, never by name.",
        "Blameless means no names in the narrative.",
        "summary: max 20 words, no customer PII (no names, street addresses, account numbers)",
        "Never include the resident's name, phone number or email address.",
        "Never name or identify other students, even if they're named in my notes.",
        "Don't name individual staff members, even if the guest did.",
        "Do not include PR numbers, author names or ticket IDs.",
    ],
)
def test_a_ban_on_naming_people_keeps_out_whom_the_inputs_name(sentence: str) -> None:
    prompt = f"Pool: {{pool}}\nHandover from {{outgoing_manager}}. Last shift: {{shift_notes}}\n{sentence}"
    candidate = by_check(synthesize(sentence, prompt=prompt), family="names_no_one")
    assert candidate.check == {"family": "names_no_one", "allowed": ["outgoing_manager"]}  # a name given to be used
    example = {
        "pool_name": "Millbrook",
        "outgoing_manager": "Dana Okafor",
        "shift_notes": "kid (Ellie Thomson, ~7) fell",
    }
    assert run(candidate, "A child fell by the flumes. Handover: Dana Okafor", example)
    assert not run(candidate, "Ellie fell by the flumes.", example)


@pytest.mark.parametrize(
    "sentence",
    [
        "Don't mention competitors by name.",
        "Never invent names, dates or figures.",
        "Sign off as the team (no made-up agent names).",
        "Never name a contractor or company.",
        "NEVER change a medicine name, dose or schedule.",
        "Do not put file names or function names in the subject.",
    ],
)
def test_no_ban_on_people_from_a_ban_on_names_of_things(sentence: str) -> None:
    prompt = f"Notes:\n{{notes}}\n{sentence}"
    assert "names_no_one" not in families(synthesize(sentence, prompt=prompt))


TRIAGE = (
    "Message:\n{guest_message}\n\ndepartment: front_desk | housekeeping | maintenance | security\n"
    "urgency: immediate | within_1h | routine\n\nRules:\n"
)
GLOSSARY = (
    "Listing: {listing_description}\nPolicy codes:\nWEAPONS - firearms, ammo, gun parts, tasers\n"
    'COUNTERFEIT - replicas, "AAA", "mirror grade/quality"\n'
    "OFF_PLATFORM - asks buyer to pay outside (WhatsApp, Venmo)\n"
    "NONE - no violation\n"
)


@pytest.mark.parametrize(
    ("prompt", "sentence", "keywords", "labels"),
    [
        (
            TRIAGE,
            "- Fire, smoke or burning smell, guest unwell -> security, immediate.",
            ["Fire", "smoke", "burning smell", "guest unwell"],
            ["security", "immediate"],
        ),
        (TRIAGE, "Towels, amenities, cleaning -> housekeeping.", ["Towels", "amenities", "cleaning"], ["housekeeping"]),
        (  # the things in brackets are what the rest stands for
            TRIAGE,
            "- Anything else broken in the room (AC, heating, TV) -> maintenance.",
            ["AC", "heating", "TV"],
            ["maintenance"],
        ),
        (TRIAGE, "- Flooding → URGENT_LEAK", ["Flooding"], ["URGENT_LEAK"]),  # a code in capitals
        (
            GLOSSARY,
            "WEAPONS - firearms, ammo, gun parts, tasers",
            ["firearms", "ammo", "gun parts", "tasers"],
            ["WEAPONS"],
        ),
        (
            GLOSSARY,
            'COUNTERFEIT - replicas, "AAA", "mirror grade/quality"',
            ["replicas", "AAA", "mirror grade", "mirror quality"],
            ["COUNTERFEIT"],
        ),
    ],
)
def test_a_mapping_or_glossary_line_labels_what_the_inputs_mention(
    prompt: str, sentence: str, keywords: list[str], labels: list[str]
) -> None:
    candidates = synthesize(sentence, prompt=prompt + sentence)
    rules = [c for c in candidates if c.check and c.check["family"] == "labelled_when_mentioned"]
    assert [(c.check or {})["label"] for c in rules] == labels
    assert all((c.check or {})["keywords"] == keywords for c in rules)
    example = {"guest_message": f"Hi, {keywords[-1].lower()} in room 12 please", "listing_description": keywords[0]}
    assert all(run(c, f"department: {' '.join(labels)}", example) for c in rules)
    assert not any(run(c, "department: front_desk routine OTHER", example) for c in rules)


@pytest.mark.parametrize(
    ("prompt", "sentence"),
    [
        (TRIAGE, "- Anything else: routine."),
        (TRIAGE, "- Noise 22:00-07:00 -> security, within_1h."),  # a time of day, which no mention shows
        (TRIAGE, "- Pricing questions -> link the pricing page."),  # an instruction, not a value the prompt offers
        (TRIAGE, "- Noise -> escalate."),  # not one of the values the prompt offers
        (GLOSSARY, "NONE - no violation"),
        ("Summary: {text}\n", "SUMMARY - two sentences, plain words, no jargon"),  # a layout line, not a glossary
    ],
)
def test_no_label_rule_from_a_line_that_maps_nothing_a_mention_shows(prompt: str, sentence: str) -> None:
    assert "labelled_when_mentioned" not in families(synthesize(sentence, prompt=prompt + sentence))


@pytest.mark.parametrize(
    "sentence",
    [
        'Use "urgent" only if the note mentions a blue badge or a carer.',  # the converse: a mention does not oblige
        'Use "mixed" when the review contains both clear praise and clear complaints.',  # all together, not words
        'Set the flag to "yes" if the report mentions an injury.',  # yes and no are words a response writes anyway
    ],
)
def test_no_label_rule_where_a_mention_does_not_decide_the_label(sentence: str) -> None:
    assert "labelled_when_mentioned" not in families(synthesize(sentence, prompt="Note: {note}\n" + sentence))


@pytest.mark.parametrize(
    ("line", "label", "values"),
    [
        ("DECISION: <APPROVE|REJECT|REFER>", "DECISION", ["APPROVE", "REJECT", "REFER"]),
        ("DECISION: ALLOW | REMOVE | REVIEW", "DECISION", ["ALLOW", "REMOVE", "REVIEW"]),
        ("- Address: PASS/FAIL/UNCLEAR - reason (Rule n)", "Address", ["PASS", "FAIL", "UNCLEAR"]),
        ('Start your answer with "LABEL: <URGENT|ROUTINE|ADMIN>".', "LABEL", ["URGENT", "ROUTINE", "ADMIN"]),
        ("End with `Verdict: PASS/FAIL` on its own line.", "Verdict", ["PASS", "FAIL"]),
    ],
)
def test_a_layout_line_with_values_in_capitals_asks_for_one_of_them(line: str, label: str, values: list[str]) -> None:
    candidate = by_check(synthesize(line), family="labelled_value")
    assert candidate.check == {"family": "labelled_value", "label": label, "values": values}
    assert run(candidate, f"Summary line.\n{label}: {values[-1]} - see notes")
    assert not run(candidate, f"Summary line.\n{label}: UNSURE")


@pytest.mark.parametrize("line", ["Note: TCP/IP is fine.", "Units: KG/M"])
def test_capitals_with_a_slash_are_no_layout_values(line: str) -> None:
    assert "labelled_value" not in families(synthesize(line))


@pytest.mark.parametrize(
    ("prompt", "sentence", "when", "asked"),
    [
        (
            "Rating: {rating}\nContact: {contact_email}\n",
            "- If the rating is 3 or lower, apologise and invite them to write to {contact_email}.",
            {"input": "rating", "op": "<=", "bound": 3.0},
            "contact_email",
        ),
        (
            "Position: {position}\nSite: {community_beds_site}\n",
            "- If their position is higher than 20, mention that they can join the beds at {community_beds_site}.",
            {"input": "position", "op": ">", "bound": 20.0},
            "community_beds_site",
        ),
    ],
)
def test_a_rule_for_inputs_above_or_below_a_bound_applies_to_those_alone(
    prompt: str, sentence: str, when: dict[str, Any], asked: str
) -> None:
    candidate = by_check(synthesize(sentence, prompt=prompt + sentence), family="mentions", field=asked)
    assert candidate.check is not None and candidate.check["when"] == when
    value = "help@example.com"
    inside = {when["input"]: str(when["bound"] + (1 if when["op"] == ">" else -1)), asked: value}
    assert run(candidate, f"Please write to {value}.", inside)
    assert not run(candidate, "Thanks for your message.", inside)
    outside = {**inside, when["input"]: str(when["bound"] + (-1 if when["op"] == ">" else 1))}
    with pytest.raises(checks.NotApplicable):
        run(candidate, "Thanks for your message.", outside)


@pytest.mark.parametrize(
    ("prompt", "sentence", "topics", "literals", "fields"),
    [
        (
            "Message: {tenant_message}\n",
            "- Smell of gas: tell them to call the National Gas Emergency number 0800 111 999 straight away.",
            ["Smell of gas"],
            ["0800 111 999"],
            [],
        ),
        (
            "Message: {tenant_message}\n",
            "- For flooding, no heating or hot water, a security problem (broken lock, door or window) or no "
            "electricity, also give our out-of-hours line 0330 088 2417.",
            [
                "flooding",
                "no heating",
                "no hot water",
                "security problem",
                "broken lock",
                "broken door",
                "broken window",
                "no electricity",
            ],
            ["0330 088 2417"],
            [],
        ),
        (
            "Cause: {cause}\n",
            "If the cause mentions downed lines or a vehicle hitting a pole, add this safety line word for word: "
            '"Stay 30+ ft from downed lines; call 1-800-555-0199." It counts toward the length limit.',
            ["downed lines", "vehicle hitting a pole"],
            ["Stay 30+ ft from downed lines; call 1-800-555-0199"],
            ["cause"],
        ),
        (
            "Donor message: {message}\n",
            "- Questions about medication, recent travel or tattoos: give the nurse line 0800 448 2210 (Mon-Fri).",
            ["medication", "recent travel", "tattoos"],
            ["0800 448 2210"],
            [],
        ),
    ],
)
def test_what_a_case_asks_to_give_word_for_word(
    prompt: str, sentence: str, topics: list[str], literals: list[str], fields: list[str]
) -> None:
    candidate = by_check(synthesize(sentence, prompt=prompt + sentence), family="gives_when_mentioned")
    assert candidate.check == {
        "family": "gives_when_mentioned",
        "topics": topics,
        "literals": literals,
        "fields": fields,
    }


def test_a_number_to_give_is_asked_for_only_where_the_inputs_mention_its_case() -> None:
    prompt = "Message: {message}\n"
    sentence = "If they report a gas smell, first tell them to leave and call the emergency line on 0800 111 999."
    candidate = by_check(synthesize(sentence, prompt=prompt + sentence), family="gives_when_mentioned")
    gas = {"message": "I can smell gas in the kitchen since this morning."}
    assert run(candidate, "Please leave now and call 0800-111-999.", gas)  # any spacing of the digits
    assert not run(candidate, "We will send an engineer.", gas)
    assert not run(candidate, "Call us on 0800 111 9990.", gas)  # a longer number is another number
    with pytest.raises(checks.NotApplicable):
        run(candidate, "We will send a plumber.", {"message": "The tap drips; the gas bill is fine. Smells of damp."})


def test_a_case_of_missing_things_is_mentioned_only_where_the_inputs_say_so() -> None:
    topics, literals = ["no heating", "no hot water"], ["0330 088 2417"]
    cold = {"message": "Boiler died. No heating and no hot water since last night."}
    assert checks.gives_when_mentioned("Our out-of-hours line: 0330 088 2417.", cold, topics, literals)
    assert not checks.gives_when_mentioned("We will be in touch.", cold, topics, literals)
    with pytest.raises(checks.NotApplicable):
        checks.gives_when_mentioned("We will be in touch.", {"message": "Heating works fine."}, topics, literals)


@pytest.mark.parametrize(
    "sentence",
    [
        "Never promise a specific visit date or time.",
        "- Don't promise specific dates or times for repairs",
        "Never give a specific date or time for a contractor visit.",
        "Copy the slots exactly, and do not add days of the week that are not in the input.",
        "- Never invent dates not given above.",
    ],
)
def test_a_ban_on_setting_a_time_keeps_out_times_the_inputs_do_not_give(sentence: str) -> None:
    candidate = by_check(synthesize(sentence), family="names_no_set_time")
    example = {"message": "Reported 2025-01-21 07:50. I'm in on Monday."}
    assert run(candidate, "We'll arrange a visit and confirm the appointment separately.", example)
    assert run(candidate, "You said you're in on Monday; we'll confirm a time.", example)  # the inputs' own day
    assert run(candidate, "We aim to fix it within 3 working days.", example)  # a timeframe, not a set time
    assert not run(candidate, "An engineer will be with you today between 12pm and 4pm.", example)
    assert not run(candidate, "We can come tomorrow.", example)
    assert not run(candidate, "The plumber will call on Friday 14 March.", example)


@pytest.mark.parametrize(
    "sentence",
    [
        "Never include the resident's name, phone number or email address.",
        "- Never include a commenter's name, house or flat number, street, or email address.",
        "Don't give out personal phone numbers or email addresses.",
        "Do not repeat the customer's contact details.",
    ],
)
def test_a_ban_on_someones_contact_details_keeps_out_those_the_inputs_give(sentence: str) -> None:
    candidate = by_check(synthesize(sentence), family="repeats_no_contact")
    signed = {"report": "Slabs lifted outside the Co-op. Call me on 01632 960781. jwhitlow@example.org"}
    assert run(candidate, "Lifted paving slabs on the footway outside the Co-op.", signed)
    assert run(candidate, "Lifted slabs; the highways desk is on 0300 123 4567.", signed)  # the council's own line
    assert not run(candidate, "Reported by a resident, contactable on 01632-960-781.", signed)
    assert not run(candidate, "Reply to JWhitlow@example.org with the date.", signed)
    with pytest.raises(checks.NotApplicable):
        checks.repeats_no_contact("Lifted slabs.", {"report": "Slabs lifted outside the Co-op, 3 of them."})


def test_a_ban_on_every_phone_number_is_a_count_not_the_inputs_contact_details() -> None:
    candidates = synthesize("Do not use phone numbers.")
    assert not [c for c in candidates if c.check and c.check.get("family") == "repeats_no_contact"]
    assert by_check(candidates, family="count").expression == "checks.count(response, 'phone_numbers') <= 0"


THREAD = (
    "1/ We split our monolith into modules.\n\n2/ Builds got faster.\n\n3/ New engineers learn one module first. #eng"
)


def test_a_thread_of_n_tweets_counts_its_pieces_against_the_input() -> None:
    candidate = by_check(synthesize("Turn the blog post into a thread of {n} tweets."), family="count", unit="tweets")
    assert run(candidate, THREAD, {"n": 3})
    assert not run(candidate, THREAD, {"n": 2})
    assert run(candidate, "Builds got faster.\n\nNew engineers learn one module first.", {"n": "2"})  # unnumbered
    with pytest.raises(checks.NotApplicable):
        run(candidate, THREAD, {})


@pytest.mark.parametrize(
    ("sentence", "marker"),
    [('Number each tweet like "1/", "2/".', "1/"), ('Number the slides as "Slide 1:".', "Slide 1:")],
)
def test_a_numbering_form_the_sentence_shows_is_asked_of_every_piece(sentence: str, marker: str) -> None:
    candidate = by_check(synthesize(sentence), family="numbered_as")
    assert candidate.check is not None and candidate.check["marker"] == marker
    numbered = "\n\n".join(f"{marker.replace('1', str(n))} Point {n}." for n in (1, 2, 3, 10))
    assert run(candidate, numbered)
    assert not run(candidate, "We raised a seed round!\n\nThanks to everyone who believed in us. #agtech")
    assert not run(candidate, numbered + "\n\nThanks for reading!")  # a closing remark is no numbered piece


def test_numbering_is_not_asked_of_steps_an_introduction_may_precede() -> None:
    assert "numbered_as" not in families(synthesize('Number each step as "Step 1:".'))


@pytest.mark.parametrize(
    "sentence", ["Put hashtags only in the last tweet.", "Only the final tweet may have hashtags."]
)
def test_what_only_the_last_piece_may_hold_is_kept_out_of_the_others(sentence: str) -> None:
    candidate = by_check(synthesize(sentence), family="only_in_last_part", unit="hashtags")
    assert run(candidate, THREAD)
    assert run(candidate, THREAD.replace(" #eng", ""))  # the last tweet may hold them, and need not
    assert not run(candidate, THREAD.replace("modules.", "modules. #eng"))
    assert not run(candidate, "Cold brew is easy. #coffee\n\nSteep it for 16 hours. #coldbrew")  # unnumbered


@pytest.mark.parametrize(
    ("sentence", "asked"),
    [
        ("Return only the SQL in a single ```sql code block.", True),
        ("Output only the code block.", True),
        ("Respond with just the function, in one Python code block.", True),
        ("Write nothing outside the code block.", True),
        ("Put the exact command in a code block under the step.", False),
        ("Only use code blocks for commands.", False),
    ],
)
def test_only_a_code_block_is_read_where_the_sentence_asks_for_nothing_else(sentence: str, asked: bool) -> None:
    assert ("only_code" in families(synthesize(sentence))) is asked
    if asked:
        candidate = by_check(synthesize(sentence), family="only_code")
        assert run(candidate, "```sql\nSELECT id FROM orders;\n```\n")
        assert run(candidate, "```\nSELECT id FROM orders;\n```")
        assert not run(candidate, "Here is the query:\n\n```sql\nSELECT id FROM orders;\n```")
        assert not run(candidate, "```sql\nSELECT id FROM orders;\n```\nThis lists the orders.")
        assert not run(candidate, "```sql\nSELECT 1;\n```\n\n```sql\nSELECT 2;\n```")
        assert not run(candidate, "SELECT id FROM orders;")


@pytest.mark.parametrize(
    "sentence",
    [
        "- Don't quote anyone directly; paraphrase instead.",
        "Either way, never quote the panel, never name an interviewer.",
        "Do not quote the post in your reason.",
        "No direct quotes.",
    ],
)
def test_a_ban_on_quoting_people_allows_no_quotation_and_bans_no_word(sentence: str) -> None:
    candidates = synthesize(sentence)
    candidate = by_check(candidates, family="quotes_no_one")
    assert not [c for c in candidates if (c.check or {}).get("family") == "excludes"]  # not "panel", not "anyone"
    assert run(candidate, "Luis asked the team to add load testing to the deploy pipeline.")
    assert run(candidate, 'The "Lite" plan stays; the team agreed on a "no-show" policy.')  # terms, not quotations
    assert not run(candidate, 'Luis said "this is the last time we ship without load testing".')
    assert not run(candidate, "The panel felt you were “a little quiet in the group exercise”.")


@pytest.mark.parametrize(
    "sentence",
    [
        "Never quote deferral periods.",  # states them
        "No quotes around the message.",  # quotation marks
        'Return "reasons" (no duplicates) and "quote" (a phrase copied from the answer).',
        "Don't quote anything that is not in the transcript.",
    ],
)
def test_quoting_that_is_not_a_ban_on_quoting_people(sentence: str) -> None:
    assert "quotes_no_one" not in families(synthesize(sentence))


def test_the_pronouns_an_input_gives_are_the_ones_the_response_uses() -> None:
    prompt = "- Pronouns: {pronouns}\nThird person, using the pronouns given above - check every pronoun."
    candidate = by_check(synthesize(prompt.splitlines()[1], prompt=prompt), family="uses_pronouns")
    they = {"pronouns": "they/them"}
    assert run(candidate, "Sam has strong Python skills; they finished their project early.", they)
    assert not run(candidate, "Sam has strong Python skills; he finished his project early.", they)
    assert run(candidate, "Ruby led her group well, and they performed her piece.", {"pronouns": "she/her"})
    assert not run(candidate, "Ruby led his group well.", {"pronouns": "she/her"})
    assert run(candidate, "Alex gave his talk, and they took questions.", {"pronouns": "he/they"})
    assert not run(candidate, "Kit said she would finish.", {"pronouns": "xe/xem"})
    with pytest.raises(checks.NotApplicable):
        run(candidate, "Sam finished.", {})
    assert "uses_pronouns" not in families(
        synthesize("Don't use pronouns.", prompt="- {pronouns}\nDon't use pronouns.")
    )


URGENCY = "urgency - one of:\n- emergency (within 24h): risk to safety\n- urgent (within 7 days)\n- routine: the rest\n"


@pytest.mark.parametrize(
    ("sentence", "keywords"),
    [
        ("- Damp and mould are never routine.", ["Damp", "mould"]),
        ("Never mark gas leaks as routine.", ["gas leaks"]),
        ("Damp reports must never be routine.", ["Damp"]),
    ],
)
def test_a_value_some_cases_never_get_is_refused_where_the_inputs_mention_them(
    sentence: str, keywords: list[str]
) -> None:
    candidate = by_check(synthesize(sentence, prompt=URGENCY + sentence), family="refused_when_mentioned")
    assert candidate.check is not None and candidate.check["keywords"] == keywords
    example = {"inputs": {"request": f"There is {keywords[-1].lower()} behind the wardrobe again."}}
    assert not run(candidate, '{"urgency": "routine"}', example)
    assert run(candidate, '{"urgency": "urgent"}', example)
    with pytest.raises(checks.NotApplicable):  # a cracked window: the rule says nothing of it
        run(candidate, '{"urgency": "routine"}', {"inputs": {"request": "A cracked bedroom window."}})


def test_a_value_the_prompt_does_not_offer_is_no_refused_label() -> None:
    sentence = "Tenants are never wrong."
    assert "refused_when_mentioned" not in families(synthesize(sentence, prompt=URGENCY + sentence))


@pytest.mark.parametrize(
    ("sentence", "outcomes"),
    [
        (
            "You check completeness only; you never say whether a permit will be approved or refused.",
            ["approved", "refused"],
        ),
        ("Never tell the customer whether their claim will be accepted or rejected.", ["accepted", "rejected"]),
        ("Do not say if the application is approved or denied.", ["approved", "denied"]),
    ],
)
def test_a_ban_on_telling_an_outcome_bans_the_outcomes_words(sentence: str, outcomes: list[str]) -> None:
    candidates = synthesize(sentence)
    ban = by_check(candidates, family="excludes")
    assert ban.check is not None and ban.check["phrases"] == outcomes
    assert len([c for c in candidates if (c.check or {}).get("family") == "excludes"]) == 1  # not "if the ..."
    assert run(ban, "All four required documents are attached; the file is complete.")
    assert not run(ban, f"All documents attached; a dormer like this is normally {outcomes[0]}.")


def test_asking_to_say_whether_something_holds_bans_nothing() -> None:
    assert "excludes" not in families(synthesize("Say whether the regex is correct or not."))


def test_terms_to_keep_listed_by_an_input_are_read_from_it_per_example() -> None:
    sentence = "Do not translate these terms; copy them exactly as written, including capital letters: {keep_terms}"
    candidate = by_check(synthesize(sentence), family="terms_kept")
    example = {"keep_terms": "psso, Fair Isle, Rowan Felted Tweed", "pattern": "Work the Fair Isle chart.\nsl1, psso."}
    assert run(candidate, "Tricoter le diagramme Fair Isle.\nglisser 1, psso.", example)
    assert not run(candidate, "Tricoter le diagramme jacquard.\nglisser 1, psso.", example)
    # a listed term the pattern does not use asks nothing (Rowan Felted Tweed is only in the list)
    assert run(candidate, "Fair Isle, psso.", example)
    with pytest.raises(checks.NotApplicable):
        run(candidate, "Fair Isle, psso.", {"pattern": "Work the Fair Isle chart."})


@pytest.mark.parametrize(
    "sentence",
    [
        "Output only the translated pattern, with no notes, comments or explanations.",
        "Return only the commit message, with no explanation before or after it.",
        "Output the press release only, no notes to the client.",
    ],
)
def test_the_output_alone_allows_no_preamble_and_no_note_about_it(sentence: str) -> None:
    candidate = by_check(synthesize(sentence), family="no_remarks")
    assert run(candidate, "Monta 3 puntos.\nTeje un I-cord de 3 puntos.\nCierra los puntos.")
    assert run(candidate, "Fix login redirect\n\nNote the redirect now keeps the query string.")  # no label
    assert run(candidate, "```python\n# Note: a comment in code is code\nx = 1\n```")
    assert not run(candidate, "Monta 3 puntos.\nCierra los puntos.\n\nNota: He mantenido kfb en inglés.")
    assert not run(candidate, "Here's the translated pattern:\n\nMonta 3 puntos.")
    assert not run(candidate, "Fix login redirect\n\n(Note: I assumed the ticket is PAY-12.)")
    assert not run(candidate, "Fix login redirect\n\nI've kept the subject under 50 characters.")
    assert not run(candidate, "Fix login redirect\n\nPlease let me know if you need any further details.")
    assert not run(candidate, "Fix login redirect\n\nIf you need any more information, I can add it.")
    assert not run(candidate, "Fix login redirect\n\nDon't hesitate to reach out.")
    assert run(candidate, "Fix login redirect\n\nIf you need more time, the deadline can move.")  # the output's own


@pytest.mark.parametrize(
    "sentence", ["- No comments on formatting or naming style.", "Add no comments to the code.", "No notes."]
)
def test_remarks_inside_the_output_are_no_ban_on_remarks_about_it(sentence: str) -> None:
    assert "no_remarks" not in families(synthesize(sentence))


@pytest.mark.parametrize("sentence", ["Do not repeat drug doses.", "Never include dosages.", "Don't mention doses."])
def test_a_ban_on_doses_counts_amounts_of_medication(sentence: str) -> None:
    ban = by_check(synthesize(sentence, EXCLUSION), family="count", unit="doses")
    assert run(ban, "Give him the antibiotic as prescribed for 7 days, and soft food for 5 days.")
    assert run(ban, "Recheck in 6 weeks; she weighs 4.2 kg.")
    assert not run(ban, "Give him 150 mg of clindamycin twice a day.")
    assert not run(ban, "Two 2.5ml drops in each ear.")


def test_nothing_outside_two_blocks_of_tags_is_the_tagged_parts_only() -> None:
    prompt = (
        "Put the summary inside <summary></summary> and tags inside <tags></tags>.\n"
        "Output nothing outside these two blocks."
    )
    candidate = by_check(synthesize("Output nothing outside these two blocks.", prompt=prompt), family="only_tags")
    assert run(candidate, "<summary>Teeth trimmed.</summary>\n<tags>teeth, hay</tags>")
    assert not run(candidate, "Sure! Here's a summary:\n<summary>Teeth trimmed.</summary>\n<tags>teeth, hay</tags>")


@pytest.mark.parametrize(
    ("sentence", "asked"),
    [
        ("- Return only the rewritten passage.", True),
        ("Return only the SMS text.", True),
        ("Output just the summary paragraph.", True),
        ("3. Reply with only the category name.", True),
        ("Do not add notes or explanations.", True),
        ("No code fences, no commentary, no blank lines.", True),
        ("No other text before or after.", True),
        ("Use this layout, with no text before **Date:** or after the follow-up section.", True),
        ("Put the date before the title.", False),
        ("No text after 10pm.", False),
        ("Only return the fields that changed.", False),
        ("Mention only the main points.", False),
        ("1 mark: Makes a general statement that is relevant but gives no real explanation.", False),
        ("If an item has no note, describe it generically.", False),
        ("Do not add comments to the code.", False),
    ],
)
def test_asking_for_the_output_alone_refuses_remarks_around_it(sentence: str, asked: bool) -> None:
    assert ("no_remarks" in families(synthesize(sentence))) is asked
    if asked:
        candidate = by_check(synthesize(sentence), family="no_remarks")
        assert run(candidate, "Stanley is sent to Camp Green Lake. He digs holes every day.")
        assert not run(candidate, "Sure! Here is a simpler version for second graders:\n\nPlease bring the book.")


def test_a_first_line_form_takes_any_value_in_its_slots_and_whole_numbers_where_it_says_so() -> None:
    sentence = 'The first line must be exactly "Score: N/10", where N is a whole number equal to the sum of the points.'
    candidate = by_check(synthesize(sentence), family="first_line_form")
    assert run(candidate, "Score: 7/10\nThesis clarity: 2/3 - clear")
    assert run(candidate, "**Score: 10 / 10**\nThesis clarity: 3/3 - clear")
    assert not run(candidate, "Score: 6.5/10\nThesis clarity: 2/3 - clear")
    assert not run(candidate, "Thesis clarity: 2/3 - clear\nScore: 7/10")
    assert not run(candidate, "The essay scores 7/10.")
    loose = by_check(synthesize('The first line is "Verdict: X".'), family="first_line_form")
    assert run(loose, "Verdict: approve with changes\nReasons follow.")
    assert not run(loose, "Approve.\nVerdict: approve")
    assert "first_line_form" not in families(synthesize('The first line must be "Dear team,".'))  # no slot: words


@pytest.mark.parametrize(
    ("sentence", "first", "last"),
    [
        ("Include a warm-up first and a cool-down last.", "warm up", "cool down"),
        ("Start with a summary first and the next steps last.", "summary", "next steps"),
    ],
)
def test_parts_asked_for_at_the_two_ends_open_and_close_the_response(sentence: str, first: str, last: str) -> None:
    candidate = by_check(synthesize(sentence), family="first_and_last")
    assert run(candidate, f"{first.title()}: one\nMiddle - 3 x 10\n{last.title()}: two")
    assert run(candidate, f"{first.replace(' ', '-')} - easy\nMiddle\n{last.replace(' ', '-')} - slow")
    assert not run(candidate, f"Middle - 3 x 10\n{last.title()}: two")
    assert not run(candidate, f"{first.title()}: one\nMiddle - 3 x 10")
    assert "first_and_last" not in families(synthesize(f"If there is time, {sentence[0].lower()}{sentence[1:]}"))


def test_a_review_s_issues_are_counted_as_its_list_items() -> None:
    candidate = by_check(synthesize("Point out at most 3 issues, ordered by importance."), family="count")
    assert run(candidate, "1. Crashes on bad input.\n2. No type hints.\n3. Vague name.")
    assert not run(candidate, "1. Crashes on bad input.\n2. No type hints.\n3. Vague name.\n4. No docstring.")
    sections = [
        c for c in synthesize("Point out at most 3 issues, ordered by importance.") if "section" in (c.check or {})
    ]
    assert sections == []  # the verb names no section of the response


@pytest.mark.parametrize(
    ("sentence", "asked"),
    [
        ("Start with a one-sentence overview.", True),
        ("Begin with a short introduction, then list the steps.", True),
        ("Start with a heading.", False),
        ('Start with "Dear team,".', False),
    ],
)
def test_an_overview_asked_for_first_opens_the_response_with_prose(sentence: str, asked: bool) -> None:
    assert ("overview_first" in families(synthesize(sentence))) is asked
    if asked:
        candidate = by_check(synthesize(sentence), family="overview_first")
        assert run(candidate, "This lecture explains inflation.\n\n- Inflation: a rise in prices.")
        assert not run(candidate, "- **Photosynthesis**: turns light into energy.\n- **Glucose**: the sugar.")
        assert not run(candidate, "## Notes\n\nInflation is a rise in prices.")


@pytest.mark.parametrize("sentence", ["Bold each concept name.", "Every term name should be in bold."])
def test_bold_asked_for_in_each_item_is_read_in_every_bullet(sentence: str) -> None:
    candidate = by_check(synthesize(sentence), family="items_bold")
    assert run(candidate, "Overview.\n\n- **Plates**: crust pieces.\n- **Faults**: cracks.\n\n1. What is a plate?")
    assert not run(candidate, "Overview.\n\n- Inflation: a rise in prices.\n- **Rates**: raised to slow it.")
    assert run(candidate, "1. **Stretch**: slowly.\n2. **Rest**: a minute.")  # numbered items, no bullets
    assert not run(candidate, "1. Stretch slowly.\n2. **Rest**: a minute.")


@pytest.mark.parametrize(
    ("sentence", "asked"),
    [
        ("Double-check every calculation before answering.", True),
        ("If you give a total, add it up carefully.", True),
        ("Show your working.", True),
        ("Do not calculate, round or compare the figures.", False),
    ],
)
def test_calculations_asked_to_be_right_are_checked_where_written_out(sentence: str, asked: bool) -> None:
    assert ("calculations" in families(synthesize(sentence))) is asked
    if asked:
        candidate = by_check(synthesize(sentence), family="calculations")
        assert run(candidate, "2. Area = 7 x 9 = 63.\nAnswer: 63")
        assert not run(candidate, "2. Area = 7 x 9 = 56.\nAnswer: 56")


def test_a_last_line_of_a_label_and_the_number_alone_takes_no_units() -> None:
    sentence = "The last line must contain only Answer: and the number, with no units and no words."
    candidate = by_check(synthesize(sentence), family="last_line_form")
    assert run(candidate, "1. 24 - 9 = 15.\nAnswer: 15")
    assert run(candidate, "1. 7 / 2 = 3.5.\nAnswer: 3.5")
    assert not run(candidate, "1. 24 - 9 = 15.\nAnswer: 15 apples")
    assert not run(candidate, "Answer: 15\nHope this helps!")


@pytest.mark.parametrize(
    "sentence",
    [
        "Never repeat card numbers, passport numbers or door codes, even if the guest sent them.",
        "Customers often paste full card numbers, account numbers and passwords - never copy those into the note.",
    ],
)
def test_a_ban_on_card_numbers_counts_full_ones_and_allows_the_last_four(sentence: str) -> None:
    ban = by_check(synthesize(sentence, EXCLUSION), family="count", unit="card_numbers")
    assert run(ban, "- Card ending 4471 declined twice in Spain.")
    assert run(ban, "- Call us on 0330 088 2417.")  # a phone number is no card number
    assert not run(ban, "- Card 4929 1180 2256 4471 declined twice in Spain.")
    assert not run(ban, "- Card 4929118022564471 declined.")
    assert "card_numbers" not in {
        c.check.get("unit") for c in synthesize("Never ask for the full card number, PIN or CVV.", EXCLUSION) if c.check
    }  # asking for one is no repeating of one


def test_an_opening_followed_by_an_inputs_value_opens_with_that_value() -> None:
    prompt = (
        'Start with one line that says "ID&V: " followed by exactly the value in the ID&V status field below.\n\n'
        "ID&V status: {idv_status}\nTranscript: {transcript}"
    )
    sentence = prompt.splitlines()[0]
    candidate = by_check(synthesize(sentence, prompt=prompt), family="starts_with")
    example = {"idv_status": "failed (memorable answer mismatch)", "transcript": "..."}
    assert run(candidate, "ID&V: failed (memorable answer mismatch)\n- Wants to change address.", example)
    assert not run(candidate, "ID&V: passed\n- Wants to change address.", example)


@pytest.mark.parametrize(
    ("sentence", "terms"),
    [
        ("Never promise refunds, bill credits or compensation.", ["refunds", "bill credits", "compensation"]),
        (
            "Do not offer refunds, vouchers, upgrades, free nights or any other compensation in the public reply, "
            "even if asked.",
            ["refunds", "vouchers", "upgrades", "free nights", "compensation"],
        ),
        ("Do NOT promise a return visit, a replacement, a date or a price.", ["return visit", "replacement"]),
        (
            "Do not promise compensation, vouchers or refunds, and do not give any reason other than the one below.",
            ["compensation", "vouchers", "refunds"],
        ),
    ],
)
def test_a_ban_on_offering_things_refuses_an_offer_and_allows_saying_none_can_be_had(
    sentence: str, terms: list[str]
) -> None:
    candidate = by_check(synthesize(sentence), family="offers_none")
    assert candidate.check is not None and candidate.check["terms"] == terms
    term = terms[0]
    assert not run(candidate, f"Sorry about the wait. We'll arrange {term} for you this week.")
    assert run(candidate, f"Sorry about the wait. I'm not able to arrange {term}, but a specialist will call you.")
    assert run(candidate, f"{term.capitalize()} are not something this team can decide. A specialist will call.")
    assert run(candidate, "Sorry about the wait. A specialist will call you tomorrow.")


@pytest.mark.parametrize(
    "sentence",
    [
        "Don't promise anything that isn't in the offer details.",  # what the details lack, not a term
        "Never promise a specific visit date or time.",  # a set time, read on its own
        "If the customer is angry, do not offer discounts.",  # only some answers owe it
    ],
)
def test_offers_that_are_no_terms_to_refuse(sentence: str) -> None:
    assert "offers_none" not in families(synthesize(sentence))


def test_even_if_is_no_condition_on_a_ban() -> None:
    """ "even if asked" bans it in every answer; "if the customer asks" only in some."""
    assert "offers_none" in families(synthesize("Never offer upgrades, even if the guest asks for them."))
    assert "excludes" in families(synthesize('Never use the word "cheap", even if the customer does.'))


def test_a_first_line_given_exactly_is_that_line_and_nothing_more() -> None:
    candidate = by_check(
        synthesize("The first line must be exactly this header: name,date,boat_type,hours"), family="first_line_form"
    )
    assert run(candidate, "name,date,boat_type,hours\nAna Ruiz,2025-06-01,single,2")
    assert not run(candidate, "Name,Date,Boat Type,Hours\nAna Ruiz,2025-06-01,single,2")  # other column names
    assert not run(candidate, "name,date,boat_type,hours,notes\nAna Ruiz,2025-06-01,single,2,")  # a column more
    assert not run(candidate, "Here is the CSV:\nname,date,boat_type,hours\nAna Ruiz,2025-06-01,single,2")
    assert not run(candidate, "customer,day,boat\nAna Ruiz,2025-06-01,single")


def test_sections_asked_for_in_order_come_in_that_order() -> None:
    inline = by_check(
        synthesize(
            "Return Markdown with exactly these sections, in order: **Impact**, **Root cause**, **Next steps**."
        ),
        family="headings_in_order",
    )
    assert inline.check is not None and inline.check["titles"] == ["Impact", "Root cause", "Next steps"]
    assert not run(inline, "**Root cause**\nA bad deploy.\n\n**Impact**\nCheckout failed.\n\n**Next steps**\nA canary.")
    prompt = (
        "Use exactly these markdown headings, in this order:\n- Medications\n- Feeding\n- When to Call Us\n\nBe kind."
    )
    listed = by_check(synthesize(prompt.splitlines()[0], prompt=prompt), family="headings_in_order")
    assert run(listed, "## Medications\nOne tablet.\n## Feeding\nSmall meals.\n## When to Call Us\nIf she vomits.")
    assert not run(listed, "## Feeding\nSmall meals.\n## Medications\nOne tablet.\n## When to Call Us\nIf she vomits.")
    unquoted = synthesize(
        "Use exactly these three markdown headings, in this order: ## Decisions, ## Action items, ## Open questions."
    )
    assert by_check(unquoted, family="headings_in_order").check == {
        "family": "headings_in_order",
        "titles": ["Decisions", "Action items", "Open questions"],
    }
    assert by_check(unquoted, family="headings", headings=["Action items"])
    # a list of sections asked for in no order, and an order "in order to" something, ask for none
    assert "headings_in_order" not in families(synthesize("Use these sections: **Impact**, **Next steps**."))
    assert "headings_in_order" not in families(
        synthesize("Add the sections **Impact** and **Next steps** in order to help the reader.")
    )


def test_an_exact_sentence_a_case_asks_for_is_given_where_the_inputs_mention_the_case() -> None:
    prompt = (
        "Setter notes: {setter_notes}\n"
        'If the setter notes mention a high top-out, a swing, or a jump/dyno, include the exact sentence "Spot '
        'recommended."'
    )
    candidate = by_check(synthesize(prompt.splitlines()[1], prompt=prompt), family="gives_when_mentioned")
    assert candidate.check is not None
    assert candidate.check["topics"] == ["high top-out", "swing", "jump", "dyno"]
    dyno = {"setter_notes": "Big dyno to the lip, then an easy mantle."}
    assert run(candidate, "A powerful line with a committing move. Spot recommended.", dyno)
    assert not run(candidate, "A powerful line with a committing move to the lip.", dyno)
    with pytest.raises(checks.NotApplicable):  # a case the rule does not cover
        run(candidate, "A gentle slab.", {"setter_notes": "Slab, small feet, no big moves."})


@pytest.mark.parametrize(
    ("sentence", "replaced", "preferred"),
    [
        (
            'Use plain words: say "stitches", not "sutures", and "tummy", not "abdomen".',
            ["sutures", "abdomen"],
            "stitches",
        ),
        (
            "Replace US-only ingredient names with UK equivalents (all-purpose flour → plain flour, heavy cream → "
            "double cream).",
            ["all-purpose flour", "heavy cream"],
            "plain flour",
        ),
        (
            'Use the full chemical name, never a formula or abbreviation (write "dichloromethane", not "DCM" or '
            '"CH2Cl2").',
            ["DCM", "CH2Cl2"],
            "dichloromethane",
        ),
    ],
)
def test_a_wording_preferred_to_another_bans_the_other_and_asks_for_neither(
    sentence: str, replaced: list[str], preferred: str
) -> None:
    candidates = synthesize(sentence)
    ban = by_check(candidates, family="excludes")
    assert ban.check is not None and ban.check["phrases"] == [phrase.lower() for phrase in replaced]
    assert not run(ban, f"Keep the {replaced[0]} dry for a week.")
    assert run(ban, f"Keep the {preferred} dry for a week.")
    assert run(ban, "Rest for a week and call us if it gets worse.")  # the preferred word is owed by no answer
    assert not [c for c in candidates if (c.check or {}).get("family") == "includes"]


def test_a_mapping_of_cases_to_outcomes_is_no_rewording() -> None:
    assert "excludes" not in families(synthesize("Messages that are only thanks -> other, low"))


@pytest.mark.parametrize(
    "sentence",
    [
        "NEVER blame contractors or name any company, even if one is mentioned in the reason.",
        "You can give the reason in a few words, but never blame staff, crews or unions, and never name a contractor.",
        "Never name or identify the people involved (no names, no company names, no job titles).",
    ],
)
def test_a_ban_on_naming_companies_refuses_the_inputs_companies(sentence: str) -> None:
    candidate = by_check(synthesize(sentence), family="names_no_company")
    example = {"reason": "felling of diseased larch by Harland Timber Ltd"}
    assert not run(candidate, "Harland Timber will be felling the trees.", example)
    assert run(candidate, "A contractor will be felling the trees.", example)


@pytest.mark.parametrize(
    "sentence", ["Mention the company name {company} at least once.", "Don't mention competitors by name."]
)
def test_naming_companies_that_is_no_ban_on_it(sentence: str) -> None:
    assert "names_no_company" not in families(synthesize(sentence))


def test_a_ban_on_writing_about_a_thing_bans_the_thing() -> None:
    sentence = "The payment is only by bank transfer, never write about cash, the office doesn't accept it."
    ban = by_check(synthesize(sentence), family="excludes")
    assert not run(ban, "You can pay in cash in an envelope.")
    assert run(ban, "Please pay by bank transfer by Friday 3 May.")
    assert "excludes" not in families(synthesize("Never write about yourself."))


@pytest.mark.parametrize(
    ("line", "key", "low", "high"),
    [
        ('Each entry has "day" (a number) and "minutes" (a number no greater than 45).', "minutes", None, 45.0),
        ('- "clarity": integer 1-5', "clarity", 1.0, 5.0),
        ("- confidence: a number between 0 and 1", "confidence", 0.0, 1.0),
        ('"score": an integer from 1 to 10', "score", 1.0, 10.0),
    ],
)
def test_a_json_key_given_as_a_bounded_number_holds_numbers_within_the_bounds(
    line: str, key: str, low: float | None, high: float | None
) -> None:
    prompt = f"Return a JSON object.\n{line}"
    candidate = by_check(synthesize(line, prompt=prompt), family="number_range")
    assert candidate.check == {"family": "number_range", "key": key, "low": low, "high": high}


@pytest.mark.parametrize(
    "line", ['"summary": a string of at most 25 words', '"reasons" (a list of 1 to 3 strings)', '"tags": 3-5 tags']
)
def test_a_size_is_no_bound_on_a_number(line: str) -> None:
    assert "number_range" not in families(synthesize(line, prompt=f"Return a JSON object.\n{line}"))


def test_a_closing_block_below_the_sentence_is_how_the_response_ends() -> None:
    prompt = (
        "Write a reply to the customer.\nEnd the email with this signature block, reproduced exactly:\n\n"
        "Kind regards,\nThe Clearview Opticians Team\nTel. 023 9275 0140\n\nCustomer name: {customer_name}"
    )
    candidate = by_check(synthesize(prompt.splitlines()[1], prompt=prompt), family="ends_with")
    assert run(candidate, "Dear Olga,\nThanks.\n\nKind regards,\nThe Clearview Opticians Team\nTel. 023 9275 0140")
    assert not run(candidate, "Dear Olga,\nThanks.\n\nBest wishes,\nThe Clearview Team")


def test_a_schema_s_key_lines_read_as_one_unit_are_each_their_own_rule() -> None:
    unit = (
        '"category": "new_claim" | "chase" | "complaint" | "other",\n'
        '  "claim_reference": "<claim number>" | null,\n'
        '  "urgency": "P1" | "P2" | "P3",\n'
        '  "reason": "<one sentence, max 25 words>"'
    )
    prompt = f"Return ONE JSON object and nothing else.\n\nSchema:\n{{{{\n  {unit}\n}}}}\n"
    candidates = synthesize(unit, prompt=prompt)
    assert by_check(candidates, family="value_set", key="urgency").check == {
        "family": "value_set",
        "key": "urgency",
        "values": ["P1", "P2", "P3"],
    }
    limit = by_check(candidates, family="count", unit="words")
    assert "'reason'" in (limit.expression or "")  # the reason's limit, not the category's
    assert not [c for c in candidates if "'category'" in (c.expression or "") and "count(" in (c.expression or "")]


def test_citations_asked_for_in_a_form_are_in_that_form_and_in_every_claim_where_it_says_so() -> None:
    every = synthesize("Cite every claim with the source number in square brackets, like [1].")
    assert run(by_check(every, family="cites"), "It is 12 km long [3].")
    assert not run(by_check(every, family="cites"), "It is 12 km long (source 3).")
    assert not run(by_check(every, family="cites_each_sentence"), "It is 12 km long [3]. Most hikers need four hours.")
    used = synthesize("Cite the passage number in square brackets, like [2], after each sentence that uses it.")
    assert families(used) >= {"cites"} and "cites_each_sentence" not in families(used)
    ids = by_check(synthesize("Cite the section ID of each excerpt you use in square brackets, like [LV-UK-3.2]."),
                   family="cites")  # fmt: skip
    assert run(ids, "You can self-certify for up to 7 days [SK-UK-1.3].")
    assert not run(ids, "You can self-certify for up to 7 days.")
    assert "cites" not in families(synthesize("Do not cite sources like [1]."))


def test_quotations_a_bracket_gives_after_a_banned_kind_are_banned() -> None:
    ban = by_check(synthesize('No filler phrases ("Great question!", "I hope this helps").'), family="excludes")
    assert ban.check is not None and ban.check["phrases"] == ["great question!", "i hope this helps"]
    assert not run(ban, "Great question! The fee is £5.")
    assert run(ban, "The fee is £5.")
    assert "excludes" not in families(synthesize('End with a sign-off ("Best, Team").'))  # asked for, not banned


@pytest.mark.parametrize(
    ("sentence", "low", "high"),
    [
        ("More than two hashtags is not allowed.", None, 2),
        ("Fewer than 3 bullets is not acceptable.", 3, None),
    ],
)
def test_a_count_refused_after_it_is_the_bound_it_leaves(sentence: str, low: int | None, high: int | None) -> None:
    candidate = by_check(synthesize(sentence), family="count")
    assert candidate.check is not None and (candidate.check["min"], candidate.check["max"]) == (low, high)


def test_a_form_refused_after_its_count_asks_for_no_count() -> None:
    sentence = "Optional subheadline: one sentence in italics is NOT allowed; write it as plain text."
    assert "count" not in families(synthesize(sentence))


@pytest.mark.parametrize(
    ("sentence", "units"),
    [
        ("Emojis are not allowed.", ["emojis"]),
        ("Hashtags are forbidden.", ["hashtags"]),
        ("Any emojis are banned, and links are not permitted.", ["emojis", "links"]),
    ],
)
def test_a_kind_refused_by_name_is_none_at_all(sentence: str, units: list[str]) -> None:
    counts = [c.check for c in synthesize(sentence) if c.check and c.check["family"] == "count"]
    assert [(check["unit"], check["min"], check["max"]) for check in counts] == [(unit, None, 0) for unit in units]


@pytest.mark.parametrize(
    "sentence",
    [
        "No emojis except in the sign-off.",
        "No hashtags other than in the greeting.",
        "Emojis are not allowed unless the user uses them first.",
        "Two emojis are not allowed.",
    ],
)
def test_a_ban_that_spares_some_is_no_ban_on_all(sentence: str) -> None:
    drafted = families(synthesize(sentence))
    assert "count" not in drafted and "no_sign_off" not in drafted and "no_greeting" not in drafted


def test_each_key_of_a_json_list_of_objects_is_sized_object_by_object() -> None:
    prompt = (
        "Write one clue for each answer in this list: {answers}\n"
        "- Each clue must be 12 words or fewer, not counting the enumeration.\n"
        "Return ONLY a JSON array. Each element is an object with the keys answer, clue and enumeration (all strings)."
    )
    candidate = by_check(
        synthesize("Each clue must be 12 words or fewer, not counting the enumeration.", prompt=prompt), family="count"
    )
    assert candidate.description == "At most 12 words per clue."
    short = '[{"answer": "ORBIT", "clue": "Curved path of a satellite", "enumeration": "(5)"}]'
    long = (
        '[{"answer": "PIANO", "clue": "Instrument played quietly by one who might be heard in almost any concert'
        ' hall", "enumeration": "(5)"}]'
    )
    assert run(candidate, short)
    assert not run(candidate, long)
    # the words of the other keys are not the clue's: a long answer or enumeration does not count against it
    assert run(
        candidate,
        '[{"answer": "ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE TEN ELEVEN TWELVE THIRTEEN", "clue": "Count",'
        ' "enumeration": "(3,3)"}]',
    )
    # a list of strings under a plural key reads the same
    plural = by_check(
        synthesize(
            "Each clue must be under 10 words.",
            prompt='Return JSON: {"title": "...", "clues": ["..."]}. Each clue must be under 10 words.',
        ),
        family="count",
    )
    assert run(plural, '{"title": "x", "clues": ["Curved path", "Icy visitor"]}')
    assert not run(plural, '{"title": "x", "clues": ["one two three four five six seven eight nine ten"]}')
    # without JSON, "each clue" is no key
    assert "count" not in families(
        synthesize("Each clue must be under 10 words.", prompt="Write clues. Each clue must be under 10 words.")
    )


def test_a_condition_after_its_rule_guards_the_rule() -> None:
    prompt = (
        "Amount requested: {amount_requested}\nPriority: {priority}\nReturn only a JSON object with these keys:\n"
        '- "flags": a list of strings; include "budget_exceeds_cap" if the amount requested is above £5,000,'
        " otherwise an empty list\n"
        'Start the reply with "URGENT:" when the priority is "high".\n'
    )
    flags = by_check(synthesize(prompt.splitlines()[3], prompt=prompt), family="includes")
    assert flags.check is not None and flags.check["when"] == {"input": "amount_requested", "op": ">", "bound": 5000.0}
    over = {"inputs": {"amount_requested": "£6,500", "priority": "low"}}
    assert run(flags, '{"flags": ["budget_exceeds_cap"]}', over)
    assert not run(flags, '{"flags": []}', over)
    with pytest.raises(checks.NotApplicable):  # under the cap the rule asks nothing
        run(flags, '{"flags": []}', {"inputs": {"amount_requested": "£4,500", "priority": "low"}})
    urgent = [c for c in synthesize(prompt.splitlines()[4], prompt=prompt) if c.check]
    assert urgent and all(c.check and c.check["when"] == {"input": "priority", "value": "high"} for c in urgent)
    # a condition on no input guards nothing: it is left to a model
    assert not [c for c in synthesize("Mention the warranty if the customer asks about returns.") if c.check]


@pytest.mark.parametrize(
    ("sentence", "banned"),
    [
        ('Never write "LGTM".', ["lgtm"]),
        ('No praise or summary comments ("Nice work!", "LGTM").', ["nice work!", "lgtm"]),
    ],
)
def test_a_banned_term_in_capitals_is_banned_like_any_other(sentence: str, banned: list[str]) -> None:
    ban = by_check(synthesize(sentence), family="excludes")
    assert ban.check is not None and ban.check["phrases"] == banned
    assert not run(ban, "LGTM, ship it.")
    assert run(ban, "Rename the variable on line 4.")


def test_a_label_in_capitals_is_no_term_to_include() -> None:
    assert not [c for c in synthesize('Reply "YES" or "NO".') if c.check and c.check["family"] == "includes"]


def test_a_quotation_a_ban_reaches_even_to_is_banned() -> None:
    ban = by_check(synthesize('Don\'t guess, not even a "usually".'), family="excludes")
    assert not run(ban, "Refunds usually take 5 days.")
    assert run(ban, "I can't say how long the refund takes.")
    drafted = synthesize('Never promise a date, not even "probably Tuesday".')
    assert by_check(drafted, family="excludes").check == {"family": "excludes", "phrases": ["probably tuesday"]}
    assert "offers" not in families(drafted)  # "not even" is no thing offered
    # asked for, "not even" bans nothing
    assert "excludes" not in families(synthesize('Include the price, not even a "roughly" before it.'))


def test_no_text_before_a_label_opens_the_response_with_it() -> None:
    sentence = "No headings, no emojis, and no text before **Date:** or after the follow-up section."
    opening = by_check(synthesize(sentence), family="starts_with")
    assert run(opening, "**Date:** 9 January 2025\n**Location:** the kitchen")
    assert not run(opening, "Incident Report – Hochjoch Hut\n\n**Date:** 9 January 2025")
    assert "starts_with" not in families(synthesize("If it is a follow-up, put no text before **Date:**."))


def test_a_ban_on_a_secret_reaches_to_its_parts_and_roots() -> None:
    prompt = (
        "Answer: {answer}\n"
        "2. The clue must not contain the answer, any part of it that is 4 or more letters long, or a word from the"
        " same root.\n"
    )
    drafted = synthesize(prompt.splitlines()[1], prompt=prompt)
    ban = by_check(drafted, family="gives_away")
    assert ban.check is not None and (ban.check["field"], ban.check["letters"]) == ("answer", 4)
    assert not run(ban, "Spiky tropical fruit, no kind of apple (9)", {"answer": "PINEAPPLE"})
    assert run(ban, "Coastal tower that warns ships at night (10)", {"answer": "LIGHTHOUSE"})
    assert "count" not in families(drafted)  # "4 or more letters" picks out the parts: no size of the clue
    listed = (
        "Write one clue for each answer in this list: {answers}\n- Never include the answer word, or any word sharing"
        " its root, in the clue.\nReturn ONLY a JSON array. Each element is an object with the keys answer, clue and"
        " enumeration."
    )
    within = by_check(synthesize(listed.splitlines()[1], prompt=listed), family="gives_away_within")
    assert within.check is not None and (within.check["key"], within.check["secret_key"]) == ("clue", "answer")
    assert not run(within, '[{"answer": "SEEDLING", "clue": "Young plant grown from a seed"}]')
    assert run(within, '[{"answer": "ORBIT", "clue": "Curved path of a satellite"}]')


def test_quote_and_question_marks_are_marks_not_words() -> None:
    quotes = by_check(synthesize("Output the clue only: no label, no quote marks."), family="excludes")
    assert quotes.check is not None and quotes.check["phrases"] == ['"', "“", "”"]
    assert run(quotes, "Coastal tower that warns ships (10) - no marks")
    questions = by_check(synthesize("No question marks."), family="excludes")
    assert not run(questions, "Ready to book?")


def test_markdown_headings_on_the_lines_below_are_the_sections_in_order() -> None:
    prompt = (
        "Structure the instructions with exactly these markdown headings, in this order:\n"
        "## Today and Tonight\n## Medications\n## When to Call Us\n\n"
        "- Under ## When to Call Us, list at least three specific warning signs as bullet points.\n"
    )
    drafted = synthesize(prompt.splitlines()[0], prompt=prompt)
    order = by_check(drafted, family="headings_in_order")
    assert order.check is not None and order.check["titles"] == [
        "Today and Tonight",
        "Medications",
        "When to Call Us",
    ]
    assert not run(order, "## Medications\nx\n## Today and Tonight\ny\n## When to Call Us\nz")
    signs = by_check(synthesize(prompt.splitlines()[5], prompt=prompt), family="count", unit="bullets")
    assert signs.check is not None and (signs.check["min"], signs.check.get("section")) == (3, "when to call us")
    three = "## Today and Tonight\nRest.\n## When to Call Us\n- Bleeding\n- Vomiting\n- Not eating"
    assert run(signs, three)
    assert not run(signs, "## Today and Tonight\n- Rest\n- Water\n- Food\n## When to Call Us\n- Bleeding")


@pytest.mark.parametrize(
    "sentence",
    [
        "1. Anonymise. Do not include any person's name (the leaver, managers, colleagues, clients).",
        "Turn exit interview notes into short, anonymised summaries.",
    ],
)
def test_anonymising_or_no_persons_name_names_no_one(sentence: str) -> None:
    prompt = f"Interviewer's notes:\n{{interview_notes}}\n{sentence}\n"
    candidate = by_check(synthesize(sentence, prompt=prompt), family="names_no_one")
    notes = {"interview_notes": "Says relationship with new manager (Gareth Lyle, joined Jan) broke down."}
    assert not run(candidate, "- Relationship with new line manager (Gareth) broke down.", notes)
    assert run(candidate, "- Relationship with a new line manager broke down.", notes)


@pytest.mark.parametrize("sentence", ["- Never blame an individual.", "Do not single out any engineer."])
def test_a_ban_on_blaming_someone_names_no_one(sentence: str) -> None:
    prompt = f"Timeline: {{timeline}}\n{sentence}\n"
    candidate = by_check(synthesize(sentence, prompt=prompt), family="names_no_one")
    timeline = {"timeline": "09:12 Mark deployed v2.3 without the migration. 09:20 alerts fired."}
    assert not run(candidate, "**Root cause**\nMark deployed without running the migration.", timeline)
    assert run(candidate, "**Root cause**\nA deploy went out without its migration.", timeline)
    # blaming a customer is a judgement about tone, not about naming: left to a model
    assert "names_no_one" not in families(synthesize("Never blame the customer.", prompt="Never blame the customer."))


@pytest.mark.parametrize(
    ("sentence", "inputs"),
    [
        ("- Keep every measurement, moisture reading, cost and serial number EXACTLY as written.", ["notes", "today"]),
        ("Keep every number exactly as it appears in the notes.", ["notes"]),
        ("- keep all volumes, concentrations and temperatures EXACTLY as written.", ["notes", "today"]),
    ],
)
def test_keeping_every_figure_asks_for_every_number_of_the_source(sentence: str, inputs: list[str]) -> None:
    prompt = f"Notes: {{notes}}\nToday: {{today}}\n{sentence}\n"
    kept = by_check(synthesize(sentence, prompt=prompt), family="numbers_kept")
    assert kept.expression == f"checks.numbers_kept(response, example, inputs={inputs!r})"
    assert "numbers_kept" not in families(synthesize("Keep each question to 15 words or fewer."))


@pytest.mark.parametrize(
    ("sentence", "literals"),
    [
        (
            "Always finish with our complaints paragraph: they can refer it to the Financial Ombudsman Service"
            " (financial-ombudsman.org.uk, 0800 023 4567).",
            ["financial-ombudsman.org.uk", "0800 023 4567"],
        ),
        ("Always give our helpline number, 0800 023 4567.", ["0800 023 4567"]),
        (  # a condition inside what to write is no condition on writing it
            "Always finish with our complaints paragraph: if they're unhappy they can call us on 0800 023 4567.",
            ["0800 023 4567"],
        ),
        ("Give our out-of-hours line, (020) 7946 0018.", ["(020) 7946 0018"]),
    ],
)
def test_contact_details_every_response_passes_on_are_given(sentence: str, literals: list[str]) -> None:
    given = by_check(synthesize(sentence), family="gives")
    assert given.check is not None and given.check["literals"] == literals
    assert run(given, " or ".join(literal.replace(" ", "-") for literal in literals))  # any spacing, any case
    assert not run(given, "You can contact the Financial Ombudsman Service.")


@pytest.mark.parametrize(
    "sentence",
    [
        "If they smell gas, tell them to call 0800 111 999.",  # only where the case arises
        "Never give out 0800 023 4567.",
        "Always include the order total, 1,200 units at 12.50 each.",  # amounts, no contact details
    ],
)
def test_contact_details_under_a_condition_or_a_ban_are_not_asked_of_every_response(sentence: str) -> None:
    assert "gives" not in families(synthesize(sentence))


def test_a_link_named_by_its_label_is_that_input() -> None:
    prompt = (
        "Product: {product_name}\nProduct page: {link}\nDelivery: {delivery_date}\nInclude the product page link.\n"
    )
    link = by_check(synthesize("Include the product page link.", prompt=prompt), family="mentions")
    assert link.check is not None and link.check["field"] == "link"
    # an address is no link: "the delivery address" is not the delivery date
    address = prompt.replace("Include the product page link.", "Include the delivery address.")
    assert "mentions" not in families(synthesize("Include the delivery address.", prompt=address))


def test_the_third_person_after_a_tense_is_still_the_third_person() -> None:
    assert "count" in families(synthesize("Write in the past tense and the third person."))


@pytest.mark.parametrize(
    ("prompt", "sentence", "field"),
    [
        (  # the nearest earlier if-clause's input, in the same line
            'Boil notice: {boil_notice}\nLine 4: If the boil notice is "yes", say so. If it is "no", do not mention'
            " boiling.",
            'If it is "no", do not mention boiling.',
            "boil_notice",
        ),
        (  # ... or in an earlier sentence of the paragraph
            'Opt-in: {talent_pool_opt_in}\n\nOnly talk about the future if talent pool opt-in is "yes". In that case,'
            " say so. If it's \"no\", don't mention future roles.",
            "If it's \"no\", don't mention future roles.",
            "talent_pool_opt_in",
        ),
        (  # else the input its line opens with, not the last one the line gives
            "Estimate status: {estimate_status}. Update by {next_update_time}. If it's \"firm\", don't mention"
            " updates.",
            "If it's \"firm\", don't mention updates.",
            "estimate_status",
        ),
    ],
)
def test_an_if_clauses_it_is_the_input_its_paragraph_spoke_of(prompt: str, sentence: str, field: str) -> None:
    guarded = [c for c in synthesize(sentence, prompt=prompt) if c.check and "when" in c.check]
    assert guarded and all(c.check and c.check["when"]["input"] == field for c in guarded)


def test_words_a_case_asks_to_write_are_asked_for_where_it_holds() -> None:
    prompt = (
        "Expected reopening: {expected_reopen}\n"
        '- If an expected reopening time is given, include it. If it is "unknown", write "UPDATES TO FOLLOW".\n'
    )
    case = by_check(synthesize('If it is "unknown", write "UPDATES TO FOLLOW".', prompt=prompt), family="includes")
    assert case.check is not None and case.check["when"] == {"input": "expected_reopen", "value": "unknown"}
    assert run(case, "GONDOLA: HIGH WIND. UPDATES TO FOLLOW", {"expected_reopen": "unknown"})
    assert not run(case, "GONDOLA: HIGH WIND", {"expected_reopen": "unknown"})
    with pytest.raises(checks.NotApplicable):
        run(case, "GONDOLA: HIGH WIND. BACK 14:00", {"expected_reopen": "14:00"})
    assert "includes" not in families(synthesize('Reply "YES" or "NO".'))  # one-word labels are a whole answer
    # the two cases in one unit: the "it" is the first case's input
    unit = prompt.splitlines()[1]
    both = by_check(synthesize(unit, prompt=prompt), family="includes")
    assert both.check is not None and both.check["when"] == {"input": "expected_reopen", "value": "unknown"}


@pytest.mark.parametrize(
    ("sentence", "labels"),
    [
        ('Reply "YES" or "NO".', ["YES", "NO"]),
        ('Answer "yes" or "no" only.', ["yes", "no"]),
        ("Answer only with yes or no.", ["yes", "no"]),
        ('Reply with just "yes" or "no".', ["yes", "no"]),
        ("Respond with one word: positive, negative or neutral.", ["positive", "negative", "neutral"]),
        ("Output only one of: positive, negative, neutral.", ["positive", "negative", "neutral"]),
        ('Respond with only the label: "spam" or "not spam".', ["spam", "not spam"]),
        ("Answer with the category name only (billing, technical, account).", ["billing", "technical", "account"]),
    ],
)
def test_a_sentence_that_lists_the_answers_it_allows_asks_for_one_of_them(sentence: str, labels: list[str]) -> None:
    label = by_check(synthesize(sentence), family="label")
    assert label.check is not None and label.check["labels"] == labels
    assert run(label, labels[-1]) and run(label, f"**{labels[0].capitalize()}.**\n")
    assert not run(label, f"{labels[0]}, because the customer asked twice.")


@pytest.mark.parametrize(
    "sentence",
    [
        'Answer "yes" or "no", then explain why in one sentence.',
        'If unsure, answer "UNKNOWN" or "N/A".',
        "Answer yes or no questions briefly.",
        "Start with yes or no, followed by your reasoning.",
        'Use "yes" or "no" in the eligible field.',
    ],
)
def test_options_that_are_not_the_whole_answer_ask_for_no_label(sentence: str) -> None:
    assert "label" not in families(synthesize(sentence))


@pytest.mark.parametrize(
    ("sentence", "unit", "low", "high"),
    [
        ("The answer shouldn't run past two paragraphs.", "paragraphs", None, 2),
        ("The reply must not go beyond 120 words.", "words", None, 120),
        ("Do not go past 3 bullet points.", "bullets", None, 3),
        ("Write no fewer than 3 paragraphs.", "paragraphs", 3, None),
        ("Use not less than 40 words.", "words", 40, None),
        ("Aim for roughly 150 words; never go over 200.", "words", 112, 200),
        ("About 100 words (max 120).", "words", 75, 120),
    ],
)
def test_bounds_said_with_a_verb_of_going_past_or_a_negated_comparison(
    sentence: str, unit: str, low: int | None, high: int | None
) -> None:
    counts = [c.check for c in synthesize(sentence) if c.check and c.check.get("family") == "count"]
    assert {"family": "count", "unit": unit, "min": low, "max": high} in [
        {k: check.get(k) for k in ("family", "unit", "min", "max")} for check in counts
    ]
    # never a reading beside it that the bound rules out ("no fewer than 3" is not "fewer than 3")
    same_unit = [check for check in counts if check["unit"] == unit]
    assert low is None or all(check.get("max") is None or check["max"] >= low for check in same_unit)
    assert high is None or all(check.get("min") is None or check["min"] <= high for check in same_unit)


def test_the_past_few_days_is_no_bound() -> None:
    assert "count" not in families(synthesize("Summarise what happened in the past 3 days."))


@pytest.mark.parametrize(
    ("sentence", "per", "unit", "high"),
    [
        ("Sentences must be under 20 words.", "sentences", "words", 19),
        ("Titles must not exceed 60 characters.", "items", "characters", 60),
    ],
)
def test_a_bare_plural_part_sizes_each_of_them(sentence: str, per: str, unit: str, high: int) -> None:
    counts = [c for c in synthesize(sentence) if c.check and c.check.get("family") == "count"]
    assert [(c.check or {}).get("per") for c in counts] == [per]  # never the whole response
    assert (counts[0].check or {})["unit"] == unit and (counts[0].check or {})["max"] == high


@pytest.mark.parametrize(
    ("sentence", "per", "unit", "high"),
    [
        ("Keep it to 60 words, with no sentence longer than 15 words.", "sentences", "words", 15),
        ("No sentence should be longer than 20 words.", "sentences", "words", 20),
        ("No paragraph longer than 3 sentences.", "paragraphs", "sentences", 3),
        ("No bullet longer than 12 words.", "items", "words", 12),
        ("No line over 80 characters.", "lines", "characters", 80),
    ],
)
def test_no_part_longer_than_a_size_bounds_each_part(sentence: str, per: str, unit: str, high: int) -> None:
    """Read before as "at least 16 words" for the response (and "No bullet ..." as no bullets at all)."""
    counts = [(c.check or {}) for c in synthesize(sentence) if c.check and c.check.get("family") == "count"]
    sized = [c for c in counts if c.get("per") == per]
    assert [(c["unit"], c["min"], c["max"]) for c in sized] == [(unit, None, high)]
    assert all(c.get("min") is None and c.get("max") != 0 for c in counts)  # no minimum, no ban on the part
    short, long_ = "Short one. Also short.", " ".join(["word"] * (high + 1)) + "."
    check = next(c for c in synthesize(sentence) if (c.check or {}).get("per") == per)
    if per == "sentences":
        assert run(check, response=short) and not run(check, response=long_)


def test_a_letter_case_for_one_part_is_not_the_response_s() -> None:
    assert "letter_case" not in families(synthesize("Use ALL CAPS for the headline."))
    assert "letter_case" in families(synthesize("Write the whole reply in lowercase."))


@pytest.mark.parametrize(
    ("sentence", "signature"),
    [
        ("End with your name, Sam.", "Sam"),
        ('Sign the email "Best, Jordan".', "Best, Jordan"),
        ("Finish with your name (Dr Lee).", "Dr Lee"),
    ],
)
def test_a_signature_after_end_with_your_name_or_sign_the_email(sentence: str, signature: str) -> None:
    signed = by_check(synthesize(sentence), family="signed_by")
    assert signed.check is not None and signed.check["phrase"] == signature
    assert "signed_by" not in families(synthesize("End with your name."))


@pytest.mark.parametrize(
    "sentence",
    [
        "Don't add a preamble or explanation.",
        "Skip any introduction and go straight to the answer.",
        "Output nothing but the translated text.",
    ],
)
def test_a_preamble_refused_or_nothing_but_the_output_asks_for_no_remarks(sentence: str) -> None:
    remarks = by_check(synthesize(sentence), family="no_remarks")
    assert run(remarks, "Bonjour à tous.") and not run(remarks, "Here is the translation:\n\nBonjour à tous.")


DAMAGE_PROMPT = (
    "Rules\n2. Panel names must be one of: front_bumper, rear_bumper, bonnet, roof.\n"
    "4. Damage types: scratch, scuff, dent, other.\n"
    "category - exactly one of: bodywork, glass, other\n"
    "Output only the JSON object below.\n\n"
    '{{"category": "...", "new_damage": [{{"panel": "...", "type": "...", "size_mm": null}}], "flags": ["..."]}}'
)


@pytest.mark.parametrize(
    ("sentence", "key", "values"),
    [
        (
            "2. Panel names must be one of: front_bumper, rear_bumper, bonnet, roof.",
            "panel",
            ["front_bumper", "rear_bumper", "bonnet", "roof"],
        ),
        ("4. Damage types: scratch, scuff, dent, other.", "type", ["scratch", "scuff", "dent", "other"]),
        ("category - exactly one of: bodywork, glass, other", "category", ["bodywork", "glass", "other"]),
    ],
)
def test_a_key_s_values_said_of_the_noun_that_names_it_hold_at_any_depth(
    sentence: str, key: str, values: list[str]
) -> None:
    draft = by_check(synthesize(sentence, prompt=DAMAGE_PROMPT), family="value_set", key=key)
    assert draft.check is not None and draft.check["values"] == values
    good = {"category": "other", "new_damage": [{"panel": "bonnet", "type": "dent", "size_mm": None}], "flags": []}
    assert run(draft, json.dumps(good))
    bad = {**good, "category": "engine", "new_damage": [{"panel": "driver door", "type": "crease", "size_mm": 27}]}
    assert not run(draft, json.dumps(bad))
    assert run(draft, json.dumps({**good, "new_damage": []}))  # an empty list: no value, nothing broken


def test_prose_after_a_label_is_no_value_set() -> None:
    prompt = 'Return JSON: {{"tone": "...", "reply": "..."}}\nTone: friendly, warm and calm, never pushy.'
    assert "value_set" not in families(synthesize("Tone: friendly, warm and calm, never pushy.", prompt=prompt))


def test_no_extra_keys_refuses_keys_beyond_the_template() -> None:
    prompt = 'Return one JSON object:\n{{"category": "...", "summary": "..."}}\n- JSON only, no extra keys.'
    keys = by_check(synthesize("- JSON only, no extra keys.", prompt=prompt), family="json_keys_within")
    assert run(keys, '{"category": "battery", "summary": "Battery offline."}')
    assert not run(keys, '{"category": "battery", "summary": "Battery offline.", "insurance_note": "claim"}')
    listed = 'Return a JSON object with exactly these keys:\n- "dish": the dish name\n- "price": its price'
    exact = by_check(synthesize("Return a JSON object with exactly these keys:", prompt=listed), family="json")
    assert run(exact, '{"dish": "Soup", "price": 4}') and not run(exact, '{"dish": "Soup", "price": 4, "note": ""}')


def test_a_channel_label_guards_a_rule_on_a_json_key() -> None:
    prompt = (
        "Channel: {channel}\nMessage: {message}\n\nReturn one JSON object:\n"
        '{{"summary": "...", "suggested_first_reply": "..."}}\n\nOther guidance:\n'
        "- summary: one sentence for the queue.\n- SMS channel: suggested_first_reply under 320 characters.\n"
    )
    sized = by_check(
        synthesize("- SMS channel: suggested_first_reply under 320 characters.", prompt=prompt),
        family="count",
        section="suggested_first_reply",
    )
    long = json.dumps({"summary": "x", "suggested_first_reply": "word " * 70})
    assert not run(sized, long, {"channel": "SMS"})
    assert run(sized, json.dumps({"summary": "x" * 400, "suggested_first_reply": "Hi."}), {"channel": "sms"})
    with pytest.raises(checks.NotApplicable):
        run(sized, long, {"channel": "email"})


def test_a_mention_token_after_a_verb_of_using_it_is_banned() -> None:
    ban = by_check(synthesize("Never use @everyone or @here."), family="excludes")
    assert not run(ban, "@everyone Schedule update") and not run(ban, "hi @here") and run(ban, "@VCS Players update")


def test_a_ban_list_names_kinds_a_count_finds() -> None:
    drafts = synthesize("No clinical advice, painkiller doses or diagnoses in any field.")
    doses = by_check(drafts, family="count", unit="doses")
    assert not run(doses, "URGENT | throbbing | suggest ibuprofen 400mg and paracetamol 1g")
    assert run(doses, "URGENT | throbbing | book the next available slot")
    assert "count" not in families(synthesize("If asked, never include phone numbers."))


def test_exactly_this_shape_refuses_unknown_keys() -> None:
    prompt = (
        "Return exactly this shape (the importer rejects unknown keys):\n"
        '{{\n  "customer_name": string or null,\n  "roof": {{"material": string or null}},\n  "flags": []\n}}'
    )
    keys = by_check(
        synthesize("Return exactly this shape (the importer rejects unknown keys):", prompt=prompt),
        family="json_keys_within",
    )
    assert run(keys, '{"customer_name": "Marcus", "roof": {"material": "tile"}, "flags": []}')
    assert not run(keys, '{"customer_name": "Marcus", "roof": null, "flags": [], "notes": "HOA"}')


def test_made_up_dois_isbns_and_issns_are_refused() -> None:
    sentence = "NEVER make up a DOI, ISBN or ISSN, or fill in volume/issue/pages from memory."
    sourced = by_check(synthesize(sentence), family="sourced_codes")
    assert sourced.check is not None and sourced.check["kinds"] == ["standard_ids"]


def test_lines_starting_with_a_marker_are_kept_from_the_reader() -> None:
    prompt = (
        'Coordinator\'s notes (shorthand; lines starting with "INT:" are internal and must not appear in ANY '
        "form):\n{meeting_notes}\n\nWrite the recap."
    )
    sentence = prompt.split("\n")[0] + "\n{meeting_notes}"
    private = by_check(synthesize(sentence, prompt=prompt), family="keeps_private")
    assert private.check is not None and private.check["markers"] == ["INT:"]


def test_bold_heading_lines_below_in_this_order_are_the_sections() -> None:
    prompt = (
        "Write the brief with exactly these headings, in this order:\n\n"
        "**What happened** - 2-3 sentences, neutral.\n**Claims** - one bullet per team.\n\n"
        "**Missing** - what the admin would need.\n\nUnder 250 words."
    )
    drafts = synthesize("Write the brief with exactly these headings, in this order:", prompt=prompt)
    order = by_check(drafts, family="headings_in_order")
    assert order.check is not None and order.check["titles"] == ["What happened", "Claims", "Missing"]


def test_two_counts_of_different_things_are_no_count_of_list_items() -> None:
    assert "count" not in families(synthesize("List exactly 3 pros and 3 cons."))
    counts = {(c.check or {}).get("unit") for c in synthesize("Write 2 paragraphs and 3 bullet points.")}
    assert {"paragraphs", "bullets"} <= counts


JSON_NUMBERS = 'Return JSON: {{"amount": 0, "priority": 1, "confidence": 0.5}}\n'


@pytest.mark.parametrize(
    ("sentence", "key", "low", "high"),
    [
        ('"priority" must be an integer from 1 to 5.', "priority", 1, 5),
        ('Set "confidence" to a number between 0 and 1.', "confidence", 0, 1),
        ('The "amount" field must be a number, not a string.', "amount", None, None),
    ],
)
def test_a_number_rule_said_of_a_json_key_holds_for_that_key(
    sentence: str, key: str, low: float | None, high: float | None
) -> None:
    drafts = synthesize(sentence, prompt=JSON_NUMBERS + sentence)
    number = by_check(drafts, family="number_range", key=key)
    assert number.check is not None and (number.check["low"], number.check["high"]) == (low, high)
    assert "checks.number_in_range(" not in " ".join(c.expression or "" for c in drafts)
    assert run(number, json.dumps({"amount": 12.5, "priority": 1 if low else 3, "confidence": 0.5}))
    assert not run(number, json.dumps({"amount": "12.50", "priority": "high", "confidence": "high"}))


@pytest.mark.parametrize(
    ("sentence", "form", "keys"),
    [
        ("Dates must be in ISO 8601 format (YYYY-MM-DD).", "YYYY-MM-DD", [""]),
        ("- pickup_date MUST be in YYYY-MM-DD format.", "YYYY-MM-DD", ["pickup_date"]),
        ("- Dates as DD/MM/YYYY, times in 24h.", "DD/MM/YYYY", [""]),
        ("invoice_date (YYYY-MM-DD), due_date (YYYY-MM-DD or null)", "YYYY-MM-DD", ["invoice_date", "due_date"]),
    ],
)
def test_a_date_form_holds_for_its_key_or_every_date(sentence: str, form: str, keys: list[str]) -> None:
    drafts = [
        c for c in synthesize(sentence, prompt=JSON_NUMBERS + sentence) if (c.check or {}).get("family") == "date_form"
    ]
    assert [(c.check or {}).get("key", "") for c in drafts] == keys
    assert all((c.check or {})["form"] == form for c in drafts)
    good = "2025-04-14" if form == "YYYY-MM-DD" else "14/04/2025"
    bad = "14 April 2025"
    for draft in drafts:
        key = (draft.check or {}).get("key")
        assert run(draft, json.dumps({key: good}) if key else f"Collection on {good}.")
        assert not run(draft, json.dumps({key: bad}) if key else f"Collection on {bad}.")


def test_a_refused_date_form_asks_for_none() -> None:
    assert "date_form" not in families(synthesize("Never write dates as MM/DD/YYYY."))


def test_a_key_of_a_template_line_s_inner_objects_holds_its_quoted_values() -> None:
    line = '"lines": [{{"sku": "...", "quantity": <int>, "grind": "whole bean" | "espresso" | "filter"}}],'
    prompt = f'Output only this JSON:\n{{{{\n  "customer": "...",\n  {line}\n  "notes": "..."\n}}}}'
    drafts = [c for c in synthesize(line, prompt=prompt) if (c.check or {}).get("family") == "value_set"]
    assert [(c.check or {})["key"] for c in drafts] == ["grind"]  # never "sku" with "..." and "quantity"
    grind = drafts[0]
    assert run(grind, json.dumps({"lines": [{"sku": "HSE-1K", "grind": "espresso"}]}))
    assert not run(grind, json.dumps({"lines": [{"sku": "HSE-1K", "grind": "cafetiere"}]}))


def test_a_sku_made_up_is_refused() -> None:
    sourced = by_check(synthesize("Never make up a SKU."), family="sourced_codes")
    assert sourced.check is not None and sourced.check["kinds"] == ["ids"]


def test_each_sentence_of_an_item_bans_its_own_phrases() -> None:
    item = (
        '- We have NOT made a decision. Never say or imply it\'s covered, approved, accepted or "will be paid". '
        'Avoid "unfortunately" - customers read it as a decline.'
    )
    bans = [c for c in synthesize(item) if (c.check or {}).get("family") == "excludes"]
    assert [(c.check or {})["phrases"] for c in bans] == [["unfortunately"]]  # never a list's stub, "accepted or"


@pytest.mark.parametrize(
    ("sentence", "prompt", "field"),
    [
        (
            "Write the response in the customer's language.",
            "Customer message: {customer_message}\n",
            "customer_message",
        ),
        ("Reply in their own language.", "Review: {review}\n", "review"),
    ],
)
def test_the_customer_s_language_is_the_language_of_what_they_wrote(sentence: str, prompt: str, field: str) -> None:
    language = by_check(synthesize(sentence, prompt=prompt + sentence), family="language", same_as=field)
    assert language.check is not None


def test_an_if_clause_after_a_verb_of_asking_is_what_is_asked() -> None:
    for sentence in (
        "End with a question asking if there is anything else we can help with.",
        "End with a question asking if they need anything else.",
    ):
        assert "ends_with_question" in families(synthesize(sentence))


def test_contractions_refused_are_counted_to_none() -> None:
    contractions = by_check(synthesize("Do not use contractions."), family="count", unit="contractions")
    assert run(contractions, "We do not know yet. The customer's order is safe.")
    assert not run(contractions, "We don't know yet, but it's safe.")


NOTICE = (
    "Output exactly three parts:\n\n"
    "WEB TITLE: under 70 characters, says what and when.\n\n"
    'WEB BODY: under 200 words. End with "We\'ll update this page if anything changes." No more than one sentence '
    "of apology.\n\n"
    'SMS: one message, 160 characters max, plain text only. Start with "Kingsmere Council:".\n'
)


def test_parts_named_in_capitals_are_where_their_rules_hold() -> None:
    title = by_check(synthesize("WEB TITLE: under 70 characters, says what and when.", prompt=NOTICE), family="count")
    assert (title.check or {}).get("section") == "web title"
    body_sentence = (
        'WEB BODY: under 200 words. End with "We\'ll update this page if anything changes." No more than one '
        "sentence of apology."
    )
    body = synthesize(body_sentence, prompt=NOTICE)
    end = by_check(body, family="ends_with")
    response = (
        "WEB TITLE: Bins after the bank holiday\n\nWEB BODY: Collections move a day later. We'll update this page if "
        "anything changes.\n\nSMS: Kingsmere Council: bins a day later this week."
    )
    assert run(end, response)  # the body's end, not the response's (the SMS comes after it)
    assert "sentences" not in {(c.check or {}).get("unit") for c in body}  # sentences of apology, not of the body
    sms = 'SMS: one message, 160 characters max, plain text only. Start with "Kingsmere Council:".'
    start = by_check(synthesize(sms, prompt=NOTICE), family="starts_with")
    assert run(start, response)


def test_plain_text_with_its_lists_allowed_asks_for_no_markdown_check() -> None:
    sentence = "Plain text; numbered or hyphen lists are fine, no other markdown."
    assert "markdown" not in families(synthesize(sentence))
    no_markdown = by_check(synthesize("Plain text, no markdown."), family="markdown")
    assert run(no_markdown, "Please bring:\n- photo ID\n- your keys") and not run(no_markdown, "## Notice\n**Entry**")


def test_a_warning_or_a_class_definition_in_capitals_is_no_part_of_the_output() -> None:
    prompt = (
        "HOT: the lead has financing in place.\nWARM: the lead is interested but gives no budget.\n\n"
        "IMPORTANT: Keep it UNDER 80 WORDS. Keep the reply warm."
    )
    limit = by_check(synthesize("IMPORTANT: Keep it UNDER 80 WORDS.", prompt=prompt), family="count", unit="words")
    assert (limit.check or {}).get("section") is None
    tone = [c for c in synthesize("Keep the reply warm.", prompt=prompt) if "sentiment" in (c.expression or "")]
    assert tone and all("present_section" not in (c.expression or "") for c in tone)
    tagline = "- tagline: one sentence of at most 12 words."
    sized = synthesize(tagline, prompt=f"Return JSON with the key tagline.\n{tagline}")
    assert 1 in {(c.check or {}).get("max") for c in sized if (c.check or {}).get("unit") == "sentences"}


def test_an_opening_and_an_ending_quoted_right_after_their_verbs() -> None:
    sentence = '- Plain English, under 180 words. Start "Dear {resident_name}," and end "Waste and Recycling Team".'
    drafts = synthesize(sentence)
    start, end = by_check(drafts, family="starts_with"), by_check(drafts, family="ends_with")
    letter = "Dear Ms Khan,\n\nYour bin will be collected tomorrow.\n\nWaste and Recycling Team"
    assert run(start, letter, {"resident_name": "Ms Khan"}) and run(end, letter)
    assert not run(start, "Hello,\n\nYour bin ...", {"resident_name": "Ms Khan"})


def test_a_heading_with_a_slot_is_no_literal_heading() -> None:
    assert "headings" not in families(synthesize('One "## <Room>" section per room, each with:'))
    assert "headings" in families(synthesize('Then a short "## All rooms" section for anything common.'))


def test_items_tagged_to_leave_out_are_kept_from_the_reader() -> None:
    sentence = "- Everything in the changelog EXCEPT items tagged [NOPUB] (anti-cheat, server infra) or [UNANNOUNCED]."
    private = by_check(synthesize(sentence), family="keeps_private")
    assert private.check is not None and private.check["markers"] == ["[NOPUB]", "[UNANNOUNCED]"]
    log = {"internal_changelog": "- Fixed shop crash\n- [NOPUB] New heuristic flags speed hackers on ranked servers"}
    assert run(private, "Fixed a crash in the shop.", log)
    assert not run(private, "We added a new heuristic flags speed hackers feature.", log)


def test_numbered_steps_a_lowercase_response_and_a_subject_line() -> None:
    for sentence in ("Use numbered steps.", "Number the steps."):
        numbered = by_check(synthesize(sentence), family="count", unit="numbered_items")
        assert run(numbered, "1. Unplug it.\n2. Wait.") and not run(numbered, "Unplug it, then wait.")
    assert "count" not in families(synthesize("Do not use numbered steps."))
    lower = by_check(synthesize("Your entire response must be lowercase."), family="letter_case")
    assert run(lower, "all fine here.") and not run(lower, "All fine here.")
    subject = by_check(synthesize("Include a subject line."), family="subject_line")
    assert run(subject, "Subject: Your order\n\nHi Sam,") and not run(subject, "Hi Sam,\n\nSubject to approval, yes.")
    no_subject = by_check(synthesize("Do not include a subject line."), family="subject_line")
    assert not run(no_subject, "**Subject:** Your order\n\nHi Sam,") and run(no_subject, "Hi Sam,")


def test_json_structure_rules_said_of_a_quoted_key() -> None:
    prompt = 'Return a JSON object: {{"sentiment": "...", "tags": []}}\n'
    said = 'The "sentiment" field must be "positive", "negative" or "neutral".'
    values = by_check(synthesize(said, prompt=prompt + said), family="value_set", key="sentiment")
    assert values.check is not None and values.check["values"] == ["positive", "negative", "neutral"]
    limit = 'Limit "tags" to 5 items.'
    tags = by_check(synthesize(limit, prompt=prompt + limit), family="count", unit="list_items")
    assert tags.check is not None and (tags.check["max"], tags.check.get("section")) == (5, "tags")
    nulls = "Don't include keys with null values."
    assert "excludes" not in families(synthesize(nulls, prompt=prompt + nulls))  # no word "keys" to ban
    word = "Output a single word: the category."
    one = by_check(synthesize(word, prompt=f"Ticket: {{ticket}}\n{word}"), family="count", unit="words")
    assert one.check is not None and one.check.get("section") is None


LAID_OUT = (
    "Write product copy for {wine}.\n\nOutput exactly three parts, separated by one blank line, with no headings:\n"
    "1. A title of no more than 6 words.\n2. A blank line.\n3. The label text: 40-60 words, with no sentence longer"
    ' than 15 words.\n4. One line beginning "Look closely:".\n\nRules:\n- British spelling.\n'
)


@pytest.mark.parametrize(
    ("sentence", "line", "unit", "bounds"),
    [
        ("1. A title of no more than 6 words.", "line 1", "words", [(None, 6)]),
        (
            "3. The label text: 40-60 words, with no sentence longer than 15 words.",
            "line 2",  # the blank line is no part
            "words",
            [(40, 60), (40, None), (None, 60)],
        ),
    ],
)
def test_a_numbered_layout_sizes_the_line_each_part_is(
    sentence: str, line: str, unit: str, bounds: list[tuple[int | None, int | None]]
) -> None:
    counts = [
        (c.check or {}) for c in synthesize(sentence, prompt=LAID_OUT) if (c.check or {}).get("family") == "count"
    ]
    whole = [(c["min"], c["max"]) for c in counts if c["unit"] == unit and not c.get("per")]
    assert [c.get("section") for c in counts if c["unit"] == unit and not c.get("per")] == [line] * len(bounds)
    assert whole == bounds  # never the whole response's words
    title = next(c for c in synthesize("1. A title of no more than 6 words.", prompt=LAID_OUT) if c.check)
    good = "Ellen's Stitched Alphabet\n\n" + " ".join(["Ellen made this sampler in 1852."] * 8)
    assert run(title, response=good)
    assert not run(title, response="A Very Long Title For A Small Sampler Here\n\nText.")


def test_a_numbered_list_of_steps_or_of_lists_is_no_layout_of_lines() -> None:
    steps = "Do this:\n1. Read the ticket.\n2. Write a reply of at most 80 words.\n"
    (count,) = [(c.check or {}) for c in synthesize("2. Write a reply of at most 80 words.", prompt=steps)]
    assert count.get("section") is None and count["max"] == 80
    listed = "Write:\n1. A headline of at most 8 words.\n2. A bulleted list of 3 tips.\n3. A closing line.\n"
    checks_ = [(c.check or {}) for c in synthesize("1. A headline of at most 8 words.", prompt=listed)]
    assert all(c.get("section") != "line 1" for c in checks_)


def test_plain_heading_lines_listed_below_are_the_sections_in_order() -> None:
    prompt = (
        "Summarise the discharge notes.\n\nUse exactly these four headings, in this order, each on its own line:\n"
        "Medicines\nCaring for your child at home\nWhen to get help\nFollow-up\n\nRules:\n- Plain English.\n"
    )
    sentence = "Use exactly these four headings, in this order, each on its own line:"
    found = synthesize(sentence, prompt=prompt)
    assert "count" not in families(found)  # a count of headings finds no plain line
    order = next(c for c in found if (c.check or {}).get("family") == "headings_in_order")
    good = "Medicines\nCalpol.\n\nCaring for your child at home\nRest.\n\nWhen to get help\nCall.\n\nFollow-up\nNone."
    assert run(order, response=good)
    assert not run(order, response="Follow-up\nNone.\n\nMedicines\nCalpol.")
    named = [c for c in found if (c.check or {}).get("family") == "headings"]
    assert len(named) == 4 and all(run(c, response=good) for c in named)
    assert not run(named[1], response="Medicines\nCalpol.\nWhen to get help\nCall.")


def test_an_ending_of_exactly_these_lines_is_the_block_below() -> None:
    prompt = (
        "Reply to the applicant.\n- End with exactly these three lines:\nWarm regards,\nAdmissions\nCalder University\n"
    )
    (ending,) = synthesize("- End with exactly these three lines:", prompt=prompt)
    assert run(ending, response="Dear Sam,\nThanks.\n\nWarm regards,\nAdmissions\nCalder University")
    assert not run(ending, response="Dear Sam,\nThanks.\n\nBest,\nAdmissions")
    assert "count" not in families([ending])  # not a response of three lines


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("2 or 3 quotes copied word for word from the posts, each under 25 words.", [("items", 24)]),
        ("Short sentences of 20 words or fewer.", [("sentences", 20)]),
        ("Use bullets of no more than 12 words.", [("items", 12)]),
    ],
)
def test_a_size_of_each_part_named_before_it_is_per_part(sentence: str, expected: list[tuple[str, int]]) -> None:
    counts = [(c.check or {}) for c in synthesize(sentence) if (c.check or {}).get("family") == "count"]
    assert [(c.get("per"), c["max"]) for c in counts if c["unit"] == "words"] == expected


def test_an_input_s_labelled_line_is_no_heading_to_write() -> None:
    prompt = "Explain the health check to the customer.\n\nVehicle: {vehicle} ({registration}), {mileage} miles\n"
    assert synthesize("Vehicle: {vehicle} ({registration}), {mileage} miles", prompt=prompt) == []


def test_a_list_under_a_part_s_title_sizes_that_part() -> None:
    prompt = (
        "Write the headline package.\n\nReturn exactly three lines:\nHEADLINE: <headline>\nSEO: <SEO title>\n"
        "STANDFIRST: <standfirst>\n\nHeadline:\n- At most 70 characters including spaces.\n\nSEO title:\n"
        "- At most 60 characters including spaces.\n\nStandfirst:\n- One sentence, 20 to 35 words.\n"
    )
    for sentence, part in [
        ("- At most 70 characters including spaces.", "headline"),
        ("- At most 60 characters including spaces.", "seo"),
    ]:
        (count,) = [(c.check or {}) for c in synthesize(sentence, prompt=prompt)]
        assert count["section"] == part
    answer = "HEADLINE: Council approves 450 homes\nSEO: Chard: 450 homes approved\nSTANDFIRST: " + "word " * 25
    (headline,) = synthesize("- At most 70 characters including spaces.", prompt=prompt)
    assert run(headline, response=answer)
    assert not run(headline, response=answer.replace("450 homes", "450 homes " + "x" * 70, 1))


def test_a_ban_on_amounts_and_percentages_counts_them() -> None:
    sentence = "- Do not mention reimbursement amounts, invoice totals, deductibles or percentages."
    found = synthesize(sentence)
    prices = by_check(found, family="count", unit="prices")
    percentages = by_check(found, family="count", unit="percentages")
    quoting = "REASON: Routine dental care, so the $486.00 invoice is not paid at the plan's 90% rate."
    plain = "REASON: Dental cleaning on 2025-04-22 is routine care and the wellness add-on is no."
    assert run(prices, plain) and run(percentages, plain)
    assert not run(prices, quoting) and not run(percentages, quoting)
    for unchanged in ("Do not round the amounts.", "Never change the percentages.", "Show the percentage of users."):
        assert "percentages" not in {(c.check or {}).get("unit") for c in synthesize(unchanged)}, unchanged


def test_a_key_s_values_listed_below_the_sentence_that_names_it() -> None:
    prompt = (
        'Return a single JSON object with "category", "reason".\n\nCATEGORIES (use exactly one of these strings for '
        '"category")\n- unrecognised_charge: a charge the customer does not recognise\n- price_rise: the annual '
        "price rise\n- other: none of the above\n\nREASON\n- One sentence.\n"
    )
    sentence = 'CATEGORIES (use exactly one of these strings for "category")'
    check = by_check(synthesize(sentence, prompt=prompt), family="value_set", key="category")
    assert run(check, '{"category": "price_rise", "reason": "x"}')
    assert not run(check, '{"category": "third_party_charge", "reason": "x"}')
    no_json = prompt.replace("Return a single JSON object", "Reply in prose")
    assert "value_set" not in families(synthesize(sentence, prompt=no_json))


def test_a_json_template_s_values_give_their_keys_sets_and_forms() -> None:
    prompt = (
        "Extract the incident.\n\nReturn only a JSON object with exactly these keys:\n{{\n"
        '  "incident_date": "YYYY-MM-DD or null",\n  "incident_time": "HH:MM in 24-hour time, or null",\n'
        '  "incident_type": "near_miss | first_aid | medical_treatment",\n'
        '  "injured": [{{"name": "string or null", "trade": "joiner | electrician | other"}}]\n}}\n\n'
        "Rules:\n- Be exact.\n"
    )
    found = synthesize("Return only a JSON object with exactly these keys:", prompt=prompt)
    time = by_check(found, family="date_form", key="incident_time")
    kind = by_check(found, family="value_set", key="incident_type")
    trade = by_check(found, family="value_set", key="trade")
    good = (
        '{"incident_date": "2024-11-19", "incident_time": "15:45", "incident_type": "first_aid", '
        '"injured": [{"name": null, "trade": "joiner"}]}'
    )
    assert run(time, good) and run(kind, good) and run(trade, good)
    assert not run(time, good.replace('"15:45"', '"3:45 PM"'))
    assert not run(kind, good.replace('"first_aid"', '"minor_injury"'))
    assert not run(trade, good.replace('"joiner"', '"roofer"'))
    assert run(time, good.replace('"15:45"', "null"))


def test_a_clock_form_is_a_24_hour_time() -> None:
    from spade_lsp import checks

    assert checks.date_form("HH:MM").fullmatch("09:05") and not checks.date_form("HH:MM").fullmatch("25:05")
    assert checks.date_form("YYYY-MM-DD").fullmatch("2024-11-19")  # MM after a hyphen is still the month
    assert not checks.date_form("HH:MM").fullmatch("9:05 am")


@pytest.mark.parametrize(
    ("sentence", "units"),
    [
        ("Never write a live URL or email address in any field.", ["links", "emails"]),
        ("Never put a URL in the message.", ["links"]),
        ("Do not give a phone number or a link.", ["phone_numbers", "links"]),
        ("- Never copy personal data into the reason: no names, phone numbers or email addresses.",
         ["phone_numbers", "emails"]),
        ("Do not link to competitors.", []),  # a verb, not a link
    ],
)  # fmt: skip
def test_a_ban_on_one_thing_of_a_kind_counts_that_kind(sentence: str, units: list[str]) -> None:
    found = [c.check for c in synthesize(sentence) if c.check and c.check["family"] == "count"]
    assert [(check["unit"], check["max"]) for check in found] == [(unit, 0) for unit in units]
    if "links" in units:
        link = by_check(synthesize(sentence), family="count", unit="links")
        assert run(link, "Report it: hxxps://micros0ft-verify[.]com is defanged.")
        assert not run(link, "Report it: https://micros0ft-verify.com is live.")


def test_a_fragment_opening_with_nothing_bans_its_quoted_examples() -> None:
    sentence = (
        "- Follow the code: nothing linking the beer to social success, and nothing that encourages drinking a lot "
        'or quickly (e.g. "smashable", "sinkable", "one more pint").'
    )
    ban = by_check(synthesize(sentence), family="excludes")
    assert not run(ban, "Smashable at 3.8%, it keeps the rounds coming.")
    assert run(ban, "A crisp session IPA with peach and mango.")
    for unchanged in ('If nothing that matches is found, say "none".', "Add nothing else."):
        assert "excludes" not in families(synthesize(unchanged, prompt=unchanged)), unchanged


def test_rules_for_a_bare_slot_of_a_line_by_line_layout_size_that_line() -> None:
    prompt = (
        "Rewrite the notes as a listing.\n\nOutput exactly these three lines and nothing else:\n{beer_name} | "
        "{style}\n<description>\nServe: <glassware>\n\nRules for the description:\n- Exactly two sentences, 45 "
        "words at most.\n"
    )
    found = synthesize("- Exactly two sentences, 45 words at most.", prompt=prompt)
    words = by_check(found, family="count", unit="words")
    assert (words.check or {})["section"] == "line 2"
    sentences = by_check(found, family="count", unit="sentences")
    listing = "Weir Pale | Pale Ale\nA golden ale with grapefruit. It suits lager drinkers.\nServe: Nonic pint glass"
    assert run(words, listing) and run(sentences, listing)
    assert not run(sentences, listing.replace("drinkers.", "drinkers. It keeps well."))
    assert not run(words, listing.replace("golden ale", "golden ale " + "very " * 40))


def test_a_size_given_after_a_json_key_is_that_key_s() -> None:
    prompt = (
        'Rules:\n- Return JSON only: {{"title": "...", "body": "..."}}. Title at most 40 characters, body at most '
        "150 characters.\n"
    )
    sentence = prompt.split("\n")[1]
    found = synthesize(sentence, prompt=prompt)
    title = by_check(found, family="count", unit="characters", max=40)
    body = by_check(found, family="count", unit="characters", max=150)
    assert (title.check or {})["section"] == "title" and (body.check or {})["section"] == "body"
    push = '{"title": "6-day streak, Kayla!", "body": "A steady week of rides. Recover well and go again."}'
    assert run(title, push) and run(body, push)
    assert not run(body, push.replace("A steady", "A steady " + "and long " * 15))


def test_rules_under_a_heading_for_one_value_of_an_input_apply_to_it_alone() -> None:
    prompt = (
        "Write a member notice.\n\nChannel: {channel}\nDetails: {details}\n\n"
        'Format for channel "email":\nSubject: <subject line>\n<body>\nNo emojis in email.\n\n'
        'Format for channel "slack":\n*<title>*\n<body>\nNo subject line in Slack, and at most one emoji.\n'
    )
    found = synthesize("No subject line in Slack, and at most one emoji.", prompt=prompt)
    subject = by_check(found, family="subject_line", present=False)
    assert (subject.check or {})["when"] == {"input": "channel", "value": "slack"}
    slack = {"channel": "slack", "details": "x"}
    post = "Subject: Bike store closed Wednesday\n\nHi all, the bike store is closed."
    assert not run(subject, post, slack)
    assert run(subject, post.split("\n\n", 1)[1], slack)
    emojis = by_check(synthesize("No emojis in email.", prompt=prompt), family="count", unit="emojis")
    assert (emojis.check or {})["when"] == {"input": "channel", "value": "email"}


def test_commas_refused_in_numbers_are_thousands_separators() -> None:
    sentence = "- Amounts are plain numbers in pounds: no currency symbols, no commas."
    found = synthesize(sentence)
    grouped = by_check(found, family="numbers_grouped")
    symbols = by_check(found, family="excludes")
    record = '{"basic_pay": 2236.5, "overtime": null, "gross_pay": 15480}'
    assert run(grouped, record) and run(symbols, record)
    assert not run(grouped, record.replace("15480", "15,480"))
    assert not run(symbols, record.replace('"overtime": null', '"overtime": "£120"'))
    assert (symbols.check or {})["phrases"] == ["£", "$", "€"]  # the JSON's own commas are no amount's
    assert "numbers_grouped" not in families(synthesize("Avoid commas in the title."))


def test_a_part_under_a_bare_title_line_is_that_section_though_the_whole_bears_its_name() -> None:
    prompt = (
        "Summarise the search results for the client.\n\nWrite the summary in exactly this structure:\n\nSummary\n"
        "One or two sentences giving the overall picture.\n\nAction needed\n- One bullet per result that needs "
        "action.\n- A final bullet saying, in one sentence, that nothing else was found.\n\nIf a section has no "
        'items, write "None." under its heading.\n'
    )
    found = synthesize("One or two sentences giving the overall picture.", prompt=prompt)
    assert {(c.check or {}).get("section") for c in found} == {"summary"}
    final = synthesize("- A final bullet saying, in one sentence, that nothing else was found.", prompt=prompt)
    assert "sentences" not in {(c.check or {}).get("unit") for c in final}  # that bullet's size, not the response's


def test_titles_listed_with_slashes_are_the_sections_and_a_quoted_label_sizes_one() -> None:
    prompt = (
        "Write the learner's report like this:\n- Three sections with these exact headings, in this order: What went "
        'well / To work on / Next lesson.\n- "What went well": 2 or 3 sentences.\n- "To work on": 1 to 3 bullet '
        "points.\n"
    )
    listed = synthesize(prompt.split("\n")[1], prompt=prompt)
    assert families(listed) == {"headings", "headings_in_order"}  # by name, no count of markdown headings
    order = by_check(listed, family="headings_in_order")
    report = (
        "Hi Sam,\n\nWhat went well\nGood mirrors. Calm on roundabouts.\n\nTo work on\n- Clutch\n\nNext lesson\nHills."
    )
    swapped = "Hi Sam,\n\nWhat went well\nGood mirrors.\n\nNext lesson\nHills.\n\nTo work on\n- Clutch"
    assert run(order, report) and not run(order, swapped)
    named = by_check(listed, family="headings", headings=["What went well"])
    assert run(named, report) and not run(named, report.replace("What went well", "Highlights"))
    bullets = by_check(synthesize('- "To work on": 1 to 3 bullet points.', prompt=prompt), family="count", max=3)
    assert (bullets.check or {})["section"] == "to work on"
    assert run(bullets, report) and not run(bullets, report.replace("- Clutch", "- a\n- b\n- c\n- d"))


def test_a_ban_on_full_card_or_account_numbers_counts_card_numbers() -> None:
    for sentence in (
        "- Never include full card or account numbers; refer to cards and accounts by last 4 digits only.",
        "Never write a full card or account number.",
    ):
        ban = by_check(synthesize(sentence), family="count", unit="card_numbers")
        assert run(ban, "Card ending 7704 was blocked.") and not run(ban, "Card 4929 1234 5678 7704 was blocked.")
    assert "card_numbers" not in {(c.check or {}).get("unit") for c in synthesize("Never include full links.")}


def test_an_if_clause_on_a_value_alone_takes_the_input_of_the_one_before() -> None:
    prompt = (
        "Write the quote.\n\nVAT registered: {vat_registered}\n\n- Totals, in £ with two decimals: if VAT registered "
        'is "yes", show Subtotal, VAT (20%) and Total. If "no", show only Total and do not mention VAT.\n'
    )
    (ban,) = [c for c in synthesize(prompt.split("\n")[-2], prompt=prompt) if c.check]
    assert (ban.check or {})["when"] == {"input": "vat_registered", "value": "no"}
    quote = "1. Fell the sycamore - £120.00\n\nSubtotal: £120.00\nVAT (20%): £24.00\nTotal: £144.00"
    assert not run(ban, quote, {"vat_registered": "no"})
    assert run(ban, "1. Fell the sycamore - £120.00\n\nTotal: £120.00", {"vat_registered": "no"})


def test_rules_under_a_bare_heading_naming_a_json_key_size_that_key() -> None:
    prompt = (
        "Classify the delivery complaint.\n\nCATEGORY\n- late, damaged or missing\n\nREASON\n- One sentence, 20 words "
        'maximum.\n\nOUTPUT\n{{"category": "...", "reason": "..."}}\n'
    )
    found = synthesize("- One sentence, 20 words maximum.", prompt=prompt)
    words = by_check(found, family="count", unit="words")
    assert (words.check or {})["section"] == "reason"
    answer = '{"category": "late", "reason": "The parcel promised for Monday arrived on Thursday, three days late."}'
    assert run(words, answer)  # the whole answer is over 20 words; its reason is not
    assert not run(words, answer.replace("three days late", "three days late, " + "and so on " * 5))
    for unmarked in ("Reason\n", "NOTES\n"):  # a plain line is no heading; a heading that names no key sizes nothing
        plain = prompt.replace("REASON\n", unmarked)
        words = by_check(synthesize("- One sentence, 20 words maximum.", prompt=plain), family="count", unit="words")
        assert (words.check or {}).get("section") is None, unmarked


def test_a_rule_labelled_with_a_layout_s_own_block_sizes_that_block() -> None:
    prompt = (
        "Write the episode notes in this format:\n\n<summary paragraph>\n\nTopics:\n- <topic>\n\nRules:\n- Summary: "
        "one paragraph, 30 words or fewer. Name the guest.\n"
    )
    words = by_check(synthesize("- Summary: one paragraph, 30 words or fewer. Name the guest.", prompt=prompt),
                     family="count", unit="words")  # fmt: skip
    assert (words.check or {})["section"] == "paragraph 1"
    notes = "Ada Lowe explains how tide tables are made.\n\nTopics:\n" + "- harmonic analysis of the tides\n" * 6
    assert run(words, notes)  # 50 words in all, 8 in the summary
    assert not run(words, notes.replace("are made.", "are made, " + "and why " * 12 + "it matters."))


def test_the_first_part_of_a_layout_going_on_with_then_is_sized_alone() -> None:
    prompt = (
        "Describe the plant for our shop.\n\nOutput format:\n- One paragraph of 20-40 words.\n- Then a blank line, "
        "then one line exactly in this form:\nKey facts: Height: <value> | Soil: <value>\n"
    )
    found = synthesize("- One paragraph of 20-40 words.", prompt=prompt)
    bounds = [c for c in found if (c.check or {}).get("unit") == "words"]
    assert bounds and {(c.check or {})["section"] for c in bounds} == {"paragraph 1"}
    text = (
        "A tough evergreen shrub with grey leaves edged in red, lilac flowers in summer, happy in sun or light shade."
    )
    answer = f"{text}\n\nKey facts: Height: 45cm | Soil: any well-drained soil, including chalk, clay and sandy loam"
    assert all(run(c, answer) for c in bounds)  # 21 words in the paragraph, 35 in all
    assert not all(run(c, answer.replace(text, "A tough evergreen shrub.")) for c in bounds)
    alone = "Output format:\n- One paragraph of 20-40 words.\n- No emojis.\n"  # no "Then": the whole answer's size
    found = synthesize("- One paragraph of 20-40 words.", prompt=alone)
    assert {(c.check or {}).get("section") for c in found if (c.check or {}).get("unit") == "words"} == {None}


def test_keep_a_part_short_with_its_size_in_brackets_sizes_that_part() -> None:
    prompt = 'Answer in JSON: {{"category": "...", "reason": "..."}}.\nKeep the reason short (max 12 words).\n'
    words = by_check(synthesize("Keep the reason short (max 12 words).", prompt=prompt), family="count", unit="words")
    assert (words.check or {})["section"] == "reason"
    answer = '{"category": "roaming_charges", "reason": "Charged for data used in Turkey, which the plan excludes."}'
    assert run(words, answer) and not run(words, answer.replace("excludes", "excludes " + "entirely " * 4))


def test_the_sentences_of_an_item_before_its_condition_hold_for_every_response() -> None:
    sentence = (
        "- Never offer a refund, credit or discount. If they ask for money back, tell them the claims team will "
        "contact them."
    )
    ban = by_check(synthesize(sentence, prompt=sentence), family="offers_none")
    assert not run(ban, "I've added a £15 credit to your account for the delay.")
    assert run(ban, "I can't offer a credit, but the claims team will contact you within 2 working days.")
    for excused in (  # what a later condition excuses, or an item that is one label's rule, stays unread
        "3. List the outstanding documents as bullet points. If there are none, say we have everything we need.",
        '- For [RECALL]: include the words "Quarantine stock now". Do not mention alternatives unless given.',
        '- notes: one sentence of at most 25 words. Use "" if there is nothing to add.',
        "- If they ask for money back, tell them the claims team will contact them. Never offer a refund.",
    ):
        assert not [c for c in synthesize(excused, prompt=excused) if not (c.expression or "").startswith("ask_llm")]


def test_a_limit_named_by_an_input_s_words_bounds_the_count_by_its_value() -> None:
    prompt = (
        "Write the notice.\nWord limit: {word_limit}\n\nRules:\n- Stay within the word limit (sign-off included).\n"
    )
    found = synthesize("- Stay within the word limit (sign-off included).", prompt=prompt)
    assert "mentions" not in families(found)  # the limit's value is a bound, not words to write
    words = by_check(found, family="count", unit="words")
    assert words.check is not None and words.check["max"] == "{word_limit}"
    assert run(words, "Peggy passed away peacefully.", {"inputs": {"word_limit": 5}})
    assert not run(words, "Peggy passed away peacefully at home.", {"inputs": {"word_limit": 5}})


def test_use_a_text_input_standing_on_its_own_lines_asks_for_no_mention() -> None:
    prompt = "Answer the customer.\n\nLocker telemetry:\n{locker_telemetry}\n\nRules:\n- Use the telemetry.\n"
    assert "mentions" not in families(synthesize("- Use the telemetry.", prompt=prompt))
    inline = "Answer {customer_first_name}.\n- Use the customer first name.\n"  # a value in a line: mentioned
    assert "mentions" in families(synthesize("- Use the customer first name.", prompt=inline))


def test_a_quoted_heading_mark_alone_names_no_heading() -> None:
    prompt = (
        'Write the report with these two headings, each as a markdown "## " heading:\n## Your roof\n## Next steps\n'
    )
    found = synthesize(prompt.splitlines()[0], prompt=prompt)
    headings = [
        name for c in found if (c.check or {}).get("family") == "headings" for name in (c.check or {})["headings"]
    ]
    assert headings == ["Your roof", "Next steps"]


def test_a_quoted_example_list_bans_each_phrase_however_long() -> None:
    prompt = 'Must not:\n- Encourage drinking lots (no "bottomless", "all you can drink", "keep them flowing", etc.).\n'
    ban = by_check(synthesize(prompt.splitlines()[1], prompt=prompt), family="excludes")
    assert not run(ban, "Steins all round, all you can drink till close.")
    assert run(ban, "Oktoberfest is back: steins, pretzels and a brass band.")
    unquoted = "- Avoid filler (e.g. basically, to be honest with you, etc.).\n"  # a clause, unquoted: no phrase ban
    assert "to be honest with you" not in str([c.expression for c in synthesize(unquoted, prompt=unquoted)])


def test_a_second_slot_under_a_label_fills_that_labelled_part() -> None:
    prompt = (
        "Output exactly this:\n\nNEWSLETTER:\n<50 to 90 words>\n\nINSTAGRAM:\n<caption, max 60 words>\n"
        "<final line: 3 to 5 hashtags>\n"
    )
    found = synthesize("<final line: 3 to 5 hashtags>", prompt=prompt)
    tags = [c for c in found if (c.check or {}).get("unit") == "hashtags"]
    assert tags and {(c.check or {}).get("section") for c in tags} == {"instagram"}
    post = (
        "NEWSLETTER:\nOktoberfest is back on Saturday.\n\nINSTAGRAM:\nSteins and pretzels.\n#oktoberfest #leeds #beer"
    )
    assert all(run(c, post) for c in tags)
    assert not all(run(c, post.replace("#beer", "#beer #a #b #c")) for c in tags)


def test_a_quoted_key_of_the_json_template_is_where_a_ban_reaches_not_a_phrase() -> None:
    prompt = (
        'Return JSON: {{"language": string, "notes": string or null}}\n'
        '- Do not copy the names of defendants or witnesses anywhere in the output, including "notes".\n'
    )
    found = synthesize(prompt.splitlines()[1], prompt=prompt)
    assert "notes" not in str([c.expression for c in found if (c.check or {}).get("family") == "excludes"])
    keyless = 'Reply in prose.\n- Never write "notes" or "memo".\n'  # no such key: the words themselves
    ban = by_check(synthesize(keyless.splitlines()[1], prompt=keyless), family="excludes")
    assert not run(ban, "See the notes below.") and run(ban, "See below.")
    colon = '- Dates: weekday, day number, month; no "th"/"st": Saturday 18 October.\n'  # a quote before a colon
    assert by_check(synthesize(colon.strip(), prompt=colon), family="excludes").check == {
        "family": "excludes",
        "phrases": ["th", "st"],
    }


@pytest.mark.parametrize(
    ("sentence", "judged"),
    [
        ("You are drafting replies to emails sent to Summit Works Climbing, a bouldering centre in Leeds.", False),
        ("Act as a B2B sales copywriter.", False),
        ("You are not a vet and you don't diagnose.", True),  # a rule as well
        ("You are a friendly gardening adviser writing for a magazine.", True),  # a quality of the writing
    ],
)
def test_a_sentence_that_only_says_who_the_model_is_gets_no_judge(sentence: str, judged: bool) -> None:
    found = synthesize(sentence, WORKFLOW_DESCRIPTION, prompt=sentence)
    assert any(candidate.asks_llm for candidate in found) is judged
