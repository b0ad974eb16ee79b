"""The assertion jobs of one prompt: synthesize candidates into its sidecar module, and evaluate the module on
its labelled examples in the sandbox, storing the pass matrix. The CLI and the daemon both call these."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from spade_lsp._columns import IndexedColumn, StringColumn
from spade_lsp._examples import Example, example_chunks, read_examples
from spade_lsp._fallbacks import Fallbacks
from spade_lsp._files import (
    MAX_EXAMPLES_BYTES,
    atomic_write_text,
    examples_path,
    prompt_stem,
    read_chunks,
    read_sidecar_text,
    sidecar_path,
)
from spade_lsp._precheck import Verdict, example_cases, labelled_examples, precheck
from spade_lsp._prompts import (
    PromptText,
    conversation_text,
    parse_prompt,
    prompt_kind,
    template_placeholders,
)
from spade_lsp._roles import HOW_TO_CONFIGURE_ASSISTANT
from spade_lsp._types import NOT_ERROR_KINDS
from spade_lsp.config import Settings
from spade_lsp.errors import ConfigError, InputError, LLMError, ModelNotConfiguredError, SpadeError
from spade_lsp.llm import LLMClient, parse_json_answer
from spade_lsp.sandbox import PYTHON_ONLY_WARNING, ModuleSource, SandboxCase, SandboxLimits, run_assertions
from spade_lsp.store import Store, insert_eval_run, save_candidate_verdicts, stored_eval_run
from spade_lsp.synthesis import (
    Candidate,
    Instruction,
    PromptContext,
    SidecarUpdate,
    Synthesizer,
    earlier_instructions,
    placeholders_of,
    plan_sidecar,
)
from spade_lsp.workspace import Workspace, sync_prompt

#: Rough tokens an ``ask_llm`` assertion spends beyond the response itself (question and instructions).
_ASK_OVERHEAD_TOKENS = 80


@dataclass(slots=True)
class SynthesisResult:
    candidates: list[Candidate]
    update: SidecarUpdate
    warnings: list[str] = field(default_factory=list)
    text: str = ""  # the sidecar module as planned (written only when ``update.written``)
    fallbacks: Fallbacks = field(default_factory=Fallbacks)
    unreviewed: list[str] = field(default_factory=list)  # LLM-written functions of ``text`` nobody accepted yet
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # each candidate on the labelled examples
    held_back: list[Verdict] = field(default_factory=list)  # candidates not written: noisy or faulty on them


def make_synthesizer(
    workspace: Workspace, choice: str = "auto", *, settings: Settings, prompt: Path | None = None
) -> Synthesizer:
    """``offline`` (the default without an assistant model), ``llm`` (needs one), or ``auto``: the assistant
    model when one is configured in ``settings`` (the prompt's, resolved by the caller). The pipeline's model is
    never asked unless ``assistant_model = "same"``."""
    if choice == "llm" or (choice == "auto" and workspace.has_assistant(settings)):
        from spade_lsp.synthesis import LLM_SYNTHESIZER, LLMSynthesizer

        if not workspace.has_assistant(settings):  # asked for by name: say how to configure one
            raise ModelNotConfiguredError(f"--synthesizer llm needs a model; {HOW_TO_CONFIGURE_ASSISTANT}")
        try:
            client = workspace.assistant_client(settings, what="--synthesizer llm")
        except SpadeError as error:  # configured but cannot start (the local model is not installed, say)
            return _Unavailable(LLM_SYNTHESIZER, LLMError(str(error)))
        limits = SandboxLimits(confinement=settings.sandbox)  # generated functions are validated confined
        return LLMSynthesizer(client, example=_first_example(prompt), limits=limits)
    return _offline_synthesizer()


@dataclass(slots=True)
class _Unavailable:
    """The LLM synthesizer whose model could not be reached: synthesis falls back offline and says why."""

    name: str
    error: LLMError

    def synthesize(self, instructions: Sequence[Instruction], context: PromptContext) -> list[Candidate]:
        raise self.error


def _offline_synthesizer() -> Synthesizer:
    from spade_lsp.synthesis import OfflineSynthesizer

    return OfflineSynthesizer()


def instructions_of(workspace: Workspace, prompt: Path) -> tuple[list[Instruction], PromptContext]:
    """The newest version's sentences, with categories and the version that introduced each; the context carries
    the sentences earlier versions had and the newest no longer has (SPADE mines every delta)."""
    versions = workspace.history.versions(prompt)
    if not versions:
        raise InputError(f"{prompt}: no recorded version; save the prompt or run `spade history {prompt}` first")
    text = workspace.history.content(versions[-1].content_hash)
    instructions = [
        Instruction(s.text, s.categories, s.introduced_in, s.kind, s.start, s.end)
        for s in workspace.history.sentences(prompt)
    ]
    earlier = tuple(earlier_instructions(workspace.history.deltas(prompt)))
    try:  # the template as its messages (a chat as its role sections), without front matter or JSON syntax
        parsed = parse_prompt(text, source=str(prompt), kind=prompt_kind(prompt))
    except ConfigError:
        return instructions, PromptContext(text=text, inputs=tuple(placeholders_of(text)), earlier=earlier)
    template = conversation_text([{"role": m.role, "content": m.content} for m in parsed.messages])
    return instructions, PromptContext(text=template, inputs=tuple(template_placeholders(parsed)), earlier=earlier)


def plan_synthesis(
    workspace: Workspace,
    prompt: Path,
    synthesizer: Synthesizer,
    *,
    settings: Settings,
    sentences: Sequence[str] | None = None,
    sidecar_text: str | None = None,
    include_held_back: bool = False,
    progress: Callable[[str, float], None] | None = None,
) -> SynthesisResult:
    """Record the prompt's current text and plan its candidates into the sidecar module, writing nothing.

    ``sentences`` limits synthesis to those instructions and keeps every other function (a code action adding
    one assertion); ``sidecar_text`` is the module as the editor holds it (default: the file on disk). When
    the prompt has labelled examples every candidate runs on them first (:mod:`spade_lsp._precheck`): one that
    would fail more than ``settings.tau`` of the good ones, or raises, is held back unless
    ``include_held_back``. ``progress`` is called at checkpoints (it may raise to cancel); the last one comes
    before planning.
    """
    report = progress or (lambda message, percentage: None)
    report("recording the prompt", 0.0)
    warnings = sync_prompt(workspace, prompt)
    instructions, context = instructions_of(workspace, prompt)
    if sentences is not None:
        wanted = {sentence.strip() for sentence in sentences}
        instructions = [i for i in instructions if i.text.strip() in wanted]
        if not instructions:
            raise InputError(f"{prompt}: none of the given sentences is in the newest version")
        missing = wanted - {i.text.strip() for i in instructions}
        if missing:
            warnings.append(f"{len(missing)} sentence(s) not in the newest version were skipped")
        context = dataclasses.replace(context, earlier=())  # only the instructions asked for
    report(f"synthesizing from {len(instructions)} instruction(s) ({synthesizer.name})", 10.0)
    fallbacks = Fallbacks()
    try:
        candidates = synthesizer.synthesize(instructions, context)
    except LLMError as error:  # the criteria call failed: the instructions still get offline candidates
        offline = _offline_synthesizer()
        if synthesizer.name == offline.name:
            raise
        fallbacks.add("assertion criteria", error, "synthesized offline instead")
        candidates = offline.synthesize(instructions, context)
    for sentence, reason in getattr(synthesizer, "dropped", []):
        warnings.append(f"no check from the model for “{' '.join(sentence.split())[:80]}”: {reason}")
    for name, reason in getattr(synthesizer, "rejected", []):
        warnings.append(f"not offered: {name}: {reason}")
    if not candidates:
        warnings.append(f"{prompt}: no checkable instruction found; nothing to synthesize")
    verdicts = _precheck_candidates(workspace, prompt, candidates, settings, report)
    held = [verdicts[c.name] for c in candidates if c.name in verdicts and verdicts[c.name].held_back]
    if held and not include_held_back:
        names = {verdict.name for verdict in held}
        candidates = [c for c in candidates if c.name not in names]
    report("planning the sidecar module", 90.0)
    module = sidecar_path(prompt)
    old = sidecar_text if sidecar_text is not None else _read_sidecar(module)
    text, update = plan_sidecar(module, old, candidates, prompt_name=prompt.name, remove_stale=sentences is None)
    if update.kept_edited:
        warnings.append(f"kept your edited version of: {', '.join(update.kept_edited)}")
    pending = _record_provenance(workspace, prompt, synthesizer, candidates, update, text)
    if pending:
        warnings.append(
            f"LLM-written, not reviewed: {', '.join(pending)}; read them, then accept them (the editor's quick fix "
            f"“Accept reviewed code”, or `spade review {prompt} --accept NAME`)"
        )
    return SynthesisResult(candidates, update, warnings, text, fallbacks, pending, verdicts, held)


def _precheck_candidates(
    workspace: Workspace,
    prompt: Path,
    candidates: Sequence[Candidate],
    settings: Settings,
    report: Callable[[str, float], None],
) -> dict[str, Verdict]:
    """Each candidate on the prompt's labelled examples, stored for the editor's hints ({} without any)."""
    examples = labelled_examples(prompt)
    if not candidates or not examples:
        return {}
    report(f"checking {len(candidates)} candidate(s) on {len(examples)} labelled example(s)", 60.0)
    verdicts = precheck(
        candidates,
        examples,
        newest_template(workspace, prompt),
        tau=settings.tau,
        limits=SandboxLimits(confinement=settings.sandbox),
        ask_llm=assistant_ask(workspace, settings),
    )
    save_candidate_verdicts(
        workspace.store, workspace.history.prompt_key(prompt), [(v.code_sha, v.to_json()) for v in verdicts.values()]
    )
    return verdicts


def newest_template(workspace: Workspace, prompt: Path) -> PromptText:
    """The prompt's newest recorded version, parsed (the template examples without a prompt are rendered from)."""
    versions = workspace.history.versions(prompt)
    return parse_prompt(
        workspace.history.content(versions[-1].content_hash) if versions else "",
        source=str(prompt),
        kind=prompt_kind(prompt),
    )


def _record_provenance(
    workspace: Workspace,
    prompt: Path,
    synthesizer: Synthesizer,
    candidates: Sequence[Candidate],
    update: SidecarUpdate,
    text: str,
) -> list[str]:
    """Record which functions of the planned module an LLM wrote (recorded at planning: the editor applies the
    text itself, and a record for a function that never lands flags nothing); the names still unreviewed."""
    from spade_lsp._review import LLM_SYNTHESIZER, record_synthesis, unreviewed

    placed = {*update.added, *update.updated, *update.unchanged}
    llm = [c.name for c in candidates if c.name in placed and c.synthesizer == LLM_SYNTHESIZER]
    template = [c.name for c in candidates if c.name in placed and c.synthesizer != LLM_SYNTHESIZER]
    key = workspace.history.prompt_key(prompt)
    model = getattr(getattr(synthesizer, "client", None), "model", None)
    record_synthesis(
        workspace.store,
        key,
        text,
        llm=llm,
        template=template,
        removed=update.removed,
        model=model if isinstance(model, str) else None,
    )
    return [item.name for item in unreviewed(workspace.store, key, text)]


def write_synthesis(result: SynthesisResult) -> None:
    """Write a planned module to disk when it differs from what is there (no module is created to hold nothing)."""
    module = result.update.path
    current = _read_sidecar(module)
    if current is None and not result.candidates:
        return
    if result.text != current:
        atomic_write_text(module, result.text)
        result.update.written = True


def synthesize(
    workspace: Workspace, prompt: Path, synthesizer: Synthesizer, *, settings: Settings, include_held_back: bool = False
) -> SynthesisResult:
    """Record the prompt's current text, synthesize candidates, and write them into its sidecar module."""
    result = plan_synthesis(workspace, prompt, synthesizer, settings=settings, include_held_back=include_held_back)
    write_synthesis(result)
    return result


def _read_sidecar(module: Path) -> str | None:
    return read_sidecar_text(module)


def _first_example(prompt: Path | None) -> SandboxCase | None:
    """A real labelled output to validate LLM-written functions on, when the prompt has examples."""
    if prompt is None or not examples_path(prompt).exists():
        return None
    example = read_examples(examples_path(prompt), [])[0]  # any usable one; eval reports the file's problems
    return SandboxCase(example=dict(example.inputs), prompt=example.prompt or "", response=example.output or "")


@dataclass(slots=True)
class EvalRun:
    """One evaluation: ``m[i][j]`` is 1 when assertion j passes example i, 0 when it fails, None on error."""

    run_id: int
    assertions: list[dict[str, Any]]
    examples: Sequence[str]  # a run of a million examples holds them compact (:class:`StringColumn`)
    y: Sequence[int | None]
    m: Sequence[Sequence[int | None]]
    errors: list[dict[str, Any]]
    seconds: float
    module_error: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def needs_model(self) -> list[str]:
        return sorted({e["assertion"] for e in self.errors if e["kind"] == "needs_model"})

    @property
    def failed_cells(self) -> list[dict[str, Any]]:
        """The cells that raised: neither "needs a model" nor "not applicable" (:data:`NOT_ERROR_KINDS`)."""
        return [e for e in self.errors if e["kind"] not in NOT_ERROR_KINDS]

    def not_applicable_cells(self) -> set[tuple[int, int]]:
        """(example row, assertion column) of the cells whose check does not apply (an input the example lacks)."""
        from spade_lsp.selection import not_applicable_cells

        return not_applicable_cells(self.errors, self.examples, [str(a["name"]) for a in self.assertions])

    @property
    def unreviewed(self) -> list[str]:
        """LLM-written assertions that ran (confined, as all do) before anyone accepted their code."""
        return [a["name"] for a in self.assertions if a.get("unreviewed")]

    def static_subsumptions(self) -> list[list[int]]:
        """``K`` pairs [i, j] (assertion i subsumes j) proven from the generated checks' specs."""
        from spade_lsp.selection import AssertionSpec, static_subsumptions

        specs = [AssertionSpec(a["name"], a["cost"], a.get("check")) for a in self.assertions]
        index = {spec.name: i for i, spec in enumerate(specs)}
        return sorted([index[p.subsumer], index[p.subsumed]] for p in static_subsumptions(specs))

    def matrix_json(self) -> dict[str, Any]:
        """The shape of ../shared/bench/spade/*/matrix.json (M of 0/1: a cell that errored counts as a failure, a
        cell whose check does not apply as a pass, and ``errors`` says which ones), plus example ids."""
        skipped = self.not_applicable_cells()
        return {
            "assertions": [{"name": a["name"], "cost": a["cost"]} for a in self.assertions],
            "M": [
                row
                if None not in row
                else [(1 if (i, j) in skipped else 0) if cell is None else cell for j, cell in enumerate(row)]
                for i, row in enumerate(self.m)
            ],
            "y": self.y,
            "K": self.static_subsumptions(),
            "examples": self.examples,
            "errors": self.errors,
            "needs_model": self.needs_model,
            "not_applicable": sorted([i, j] for i, j in skipped),
            "unreviewed": self.unreviewed,
            "module_error": self.module_error,
            "warnings": self.warnings,
            "run_id": self.run_id,
            "seconds": round(self.seconds, 3),
        }


AskLLM = Callable[[str, str, Mapping[str, Any]], bool]


_YES_NO_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}


