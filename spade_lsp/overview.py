"""The read model behind the language server: one prompt, its history, instructions, assertions and results.

Everything here only *reads*: the store (opened read-only by the caller, or None before the daemon created it),
the prompt's current text (the editor's buffer), and the sidecar module's text. The sidecar module is parsed
statically with :mod:`ast`, never imported or run (generated code runs only in sandbox workers). Everything
stored is read through :mod:`spade_lsp.store` (the history's repository and the overview's queries): evaluation
runs, selections and subsumption pairs come back as stored rows, so the language server never imports the
selection package (numpy, the solvers).

The result is plain frozen dataclasses with engine :class:`~spade_lsp._types.Range` values (UTF-16 columns,
as LSP counts them); the server turns them into diagnostics, hovers, lenses and code actions.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from spade_lsp._files import MAX_SIDECAR_BYTES, confine, read_limited, read_limited_text, sidecar_path
from spade_lsp._prompts import PromptKind, PromptText, parse_prompt, prompt_kind, settings_block, template_placeholders
from spade_lsp._types import NOT_ERROR_KINDS, Position, Range, Sentence, UnitKind, VersionInfo
from spade_lsp.assertions import ASSERTION_PREFIX
from spade_lsp.errors import ConfigError, InputError
from spade_lsp.store import (
    DatabaseError,
    HistoryRepository,
    SentenceRow,
    candidate_verdicts,
    load_subsumption_rows,
    newest_comparison_document,
    newest_eval_run,
    newest_reliability,
    newest_selection,
    prompt_key,
)
from spade_lsp.synthesis import PLACEHOLDER_PATTERN, code_sha, placeholders_of
from spade_lsp.taxonomy import CATEGORY_IDS, CHECKABLE, DISPLAY_NAMES, PLAIN_NAMES, TaxonomyClassifier

if TYPE_CHECKING:  # importing the Store class pulls sqlite-utils (and numpy through it); the caller opens it
    from spade_lsp.store import Store

__all__ = [
    "AssertionStats",
    "AssertionView",
    "CheckOutcome",
    "EvalRunView",
    "InstructionView",
    "PromptOverview",
    "SelectionView",
    "SentenceEvent",
    "SidecarView",
    "Summary",
    "SyntaxProblem",
    "VersionInfo",
    "assertion_stats",
    "build_overview",
    "check_outcome",
    "classify_offline",
    "parse_sidecar",
    "prepare",
    "prompt_key",
    "sentence_history",
    "utf16_len",
    "verdict_text",
]

_MARKER_LINE: Final = re.compile(r"^# spade: generated [0-9a-f]{12}\s*$")
_CHUNK_START: Final = re.compile(r"^(@|def |async def |class |from |import |[A-Za-z_]\w*\s*=)")
_BINARY_PROBE: Final = 8192
_MAX_ERROR_MESSAGES: Final = 3
_MAX_IDS_NAMED: Final = 20  # examples a check's outcome names; the counts say how many there were


# -- value types ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InstructionView:
    """One unit (sentence, list item, heading, code block) of the prompt's current text."""

    index: int
    text: str
    kind: str
    range: Range
    start: int
    end: int
    categories: tuple[str, ...]
    introduced_in: int | None  # version number; None when the unit is not in the newest recorded version
    recorded: bool  # the unit is in the newest recorded version (else: unsaved or not recorded yet)
    covered_by: tuple[str, ...] = ()  # names of the assertions derived from it
    checkable: bool = False  # an instruction: a check can be written for it (offline, or by a model)
    message: str | None = None  # which message of a chat prompt holds it ("system", "user 2"); None: not a chat
    checks: tuple[str, ...] = ()  # the checks spade can write for it offline (assertion names)
    needs_model: bool = False  # an instruction only a model can check (no measurement captures it)
    reason: str | None = None  # why it is not an instruction, or why no check can be written offline
    verdicts: tuple[tuple[str, str], ...] = ()  # (check, how it did on the labelled examples) when checked
    held_back: tuple[tuple[str, str], ...] = ()  # (check, why the labelled examples speak against it)

    @property
    def all_held_back(self) -> bool:
        """Every check spade could write offline was held back by the labelled examples."""
        return bool(self.checks) and {name for name, _ in self.held_back} >= set(self.checks)

    @property
    def display_names(self) -> tuple[str, ...]:
        """SPADE's names (the diagnostics' contract)."""
        return tuple(DISPLAY_NAMES.get(category, category) for category in self.categories)

    @property
    def plain_names(self) -> tuple[str, ...]:
        """The same in a prompt writer's words (hovers, lenses, the outline)."""
        return tuple(PLAIN_NAMES.get(category, category) for category in self.categories)


@dataclass(frozen=True, slots=True)
class MessageView:
    """One message of a chat prompt, for the outline: its role, how hovers name it, its whole section (role line
    included) and the line that names it."""

    role: str
    label: str
    range: Range
    heading: Range


@dataclass(frozen=True, slots=True)
class AssertionStats:
    """One assertion's column of the latest evaluation run. Errors count as failures in coverage and FFR,
    as selection counts them; ``pass_rate`` is passes over every example it was evaluated on (cells that need a
    model or do not apply are left out of ``examples`` and every rate)."""

    run_id: int
    examples: int
    passed: int
    failed: int
    errors: int
    needs_model: int
    not_applicable: int
    good: int
    bad: int
    pass_rate: float | None
    coverage: float | None  # share of bad examples it fails (catches); None without bad examples
    ffr: float | None  # share of good examples it fails (false failures); None without good examples
    error_messages: tuple[str, ...] = ()
    caught: int = 0  # bad examples it fails
    flagged: int = 0  # good examples it fails
    flagged_good: tuple[str, ...] = ()  # ids of good examples it fails (the first few)
    missed_bad: tuple[str, ...] = ()  # ids of bad examples it passes (the first few)


@dataclass(frozen=True, slots=True)
class AssertionView:
    """One ``assert_*`` function of the sidecar module, read from its syntax tree."""

    name: str
    range: Range  # from its first decorator to the end of its body
    name_range: Range  # the name on the ``def`` line
    chunk_start_line: int  # 0-based first line to remove with it (its ``# spade: generated`` marker, if any)
    end_line: int  # 0-based last line of its body
    decorated: bool
    generated: bool  # it sits under a ``# spade: generated`` marker line
    is_async: bool = False
    category: str | None = None
    sentence: str | None = None
    version: int | None = None
    synthesizer: str | None = None
    description: str | None = None
    asks_llm: bool = False
    removed_in: int | None = None  # it checks an instruction that version removed or reworded (not stale)
    stale: bool = False  # its sentence left the prompt, and it does not say which version removed it
    instruction: int | None = None  # index of the instruction it was derived from
    stats: AssertionStats | None = None
    selected: bool | None = None  # None: not part of the latest selection (no selection, or evaluated since)
    drop_reason: str | None = None
    subsumed_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    line: int  # 0-based
    character: int  # UTF-16
    message: str


