"""The LLM synthesizer: SPADE's two steps through a model, and every function validated before it is offered.

1. **Criteria** (one structured-output call for the whole prompt): the template and its instruction sentences,
   numbered and with their categories, in; a list of ``{criterion, category, source_phrase, sentence_index}``
   out. A criterion is dropped (and listed in :attr:`LLMSynthesizer.dropped`) when its category is not a
   taxonomy id, its sentence index names no sentence, or its source phrase is not in the prompt (compared
   with whitespace runs collapsed and case ignored, so a phrase spanning a line break still counts).
2. **Functions** (one structured-output call per criterion, so each answer is cached on its own and a new
   criterion costs one call, not a re-run of all): Python source for one to three
   ``def assert_<name>(example: dict, prompt: str, response: str) -> bool`` functions, several when the
   criterion is vague ("be concise": 150, 250 or 400 words). They may use :mod:`spade_lsp.checks`,
   ``ask_llm(question, response)`` for subjective checks, and the sandbox's import allow-list.

Validation, before a function is offered (a rejected one is listed in :attr:`LLMSynthesizer.rejected` with
the reason, never dropped silently):

- the source parses; it holds exactly one top-level function, named ``assert_*``, whose parameters are
  exactly ``(example, prompt, response)``; top-level imports are moved into the function body (the sidecar
  puts a decorator right above the ``def``, so the source must be the function alone) and decorators dropped;
- :func:`spade_lsp.sandbox.check_source` finds no problem (imports outside the allow-list, forbidden
  builtins such as ``open`` or ``eval``, escape attributes);
- it runs without error on one example in a sandbox worker: the ``example`` given to the constructor, or a
  synthetic one (each prompt input set to ``"<name> 3"`` unless :attr:`PromptContext.example_inputs` gives a
  value, so text and numeric-bound checks both run; the template rendered with those values; the response
  ``"This is an example response."``). A verdict of either True or False is fine: only an error rejects.
  ``ask_llm`` questions are answered "yes" by a stand-in during validation, so the rest of the function runs
  without spending tokens (pass ``ask_llm`` to use a real model); a ``needs_model`` cell is never a failure.

Nothing of the model's code runs in this process: parsing, :func:`~spade_lsp.sandbox.check_source` and the
duplicate check are static (:mod:`ast`; a tree nested too deep to walk is rejected), and the one run is
:func:`spade_lsp.sandbox.run_assertions`, under the sandbox's confinement like every evaluation
(``make_synthesizer`` passes the workspace's settings in :attr:`limits`). A function that passes is still
unreviewed code: written into the sidecar, it is recorded as LLM-written and flagged until the user accepts
its exact text (:mod:`spade_lsp._review`).

All surviving functions of one call run together in one sandbox run; if that module fails to load, each is
run alone so one bad function cannot sink the others. A function structurally identical to an earlier one
(names aside) is rejected as a duplicate.

Candidates come in instruction order, then criterion order, then the model's function order; names are the
model's (slugified), made unique with ``_2``, ``_3`` suffixes, and the ``def`` is renamed to match.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from spade_lsp.assertions import ASSERTION_PREFIX
from spade_lsp.errors import LLMError
from spade_lsp.llm import LLMClient, ask_json
from spade_lsp.sandbox import (
    DEFAULT_ALLOWED_IMPORTS,
    AskLLM,
    ModuleSource,
    SandboxCase,
    SandboxLimits,
    SandboxResult,
    check_source,
    run_assertions,
)
from spade_lsp.synthesis import PLACEHOLDER_PATTERN, Candidate, Instruction, PromptContext
from spade_lsp.synthesis._sidecar import IMPORTS
from spade_lsp.taxonomy import CATEGORY_IDS, DISPLAY_NAMES

__all__ = ["NAME", "LLMSynthesizer"]

NAME: Final = "llm"
MAX_FUNCTIONS_PER_CRITERION: Final = 3
PARAMETERS: Final = ("example", "prompt", "response")
EXAMPLE_RESPONSE: Final = "This is an example response."
_HEADER: Final = "\n".join(IMPORTS) + "\n\n\n"
_SKIPPED_KINDS: Final = frozenset({"code"})  # fenced code is example output; the model sees it in the prompt

_CHECKS_API: Final = """\
checks.count(text, unit) -> int   # unit: words, sentences, characters, bullets, numbered_items, list_items,
                                  #       paragraphs, lines, headings, hashtags, emojis, code_blocks
