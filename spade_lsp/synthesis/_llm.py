"""The LLM synthesizer: a model picks checks from the typed library, one instruction at a time.

SPADE's split, sized for any model. For each instruction sentence of the prompt, one structured-output call
sends the sentence, its categories, the prompt's input names and a little of the text around it (never the
whole prompt, so every request fits a small model's context: :data:`MAX_REQUEST_CHARS`), and asks for up to
:data:`MAX_CHECKS_PER_INSTRUCTION` checks, each a *family* of :mod:`spade_lsp.synthesis._library` with its
parameters (``amount``, ``unit``, ``text``). Spade writes the code for a family; the model writes code itself
only with the ``code`` family, where no family fits.

Each pick is checked against the sentence before it becomes a candidate, so a small model's guesses cannot
put words in the prompt's mouth: a number or an input must be in the sentence, a phrase to include or avoid
must be quoted from it, a language must be named by it (or by the input it names), a tone or a format must be
cued by it. A pick that fails is listed in :attr:`LLMSynthesizer.rejected` with the reason, never dropped
silently; an instruction whose answer cannot be used at all is listed in :attr:`LLMSynthesizer.dropped`.
Only when no instruction got a usable answer (the model cannot be reached, say) does synthesis fail, and the
caller falls back offline, saying so.

Free-form code (the ``code`` family) is validated as before it could be offered: the source parses; it holds
exactly one top-level function, named ``assert_*``, whose parameters are exactly ``(example, prompt,
response)`` (top-level imports move into the body, decorators are dropped); :func:`spade_lsp.sandbox.check_source`
finds no problem; and it runs without error on one example in a sandbox worker (the ``example`` given to the
constructor, or a synthetic one: each input set to ``"<name> 3"``, the template rendered with those values,
the response ``"This is an example response."``). ``ask_llm`` is answered "yes" by a stand-in during that run.
Nothing of the model's code runs in this process: parsing and the checks are static (:mod:`ast`), and the one
run is :func:`spade_lsp.sandbox.run_assertions`, under the sandbox's confinement like every evaluation. A
function that passes is still unreviewed code (:mod:`spade_lsp._review`); checks written from a family are
spade's own code and need no review.

Candidates come in instruction order, then the model's order; the same check from two instructions is one
candidate serving both.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from spade_lsp.assertions import ASSERTION_PREFIX
from spade_lsp.checks import COUNT_UNITS, language_code
from spade_lsp.errors import LLMError, NotApplicable
from spade_lsp.llm import LLMClient, ask_json
from spade_lsp.sandbox import (
    AskLLM,
    ModuleSource,
    SandboxCase,
    SandboxLimits,
    SandboxResult,
    check_source,
    run_assertions,
)
from spade_lsp.synthesis import PLACEHOLDER_PATTERN, Candidate, Instruction, PromptContext
from spade_lsp.synthesis import _library as library
from spade_lsp.synthesis import _offline as offline
from spade_lsp.synthesis._sidecar import IMPORTS
from spade_lsp.taxonomy import (
    CATEGORY_IDS,
    DATA_PLACEHOLDERS,
    PRESENTATION_FORMAT,
    PROMPT_REPHRASING,
    QUALITATIVE_ASSESSMENT,
    WORKFLOW_DESCRIPTION,
)

__all__ = ["FAMILIES", "MAX_REQUEST_CHARS", "NAME", "PICKED", "LLMSynthesizer", "plausible_families"]

NAME: Final = "llm"
#: The synthesizer a check written from the library records when a model picked it: spade's own code, which
#: needs no review (``llm`` marks code a model wrote).
PICKED: Final = "llm-library"
MAX_CHECKS_PER_INSTRUCTION: Final = 3
#: The most text one request carries (system message, instruction, context): about 1,500 tokens, so a request
#: and its answer fit a 2,048-token context, let alone SmolLM2's 8,192.
MAX_REQUEST_CHARS: Final = 6000
_CONTEXT_CHARS: Final = 400  # of the text before and after the instruction
_MAX_QUESTION_CHARS: Final = 200
#: The longest ``text`` a pick may hold (a phrase, a question, or a short function): a small model that rambles
#: is cut short by the grammar, not by the clock.
_MAX_TEXT_CHARS: Final = 800
PARAMETERS: Final = ("example", "prompt", "response")
EXAMPLE_RESPONSE: Final = "This is an example response."
_HEADER: Final = "\n".join(IMPORTS) + "\n\n\n"
_SKIPPED_KINDS: Final = frozenset({"code", "quote"})  # example output; the model sees what it needs around them

#: The typed library as the model sees it: family -> what it checks and which parameters it reads.
FAMILIES: Final = {
    "max_count": "at most `amount` `unit` in the response",
    "min_count": "at least `amount` `unit`",
    "exact_count": "exactly `amount` `unit`",
    "max_count_per_item": "at most `amount` `unit` in each item (tweet, bullet, step, paragraph)",
    "language": "written in the language `text` (a name such as French, or an input such as {language})",
    "json": "the response is JSON; `text`: an object's required keys, comma-separated, or empty",
    "markdown": "uses markdown formatting",
    "no_markdown": "plain text, no markdown",
    "includes": "contains the words in `text` (comma-separated phrases quoted from the instruction)",
    "excludes": "contains none of the words in `text` (phrases quoted from the instruction)",
    "mentions_input": "refers to the value of the input named in `text`",
    "starts_with": "begins with the words in `text`",
    "ends_with": "ends with the words in `text`",
    "has_section": "has a section titled `text`",
    "ends_with_question": "ends with a question",
    "ends_with_list": "nothing follows the response's last list",
    "only_list": "the response is its list only: no introduction, no closing remark",
    "only_tags": "the response is its tagged parts only: no text outside the <tag></tag> pairs",
    "only_code": "the response is one fenced code block only: no text before or after it",
    # no "no_remarks": SmolLM2 at 135M answered the longer menu with invalid JSON on a short prompt; the cued
    # check is still written where the sentence asks for it (the CUED extras below)
    "title_case": "Title Case: every major word capitalised (every line, or the one title the instruction names)",
    "sourced_numbers": "every number in the response comes from the inputs (nothing invented or speculated)",
    "sourced_codes": "every identifier, web address or timestamp in the response is one the inputs give (none coined)",
    "sourced_names": "every name of a person, place, product or program in the response is one the inputs give",
    "links_kept": "every web address the inputs give appears in the response unchanged",
    "codes_kept": "every format code, placeholder and markup tag the inputs give appears in the response unchanged",
    "quotes_verbatim": "every quotation in the response is copied word for word from the inputs",
    "terms_kept": "names the instruction lists after a colon stay as written (untranslated) where the inputs use them",
    "number_range": "the response's number lies in the range the instruction gives (a score, a rating)",
    "invites_contact": "invites the reader to get in touch (contact, reach out)",
    "call_to_action": "asks the reader to act (a call to action: try, sign up, get started)",
    "positive_tone": "warm, friendly, positive tone",
    "neutral_tone": "neutral, professional tone",
    "readable": "plain, easy to read, no jargon",
    "concise": "short sentences, concise",
    "ask": "a yes/no question in `text` that a reader answers about the response (for judgement calls)",
    "code": "Python source in `text`: def assert_<name>(example, prompt, response) -> bool, when nothing else fits",
    "none": "the instruction asks nothing that can be checked on the response",
}
#: The units a pick may name: those a sentence's words can name (:func:`_unit` rejects any other, so offering one a
#: sentence cannot name, such as "contractions" or "first_person", only widens a small model's choice).
_UNITS: Final = ("", *(unit for unit in COUNT_UNITS if unit in set(offline._UNITS.values())))

_SYSTEM: Final = (
    "You turn one instruction from an LLM prompt into checks on the responses the prompt produces. Choose up to "
    f"{MAX_CHECKS_PER_INSTRUCTION} checks from this library (family: what it checks):\n"
    + "\n".join(f"- {family}: {what}" for family, what in FAMILIES.items())
    + '\nFor each check give family, amount (a number, or an input in braces such as {word_count}; else ""), '
    "unit (one of: " + ", ".join(_UNITS[1:]) + '; else "") and text (else ""). Take numbers, words and '
    "names from the instruction itself; never invent them. Answer with JSON only."
)


def _schema(families: Sequence[str] = tuple(FAMILIES)) -> dict[str, Any]:
    item = {
        "type": "object",
        "properties": {
            "family": {"type": "string", "enum": list(families)},
            "amount": {"type": "string", "maxLength": 24},
            "unit": {"type": "string", "enum": list(_UNITS)},
            "text": {"type": "string", "maxLength": _MAX_TEXT_CHARS},
        },
        "required": ["family", "amount", "unit", "text"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"checks": {"type": "array", "items": item, "maxItems": MAX_CHECKS_PER_INSTRUCTION}},
        "required": ["checks"],
        "additionalProperties": False,
    }


class _Pick(BaseModel):
    family: str
    amount: str = ""
    unit: str = ""
    text: str = ""


class _Picks(BaseModel):
    checks: list[_Pick]


@dataclass(frozen=True, slots=True)
class _Source:
    """A free-form function that passed the static checks, waiting for its sandbox run."""

    name: str
    source: str
    instruction: Instruction
    category: str
    description: str


class _Rejected(Exception):
    """Why a pick or a generated function is not offered."""


_ALWAYS: Final = ("ask", "code", "none")
_COUNTED = re.compile(
    r"(?:\d|\{\{?\s*\w+\s*\}?\}|\[\w+\]|\b(?:" + "|".join(map(re.escape, offline._NUMBER_WORDS)) + r")\b)"
)


def plausible_families(instruction: Instruction, context: PromptContext) -> list[str]:
    """The families whose cue the sentence holds (a number and a unit for a count, a negation for ``excludes``,
    "markdown" for the markdown checks...), with ``ask``, ``code`` and ``none`` always: the choice a request
    offers. A small model can then only choose among checks the sentence could mean; a large one loses
    nothing, since the others would be rejected against the sentence anyway."""
    text = instruction.text
    lowered = text.lower()
    found: list[str] = []
    units = [word for word in offline._UNITS if re.search(rf"\b{re.escape(word)}\b", lowered)]
    if units and _COUNTED.search(text):
        found += ["max_count", "min_count", "exact_count"]
        if re.search(r"\b(?:per|each|every)\b", lowered):
            found.append("max_count_per_item")
    if offline._named_language(text) or offline._language_fields(text, offline._Vocabulary(context)):
        found.append("language")
    if "json" in lowered:
        found.append("json")
    if "markdown" in lowered:
        found.append("no_markdown" if library.markdown_refused(lowered) else "markdown")
    negated = offline._negation(text) is not None
    if negated:
        found.append("excludes")
    elif offline._INCLUDE_CUE.search(text) and offline._quoted(text):  # the words themselves, not a thing to mention
        found.append("includes")
    if _inputs_named(text, context):
        found.append("mentions_input")
    if re.search(r"\b(?:start|begin|open)s?\b", lowered):
        found.append("starts_with")
    if re.search(r"\b(?:end|finish|close|conclude|sign)s?\b", lowered):
        found.append("ends_with")
    if re.search(r"\b(?:section|heading|header|title)s?\b", lowered) or re.fullmatch(r"\W*[\w ]{2,40}:\W*", text):
        found.append("has_section")
    if "question" in lowered:
        found.append("ends_with_question")
    found += [family for family in ("positive_tone", "neutral_tone", "readable", "concise") if _cued(family, text)]
    found += [family for family, (asks, _) in library.CUED.items() if asks(text)]
    return [family for family in FAMILIES if family in found or family in _ALWAYS]


def _cued(family: str, sentence: str) -> bool:
    try:
        _quality(family, sentence)
    except _Rejected:
        return False
    return True


def _ask(client: LLMClient, payload: Mapping[str, Any], families: Sequence[str]) -> _Picks:
    """The model's picks for one instruction. An answer the LLM layer gave up on (still off the schema after its
    re-asks) is read too when it holds JSON, so the per-pick rules drop only the picks that break them."""
    messages = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]
    answer = ask_json(client, messages, _schema(families), what="assertion checks")
    if isinstance(answer, dict) and isinstance(answer.get("checks"), list):  # keep the picks that validate
        answer = {"checks": [c for c in answer["checks"] if isinstance(c, dict) and isinstance(c.get("family"), str)]}
    try:
        return _Picks.model_validate(answer)
    except ValidationError as error:
        detail = error.errors()[0]
        where = ".".join(map(str, detail["loc"]))
        raise LLMError(f"the model's checks answer does not match the schema: {where}: {detail['msg']}") from error


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def _slug(text: str, limit: int = 56) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if len(slug) > limit:
        slug = slug[:limit].rsplit("_", 1)[0]
    return slug or "check"


def _context(instruction: Instruction, context: PromptContext) -> tuple[str, str]:
    """A little of the template before and after the instruction (what a heading or an example says of it)."""
    start = max(0, instruction.start - _CONTEXT_CHARS)
    end = instruction.end + _CONTEXT_CHARS
    if not context.text[instruction.start : instruction.end].strip():  # offsets of another text: none
        return "", ""
    return context.text[start : instruction.start], context.text[instruction.end : end]


def _asked(instruction: Instruction) -> bool:
    """Whether the model is asked about this sentence: an instruction, not example output, input data, a bare
    rewording or a task description that asks nothing of the answer."""
    if instruction.kind in _SKIPPED_KINDS or not re.search(r"[A-Za-z]{2}", instruction.text):
        return False
    if re.fullmatch(r"\W*(?:\w+\W+){0,5}\w*\W*:\W*", instruction.text.strip()):  # "**Central Thesis:**", "FORMAT:"
        return False
    if offline._is_data_line(offline._clean(instruction.text), offline._Vocabulary(PromptContext("", ()))):
        return False
    labels = set(instruction.categories)
    return not (labels and labels <= {DATA_PLACEHOLDERS, PROMPT_REPHRASING, WORKFLOW_DESCRIPTION})


# -- a pick, checked against its sentence ----------------------------------------------------------------------


def _inputs_named(text: str, context: PromptContext) -> list[str]:
    return offline._Vocabulary(context).fields_in(text)


def _amount(pick: _Pick, sentence: str, context: PromptContext) -> int | str:
    """The pick's amount as the library takes it (an int, or ``{input}``), if the sentence states it."""
    raw = pick.amount.strip().lower()
    field = raw.strip("{}[] ")
    if field in context.inputs:
        if field not in _inputs_named(sentence, context):
            raise _Rejected(f"the input {field!r} is not in the instruction")
        return "{" + field + "}"
    words = {str(v): k for k, v in offline._NUMBER_WORDS.items()}
    if not re.fullmatch(r"\d+", raw.replace(",", "")):
        if raw in offline._NUMBER_WORDS:
            raw = str(offline._NUMBER_WORDS[raw])
        else:
            raise _Rejected(f"amount {pick.amount!r} is neither a number nor an input of the prompt")
    number = int(raw.replace(",", ""))
    lowered = sentence.lower()
    stated = re.search(rf"(?<!\d){number}(?!\d)", lowered.replace(",", "")) or (
        str(number) in words and re.search(rf"\b{re.escape(words[str(number)])}\b", lowered)
    )
    if not stated and not re.search(rf"(?<!\d){number + 1}(?!\d)", lowered):  # "under 100": at most 99
        raise _Rejected(f"the number {number} is not in the instruction")
    return number