@dataclass(frozen=True, slots=True)
class SidecarView:
    path: Path | None
    exists: bool
    assertions: tuple[AssertionView, ...] = ()
    syntax_error: SyntaxProblem | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class EvalRunView:
    id: int
    finished_at: str | None
    examples: int
    good: int
    bad: int
    unlabelled: int
    error_cells: int
    needs_model_cells: int
    not_applicable_cells: int
    seconds: float | None
    module_changed: bool | None  # the sidecar's text differs from the module that was evaluated
    errors: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class SelectionView:
    id: int
    method: str
    tau: float
    alpha: float
    status: str
    selected: tuple[str, ...]
    coverage: float | None
    ffr: float | None
    created_at: str
    eval_run_id: int | None
    considered: tuple[str, ...]  # the assertions the selection chose among
    reasons: Mapping[str, str] = field(default_factory=dict)  # dropped assertion -> why
    subsumed_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReliabilityView:
    """The newest finished sampling run: P_pass measured, with its interval, and the checks below minimum."""

    run_id: int
    version: int | None
    model: str
    p_pass: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    failing: tuple[str, ...]
    finished_at: str | None


@dataclass(frozen=True, slots=True)
class Summary:
    versions: int
    instructions: int  # the instructions: units a check can be written for (each has a diagnostic)
    covered: int
    uncovered: int
    assertions: int
    selected: int | None  # None: no selection yet
    reliability: ReliabilityView | None = None  # None: never sampled


@dataclass(frozen=True, slots=True)
class SentenceEvent:
    """A version in which a sentence (or an earlier wording of it) was added, reworded or moved."""

    version: VersionInfo
    kind: str  # "added", "modified" or "moved"
    text: str
    previous_text: str | None = None


@dataclass(frozen=True, slots=True)
class PromptOverview:
    prompt: Path | None
    key: str | None
    store_available: bool
    versions: tuple[VersionInfo, ...]
    instructions: tuple[InstructionView, ...]
    sidecar: SidecarView
    eval_run: EvalRunView | None
    selection: SelectionView | None
    summary: Summary
    placeholders: tuple[str, ...] = ()
    problem: str | None = None  # the text cannot be read as a prompt (too large, binary): nothing else is set
    notes: tuple[str, ...] = ()  # e.g. invalid front matter
    comparison: str | None = None  # the newest paired comparison whose candidate is the newest version, as a line
    messages: tuple[MessageView, ...] = ()  # a chat prompt's messages, in order; () for a one-message prompt

    @property
    def uncovered(self) -> tuple[InstructionView, ...]:
        """Instructions no assertion covers yet (with an offline check or not)."""
        return tuple(i for i in self.instructions if i.checkable and not i.covered_by)

    @property
    def writable(self) -> tuple[InstructionView, ...]:
        """Uncovered instructions with a check spade can write offline: what "Add assertion" writes."""
        return tuple(i for i in self.uncovered if i.checks)

    def instruction_at(self, line: int, character: int) -> InstructionView | None:
        """The unit whose range holds the position (UTF-16 column)."""
        point = Position(line, character)
        for instruction in self.instructions:
            if instruction.range.start <= point <= instruction.range.end:
                return instruction
            if instruction.range.start.line > line:
                break
        return None

    def assertion(self, name: str) -> AssertionView | None:
        return next((a for a in self.sidecar.assertions if a.name == name), None)


