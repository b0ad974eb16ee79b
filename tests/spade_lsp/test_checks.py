"""The measurements generated assertions call: library-based ones never raise on ordinary text, and a failure to
measure is a MeasurementError, in process and inside the confined sandbox workers alike."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from spade_lsp import checks
from spade_lsp.errors import MeasurementError, NotApplicable, SpadeError
from spade_lsp.sandbox import ModuleSource, SandboxCase, SandboxLimits, run_assertions

ORDINARY = [
    "The gadgetron costs 10 dollars.",  # words CMUdict does not know: textstat 0.7.7 raised KeyError on both
    "12",
    "ok",
    "Version 2.0.1 ships on 2024-05-01 at 10:30.",
    "- first item\n- second item\n## Heading\nSome prose follows here.",
    "Ceci est un texte écrit entièrement en français.",
    "🙂 👍",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_library_measurements_never_raise_on_ordinary_text(text: str) -> None:
    assert isinstance(checks.language(text), str)
    assert isinstance(checks.in_language(text, "en"), bool)
    if "français" in text:  # English measures do not apply to French: a deliberate non-verdict, not a crash
        with pytest.raises(NotApplicable, match="measures English"):
            checks.sentiment(text)
        with pytest.raises(NotApplicable, match="measures English"):
            checks.reading_ease(text)
        return
    assert -1.0 <= checks.sentiment(text) <= 1.0
    if checks.count(text, "words"):
        assert isinstance(checks.reading_ease(text), float)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Hallo! Vielen Dank für Ihre Nachricht, wir melden uns bald.", "German"),
        ("¡Hola! Gracias por tu mensaje, te responderemos muy pronto.", "Spanish"),
        ("我们会尽快回复您的消息，谢谢您的耐心等待。", "Chinese"),
    ],
)
def test_english_measures_do_not_apply_to_other_languages(text: str, language: str) -> None:
    with pytest.raises(NotApplicable):
        checks.sentiment(text)
    assert checks.in_language(text, language)
    assert -1.0 <= checks.sentiment("Thanks so much, we will reply very soon!") <= 1.0


def test_reading_ease_is_textstats_formula_and_unknown_words_fall_back_to_hyphenation() -> None:
    import textstat

    known = "The cat sat on the mat. It was happy to see us."
    assert checks.reading_ease(known) == pytest.approx(textstat.flesch_reading_ease(known))
    with_unknown = checks.reading_ease("The gadgetron costs 10 dollars.")
    assert 0.0 < with_unknown < 121.0
    # a list reads as its items, not as one sentence of every word
    bullets = "\n".join(f"- Item number {n} is short" for n in range(20))
    assert checks.reading_ease(bullets) > 60


def test_preload_reads_the_data_of_the_named_checks_only() -> None:
    checks._syllable_sources.cache_clear()
    checks._vader.cache_clear()
    checks.preload(["count", "sentiment", "no_such_check"])
    assert checks._vader.cache_info().currsize == 1
    assert checks._syllable_sources.cache_info().currsize == 0  # reading_ease was not named
    checks.preload(["reading_ease"])
    assert checks._syllable_sources.cache_info().currsize == 1


@pytest.mark.parametrize("text", ["", "   \n", "🙂", "--- ***"])
def test_a_text_without_words_cannot_be_scored_and_says_so(text: str) -> None:
    with pytest.raises(MeasurementError, match="no word to score") as caught:
        checks.reading_ease(text)
    assert isinstance(caught.value, SpadeError) and isinstance(caught.value, ValueError)
    assert -1.0 <= checks.sentiment(text) <= 1.0  # VADER reads emoji; an empty output is neutral (0.0)
    if not text.strip():
        assert checks.sentiment(text) == 0.0
    assert checks.language(text) == "" and checks.in_language(text, "en")


def test_language_on_a_few_words_is_no_evidence_against() -> None:
    assert checks.language("ok") != "en"  # langdetect guesses on two letters
    assert checks.in_language("ok", "en")  # which is why checks use in_language
    assert checks.in_language("This is a plain English sentence about the weather today.", "en")
    assert not checks.in_language("Ceci est un texte écrit entièrement en français pour le test.", "en")


def test_a_library_that_cannot_load_is_a_measurement_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> object:
        raise OSError("lexicon unreadable")

    monkeypatch.setattr(checks, "_vader", broken)
    with pytest.raises(MeasurementError, match=r"sentiment: could not measure the text \(OSError: lexicon"):
        checks.sentiment("A fine day.")


def test_in_the_sandbox_the_measurements_run_and_a_failure_to_measure_is_named() -> None:
    source = (
        "from spade_lsp import checks\n\n"
        "def assert_readable(example, prompt, response):\n    return checks.reading_ease(response) >= 0\n\n"
        "def assert_tone(example, prompt, response):\n    return checks.sentiment(response) >= -1\n\n"
        "def assert_english(example, prompt, response):\n    return checks.in_language(response, 'en')\n"
    )
    texts = ["The gadgetron costs 10 dollars.", "12", "", "ok"]
    cases = [SandboxCase(example={}, prompt="", response=text) for text in texts]
    result = run_assertions(ModuleSource(source, "m_assertions.py"), cases, limits=SandboxLimits(timeout_s=20))
    assert result.module_error is None
    assert result.passed == [[True, True, True], [True, True, True], [None, True, True], [True, True, True]]
    [error] = result.errors
    assert error.case == 2 and error.kind == "unmeasurable"
    assert error.message.startswith("MeasurementError: reading_ease: the text holds no word")


def test_mean_sentence_length_reads_prose_not_code() -> None:
    code = "```python\n" + "x = call(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t)\n" * 5 + "```\n"
    assert checks.mean_sentence_words("Rename the variable. Add a test.\n" + code) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("phrase", "text"),
    [
        ("notes", "I am not sure."),
        ("planes", "Make a plan."),
        ("plan", "The planes landed."),
        ("uses", "Contact us."),
        ("us", "She uses it."),
        ("news", "A new day."),
        ("united", "One unit."),
        ("hopes", "A hop."),
        ("hoped", "A hop."),
        ("hop", "I hoped so."),
        ("seed", "I see."),
        ("thing", "The end."),
    ],
)
def test_an_inflection_needs_a_plausible_stem(phrase: str, text: str) -> None:
    assert not checks.contains_phrase(text, phrase)


@pytest.mark.parametrize(
    ("phrase", "texts"),
    [
        ("mention", ["mention", "mentions", "mentioned", "mentioning"]),
        ("mentioned", ["mention", "mentions", "mentioning"]),
        ("summary", ["summary", "summaries"]),
        ("summaries", ["summary"]),
        ("discount", ["discount", "discounts", "discounted"]),
        ("discounts", ["discount"]),
        ("stop", ["stop", "stops", "stopped", "stopping"]),
        ("stopped", ["stop", "stopping"]),
        ("hope", ["hopes", "hoped", "hoping"]),
        ("hoped", ["hope", "hoping"]),
        ("making", ["make", "makes"]),
        ("boxes", ["box"]),
        ("box", ["boxes"]),
        ("united", ["unite", "unites"]),
        ("called", ["call"]),
        ("applied", ["apply", "applies"]),
        ("uses", ["use", "using"]),
    ],
)
def test_regular_inflections_match(phrase: str, texts: list[str]) -> None:
    for text in texts:
        assert checks.contains_phrase(f"We {text} it.", phrase), text


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        ("- a\n- b", True),
        ("1. a\n2. b\n   more of b\n\n", True),
        ("Intro\n\n* a\n* b\n\nThat's all!", False),
        ("```\n- a\n```", True),
        ("Just prose.", False),
        ("", False),
        ("  indented prose without a list", False),
    ],
)
def test_ends_with_list(text: str, ends: bool) -> None:
    assert checks.ends_with_list(text) is ends


def test_numbers_are_the_figures_a_text_states_not_names_or_list_markers() -> None:
    text = "1. Q2 revenue: $61.1b (up 16%), 1,200 units, the 4th record; guidance $51.5-53.5b.\n2) COVID-19, 5G, v1.2"
    assert checks.numbers(text) == {Decimal(n) for n in ["61.1", "16", "1200", "4", "51.5", "53.5"]}


@pytest.mark.parametrize(
    ("response", "stated"),
    [
        ("Revenue was $61.1 billion, up 16%.", True),
        ("Revenue was about $61 billion, up 16.3%.", True),  # roundings of 61.14 and 16.27
        ("It grew in the fourth quarter: three new stores in 4th-quarter markets.", True),  # "4" from "fourth"
        ("No figures at all, just a summary.", True),
        ("Revenue was $62 billion.", False),
        ("Revenue was $61.1 billion, and it will reach $70 billion next year.", False),
        ("```python\nx = 12345\n```\nRevenue: $61.1 billion.", True),  # code is code, not a claim
        ("1. Revenue: $61.1 billion\n2. Stores: 3", True),  # list markers state nothing
    ],
)
def test_sourced_numbers_passes_only_figures_its_inputs_give(response: str, stated: bool) -> None:
    example = {"transcript": "Revenue of $61.14 billion rose 16.27% in the fourth quarter; three new stores."}
    assert checks.sourced_numbers(response, example) is stated


def test_sourced_numbers_reads_the_rendered_prompt_and_needs_some_source() -> None:
    assert checks.sourced_numbers("We sold 42 units.", {}, "Report: we sold 42 units.")
    assert checks.sourced_numbers("We sold 42 units.", {}, {"text": "", "messages": [{"content": "42 units"}]})
    assert not checks.sourced_numbers("We sold 43 units.", {"report": {"units": 42}})  # structured inputs too
    with pytest.raises(NotApplicable):
        checks.sourced_numbers("We sold 42 units.", {}, "")
    with pytest.raises(NotApplicable):  # the prompt names an input this example lacks
        checks.sourced_numbers("We sold 42 units.", {"title": "Q3"}, "Report: {report}", inputs=["report"])


def test_sourced_numbers_reads_a_number_inside_a_source_term() -> None:
    """ "q8h" gives 8, which a response writes out ("every 8 hours"); the response's own terms stay names."""
    note = {"note": "Ibuprofen 400 mg PO q8h PRN. No lifting > 10 lb x 2 wks."}
    assert checks.sourced_numbers("Take 400 mg every 8 hours. Lift nothing over 10 pounds for 2 weeks.", note)
    assert not checks.sourced_numbers("Take 400 mg every 6 hours.", note)
    assert checks.sourced_numbers("Take it with 5G on.", {"note": "nothing"})  # "5G" in a response is a name
    score = "Give the score in the form Rovers 2-1 United. Events: 12,Rovers,goal 80,Rovers,goal"
    assert checks.sourced_numbers("Rovers won 2-0.", {}, score)  # none of something needs no source


