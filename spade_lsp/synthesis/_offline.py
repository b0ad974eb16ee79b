"""The offline synthesizer: real checks parsed from instruction sentences, no model needed.

Each parser looks for its own cue (a bound and a unit, a format name, quoted phrases, an input field, an
example block, a tone word) and yields checks written against :mod:`spade_lsp.checks`. A criterion that no
measurement captures becomes an ``ask_llm`` yes/no question, which runs only when a model is configured.
Vague criteria ("be concise") yield several candidates on purpose; selection keeps the ones the labelled
examples support.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from spade_lsp.synthesis import Candidate, Instruction, PromptContext
from spade_lsp.taxonomy import (
    COUNT,
    DATA_PLACEHOLDERS,
    EXAMPLE_DEMONSTRATION,
    EXCLUSION,
    INCLUSION,
    PRESENTATION_FORMAT,
    QUALITATIVE_ASSESSMENT,
    WORKFLOW_DESCRIPTION,
)

NAME: Final = "offline"

_NUMBER_WORDS: Final = {
    "zero": 0, "no": 0, "one": 1, "a single": 1, "single": 1, "two": 2, "a couple of": 2, "a pair of": 2,
    "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "a dozen": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "fifty": 50, "hundred": 100,
}  # fmt: skip

_UNITS: Final = {
    "words": "words", "word": "words",
    "sentences": "sentences", "sentence": "sentences",
    "characters": "characters", "character": "characters", "chars": "characters", "letters": "characters",
    "bullet points": "bullets", "bullet point": "bullets", "bullets": "bullets", "bullet": "bullets",
    "numbered items": "numbered_items", "numbered points": "numbered_items",
    "paragraphs": "paragraphs", "paragraph": "paragraphs",
    "lines": "lines", "line": "lines",
    "hashtags": "hashtags", "hashtag": "hashtags",
    "emojis": "emojis", "emoji": "emojis",
    "headings": "headings", "headers": "headings", "sections": "headings",
    "code blocks": "code_blocks", "code block": "code_blocks",
    "key points": "list_items", "items": "list_items", "points": "list_items", "tips": "list_items",
    "steps": "list_items", "reasons": "list_items", "ideas": "list_items", "questions": "list_items",
    "suggestions": "list_items", "options": "list_items", "recommendations": "list_items",
    "takeaways": "list_items", "exercises": "list_items", "examples": "list_items",
}  # fmt: skip

_AT_MOST: Final = (
    r"no more than|not more than|not exceeding|not exceed|does not exceed|doesn't exceed|at most|up to|"
    r"a maximum of|maximum of|max\.?|no longer than|not be longer than|n't be longer than|not longer than|"
    r"limited to|limit it to|limit to|within|(?:shouldn't|should not|must not|mustn't|cannot|can't|not) be (?:longer|"
    r"more) than"
)
_BELOW: Final = r"fewer than|less than|under|below|shorter than"
_AT_LEAST: Final = r"at least|no fewer than|no less than|not fewer than|a minimum of|minimum of"
_ABOVE: Final = r"more than|over|longer than"

_LANGUAGES: Final = {
    "english": "en", "french": "fr", "spanish": "es", "german": "de", "italian": "it", "portuguese": "pt",
    "dutch": "nl", "japanese": "ja", "chinese": "zh-cn", "korean": "ko", "russian": "ru", "arabic": "ar",
}  # fmt: skip

#: Output nouns that mean the whole response rather than one section of it.
_WHOLE_RESPONSE: Final = frozenset(
    {"response", "answer", "output", "result", "reply", "text", "message", "email", "it", "summary", "review"}
)
_CONDITIONAL = re.compile(
    r"^\s*(?:-\s*)?(?:if|when|where|unless|in case)\b|\b(?:if|where|when) (?:necessary|needed|"
    r"applicable|appropriate|possible|relevant)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(
    r"\"([^\"\n]{1,60})\"|“([^”\n]{1,60})”|‘([^’\n]{1,60})’|`([^`\n]{1,60})`|(?<!\w)'([^'\n]{1,60})'(?!\w)"
)
_INCLUDE_CUE = re.compile(
    r"\b(?:include|includ|mention|contain|add|use|cite|show|provide|list|state|reference|"
    r"must have|always)\w*",
    re.IGNORECASE,
)
_EXCLUDE_CUE = re.compile(
    r"\b(?:never|don't|do not|does not|doesn't|avoid|without|refrain from|exclude|must not|"
    r"shouldn't|should not|no longer|not include|not mention|not use|not add|not give|"
    r"not say|not make)\b",
    re.IGNORECASE,
)
_NAMED_OBJECT = re.compile(
    r"\b(?:include|mention|contain|add|use|give|say|make|provide|show|avoid|refrain from|"
    r"the words?|the phrases?|the terms?)\s+(?:an?\s+|the\s+|any\s+|all\s+)?"
    r"([A-Za-z][A-Za-z '\-]{1,60}?)(?=[.,;:!?)]|\s+(?:if|when|unless|that|which|"
    r"for|with|in|from|about|encouraging|so|because)\b|$)",
    re.IGNORECASE,
)
_EXAMPLE_INTRO = re.compile(r"\bexamples?\b[^.\n]{0,40}:\s*$|^\s*(?:example|sample)\b.*:\s*$", re.IGNORECASE)
_STRUCTURE_LABEL = re.compile(r"^\s*\*\*([^*\n]{2,60}?):?\*\*:?\s*$")
_SENTENCE_LABEL = re.compile(r"^\s*([A-Z][A-Za-z\- ]{1,30}):\s+\S")
_MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*$", re.MULTILINE)

_QUALITIES: Final[tuple[tuple[str, str, tuple[tuple[str, str, dict[str, Any] | None], ...]], ...]] = (
    (
        r"\b(?:concise|concisely|brief|briefly|brevity|succinct|short form|shorter|to the point|short)\b",
        "concise",
        (
            ("checks.count(response, 'words') <= 150", "At most 150 words (one reading of 'concise').",
             {"family": "count", "unit": "words", "min": None, "max": 150}),
            ("checks.count(response, 'words') <= 250", "At most 250 words (a looser reading of 'concise').",
             {"family": "count", "unit": "words", "min": None, "max": 250}),
            ("checks.count(response, 'words') <= 400", "At most 400 words (the loosest reading of 'concise').",
             {"family": "count", "unit": "words", "min": None, "max": 400}),
            ("checks.mean_sentence_words(response) <= 25", "Sentences average 25 words or fewer.", None),
        ),
    ),
    (
        r"\b(?:clear|clearly|simple|plain|easy to read|readab\w*|digestible|accessible|easy to understand)\b",
        "readable",
        (
            ("checks.reading_ease(response) >= 50", "Flesch reading ease >= 50 (fairly plain English).", None),
            ("checks.reading_ease(response) >= 30", "Flesch reading ease >= 30 (not academic-paper dense).", None),
        ),
    ),
    (
        r"\b(?:friendly|warm|positive|enthusiastic|encouraging|upbeat|empathetic|gratitude|grateful|polite)\b",
        "positive_tone",
        (("checks.sentiment(response) >= 0.05", "Positive tone: mean VADER compound score >= 0.05.", None),),
    ),
    (
        r"\b(?:professional|neutral|non-bias\w*|unbiased|objective|journalistic|formal)\b",
        "neutral_tone",
        (("abs(checks.sentiment(response)) <= 0.5", "Measured tone: |mean VADER compound| <= 0.5.", None),),
    ),
    (
        r"\b(?:detailed|comprehensive|thorough|in-depth|in depth|rich)\b",
        "detailed",
        (
            ("checks.count(response, 'words') >= 150", "At least 150 words (one reading of 'detailed').",
             {"family": "count", "unit": "words", "min": 150, "max": None}),
            ("checks.count(response, 'words') >= 300", "At least 300 words (a stricter reading of 'detailed').",
             {"family": "count", "unit": "words", "min": 300, "max": None}),
        ),
    ),
    (
        r"\b(?:gratitude|grateful|thank)\w*",
        "gratitude",
        (("checks.contains_any(response, ['thank', 'thanks', 'grateful', 'appreciate', 'gratitude'])",
          "Expresses thanks (a gratitude word appears).", None),),
    ),
    (
        r"\bpersonal\b",
        "personal",
        (("checks.contains_any(response, ['you', 'your'])", "Addresses the reader directly (you/your).", None),),
    ),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Draft:
    slug: str
    category: str
    description: str
    expression: str
    check: dict[str, Any] | None = None
    asks_llm: bool = False


def _slug(text: str, limit: int = 48) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if len(slug) > limit:
        slug = slug[:limit].rsplit("_", 1)[0]
    return slug or "check"


def _literal(value: Any) -> str:
    """A Python literal for generated code (repr is deterministic for str, int, list and dict)."""
    return repr(value)


class _Vocabulary:
    """Input fields and how the prompt refers to them (``{topic}``, ``{{topic}}`` or ``[topic]``)."""

    def __init__(self, context: PromptContext) -> None:
        self.inputs = tuple(context.inputs)
        self.number = (
            r"\d[\d,]*|" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len, reverse=True))
            + r"|\{\{?\s*[A-Za-z_]\w*\s*\}?\}|\[[A-Za-z_]\w*\]"
        )  # fmt: skip

    def field_of(self, token: str) -> str | None:
        name = token.strip("{}[] ")
        return name if name in self.inputs else None

    def fields_in(self, text: str) -> list[str]:
        found = re.findall(r"\{\{?\s*([A-Za-z_]\w*)\s*\}?\}|\[([A-Za-z_]\w*)\]", text)
        names = [a or b for a, b in found]
        return list(dict.fromkeys(name for name in names if name in self.inputs))

    def bound(self, token: str) -> int | str | None:
        """An int, a placeholder ``{name}`` whose value is read per example, or None."""
        token = token.strip().lower()
        if token in _NUMBER_WORDS:
            return _NUMBER_WORDS[token]
        if re.fullmatch(r"\d[\d,]*", token):
            return int(token.replace(",", ""))
        name = self.field_of(token)
        return "{" + name + "}" if name else None


def _bound_code(bound: int | str) -> str:
    if isinstance(bound, int):
        return str(bound)
    return f"checks.bound(example, {_literal(bound.strip('{}'))})"


def _count_draft(unit: str, low: int | str | None, high: int | str | None, scope: str | None) -> _Draft:
    target = "response" if scope is None else f"checks.section(response, {_literal(scope)})"
    measure = f"checks.count({target}, {_literal(unit)})"
    words = unit.replace("_", " ")
    where = "" if scope is None else f" in the {scope} section"
    if low is not None and high is not None and low == high:
        expression, description = f"{measure} == {_bound_code(low)}", f"Exactly {low} {words}{where}."
    elif low is not None and high is not None:
        expression = f"{_bound_code(low)} <= {measure} <= {_bound_code(high)}"
        description = f"Between {low} and {high} {words}{where}."
    elif high is not None:
        expression, description = f"{measure} <= {_bound_code(high)}", f"At most {high} {words}{where}."
    else:
        assert low is not None
        expression, description = f"{measure} >= {_bound_code(low)}", f"At least {low} {words}{where}."
    check: dict[str, Any] = {"family": "count", "unit": unit, "min": low, "max": high}
    if scope is not None:
        check["section"] = scope
    return _Draft(_slug(description), COUNT, description, expression, check)


class OfflineSynthesizer:
    """Parses each instruction for checkable requirements; see the module docstring."""

    name = NAME

    def synthesize(self, instructions: Sequence[Instruction], context: PromptContext) -> list[Candidate]:
        vocabulary = _Vocabulary(context)
        examples = _example_blocks(context.text)
        out: list[Candidate] = []
        taken: dict[str, int] = {}
        seen_expressions: set[str] = set()
        for instruction in instructions:
            if _inside(instruction, examples) or instruction.kind == "code":
                continue
            for draft in self._drafts(instruction, context, vocabulary, examples):
                key = draft.expression.lower()
                if key in seen_expressions:
                    continue  # the same check from an earlier sentence: keep the first, where it was introduced
                seen_expressions.add(key)
                out.append(_candidate(draft, instruction, taken))
        return out

    def _drafts(
        self,
        instruction: Instruction,
        context: PromptContext,
        vocabulary: _Vocabulary,
        examples: list[tuple[int, int]],
    ) -> Iterator[_Draft]:
        text = _clean(instruction.text)
        if not text or _is_data_line(text, vocabulary):
            return
        conditional = bool(_CONDITIONAL.search(text))
        categories = set(instruction.categories)
        if instruction.kind == "heading" or _STRUCTURE_LABEL.match(instruction.text):
            yield from _structure_label(instruction.text)
            if _EXAMPLE_INTRO.search(text):
                yield from _example_drafts(context.text, instruction, examples)
            return
        if _EXAMPLE_INTRO.search(text):
            yield from _example_drafts(context.text, instruction, examples)
        label = _SENTENCE_LABEL.match(instruction.text)
        if label and _is_section_label(label.group(1)):
            yield _heading_draft(label.group(1), PRESENTATION_FORMAT)
        found_specific = False
        used_as_bound: set[str] = set()
        if not conditional:
            for draft in _counts(text, vocabulary):
                found_specific = True
                assert draft.check is not None
                used_as_bound |= {
                    str(v).strip("{}") for v in (draft.check["min"], draft.check["max"]) if isinstance(v, str)
                }
                yield draft
            for draft in _formats(text):
                found_specific = True
                yield draft
            excluded = _EXCLUDE_CUE.search(text) is not None
            for draft in _phrases(text, vocabulary, exclude=excluded):
                found_specific = True
                yield draft
        if DATA_PLACEHOLDERS in categories and not _EXCLUDE_CUE.search(text):
            for field in vocabulary.fields_in(instruction.text):
                if field in used_as_bound:
                    continue
                yield _Draft(
                    f"mentions_{field}",
                    DATA_PLACEHOLDERS,
                    f"Refers to the input `{field}` (its value, or most of its key words).",
                    f"checks.mentions(response, example[{_literal(field)}])",
                    {"family": "mentions", "field": field},
                )
        qualitative = False
        role = re.match(r"^(?:act as|you are|as an?)\b", text, re.IGNORECASE) is not None
        for pattern, slug, measures in _QUALITIES:
            if re.search(pattern, text, re.IGNORECASE) and not conditional and not role:
                qualitative = True
                for expression, description, check in measures:
                    short = re.split(r"[(:]", description)[0]
                    yield _Draft(
                        slug if len(measures) == 1 else f"{slug}_{_slug(short, 28)}",
                        QUALITATIVE_ASSESSMENT,
                        description,
                        expression,
                        check,
                    )
        language = re.search(r"\b(?:in|respond in|answer in|write in)\s+(" + "|".join(_LANGUAGES) + r")\b", text, re.I)
        if language:
            code = _LANGUAGES[language.group(1).lower()]
            yield _Draft(
                f"in_{language.group(1).lower()}",
                PRESENTATION_FORMAT,
                f"Written in {language.group(1).title()} (langdetect).",
                f"checks.language(response) == {_literal(code)}",
                {"family": "language", "code": code},
            )
        asks = categories & {WORKFLOW_DESCRIPTION, QUALITATIVE_ASSESSMENT, INCLUSION, EXCLUSION}
        if qualitative or conditional or (asks and not found_specific) or (asks and len(text.split()) > 8):
            category = _ask_category(categories, qualitative)
            yield _Draft(
                f"llm_{_slug(text, 40)}",
                category,
                "Asks the model whether the response follows this instruction.",
                f"ask_llm({_literal(_question(text))}, response)",
                None,
                asks_llm=True,
            )


def _is_section_label(label: str) -> bool:
    """``Subject Line: write ...`` names a part of the output; ``Never use words like: ...`` does not."""
    words = label.lower().split()
    verbs = {"never", "always", "do", "don't", "use", "include", "avoid", "note", "important", "example", "task"}
    return len(words) <= 3 and not set(words) & verbs


def _ask_category(categories: set[str], qualitative: bool) -> str:
    for category in (EXCLUSION, INCLUSION, QUALITATIVE_ASSESSMENT, WORKFLOW_DESCRIPTION):
        if category in categories:
            return category
    return QUALITATIVE_ASSESSMENT if qualitative else WORKFLOW_DESCRIPTION


def _question(sentence: str) -> str:
    return f"The prompt that produced this response instructs: \u201c{sentence}\u201d Does the response follow it?"


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"^\s*(?:[-*•+]|\d+[.)])\s*", "", text)).strip()


def _is_data_line(text: str, vocabulary: _Vocabulary) -> bool:
    """``[topic]: {topic}`` and a bare ``{docs}``: where inputs go, not what the output must do."""
    stripped = re.sub(r"\{\{?\s*\w+\s*\}?\}|\[\w+\]", "", text)
    return not re.search(r"[A-Za-z]{2,}", stripped.replace("BEGIN TEXT", "").replace("END TEXT", ""))


def _candidate(draft: _Draft, instruction: Instruction, taken: dict[str, int]) -> Candidate:
    base = "assert_" + _slug(draft.slug, 56)
    taken[base] = taken.get(base, 0) + 1
    name = base if taken[base] == 1 else f"{base}_{taken[base]}"
    return Candidate(
        name=name,
        category=draft.category,
        sentence=instruction.text.strip(),
        version=instruction.version,
        synthesizer=NAME,
        description=draft.description,
        expression=draft.expression,
        check=draft.check,
        asks_llm=draft.asks_llm,
    )


def _counts(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    lowered = text.lower()
    units = "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True))
    number = vocabulary.number
    qualifier = r"(?:\s+[a-z\-]+){0,2}?"  # "100 words", "three short bullet points"
    spans: list[tuple[int, int]] = []

    def fresh(match: re.Match[str]) -> bool:
        if any(start <= match.start() < end for start, end in spans):
            return False
        spans.append(match.span())
        return True

    structural = "bullet points|bullet point|bullets|hashtags|hashtag|emojis|emoji|headings|headers|code blocks"
    scope = _scope(lowered)
    patterns: list[tuple[str, str]] = [
        ("range", rf"\bbetween\s+({number})\s+and\s+({number}){qualifier}\s+({units})\b"),
        ("range", rf"\b({number})\s*(?:-|–|to)\s*({number}){qualifier}\s+({units})\b"),
        ("at_most", rf"\b(?:{_AT_MOST})\s+(?:than\s+)?({number}){qualifier}\s+({units})\b"),
        ("below", rf"\b(?:{_BELOW})\s+({number}){qualifier}\s+({units})\b"),
        ("at_least", rf"\b(?:{_AT_LEAST})\s+({number}){qualifier}\s+({units})\b"),
        ("above", rf"\b(?:{_ABOVE})\s+({number}){qualifier}\s+({units})\b"),
        ("none", rf"\b(?:no|without any|without|zero)\s+({units})\b"),
        (
            "none",
            rf"\b(?:don't|do not|never|avoid)\s+(?:use|include|add|using|including|adding)?\s*(?:any\s+)?"
            rf"({structural})\b",
        ),
        ("exact", rf"\b(?:exactly\s+|only\s+|precisely\s+)?({number}){qualifier}\s+({units})\b"),
    ]
    for kind, pattern in patterns:
        for match in re.finditer(pattern, lowered):
            if not fresh(match):
                continue
            groups = match.groups()
            unit = _UNITS[groups[-1]]
            low: int | str | None
            high: int | str | None
            if kind == "none":
                low, high = None, 0
            elif kind == "range":
                low, high = vocabulary.bound(groups[0]), vocabulary.bound(groups[1])
                if low is None or high is None:
                    continue
            else:
                value = vocabulary.bound(groups[0])
                if value is None:
                    continue
                if kind == "below":
                    low, high = None, value - 1 if isinstance(value, int) else value
                elif kind == "above":
                    low, high = value + 1 if isinstance(value, int) else value, None
                elif kind == "at_most":
                    low, high = None, value
                elif kind == "at_least":
                    low, high = value, None
                else:
                    if value == 0:
                        low, high = None, 0
                    else:
                        low, high = value, value
            yield _count_draft(unit, low, high, None)
            if scope is not None:
                yield _count_draft(unit, low, high, scope)


def _scope(lowered: str) -> str | None:
    """``The summary shouldn't be longer than ...``: a count that may apply to one section only."""
    match = re.match(
        r"^(?:(?:the|your|each|every)\s+|[\"“'`])([a-z][a-z\- ]{1,30}?)[\"”'`]?\s+(?:section\s+)?(?:should|must|shall|"
        r"needs?|has to|can|cannot|can't|may|is|are|will|shouldn't|mustn't|won't)(?!\w)",
        lowered,
    )
    if not match:
        return None
    noun = match.group(1).strip()
    if noun in _WHOLE_RESPONSE and noun != "summary":
        return None
    return noun