def ask_llm_with(client: LLMClient) -> AskLLM:
    """The parent-side answer to an assertion's ``ask_llm``: one cached, structured yes/no call."""

    def ask(question: str, response: str, context: Mapping[str, Any]) -> bool:
        rest = {key: value for key, value in context.items() if key != "prompt"}
        extra = "".join(f"\n{key}: {value}" for key, value in sorted(rest.items()))
        # The rendered prompt (so that a question about its inputs, "use only what is in the notes", can be
        # answered) and the response come fenced, so neither's wording is read as the question, and before the
        # question: every check of one example then shares the long prefix, which a provider's prompt cache and
        # the local model's reuse instead of reading it again for each question.
        prompt = context.get("prompt")
        shown = f"The prompt that produced the response:\n<prompt>\n{prompt}\n</prompt>\n\n" if prompt else ""
        messages = [
            {
                "role": "system",
                "content": "You check LLM outputs. Answer the question about the response with yes or no.",
            },
            {
                "role": "user",
                "content": f"{shown}The response:\n<response>\n{response}\n</response>\n\nQuestion: {question}{extra}",
            },
        ]
        answer = parse_json_answer(
            client.complete(messages, response_schema=_YES_NO_SCHEMA), what="a yes/no check", schema=_YES_NO_SCHEMA
        )
        return str(answer["answer"]).strip().lower() == "yes"  # the schema holds: "yes" or "no"

    return ask