def test_verbatim_is_a_copy_of_the_source_whatever_the_case_spacing_or_quotes() -> None:
    source = "Honestly, it got  too expensive for what we used."
    assert checks.verbatim('"It got too Expensive"', source)
    assert checks.verbatim("“too expensive for what we used.”", source)
    assert not checks.verbatim("it was too expensive", source)
    assert not checks.verbatim("", source)


def test_json_value_in_reads_one_value_a_list_of_them_or_a_labelled_line() -> None:
    allowed = ["low", "medium", "high"]
    assert checks.json_value_in('{"Priority": "High"}', "priority", allowed)
    assert checks.json_value_in('{"priority": ["low", "high"]}', "priority", allowed)
    assert not checks.json_value_in('{"priority": ["low", "urgent"]}', "priority", allowed)
    assert not checks.json_value_in('{"priority": []}', "priority", allowed)
    assert not checks.json_value_in('{"severity": "low"}', "priority", allowed)
    assert checks.json_value_in("Priority: medium", "priority", allowed)


def test_links_are_web_addresses_bare_or_in_markdown() -> None:
    text = "See https://example.com/a?b=1, [docs](http://x.io/d) and www.acme.org. Email me at a@b.co."
    assert checks.count(text, "links") == 3
    assert checks.count("No address here, v1.2 and e.g. this.", "links") == 0
    # a bare domain, with or without a path, is a link a reader can follow; an e-mail's domain and a product's
    # dotted name are not
    assert checks.count("Need to move it? tredwell.co.uk/b/7H2K – Tredwell Tyres", "links") == 1
    assert checks.count("Details at example.com. Short: bit.ly/x", "links") == 2
    assert checks.count("Write to info@tredwell.co.uk. Built on ASP.NET and Node.js.", "links") == 0


@pytest.mark.parametrize(
    ("text", "inside"),
    [("7", True), ("Score: 7/10", True), ("Rating: 4.5 stars", True), ("I would rate it 11.", False),
     ("-3", False), ("No score.", False), ("```\nx = 5\n```\nScore: 12", False)],
)  # fmt: skip
def test_number_in_range_reads_the_first_number_stated(text: str, inside: bool) -> None:
    assert checks.number_in_range(text, 1, 10) is inside


def test_has_tag_finds_the_element_across_lines_in_any_case() -> None:
    assert checks.has_tag("Thinking...\n<ANSWER>\n42\n</answer>", "answer")
    assert checks.has_tag('<answer id="a">42</answer >', "answer")
    assert not checks.has_tag("<answer>42", "answer") and not checks.has_tag("<answers>42</answers>", "answer")


@pytest.mark.parametrize(
    ("text", "case"),
    [("all lower, see https://X.io #Tag @Bob", "lower"), ("ALL CAPS HERE!", "upper"), ("Mixed case", "mixed"),
     ("```\nCode = 1\n```\nfine", "lower"), ("123 !", "lower"), ("ÉTÉ CHAUD", "upper")],
)  # fmt: skip
def test_letter_case_reads_the_prose_not_code_links_or_tags(text: str, case: str) -> None:
    assert checks.letter_case(text) == case


def test_fill_reads_placeholders_as_the_prompt_does() -> None:
    from spade_lsp._prompts import PLACEHOLDER_PATTERN

    assert checks._PLACEHOLDER.pattern == PLACEHOLDER_PATTERN.pattern  # the sandbox's copy of the one syntax
    assert checks.fill("Hi {first_name}, from {{ team }}", {"first_name": "Ada", "team": "Acme"}) == "Hi Ada, from Acme"
    with pytest.raises(NotApplicable):
        checks.fill("Hi {first_name},", {})


@pytest.mark.parametrize(
    ("text", "bullets", "numbered"),
    [
        ("- one\n* two\n• three\n– four", 4, 0),
        ("・一つ目\n・二つ目\n● 三つ目", 3, 0),
        ("1. one\n2) two", 0, 2),
        ("１．第一\n2）第二\n3、第三", 0, 3),
        ("-5 degrees tonight\n2.5 inches of rain\n●", 0, 0),  # a sign, a decimal and a lone marker: no items
        ("Kit:\n\n- Boots\n\n- Gloves\n\n- Helmet", 3, 0),  # a loose list's last item is still an item
    ],
)
def test_list_items_are_counted_in_the_markers_each_language_uses(text: str, bullets: int, numbered: int) -> None:
    assert checks.count(text, "bullets") == bullets
    assert checks.count(text, "numbered_items") == numbered
    assert checks.count(text, "list_items") == bullets + numbered
    if bullets + numbered:
        assert len(checks.parts(text, "items")) == bullets + numbered
    else:  # no item: its lines are the parts, each whole (no sign or digit taken for a marker)
        assert checks.parts(text, "items") == text.splitlines()


def test_a_dash_that_signs_the_message_is_no_bullet() -> None:
    """ "Plain text only: no bullet points" of a note signed "- Tomasz, Alpine Ridge Ski School"."""
    signed = "Hi Priya,\n\nA strong day on the snow.\n\n- Tomasz, Alpine Ridge Ski School"
    assert checks.count(signed, "bullets") == checks.count(signed, "list_items") == 0
    assert checks.count("Hi Priya,\n\n- Boots\n- Gloves\n\n- Tomasz", "bullets") == 3  # a list: its last item


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1. First Headline\n2. Second One Here", ["First Headline", "Second One Here"]),
        (
            "First tweet here.\n\nSecond tweet,\nstill the second.",
            ["First tweet here.", "Second tweet,\nstill the second."],
        ),
        (
            "Ten Ways To Sleep Better\nWhy Sleep Matters More Than Ever\nThe Science Of Rest",
            ["Ten Ways To Sleep Better", "Why Sleep Matters More Than Ever", "The Science Of Rest"],
        ),
        ("One paragraph, one line.", ["One paragraph, one line."]),
        # a wrapped item goes on below it, a labelled line right below the list is a part of its own
        (
            "Themes:\n- Pay below\nmarket.\n- No route up.\nRetention lever: a clear route.\nFlags: None",
            ["Pay below market.", "No route up."],
        ),
        # between items, a labelled line goes on with the item above it
        (
            "1. Why this role?\nSuggested answer: growth.\n2. Why now?",
            ["Why this role? Suggested answer: growth.", "Why now?"],
        ),
    ],
)
def test_parts_are_the_items_else_the_paragraphs_else_the_lines(text: str, expected: list[str]) -> None:
    """ "each headline under 12 words": three headlines one per line are three parts, not one."""
    assert checks.parts(text, "items") == expected


@pytest.mark.parametrize(
    ("text", "sentences", "question"),
    [
        ("Notre produit est excellent. Voulez-vous l'essayer ?", 2, True),
        ("这个产品很好。您想试试吗？", 2, True),
        ("यह उत्पाद अच्छा है। क्या आप इसे आज़माना चाहेंगे?", 2, True),
        ("منتجنا رائع. هل تريد تجربته؟", 2, True),
        ("منتجنا رائع؟ إنه يوفر لك الوقت.", 2, False),
        ("D. Okoro scored twice. Dr. Tanaka watched, e.g. from the stand. It ended 2-1.", 3, False),  # no ends
        # a quotation is part of the sentence that quotes it; an ellipsis the sentence runs on after ends nothing
        ('In his words: "I stopped at the lights... and a van hit me. Not fast." He was alone.', 2, False),
        ('He said "Hi." Then he left. She wrote: “Thanks. See you?”', 3, True),
    ],
)
def test_sentences_and_questions_end_with_each_script_s_own_marks(text: str, sentences: int, question: bool) -> None:
    assert checks.count(text, "sentences") == sentences
    assert len(checks.parts(text, "sentences")) == sentences  # "each sentence under 20 words" sees the same ones
    assert checks.ends_with_question(text) is question