def _unit(pick: _Pick, sentence: str) -> str:
    if pick.unit not in COUNT_UNITS:
        raise _Rejected(f"unit {pick.unit!r} is not one of {', '.join(COUNT_UNITS)}")
    words = [word for word, unit in offline._UNITS.items() if unit == pick.unit]
    if not any(re.search(rf"\b{re.escape(word)}\b", sentence, re.IGNORECASE) for word in words):
        raise _Rejected(f"the instruction does not speak of {pick.unit.replace('_', ' ')}")
    return pick.unit


def _quoted_from(text: str, sentence: str) -> list[str]:
    """The comma-separated phrases of ``text`` that the sentence holds (a phrase it does not hold is the
    model's, not the prompt's, and is left out); :class:`_Rejected` when none is."""
    phrases = [p.strip(" \"'“”‘’`.") for p in re.split(r"[,;\n]", text) if p.strip(" \"'“”‘’`.")]
    if not phrases:
        raise _Rejected("no phrase given")
    found = [p for p in phrases if re.search(rf"(?<!\w){re.escape(_squash(p))}(?!\w)", _squash(sentence))]
    if not found:
        raise _Rejected(f"{', '.join(repr(p) for p in phrases)} is not in the instruction")
    return found


def _quality(family: str, sentence: str) -> library.Draft:
    for pattern, slug, measures in offline._QUALITIES:
        if slug == family.removesuffix("_tone") or slug == family:
            if not re.search(pattern, sentence, re.IGNORECASE):
                raise _Rejected(f"the instruction does not ask for a {family.replace('_', ' ')}")
            expression, description, check = measures[0]
            return library.Draft(family, QUALITATIVE_ASSESSMENT, description, expression, check)
    raise _Rejected(f"no measure for {family}")  # pragma: no cover - FAMILIES and _QUALITIES agree