def _sha256(path: Path, *, limit: int, what: str) -> str:
    digest = hashlib.sha256()
    for chunk in read_chunks(path, limit=limit, what=what):  # an examples file may be a hundred megabytes
        digest.update(chunk)
    return digest.hexdigest()


def evaluate(
    workspace: Workspace,
    prompt: Path,
    *,
    settings: Settings,
    examples_file: Path | None = None,
    limits: SandboxLimits | None = None,
) -> EvalRun:
    """Run every assertion of the prompt's sidecar module on its examples, in the sandbox, and store the run.
    ``settings`` are the prompt's, resolved by the caller (the sandbox's confinement, the assistant model that
    answers ``ask_llm``)."""
    module = sidecar_path(prompt)
    if not module.exists():
        raise InputError(f"{module}: no sidecar module; run `spade synthesize {prompt}` first")
    source = examples_file or examples_path(prompt)
    if not source.exists():
        raise InputError(f"{source}: no examples; import some with `spade import {prompt} --examples FILE`")
    sync_prompt(workspace, prompt)
    template = newest_template(workspace, prompt)
    warnings: list[str] = []  # lines that could not be read as they are: reported, the others run
    ask = assistant_ask(workspace, settings)
    limits = dataclasses.replace(limits or SandboxLimits(), confinement=settings.sandbox)
    text = _read_sidecar(module)  # once: the text that runs is the text marked and hashed
    if text is None:
        raise InputError(f"{module}: no sidecar module; run `spade synthesize {prompt}` first")
    pending = _unreviewed_in(workspace, prompt, text)
    started = datetime.now(UTC).isoformat()
    clock = time.perf_counter()
    ran = _ChunkedRun(ModuleSource(text, str(module.resolve())), limits, ask)
    case_warnings: list[str] = []
    case_warning_count = 0
    for chunk in example_chunks(source, warnings, size=EVAL_CHUNK, ids=ran.ids):  # a chunk held, not the file
        cases, found = example_cases(chunk, template)
        case_warnings += found[: max(0, _CASE_WARNINGS_KEPT - len(case_warnings))]
        case_warning_count += len(found)
        ran.add(chunk, cases)
    warnings += case_warnings
    if case_warning_count > len(case_warnings):
        warnings.append(f"and {case_warning_count - len(case_warnings)} more example(s) like these")
    if limits.confinement == "python-only":
        warnings.append(PYTHON_ONLY_WARNING)
    seconds = time.perf_counter() - clock
    mean_tokens = ran.response_chars / max(len(ran.ids), 1) / 4
    assertions = [
        {
            "name": a.name,
            "cost": round(mean_tokens + _ASK_OVERHEAD_TOKENS, 1) if a.info.get("asks_llm") else 0.0,
            **{key: a.info.get(key) for key in ("category", "sentence", "version", "synthesizer", "check", "asks_llm")},
            **({"unreviewed": True} if a.name in pending else {}),
        }
        for a in ran.descriptors
    ]
    unreviewed = [str(a["name"]) for a in assertions if a.get("unreviewed")]
    if unreviewed:
        warnings.append(
            f"LLM-written, not reviewed (ran confined in the sandbox): {', '.join(unreviewed)}; read them, then "
            f"accept them (`spade review {prompt}`)"
        )
    run = EvalRun(
        run_id=0,
        assertions=assertions,
        examples=ran.ids,
        y=ran.y,
        m=ran.m,
        errors=ran.errors,
        seconds=seconds,
        module_error=_module_error(module, ran.module_error),
        warnings=warnings,
    )
    module_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    model = ask.model if ask else None
    run.run_id = _store_run(workspace, prompt, run, started, module, module_hash, source, limits, model)
    return run