def _formats(text: str) -> Iterator[_Draft]:
    lowered = text.lower()
    if re.search(r"\bjson\b", lowered):
        if re.search(r"\b(?:list|array)\b", lowered):
            yield _Draft(
                "json_list",
                PRESENTATION_FORMAT,
                "The response is a JSON list.",
                "isinstance(checks.json_value(response), list)",
                {"family": "json_list"},
            )
        else:
            keys = _quoted(text) if re.search(r"\b(?:keys?|fields?|properties|attributes)\b", lowered) else []
            expression = "isinstance(checks.json_value(response), dict)"
            if keys:
                expression = f"checks.json_has_keys(response, {_literal(keys)})"
            yield _Draft(
                "json_with_keys_" + "_".join(keys) if keys else "valid_json",
                PRESENTATION_FORMAT,
                f"The response is a JSON object{' with keys ' + ', '.join(keys) if keys else ''}.",
                expression,
                {"family": "json", "keys": keys},
            )
    if re.search(r"\bmarkdown\b", lowered):
        negated = re.search(r"\b(?:no|not|without|avoid|don't|never)\b[^.]{0,20}markdown", lowered)
        yield _Draft(
            "no_markdown" if negated else "markdown",
            PRESENTATION_FORMAT,
            "Plain text without markdown." if negated else "Uses markdown structure.",
            f"{'not ' if negated else ''}checks.is_markdown(response)",
            {"family": "markdown", "present": not negated},
        )
    if re.search(r"\bbullet(?:ed)?(?: points?| list)?\b|\bbullets\b", lowered) and not re.search(
        r"\b(?:no|not|without|avoid|don't|never)\b[^.]{0,20}bullet", lowered
    ):
        yield _count_draft("bullets", 1, None, None)
    if re.search(r"\bnumbered list\b", lowered):
        yield _count_draft("numbered_items", 1, None, None)
    if re.search(r"\b(?:a|in a|as a|markdown) table\b", lowered):
        yield _Draft(
            "markdown_table",
            PRESENTATION_FORMAT,
            "Contains a markdown table.",
            "checks.has_table(response)",
            {"family": "table"},
        )
    if re.search(r"\bcode (?:block|snippet|example)s?\b", lowered) and not _EXCLUDE_CUE.search(text):
        yield _count_draft("code_blocks", 1, None, None)
    quoted = _quoted(text)
    start = re.search(r"\b(?:start|begin|open)s?\s+(?:\w+\s+)?with\b", lowered)
    end = re.search(r"\b(?:end|finish|close|conclude)s?\s+(?:\w+\s+)?with\b", lowered)
    if start and quoted:
        yield _Draft(
            f"starts_with_{quoted[0]}",
            PRESENTATION_FORMAT,
            f"Starts with “{quoted[0]}”.",
            f"checks.starts_with(response, {_literal(quoted[0])})",
            {"family": "starts_with", "phrase": quoted[0]},
        )
    elif start and re.search(r"\bwith (?:the|a|an)\s+(?:name|title|heading|header)\b", lowered):
        yield _Draft(
            "starts_with_a_title",
            PRESENTATION_FORMAT,
            "The first line is a title.",
            "checks.starts_with_title(response)",
            {"family": "starts_with_title"},
        )
    if end and quoted:
        yield _Draft(
            f"ends_with_{quoted[-1]}",
            PRESENTATION_FORMAT,
            f"Ends with “{quoted[-1]}”.",
            f"checks.ends_with(response, {_literal(quoted[-1])})",
            {"family": "ends_with", "phrase": quoted[-1]},
        )
    section = re.search(
        r"\b(?:add|include|write|create|provide|with|have)\s+(?:a|an|the)\s+(?:short\s+|brief\s+)?"
        r"(?:section|heading|header|part)\s+(?:about|on|for|called|named|titled|listing)\s+"
        r"(?:the\s+)?([a-z][a-z\-]+)",
        lowered,
    )
    named = re.search(r"\b(?:add|include|write|create|provide)\s+(?:a|an|the)\s+([a-z][a-z\-]+)\s+section\b", lowered)
    for match in (section, named):
        if match:
            yield _heading_draft(match.group(1), PRESENTATION_FORMAT)