@pytest.mark.parametrize(
    ("text", "lines", "titled"),
    [
        ("Ten Ways to Sleep Better", None, True),  # minor words stay lowercase
        ("Stainless Steel Water Bottle, 750 ml, Cold for 24 Hours", None, True),  # a unit after a number
        ("Pre-Seasoned 12 Inch Cast Iron Skillet", None, True),
        ("Here are three headlines:\n1. **The Science of Rest**\n2. Why Sleep Matters", None, True),
        ("Über Alles in Wien", None, True),
        ("Ten ways to sleep better", None, False),
        ("the Best Way", None, False),  # a minor word may not open a title
        ("A Short Title\nthe body of the post, in sentence case.", 1, True),
        ("A Short Title\nthe body of the post, in sentence case.", None, False),
        ("", None, False),
    ],
)
def test_title_case(text: str, lines: int | None, titled: bool) -> None:
    assert checks.title_case(text, lines) is titled


def test_a_labelled_line_starts_its_section_on_that_line() -> None:
    """An answer format's "Title: <title>" puts the title on the label's own line."""
    text = "Title: Ten Ways to Sleep Better\nDescription: Sleep tips,\nin two lines.\n## Notes\nnone"
    assert checks.section(text, "title") == "Ten Ways to Sleep Better"
    assert checks.section(text, "description") == "Sleep tips,\nin two lines."
    assert checks.section("## Summary\nbody line\n## Next\nx", "summary") == "body line"


def test_a_one_line_part_labelled_is_its_line_and_a_capital_label_heads_the_fields_below_it() -> None:
    letter = "Subject: Chickenpox in Reception\n\nDear Parents,\nA case was confirmed.\n\nKey details:\n- Reply: no"
    assert checks.section(letter, "subject") == "Chickenpox in Reception"  # not the letter below it
    notice = (
        "SMS: Water off in Orchard Rise. Info: 0800 555 0143\nNOTICE:\nEmergency repair in Westmoor\n\n"
        "The main was damaged.\n\nStreets affected: Orchard Rise and Pippin Close.\n\nThank you."
    )
    assert checks.section(notice, "sms") == "Water off in Orchard Rise. Info: 0800 555 0143"
    assert checks.section(notice, "notice").endswith("Streets affected: Orchard Rise and Pippin Close.\n\nThank you.")
    assert checks.section("Summary:\nshort\nNext steps: call\nmore", "summary") == "short"  # same rank: it ends


def test_a_section_holds_the_titles_ranked_below_its_own() -> None:
    """A report's "# Negotiation Strategy" with "## Tactics" or "**Parties:**" under it is one section, up to the
    next title of its rank; a title that is the one asked for wins over one that only contains it."""
    report = (
        "# Negotiation Strategy Report\nintro\n# Negotiation Strategy\n## Tactics\n- anchor high\n"
        "**Parties:**\n- us\nNote: keep it short\n# Market Insights\nprices rise"
    )
    assert checks.section(report, "negotiation strategy") == (
        "## Tactics\n- anchor high\n**Parties:**\n- us\nNote: keep it short"
    )
    assert checks.section(report, "tactics") == "- anchor high\n**Parties:**\n- us\nNote: keep it short"
    assert checks.section(report, "market insights") == "prices rise"
    assert checks.section("**Impact**\nslow pages\n**Fix**\ncache", "impact") == "slow pages"
    assert checks.section("## Risks\nnone", "opportunities") == ""


def test_the_body_without_a_section_of_that_name_is_the_response_inside_its_title_and_sign_off() -> None:
    """ "First line: the name in capitals. Then the body, exactly 3 sentences": the title line is no sentence of
    the body; in a letter the salutation and the sign-off block are not either. A section named "Body" wins."""
    card = "RED PANDA\nRed pandas live in forests. Ruby eats bamboo! Their tails keep them warm."
    assert checks.section(card, "body") == "Red pandas live in forests. Ruby eats bamboo! Their tails keep them warm."
    assert checks.count(checks.section(card, "body"), "sentences") == 3
    letter = "Dear Ms. Patel,\n\nWe are sorry. A new shade ships today.\n\nKind regards,\nThe Lumen Team"
    assert checks.section(letter, "body") == "We are sorry. A new shade ships today."
    assert (
        checks.section("Hello! Thanks for writing. We fixed it.", "body") == "Hello! Thanks for writing. We fixed it."
    )
    assert checks.section("## Body\nthe text\n## Notes\nx", "body") == "the text"
    assert checks.section(card, "notes") == ""


def test_a_line_that_is_the_title_itself_is_its_section() -> None:
    """'Include a section titled "When to call the doctor"' is met by that line alone over the warning signs;
    a sentence that only contains the words is no title."""
    note = "Your medicines:\n- Amoxicillin 500 mg\n\nWhen to call the doctor\n- Chest pain\n- Fever over 39 C"
    assert checks.has_heading(note, "When to call the doctor")
    assert checks.section(note, "when to call the doctor") == "- Chest pain\n- Fever over 39 C"
    prose = "Rest at home. Know when to call the doctor if the pain gets worse."
    assert not checks.has_heading(prose, "When to call the doctor")
    assert checks.section(prose, "when to call the doctor") == ""


@pytest.mark.parametrize(
    ("text", "ends"),
    [
        ("Warm-up: jacks - 1 x 40\nSquats - 3 x 15\nCool-down: stretch - 1 x 60 seconds", True),
        ("Squats - 3 x 15\nLunges - 3 x 12\n\nRemember to breathe deeply and stop if anything hurts.", False),
        ("One paragraph of prose, and nothing that reads as a list at all.", False),
        (
            "A first long line of prose that goes on and on well past what any list item would hold here.\nThen more.",
            False,
        ),
    ],
)
def test_a_list_of_plain_lines_ends_the_response_or_not(text: str, ends: bool) -> None:
    assert checks.ends_with_list(text) is ends


@pytest.mark.parametrize(
    ("text", "markdown"),
    [
        ("| Charge | Amount |\n| --- | --- |\n| Standing charge | £9.80 |", True),
        ("|:---|---:|", True),
        ("## Notes\nplain", True),
        ("Plain prose with a | pipe and a dash - here.", False),
    ],
)
def test_is_markdown_reads_a_table(text: str, markdown: bool) -> None:
    assert checks.is_markdown(text) is markdown


def test_links_kept_needs_every_input_link_as_written() -> None:
    example = {"draft": "See https://example.org/a, or www.acme.org."}
    assert checks.links_kept("Go to https://example.org/a or www.acme.org today.", example)
    assert not checks.links_kept("Go to https://example.org/b or www.acme.org today.", example)
    assert checks.links_kept("No links at all.", {"draft": "none here"})
    with pytest.raises(NotApplicable):
        checks.links_kept("x", {}, inputs=["draft"])


def test_a_tag_is_a_section() -> None:
    assert checks.section("<summary>Rex is well.</summary>\n<tags>dog</tags>", "summary") == "Rex is well."
    assert checks.section("Summary: plain", "summary") == "plain"


@pytest.mark.parametrize(
    ("text", "only"),
    [
        ("1. Send the pack\n2. Collect the W-9\n   (signed)\n3. Book the call", True),
        ("- [Priya] ship it\n- [Team] review", True),
        ("Here is your checklist:\n1. Send the pack\n2. Collect the W-9", False),
        ("1. Send the pack\n2. Collect the W-9\nLet me know if you need more!", False),
        ("", False),
    ],
)
def test_only_list(text: str, only: bool) -> None:
    assert checks.only_list(text) is only


def test_bold_spans_and_headings_without_labelled_lines() -> None:
    assert checks.count("- **Grace** shipped it and __Omar__ helped", "bold") == 2
    assert checks.count("no ** bold here ** at all", "bold") == 0
    runbook = "Trigger: the error rate is high.\n\n1. **Check pods**: confirm they run."
    assert checks.count(runbook, "headings") == 0  # a "Label: text" line is a labelled line
    assert checks.count("Issue:\ndouble charge\n\n## Timeline\n03 Mar", "headings") == 2
    handover = "SAFETY / SECURITY\n- Bag at gate 12 cleared.\n\nAIRCRAFT STATUS:\n- G-NWKD on stand 41.\n\nTHANKS\n"
    assert checks.headings(handover) == ["aircraft status", "safety security"]  # capitals over lines; not a last word
    assert checks.count("We landed at 09:10.\nALL TIMES UTC\n- one", "headings") == 0  # capitals mid-paragraph are text


def test_only_the_list_with_the_last_line_the_prompt_asks_for() -> None:
    listed = "- Sam cut the release candidate.\n- Jin is fixing the crash.\nBLOCKERS: none"
    assert checks.only_list(listed, "BLOCKERS:")
    assert not checks.only_list(listed)
    assert not checks.only_list("Here's the summary:\n" + listed, "BLOCKERS:")
    assert not checks.only_list("BLOCKERS: none", "BLOCKERS:")  # the answer line alone is no list


def test_the_title_without_a_section_of_that_name_is_the_first_line() -> None:
    text = "## Add retry limit to the dispatcher\n\n### Summary\nRetries never stopped."
    assert checks.section(text, "title") == "Add retry limit to the dispatcher"
    assert checks.section("", "title") == ""


def test_a_numbered_line_or_paragraph_without_a_section_of_that_name_is_counted_from_the_top() -> None:
    text = "Ada Lowe explains tide tables.\nShe built one.\n\n\nTopics:\n- harmonics\n\nLinks:\n- none"
    assert checks.section(text, "line 2") == "She built one."
    assert checks.section(text, "paragraph 1") == "Ada Lowe explains tide tables.\nShe built one."
    assert checks.section(text, "paragraph 3") == "Links:\n- none"
    assert checks.section(text, "paragraph 4") == checks.section(text, "paragraph 0") == ""