checks.bound(example, name) -> int   # a numeric bound given as the prompt input `name`
checks.contains_phrase(text, phrase) -> bool   # whole words, any case, simple inflections
checks.contains_any(text, phrases: list[str]) -> bool
checks.mentions(text, value) -> bool   # the response refers to an input value (verbatim or paraphrased)
checks.json_value(text) -> Any   # the JSON the response holds (code fence allowed), or None
checks.json_has_keys(text, keys: list[str]) -> bool
checks.headings(text) -> list[str]   # section titles (markdown headings, bold lines, `Label:` lines)
checks.has_heading(text, title) -> bool
checks.section(text, title) -> str   # body of that section, or "" if none
checks.starts_with(text, phrase) -> bool
checks.ends_with(text, phrase) -> bool
checks.starts_with_title(text) -> bool
checks.has_table(text) -> bool   # a markdown table
checks.code_blocks(text) -> list[str]
checks.is_markdown(text) -> bool
checks.mean_sentence_words(text) -> float
checks.reading_ease(text) -> float   # Flesch: 60-70 plain English, below 30 academic
checks.sentiment(text) -> float   # mean VADER compound in [-1, 1]; positive > 0.05
checks.language(text) -> str   # ISO 639-1 code, "" if unknown"""

#: The allow-list's standard-library part, as offered to the model (the checks module wraps the rest).
_STDLIB: Final = tuple(
    sorted(
        m
        for m in DEFAULT_ALLOWED_IMPORTS
        if m.isidentifier() and m.islower() and not m.startswith("_") and m not in {"langdetect", "textstat"}
    )
)

_CATEGORIES: Final = "\n".join(f"- {cid}: {name}" for cid, name in DISPLAY_NAMES.items())

_CRITERIA_SYSTEM: Final = (
    "You help test the outputs of an LLM pipeline. Given its prompt template and the template's instruction "
    "sentences (numbered, each with the taxonomy categories it was labelled with), list the criteria a "
    "response must meet that a check on the response could test. For each criterion give:\n"
    "- criterion: one short statement of what a good response does;\n"
    "- category: the taxonomy category of the requirement, one of:\n" + _CATEGORIES + "\n"
    "- source_phrase: the words of the prompt the criterion comes from, copied exactly;\n"
    "- sentence_index: the number of the sentence it comes from.\n"
    "A sentence may give several criteria, or none (a role description, input data, a rewording without a new "
    "requirement). Keep vague requirements (e.g. 'be concise') as one criterion each; do not invent "
    "requirements the prompt does not state."
)

_FUNCTIONS_SYSTEM: Final = (
    "You write Python assertions that check one criterion on a response of an LLM pipeline. Each assertion is "
    "one function with exactly this signature:\n"
    "    def assert_<snake_case_name>(example: dict, prompt: str, response: str) -> bool:\n"
    "`example` holds the prompt's inputs, `prompt` the rendered prompt, `response` the model's output. "
    "Return True when the response meets the criterion and False otherwise; never raise on a response that "
    "does not conform (e.g. not JSON: return False). The names `checks` and `ask_llm` are already imported:\n"
    + _CHECKS_API
    + "\nask_llm(question, response) -> bool   # asks an LLM a yes/no question about the response; use it only "
    "for subjective criteria (tone, relevance, correctness) that code cannot measure.\n"
    "Rules: the source is the function alone (no decorator, no code outside it); import only these standard "
    "library modules, inside the function: " + ", ".join(_STDLIB) + "; no files, network, processes, eval or "
    "exec. Prefer `checks` helpers. "
    f"Write one function, or up to {MAX_FUNCTIONS_PER_CRITERION} when the criterion is vague and has several "
    "reasonable readings (e.g. different thresholds); give each a short note saying which reading it checks."
)