def _heading_draft(title: str, category: str) -> _Draft:
    title = re.sub(r"\s+", " ", title.strip(" :*#")).strip()
    return _Draft(
        f"has_{title}_section",
        category,
        f"Has a section titled “{title}”.",
        f"checks.has_heading(response, {_literal(title)})",
        {"family": "headings", "headings": [title]},
    )


def _structure_label(text: str) -> Iterator[_Draft]:
    """``**Central Thesis:**`` in a prompt names a section the response should have."""
    match = _STRUCTURE_LABEL.match(text)
    if match and not re.search(r"\b(?:should|must|please|you)\b", match.group(1), re.IGNORECASE):
        yield _heading_draft(match.group(1), PRESENTATION_FORMAT)


def _quoted(text: str) -> list[str]:
    phrases = []
    for match in _QUOTED.finditer(text):
        phrase = next(group for group in match.groups() if group is not None).strip()
        if phrase and not re.fullmatch(r"\{\{?\s*\w+\s*\}?\}", phrase):
            phrases.append(phrase)
    return list(dict.fromkeys(phrases))


def _phrases(text: str, vocabulary: _Vocabulary, *, exclude: bool) -> Iterator[_Draft]:
    """Quoted phrases, input fields and named things the sentence asks to include or to leave out."""
    if not exclude and not _INCLUDE_CUE.search(text):
        return
    category = EXCLUSION if exclude else INCLUSION
    verb = "excludes" if exclude else "includes"
    quoted = [phrase for phrase in _quoted(text) if not re.fullmatch(r"[A-Z][A-Z ]+", phrase)]
    if re.search(r"\b(?:start|begin|end|finish)s?\s+(?:\w+\s+)?with\b", text, re.IGNORECASE):
        quoted = []  # handled as starts/ends-with
    unquoted = _QUOTED.sub(" ", text)
    if exclude:  # only what follows the negation: "Use a warm tone and avoid jargon" excludes jargon, not warm
        cue = _EXCLUDE_CUE.search(unquoted)
        unquoted = unquoted[cue.start() :] if cue else ""
    named = [phrase for phrase in _named_phrases(unquoted) if phrase not in {q.lower() for q in quoted}]
    phrases = quoted + named
    if phrases:
        if exclude:
            expression = f"not checks.contains_any(response, {_literal(phrases)})"
            description = "Uses none of: " + ", ".join(f"“{p}”" for p in phrases) + "."
        else:
            expression = f"all(checks.contains_phrase(response, p) for p in {_literal(phrases)})"
            if len(phrases) == 1:
                expression = f"checks.contains_phrase(response, {_literal(phrases[0])})"
            description = "Contains " + ", ".join(f"“{p}”" for p in phrases) + "."
        yield _Draft(
            f"{verb}_{'_'.join(phrases)}",
            category,
            description,
            expression,
            {"family": verb, "phrases": [p.lower() for p in phrases]},
        )
        if len(phrases) > 1:
            for phrase in phrases:
                sign = "not " if exclude else ""
                yield _Draft(
                    f"{verb}_{phrase}",
                    category,
                    f"{'Does not use' if exclude else 'Contains'} “{phrase}”.",
                    f"{sign}checks.contains_phrase(response, {_literal(phrase)})",
                    {"family": verb, "phrases": [phrase.lower()]},
                )
    for phrase in named if not exclude else []:
        words = phrase.split()
        for word in words if len(words) > 1 else []:  # "the warranty period" may be written "2-year warranty"
            if len(word) > 3:
                yield _Draft(
                    f"includes_{word}",
                    category,
                    f"Contains “{word}” (a word of “{phrase}”).",
                    f"checks.contains_phrase(response, {_literal(word)})",
                    {"family": "includes", "phrases": [word]},
                )
    for field in vocabulary.fields_in(text):
        if exclude:
            yield _Draft(
                f"does_not_mention_{field}",
                category,
                f"Does not repeat the input `{field}`.",
                f"not checks.mentions(response, example[{_literal(field)}])",
                {"family": "not_mentions", "field": field},
            )