def test_only_the_tagged_parts() -> None:
    tagged = "<thinking>\n12 days since delivery.\n</thinking>\n<decision>ELIGIBLE</decision>"
    assert checks.only_tags(tagged)
    assert not checks.only_tags("Here is my assessment.\n\n" + tagged)
    assert not checks.only_tags(tagged + "\nLet me know if you need more.")
    assert not checks.only_tags("no tags at all")
    assert not checks.only_tags("<decision>ELIGIBLE")  # a tag never closed
    assert checks.only_tags("<answer>a <b>bold</b> word</answer>")  # nested tags are inside the outer one


def test_codes_kept_needs_every_format_code_placeholder_and_tag_of_the_inputs() -> None:
    example = {"source_text": 'Hi %1$s, you saved %2$s and 50% more! <a href="https://x.io/p">See</a> {name}'}
    assert checks.codes_kept(
        'Hola %1$s, ahorraste %2$s y un 50 % más. <a href="https://x.io/p">Ver</a> {name}', example
    )
    assert not checks.codes_kept(
        'Hola %s, ahorraste %s. <a href="https://x.io/p">Ver</a> {name}', example
    )  # renumbered
    assert not checks.codes_kept("Hola %1$s, ahorraste %2$s. Ver {name}", example)  # the tags dropped
    assert not checks.codes_kept('Hola %1$s, %2$s. <a href="https://x.io/p">Ver</a> {nombre}', example)  # translated
    assert checks.codes_kept("Sin códigos.", {"source_text": "A 50% discount, no codes."})  # a percent is no code
    with pytest.raises(NotApplicable):
        checks.codes_kept("x", {}, inputs=["source_text"])


def test_terms_kept_asks_only_for_the_terms_its_source_uses() -> None:
    terms = ["Pocketly", "Pocketly Plus", "Spending Pots", "Spending Pot"]
    example = {"source_text": "Upgrade to Pocketly Plus and get unlimited Spending Pots."}
    assert checks.terms_kept("Passez à Pocketly Plus et des Spending Pots illimités.", example, terms)
    assert not checks.terms_kept("Passez à Pocketly Plus et des cagnottes illimitées.", example, terms)
    assert not checks.terms_kept("Passez à Pocketly et des Spending Pots.", example, terms)  # "Plus" lost
    assert checks.terms_kept("Fixe un budget.", {"source_text": "Set a budget."}, terms)  # none used: nothing asked
    with pytest.raises(NotApplicable):
        checks.terms_kept("x", {}, terms, inputs=["source_text"])


def test_keeps_private_finds_what_only_the_private_input_says() -> None:
    example = {
        "case_thread": "Buyer: nothing arrived. Seller: tracking shows it was delivered on the 9th.",
        "seller_metrics": "Account age 6 years | positive feedback 99.2% | 3,412 orders in the last 12 months",
    }
    fields = ["seller_metrics"]
    assert checks.keeps_private(
        "Tracking shows delivery on the 9th; the buyer reports nothing arrived.", example, fields
    )
    assert not checks.keeps_private("The seller has 99.2% positive feedback.", example, fields)  # its figure
    assert not checks.keeps_private("A seller with 3,412 orders in the last 12 months.", example, fields)
    assert checks.keeps_private("An established seller.", example, fields)  # the gist in other words: a model's call
    with pytest.raises(NotApplicable):
        checks.keeps_private("x", {"case_thread": "..."}, fields)


def test_keeps_private_reads_the_lines_the_inputs_mark() -> None:
    minutes = (
        "1. Boathouse: the slipway will be closed 17-28 March.\n"
        "3. CONFIDENTIAL: Treasurer reported three members more than 60 days in arrears; Chair to write to them.\n"
        "4. Regatta: Spring Head on 10 May."
    )
    example = {"minutes": minutes}
    assert checks.keeps_private("- Book the Spring Head on 10 May.\n- Avoid the slipway 17-28 March.", example,
                                markers=["CONFIDENTIAL"])  # fmt: skip
    assert not checks.keeps_private(
        "- Pay up: members 60 days in arrears get a letter.", example, markers=["CONFIDENTIAL"]
    )
    reports = (
        "Comments to the author:\nPlease report variance over several seeds.\n"
        "Confidential comments to the editor:\n"
        "The evaluation set in Table 2 looks identical to the one in their 2023 paper."
        "\n\nReviewer 2\nThe evaluation set in Table 2 is small."
    )
    heading = ["Confidential comments to the editor"]
    assert checks.keeps_private("Please report variance over several seeds.", {"reports": reports}, markers=heading)
    assert not checks.keeps_private("It looks identical to the one in their 2023 paper.", {"reports": reports},
                                    markers=heading)  # fmt: skip
    # what a public part says too is no leak: the second reviewer's words after the blank line
    assert checks.keeps_private("The evaluation set in Table 2 is small.", {"reports": reports}, markers=heading)
    assert checks.keeps_private("Anything.", {"minutes": "Nothing marked here."}, markers=["CONFIDENTIAL"])


def test_sourced_codes_holds_identifiers_links_and_timestamps_to_the_source() -> None:
    example = {
        "log": "Permit PTW-121 open; see https://example.org/permits/121. Pump P-7 tripped at 14:05:30.",
    }
    assert checks.sourced_codes("PTW-121 is open (https://example.org/permits/121), P-7 tripped 14:05:30.", example)
    assert not checks.sourced_codes("PTW-122 is open.", example, kinds=["ids"])  # coined
    assert not checks.sourced_codes("See https://example.org/permits.", example, kinds=["links"])
    assert not checks.sourced_codes("Tripped at 14:06:00.", example, kinds=["timestamps"])
    assert checks.sourced_codes("PTW-122 is open.", example, kinds=["links"])  # only the kinds asked for
    assert checks.sourced_codes("Back by 4pm on the 3rd, in 2 days.", example, kinds=["ids"])  # no identifiers
    assert checks.sourced_codes("```\nPTW-999\n```", example)  # code, not a reference
    with pytest.raises(NotApplicable):
        checks.sourced_codes("x", {}, inputs=["log"])


def test_a_key_value_list_is_a_list() -> None:
    record = (
        "Turbine: WTG-07\nAction: replaced the cracked yaw encoder coupling and recalibrated the encoder against the"
        " met mast, then watched it for an hour\nParts: none"
    )
    assert checks.only_list(record)
    assert checks.ends_with_list(record)  # its lines are long, but each is a key and its value
    assert not checks.only_list("Here is the extracted data:\n" + record)
    assert not checks.ends_with_list(record + "\n\nLet me know if anything is missing.")


def test_an_unmarked_titles_section_ends_at_the_next_unmarked_title() -> None:
    notes = "Summary\nWe met. We decided.\n\nAction items\n- [Ana] Ship it."
    assert checks.section(notes, "Summary") == "We met. We decided.\n"
    assert checks.section(notes, "Action items") == "- [Ana] Ship it."
    prose = "Summary\nWe met.\n\nIt went well\nand we left."  # a line with its sentence running on is no title
    assert checks.section(prose, "Summary") == "We met.\n\nIt went well\nand we left."


def test_quotes_from_needs_a_quotation_copied_whole() -> None:
    statement = "I wanted to film the quiet after the factory closed. Nobody in the village talks about it."
    assert checks.quotes_from('The director says: "Nobody in the village talks about it."', statement)
    assert checks.quotes_from("In her words, “I wanted to film the quiet after the factory closed”.", statement)
    assert not checks.quotes_from('The director says: "Nobody in the whole village talks about it."', statement)
    assert not checks.quotes_from("Nobody in the village talks about it.", statement)  # no quotation marks


def test_quotes_verbatim_needs_every_quotation_copied_from_the_inputs() -> None:
    quotes = {"quotes": 'Ada Obi, CEO: "We built this for the families who asked us. It took two years."'}
    assert checks.quotes_verbatim(
        '“We built this for the families who asked us,” said Obi. "It took two years."', quotes
    )
    assert checks.quotes_verbatim('Obi launched "First Account" today.', quotes)  # a name, no quotation
    assert not checks.quotes_verbatim('"We built it for families," said Obi.', quotes)
    assert not checks.quotes_verbatim(
        '"We built this for the families who asked us." "A great day for us all."', quotes
    )
    with pytest.raises(NotApplicable):
        checks.quotes_verbatim('"We built this for the families."', {})
    with pytest.raises(NotApplicable):  # the prompt names an input this example lacks
        checks.quotes_verbatim('"We built this for the families."', quotes, inputs=["fact_sheet"])


def test_json_values_from_reads_every_value_of_the_key_against_the_input() -> None:
    dates = "2024-11-09, 2024-11-23, 2024-12-07"
    rows = '[{"date": "2024-11-09", "role": null}, {"date": "2024-12-07", "role": "gate"}]'
    assert checks.json_values_from(rows, "date", dates)
    assert checks.json_values_from(rows, "role", "gate, tea hut")  # null is no value
    assert not checks.json_values_from('[{"date": "2024-11-30"}]', "date", dates)
    assert not checks.json_values_from('{"roles": {"role": "referee"}}', "role", "gate, tea hut")  # at any depth
    assert not checks.json_values_from('{"date": "2024-11"}', "date", dates)  # a whole value, not a piece of one
    with pytest.raises(NotApplicable):
        checks.json_values_from("Sure! Gareth can do the 9th.", "date", dates)


def test_inputs_text_is_every_input_value_and_needs_one() -> None:
    assert checks.inputs_text({"title": "Air Jordan 1", "description": "Worn twice"}) == "Air Jordan 1\nWorn twice"
    with pytest.raises(NotApplicable):
        checks.inputs_text({})