# -- helpers --------------------------------------------------------------------------------------------


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (LSP's default column unit); lone surrogates count as one."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


_CLASSIFIED: dict[str, tuple[str, ...]] = {}


@lru_cache(maxsize=1)
def _offline_classifier() -> TaxonomyClassifier:
    from spade_lsp.taxonomy import OfflineClassifier

    return OfflineClassifier()


def classify_offline(text: str) -> tuple[str, ...]:
    """Categories of a sentence the store does not know (unsaved edits), by the offline classifier; memoised
    because the same sentences come back on every keystroke."""
    cached = _CLASSIFIED.get(text)
    if cached is None:
        labels = _offline_classifier().classify_sentence(text)
        cached = tuple(c for c in CATEGORY_IDS if c in labels)
        if len(_CLASSIFIED) > 50_000:
            _CLASSIFIED.clear()
        _CLASSIFIED[text] = cached
    return cached


def _size_problem(size: int, max_bytes: int) -> str | None:
    if size <= max_bytes:
        return None
    return (
        f"{size / 1e6:.1f} MB is larger than the {max_bytes / 1e6:g} MB limit for a prompt; spade does not "
        "analyse it (raise max_prompt_bytes if this really is a prompt)"
    )


def _text_problem(text: str, max_bytes: int) -> str | None:
    """Why the text cannot be analysed (too large, binary), or None. UTF-8 size is only computed when the
    text might exceed the limit (a character is at most 4 bytes)."""
    if len(text) * 4 > max_bytes:
        problem = _size_problem(len(text.encode("utf-8", "surrogatepass")), max_bytes)
        if problem is not None:
            return problem
    if "\x00" in text[:_BINARY_PROBE]:
        return "this looks like a binary file (NUL characters), not a prompt; spade does not analyse it"
    return None


def _body(text: str, kind: PromptKind = "text") -> tuple[str, tuple[str, ...], PromptText | None]:
    """The text with everything but its messages' wording blanked (offsets kept), a note when the front matter
    or the message list is invalid, and the parsed prompt (None then)."""
    try:
        parsed = parse_prompt(text, kind=kind)
    except ConfigError as error:
        block = settings_block(text, "text")  # the front matter, read as a text prompt's
        if block is None:  # a message list that does not parse: its text as it is
            return text, (str(error).removeprefix("<prompt>: "),), None
        blank = re.sub(r"[^\r\n]", " ", block)
        return blank + text[len(block) :], (f"invalid front matter: {error}",), None
    return parsed.body, (), parsed


def _message_views(parsed: PromptText | None, text: str) -> tuple[MessageView, ...]:
    if parsed is None or not parsed.is_chat:
        return ()
    from spade_lsp._sentences import Locator

    locate = Locator(text)
    views = []
    for index, message in enumerate(parsed.messages):
        header = message.header if message.header is not None else message.start
        line_end = text.find("\n", header)
        heading_end = min(message.end, len(text) if line_end < 0 else line_end)
        if heading_end > header and text[heading_end - 1] == "\r":  # a CRLF line's break is not its text
            heading_end -= 1
        views.append(
            MessageView(
                role=message.role,
                label=parsed.message_label(index),
                range=Range(locate.position(header), locate.position(message.end)),
                heading=Range(locate.position(header), locate.position(max(header, heading_end))),
            )
        )
    return tuple(views)


def _versions(history: HistoryRepository, prompt_id: int) -> tuple[list[VersionInfo], dict[int, int], str | None]:
    """The versions oldest first, version id -> number, and the newest version's content hash."""
    versions = history.versions(prompt_id)
    return (
        versions,
        {version.id: version.number for version in versions},
        (versions[-1].content_hash if versions else None),
    )


@dataclass(frozen=True, slots=True)
class _Stored:
    """The newest version's units as the store holds them."""

    by_text: dict[str, tuple[tuple[str, ...], int | None, bool]]  # text -> categories, introduced in, checkable
    units: tuple[Sentence, ...]  # in order, with offsets and ranges: the split of the newest version's text
    head_hash: str | None = None
    head_body: str | None = None  # the newest version's text, front matter blanked (what ``units`` split)


_STORED: dict[tuple[str, int], tuple[tuple[int, int], _Stored]] = {}


def _stored_sentences(
    history: HistoryRepository,
    prompt_id: int,
    number_of: Mapping[int, int],
    head_hash: str | None,
    prompt_kind_: PromptKind,
) -> _Stored:
    """Memoised per store file and prompt on (largest version id, number of versions): the sentences table is
    only rebuilt when versions are recorded, and re-reading 2,000 rows on every keystroke would cost more than
    everything else an edit needs. ``head_hash``: the newest version's content hash."""
    stamp = (max(number_of), len(number_of)) if number_of else (0, 0)
    key = (str(history.store.path), prompt_id)
    cached = _STORED.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    by_text: dict[str, tuple[tuple[str, ...], int | None, bool]] = {}
    units: list[Sentence] = []
    for row in history.sentences(prompt_id):
        units.append(_unit(row))
        if row.text not in by_text:
            labels = tuple(json.loads(row.categories))
            introduced = row.introduced_version_id
            by_text[row.text] = (labels, number_of.get(introduced) if introduced else None, _checkable(labels))
    head = history.content(head_hash) if head_hash is not None else None
    head_body = _body(head, prompt_kind_)[0] if head is not None else None
    stored = _Stored(by_text, tuple(units), head_hash if head is not None else None, head_body)
    if len(_STORED) > 64:
        _STORED.clear()
    _STORED[key] = (stamp, stored)
    return stored


def _unit(row: SentenceRow) -> Sentence:
    try:
        kind = UnitKind(row.kind)
    except ValueError:
        kind = UnitKind.SENTENCE
    start, end = Position(row.start_line, row.start_char), Position(row.end_line, row.end_char)
    return Sentence(row.text, row.start_offset, row.end_offset, Range(start, end), kind)


def _checkable(categories: Iterable[str]) -> bool:
    return any(category in CHECKABLE for category in categories)


@dataclass(frozen=True, slots=True)
class Plan:
    """What spade can do with one unit of the prompt: the checks it can write offline (and the category of the
    first one), whether only a model could check it, or why it is not an instruction."""

    checks: tuple[str, ...] = ()
    category: str | None = None
    needs_model: bool = False
    reason: str | None = None
    codes: tuple[str, ...] = ()  # each check's code_sha, the key of its stored verdict

    @property
    def instruction(self) -> bool:
        return bool(self.checks) or self.needs_model


NO_OFFLINE_CHECK: Final = (
    "no check can be written for it without a model: it needs judgement, not a measurement "
    "(configure an assistant model to write and run one)"
)
_ROLE: Final = re.compile(r"^\W*(?:you are|you're|act as|as an? |your (?:role|job|task) is)\b", re.IGNORECASE)


def _is_data_line(text: str) -> bool:
    """A line that labels input data rather than asking for anything: "Message: {message}", "{{name}} asks:
    {{question}}" (placeholders, a colon, and at most three other words)."""
    if not PLACEHOLDER_PATTERN.search(text):
        return False
    rest = PLACEHOLDER_PATTERN.sub(" ", text)
    return ":" in rest and len(re.findall(r"[A-Za-z]{2,}", rest)) <= 3


_TASK_VERB: Final = re.compile(
    r"^\W*(?:please\s+)?(?:reply|respond|answer|write|draft|summari[sz]e|translate|classify|extract|read|help|"
    r"review|rewrite|explain|analy[sz]e|generate|create|compose)\b",
    re.IGNORECASE,
)


#: What a plan is computed from: a unit's text, its categories, its kind and the prompt's placeholders.
PlanRequest = tuple[str, tuple[str, ...], str, tuple[str, ...]]
#: Plans computed or read in this process, by request (emptied when it grows past this many).
_PLANS: dict[PlanRequest, Plan] = {}
_MAX_PLANS: Final = 20_000


def source_digest(package: Path) -> str:
    """A digest of every Python file under ``package``, names and contents."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """The digest of the engine's source, under which plans are cached across processes: plans computed by other
    code (another release, a local edit) are never used."""
    return source_digest(Path(__file__).parent)


def _plan_key(request: PlanRequest) -> str:
    return hashlib.sha256(json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def _plan_json(plan: Plan) -> str:
    return json.dumps([list(plan.checks), plan.category, plan.needs_model, plan.reason, list(plan.codes)])


def _plan_from_json(text: str) -> Plan | None:
    try:
        checks, category, needs_model, reason, codes = json.loads(text)
        return Plan(tuple(map(str, checks)), category, bool(needs_model), reason, tuple(map(str, codes)))
    except (ValueError, TypeError):
        return None


def plans_for(requests: Sequence[PlanRequest]) -> list[Plan]:
    """Each request's plan: from this process's memory, else from the per-user plan cache, else computed by
    :func:`plan_unit` (and then stored in both). Reopening a 2,000-sentence prompt reads its plans instead of
    planning every sentence again."""
    todo = [request for request in dict.fromkeys(requests) if request not in _PLANS]
    if todo:
        from spade_lsp.store import plan_cache

        cache = plan_cache(code_fingerprint())
        keys = {request: _plan_key(request) for request in todo}
        stored = cache.get_many(keys.values()) if cache is not None else {}
        computed: dict[str, str] = {}
        if len(_PLANS) + len(todo) > _MAX_PLANS:
            _PLANS.clear()
        for request in todo:
            text = stored.get(keys[request])
            plan = _plan_from_json(text) if text is not None else None
            if plan is None:
                plan = plan_unit(*request)
                computed[keys[request]] = _plan_json(plan)
            _PLANS[request] = plan
        if cache is not None:
            cache.put_many(computed)
    return [_PLANS[request] for request in requests]


def plan_unit(text: str, categories: tuple[str, ...], kind: str, inputs: tuple[str, ...] = ()) -> Plan:
    """The offline synthesizer's reading of one unit on its own (the sentence is its own context): its checks,
    else whether it is an instruction only a model can check, else why it is not an instruction. ``inputs`` are
    the prompt's placeholders (``{first_name}``). :func:`plans_for` caches it."""
    from spade_lsp.synthesis import Instruction, OfflineSynthesizer, PromptContext
    from spade_lsp.taxonomy import DATA_PLACEHOLDERS, PROMPT_REPHRASING, WORKFLOW_DESCRIPTION

    if kind in (UnitKind.CODE.value, UnitKind.QUOTE.value, UnitKind.HEADING.value):
        what = "a heading" if kind == UnitKind.HEADING.value else "a code block or a quoted example"
        return Plan(reason=f"not an instruction: {what}")
    if _ROLE.match(text):
        return Plan(reason="not an instruction: it sets the model's role, which no single answer shows")
    if _is_data_line(text):
        return Plan(reason="not an instruction: it brings input data into the prompt")
    try:
        candidates = OfflineSynthesizer().synthesize(
            [Instruction(text, categories, None, kind, 0, len(text))], PromptContext(text, inputs)
        )
    except Exception:  # a parser's bug must never cost the editor its view
        candidates = []
    measured = [c for c in candidates if not c.asks_llm and c.removed_in is None]
    if measured:
        return Plan(
            checks=tuple(c.name for c in measured),
            category=measured[0].category,
            codes=tuple(code_sha(c) for c in measured),
        )
    labels = set(categories)
    if labels & {WORKFLOW_DESCRIPTION} and labels <= {WORKFLOW_DESCRIPTION, DATA_PLACEHOLDERS}:
        return Plan(reason="not an instruction to check: it describes the task, not the answer")
    if any(c.asks_llm for c in candidates) or _checkable(categories):
        asked = next((c.category for c in candidates if c.asks_llm), None)  # the label, where the classifier had none
        return Plan(needs_model=True, reason=NO_OFFLINE_CHECK, category=asked)
    if labels and labels <= {DATA_PLACEHOLDERS}:
        return Plan(reason="not an instruction: it brings input data into the prompt")
    if labels and labels <= {PROMPT_REPHRASING}:
        return Plan(reason="not an instruction: it rewords the prompt without asking for anything new")
    if WORKFLOW_DESCRIPTION in labels or _TASK_VERB.match(text):
        return Plan(reason="not an instruction to check: it describes the task, not the answer")
    return Plan(reason="not an instruction: it asks nothing of the answer")


# -- the sidecar module ---------------------------------------------------------------------------------


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def decorator_metadata(node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any] | None:
    """The literal keyword arguments of an ``@assertion(...)`` decorator, or None when it has none."""
    for decorator in node.decorator_list:
        if not isinstance(decorator, ast.Call):
            continue
        func = decorator.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name != "assertion":
            continue
        return {kw.arg: _literal(kw.value) for kw in decorator.keywords if kw.arg is not None}
    return None


def _as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _assertion_views(tree: ast.Module, lines: Sequence[str], line_offset: int) -> list[AssertionView]:
    out: list[AssertionView] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith(ASSERTION_PREFIX):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1 + line_offset
        def_line = node.lineno - 1 + line_offset
        end = (node.end_lineno or node.lineno) - 1 + line_offset
        generated = first > 0 and first - 1 < len(lines) and bool(_MARKER_LINE.match(lines[first - 1]))
        def_text = lines[def_line] if def_line < len(lines) else ""
        column = def_text.find(node.name)
        name_start = utf16_len(def_text[: max(column, 0)])
        end_text = lines[end] if end < len(lines) else ""
        meta = decorator_metadata(node)
        version = _as_int(meta.get("version")) if meta else None
        out.append(
            AssertionView(
                name=node.name,
                range=Range(Position(first, 0), Position(end, utf16_len(end_text))),
                name_range=Range(Position(def_line, name_start), Position(def_line, name_start + len(node.name))),
                chunk_start_line=first - 1 if generated else first,
                end_line=end,
                decorated=meta is not None,
                generated=generated,
                is_async=isinstance(node, ast.AsyncFunctionDef),
                category=_as_str(meta.get("category")) if meta else None,
                sentence=_as_str(meta.get("sentence")) if meta else None,
                version=version,
                removed_in=_as_int(meta.get("removed_in")) if meta else None,
                synthesizer=_as_str(meta.get("synthesizer")) if meta else None,
                description=_as_str(meta.get("description")) if meta else None,
                asks_llm=bool(meta.get("asks_llm")) if meta else False,
            )
        )
    return out


def _tolerant_views(source: str, lines: Sequence[str]) -> list[AssertionView]:
    """Assertions of a module that does not parse: each top-level chunk is parsed on its own, so one broken
    function hides only itself (its neighbours keep their lenses and coverage)."""
    starts = [i for i, line in enumerate(lines) if _CHUNK_START.match(line)]
    chunks: list[tuple[int, int]] = []
    index = 0
    while index < len(starts):
        start = starts[index]
        index += 1
        if lines[start].startswith("@"):  # a decorator belongs with the def that follows it
            while index < len(starts) and lines[starts[index]].startswith("@"):
                index += 1
            index += 1 if index < len(starts) else 0
        end = starts[index] if index < len(starts) else len(lines)
        chunks.append((start, end))
    out: list[AssertionView] = []
    for start, end in chunks:
        try:
            tree = ast.parse("\n".join(lines[start:end]))
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        out += _assertion_views(tree, lines, start)
    return out


def parse_sidecar(path: Path | None, source: str | None) -> SidecarView:
    """The module's assertions, from its syntax tree (never imported). A module with a syntax error still
    yields the functions that parse on their own, and the error with its line."""
    if source is None:
        return SidecarView(path, exists=False)
    lines = source.splitlines()
    try:
        tree = ast.parse(source, filename=str(path or "<sidecar>"))
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        line = max((getattr(error, "lineno", None) or 1) - 1, 0)
        offset = max((getattr(error, "offset", None) or 1) - 1, 0)
        text = lines[line] if line < len(lines) else ""
        message = getattr(error, "msg", None) or str(error)
        problem = SyntaxProblem(line, utf16_len(text[:offset]), f"syntax error: {message}")
        return SidecarView(path, True, tuple(_tolerant_views(source, lines)), problem, source)
    return SidecarView(path, True, tuple(_assertion_views(tree, lines, 0)), None, source)


def _read_text(root: Path, path: Path | None) -> str | None:
    """The sidecar module's text, unless it is missing, unreadable or outside the workspace (never read)."""
    if path is None:
        return None
    try:
        confine(root, path, "a sidecar module")
        return read_limited_text(path, limit=MAX_SIDECAR_BYTES, what="a sidecar module", errors="replace")
    except InputError:
        return None


# -- evaluation runs and selections -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Run:
    id: int
    finished_at: str | None
    module_hash: str
    names: tuple[str, ...]
    examples: tuple[str, ...]
    y: tuple[int | None, ...]
    m: tuple[tuple[int | None, ...], ...]
    errors: tuple[Mapping[str, Any], ...]
    seconds: float | None


def _load_run(store: Store, prompt_id: int, run_id: int | None = None) -> _Run | None:
    row = newest_eval_run(store, prompt_id, run_id)
    if row is None:
        return None
    try:
        assertions = json.loads(row.assertions)
        y = json.loads(row.y)
        m = json.loads(row.m)
        errors = json.loads(row.errors) if row.errors else []
        examples = json.loads(row.examples)
    except (json.JSONDecodeError, TypeError):
        return None
    names = tuple(str(a.get("name")) for a in assertions if isinstance(a, dict))
    if not isinstance(m, list) or not isinstance(y, list) or not isinstance(examples, list) or len(m) != len(y):
        return None
    matrix = tuple(tuple(row) if isinstance(row, list) else () for row in m)
    if any(len(cells) != len(names) for cells in matrix):
        return None
    return _Run(
        row.id,
        row.finished_at,
        row.module_hash,
        names,
        tuple(str(example) for example in examples),
        tuple(y),
        matrix,
        tuple(e for e in errors if isinstance(e, dict)),
        row.seconds,
    )


def _fails(run: _Run, column: int) -> list[bool]:
    """Assertion ``column`` fails example i (an error counts as a failure, as selection counts it)."""
    return [cells[column] != 1 for cells in run.m]


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def _stats(run: _Run) -> dict[str, AssertionStats]:
    return assertion_stats(run.id, run.names, run.examples, run.y, run.m, run.errors)


def assertion_stats(
    run_id: int,
    names: Sequence[str],
    examples: Sequence[str],
    y: Sequence[int | None],
    m: Sequence[Sequence[int | None]],
    errors: Iterable[Mapping[str, Any]],
) -> dict[str, AssertionStats]:
    """Per-assertion figures of an evaluation run, for the editor and ``spade eval`` alike. Cells that need a
    model (an ``ask_llm`` check run offline) or do not apply were not evaluated: they are left out of every
    rate; other errors count as failures, as selection counts them."""
    messages: dict[str, list[str]] = {}
    unevaluated: dict[str, set[str]] = {}  # example ids, by assertion: a handful, not a run's million
    inapplicable: dict[str, set[str]] = {}
    for error in errors:
        name = str(error.get("assertion"))
        kind = error.get("kind")
        if kind in NOT_ERROR_KINDS:
            unevaluated.setdefault(name, set()).add(str(error.get("example")))
            if kind == "not_applicable":
                inapplicable.setdefault(name, set()).add(str(error.get("example")))
            continue
        text = f"{error.get('kind', 'error')}: {error.get('message', '')}".strip()
        bucket = messages.setdefault(name, [])
        if text not in bucket and len(bucket) < _MAX_ERROR_MESSAGES:
            bucket.append(text)
    skipped_rows = _rows_of(examples, set[str]().union(*unevaluated.values()))
    return {
        name: _column_stats(
            run_id,
            column,
            examples,
            y,
            m,
            {skipped_rows[e] for e in unevaluated.get(name, ()) if e in skipped_rows},
            len({e for e in inapplicable.get(name, ()) if e in skipped_rows}),
            tuple(messages.get(name, ())),
        )
        for column, name in enumerate(names)
    }


def _rows_of(examples: Sequence[str], wanted: set[str]) -> dict[str, int]:
    """The rows of the ``wanted`` example ids (the first, when an id repeats), in one pass over the run."""
    rows: dict[str, int] = {}
    if wanted:
        for row, example in enumerate(examples):
            if example in wanted and example not in rows:
                rows[example] = row
    return rows


def _column_stats(
    run_id: int,
    column: int,
    examples: Sequence[str],
    y: Sequence[int | None],
    m: Sequence[Sequence[int | None]],
    skip: set[int],
    not_applicable: int,
    messages: tuple[str, ...],
) -> AssertionStats:
    """One assertion's figures, in one pass over the rows (counts, and the first few ids of each kind)."""
    counts = {"cells": 0, "passed": 0, "failed": 0, "errors": 0, "good": 0, "bad": 0, "caught": 0, "flagged": 0}
    flagged_good: list[str] = []
    missed_bad: list[str] = []
    for row, (label, verdicts) in enumerate(zip(y, m, strict=True)):
        if row in skip:
            continue
        cell = verdicts[column]
        counts["cells"] += 1
        counts["passed" if cell == 1 else "failed" if cell == 0 else "errors"] += 1
        if label == 1:
            counts["good"] += 1
            if cell != 1:
                counts["flagged"] += 1
                if len(flagged_good) < _MAX_IDS_NAMED:
                    flagged_good.append(examples[row])
        elif label == 0:
            counts["bad"] += 1
            if cell != 1:
                counts["caught"] += 1
            elif len(missed_bad) < _MAX_IDS_NAMED:
                missed_bad.append(examples[row])
    return AssertionStats(
        run_id=run_id,
        examples=counts["cells"],
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["errors"],
        needs_model=len(skip) - not_applicable,
        not_applicable=not_applicable,
        good=counts["good"],
        bad=counts["bad"],
        pass_rate=_rate(counts["passed"], counts["cells"]),
        coverage=_rate(counts["caught"], counts["bad"]),
        ffr=_rate(counts["flagged"], counts["good"]),
        error_messages=messages,
        caught=counts["caught"],
        flagged=counts["flagged"],
        flagged_good=tuple(flagged_good),
        missed_bad=tuple(missed_bad),
    )


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    """A check read as a test of itself on the labelled examples: ``passed`` when it flags at most ``tau`` of
    the good examples and catches at least one bad one; ``failed`` otherwise, naming the examples with what was
    expected and what happened; ``errored`` when a cell raised; ``skipped`` when it has nothing to be judged on
    (no labelled example it applies to, or it needs a model that was not configured)."""

    state: str  # passed | failed | errored | skipped
    message: str


def _ids(ids: Sequence[str], total: int) -> str:
    named = ", ".join(ids)
    return named if total <= len(ids) else f"{named} and {total - len(ids)} more"


def check_outcome(stats: AssertionStats | None, tau: float) -> CheckOutcome | None:
    """How a check did in the latest evaluation (None: it was not evaluated), as the editor's test explorer and
    ``spade eval`` say it."""
    if stats is None:
        return None
    if stats.errors:
        detail = f": {stats.error_messages[0]}" if stats.error_messages else ""
        return CheckOutcome(
            "errored", f"raised on {stats.errors} of {stats.examples + stats.needs_model} examples{detail}"
        )
    if stats.good + stats.bad == 0:
        why = "it needs a model (configure an assistant model)" if stats.needs_model else "no labelled example"
        return CheckOutcome("skipped", f"not judged: {why}")
    flagged, caught = stats.flagged, stats.caught
    problems: list[str] = []
    if stats.good and flagged > tau * stats.good:
        problems.append(
            f"fails {flagged} of {stats.good} good examples, more than tau {tau:g} allows "
            f"(expected pass, got fail: {_ids(stats.flagged_good, flagged)})"
        )
    if stats.bad and caught == 0:
        problems.append(
            f"catches none of the {stats.bad} bad examples (expected fail, got pass: "
            f"{_ids(stats.missed_bad, stats.bad)})"
        )
    if problems:
        return CheckOutcome("failed", "; ".join(problems))
    parts = [f"catches {caught} of {stats.bad} bad" if stats.bad else "no bad example to catch"]
    parts.append(f"fails {flagged} of {stats.good} good" if stats.good else "no good example")
    return CheckOutcome("passed", ", ".join(parts))


def _eval_view(run: _Run, sidecar_text: str | None) -> EvalRunView:
    module_changed = None
    if sidecar_text is not None:
        digest = hashlib.sha256(sidecar_text.encode("utf-8", "surrogatepass")).hexdigest()
        module_changed = digest != run.module_hash
    error_cells = sum(1 for e in run.errors if e.get("kind") not in NOT_ERROR_KINDS)
    not_applicable = sum(1 for e in run.errors if e.get("kind") == "not_applicable")
    return EvalRunView(
        id=run.id,
        finished_at=run.finished_at,
        examples=len(run.y),
        good=sum(1 for label in run.y if label == 1),
        bad=sum(1 for label in run.y if label == 0),
        unlabelled=sum(1 for label in run.y if label is None),
        error_cells=error_cells,
        needs_model_cells=len(run.errors) - error_cells - not_applicable,
        not_applicable_cells=not_applicable,
        seconds=run.seconds,
        module_changed=module_changed,
        errors=run.errors,
    )


def _subsumers(pairs: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    """subsumed -> the assertions that subsume it (directly)."""
    out: dict[str, set[str]] = {}
    for subsumer, subsumed in pairs:
        if subsumer != subsumed:
            out.setdefault(subsumed, set()).add(subsumer)
    return out


def _selected_subsumers(name: str, subsumers: Mapping[str, set[str]], selected: set[str]) -> tuple[str, ...]:
    """Selected assertions that subsume ``name``, through chains of subsumption (the relation is transitive)."""
    found: set[str] = set()
    seen = {name}
    frontier = [name]
    while frontier:
        current = frontier.pop()
        for other in subsumers.get(current, ()):
            if other in seen:
                continue
            seen.add(other)
            if other in selected:
                found.add(other)
            frontier.append(other)
    return tuple(sorted(found))


def _reliability_view(store: Store, prompt_id: int) -> ReliabilityView | None:
    """The newest finished sampling run (its document's tensor is never loaded into Python)."""
    row = newest_reliability(store, prompt_id)
    if row is None:
        return None
    return ReliabilityView(
        run_id=row.run_id,
        version=row.version,
        model=row.model,
        p_pass=row.p_pass,
        ci_low=row.ci_low,
        ci_high=row.ci_high,
        confidence=float(row.confidence or 0.95),
        failing=tuple(json.loads(row.failing or "[]")),
        finished_at=row.finished_at,
    )


def _comparison_line(store: Store, prompt_id: int, newest: int | None) -> str | None:
    """The newest comparison of the newest version with another, as the editor's one line (see ``spade
    compare``); None before one was made."""
    if newest is None:
        return None
    document = newest_comparison_document(store, prompt_id, newest)
    if document is None:
        return None
    from spade_lsp.reliability import lens_title

    try:
        return lens_title(json.loads(document))
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _selection_view(store: Store, prompt_id: int, latest: _Run | None) -> SelectionView | None:
    row = newest_selection(store, prompt_id)
    if row is None:
        return None
    run_id, tau, status = row.eval_run_id, row.tau, row.status
    try:
        selected = tuple(str(name) for name in json.loads(row.selected))
    except (json.JSONDecodeError, TypeError):
        selected = ()
    run = latest if latest is not None and latest.id == run_id else None
    if run is None and run_id is not None:
        run = _load_run(store, prompt_id, run_id)
    considered = run.names if run is not None else selected
    reasons: dict[str, str] = {}
    subsumed_by: dict[str, tuple[str, ...]] = {}
    if status != "infeasible" and run is not None:
        column = {name: j for j, name in enumerate(run.names)}
        fails = {name: _fails(run, j) for name, j in column.items()}
        pairs: list[tuple[str, str]] = []
        for subsumer, subsumed, origin in load_subsumption_rows(store, prompt_id):
            if subsumer not in column or subsumed not in column:
                continue
            # like selection: the examples rule a static or LLM pair out when the subsumed one fails where the
            # subsumer passes; declared (user) pairs are taken as given
            if origin != "user" and any(b and not a for a, b in zip(fails[subsumer], fails[subsumed], strict=True)):
                continue
            pairs.append((subsumer, subsumed))
        subsumers = _subsumers(pairs)
        good_rows = [i for i, label in enumerate(run.y) if label == 1]
        chosen = set(selected)
        # selection leaves out a check that could not run for want of a model: its cells are no verdicts
        waiting = {str(e.get("assertion")) for e in run.errors if e.get("kind") == "needs_model"}
        for name in run.names:
            if name in chosen:
                continue
            own_ffr = _rate(sum(1 for i in good_rows if fails[name][i]), len(good_rows))
            by = _selected_subsumers(name, subsumers, chosen)
            if name in waiting:
                reasons[name] = "not evaluated: it asks a model, and none was configured (the assistant model)"
            elif own_ffr is not None and own_ffr > tau + 1e-12:
                reasons[name] = (
                    f"fails {own_ffr:.0%} of the good examples, more than the {tau:.0%} allowed "
                    f"(FFR {own_ffr:.2f} > tau {tau:g})"
                )
            elif by:
                subsumed_by[name] = by
                reasons[name] = f"subsumed by {', '.join(by)}"
            else:
                reasons[name] = "not needed for coverage"
    return SelectionView(
        id=row.id,
        method=row.method,
        tau=tau,
        alpha=row.alpha,
        status=status,
        selected=selected,
        coverage=row.coverage,
        ffr=row.ffr,
        created_at=row.created_at,
        eval_run_id=run_id,
        considered=tuple(considered),
        reasons=reasons,
        subsumed_by=subsumed_by,
    )


# -- the overview -------------------------------------------------------------------------------------------


class _SentenceIndex:
    """Finds the instruction an assertion's ``sentence`` names: equal after :func:`normalise` (whitespace
    collapsed). Exact matches are the rule, so the normalised index is only built when one is missed."""

    def __init__(self, instructions: Sequence[InstructionView]) -> None:
        self._instructions = instructions
        self._exact: dict[str, int] | None = None
        self._normalised: dict[str, int] | None = None

    def get(self, sentence: str) -> int | None:
        if self._exact is None:
            self._exact = {}
            for instruction in self._instructions:
                self._exact.setdefault(instruction.text, instruction.index)
        found = self._exact.get(sentence)
        if found is not None:
            return found
        from spade_lsp._deltas import normalise

        if self._normalised is None:
            self._normalised = {}
            for instruction in self._instructions:
                self._normalised.setdefault(normalise(instruction.text), instruction.index)
        return self._normalised.get(normalise(sentence))


def _with_results(
    assertions: Sequence[AssertionView],
    instruction_of: _SentenceIndex,
    stats: Mapping[str, AssertionStats],
    selection: SelectionView | None,
) -> tuple[AssertionView, ...]:
    out: list[AssertionView] = []
    considered = set(selection.considered) if selection is not None else set()
    chosen = set(selection.selected) if selection is not None else set()
    for view in assertions:
        index = instruction_of.get(view.sentence) if view.sentence else None
        selected: bool | None = None
        reason = None
        by: tuple[str, ...] = ()
        if selection is not None and view.name in considered:
            if selection.status == "infeasible":
                selected = False
                reason = "the latest selection was infeasible (nothing selected)"
            else:
                selected = view.name in chosen
                reason = selection.reasons.get(view.name)
                by = selection.subsumed_by.get(view.name, ())
        out.append(
            AssertionView(
                name=view.name,
                range=view.range,
                name_range=view.name_range,
                chunk_start_line=view.chunk_start_line,
                end_line=view.end_line,
                decorated=view.decorated,
                generated=view.generated,
                is_async=view.is_async,
                category=view.category,
                sentence=view.sentence,
                version=view.version,
                synthesizer=view.synthesizer,
                description=view.description,
                asks_llm=view.asks_llm,
                removed_in=view.removed_in,
                stale=view.sentence is not None and index is None and view.removed_in is None,
                instruction=index,
                stats=stats.get(view.name),
                selected=selected,
                drop_reason=reason,
                subsumed_by=by,
            )
        )
    return tuple(out)


def _empty(prompt: Path | None, key: str | None, store_available: bool, problem: str | None) -> PromptOverview:
    return PromptOverview(
        prompt=prompt,
        key=key,
        store_available=store_available,
        versions=(),
        instructions=(),
        sidecar=SidecarView(None, False),
        eval_run=None,
        selection=None,
        summary=Summary(0, 0, 0, 0, 0, None),
        problem=problem,
    )


def build_overview(
    store: Store | None,
    root: Path,
    prompt: Path | None,
    text: str | None = None,
    *,
    sidecar_text: str | None = None,
    read_sidecar: bool = True,
    max_prompt_bytes: int,
) -> PromptOverview:
    """Everything the editor shows about one prompt.

    ``prompt`` is None for a buffer with no file (no history, no sidecar). ``text`` is the current text (the
    editor's buffer; read from disk when None). ``sidecar_text`` is the open sidecar buffer; without it the
    module is read from disk when ``read_sidecar``. ``store`` None (no store yet) gives the instructions with
    offline categories and no history.
    """
    key = prompt_key(root, prompt) if prompt is not None else None
    if text is None:
        if prompt is None:
            raise ValueError("build_overview needs the text of a prompt that has no file")
        try:
            confine(root, prompt, "a prompt")
            data = read_limited(prompt, limit=max_prompt_bytes, what="a prompt", hint="raise max_prompt_bytes")
        except InputError as error:
            reason = str(error).removeprefix(f"{prompt}: ")
            return _empty(prompt, key, store is not None, f"cannot read {prompt.name}: {reason}")
        text = data.decode("utf-8-sig", errors="replace")
    problem = _text_problem(text, max_prompt_bytes)
    if problem is not None:
        return _empty(prompt, key, store is not None, problem)
    body, notes, parsed_prompt = _body(text, prompt_kind(prompt) if prompt is not None else "text")
    if prompt is not None:  # what an untrusted workspace's files asked for and did not get, and how to trust it
        from spade_lsp.config import untrusted_note  # pydantic: off the overview's import, as before

        try:
            untrusted = untrusted_note(root, text, kind=prompt_kind(prompt), source=str(prompt))
        except ConfigError:
            untrusted = None  # the settings' own problem is reported where they are read
        notes += (untrusted,) if untrusted else ()

    versions: list[VersionInfo] = []
    stored = _Stored({}, ())
    head_hash: str | None = None
    prompt_id: int | None = None
    run: _Run | None = None
    selection: SelectionView | None = None
    reliability: ReliabilityView | None = None
    comparison: str | None = None
    verdicts: dict[str, dict[str, Any]] = {}
    if store is not None and key is not None:
        try:
            history = HistoryRepository(store)
            prompt_id = history.prompt_id(key)
            if prompt_id is not None:
                versions, number_of, head_hash = _versions(history, prompt_id)
                stored = _stored_sentences(history, prompt_id, number_of, head_hash, prompt_kind(key))
                run = _load_run(store, prompt_id)
                selection = _selection_view(store, prompt_id, run)
                reliability = _reliability_view(store, prompt_id)
                comparison = _comparison_line(store, prompt_id, versions[-1].number if versions else None)
                verdicts = candidate_verdicts(store, prompt_id)
        except (DatabaseError, UnicodeError) as error:
            notes += (f"the store could not be read ({error}); showing the text only",)
            versions, stored, run, selection, head_hash = [], _Stored({}, ()), None, None, None
            comparison = None

    # the text of the newest version (a prompt opened as saved): its units are in the store, no need to split
    same_as_head = (
        head_hash is not None and head_hash == hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    )
    if same_as_head and stored.units:
        units: Sequence[Sentence] = stored.units
    else:
        units = _split_from(stored, body) or _split(body)
    instructions: list[InstructionView] = []
    inputs = tuple(template_placeholders(parsed_prompt) if parsed_prompt else placeholders_of(body))
    demonstrations = _example_spans(body)
    labelled: list[tuple[tuple[str, ...], int | None, bool]] = []
    requests: list[PlanRequest] = []
    for unit in units:
        known = stored.by_text.get(unit.text)
        if known is not None:
            categories, introduced, _ = known
        else:
            categories, introduced = classify_offline(unit.text), None
        shown = any(start <= unit.start < end for start, end in demonstrations)  # a line of an example answer
        labelled.append((categories, introduced, known is not None))
        requests.append((unit.text, categories, UnitKind.QUOTE.value if shown else str(unit.kind), inputs))
    for index, (unit, (categories, introduced, recorded), plan) in enumerate(
        zip(units, labelled, plans_for(requests), strict=True)
    ):
        if not categories and plan.category is not None:  # a check the classifier had no label for
            categories = (plan.category,)
        elif categories and categories[0] not in CHECKABLE and plan.category in categories[1:]:
            categories = (plan.category, *(c for c in categories if c != plan.category))  # what is checked first
        instructions.append(
            InstructionView(
                index=index,
                text=unit.text,
                kind=unit.kind,  # a StrEnum member is the str itself
                range=unit.range,
                start=unit.start,
                end=unit.end,
                categories=categories,
                introduced_in=introduced,
                recorded=recorded,
                checkable=plan.instruction,
                message=_message_of(parsed_prompt, unit.start),
                checks=plan.checks,
                needs_model=plan.needs_model,
                reason=plan.reason,
                verdicts=_verdict_lines(plan, verdicts),
                held_back=_held_back(plan, verdicts),
            )
        )

    module_path = sidecar_path(prompt) if prompt is not None else None
    if sidecar_text is None and read_sidecar:
        sidecar_text = _read_text(root, module_path)
    parsed = parse_sidecar(module_path, sidecar_text)
    stats = _stats(run) if run is not None else {}
    assertions = _with_results(parsed.assertions, _SentenceIndex(instructions), stats, selection)
    covering: dict[int, list[str]] = {}
    for view in assertions:
        if view.instruction is not None:
            covering.setdefault(view.instruction, []).append(view.name)
    if covering:
        instructions = [
            _covered(instruction, tuple(covering[instruction.index])) if instruction.index in covering else instruction
            for instruction in instructions
        ]
    instruction_count = sum(1 for i in instructions if i.checkable)
    covered = sum(1 for i in instructions if i.checkable and i.covered_by)
    summary = Summary(
        versions=len(versions),
        instructions=instruction_count,
        covered=covered,
        uncovered=instruction_count - covered,
        assertions=len(assertions),
        selected=(
            len([a for a in assertions if a.selected])
            if selection is not None and selection.status != "infeasible"
            else (0 if selection is not None else None)
        ),
        reliability=reliability,
    )
    return PromptOverview(
        prompt=prompt,
        key=key,
        store_available=store is not None,
        versions=tuple(versions),
        instructions=tuple(instructions),
        sidecar=SidecarView(parsed.path, parsed.exists, assertions, parsed.syntax_error, parsed.text),
        eval_run=_eval_view(run, sidecar_text) if run is not None else None,
        selection=selection,
        summary=summary,
        placeholders=inputs,
        notes=notes,
        comparison=comparison,
        messages=_message_views(parsed_prompt, text),
    )


def _message_of(parsed: PromptText | None, offset: int) -> str | None:
    """The label of the chat message holding ``offset`` (None for a one-message prompt)."""
    if parsed is None or not parsed.is_chat:
        return None
    index = parsed.message_index(offset)
    return parsed.message_label(index) if index is not None else None


def _covered(instruction: InstructionView, names: tuple[str, ...]) -> InstructionView:
    return InstructionView(
        index=instruction.index,
        text=instruction.text,
        kind=instruction.kind,
        range=instruction.range,
        start=instruction.start,
        end=instruction.end,
        categories=instruction.categories,
        introduced_in=instruction.introduced_in,
        recorded=instruction.recorded,
        covered_by=names,
        checkable=instruction.checkable,
        message=instruction.message,
        checks=instruction.checks,
        needs_model=instruction.needs_model,
        reason=instruction.reason,
        verdicts=instruction.verdicts,
        held_back=instruction.held_back,
    )


def verdict_text(verdict: Mapping[str, Any]) -> str:
    """How a candidate did on the labelled examples (a stored verdict, :mod:`spade_lsp._precheck`), in words."""
    if verdict.get("needs_model"):
        return "not checked on the labelled examples: it needs a model"
    caught, failed = len(verdict.get("bad_caught") or ()), len(verdict.get("good_failed") or ())
    text = f"catches {caught} of {verdict.get('bad')} bad examples, fails {failed} of {verdict.get('good')} good ones"
    if verdict.get("not_applicable"):
        text += f", does not apply to {verdict['not_applicable']}"
    return text


def _verdict_lines(plan: Plan, verdicts: Mapping[str, Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    """How each check of the plan did on the labelled examples, when the prompt's synthesis checked it."""
    if not verdicts or not plan.codes:  # most sentences of most prompts: no zip, no generator, per sentence
        return ()
    found = ((name, verdicts.get(code)) for name, code in zip(plan.checks, plan.codes, strict=True))
    return tuple((name, verdict_text(verdict)) for name, verdict in found if verdict is not None)


def _held_back(plan: Plan, verdicts: Mapping[str, Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    if not verdicts or not plan.codes:
        return ()
    return tuple(
        (name, str(verdicts[code]["held_back"]))
        for name, code in zip(plan.checks, plan.codes, strict=True)
        if code in verdicts and verdicts[code].get("held_back")
    )


_BLANK_RUN: Final = re.compile(r"\n(?:[^\S\n]*\n)+")  # the splitter's paragraph separator ("\n"-only text)
_BLOCK_MARK: Final = re.compile(r"(?m)^[^\S\n]*(?:`{3}|~{3})|\"\"\"|'''")
_MAX_REGION: Final = 0.25


def _split_from(stored: _Stored, body: str) -> list[Sentence] | None:
    """The units of ``body`` from the newest version's stored units, splitting only the paragraphs an edit
    touched; None when that shortcut does not apply (then everything is split).

    The splitter works paragraph by paragraph (blank lines separate paragraphs) except for code fences and
    triple-quoted blocks, which may span blank lines; so the shortcut is taken only for "\n"-only texts without
    those. Units before the first touched paragraph are kept as stored; units after the last one are shifted
    by the change in length and in line count (they start on a line of their own, so their columns hold).
    A prompt opened as recorded is shown from the stored units; this keeps the first edits after opening as
    cheap as later ones, when the splitter's cache is still cold.
    """
    head = stored.head_body
    if head is None or not stored.units or "\r" in body or "\r" in head:
        return None
    if _BLOCK_MARK.search(body) or _BLOCK_MARK.search(head):
        return None
    limit = min(len(head), len(body))
    a = _common_prefix(head, body, limit)
    b = _common_prefix(head[::-1], body[::-1], limit - a) if limit > a else 0
    edit_end = len(head) - b  # in head; the common suffix starts here
    separators = [(m.start(), m.end()) for m in _BLANK_RUN.finditer(head)]
    # the region starts at a paragraph start whose first line lies wholly in the common prefix, and ends at a
    # separator whose preceding line lies wholly in the common suffix: then the same separators bound it in both
    start = 0
    for _, sep_end in reversed(separators):
        newline = head.find("\n", sep_end)
        if sep_end <= a and 0 <= newline < a:
            start = sep_end
            break
    end = len(head)
    for sep_start, _ in separators:
        line_start = head.rfind("\n", 0, sep_start) + 1
        if sep_start > edit_end and line_start >= edit_end:
            end = sep_start
            break
    shift = len(body) - len(head)
    if (end + shift - start) > _MAX_REGION * len(body):
        return None
    line = head.count("\n", 0, start)
    lines_shift = body.count("\n", start, end + shift) - head.count("\n", start, end)
    out = [u for u in stored.units if u.end <= start]
    for unit in _split(body[start : end + shift]):
        out.append(_moved(unit, start, line))
    out += [_moved(u, shift, lines_shift) for u in stored.units if u.start >= end]
    return out


def _common_prefix(x: str, y: str, limit: int) -> int:
    """Length of the common prefix of ``x`` and ``y`` (at most ``limit``), by halving: slices compare in C."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if x[:middle] == y[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _moved(unit: Sentence, offset: int, lines: int) -> Sentence:
    if not offset and not lines:
        return unit
    start, end = unit.range.start, unit.range.end
    return Sentence(
        unit.text,
        unit.start + offset,
        unit.end + offset,
        Range(Position(start.line + lines, start.character), Position(end.line + lines, end.character)),
        unit.kind,
    )


@lru_cache(maxsize=8)  # the prompts being edited; each entry keeps a whole prompt's text alive
def _example_spans(body: str) -> list[tuple[int, int]]:
    """Where the prompt shows an example answer ("Example output:" and what follows): its lines ask nothing."""
    from spade_lsp.synthesis import example_blocks

    return example_blocks(body)


def _split(body: str) -> Sequence[Sentence]:
    """The splitter (and pysbd) load on first use: a prompt opened as recorded is shown without them."""
    from spade_lsp._sentences import split_sentences

    return split_sentences(body)


def prepare(text: str, *, chunk_chars: int = 4000) -> Iterator[None]:
    """Split ``text`` ahead of its first edit, a few paragraphs at a time (yielding after each piece), so the
    first edit after opening a prompt finds its paragraphs in the splitter's cache. A prompt opened as recorded
    is shown from the store's units without splitting; the caller runs this between other work. Pieces end at
    blank lines, where the splitter's paragraphs end, so they warm the same cache entries a full split uses."""
    from spade_lsp._sentences import unit_spans

    body = _body(text)[0]
    start = 0
    while start < len(body):
        end = body.find("\n\n", start + chunk_chars)
        end = len(body) if end < 0 else end + 2
        unit_spans(body[start:end])
        start = end
        yield


def sentence_history(store: Store | None, root: Path, prompt: Path, text: str) -> tuple[SentenceEvent, ...]:
    """The versions in which ``text`` (or an earlier wording of it) was added, reworded or moved, oldest first.

    Follows modification chains back through ``changes.old_text``: a sentence reworded in v5 shows the v5 edit
    and the version that added its first wording.
    """
    if store is None:
        return ()
    try:
        history = HistoryRepository(store)
        prompt_id = history.prompt_id(prompt_key(root, prompt))
        if prompt_id is None:
            return ()
        versions, number_of, _ = _versions(history, prompt_id)
        rows = history.sentence_changes(prompt_id)
    except (DatabaseError, UnicodeError):
        return ()
    by_new: dict[str, list[tuple[str, str | None, int]]] = {}
    for row in rows:
        number = number_of.get(row.to_version_id)
        if number is not None:
            by_new.setdefault(row.new_text, []).append((row.kind, row.old_text, number))
    events: dict[tuple[int, str, str, str | None], SentenceEvent] = {}
    seen = {text}
    frontier = [text]
    while frontier:
        current = frontier.pop()
        for kind, old_text, number in by_new.get(current, ()):
            label = "moved" if kind == "modified" and old_text == current else kind
            previous = old_text if label == "modified" else None
            events.setdefault(
                (number, label, current, previous), SentenceEvent(versions[number - 1], label, current, previous)
            )
            if label == "modified" and old_text is not None and old_text not in seen:
                seen.add(old_text)
                frontier.append(old_text)
    return tuple(sorted(events.values(), key=lambda e: (e.version.number, e.kind != "added")))