def _named_phrases(text: str) -> list[str]:
    """``do not give an overall assessment or conclusion`` -> ["overall assessment", "conclusion"]."""
    out: list[str] = []
    for match in _NAMED_OBJECT.finditer(text):
        for part in re.split(r",\s*|\s+or\s+|\s+and\s+|/", match.group(1)):
            part = re.sub(r"^(?:an?|the|any|all|some|your|their)\s+", "", part.strip(" '-").lower())
            words = part.split()
            vague = {"it", "them", "this", "that", "code", "text", "words", "section", "sections", "heading", "part"}
            meaningful = any(len(word) > 2 and word not in {"the", "and", "any", "all"} for word in words)
            if 1 <= len(words) <= 4 and meaningful and not set(words) & vague and part not in _UNITS:
                out.append(part)
    return list(dict.fromkeys(out))


def _example_blocks(prompt: str) -> list[tuple[int, int]]:
    """Character spans of example demonstrations: from an ``Example output:`` line to a blank line before
    an unindented label, a placeholder line, or the end of the prompt."""
    spans: list[tuple[int, int]] = []
    lines = prompt.splitlines(keepends=True)
    offset = 0
    index = 0
    while index < len(lines):
        line = lines[index]
        if _EXAMPLE_INTRO.search(line.strip()):
            start = offset + len(line)
            end = start
            j = index + 1
            while j < len(lines):
                candidate = lines[j].strip()
                if re.fullmatch(r"[A-Z][A-Z ]{2,}:?|\{\{?\w+\}?\}|(?:end of )?examples? end\.?", candidate, re.I):
                    break
                end += len(lines[j])
                j += 1
            spans.append((start, end))
            offset = end
            index = j
            continue
        offset += len(line)
        index += 1
    return spans