def test_sourced_numbers_reads_months_and_clock_times_of_the_source() -> None:
    source = {"notes": "Wednesday 14 May 2025, 1-3.30pm"}
    assert checks.sourced_numbers('{"date": "2025-05-14", "time": "1pm to 3:30pm"}', source)
    assert not checks.sourced_numbers('{"date": "2025-06-14"}', source)  # June is no month the source names
    assert not checks.sourced_numbers("on 2025-05-02", {"notes": "you may come on 2 June 2025"})  # "may", a verb


def test_sourced_numbers_reads_other_forms_of_what_the_source_gives() -> None:
    # a decimal comma, as an invoice from much of Europe prints its amounts
    assert checks.sourced_numbers('{"total": 7420.00}', {"invoice": "Gesamt: 7.420,00 EUR"})
    assert not checks.sourced_numbers('{"total": 7240.00}', {"invoice": "Gesamt: 7.420,00 EUR"})
    # "1 till 4" in the afternoon, written on a 24-hour clock
    notes = {"note": "Two sessions: 9 till 12 and 1 till 4. Morning max 40 people."}
    assert checks.sourced_numbers('start: "13:00"\nend: "16:00"\ncapacity: 40', notes)
    assert not checks.sourced_numbers('start: "13:00"\nend: "17:00"', notes)
    # a relative day counted from the date the source writes
    email = {"received": "Thu 14 Mar 2024 09:12", "body": "Goods will be ready for collection next Tuesday."}
    assert checks.sourced_numbers('{"pickup_date": "2024-03-19"}', email)
    assert not checks.sourced_numbers('{"pickup_date": "2024-03-21"}', email)


def test_sourced_numbers_takes_a_total_of_a_table_column_where_the_prompt_asks_for_totals() -> None:
    items = {
        "items": "Category | Item | Amount\nTravel | 6 trips x 3 yrs | $8,100\nTravel | 1 meeting/yr | $6,600\n"
        "Other | Reagents | $22,500"
    }
    prompt = "End each section with a line 'Section total: $X', where X is the sum of its items."
    assert checks.sourced_numbers("Travel: $8,100 and $6,600.\nSection total: $14,700", items, prompt)
    assert checks.sourced_numbers("Total: $37,200", items, prompt)  # the whole column
    assert not checks.sourced_numbers("Section total: $14,600", items, prompt)
    assert not checks.sourced_numbers("Section total: $30,600", items, prompt)  # rows 1 and 3 are not a run
    assert not checks.sourced_numbers("Section total: $14,700", items, "List the items.")  # no total asked for
    # numbers of running text are never summed: "3 gifts (£25, £50, £50)" holds no £125
    gifts = {"previous": "3 gifts since 2022 (£25, £50, £50)", "gift": "100.00"}
    assert not checks.sourced_numbers("It is worth £125 to us.", gifts, "Thank them for the total of their gifts.")


def test_sourced_names_passes_only_names_its_source_gives() -> None:
    notes = {"notes": "Tasting notes: Bramley apple, oak, honey. Brewed by Hollow Tree at the Fenwick site."}
    assert checks.sourced_names("Sharp Bramleys and oak from Hollow Tree, brewed at Fenwick.", notes)
    assert not checks.sourced_names("A crisp apple note, winner of the Brewers Cup.", notes)  # an award it invented
    assert not checks.sourced_names("Aged in oak, like a Vitamix of flavour.", notes)
    # a sentence's first word, a headline, a greeting and calendar words are no names
    assert checks.sourced_names("APPLE ALE Tasting Notes\nDear reader,\nHoney and oak. Ready on Friday.", notes)
    assert checks.sourced_names("- [ ] Taste the oak\n| Oak | honey |", notes)
    with pytest.raises(NotApplicable):  # German writes every noun with a capital
        checks.sourced_names("Vielen Dank für Ihre Nachricht, wir freuen uns auf Ihren Besuch am Wochenende.", notes)
    with pytest.raises(NotApplicable):
        checks.sourced_names("Oak.", {})


def test_sourced_names_reads_labels_and_emphasis_as_no_names() -> None:
    brief = {"supplier": "Hollow Tree Brewing supplies our oak casks; we spend a lot with them each year."}
    # a line's lead-in label of common nouns, a sentence after a bold label, an emphasised sentence's first word
    # and the words an acronym a word away stands for claim nothing
    assert checks.sourced_names("- Volume Discounts: we spend a lot with Hollow Tree.", brief)
    assert checks.sourced_names("2. Financial Stability: the casks come from Hollow Tree.", brief)
    assert checks.sourced_names("**Outcomes:** Successful talks with Hollow Tree over the casks.", brief)
    assert checks.sourced_names("*Again, note that the oak casks come from Hollow Tree.*", brief)
    assert checks.sourced_names("A SWOT analysis (Strengths, Weaknesses, Opportunities, Threats) of the casks.", brief)
    # a lead-in that is a person's name is a claim like any other
    assert not checks.sourced_names("- Tom Baker: orders the oak casks from Hollow Tree.", brief)
    assert not checks.sourced_names("- Volume Discounts: ask Tom Baker at Hollow Tree about the casks.", brief)


def test_a_bold_labels_section_is_its_value_on_the_line() -> None:
    report = "**Date:** 3 December 2024\n**Severity:** Medium\n**What happened:** A pipe burst.\nNo one was hurt."
    assert checks.section(report, "Severity") == "Medium"
    assert checks.section(report, "What happened") == "A pipe burst.\nNo one was hurt."


def test_an_email_opens_after_its_subject_line_and_counts_phones_clock_times_and_first_person() -> None:
    email = "Subject: Recital moved\n\nDear Ms Ode,\n\nWe are sorry."
    assert checks.starts_with(email, "Dear Ms Ode,") and checks.starts_with(email, "Subject:")
    assert not checks.starts_with("Subject: Recital moved\n\nHello,\n\nDear Ms Ode", "Dear Ms Ode,")
    assert checks.count("Call 0800 123 4567 or (020) 7946 0958.", "phone_numbers") == 2
    assert checks.count("On 2025-06-14 at 23:30, 1 250 000 points, ref 4471.", "phone_numbers") == 0
    assert checks.count("Write to ana.lima@example.com or ops+night@air.co.uk.", "emails") == 2
    assert checks.count("Tag @data-platform, see v2.0 of docs@ home.", "emails") == 0
    assert checks.count("From 1am to 4:30 a.m., then 6 PM.", "am_pm_times") == 3
    assert checks.count("From 01:00 to 04:30; I am here.", "am_pm_times") == 0
    assert checks.count("Fixed the timezone (d4e5f6a); see 8f7e6d5c9b and a1b2c3d4e5f6a7b8c9d0.", "commit_hashes") == 3
    assert checks.count("1234567 rows, a deadbeef cafe, v1.2.3, #1234, 2024-01-01, ISO-8601.", "commit_hashes") == 0
    assert checks.count('She said "I love it" and we cheered.', "first_person") == 1


def test_a_response_wrapped_whole_in_a_fence_is_read_as_its_text() -> None:
    text = "The boiler was serviced today and it now works well. We tested the flame."
    assert checks.reading_ease(f"```\n{text}\n```") == checks.reading_ease(text)
    assert checks.reading_ease(f"{text}\n\n```python\nx = compute_the_interpolated_coefficients()\n```") == (
        checks.reading_ease(text)
    )


def test_a_line_opening_greetings_sign_offs_and_amounts_of_money() -> None:
    layout = "1. `^` - Start.\n\nMatches: `AB1`\n**Rejects:** `ab`"
    assert checks.has_line_starting(layout, "Matches:") and checks.has_line_starting(layout, "Rejects:")
    assert not checks.has_line_starting(layout, "Verdict:")
    assert checks.has_greeting("Hi! Great question. Your regex ...")
    assert checks.has_greeting("Subject: Your order\n\nDear Ms Shah,\nThanks ...")
    assert not checks.has_greeting("Highlights of the week:\n- ...")
    assert checks.has_sign_off("The fix is below.\n\nHope this helps, shout if anything is unclear!")
    assert checks.has_sign_off("See you then.\n\nKind regards,\nAna")
    assert not checks.has_sign_off("Verdict: yes, it does what you intend.")
    assert checks.count("At just £6.99, or $40 and 25 EUR; 1,200 euros.", "prices") == 4
    assert checks.count("Call 0800 111 999 on 14/06/2025 at 13:30 for 2 kg.", "prices") == 0


def test_a_single_letter_phrase_is_itself_not_every_word_boundary() -> None:
    assert not checks.contains_phrase("KESSELBAHN: CLOSED - REOPENS 10:45", "a")
    assert checks.contains_phrase("Plan X is ready.", "X") and not checks.contains_phrase("Plan Y.", "X")


def test_a_rule_for_one_value_of_an_input_applies_to_that_value_alone() -> None:
    assert checks.applies_when({"platform": "X/Twitter"}, "platform", "X/Twitter")
    assert checks.applies_when({"platform": "x"}, "platform", "X/Twitter")  # one of its alternatives
    assert checks.applies_when({"inputs": {"tier": "Gold member"}}, "tier", "Gold")
    with pytest.raises(checks.NotApplicable):
        checks.applies_when({"platform": "Instagram"}, "platform", "X/Twitter")
    with pytest.raises(checks.NotApplicable):
        checks.applies_when({}, "platform", "X/Twitter")  # no input to read: no verdict either


