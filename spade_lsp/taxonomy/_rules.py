"""Word-boundary rules for the SPADE taxonomy: the evidence the offline classifier's trained model starts from.

These rules were the offline classifier until they were found not to generalise (0.935 micro-F1 on the dev set
they were written from, 0.74 on unseen deltas). They now feed :mod:`spade_lsp.taxonomy._offline` as features;
:class:`RuleClassifier` is kept to compare against.

Prompt engineers state requirements in a small register of English: imperatives ("Include ...",
"Never ..."), modal obligations ("The answer should be ..."), role and task statements ("You are ...",
"Your task is ..."), and template syntax (``{var}``, fenced samples, role headers). Each rule family
below targets one of these habits rather than any particular prompt. Descriptive prose ("Assistant is
able to provide accurate responses") states no requirement, so the requirement-like families only fire
when the sentence reads as a directive.

A delta's changes are labelled in context (:meth:`RuleClassifier.classify_changes`): a removed
sentence states no new requirement and carries no label; a modified sentence carries the categories its
new wording adds, or :data:`PROMPT_REPHRASING` when it adds none; a placeholder counts as data
integration only when it is new to the delta (a moved ``{input}`` is not a new input).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Final

from rapidfuzz import fuzz

from spade_lsp._types import ChangeKind, SentenceChange
from spade_lsp.taxonomy import (
    COUNT,
    DATA_PLACEHOLDERS,
    EXAMPLE_DEMONSTRATION,
    EXCLUSION,
    INCLUSION,
    PRESENTATION_FORMAT,
    PROMPT_REPHRASING,
    QUALITATIVE_ASSESSMENT,
    WORKFLOW_DESCRIPTION,
)

__all__ = ["RuleClassifier", "placeholders"]

_I: Final = re.IGNORECASE
_EMPTY: Final[frozenset[str]] = frozenset()

# --- Template syntax -------------------------------------------------------------------------------------
# Placeholders are how a template integrates data: {var}, {{var}}, and the bracketed [snake_case] style
# some authors use. JSON objects ({"key": ...}) and chat markers ([INST]) are not placeholders.
_PLACEHOLDER: Final = re.compile(
    r"\{\{\s*([A-Za-z_][\w.\-]*)\s*\}\}|(?<!\{)\{([A-Za-z_][\w\-]*)\}(?!\})|\[([a-z][a-z0-9]*_[a-z0-9_]*|[a-z]+)\]"
)
# The token that wraps a placeholder (<paper>{text}</paper>, "Context:{x}"): changing it re-describes
# the data even when the variable keeps its name.
_PLACEHOLDER_TOKEN: Final = re.compile(r"\S*(?:\{\{?[A-Za-z_][\w.\-]*\}\}?|\[[a-z][a-z0-9_]*\])\S*")

# Chat-template role markers and separators carry no instruction. An AI turn written into a template is
# a demonstration (a few-shot answer), so that header alone counts as an example.
_ROLE_HEADER: Final = re.compile(
    r"^\s*(?:(?:system|human|chat|user)?\s*message(?:\s*prompt\s*template)?|prompt\s*template|"
    r"<\|(?:system|user|assistant|end)\|>|\[/?inst\]|<</?sys>>|system|user|human)\s*:?\s*$",
    _I,
)
_AI_TURN_HEADER: Final = re.compile(r"^\s*ai\s*message(?:\s*prompt\s*template)?\s*:?\s*$", _I)
_CHAT_MARKERS: Final = re.compile(r"<\|(?:system|user|assistant|end)\|>|\[/?INST\]|<</?SYS>>", _I)
_SEPARATOR_ONLY: Final = re.compile(r"^[\s\-=_*#~`>|.:]*$")

# Lines of markup, JSON or a whole code fence: in a prompt these are sample outputs or output templates.
_FENCE: Final = re.compile(r"^\s*```")
_CODE_LINE: Final = re.compile(
    r"^\s*(?:<!--|</?[A-Za-z][\w-]*(?:\s+[\w-]+\s*=|\s*/?>)|[\[\]{}](?:\s*[,\]}]?\s*$|\s*\")|\}\s*,?\s*$)"
)
# A template, not an example, leaves slots for the model to fill: <...>, [your answer here].
_TEMPLATE_SLOT: Final = re.compile(
    r"<(?-i:[A-Z])[^<>\n]*\s[^<>\n]*>|\[(?:your|the|insert|enter)\b[^\]]*\]|"
    r"\b(?:the action to take|your response here|the input to the action)\b",
    _I,
)

_LEADER: Final = re.compile(r"^\s*(?:[-*•+]\s+|\d{1,2}[.)]\s+|[a-z][.)]\s+|#{1,6}\s*|>\s*)*")

# --- Directive detection -----------------------------------------------------------------------------------
# Requirements are stated as imperatives or modal obligations; the requirement families need one of these.
_IMPERATIVE_VERBS: Final = (
    r"add|adhere|aim|analy[sz]e|answer|apply|ask|assess|avoid|be|begin|break|check|choose|cite|classify|"
    r"compare|compose|consider|convert|craft|create|decide|define|describe|determine|devise|do|don't|draft|"
    r"elaborate|emphasi[sz]e|encourage|end|ensure|enumerate|evaluate|exclude|explain|express|extract|fill|"
    r"find|focus|follow|format|generate|give|group|highlight|identify|ignore|imagine|include|incorporate|"
    r"introduce|keep|label|limit|list|look|make|mention|never|note|omit|only|output|pick|place|plan|please|"
    r"pose|present|prioriti[sz]e|produce|provide|put|rank|rate|read|refer|reference|refrain|remember|remove|"
    r"rephrase|reply|respond|restrict|return|review|rewrite|say|score|search|select|separate|share|"
    r"capitali[sz]e|bold|indent|number|"
    r"showcase|sort|specify|split|start|state|stick|structure|suggest|summari[sz]e|take|tell|think|"
    r"translate|try|use|utili[sz]e|verify|walk|wrap|write"
)
_IMPERATIVE_START: Final = re.compile(
    rf"^(?:(?:always|also|then|now|finally|first|next)\s+)?(?:{_IMPERATIVE_VERBS})\b", _I
)
_MODAL: Final = re.compile(
    r"\b(?:should|must|shall|needs? to|has to|have to|always|please|remember to|"
    r"try to|aim to|strive to|graded|required|i want you to|you will)\b",
    _I,
)

# --- Category rules --------------------------------------------------------------------------------
_NUM: Final = (
    r"(?:\d+(?:[.,]\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|"
    r"thirty|fifty|hundred|a few|a couple(?: of)?|a single|single|\[\w*\]|\{\w*\})"
)
_UNIT: Final = (
    r"(?:words?|sentences?|paragraphs?|bullets?|bullet points?|points?|items?|lines?|characters?|chars|"
    r"tokens?|questions?|examples?|sections?|steps?|answers?|responses?|options?|suggestions?|ideas?|"
    r"tips?|reasons?|names?|results?|emojis?|hashtags?|pages?|paragraph|keywords?|titles?|headlines?|"
    r"topics?|facts?|quotes?|alternatives?|variations?|choices?|lists?|rows?|columns?|entries|entry|"
    r"newline characters?|tweets?|replies|reply|syllables?)"
)
_COUNT_RULES: Final = (
    # "three bullet points", "in about 200 words", "a couple of sentences"
    re.compile(rf"\b{_NUM}\s+(?:[\w'-]+\s+){{0,2}}?{_UNIT}\b", _I),
    # "at most 5", "no more than [word_count]", "limited to a max of 3", "three sentences maximum"
    re.compile(
        rf"\b(?:at most|at least|no more than|not more than|no longer than|no fewer than|fewer than|"
        rf"less than|more than|up to|maximum(?: of)?|minimum(?: of)?|max(?:\.|imum)?(?: of)?|min(?: of)?|"
        rf"limit(?:ed)? to(?: a max(?:imum)? of)?|exactly)\s+{_NUM}",
        _I,
    ),
    re.compile(rf"\b{_UNIT}\s+(?:maximum|max|minimum|min|or (?:less|fewer|more))\b", _I),
    re.compile(r"\b(?:longer|shorter) than\b|\bword (?:count|limit)\b|\bcharacter limit\b", _I),
    re.compile(r"\b(?:a single|one|only one)\s+(?:answer|response|sentence|word|paragraph|line|item|option)\b", _I),
)

# Prohibitions: imperative "never/avoid/don't", modal "should not". A subject before "don't" makes it a
# description ("if you don't know", "you do not need to") rather than an instruction.
_EXCLUSION_RULES: Final = (
    re.compile(r"\b(?:should|must|shall)\s*(?:not|never)\b|\b(?:shouldn't|mustn't|shan't)\b", _I),
    re.compile(r"(?<!\byou )(?<!\bi )(?<!\bwe )(?<!\bthey )(?<!\bit )\b(?:do not|don't|dont|never)\s+\w+", _I),
    re.compile(r"\b(?:avoid|refrain from|exclude|omit|leave out|steer clear of)\b", _I),
    re.compile(r"\b(?:under no circumstances|not allowed|forbidden|prohibited|no need to)\b", _I),
    re.compile(
        r"\b(?:make sure|ensure|be sure)\s+(?:that\s+)?(?:you\s+|it\s+)?"
        r"(?:do not|don't|never|does not|doesn't)\b",
        _I,
    ),
)
_EXCLUSION_FALSE: Final = re.compile(r"\b(?:do not|don't|never)\s+(?:know|need|have|hesitate)\b", _I)

# Requirements that something appear in the output. Descriptive "the routine includes" is not one, so
# the verb must be imperative, follow a modal, or be the participle "containing" of an output spec.
_INCLUSION_VERBS: Final = r"(?:include|mention|incorporate|cite|reference|highlight|contain|cover|list|state)"
_INCLUSION_RULES: Final = (
    re.compile(
        rf"(?:^|[,;:(]\s*|\b(?:and|then|also|always|please|should|must|shall|will|to|only|ONLY|sure to|"
        rf"remember to|need to|needs to)\s+)(?:also\s+|always\s+|only\s+)?{_INCLUSION_VERBS}\b",
        _I,
    ),
    re.compile(r"\bcontaining\b|\bmake sure (?:that )?(?:it|the \w+|you) (?:includes?|mentions?|contains?|has)\b", _I),
    re.compile(
        r"(?:^|\b(?:then|also|always|please|should|must)\s+)(?:add|put|insert|append|provide|give)\b"
        r"(?:\s+[\w'\"-]+){0,5}?\s+(?:section|summary|note|comment|explanation|paragraph|disclaimer|"
        r"title|heading|header|signature|link|citation|reference|reason|reasoning|justification|"
        r"answer|call to action|feedback|sources?|list|evaluation)\b",
        _I,
    ),
    re.compile(r"\b(?:you will explain|explain (?:how|why|what))\b|\b(?:must|should) (?:have|contain)\b(?! been)", _I),
)

# Output shape: serialisation formats, markup, tags, openings, templates. "Input format" describes the
# input, not the response, and "answer in short form" is a quality, so bare "format"/"answer in" need care.
_FORMAT_RULES: Final = (
    re.compile(
        r"\b(?:json|yaml|xml|csv|markdown|latex|bullet(?:ed)? (?:list|points?)|numbered list|code block|"
        r"key[- ]value pairs?|title case|upper ?case|lower ?case|all caps|capitali[sz]ed?|schema|"
        r"(?:in|as|use) a (?:markdown )?table|plain text)\b",
        _I,
    ),
    re.compile(r"\b(?:format(?:ted|ting)?|template|layout)\b", _I),
    re.compile(r"<\w+>\s*tags?\b|\b(?:xml|html) tags?\b|\bin <\w+>|\btags?\.\)", _I),
    re.compile(
        r"^(?:always\s+)?(?:start|begin|end|open|close|prefix)\s+(?:your \w+\s+|the \w+\s+|each \w+\s+)?"
        r"(?:with|by)\b|^(?:always\s+)?(?:wrap|enclose)\b|\b(?:should|must) (?:start|begin|end) with\b",
        _I,
    ),
    re.compile(
        r"\b(?:respond|reply|answer|output|return|write|submit)\s+(?:only\s+)?(?:in|with|as|using)\s+"
        r"(?:the (?:following|specified|same|given) format|json|markdown|html|a list|a table|bullet|xml|"
        r"yaml|english|\w+ format|a single word|one word|yes or no|\"yes)",
        _I,
    ),
    re.compile(r"\b(?:presented|displayed|formatted|structured|rendered|represented)\s+(?:as|in)\b", _I),
    re.compile(r"\bhtml\b", _I),
    re.compile(
        r"\b(?:on (?:its|their) own line|on a (?:new|separate) line|one per line|"
        r"separated by (?:commas|newlines)|"
        r"comma[- ]separated|new ?line characters?)\b|"
        r"\b(?:respond|reply|answer|output)\s+(?:only\s+)?(?:with|in)\s+(?:only\s+)?[\"'“]?(?:yes|no|true|false)\b",
        _I,
    ),
)
_FORMAT_NEEDS_DIRECTIVE: Final = frozenset({1, 6})
_INPUT_WORD: Final = re.compile(r"\binputs?\b", _I)
# A heading that announces the output's format ("# Output format", "Response template:").
_FORMAT_HEADING: Final = re.compile(
    r"^(?:#+\s*)?(?:(?!input)\w+\s+)?(?:format|formatting|template)(?:\s+instructions)?\s*:?\s*$", _I
)

# Demonstrations: explicit "for example" cues, example headings, sample-output labels.
_EXAMPLE_RULES: Final = (
    re.compile(r"\b(?:for example|for instance|few[- ]shot|demonstrations?)\b|\be\.g\.", _I),
    re.compile(
        r"\b(?:examples?|sample|demo)\s*(?:outputs?|inputs?|responses?|answers?|conversation|dialogue|"
        r"interaction|emails?|summary|summaries)?\s*\d*\s*:|^(?:#+\s*)?examples?\s*\d*\s*:?\s*$",
        _I,
    ),
    re.compile(
        r"\bhere(?:'s| is| are)\s+(?:an?|some|two|three|several|the following|a (?:complete|full|sample))?\s*"
        r"(?:complete |full |sample |good |great )?examples?\b|"
        r"\b(?:sample|example) (?:output|response|answer)s?\b|"
        r"\bas an example\b|\blike this\s*:",
        _I,
    ),
)

# Quality words: tone, length-in-spirit, clarity, style. They set a bar only when said as a directive
# ("be concise", "keep it short", "you will be graded on originality", "in a friendly tone").
_QUALITY_WORDS: Final = re.compile(
    r"\b(?:concise(?:ly|ness)?|succinct(?:ly)?|brief(?:ly)?|short|detailed|in[- ]depth|thorough(?:ly)?|"
    r"comprehensive|clear(?:ly)?|clarity|professional(?:ly)?|friendly|polite(?:ly)?|formal|informal|casual|"
    r"tone|voice|style|engaging|compelling|persuasive|informative|personal|personali[sz]ed|empathetic|"
    r"warm|respectful|humorous|funny|witty|original(?:ity)?|creative|simple|simply|easy to understand|"
    r"plain language|reading level|specific|descriptive|accurate(?:ly)?|precise(?:ly)?|objective|neutral|"
    r"unbiased|coherent|relevant|useful|meaningful|high[- ]quality|quality|gratitude|enthusiastic|"
    r"positive|kind|grouchy|playful|confident|valuable|insightful)\b",
    _I,
)
_QUALITY_ALWAYS: Final = re.compile(
    r"\b(?:in|with|use|adopt|keep|maintain)\s+an?\s+[\w-]+(?:\s+and\s+[\w-]+)?\s+(?:tone|voice|style|manner)\b|"
    r"\b(?:tone|style) (?:should|must)\b|\bin (?:short|simple|plain) (?:form|terms|language|words)\b|"
    r"\bkeep (?:it|the \w+|your \w+|\w+) (?:short|concise|brief|simple)\b|"
    r"\b(?:be|sound) (?:more |very )?\w+ly\b",
    _I,
)

# Workflow: roles, tasks, sequencing, numbered procedures, agent loops, tool use.
_WORKFLOW_RULES: Final = (
    re.compile(
        r"^(?:you are|you're|act as|acting as|as an? \w+|assume the role|imagine you are|pretend|"
        r"i want you to|i will (?:give|provide|tell|send)|you will (?:be given|receive|be provided|get|read|"
        r"act|help|review|analy[sz]e|generate|write|create)|your (?:role|task|job|goal|objective|mission|"
        r"purpose|aim) is|the (?:task|goal|objective) is)\b",
        _I,
    ),
    re.compile(
        r"\b(?:step by step|step-by-step|first,|firstly|secondly|then|afterwards|after that|next,|finally|"
        r"once you(?:'ve| have)?|before you|after you|as part of your|in order to|go through|walk through|"
        r"take into account|think about|(?:after|before|while) \w+ing)\b",
        _I,
    ),
    re.compile(r"^\s*(?:thought|action|action input|observation|reflection|final answer|plan)\s*:", _I),
    re.compile(r"^(?:#+\s*)?input(?: data)?(?: format)?\s*:?\s*$", _I),
    re.compile(
        r"^(?:#+\s*)?(?:task|instructions?|objective|workflow|steps|process(?: instructions)?|"
        r"procedure|rules(?: to follow)?|important rules(?: to follow)?|goal|role|guidelines|"
        r"tools(?: and agents)?)\s*:?\s*$",
        _I,
    ),
    re.compile(
        r"\b(?:ha(?:s|ve) access to|use (?:the|a|any of the) (?:following|tools?|context|search)|"
        r"utili[sz]e (?:the|any of the) following|the following (?:tools|steps|pieces of)|"
        r"based on (?:the|those|these) (?:context|instructions|criteria)|to answer the question)\b",
        _I,
    ),
    re.compile(
        r"^(?:please\s+)?(?:analy[sz]e|review|identify|generate|create|write|summari[sz]e|compose|evaluate|"
        r"determine|classify|extract|translate|compare|read|consider|follow|answer|ask|explain|elaborate|assess|"
        r"check|verify|rate|score|decide|search|find|look up|split|plan|craft|devise|introduce|showcase|"
        r"encourage|express|pose|think|use|utili[sz]e|start|begin|give|take|do|draft|rewrite|rank|select|"
        r"propose|suggest|tell|fetch|call|solve|calculate|convert|map|group|sort|categori[sz]e|label|tag|"
        r"detect|list|outline|describe|investigate|respond)\b",
        _I,
    ),
    re.compile(r"\b(?:designed to|is able to|you will be)\b", _I),
)


# A worked input/output pair ("Input: I hate Mondays / Output: negative") is a demonstration; a template's
# "Question: {question} / Answer:" has no filled-in answer, so both sides must hold real text.
_SHOT_INPUT: Final = re.compile(
    r"^\s*(?:input|question|q|user|human|text|review|email|query|sentence|message)\s*:\s*(\S.*)$", _I | re.M
)
_SHOT_OUTPUT: Final = re.compile(
    r"^\s*(?:output|answer|a|assistant|ai|label|sentiment|response|summary|category|result)\s*:\s*(\S.*)$",
    _I | re.M,
)


def _is_shot(text: str) -> bool:
    """Whether ``text`` holds a filled-in input line and a filled-in output line."""

    def filled(pattern: re.Pattern[str]) -> bool:
        return any(_without_placeholders(_CHAT_MARKERS.sub(" ", m.group(1))).strip() for m in pattern.finditer(text))

    return filled(_SHOT_INPUT) and filled(_SHOT_OUTPUT)


def placeholders(text: str) -> frozenset[str]:
    """Names of the ``{var}``, ``{{var}}`` and ``[var]`` placeholders in ``text``."""
    return frozenset(next(g for g in m.groups() if g) for m in _PLACEHOLDER.finditer(text))


def _is_code(text: str) -> bool:
    stripped = text.strip()
    return bool(_FENCE.match(stripped) or _CODE_LINE.match(stripped))


def _fence_body(text: str) -> str:
    lines = text.strip().splitlines()
    return "\n".join(line for line in lines if not _FENCE.match(line))


def _without_placeholders(text: str) -> str:
    return _PLACEHOLDER.sub(" ", text)


def _is_inert(text: str) -> bool:
    """Blank lines, separators, role headers and chat markers state nothing."""
    stripped = _CHAT_MARKERS.sub(" ", text).strip()
    return not stripped or bool(_SEPARATOR_ONLY.match(stripped) or _ROLE_HEADER.match(stripped))


def _classify_code(text: str) -> frozenset[str]:
    """A fence or markup line is a sample (example) or, when it leaves slots to fill, an output template."""
    body = _fence_body(text) if _FENCE.match(text.strip()) else text
    if not _without_placeholders(body).strip(" \t\n`"):
        return frozenset({DATA_PLACEHOLDERS}) if placeholders(body) else _EMPTY
    labels = {PRESENTATION_FORMAT} if _TEMPLATE_SLOT.search(body) else {EXAMPLE_DEMONSTRATION}
    if placeholders(body):
        labels.add(DATA_PLACEHOLDERS)
    return frozenset(labels)


# Cheap gates: a rule family's regexes run only when one of its trigger words occurs in the clause, which
# keeps a first pass over a 2,000-sentence prompt well under the editor's latency budget.
_WORD: Final = re.compile(r"[a-z][a-z'-]*")
_DIGIT: Final = re.compile(r"\d")


def _gate(words: str) -> frozenset[str]:
    return frozenset(words.split())


_COUNT_GATE: Final = _gate(
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty fifty hundred "
    "few couple single most least more less fewer longer shorter limit limited maximum minimum max min "
    "exactly count up no not"
)
_EXCLUSION_GATE: Final = _gate(
    "not don't dont never avoid refrain exclude omit leave steer circumstances allowed forbidden prohibited "
    "need shouldn't mustn't shan't doesn't"
)
_INCLUSION_GATE: Final = _gate(
    "include mention incorporate cite reference highlight contain cover list state containing add put insert "
    "append provide give explain have has includes mentions contains"
)
_FORMAT_GATE: Final = _gate(
    "json yaml xml csv markdown latex bullet bulleted bullets numbered code key key-value title upper "
    "uppercase lower lowercase caps capitalize capitalise capitalized capitalised schema table plain "
    "format formatted "
    "formatting template layout tags tag start begin end open close prefix wrap enclose respond reply answer "
    "output return write submit presented displayed formatted structured rendered represented html line "
    "newline newlines comma comma-separated separated commas"
)
_EXAMPLE_GATE: Final = _gate("example examples instance e few-shot demonstration demonstrations sample demo like")
_QUALITY_GATE: Final = _gate("tone voice style manner short simple plain keep be sound")


def _classify_clause(clause: str, labels: set[str]) -> None:
    """Apply the rule families to one line or clause of prose (leader stripped)."""
    words = frozenset(_WORD.findall(clause.lower()))
    has_digit = bool(_DIGIT.search(clause))
    directive = bool(_IMPERATIVE_START.match(clause) or _MODAL.search(clause))
    if (has_digit or not words.isdisjoint(_COUNT_GATE) or "[" in clause or "{" in clause) and (
        (directive and _COUNT_RULES[0].search(clause)) or any(r.search(clause) for r in _COUNT_RULES[1:])
    ):
        labels.add(COUNT)
    if not words.isdisjoint(_EXCLUSION_GATE):
        if not _EXCLUSION_FALSE.search(clause) or any(r.search(clause) for r in _EXCLUSION_RULES[2:]):
            if any(r.search(clause) for r in _EXCLUSION_RULES):
                labels.add(EXCLUSION)
        elif _EXCLUSION_RULES[0].search(clause):
            labels.add(EXCLUSION)
    if not words.isdisjoint(_INCLUSION_GATE) and any(r.search(clause) for r in _INCLUSION_RULES):
        labels.add(INCLUSION)
    if not words.isdisjoint(_FORMAT_GATE) or "<" in clause:
        if _FORMAT_HEADING.match(clause):
            labels.add(PRESENTATION_FORMAT)
        # Without a directive, a format named next to "input" describes the input, not the response.
        needs_directive = _FORMAT_NEEDS_DIRECTIVE | ({0} if _INPUT_WORD.search(clause) else set())
        for i, rule in enumerate(_FORMAT_RULES):
            if (directive or i not in needs_directive) and rule.search(clause):
                labels.add(PRESENTATION_FORMAT)
                break
    if not words.isdisjoint(_EXAMPLE_GATE) and any(r.search(clause) for r in _EXAMPLE_RULES):
        labels.add(EXAMPLE_DEMONSTRATION)
    if (not words.isdisjoint(_QUALITY_GATE) and _QUALITY_ALWAYS.search(clause)) or (
        directive and _QUALITY_WORDS.search(clause)
    ):
        labels.add(QUALITATIVE_ASSESSMENT)
    if any(r.search(clause) for r in _WORKFLOW_RULES):
        labels.add(WORKFLOW_DESCRIPTION)


_CLAUSE_SPLIT: Final = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])|\n+|;\s+|\s+-\s+(?=[A-Z])")


@functools.lru_cache(maxsize=65536)
def _classify_text(text: str) -> frozenset[str]:
    """Categories of one unit read on its own (cached: prompts repeat across versions)."""
    if _is_inert(text):
        return _EMPTY
    stripped = text.strip()
    if _AI_TURN_HEADER.match(stripped):
        return frozenset({EXAMPLE_DEMONSTRATION})
    if _is_code(stripped):
        return _classify_code(stripped)
    labels: set[str] = set()
    if placeholders(stripped):
        labels.add(DATA_PLACEHOLDERS)
    if "\n" in stripped and _is_shot(stripped):
        labels.add(EXAMPLE_DEMONSTRATION)
    prose = _CHAT_MARKERS.sub(" ", stripped)
    for raw in _CLAUSE_SPLIT.split(prose):
        clause = _LEADER.sub("", raw).strip()
        if clause:
            _classify_clause(clause, labels)
    return frozenset(labels)


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _placeholder_tokens(text: str) -> list[str]:
    return sorted(_PLACEHOLDER_TOKEN.findall(text))


def _lines(text: str) -> list[str]:
    return [n for n in (_normalise(line) for line in text.splitlines()) if n and not _FENCE.match(n)]


class RuleClassifier:
    """The rule-based SPADE classifier (the offline default before the trained model); now a feature source."""

    name = "rules"

    #: A removed and an added unit this alike are one unit moved (and perhaps lightly edited).
    moved_similarity: float = 0.85
    #: Within an edited multi-line unit (a code fence), lines this alike are one line reworded.
    line_similarity: float = 0.6

    def classify_sentence(self, text: str) -> frozenset[str]:
        """Categories of one sentence of a prompt, read on its own."""
        return _classify_text(text)

    def classify_changes(self, changes: Sequence[SentenceChange]) -> list[frozenset[str]]:
        """Categories of each change of one delta, in the same order."""
        old_names: set[str] = set()
        removed: list[str] = []
        for change in changes:
            if change.old is not None:
                old_names |= placeholders(change.old.text)
                if change.kind is ChangeKind.REMOVED and not _is_inert(change.old.text):
                    removed.append(_normalise(change.old.text))
        removed_blob = "\n".join(removed)
        out: list[frozenset[str]] = []
        for change in changes:
            if change.kind is ChangeKind.REMOVED or change.new is None:
                out.append(_EMPTY)
                continue
            new_text = change.new.text
            if change.old is not None:
                out.append(self._classify_edit(change.old.text, new_text))
                continue
            moved_from = self._moved_from(new_text, removed, removed_blob)
            if moved_from is not None:
                out.append(self._classify_edit(moved_from, new_text))
                continue
            labels = set(_classify_text(new_text))
            if DATA_PLACEHOLDERS in labels and not placeholders(new_text) - old_names:
                labels.discard(DATA_PLACEHOLDERS)
            out.append(frozenset(labels))
        return out

    def _moved_from(self, new_text: str, removed: list[str], removed_blob: str) -> str | None:
        """The removed text ``new_text`` was moved or re-chunked from, if any (a move adds nothing)."""
        if _is_inert(new_text):
            return None
        target = _normalise(new_text)
        if len(target) >= 12 and target in removed_blob:
            return target
        best, best_score = None, 0.0
        for old in removed:
            score = fuzz.ratio(target, old) / 100.0
            if score > best_score:
                best, best_score = old, score
        return best if best_score >= self.moved_similarity else None

    def _classify_edit(self, old_text: str, new_text: str) -> frozenset[str]:
        """An edited unit: what its new wording adds, else a rephrasing (or a placeholder rename)."""
        if _normalise(old_text) == _normalise(new_text) or _is_inert(new_text):
            return _EMPTY
        old_lines, new_lines = _lines(old_text), _lines(new_text)
        if len(old_lines) > 1 or len(new_lines) > 1:
            return self._classify_block_edit(old_lines, new_lines)
        old_labels = _classify_text(old_text)
        new_labels = _classify_text(new_text)
        labels = set(new_labels - old_labels)
        labels.discard(DATA_PLACEHOLDERS)
        renamed = placeholders(old_text) != placeholders(new_text) or (
            bool(placeholders(new_text)) and _placeholder_tokens(old_text) != _placeholder_tokens(new_text)
        )
        if renamed:
            labels.add(DATA_PLACEHOLDERS)
            # A pure rename states nothing new beyond the data it now integrates.
            if _without_placeholders(old_text).split() == _without_placeholders(new_text).split():
                return frozenset(labels)
        if not labels - {DATA_PLACEHOLDERS}:
            labels.add(PROMPT_REPHRASING)
        return frozenset(labels)

    def _classify_block_edit(self, old_lines: list[str], new_lines: list[str]) -> frozenset[str]:
        """An edited fence or block: its new lines are added sentences, its reworded lines edits."""
        old_set = set(old_lines)
        remaining = [line for line in old_lines if line not in set(new_lines)]
        labels: set[str] = set()
        for line in new_lines:
            if line in old_set:
                continue
            best, best_score = -1, 0.0
            for k, old in enumerate(remaining):
                score = fuzz.ratio(line, old) / 100.0
                if score > best_score:
                    best, best_score = k, score
            if best >= 0 and best_score >= self.line_similarity:
                labels |= self._classify_edit(remaining.pop(best), line)
            else:
                labels |= _classify_text(line)
        if not labels and len(new_lines) != len(old_lines):
            labels.add(PROMPT_REPHRASING)
        return frozenset(labels)