#: Examples evaluated per sandbox run: enough to amortise the workers' start, few enough that a file of a
#: million examples never sits in memory whole (their cases, rendered prompts included, are the bulk).
EVAL_CHUNK: Final = 10_000
_CASE_WARNINGS_KEPT: Final = 100


class _ChunkedRun:
    """One evaluation's results, a chunk of examples at a time: every chunk runs in the sandbox with the same
    module text, and the matrix, labels and cell errors are appended in file order (the ids, by the reader that
    skips reused ones: :func:`~spade_lsp._examples.example_chunks`)."""

    def __init__(self, module: ModuleSource, limits: SandboxLimits, ask: AskLLM | None) -> None:
        self.module, self.limits, self.ask = module, limits, ask
        self.descriptors: list[Any] = []
        self.module_error: Any = None
        self.ids = StringColumn()
        # A label and a row of verdicts per example, each distinct pair kept once: a million examples of a few
        # checks hold a handful of pairs and a 4-byte index each (rows are shared, so read-only, as every
        # consumer of ``m`` treats them).
        self.rows: IndexedColumn[tuple[int | None, list[int | None]]] = IndexedColumn()
        self.errors: list[dict[str, Any]] = []
        self.response_chars = 0

    @property
    def y(self) -> Sequence[int | None]:
        return self.rows.column(0)

    @property
    def m(self) -> Sequence[list[int | None]]:
        return self.rows.column(1)

    def add(self, examples: Sequence[Example], cases: Sequence[SandboxCase]) -> None:
        self.response_chars += sum(len(case.response) for case in cases)
        if self.module_error is not None:  # the module does not load: nothing runs on the later chunks either
            for example in examples:
                self.rows.append((example.label, ()), (example.label, []))
            return
        result = run_assertions(self.module, cases, limits=self.limits, ask_llm=self.ask)
        self.module_error = result.module_error
        if not self.descriptors:
            self.descriptors = list(result.assertions)
        names = [assertion.name for assertion in result.assertions]
        for example, row in zip(examples, result.passed, strict=True):
            cells = tuple(None if cell is None else int(cell) for cell in row)
            self.rows.append((example.label, cells), (example.label, list(cells)))
        self.errors += [
            {
                "example": examples[error.case].id,
                "assertion": names[error.assertion],
                "kind": error.kind,
                "message": error.message,
                "line": error.line,
            }
            for error in result.errors
        ]


