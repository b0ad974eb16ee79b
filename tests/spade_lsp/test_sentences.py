"""The prompt-aware splitter: structure (lists, headings, fences, quotes), sentence boundaries, exact offsets
and LSP (UTF-16) ranges."""

from __future__ import annotations

import random
import re

import pytest

from spade_lsp._sentences import split_sentences, unit_spans
from spade_lsp._types import Position, Range, Sentence, UnitKind


def lsp_position(text: str, offset: int) -> Position:
    """Slow, obviously-correct reference: split the prefix into lines, measure the last one in UTF-16."""
    lines = re.split(r"\r\n|\r|\n", text[:offset])
    return Position(len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)


def check_invariants(text: str, units: list[Sentence]) -> None:
    previous_end = 0
    for u in units:
        assert text[u.start : u.end] == u.text
        assert u.text and u.text == u.text.strip()
        assert u.start >= previous_end
        previous_end = u.end
        assert u.range.start == lsp_position(text, u.start)
        assert u.range.end == lsp_position(text, u.end)


def split(text: str) -> list[Sentence]:
    units = split_sentences(text)
    check_invariants(text, units)
    return units


def texts(text: str) -> list[str]:
    return [u.text for u in split(text)]


def kinds(text: str) -> list[UnitKind]:
    return [u.kind for u in split(text)]


def test_empty_and_blank_text() -> None:
    assert split_sentences("") == []
    assert split_sentences("  \n\n \t\r\n") == []


def test_plain_sentences() -> None:
    assert texts("Answer in JSON.  Be concise!   Why? Because.") == [
        "Answer in JSON.",
        "Be concise!",
        "Why?",
        "Because.",
    ]
    assert kinds("One. Two.") == [UnitKind.SENTENCE, UnitKind.SENTENCE]


def test_bullets_each_item_is_a_unit() -> None:
    text = "Rules:\n- Be concise. Really.\n* Use markdown\n+ Cite sources\n• No emojis\n-Hand typed item"
    assert texts(text) == [
        "Rules:",
        "- Be concise. Really.",
        "* Use markdown",
        "+ Cite sources",
        "• No emojis",
        "-Hand typed item",
    ]
    assert kinds(text) == [UnitKind.HEADING] + [UnitKind.BULLET] * 5


def test_numbered_and_lettered_lists() -> None:
    text = "Steps\n1. Read the text.\n2) Summarise it.\na) Keep it short.\n(b) Cite the source."
    assert texts(text) == [
        "Steps",
        "1. Read the text.",
        "2) Summarise it.",
        "a) Keep it short.",
        "(b) Cite the source.",
    ]
    assert kinds(text)[1:] == [UnitKind.BULLET] * 4


def test_a_checklist_s_boxes_are_list_items() -> None:
    text = "Every item must be true:\n[ ] No emoji and no exclamation marks\n[x] The body is 80 to 150 words"
    assert texts(text)[1:] == ["[ ] No emoji and no exclamation marks", "[x] The body is 80 to 150 words"]
    assert kinds(text)[1:] == [UnitKind.BULLET] * 2


def test_list_item_continuation_lines_stay_with_the_item() -> None:
    text = "- A long item that wraps\n  onto the next line.\n- Next item"
    assert texts(text) == ["- A long item that wraps\n  onto the next line.", "- Next item"]


def test_bold_and_rules_are_not_bullets() -> None:
    text = "**Key Points:**\nList the points.\n\n---\n\n*Never* guess."
    assert [(u.text, u.kind) for u in split(text)] == [
        ("**Key Points:**", UnitKind.HEADING),
        ("List the points.", UnitKind.SENTENCE),
        ("---", UnitKind.HEADING),
        ("*Never* guess.", UnitKind.SENTENCE),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "# Title",
        "### Step 2: do it",
        "Instructions:",
        "TOOLS:",
        "SystemMessagePromptTemplate:",
        "Example output:",
    ],
)
def test_headings(line: str) -> None:
    units = split(f"{line}\nAnswer the question.")
    assert [(u.text, u.kind) for u in units] == [
        (line, UnitKind.HEADING),
        ("Answer the question.", UnitKind.SENTENCE),
    ]


def test_label_with_content_is_a_sentence() -> None:
    assert kinds("Subject Line: Write a compelling subject line.") == [UnitKind.SENTENCE]
    assert kinds("You should always answer carefully and completely:") == [UnitKind.SENTENCE]


