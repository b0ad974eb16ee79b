"""Surface cues of a prompt sentence: directive mood, negation, numbers with units, quoted phrases, placeholders,
format nouns, quality adjectives, sequencing words, role and task statements, example markers, code, length.

Plain Python (no numpy), so the language server's read path can use them without importing numpy.
"""

from __future__ import annotations

import re
from typing import Final

from spade_lsp.taxonomy._rules import _is_code

__all__ = ["CUE_NAMES", "cues", "plain"]

_I: Final = re.IGNORECASE

# --- surface cues ------------------------------------------------------------------------------------------
# Word-list cues are set intersections with the text's lower-case words; the phrase cues are regexes run only
# when the text holds one of their trigger characters or words (the first pass over a big prompt has a budget).


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD_CUES: Final[dict[str, frozenset[str]]] = {
    "negation": _words(
        "not no never don't dont doesn't avoid without refrain exclude omit nor can't won't shouldn't mustn't "
        "nothing none neither"
    ),
    "format_noun": _words(
        "json yaml xml csv markdown html latex table tables bullet bullets bulleted numbered list lists "
        "heading headings header headers bold italic italics backticks tag tags format formatted formatting "
        "template schema key keys field fields column columns line lines newline newlines prefix capital "
        "capitals capitalized capitalised capitalize capitalise uppercase lowercase section sections"
    ),
    "response_word": _words(
        "answer answers response responses reply replies output outputs result results summary message email "
        "text feedback"
    ),
    "quality_word": _words(
        "concise brief short clear detailed friendly polite professional formal informal casual tone style "
        "voice warm empathetic engaging simple accurate objective helpful informative specific constructive "
        "respectful enthusiastic persuasive creative fun funny serious natural readable thorough personal "
        "confident kind neutral relevant coherent precise succinct"
    ),
    "include_verb": _words(
        "include includes including mention mentions cite reference contain contains add incorporate cover "
        "highlight state provide list explain specify note suggest recommend also"
    ),
    "sequence": _words(
        "first firstly second secondly then next after afterwards before finally step steps once when if "
        "until while process workflow"
    ),
    "task_verb": _words(
        "analyze analyse review identify classify extract evaluate assess determine compare check summarize "
        "summarise translate generate create write read search tool tools help assist"
    ),
    "example_word": _words("example examples instance sample samples demonstration demonstrations"),
}
_WORDS: Final = re.compile(r"[a-z][a-z'-]*")
_DIGIT: Final = re.compile(r"\d")
_DIRECTIVE: Final = re.compile(
    r"^(?:[-*\d.)\s]*)(?:please\s+|always\s+|also\s+|then\s+|now\s+|finally\s+|first\s+|next\s+)?"
    r"(?:add|avoid|be|begin|break|cite|create|describe|do|don't|end|ensure|explain|focus|follow|format|"
    r"generate|give|highlight|include|keep|limit|list|make|mention|never|only|output|provide|put|"
    r"refrain|remember|reply|respond|return|start|state|use|write|answer|summari[sz]e|sound|try)\b|"
    r"\b(?:should|must|shall|need to|needs to|has to|have to|make sure|be sure|ensure|always|never|"
    r"i want you to|you will|please)\b",
    _I,
)
_NUMBER_WORDS: Final = _words("one two three four five six seven eight nine ten twenty fifty hundred single few")
_NUMBER_UNIT: Final = re.compile(
    r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twenty|fifty|hundred|single|a few|"
    r"\{\w+\}|\[\w+\])\s+(?:[\w-]+\s+)?(?:words?|sentences?|paragraphs?|bullets?|points?|items?|lines?|"
    r"characters?|tokens?|questions?|examples?|sections?|steps?|options?|suggestions?|ideas?|tips?|"
    r"reasons?|emojis?|hashtags?|keywords?|titles?|pages?|minutes?|sets?|reps?|days?|exercises?)\b",
    _I,
)
_BOUND_WORDS: Final = _words(
    "at no not fewer less more up maximum minimum max min limit limited exactly under between only single"
)
_BOUND: Final = re.compile(
    r"\b(?:at most|at least|no more than|not more than|fewer than|less than|more than|up to|maximum|"
    r"minimum|max|min|limit(?:ed)? to|exactly|under|between|only one|a single)\b",
    _I,
)
_QUOTED: Final = re.compile(r"\"[^\"]{1,80}\"|“[^”]{1,80}”|'[^'\s][^']{0,78}[^'\s]'(?!\w)")
_PLACEHOLDER_LIKE: Final = re.compile(r"\{\{?\s*[A-Za-z_][\w.\-]*\s*\}\}?|\[[a-z][a-z0-9_]*\]")
_ROLE: Final = re.compile(
    r"^(?:[-*\s]*)(?:you are|you're|act as|as an? |your (?:task|job|role|goal|objective|mission)|"
    r"you will|i want you|imagine you|pretend)\b",
    _I,
)
_IO_PAIR: Final = re.compile(
    r"^\s*(?:input|question|q|user|human)\s*:.*\n(?:.*\n)*?\s*(?:output|answer|a|assistant|ai)\s*:\s*\S", _I | re.M
)
# A prohibition: an imperative or modal obligation in the negative ("Do not ...", "Never ...", "You must not").
_NEGATED_DIRECTIVE: Final = re.compile(
    r"(?:^|[.;:!]\s+)(?:[-*\d.)\s]*)(?:please\s+|and\s+|also\s+)?(?:never|do not|don't|avoid|refrain from|"
    r"under no circumstances|no need to)\b|"
    r"\b(?:should|must|shall|will|may|can)(?:\s+not|n't)\b|\b(?:should|must)\s+never\b|\b(?:cannot|can't)\s+(?:be|use|include|mention)\b",
    _I,
)
# A requirement to include something: "Include ...", "Make sure to mention ...", "The answer must contain ...".
_INCLUDE_DIRECTIVE: Final = re.compile(
    r"(?:^|[.;:!]\s+)(?:[-*\d.)\s]*)(?:please\s+|always\s+|also\s+)?(?:include|mention|add|cite|incorporate|"
    r"highlight|list|state|provide|reference|make sure (?:to|that you) (?:include|mention|add|cite|list)|"
    r"be sure to (?:include|mention|add|cite|list))\b|"
    r"\b(?:should|must|needs? to|has to|have to)\s+(?:also\s+|always\s+)?(?:include|contain|mention|cite|list|"
    r"cover|reference|state)\b",
    _I,
)
# "one" is a pronoun, not a count, in "each one", "which one", "one another", "one of" and the like.
_ONE_PRONOUN: Final = re.compile(
    r"\b(?:each|every|any|this|that|which|no|another|the|a|someone|everyone)\s+one\b|\bone\s+(?:another|of)\b",
    _I,
)
_ONE: Final = re.compile(r"\bone\b", _I)
_HEADING: Final = re.compile(r"^\s*(?:#+\s*)?[\w ()/-]{1,40}:\s*$")