@pytest.mark.parametrize(
    ("example", "text", "written"),
    [
        ("PLAT-123", "Fixed in PLAT-45 last week.", True),  # any key, not the example's
        ("PLAT-123", "Refs: AB-1.", True),
        ("PLAT-123", "The platform team fixed it.", False),
        ("PLAT-123", "see plat-45", False),  # a key is written in capitals
        ("10:40", "Meet at 9:05 tomorrow.", True),
        ("10:40", "Meet at 10:40:22.", True),
        ("10:40", "Meet at twenty to eleven.", False),
        ("#482", "Merged in #12.", True),
        ("#482", "# Heading\nC#4 is a note.", False),  # a heading and a word's hash are no references
        ("@name", "Thanks @Jane_Doe!", True),
        ("@name", "Write to jane@example.com.", False),  # an e-mail address is no handle
        ("@name", "```\n@decorator\n```\nDone.", False),  # code is code
    ],
)
def test_has_form_of_finds_any_token_of_the_examples_form(example: str, text: str, written: bool) -> None:
    assert checks.has_form_of(text, example) is written


def test_ids_kept_wants_every_identifier_the_named_inputs_give_whole() -> None:
    example = {"batch_codes": "L24112, best before 30/04/2025; L24118", "hazard": "May contain peanuts (PN-1)."}
    assert checks.ids_kept("Batches L24112 and L24118 are affected.", example, ["batch_codes"])
    assert not checks.ids_kept("Batch L24112 is affected.", example, ["batch_codes"])  # one left out
    assert not checks.ids_kept("Batches L24112 and L2411 are affected.", example, ["batch_codes"])  # not whole
    assert checks.ids_kept("Nothing to list.", {"batch_codes": "best before 30/04/2025"}, ["batch_codes"])
    with pytest.raises(NotApplicable):
        checks.ids_kept("x", {"hazard": "..."}, ["batch_codes"])


def test_greets_by_name_reads_the_opening_after_a_subject_line() -> None:
    assert checks.greets_by_name(
        "Subject: Your order\n\nHi Sarah,\nYour parcel is on its way.", "Sarah Jones", first_name=True
    )
    assert checks.greets_by_name("Dear Sarah Jones, your parcel is on its way.", "Sarah Jones")
    assert not checks.greets_by_name("Hi there,\nYour parcel is on its way.\nThanks, Sarah", "Sarah", first_name=True)
    assert not checks.greets_by_name("Dear Sarah, your parcel is on its way.", "Sarah Jones")  # the full name asked
    assert checks.greets_by_name("Hello!", "")  # no name given: nothing to greet by


@pytest.mark.parametrize(
    ("notes", "named"),
    [
        ("approx 07:15 guest Jonas Weber (room 4) slipped on the step", {"Jonas Weber"}),
        ("10:40 kid (Ellie Thomson, ~7) slipped by the flumes", {"Ellie Thomson"}),
        ("spoke to the scaffold chargehand Liam who says the board got kicked", {"Liam"}),
        ("Caller: Hello, it's Mrs Patel. My late husband's keys", {"Patel"}),
        ("Would 100% come back.\n\n- Seán M.", {"Seán"}),
        ("[14:04 UTC] @dana.k ack'd, looking", {"dana.k", "Dana"}),
        ("Anyway Priya pushed a bad config at 09:10", {"Priya"}),
        ("Said her manager (Dave Kirby) was supportive throughout.", {"Dave Kirby"}),
        ("relationship with new manager (Gareth Lyle, joined Jan) broke down", {"Gareth Lyle"}),
        ("Sandra counted M2 this morning. She thinks the shortfall is from returns.", {"Sandra"}),
    ],
)
def test_people_are_found_by_how_notes_name_them(notes: str, named: set[str]) -> None:
    assert checks._people_named(notes) == named


@pytest.mark.parametrize(
    "notes",
    [
        "Millbrook Leisure Pool, Lincoln Gym and Chapter One were busy.",  # places, not people
        "Guest Experience Manager\nGeneral Manager",  # job titles
        "The board fell. He said it was loose.",  # a sentence's first word, a pronoun
        "Stock counted at 06:00. Variance posted.",  # a past verb after a sentence's first word, no pronoun after
        "Her manager (HR) signed off.",  # an acronym in brackets: no name of a person's form
    ],
)
def test_capitalised_words_are_no_people_without_a_sign_of_one(notes: str) -> None:
    assert checks._people_named(notes) == set()


def test_names_no_one_keeps_out_whom_the_notes_name_but_not_whom_the_prompt_may_name() -> None:
    example = {"notes": "07:15 guest Jonas Weber (room 4) slipped; manager Aoife checked", "manager": "Aoife Kearney"}
    assert checks.names_no_one("A guest slipped on the step at 07:15.", example, allowed=["manager"])
    assert not checks.names_no_one("Jonas Weber slipped on the step.", example, allowed=["manager"])
    assert not checks.names_no_one("Mr Weber slipped on the step.", example, allowed=["manager"])  # a word of it
    assert checks.names_no_one("A guest slipped. Aoife Kearney", example, allowed=["manager"])  # the signer's
    with pytest.raises(NotApplicable):  # notes that name no one: the rule says nothing here
        checks.names_no_one("A guest slipped.", {"notes": "a guest slipped on the step"})
    # a name an allowed input holds is allowed wherever the notes write it too
    notes = {"notes": "guest Jonas Weber and guest Ana Lima", "host": "Jonas Weber"}
    assert checks.names_no_one("Jonas Weber welcomed a guest.", notes, allowed=["host"])
    assert not checks.names_no_one("Jonas Weber welcomed Ana Lima.", notes, allowed=["host"])


def test_names_no_one_reads_a_message_signed_at_the_end_of_its_last_sentence() -> None:
    signed = {"report": "Slabs lifted outside the Co-op. Call me on 01632 960781 if you need more. James Whitlow"}
    assert not checks.names_no_one("Reported by James Whitlow.", signed)
    assert not checks.names_no_one("Mr Whitlow reported lifted slabs.", signed)  # a word of the name
    assert checks.names_no_one("Lifted slabs outside the Co-op.", signed)
    for unsigned in (  # a place ending the line, a sign-off, a line written in no one's voice
        "Pothole by the bus stop. I saw it this morning. Station Road",
        "Please fix the pothole. I hope you can help. Kind Regards",
        "Pothole by the bus stop. Reported Friday. Station Parade",
    ):
        with pytest.raises(NotApplicable):
            checks.names_no_one("A pothole on Station Road.", {"report": unsigned})


def test_names_no_one_reads_who_deployed_or_approved_a_change() -> None:
    timeline = {"timeline": "11:00 search down; 11:05 deploy by Mark broke the index; PR approved by Priya Shah"}
    assert not checks.names_no_one("Mark deployed an untested change.", timeline)
    assert not checks.names_no_one("The change was approved by Ms Shah.", timeline)
    assert checks.names_no_one("An untested change broke the search index.", timeline)
    with pytest.raises(NotApplicable):  # tools report and make things: no one is named
        checks.names_no_one("Redis ran out of memory.", {"timeline": "alert reported by Datadog; made by Redis"})


def test_labelled_when_mentioned_asks_for_the_label_only_where_the_inputs_mention_a_case() -> None:
    keywords = ["heavy bleeding", "shortness of breath"]
    urgent = {"message": "I've had heavy bleeding since this morning. Can I move my blood test?"}
    assert checks.labelled_when_mentioned("Label: URGENT_CLINICAL", urgent, keywords, "URGENT_CLINICAL", ["message"])
    assert not checks.labelled_when_mentioned("Label: RESCHEDULE", urgent, keywords, "URGENT_CLINICAL", ["message"])
    assert not checks.labelled_when_mentioned("Label: urgent_clinical", urgent, keywords, "URGENT_CLINICAL")
    with pytest.raises(NotApplicable):  # the rule says nothing about a message that mentions none
        checks.labelled_when_mentioned("Label: BILLING", {"message": "How much is it?"}, keywords, "URGENT_CLINICAL")
    assert checks.labelled_when_mentioned("Tone: mixed.", {"review": "praise"}, ["praise"], "mixed")  # any case


@pytest.mark.parametrize(
    ("response", "given"),
    [
        ("DECISION: REFER\nReason: the logbook is missing.", True),
        ("**Decision:** approve - all documents attached", True),  # any case, markdown aside
        ("- Decision: <REJECT>", True),
        ("DECISION: APPROVED", False),  # not one of the values
        ("DECISION: MAYBE", False),
        ("The permit is approved.", False),  # no labelled line: the layout asks for one
    ],
)
def test_labelled_value_in_reads_the_labelled_line(response: str, given: bool) -> None:
    assert checks.labelled_value_in(response, "DECISION", ["APPROVE", "REJECT", "REFER"]) is given


def test_applies_when_number_reads_the_inputs_first_number() -> None:
    assert checks.applies_when_number({"rating": "2 stars"}, "rating", "<=", 3)
    assert checks.applies_when_number({"position": 21}, "position", ">", 20)
    for example, op, bound in [({"rating": "5"}, "<=", 3), ({"position": "20"}, ">", 20), ({"rating": "n/a"}, "<", 3)]:
        with pytest.raises(NotApplicable):  # the rule is for other examples, or the input gives no number
            checks.applies_when_number(example, next(iter(example)), op, bound)


def test_a_message_signed_after_its_last_sentence_on_the_same_line_names_its_writer() -> None:
    message = "Readings jump around since the meter was replaced. Can someone look at it? - Gary Pfeiffer"
    example = {"inputs": {"message": message}}
    assert checks.names_no_one("The customer reports erratic readings since a meter swap.", example)
    assert not checks.names_no_one("Gary Pfeiffer reports erratic readings.", example)
    assert not checks.names_no_one("Mr Pfeiffer reports erratic readings.", example)