def test_blank_lines_separate_units() -> None:
    # the second paragraph starts in lower case, which would otherwise continue the sentence
    assert texts("Answer the question using\n\nthe context below") == [
        "Answer the question using",
        "the context below",
    ]


def test_hard_wrapped_prose_is_joined_and_lines_without_full_stop_are_split() -> None:
    text = "Answer the question using\nthe context below. Be brief\nThe result should be markdown"
    assert texts(text) == [
        "Answer the question using\nthe context below.",
        "Be brief",
        "The result should be markdown",
    ]


def test_a_schemas_key_lines_are_one_unit_each_even_in_lower_case() -> None:
    text = "intent (the main one): billing, outage, other\nflags: any of gas_odor, legal_threat\nsummary: max 20 words"
    assert texts(text) == [
        "intent (the main one): billing, outage, other",
        "flags: any of gas_odor, legal_threat",
        "summary: max 20 words",
    ]
    # a key line after prose is wrapped prose still, and so is a lower-case line after a key line
    assert texts("Keep the summary short\nnote: no names") == ["Keep the summary short\nnote: no names"]
    assert texts("summary: max 20 words and\nno names") == ["summary: max 20 words and\nno names"]


def test_code_fence_is_one_unit_including_fences_and_blank_lines() -> None:
    text = "Intro here.\n```python\nx = 1. y = 2.\n\n# not a heading\n```\nAfter. More.\n~~~\n- not a bullet\n~~~"
    units = split(text)
    assert [u.text for u in units] == [
        "Intro here.",
        "```python\nx = 1. y = 2.\n\n# not a heading\n```",
        "After.",
        "More.",
        "~~~\n- not a bullet\n~~~",
    ]
    assert [u.kind for u in units] == [
        UnitKind.SENTENCE,
        UnitKind.CODE,
        UnitKind.SENTENCE,
        UnitKind.SENTENCE,
        UnitKind.CODE,
    ]
    assert units[1].range.start == Position(1, 0) and units[1].range.end == Position(5, 3)


def test_unclosed_fence_is_ordinary_text() -> None:
    assert kinds("```\nFirst. Second.") == [UnitKind.SENTENCE, UnitKind.SENTENCE, UnitKind.SENTENCE]


def test_block_quote_is_one_unit() -> None:
    text = "For example:\n> Hello there. How are you?\n> Fine, thanks.\nThat is all."
    assert [(u.text, u.kind) for u in split(text)] == [
        ("For example:", UnitKind.HEADING),
        ("> Hello there. How are you?\n> Fine, thanks.", UnitKind.QUOTE),
        ("That is all.", UnitKind.SENTENCE),
    ]


def test_triple_quoted_block_is_one_unit() -> None:
    text = 'Summarise this:\n"""\nHello. World.\n\nBye.\n"""\nKeep it short.'
    assert [(u.text, u.kind) for u in split(text)] == [
        ("Summarise this:", UnitKind.HEADING),
        ('"""\nHello. World.\n\nBye.\n"""', UnitKind.QUOTE),
        ("Keep it short.", UnitKind.SENTENCE),
    ]
    # an unmatched opener (a real prompt in the benchmark data) is just text
    assert kinds('"""The following is a transcript. Read it.') == [UnitKind.SENTENCE, UnitKind.SENTENCE]


def test_placeholders_never_split() -> None:
    assert texts("Summarize {text}. Use {{style.name}} and [tone.v2] here. Reply to {user.first.name}!") == [
        "Summarize {text}.",
        "Use {{style.name}} and [tone.v2] here.",
        "Reply to {user.first.name}!",
    ]


def test_placeholder_line_is_its_own_unit() -> None:
    text = "Use the context below\n{context}\nto answer the question."
    assert texts(text) == ["Use the context below", "{context}", "to answer the question."]
    assert texts("BEGIN TEXT\n{{text}}\nEND TEXT") == ["BEGIN TEXT", "{{text}}", "END TEXT"]


def test_abbreviations_do_not_split() -> None:
    text = "Use fruit, e.g. apples, i.e. not veg, etc. in the list. Dr. Smith lives in the U.S. today. Fine."
    assert texts(text) == [
        "Use fruit, e.g. apples, i.e. not veg, etc. in the list.",
        "Dr. Smith lives in the U.S. today.",
        "Fine.",
    ]