def _unreviewed_in(workspace: Workspace, prompt: Path, text: str) -> set[str]:
    """Names of the module's LLM-written functions whose text nobody accepted (see :mod:`spade_lsp._review`)."""
    from spade_lsp._review import unreviewed

    key = workspace.history.prompt_key(prompt)
    return {item.name for item in unreviewed(workspace.store, key, text)}


def load_eval_run(store: Store, run_id: int) -> EvalRun:
    """A stored evaluation run (one the daemon ran, say), as :func:`evaluate` returned it."""
    row = stored_eval_run(store, run_id)
    return EvalRun(row.run_id, row.assertions, row.examples, row.y, row.m, row.errors, row.seconds)


def _module_error(module: Path, error: Any) -> str | None:
    if error is None:
        return None
    where = f"{module}:{error.line}" if error.line else str(module)
    return f"{where}: {error.message}"


def assistant_ask(workspace: Workspace, settings: Settings) -> _AssistantAsk | None:
    """The assistant model's answers to ``ask_llm``; without one the cells are reported as "needs a model"."""
    return _AssistantAsk(workspace, settings) if workspace.has_assistant(settings) else None


class _AssistantAsk:
    """``ask_llm`` answered by the assistant model, whose client is made at the first question (an evaluation
    without ``ask_llm`` never starts a model); a model that cannot start fails every question with the same
    error, once, rather than being started again for each."""

    def __init__(self, workspace: Workspace, settings: Settings) -> None:
        self.workspace, self.settings = workspace, settings
        self.client: LLMClient | None = None
        self.error: SpadeError | None = None

    def __call__(self, question: str, response: str, context: Mapping[str, Any]) -> bool:
        if self.error is not None:
            raise self.error
        if self.client is None:
            try:
                self.client = self.workspace.assistant_client(self.settings, what="ask_llm")
            except SpadeError as error:
                self.error = error
                raise
        return ask_llm_with(self.client)(question, response, context)

    @property
    def model(self) -> str | None:
        """The model that answered, once one was asked."""
        return None if self.client is None else self.client.model


def _store_run(
    workspace: Workspace,
    prompt: Path,
    run: EvalRun,
    started: str,
    module: Path,
    module_hash: str,
    examples: Path,
    limits: SandboxLimits,
    model: str | None,
) -> int:
    key = workspace.history.prompt_key(prompt)
    parameters = {
        "timeout_s": limits.timeout_s,
        "memory_mb": limits.memory_mb,
        "workers": limits.workers,
        "confinement": limits.confinement,  # what confined the generated code: the kernel, or Python alone
        "model": model,  # the assistant model that answered ask_llm, if any
        "sidecar": module.name,
        "examples_file": examples.name,
        "prompt_name": prompt_stem(prompt),
    }
    return insert_eval_run(
        workspace.store,
        key,
        started_at=started,
        finished_at=datetime.now(UTC).isoformat(),
        module_hash=module_hash,
        examples_hash=_sha256(examples, limit=MAX_EXAMPLES_BYTES, what="an examples file"),
        parameters=parameters,
        assertions=run.assertions,
        examples=run.examples,
        y=run.y,
        m=run.m,
        errors=run.errors,
        seconds=run.seconds,
    )