def _criteria_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "criteria": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "criterion": {"type": "string"},
                        "category": {"type": "string", "enum": list(CATEGORY_IDS)},
                        "source_phrase": {"type": "string"},
                        "sentence_index": {"type": "integer"},
                    },
                    "required": ["criterion", "category", "source_phrase", "sentence_index"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["criteria"],
        "additionalProperties": False,
    }


def _functions_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "functions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"source": {"type": "string"}, "note": {"type": "string"}},
                    "required": ["source", "note"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["functions"],
        "additionalProperties": False,
    }


class _Criterion(BaseModel):
    criterion: str
    category: str
    source_phrase: str
    sentence_index: int


class _CriteriaAnswer(BaseModel):
    criteria: list[_Criterion]


class _Function(BaseModel):
    source: str
    note: str = ""


class _FunctionsAnswer(BaseModel):
    functions: list[_Function]


@dataclass(frozen=True, slots=True)
class _Draft:
    """A function that passed the static checks, waiting for its sandbox run."""

    name: str
    source: str
    instruction: Instruction
    category: str
    description: str


class _Rejected(Exception):
    """Why a generated function is not offered."""


def _validated(answer: Any, model: type[BaseModel], what: str) -> Any:
    try:
        return model.model_validate(answer)
    except ValidationError as error:
        detail = error.errors()[0]
        where = ".".join(map(str, detail["loc"]))
        raise LLMError(f"the model's {what} answer does not match the schema: {where}: {detail['msg']}") from error