_CUE_NAMES: Final = (
    "directive",
    *_WORD_CUES,
    "number_unit",
    "bound",
    "number",
    "quoted",
    "placeholder",
    "role",
    "io_pair",
    "question_mark",
    "heading",
    "negated_directive",
    "include_directive",
)


# A link is not an example marker or a format noun ("example.com", "/format/"): links read as one word.
_URL: Final = re.compile(r"\b(?:https?://|www\.)\S+|\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|dev|ai)\b(?:/\S*)?", _I)
# Requirement cues only state a requirement on the response in directive mood ("The input format follows ..."
# and "You have the ability to write HTML" describe, they do not ask): a linear model needs the product.
_DIRECTED: Final = ("negation", "number_unit", "bound", "quoted", "format_noun", "quality_word", "include_verb")
_INPUT_WORD: Final = re.compile(r"\b(?:input|inputs|given|provided|below|following|above)\b", _I)


def plain(text: str) -> str:
    """The text as the cues and the embedding read it: links replaced by a neutral word."""
    return _URL.sub(" link ", text) if ("." in text and ("/" in text or "www" in text or ".com" in text)) else text


def cues(text: str) -> list[float]:
    """The surface cues of ``text``, in ``_SURFACE`` order (1.0 or 0.0, the length in [0, 1])."""
    text = plain(text)
    lower = text.lower()
    words = frozenset(_WORDS.findall(lower))
    stripped = text.strip()
    directive = bool(_DIRECTIVE.search(text))
    hits = [not words.isdisjoint(vocabulary) for vocabulary in _WORD_CUES.values()]
    if not hits[_EXAMPLE_WORD] and "e.g" in lower:
        hits[_EXAMPLE_WORD] = True
    number_words = words
    if "one" in words and len(_ONE_PRONOUN.findall(text)) >= len(_ONE.findall(text)):
        number_words = words - {"one"}
    number = bool(_DIGIT.search(text)) or not number_words.isdisjoint(_NUMBER_WORDS)
    bracket = "{" in text or "[" in text
    hits = [
        directive,
        *hits,
        (number or bracket) and bool(_NUMBER_UNIT.search(text)),  # number_unit
        not words.isdisjoint(_BOUND_WORDS) and bool(_BOUND.search(text)),  # bound
        number,
        ('"' in text or "'" in text or "“" in text) and bool(_QUOTED.search(text)),  # quoted
        bracket and bool(_PLACEHOLDER_LIKE.search(text)),  # placeholder
        bool(_ROLE.match(text)),
        "\n" in stripped and bool(_IO_PAIR.search(text)),  # io_pair
        stripped.endswith("?"),  # question_mark
        stripped.endswith(":") and bool(_HEADING.match(stripped)),  # heading
        directive and hits[_NEGATION] and bool(_NEGATED_DIRECTIVE.search(text)),  # negated_directive
        directive and hits[_INCLUDE_VERB] and bool(_INCLUDE_DIRECTIVE.search(text)),  # include_directive
    ]
    values = [1.0 if hit else 0.0 for hit in hits]
    values.extend(values[i] if directive else 0.0 for i in _DIRECTED_INDEX)
    format_noun = hits[_FORMAT_NOUN]
    values.append(1.0 if not directive and format_noun and _INPUT_WORD.search(text) else 0.0)  # described_format
    values.append(1.0 if _is_code(stripped) else 0.0)
    values.append(1.0 if "\n" in stripped else 0.0)
    values.append(min(len(text.split()), 60) / 60.0)
    return values


_EXAMPLE_WORD: Final = list(_WORD_CUES).index("example_word")
_NEGATION: Final = list(_WORD_CUES).index("negation")
_INCLUDE_VERB: Final = list(_WORD_CUES).index("include_verb")
_FORMAT_NOUN: Final = _CUE_NAMES.index("format_noun")
_DIRECTED_INDEX: Final = tuple(_CUE_NAMES.index(name) for name in _DIRECTED)
CUE_NAMES: Final = (
    *_CUE_NAMES,
    *(f"directive*{name}" for name in _DIRECTED),
    "described_format",
    "code",
    "multiline",
    "length",
)