#: What the offline parser calls each family's checks (the ``family`` of their spec), to read a family's
#: parameters from the sentence itself when the model's do not hold.
_SPEC_FAMILY: Final = {
    "max_count": "count", "min_count": "count", "exact_count": "count", "max_count_per_item": "count",
    "language": "language", "json": "json", "markdown": "markdown", "no_markdown": "markdown",
    "includes": "includes", "excludes": "excludes", "mentions_input": "mentions", "starts_with": "starts_with",
    "ends_with": "ends_with", "has_section": "headings", "ends_with_question": "ends_with_question",
    **{family: family for family in library.CUED},
}  # fmt: skip


def draft_for(pick: _Pick, instruction: Instruction, context: PromptContext) -> library.Draft:
    """The library's check for a pick: with the model's parameters when the sentence states them, else with
    the parameters the sentence itself gives that family (a model may choose the right check and fumble its
    words); :class:`_Rejected` saying why when neither holds."""
    try:
        return _draft(pick, instruction.text, context)
    except _Rejected:
        found = _from_sentence(pick.family, instruction, context)
        if found is None:
            raise
        return found


def _from_sentence(family: str, instruction: Instruction, context: PromptContext) -> library.Draft | None:
    """The offline parser's check of ``family`` for this sentence, if it reads one."""
    spec_family = _SPEC_FAMILY.get(family)
    if spec_family is None:
        return None
    vocabulary = offline._Vocabulary(context)
    for draft in offline.OfflineSynthesizer()._drafts(instruction, context, vocabulary, []):
        check = draft.check or {}
        if check.get("family") != spec_family:
            continue
        if spec_family == "count" and not _count_matches(family, check):
            continue
        if spec_family == "markdown" and check.get("present") != (family == "markdown"):
            continue
        return draft
    return None