def _ask(
    client: LLMClient,
    system: str,
    payload: Mapping[str, Any],
    schema: Mapping[str, Any],
    model: type[BaseModel],
    what: str,
) -> Any:
    """The structured answer, as ``model`` reads it. An answer the LLM layer gave up on (still off the schema
    after its re-asks) is read too when it holds JSON, so the per-item rules drop only the items that break
    them (a criterion with an unknown category) rather than the whole answer."""
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]
    return _validated(ask_json(client, messages, schema, what=f"assertion {what}"), model, what)


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def _slug(text: str, limit: int = 56) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if len(slug) > limit:
        slug = slug[:limit].rsplit("_", 1)[0]
    return slug or "check"


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
    """Asks a model for criteria and then functions, and validates each function; see the module docstring.

    After :meth:`synthesize`, :attr:`dropped` lists ``(criterion, reason)`` for criteria not used and
    :attr:`rejected` lists ``(function name, reason)`` for functions not offered.
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
        sentences = [i for i in instructions if i.kind not in _SKIPPED_KINDS and i.text.strip()]
        if not sentences:
            return []
        criteria = self._criteria(sentences, context)
        drafts: list[_Draft] = []
        taken: dict[str, int] = {}
        shapes: dict[str, str] = {}
        for criterion in criteria:
            instruction = sentences[criterion.sentence_index]
            functions = self._functions(criterion, instruction, context)
            if functions is None:
                continue
            for function in functions:
                draft = self._draft(function, criterion, instruction, len(functions), taken, shapes)
                if draft is not None:
                    drafts.append(draft)
        passed = self._run(drafts, context)
        return [
            Candidate(
                name=draft.name,
                category=draft.category,
                sentence=draft.instruction.text.strip(),
                version=draft.instruction.version,
                synthesizer=NAME,
                description=draft.description,
                source=draft.source,
                asks_llm="ask_llm(" in draft.source,
            )
            for draft in drafts
            if draft.name in passed
        ]

    # -- step 1: criteria -------------------------------------------------------------------------------------

    def _criteria(self, sentences: Sequence[Instruction], context: PromptContext) -> list[_Criterion]:
        payload = {
            "prompt": context.text,
            "sentences": [
                {"index": index, "text": s.text.strip(), "categories": list(s.categories)}
                for index, s in enumerate(sentences)
            ],
        }
        answer = _ask(self.client, _CRITERIA_SYSTEM, payload, _criteria_schema(), _CriteriaAnswer, "criteria")
        assert isinstance(answer, _CriteriaAnswer)
        prompt = _squash(context.text)
        kept: list[_Criterion] = []
        for criterion in answer.criteria:
            reason = None
            if criterion.category not in DISPLAY_NAMES:
                reason = f"unknown category {criterion.category!r}"
            elif not 0 <= criterion.sentence_index < len(sentences):
                reason = f"sentence {criterion.sentence_index} does not exist (there are {len(sentences)})"
            elif not criterion.source_phrase.strip() or _squash(criterion.source_phrase) not in prompt:
                reason = f"source phrase {criterion.source_phrase!r} is not in the prompt"
            elif not criterion.criterion.strip():
                reason = "empty criterion"
            if reason is None:
                kept.append(criterion)
            else:
                self.dropped.append((criterion.criterion, reason))
        kept.sort(key=lambda c: c.sentence_index)  # stable: the model's order within a sentence
        return kept

    # -- step 2: functions ------------------------------------------------------------------------------------

    def _functions(
        self, criterion: _Criterion, instruction: Instruction, context: PromptContext
    ) -> list[_Function] | None:
        payload = {
            "criterion": criterion.criterion,
            "category": criterion.category,
            "source_phrase": criterion.source_phrase,
            "sentence": instruction.text.strip(),
            "prompt_inputs": list(context.inputs),
            "prompt": context.text,
        }
        try:  # one failed or unusable answer loses its criterion, not the whole synthesis
            answer = _ask(self.client, _FUNCTIONS_SYSTEM, payload, _functions_schema(), _FunctionsAnswer, "functions")
        except LLMError as error:
            self.dropped.append((criterion.criterion, str(error)))
            return None
        assert isinstance(answer, _FunctionsAnswer)
        if not answer.functions:
            self.dropped.append((criterion.criterion, "the model wrote no function for it"))
            return None
        for extra in answer.functions[MAX_FUNCTIONS_PER_CRITERION:]:
            self.rejected.append((_name_hint(extra.source), f"more than {MAX_FUNCTIONS_PER_CRITERION} functions"))
        return answer.functions[:MAX_FUNCTIONS_PER_CRITERION]

    def _draft(
        self,
        function: _Function,
        criterion: _Criterion,
        instruction: Instruction,
        siblings: int,
        taken: dict[str, int],
        shapes: dict[str, str],
    ) -> _Draft | None:
        hint = _name_hint(function.source)
        try:
            old, source = normalise_function(function.source)
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
        description = criterion.criterion.strip()
        note = function.note.strip()
        if siblings > 1 and note:
            description = f"{description} ({note.rstrip('.')})"
        return _Draft(name, _renamed(source, old, name), instruction, criterion.category, description)

    # -- step 3: one example in the sandbox -------------------------------------------------------------------

    def _run(self, drafts: Sequence[_Draft], context: PromptContext) -> set[str]:
        """Names of the drafts that ran on the example without error; the others go to :attr:`rejected`."""
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
            if cell is not None and cell.kind != "needs_model":
                message = _relative_lines(cell.message, starts[column])
                self.rejected.append((draft.name, f"fails on the example ({cell.kind}): {message}"))
            else:
                passed.add(draft.name)
        return passed

    def _sandbox(self, drafts: Sequence[_Draft], case: SandboxCase) -> tuple[SandboxResult, list[int]]:
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


def _relative_lines(message: str, start: int) -> str:
    """Sandbox messages end in ``(line N)`` of the generated module; make N a line of the function itself."""
    return re.sub(r"\(line (\d+)\)$", lambda m: f"(line {int(m.group(1)) - start + 1} of the function)", message)


def _name_hint(source: str) -> str:
    """The function name in unusable source, for the rejection report."""
    match = re.search(rf"def\s+({ASSERTION_PREFIX}\w*)", source) or re.search(r"def\s+([A-Za-z_]\w*)", source)
    return match.group(1) if match else "<no function>"