def _inside(instruction: Instruction, spans: list[tuple[int, int]]) -> bool:
    return any(start <= instruction.start < end for start, end in spans)


def _example_drafts(prompt: str, instruction: Instruction, spans: list[tuple[int, int]]) -> Iterator[_Draft]:
    """Structure copied from the example after this sentence: its second-level headings, or its JSON keys."""
    block = next((prompt[start:end] for start, end in spans if start >= instruction.end - 1), "")
    if not block.strip():
        return
    stripped = block.strip().strip("`").removeprefix("json").strip()
    try:
        value = json.loads(stripped)
    except ValueError:
        value = None
    if isinstance(value, dict) and value:
        keys = sorted(map(str, value))
        yield _Draft(
            "json_keys_like_the_example",
            EXAMPLE_DEMONSTRATION,
            "A JSON object with the example's keys: " + ", ".join(keys) + ".",
            f"checks.json_has_keys(response, {_literal(keys)})",
            {"family": "json", "keys": keys},
        )
        return
    found = [(len(hashes), title.strip(" :*")) for hashes, title in _MD_HEADING.findall(block)]
    if not found:
        return
    top = min(level for level, _ in found)
    sections = [re.sub(r"\s*\(.*\)$", "", title) for level, title in found if level == top + 1]
    if top == 1 or len([1 for level, _ in found if level == top]) == 1:
        yield _Draft(
            "starts_with_a_title_like_the_example",
            EXAMPLE_DEMONSTRATION,
            "Starts with a title, as the example does.",
            "checks.starts_with_title(response)",
            {"family": "starts_with_title"},
        )
    if sections:
        yield _Draft(
            "sections_like_the_example",
            EXAMPLE_DEMONSTRATION,
            "Has the example's sections: " + ", ".join(sections) + ".",
            f"all(checks.has_heading(response, t) for t in {_literal(sections)})",
            {"family": "headings", "headings": sections},
        )
        for title in sections:
            yield _heading_draft(title, EXAMPLE_DEMONSTRATION)
    yield _Draft(
        "markdown_headings_like_the_example",
        EXAMPLE_DEMONSTRATION,
        "Uses markdown headings, as the example does.",
        "checks.count(response, 'headings') >= 1",
        {"family": "count", "unit": "headings", "min": 1, "max": None},
    )