def _count_matches(family: str, check: Mapping[str, Any]) -> bool:
    low, high, per = check.get("min"), check.get("max"), check.get("per")
    if family == "max_count_per_item":
        return per is not None and high is not None
    if per is not None:
        return False
    if family == "exact_count":
        return low is not None and low == high
    return (high is not None and low is None) if family == "max_count" else (low is not None and high is None)


def _draft(pick: _Pick, sentence: str, context: PromptContext) -> library.Draft:
    """The library's check for a pick, with the model's parameters found in the sentence."""
    family = pick.family
    if family in ("max_count", "min_count", "exact_count", "max_count_per_item"):
        unit, amount = _unit(pick, sentence), _amount(pick, sentence, context)
        low = amount if family in ("min_count", "exact_count") else None
        high = amount if family in ("max_count", "exact_count", "max_count_per_item") else None
        per = ("item", "items") if family == "max_count_per_item" else None
        return library.count_draft(unit, low, high, None, per)
    if family == "language":
        return _language(pick, sentence, context)
    if family == "json":
        keys = [k.strip(" \"'`") for k in pick.text.split(",") if k.strip(" \"'`")]
        if not re.search(r"\bjson\b", sentence, re.IGNORECASE):
            raise _Rejected("the instruction does not ask for JSON")
        missing = [k for k in keys if _squash(k) not in _squash(context.text)]
        if missing:
            raise _Rejected(f"key(s) {', '.join(missing)} are not in the prompt")
        return library.json_draft(keys)
    if family in ("markdown", "no_markdown"):
        if not re.search(r"\bmarkdown\b", sentence, re.IGNORECASE):
            raise _Rejected("the instruction does not speak of markdown")
        if (family == "no_markdown") != library.markdown_refused(sentence.lower()):
            raise _Rejected(f"the instruction asks for {'no ' if family == 'markdown' else ''}markdown")
        return library.markdown_draft(present=family == "markdown")
    if family in ("includes", "excludes"):
        phrases = _quoted_from(pick.text, sentence)
        if family == "excludes" and not offline._EXCLUDE_CUE.search(sentence):
            raise _Rejected("the instruction forbids nothing")
        quoted = {_squash(q) for q in offline._quoted(sentence)}
        if family == "includes" and not (phrases := [p for p in phrases if _squash(p) in quoted]):
            # "mention safety precautions" names content a response words its own way: the offline reading asks
            # the assistant model instead (a word check failed most good outputs on other authors' prompts)
            raise _Rejected("the instruction quotes none of these words")
        return library.phrases_draft([p.lower() for p in phrases], exclude=family == "excludes")
    if family == "mentions_input":
        field = pick.text.strip(" {}[]")
        if field not in context.inputs or field not in _inputs_named(sentence, context):
            raise _Rejected(f"{pick.text!r} is not an input the instruction names")
        return library.mentions_draft(field)
    if family in ("starts_with", "ends_with"):
        cue = r"\b(?:end|finish|close|conclude|sign)" if family == "ends_with" else r"\b(?:start|begin|open)"
        if not re.search(cue, sentence, re.IGNORECASE):
            raise _Rejected(f"the instruction does not say how the response {family.split('_')[0]}s")
        end = family == "ends_with"
        return library.edge_draft(
            _quoted_from(pick.text, sentence)[0], end=end, refused=library.edge_refused(sentence, end=end)
        )
    if family == "has_section":
        title = pick.text.strip(" :#*\"'")
        if not title or _squash(title) not in _squash(context.text):
            raise _Rejected(f"no section {pick.text!r} in the prompt")
        return library.heading_draft(title, PRESENTATION_FORMAT)
    if family == "ends_with_question":
        if "question" not in sentence.lower():
            raise _Rejected("the instruction does not ask for a question")
        return library.ends_with_question_draft(refused=library.edge_refused(sentence, end=True))
    if family in ("positive_tone", "neutral_tone", "readable", "concise"):
        return _quality(family, sentence)
    if family in library.CUED:
        asks, draft = library.CUED[family]
        if not asks(sentence):
            raise _Rejected(f"the instruction does not ask for {FAMILIES[family]}")
        return draft(sentence, tuple(context.inputs))
    if family == "ask":  # a judgement: the model's question when it wrote one, else the instruction itself
        question = " ".join(pick.text.split())
        if not (question.endswith("?") and 8 <= len(question) <= _MAX_QUESTION_CHARS):
            question = offline._question(" ".join(sentence.split()))
        return library.Draft(
            f"llm_{_slug(sentence, 40)}",
            QUALITATIVE_ASSESSMENT,
            f"Asks the model: {question}",
            f"ask_llm({library.literal(question)}, response, prompt=prompt)",
            None,
            asks_llm=True,
        )
    raise _Rejected(f"unknown family {family!r}")