def test_an_unindented_line_after_a_blank_one_ends_the_list_its_items_are_counted_in() -> None:
    reply = "1. `^` - Start of the string.\n2. `$` - End of the string.\n\nMatches: `ab`, `cd`\nVerdict: Yes, it works."
    assert checks.parts(reply) == ["`^` - Start of the string.", "`$` - End of the string."]
    loose = "- Bring a red torch.\n\n  White lights are not allowed.\n- Park by the hedge.\nwrapped on."
    assert checks.parts(loose) == ["Bring a red torch. White lights are not allowed.", "Park by the hedge. wrapped on."]


@pytest.mark.parametrize(
    ("line", "form", "numbers", "filled"),
    [
        ("Score: 7/10", "Score: N/10", "N", True),
        ("score : 7 / 10", "Score: N/10", "N", True),  # spacing and case are no part of the form
        ("Score: 6.5/10", "Score: N/10", "N", False),  # a whole number where the sentence says so
        ("Score: 6.5/10", "Score: N/10", "", True),
        ("Score: 7/10 (good)", "Score: N/10", "N", False),  # exactly the form: nothing after it
        ("Use of evidence: 2/3 - no source", "<criterion>: <points>/<max> - <reason>", "", True),
        ("Use of evidence - 2/3", "<criterion>: <points>/<max> - <reason>", "", False),
        ("Glass: £7.50", "Glass: £X", "", True),
        ("**Label: HOT**", "Label: X", "", True),
    ],
)
def test_fills_form_reads_slots_as_any_value(line: str, form: str, numbers: str, filled: bool) -> None:
    assert checks.fills_form(line, form, numbers=numbers) is filled


@pytest.mark.parametrize(
    ("text", "hold"),
    [
        ("1. Mia starts with 24 apples.\n2. She gives away 9, so 24 - 9 = 15.\nAnswer: 15", True),
        ("1. Area = length x width.\n2. Area = 7 x 9 = 56.\nAnswer: 56", False),
        ("Total: $38,000 + $24,000 = $62,000", True),
        ("Total: $38,000 + $24,000 = $61,000", False),
        ("Each gets 10 / 3 = 3.33 litres.", True),  # to the precision the result is written in
        ("2 + 3 x 4 = 14", True),  # the usual precedence
        ("3 × 4 = 12, then 12 + 1 = 14", False),  # every calculation, not the first
        ("3,720 - 3,500 = 220 words over; 220 / 3,500 = 6.3%", True),  # a percentage is no stated result
        ("Meet on 2024-06-05 at 10:00.", True),  # nothing written out
    ],
)
def test_calculations_hold_checks_every_calculation_written_out(text: str, hold: bool) -> None:
    assert checks.calculations_hold(text) is hold


def test_fills_form_values_take_any_number_and_nothing_else() -> None:
    assert checks.fills_form("Answer: 15", "Answer: N", values="N")
    assert checks.fills_form("Answer: -2.5", "Answer: N", values="N")
    assert checks.fills_form("Answer: 1,200", "Answer: N", values="N")
    assert not checks.fills_form("Answer: 15 apples", "Answer: N", values="N")
    assert not checks.fills_form("Answer: fifteen", "Answer: N", values="N")


@pytest.mark.parametrize(
    ("response", "offered"),
    [
        ("We'll refund the delivery fee today.", True),
        ("I've added a bill credit to your account.", True),
        ("A replacement bin will be delivered free within 5 working days.", True),
        ("I can't offer a refund, but I've passed your case to our billing team.", False),
        ("Refunds are not something this team can decide.", False),
        ("We are unable to give a refund; the billing team will review it.", False),
        ("I know a refund matters to you. Billing will call you.", True),  # no denial in its clause
        ("Unfortunately no refund is possible. However, we will send a replacement.", True),
        ("Billing will call you tomorrow.", False),
    ],
)
def test_offers_reads_an_offer_clause_by_clause(response: str, offered: bool) -> None:
    assert checks.offers(response, ["refunds", "bill credits", "replacement"]) is offered


def test_offers_reads_free_and_complimentary_as_one() -> None:
    assert checks.offers("We'd like to give you a complimentary night on your next stay.", ["free nights"])
    assert checks.offers("We will add free drinks to your booking.", ["complimentary drinks"])
    assert not checks.offers("We hope to welcome you back for another night.", ["free nights"])


@pytest.mark.parametrize(
    ("response", "in_order"),
    [
        ("**Impact**\nCheckout failed.\n\n**Root cause**\nA bad deploy.\n\n**Next steps**\nAdd a canary.", True),
        ("## Impact\nCheckout failed.\n## Root cause\nA bad deploy.\n## Next steps\nAdd a canary.", True),
        ("**Root cause**\nA bad deploy.\n\n**Impact**\nCheckout failed.\n\n**Next steps**\nAdd a canary.", False),
        ("Impact: checkout failed.\nNext steps: add a canary.\nRoot cause: a bad deploy.", False),
        ("**Impact**\nCheckout failed.\n\n**Next steps**\nAdd a canary.", True),  # one missing: no disorder
        ("Checkout failed because of a bad deploy; next steps are a canary.", True),  # no section at all
    ],
)
def test_headings_in_order_reads_the_order_of_the_sections_present(response: str, in_order: bool) -> None:
    assert checks.headings_in_order(response, ["Impact", "Root cause", "Next steps"]) is in_order


def test_sourced_numbers_reads_a_call_s_spoken_times_grouped_digits_and_slashed_dates() -> None:
    transcript = (
        "[Call started 04/02/2025 07:48]\nCALLER: I parked it about half ten last night, and my wife noticed it gone"
        " at twenty to seven. Best number: 07700 900412. The crime number is 20 slash 114 572 slash 25, and they"
        " gave me a reference, it's 0 4 5 6. It happened Monday night, I think."
    )
    example = {"inputs": {"call_transcript": transcript}}
    stated = (
        "Last seen approx. 22:30 on 03/02/2025; found missing approx. 06:40 on 04/02/2025. Callback 07700900412."
        " Crime number 20/114572/25, ref 0456. Loss on Monday 03/02/2025."
    )
    assert checks.sourced_numbers(stated, example)
    assert not checks.sourced_numbers("Found missing approx. 06:50 on 04/02/2025.", example)  # no "ten to seven"
    assert not checks.sourced_numbers("Last seen on 01/02/2025.", example)  # no day the call means
    assert not checks.sourced_numbers("Callback 07700900413.", example)


@pytest.mark.parametrize(
    ("response", "names_none"),
    [
        ("Contractors will be felling diseased larch trees until 9 May.", True),
        ("Harland Timber will be felling diseased larch trees until 9 May.", False),  # the input's company
        ("Harland Timber Ltd will be felling diseased larch trees until 9 May.", False),
        ("A firm, Acme Widgets, Inc., will resurface the track.", False),  # one the inputs never name
        ("We are limited in what we can say about the work.", True),
        ("The Larkspur Wood Path is closed while the felling goes on.", True),
    ],
)
def test_names_no_company_refuses_legal_forms_and_the_companies_the_inputs_name(
    response: str, names_none: bool
) -> None:
    example = {"inputs": {"reason": "felling of diseased larch by Harland Timber Ltd (contract 2291)"}}
    assert checks.names_no_company(response, example) is names_none


@pytest.mark.parametrize(
    ("response", "within"),
    [
        ('{"days": [{"day": 1, "minutes": 30}, {"day": 2, "minutes": 0}]}', True),
        ('{"days": [{"day": 1, "minutes": 60}, {"day": 2, "minutes": 30}]}', False),
        ('{"days": [{"day": 1, "minutes": "30 min"}]}', False),  # no number
        ('{"days": [{"day": 1, "minutes": -5}]}', False),
        ("Day 1: 30 minutes of walking.", True),  # no JSON: the JSON checks say so
    ],
)
def test_json_numbers_within_reads_every_value_of_the_key(response: str, within: bool) -> None:
    assert checks.json_numbers_within(response, "minutes", 0, 45) is within


@pytest.mark.parametrize(
    ("response", "cited"),
    [
        ("The trail is 12 km long [1] and takes about four hours [2].", True),
        ("The trail is 12 km long [1]. It climbs through pine forest to a ridge. [2]", True),  # cited after it
        ("The sources disagree. Source [1] says 12 km and source [2] says 14 km.", True),  # a short sentence
        ("The trail is 12 km long [1]. It climbs through pine forest to a ridge.", False),
        ("The lake is 300 metres deep and freezes in most winters.", False),
    ],
)
def test_cites_each_sentence_asks_every_claim_for_a_citation(response: str, cited: bool) -> None:
    assert checks.cites_each_sentence(response, "[1]") is cited


def test_a_key_of_a_json_list_of_objects_is_each_objects_value() -> None:
    clues = '[{"answer": "ORBIT", "clue": "Curved path"}, {"answer": "COMET", "clue": "Icy visitor"}]'
    assert checks.section(clues, "clue") == "- Curved path\n- Icy visitor"
    assert checks.section('{"puzzle": "Space", "entries": ' + clues + "}", "Clue") == "- Curved path\n- Icy visitor"
    assert checks.section(clues, "hint") == ""
    assert checks.part_counts(checks.section(clues, "clue"), "words") == [2, 2]