def test_decimals_versions_urls_and_ellipses_do_not_split() -> None:
    assert texts("Set the temperature to 3.5 and use version 2.1.3 of the API. Then stop.") == [
        "Set the temperature to 3.5 and use version 2.1.3 of the API.",
        "Then stop.",
    ]
    assert texts("See https://example.com/a.b?c=1. Then stop.") == [
        "See https://example.com/a.b?c=1.",
        "Then stop.",
    ]
    assert texts("Think step by step... Then answer. Done.") == [
        "Think step by step... Then answer.",
        "Done.",
    ]


def test_utf16_ranges_with_emoji_and_cjk() -> None:
    text = "😀 Hi there. Next one.\n你好，世界。 Say 🎉 now. End."
    units = split(text)
    assert [u.text for u in units] == ["😀 Hi there.", "Next one.", "你好，世界。", "Say 🎉 now.", "End."]
    assert units[1].start == 12  # Python offset ...
    assert units[1].range.start == Position(0, 13)  # ... but the emoji is two UTF-16 code units
    assert units[2].range == Range(Position(1, 0), Position(1, 6))  # CJK is in the BMP: one unit per char
    assert units[3].range.end == Position(1, len("你好，世界。 Say 🎉 now.") + 1)
    assert units[4].range.start == Position(1, len("你好，世界。 Say 🎉 now. ") + 1)


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\n"])
def test_line_endings(newline: str) -> None:
    text = newline.join(["First line.", "- item one", "", "Third para. Two.", "```", "code", "```", "End"])
    units = split(text)
    assert [u.text for u in units] == [
        "First line.",
        "- item one",
        "Third para.",
        "Two.",
        newline.join(["```", "code", "```"]),
        "End",
    ]
    assert [u.range.start.line for u in units] == [0, 1, 3, 3, 4, 7]


def test_unit_spans_agree_with_sentences() -> None:
    text = "# T\nOne. Two.\n\n- a\n- b\n```\nx\n```\n"
    assert [(u.start, u.end, u.kind, u.text) for u in unit_spans(text)] == [
        (s.start, s.end, s.kind, s.text) for s in split_sentences(text)
    ]


_PIECES = [
    "Be concise.",
    'Answer in JSON, e.g. {"a": 1}.',
    "Use {context} and {{query}}.",
    "- bullet item",
    "1. numbered item",
    "## Heading",
    "Instructions:",
    "```\ncode. more\n```",
    "> quoted. text",
    "Version 3.5 is out",
    "emoji 😀 here. and 🎉.",
    "中文句子。",
    "  indented line",
    "",
    "   ",
    '"""\nquoted. text\n"""',
    '"""',
    "~~~",
    "\t- tab bullet",
    "{x}",
    "a) lettered",
    "Ends with a colon:",
    'Read 😀 """\nq. x 🎉\n""" after. it',
]


def test_property_offsets_and_ranges_always_exact() -> None:
    rng = random.Random(1234)
    for _ in range(300):
        newline = rng.choice(["\n", "\r\n", "\r"])
        parts = [rng.choice(_PIECES) for _ in range(rng.randint(0, 12))]
        seps = [rng.choice([" ", newline, newline * 2]) for _ in parts]
        text = "".join(p + s for p, s in zip(parts, seps, strict=True)).replace("\n", newline)
        units = split(text)
        # nothing but whitespace is left out
        covered = "".join(u.text for u in units)
        assert re.sub(r"\s", "", covered) == re.sub(r"\s", "", text)


def _big_prompt(n: int, seed: int) -> str:
    rng = random.Random(seed)
    words = [
        "the",
        "model",
        "should",
        "answer",
        "each",
        "question",
        "with",
        "care",
        "and",
        "cite",
        "its",
        "sources",
        "e.g.",
        "docs",
    ]
    parts: list[str] = []
    count = 0
    while count < n:
        k = rng.randint(2, 5)
        sentences = [
            " ".join(rng.choice(words) for _ in range(rng.randint(5, 14))).capitalize() + "." for _ in range(k)
        ]
        if rng.random() < 0.3:
            parts.append("\n".join("- " + s for s in sentences))
        else:
            parts.append(" ".join(sentences))
        count += k
    return "\n\n".join(parts)


def test_two_thousand_sentences_split() -> None:
    """A 2,000-sentence prompt splits into at least 2,000 units (its speed: tests/benchmarks/test_text_bench.py)."""
    text = _big_prompt(2000, seed=7)
    units = split_sentences(text)
    assert len(units) >= 2000