def _language(pick: _Pick, sentence: str, context: PromptContext) -> library.Draft:
    field = pick.text.strip(" {}[]")
    if field in context.inputs:
        if field not in _inputs_named(sentence, context):
            raise _Rejected(f"the input {field!r} is not in the instruction")
        return library.language_draft(field=field)
    try:
        code = language_code(pick.text)
    except NotApplicable:
        raise _Rejected(f"{pick.text!r} names no language") from None
    named = offline._named_language(sentence)
    if named is None or named[1].split("-")[0] != code.split("-")[0]:
        raise _Rejected(f"the instruction does not ask for {pick.text}")
    return library.language_draft(code=code, name=named[0])


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def synthetic_example(context: PromptContext) -> SandboxCase:
    """The one example generated functions run on when the constructor got none (see the module docstring)."""
    inputs: dict[str, Any] = {name: f"{name} 3" for name in context.inputs}
    inputs.update({str(k): _json_safe(v) for k, v in context.example_inputs.items()})

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return str(inputs[name]) if name in inputs else match.group(0)

    return SandboxCase(inputs, PLACEHOLDER_PATTERN.sub(fill, context.text), EXAMPLE_RESPONSE)


def _answer_yes(question: str, response: str, context: Mapping[str, Any]) -> bool:
    """Validation's stand-in for the model: lets the code after an ``ask_llm`` call run, for free."""
    return True