def test_gives_away_finds_parts_and_roots_of_a_secret() -> None:
    assert checks.gives_away("Spiky tropical fruit, no kind of apple (9)", "PINEAPPLE")  # a part of it
    assert checks.gives_away("Young plant just grown from a seed", "SEEDLING")  # a part, and the same root
    assert checks.gives_away("Punished for a foul", "PENALTY", 4) is False
    assert checks.gives_away("Penalised for a foul in the box", "PENALTY")  # the same root
    assert not checks.gives_away("Coastal tower that warns ships at night (10)", "LIGHTHOUSE")
    assert not checks.gives_away("Set piece from the flag", "CORNER")
    assert checks.gives_away("A tool to plough the snow", "SNOW PLOUGH")  # each word of a secret of two


def test_gives_away_within_reads_each_object_against_its_own_secret() -> None:
    clues = [{"answer": "ORBIT", "clue": "Curved path"}, {"answer": "SEEDLING", "clue": "Grown from a seed"}]
    assert checks.gives_away_within(json.dumps(clues), "clue", "answer")
    assert not checks.gives_away_within(json.dumps(clues[:1]), "clue", "answer")
    # another object's answer is no secret of this clue's
    assert not checks.gives_away_within(
        json.dumps([*clues[:1], {"answer": "COMET", "clue": "An orbit's icy visitor"}]), "clue", "answer"
    )
    assert checks.gives_away_within(json.dumps({"puzzle": "Garden", "entries": clues}), "clue", "answer")
    assert not checks.gives_away_within("not JSON", "clue", "answer")


def test_numbers_kept_asks_for_every_number_of_the_named_inputs() -> None:
    notes = {
        "notes": "Moisture 28% at skirting; dehumidifier DH-400 serial 55120; 1,200 miles; cost £12.50",
        "today": "7",
    }
    kept = "Moisture was 28% at the skirting. Dehumidifier DH-400 (serial 55120). Mileage 1200. Cost £12.5."
    assert checks.numbers_kept(kept, notes, ["notes"])
    assert not checks.numbers_kept(kept.replace("28%", "about 30%"), notes, ["notes"])  # rounded
    assert not checks.numbers_kept(kept.replace(" Mileage 1200.", ""), notes, ["notes"])  # dropped
    assert not checks.numbers_kept(kept, notes)  # all the inputs: "today" gives a 7 the response leaves out
    assert checks.numbers_kept("Opened on 14 March 2025.", {"log": "opened 2025-03-14"})  # a month by its name
    with pytest.raises(NotApplicable):
        checks.numbers_kept(kept, {}, ["notes"])


def test_answer_is_one_of_reads_the_whole_answer_as_words() -> None:
    assert checks.answer_is_one_of("**Yes.**\n", ["yes", "no"])
    assert checks.answer_is_one_of(' "not spam" ', ["spam", "not spam"])
    assert not checks.answer_is_one_of("Yes, because it was late.", ["yes", "no"])
    assert not checks.answer_is_one_of("maybe", ["yes", "no"])
    # a rule that refuses punctuation too: the label and surrounding space only
    assert checks.answer_is_one_of("data-loss\n", ["crash", "data-loss"], bare=True)
    assert not checks.answer_is_one_of("crash.", ["crash", "data-loss"], bare=True)


def test_json_values_in_reads_every_value_of_a_key_at_any_depth() -> None:
    damage = '{"new_damage": [{"panel": "bonnet"}, {"panel": "ROOF"}], "flags": []}'
    assert checks.json_values_in(damage, "panel", ["bonnet", "roof"])
    assert not checks.json_values_in(damage.replace("ROOF", "driver door"), "panel", ["bonnet", "roof"])
    assert checks.json_values_in('{"new_damage": []}', "panel", ["bonnet"])  # no value breaks nothing
    with pytest.raises(checks.NotApplicable):
        checks.json_values_in("No damage found.", "panel", ["bonnet"])


def test_json_keys_within_and_exactly_these_keys() -> None:
    assert checks.json_keys_within('{"a": 1, "b": 2}', ["a", "b", "c"])
    assert not checks.json_keys_within('{"a": 1, "note": ""}', ["a", "b"])
    assert checks.json_has_keys('{"a": 1, "b": 2}', ["a", "b"], only=True)
    assert not checks.json_has_keys('{"a": 1, "b": 2, "c": 3}', ["a", "b"], only=True)
    assert checks.json_has_keys('{"a": 1, "b": 2, "c": 3}', ["a", "b"])


def test_sourced_codes_reads_dois_isbns_and_issns_by_their_check_digits() -> None:
    example = {"request_text": "Thomason, S. G. (2003). Handbook of Historical Linguistics. ISBN 978-0-631-19571-9."}
    kinds = ["standard_ids"]
    assert checks.sourced_codes('{"isbn": "9780631195719", "year": "2003", "pages": "697-712"}', example, kinds=kinds)
    assert not checks.sourced_codes('{"isbn": "9780631195719", "doi": "10.1086/244387"}', example, kinds=kinds)
    assert not checks.sourced_codes('{"issn": "0022-2801"}', example, kinds=kinds)  # a valid ISSN the text lacks
    # years, page ranges and phone numbers are no standard numbers
    assert checks.sourced_codes("Call 480-555-0142 about pages 697-712 of the 1991 volume.", example, kinds=kinds)


def test_dates_in_form_reads_dates_not_versions_or_phone_numbers() -> None:
    assert checks.dates_in_form("From 2025-04-14 to 2025-05-01.", "YYYY-MM-DD")
    assert not checks.dates_in_form("From 14 April 2025.", "YYYY-MM-DD")
    assert not checks.dates_in_form("Due 4/14/2025", "DD/MM/YYYY")
    assert checks.dates_in_form("Version 1.2.3, ratio 1/2, call 0800 161 5050.", "YYYY-MM-DD")
    assert checks.dates_in_form('{"due": null, "sent": "2025-04-14"}', "YYYY-MM-DD", "due")
    assert not checks.dates_in_form('{"due": "Monday"}', "YYYY-MM-DD", "due")
    assert checks.date_form("D MMM YYYY").fullmatch("4 Apr 2025")


def test_names_no_one_reads_a_name_opening_a_sentence_with_a_pronoun_for_them() -> None:
    example = {"extra_info": "Colin has pulled out - he's having chemo again, please don't mention.", "name": "Dev"}
    assert not checks.names_no_one("Hi Dev, Colin can't do his run on Tue. - Leanne", example, allowed=["name"])
    assert checks.names_no_one("Hi Dev, can you cover Tue 1-4pm? - Leanne", example, allowed=["name"])
    with pytest.raises(checks.NotApplicable):  # a place opening a sentence is no one
        checks.names_no_one("Hi Dev", {"extra_info": "Lincoln Gym is closed, his class moved."}, allowed=["name"])


def test_offers_reads_free_months_after_their_number() -> None:
    assert checks.offers("I can give you 3 months free on renewal.", ["discounts", "free months"])
    assert checks.offers("We'll add two months for free.", ["free months"])
    assert not checks.offers("We can't give months for free.", ["free months"])


def test_json_value_in_reads_a_key_held_only_inside_the_objects() -> None:
    work = '{"issues": [{"category": "plumbing"}, {"category": "pest"}], "pets": ""}'
    assert checks.json_value_in(work, "category", ["plumbing", "pest", "hvac"])
    assert not checks.json_value_in(work.replace("pest", "water_heater"), "category", ["plumbing", "pest"])
    assert not checks.json_value_in('{"pets": ""}', "category", ["plumbing"])  # no such key anywhere


def test_is_markdown_without_lists_leaves_plain_lists_alone() -> None:
    assert not checks.is_markdown("Bring:\n- ID\n1. keys", lists=False)
    assert checks.is_markdown("Bring:\n- ID")
    assert checks.is_markdown("**Entry** on Friday", lists=False)


def test_a_subject_line_is_a_line_labelled_subject() -> None:
    assert checks.has_subject_line("Subject: Bike store closed\n\nHi all,") and checks.has_subject_line(
        "**Subject:** Hi"
    )
    assert not checks.has_subject_line("Subject to availability, the room opens at 9.")
    assert not checks.has_subject_line("*Bike store closed*\nHi all, Subject: see below.")


def test_a_total_of_money_below_a_list_of_amounts_is_their_sum() -> None:
    statement = (
        "Deductions:\n- Lost fob: £25.00 (not returned)\n- Desk chair: £75.00 (broken base)\n- Smoke cover: £20.00\n\n"
        "Total deductions: {total}\nAmount to be returned: £80.00"
    )
    assert checks.calculations_hold(statement.format(total="£120.00"))
    assert not checks.calculations_hold(statement.format(total="£110.00"))
    assert checks.calculations_hold("- Tea: £2.50\n- Discount: -£0.50\n**Total:** £2.00")
    # items in another currency, or without an amount each, are no sum to check
    assert checks.calculations_hold("- Room: €80\n- Breakfast: €12\nTotal: £100")
    assert checks.calculations_hold("- Three rooms booked\n- Breakfast: £12\nTotal: £100")


def test_a_number_grouped_by_thousands_is_one_with_commas_between_them() -> None:
    assert checks.numbers_grouped("Amount claimed: GBP 64,380.00") and checks.numbers_grouped("1,549,800")
    assert not checks.numbers_grouped('{"assessed_value": 468900, "tax_year": 2024}')
    assert not checks.numbers_grouped("slots 3, 4, 5 and 12") and not checks.numbers_grouped("3,4 m")