def _strip_fence(text: str) -> str:
    match = re.fullmatch(r"\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```\s*", text, re.DOTALL)
    return match.group(1) if match else text


def normalise_function(raw: str) -> tuple[str, str]:
    """``(name, source)`` of one generated function, or :class:`_Rejected` naming the first structural problem.

    Top-level imports move into the body and decorators are dropped, so the source is the ``def`` alone.
    """
    text = textwrap.dedent(_strip_fence(raw)).strip("\n")
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        line = f" (line {error.lineno})" if error.lineno else ""
        raise _Rejected(f"does not parse: {error.msg}{line}") from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise _Rejected(f"does not parse: {error}") from None
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    imports: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.append(node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a stray docstring
        else:
            raise _Rejected(f"has top-level code besides the function (line {node.lineno}: {type(node).__name__})")
    if len(functions) != 1:
        names = ", ".join(f.name for f in functions) or "none"
        raise _Rejected(f"must define exactly one top-level function, found {len(functions)} ({names})")
    function = functions[0]
    if not function.name.startswith(ASSERTION_PREFIX):
        raise _Rejected(f"`{function.name}` is not named {ASSERTION_PREFIX}*")
    args = function.args
    given = tuple(a.arg for a in [*args.posonlyargs, *args.args])
    if given != PARAMETERS or args.vararg or args.kwarg or args.kwonlyargs or args.defaults:
        shown = ast.unparse(args)
        raise _Rejected(f"`{function.name}` must take exactly (example, prompt, response); it takes ({shown})")
    if imports or function.decorator_list:
        body = list(function.body)
        docstring = ast.get_docstring(function, clean=False) is not None
        function.body = body[:1] + imports + body[1:] if docstring else imports + body
        function.decorator_list = []
        try:
            source = ast.unparse(function)
        except (RecursionError, MemoryError):
            raise _Rejected("too deeply nested to check") from None
    else:
        lines = text.splitlines()
        source = "\n".join(lines[function.lineno - 1 : function.end_lineno]).rstrip()
    return function.name, source


def _renamed(source: str, old: str, new: str) -> str:
    if old == new:
        return source
    return re.sub(rf"^((?:async\s+)?def\s+){re.escape(old)}\b", rf"\g<1>{new}", source, count=1)


def _shape(source: str) -> str:
    """The function's structure with its name blanked, to spot duplicates."""
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    node.name = "_"
    return ast.dump(node)


class LLMSynthesizer:
    """Asks a model, one instruction at a time, for checks from the library; see the module docstring.

    After :meth:`synthesize`, :attr:`dropped` lists ``(instruction, reason)`` for instructions whose answer could
    not be used and :attr:`rejected` lists ``(check, reason)`` for picks and functions not offered.
    """

    name = NAME

    def __init__(
        self,
        client: LLMClient,
        *,
        example: SandboxCase | None = None,
        limits: SandboxLimits | None = None,
        ask_llm: AskLLM | None = None,
    ) -> None:
        self.client = client
        self.example = example
        self.limits = limits or SandboxLimits()
        self.ask_llm: AskLLM = ask_llm or _answer_yes
        self.dropped: list[tuple[str, str]] = []
        self.rejected: list[tuple[str, str]] = []

    def synthesize(self, instructions: Sequence[Instruction], context: PromptContext) -> list[Candidate]:
        self.dropped = []
        self.rejected = []
        asked = [i for i in instructions if _asked(i)]
        if not asked:
            return []
        out: list[Candidate] = []
        position: dict[str, int] = {}
        taken: dict[str, int] = {}
        sources: list[_Source] = []
        shapes: dict[str, str] = {}
        answered = 0
        unmet: list[Instruction] = []  # instructions the model picked a check for
        met: set[int] = set()  # ... and those with one usable

        def add(draft: library.Draft, instruction: Instruction, synthesizer: str) -> None:
            key = offline._equivalence_key(draft.expression)
            if key in position:
                out[position[key]] = offline._serves(out[position[key]], instruction)
                return
            position[key] = len(out)
            out.append(replace(offline._candidate(draft, instruction, taken), synthesizer=synthesizer))

        for instruction in asked:
            picks = self._picks(instruction, context)
            if picks is None:
                continue
            answered += 1
            if any(pick.family != "none" for pick in picks):
                unmet.append(instruction)
            for pick in picks:
                if pick.family == "none":
                    continue
                if pick.family == "code":
                    source = self._source(pick, instruction, taken, shapes)
                    if source is not None:
                        sources.append(source)
                    continue
                try:
                    add(draft_for(pick, instruction, context), instruction, PICKED)
                    met.add(id(instruction))
                except _Rejected as why:
                    self.rejected.append((f"{pick.family} for “{_clip(instruction.text)}”", str(why)))
            # what the sentence's own cue words ask for, as the offline synthesizer writes it, whatever the model
            # picked: a small model that answers "none" to "Refrain from speculating" loses no check
            if not offline._ROLE.match(offline._clean(instruction.text)):
                for asks, cued in library.CUED.values():
                    if asks(instruction.text):
                        add(cued(instruction.text, tuple(context.inputs)), instruction, offline.NAME)
                for draft in offline.input_rule_drafts(instruction.text, context):
                    add(draft, instruction, offline.NAME)
        if answered == 0:  # nothing the model said could be read: the caller falls back offline and says why
            reasons = "; ".join(reason for _, reason in self.dropped[:2])
            raise LLMError(f"no instruction got a usable answer from the model ({reasons})")
        passed = self._run(sources, context)
        met |= {id(source.instruction) for source in sources if source.name in passed}
        # the model saw a check but wrote none that could be used ("excludes" with no phrase for "Never mention
        # prices.", a function that raises): the offline reading of the sentence, where it has one
        for instruction in unmet:
            if id(instruction) not in met:
                for draft in offline.OfflineSynthesizer().instruction_drafts(instruction, context):
                    if not draft.asks_llm:
                        add(draft, instruction, offline.NAME)
        out += [
            Candidate(
                name=source.name,
                category=source.category,
                sentence=source.instruction.text.strip(),
                version=source.instruction.version,
                synthesizer=NAME,
                description=source.description,
                source=source.source,
                asks_llm="ask_llm(" in source.source,
            )
            for source in sources
            if source.name in passed
        ]
        return out

    def _picks(self, instruction: Instruction, context: PromptContext) -> list[_Pick] | None:
        before, after = _context(instruction, context)
        families = plausible_families(instruction, context)
        payload = {
            "instruction": instruction.text.strip(),
            "families": families,
            "categories": [c for c in instruction.categories if c in CATEGORY_IDS],
            "prompt_inputs": list(context.inputs),
            "text_before": before,
            "text_after": after,
        }
        if len(_SYSTEM) + len(json.dumps(payload, ensure_ascii=False)) > MAX_REQUEST_CHARS:
            payload["text_before"] = payload["text_after"] = ""  # the instruction alone, then
        if len(_SYSTEM) + len(json.dumps(payload, ensure_ascii=False)) > MAX_REQUEST_CHARS:
            self.dropped.append((instruction.text, f"longer than a request may be ({MAX_REQUEST_CHARS} characters)"))
            return None
        try:  # one failed or unusable answer loses its instruction, not the whole synthesis
            answer = _ask(self.client, payload, families)
        except LLMError as error:
            self.dropped.append((instruction.text, str(error)))
            return None
        for extra in answer.checks[MAX_CHECKS_PER_INSTRUCTION:]:
            self.rejected.append((extra.family, f"more than {MAX_CHECKS_PER_INSTRUCTION} checks for one instruction"))
        return answer.checks[:MAX_CHECKS_PER_INSTRUCTION]

    def _source(
        self, pick: _Pick, instruction: Instruction, taken: dict[str, int], shapes: dict[str, str]
    ) -> _Source | None:
        """A free-form function, statically checked (its sandbox run comes with the others')."""
        hint = _name_hint(pick.text)
        try:
            old, source = normalise_function(pick.text)
        except _Rejected as error:
            self.rejected.append((hint, str(error)))
            return None
        try:  # static checks only: nothing of the model's code runs in this process
            problems = check_source(_HEADER + source, allow_imports=self.limits.allow_imports)
            shape = _shape(source)
        except (RecursionError, MemoryError):  # an expression nested thousands deep (`- - - ... 1`)
            self.rejected.append((old, "too deeply nested to check"))
            return None
        if problems:
            self.rejected.append((old, "; ".join(p.message for p in problems)))
            return None
        if shape in shapes:
            self.rejected.append((old, f"duplicate of {shapes[shape]}"))
            return None
        base = ASSERTION_PREFIX + _slug(old.removeprefix(ASSERTION_PREFIX))
        taken[base] = taken.get(base, 0) + 1
        name = base if taken[base] == 1 else f"{base}_{taken[base]}"
        shapes[shape] = name
        category = next((c for c in instruction.categories if c in CATEGORY_IDS), QUALITATIVE_ASSESSMENT)
        description = f"Model-written code for: {instruction.text.strip()}"
        return _Source(name, _renamed(source, old, name), instruction, category, description)

    # -- one example in the sandbox, for free-form code ------------------------------------------------------

    def _run(self, drafts: Sequence[_Source], context: PromptContext) -> set[str]:
        """Names of the functions that ran on the example without error; the others go to :attr:`rejected`."""
        if not drafts:
            return set()
        case = self.example or synthetic_example(context)
        result, starts = self._sandbox(drafts, case)
        if result.module_error is not None and len(drafts) > 1:
            passed: set[str] = set()
            for draft in drafts:  # one bad function must not sink the rest
                passed |= self._run([draft], context)
            return passed
        if result.module_error is not None:
            error = result.module_error
            message = _relative_lines(error.message, starts[0])
            self.rejected.append((drafts[0].name, f"does not load in the sandbox: {error.kind}: {message}"))
            return set()
        passed = set()
        for column, draft in enumerate(drafts):
            cell = result.error(0, column)
            if cell is not None and cell.kind not in ("needs_model", "not_applicable"):
                message = _relative_lines(cell.message, starts[column])
                self.rejected.append((draft.name, f"fails on the example ({cell.kind}): {message}"))
            else:
                passed.add(draft.name)
        return passed

    def _sandbox(self, drafts: Sequence[_Source], case: SandboxCase) -> tuple[SandboxResult, list[int]]:
        """The run, and the module line where each draft's ``def`` starts."""
        separator = "\n\n\n"
        starts: list[int] = []
        line = _HEADER.count("\n") + 1
        for draft in drafts:
            starts.append(line)
            line += draft.source.count("\n") + 1 + separator.count("\n")
        text = _HEADER + separator.join(draft.source for draft in drafts) + "\n"
        result = run_assertions(
            ModuleSource(text, "<generated assertions>"),
            [case],
            names=[draft.name for draft in drafts],
            limits=self.limits,
            ask_llm=self.ask_llm,
        )
        return result, starts


def _clip(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _relative_lines(message: str, start: int) -> str:
    """Sandbox messages end in ``(line N)`` of the generated module; make N a line of the function itself."""
    return re.sub(r"\(line (\d+)\)$", lambda m: f"(line {int(m.group(1)) - start + 1} of the function)", message)


def _name_hint(source: str) -> str:
    """The function name in unusable source, for the rejection report."""
    match = re.search(rf"def\s+({ASSERTION_PREFIX}\w*)", source) or re.search(r"def\s+([A-Za-z_]\w*)", source)
    return match.group(1) if match else "<no function>"
