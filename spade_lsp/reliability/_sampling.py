"""Sampling: run a prompt's pipeline on its examples' inputs, several times each, and measure every output with
the prompt's validators, filling the reliability tensor R[input][sample][validator].

The pipeline is the newest version of the template, rendered with an example's ``inputs`` and sent as one
user message. The j-th sample of an input is the LLM layer's sample index j, so it is cached and
reproducible; ``seed`` only decides which inputs are drawn when fewer than all are asked for. Validators run
in the sandbox, round by round; the optional LLM verifier (setting ``verifier``, ``spade sample --verify``) is
one more column, judged in this process through the LLM layer, a batch per round. With early stopping, every round
samples each input equally and then tests each validator on its samples pooled over the inputs (an anytime-valid
sequential test, the design effect discounting samples of one input for being alike); sampling stops once every
validator is decided above or below its minimum; without early stopping the run is one round. Answers are
validated and written to the store at most 256 at a time as they arrive (the rest stay in flight), and a round's
last ones before the next round starts, so killing the process loses nothing that was acknowledged.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from spade_lsp._examples import Example, draw_examples
from spade_lsp._fallbacks import Fallbacks
from spade_lsp._files import sidecar_path
from spade_lsp._progress import Progress
from spade_lsp._prompts import PromptText, conversation_text, parse_prompt, prompt_kind, render_messages
from spade_lsp._roles import HOW_TO_CONFIGURE_ASSISTANT
from spade_lsp.config import Settings
from spade_lsp.errors import InputError, LLMError, SpadeError, StoreError
from spade_lsp.llm import Completion, EmptyAnswerError, LLMClient, LLMRequest, model_name
from spade_lsp.reliability._names import Method
from spade_lsp.reliability._stats import analyse, design_effect, sequential_decision
from spade_lsp.reliability._validators import ValidatorSpec
from spade_lsp.store import (
    SampleOutputRow,
    SampleResultRow,
    finish_sample_run,
    newest_selected,
    save_sample_round,
    start_sample_run,
    stored_document,
)
from spade_lsp.store import prompt_id as stored_prompt_id
from spade_lsp.taxonomy import PLAIN_NAMES
from spade_lsp.workspace import Workspace, synced_head

if TYPE_CHECKING:
    from spade_lsp.judges import LLMVerifier
    from spade_lsp.sandbox import AskLLM, AssertionDescriptor, SandboxCase

__all__ = ["VERIFIER_COLUMN", "SampleOptions", "latest_document", "sample_prompt", "selected_assertions"]


_ROUND_CALLS: Final = 256  # the most calls between two writes when nothing stops early
_PROGRESS_EVERY_S: Final = 0.5
#: The verifier's column of the tensor (always the last one).
VERIFIER_COLUMN: Final = "verifier"


@dataclass(frozen=True, slots=True)
class SampleOptions:
    """Which run to make. How much to sample and how to judge it (``sample_inputs``, ``samples_per_input``,
    ``temperature``, ``early_stopping``, ``interval``, ``confidence``, ``verifier``) are settings: a caller that
    wants other values resolves them (:func:`spade_lsp.config.resolve_file` with overrides, or
    :meth:`Settings.merged`), so every entry point sets them the same way."""

    seed: int = 0  # which inputs are drawn
    version: int | None = None  # sample this recorded version of the template; None: the newest
    model: str | None = None  # another model on the configured endpoint; None: the setting ``model``

    def __post_init__(self) -> None:
        if self.version is not None and self.version < 1:
            raise InputError("--version must be at least 1")


@dataclass
class _Plan:
    prompt_key: str
    prompt_id: int
    version: int | None
    template: PromptText  # the version sampled, parsed: its messages are sent as written, rendered per example
    examples: list[Example]
    validators: list[ValidatorSpec]
    module: Path
    samples: int
    temperature: float
    early_stopping: bool
    method: Method
    confidence: float
    warnings: list[str] = field(default_factory=list)
    criteria: str | None = None  # the verifier's criteria (None: its default)
    verify: bool = False  # the last validator is the LLM verifier
    settings: Settings = field(default_factory=Settings)  # the prompt's: files, front matter, overrides
    fallbacks: Fallbacks = field(default_factory=Fallbacks)
    _rendered: dict[str, list[dict[str, str]]] = field(default_factory=dict, repr=False)

    @property
    def assertions(self) -> list[ValidatorSpec]:
        """The validators that run in the sandbox (every one but the verifier)."""
        return self.validators[:-1] if self.verify else self.validators

    def messages(self, example: Example) -> list[dict[str, str]]:
        """The messages sent for ``example``: the template's, placeholders filled from its inputs (rendered once
        per example: every sample and its validation use them)."""
        rendered = self._rendered.get(example.id)
        if rendered is None:
            rendered = self._rendered[example.id] = render_messages(
                self.template, example.inputs, source=self.prompt_key
            )[0]
        return rendered


def sample_prompt(
    workspace: Workspace,
    prompt: Path,
    options: SampleOptions | None = None,
    *,
    settings: Settings,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Sample the prompt's pipeline, store the run, and return its document (docs/reliability.md).

    ``settings`` are the prompt's, resolved once by the caller (:func:`spade_lsp.config.resolve_file`: the
    workspace's files, the prompt's front matter, then the overrides): the pipeline's client is made from them,
    so a ``model`` in the front matter is the model sampled."""
    options = options or SampleOptions()
    report = progress or (lambda message, percentage: None)
    plan = _plan(workspace, prompt, options, settings)
    if options.model is not None and options.model != settings.model:  # a compared model, on its own endpoint
        settings = settings.merged({"model": options.model}, source="the compared model")
    client = workspace.llm_client(settings)  # ModelNotConfiguredError says how to configure one
    # the assistant model judges as the verifier and answers ask_llm (at its first question, as in eval); it is
    # never the pipeline's by default
    verifier_client = None
    if plan.verify:
        try:
            verifier_client = workspace.assistant_client(plan.settings)
        except SpadeError as error:  # configured but cannot start: the pipeline is still sampled
            plan.fallbacks.add("verifier", error, "sampled without the verifier column")
            plan.validators.pop()
            plan.verify = False
    from spade_lsp._assertion_jobs import assistant_ask

    ask_llm = assistant_ask(workspace, plan.settings)
    return _Sampler(workspace, plan, client, verifier_client, ask_llm, options, report).run()


def latest_document(workspace: Workspace, prompt: Path, *, run_id: int | None = None) -> dict[str, Any]:
    """The document of a finished sampling run: ``run_id``, else the prompt's newest."""
    document = stored_document(workspace.store, workspace.history.prompt_key(prompt), run_id=run_id)
    if document is None:
        raise InputError(f"{prompt}: no finished sampling run; run `spade sample {prompt}` first")
    return document


# -- planning ---------------------------------------------------------------------------------------------


def _plan(workspace: Workspace, prompt: Path, options: SampleOptions, settings: Settings) -> _Plan:
    module = sidecar_path(prompt)
    if not module.exists():
        raise InputError(f"{module}: no sidecar module to validate with; run `spade synthesize {prompt}` first")
    warnings, version, text = synced_head(workspace, prompt)
    if options.version is not None and options.version != version:
        recorded = {v.number: v for v in workspace.history.versions(prompt)}
        if options.version not in recorded:
            raise InputError(f"{prompt}: no version {options.version}; it has v1..v{version} (see `spade history`)")
        version, text = options.version, workspace.history.content(recorded[options.version].content_hash)
    parsed = parse_prompt(text, source=str(prompt), kind=prompt_kind(prompt))
    examples = draw_examples(prompt, parsed, wanted=settings.sample_inputs, seed=options.seed, warnings=warnings)
    validators = _validators(workspace, prompt, module, settings, warnings)
    verify = bool(settings.verifier)
    criteria = settings.verifier if isinstance(settings.verifier, str) else None
    fallbacks = Fallbacks()
    if verify and not workspace.has_assistant(settings):
        verify = False
        fallbacks.add("verifier", HOW_TO_CONFIGURE_ASSISTANT, "sampled without the verifier column")
    if verify:
        if any(v.name == VERIFIER_COLUMN for v in validators):
            raise InputError(f"{module}: an assertion is named {VERIFIER_COLUMN!r}, the verifier's column; rename it")
        from spade_lsp.judges import DEFAULT_CRITERIA

        message = f"LLM verifier: {criteria or DEFAULT_CRITERIA}"
        validators.append(ValidatorSpec(VERIFIER_COLUMN, message, settings.min_success))
    missing = sorted({name for e in examples for name in render_messages(parsed, e.inputs, source=str(prompt))[1]})
    if missing:
        warnings.append(f"no input for {', '.join(missing)} in some examples: the placeholder is sent as written")
    if settings.executor == "ray" and settings.batch:
        warnings.append("executor ray with batch: the provider's batch API takes the LLM calls; Ray runs validation")
    prompt_key = workspace.history.prompt_key(prompt)
    prompt_id = stored_prompt_id(workspace.store, prompt_key)
    if prompt_id is None:  # synced_head records it
        raise InputError(f"{prompt}: not recorded in the store; save the prompt first")
    temperature = settings.temperature
    return _Plan(
        prompt_key=prompt_key,
        prompt_id=prompt_id,
        version=version,
        template=parsed,
        examples=examples,
        validators=validators,
        module=module,
        samples=settings.samples_per_input,
        temperature=1.0 if temperature is None else float(temperature),
        early_stopping=settings.early_stopping,
        method=settings.interval,
        confidence=settings.confidence,
        warnings=warnings,
        criteria=criteria,
        verify=verify,
        settings=settings,
        fallbacks=fallbacks,
    )


def _validators(
    workspace: Workspace, prompt: Path, module: Path, settings: Settings, warnings: list[str]
) -> list[ValidatorSpec]:
    """The selected assertions (all of them when no selection was made), as validators."""
    specs = []
    for descriptor in selected_assertions(workspace, prompt, module, settings, warnings, use="a validator"):
        meta = descriptor.to_info()
        minimum = meta.min_success if meta.min_success is not None else settings.min_success
        specs.append(ValidatorSpec(descriptor.name, _message(meta.category, meta.sentence, meta.description), minimum))
    return specs


def selected_assertions(
    workspace: Workspace, prompt: Path, module: Path, settings: Settings, warnings: list[str], *, use: str
) -> list[AssertionDescriptor]:
    """The runnable assertions of ``module`` that the prompt's newest selection chose, in the module's order;
    every runnable one when there is no usable selection, with a warning saying each becomes ``use``."""
    from spade_lsp.sandbox import PYTHON_ONLY_WARNING, SandboxLimits, load_module_info

    if not module.exists():
        raise InputError(f"{module}: no sidecar module; run `spade synthesize {prompt}` first")
    info = load_module_info(module, limits=SandboxLimits(confinement=settings.sandbox))
    if settings.sandbox == "python-only":
        warnings.append(PYTHON_ONLY_WARNING)
    if info.module_error is not None:
        where = f"{module}:{info.module_error.line}" if info.module_error.line else str(module)
        raise InputError(f"{where}: {info.module_error.message}")
    runnable = [a for a in info.assertions if a.problem is None]
    if not runnable:
        raise InputError(f"{module}: no runnable assertions")
    names = newest_selected(workspace.store, workspace.history.prompt_key(prompt))
    if names is None:
        warnings.append(f"no selection yet: every assertion is {use} (run `spade select {prompt}` to choose)")
        return runnable
    selected = set(names)
    chosen = [a for a in runnable if a.name in selected]
    gone = selected - {a.name for a in runnable}
    if gone:
        warnings.append(f"selected assertions no longer in the module: {', '.join(sorted(gone))}")
    if not chosen:
        warnings.append(f"none of the selected assertions is in the module: every assertion is {use}")
        return runnable
    return chosen


def _message(category: str | None, sentence: str | None, description: str | None) -> str:
    what = description or sentence or ""
    name = PLAIN_NAMES.get(category or "", "")
    return f"{name}: {what}" if name and what else (what or name)


# -- the run ----------------------------------------------------------------------------------------------


class _Sampler:
    def __init__(
        self,
        workspace: Workspace,
        plan: _Plan,
        client: LLMClient,
        verifier_client: LLMClient | None,
        ask_llm: AskLLM | None,
        options: SampleOptions,
        progress: Progress,
    ) -> None:
        self.workspace = workspace
        self.plan = plan
        self.client = client
        self.ask_llm = ask_llm
        self.fallbacks = plan.fallbacks
        self.options = options
        self.progress = progress
        n, m, v = len(plan.examples), plan.samples, len(plan.validators)
        self.tensor = np.full((n, m, v), np.nan)
        self.errors = [0] * v
        self.not_applicable = np.zeros((n, m, v), dtype=np.bool_)
        self.produced = [0] * n
        self.active = list(range(n))
        # validator -> (decision, samples per input when decided, pooled outputs it was decided on)
        self.decisions: dict[int, tuple[str, int, int]] = {}
        # validators with no observed result yet (an ask_llm check without a model, one that always errs): they
        # cannot be decided, so they do not hold early stopping back once every other validator is decided
        self.unobserved: set[int] = set()
        self.generated = 0
        self.failed: list[str] = []
        self.empty = 0
        self.cached = 0
        self.last_progress = 0.0
        self.usage_before = _usage(client)
        self.batches_before = len(getattr(client, "batch_log", ()))
        self.run_id = 0
        self.started_at = datetime.now(UTC).isoformat()
        self.verifier: LLMVerifier | None = None
        self.verifier_problem: str | None = None
        if plan.verify and verifier_client is not None:
            from spade_lsp.judges import LLMVerifier

            self.verifier = LLMVerifier(verifier_client, plan.criteria)

    def run(self) -> dict[str, Any]:
        from spade_lsp.errors import JobCancelled

        self.run_id = self._start()
        try:
            with self._workers_ahead():
                while self.active:
                    self._round()
            document = self._document()
        except BaseException as error:
            status = "cancelled" if isinstance(error, JobCancelled | KeyboardInterrupt) else "failed"
            self._finish(status, None, str(error).splitlines()[0] if str(error) else type(error).__name__)
            raise
        self._finish("done", document, None)
        return document

    def _workers_ahead(self) -> contextlib.AbstractContextManager[None]:
        """While sampling, a sandbox worker is started ahead of each validation: the answers' last validation
        then starts at once instead of after a worker's start (about 0.1 s), as does a one-call run's."""
        if self.plan.settings.executor == "ray" or not self.plan.assertions:
            return contextlib.nullcontext()
        from spade_lsp.sandbox import worker_kept_ready

        return worker_kept_ready()

    # a round: the next samples of every active input, then their validation and the sequential tests
    def _round(self) -> None:
        plan = self.plan
        # a provider batch client takes a whole run in one round (one batch), early stopping or not; without early
        # stopping a round is the whole run too, its answers validated and stored _ROUND_CALLS at a time while
        # the rest are in flight, so the model is never kept waiting on the sandbox or the store
        budget = getattr(self.client, "round_calls", None) or (
            2 * getattr(self.client, "concurrency", 8) if self._sequential else len(self.active) * plan.samples
        )
        block = max(1, math.ceil(budget / len(self.active)))
        jobs = [
            (i, j) for i in self.active for j in range(self.produced[i], min(plan.samples, self.produced[i] + block))
        ]
        requests = [LLMRequest(plan.messages(plan.examples[i]), None, plan.temperature, j) for i, j in jobs]
        arrived: list[tuple[int, int, Completion | LLMError]] = []

        def on_answer(index: int, answer: Completion | LLMError) -> None:
            i, j = jobs[index]
            arrived.append((i, j, answer))
            self.produced[i] = max(self.produced[i], j + 1)
            if len(arrived) >= _ROUND_CALLS:
                self._settle(arrived)
                arrived.clear()
            self._report()

        self._complete(requests, on_answer)
        self._settle(arrived)
        self._decide()
        decided = (
            self._sequential
            and bool(self.decisions)
            and len(self.decisions) + len(self.unobserved) == len(plan.validators)
        )
        self.active = [] if decided else [i for i in self.active if self.produced[i] < plan.samples]
        done = sum(self.produced) / (len(plan.examples) * plan.samples)
        self.progress(f"sampled {sum(self.produced)} outputs", round(100 * done, 1))

    def _settle(self, outputs: list[tuple[int, int, Completion | LLMError]]) -> None:
        """Validate answers that arrived and store them with their results, in one transaction; stop the run
        when every call so far failed (the model is unreachable: the rest would fail the same way)."""
        if not outputs:
            return
        self.generated += len(outputs)
        results = self._validate([(i, j, a) for i, j, a in outputs if isinstance(a, Completion)])
        self._save_round(outputs, results)
        if self.failed and len(self.failed) == self.generated:
            raise LLMError(f"every call failed; the first: {self.failed[0]}")

    @property
    def _sequential(self) -> bool:
        return self.plan.early_stopping and self.plan.samples > 1

    def _complete(self, requests: list[LLMRequest], on_answer: Callable[[int, Completion | LLMError], None]) -> None:
        """Every request answered through ``on_answer(index, answer)`` in this thread as it arrives."""
        batch = getattr(self.client, "complete_many", None)
        if batch is None:  # an injected client with only ``complete``
            for index, r in enumerate(requests):
                answer: Completion | LLMError
                try:
                    answer = self.client.complete(r.messages, temperature=r.temperature, sample_index=r.sample_index)
                except LLMError as error:
                    answer = error
                on_answer(index, answer)
        elif hasattr(self.client, "batch_log"):  # a provider batch: progress at every poll (spade_lsp._batch)
            batch(requests, on_result=on_answer, on_progress=self._polled)
        else:
            batch(requests, on_result=on_answer)

    def _polled(self, done: int, total: int) -> None:
        """A provider batch's progress; raising (a cancelled job) leaves the batch for a later run to resume."""
        self.progress(f"batch: {done} of {total} requests answered", round(100 * done / max(total, 1), 1))

    def _report(self) -> None:
        """Progress now and then, from the caller's thread; the callback raising (a cancelled job) stops the
        batch: the LLM layer abandons what it has not sent."""
        now = time.monotonic()
        if now - self.last_progress < _PROGRESS_EVERY_S:
            return
        self.last_progress = now
        planned = len(self.plan.examples) * self.plan.samples
        done = sum(self.produced)
        self.progress(f"sampling: {done} of up to {planned} outputs", round(100 * done / planned, 1))

    def _validate(
        self, outputs: list[tuple[int, int, Completion]]
    ) -> list[tuple[int, int, int, int | None, str | None]]:
        from spade_lsp.sandbox import SandboxCase, SandboxLimits, run_assertions

        if not outputs:
            return []
        plan = self.plan
        cases = []
        for i, _, answer in outputs:
            messages = plan.messages(plan.examples[i])
            cases.append(
                SandboxCase(
                    example=dict(plan.examples[i].inputs),
                    prompt=conversation_text(messages),
                    response=answer.text,
                    messages=messages,
                )
            )
        names = [v.name for v in plan.assertions]
        limits = SandboxLimits(confinement=plan.settings.sandbox)
        if plan.settings.executor == "ray":  # the cases in chunks, as Ray tasks, each in its node's sandbox workers
            from spade_lsp._ray import run_assertions_ray

            address = plan.settings.ray_address
            result = run_assertions_ray(
                plan.module, cases, names=names, limits=limits, ask_llm=self.ask_llm, address=address
            )
        else:
            result = run_assertions(plan.module, cases, names=names, limits=limits, ask_llm=self.ask_llm)
        if result.module_error is not None:
            raise InputError(f"{plan.module}: {result.module_error.message}")
        column = {name: index for index, name in enumerate(result.names)}
        rows: list[tuple[int, int, int, int | None, str | None]] = []
        for case, (i, j, _) in enumerate(outputs):
            for v, name in enumerate(names):
                passed = result.passed[case][column[name]]
                error = result.error(case, column[name])
                if error is not None and error.kind in ("llm_error", "needs_model"):
                    self.fallbacks.add("ask_llm", error.message, "recorded the cell as an error (not counted)")
                inapplicable = error is not None and error.kind == "not_applicable"
                rows.append(self._cell(i, j, v, passed, error.message if error else None, inapplicable))
        if self.verifier is not None:
            rows += self._verify(self.verifier, outputs, cases)
        return rows

    def _verify(
        self, verifier: LLMVerifier, outputs: list[tuple[int, int, Completion]], cases: list[SandboxCase]
    ) -> list[tuple[int, int, int, int | None, str | None]]:
        """The verifier's column for this round's outputs, one batch; an unusable answer is an error cell."""
        v = len(self.plan.validators) - 1
        answers = verifier.judge_many([(case.prompt, case.response) for case in cases])
        rows = []
        for (i, j, _), answer in zip(outputs, answers, strict=True):
            if answer.valid:
                rows.append(self._cell(i, j, v, answer.value.passed, None))
            else:
                problem = f"{answer.problem}: {answer.detail}"
                self.verifier_problem = self.verifier_problem or problem
                self.fallbacks.add("verifier", problem, "recorded the cell as an error (not counted)")
                rows.append(self._cell(i, j, v, None, f"verifier {problem}"))
        return rows

    def _cell(
        self, i: int, j: int, v: int, passed: bool | None, error: str | None, not_applicable: bool = False
    ) -> tuple[int, int, int, int | None, str | None]:
        if not_applicable:  # the check reads an input this example lacks: no trial, and no error either
            self.not_applicable[i, j, v] = True
        elif passed is None:
            self.errors[v] += 1
        else:
            self.tensor[i, j, v] = float(passed)
        return (i, j, v, None if passed is None else int(passed), error)

    def _decide(self) -> None:
        """Test each undecided validator on its samples pooled over the inputs. Every round gives each active input
        the same number of samples, which keeps the mixture test valid for these inputs' mean rate however the
        samples of one input are alike; the design effect deflates the evidence as the interval is widened."""
        if not self._sequential:
            return
        sampled = max(self.produced, default=0)
        self.unobserved.clear()
        for v, validator in enumerate(self.plan.validators):
            if v in self.decisions:
                continue
            cells = self.tensor[:, :sampled, v]
            trials = int(np.count_nonzero(~np.isnan(cells)))
            if trials == 0:
                self.unobserved.add(v)
                continue
            successes = int(np.nansum(cells))
            decision = sequential_decision(
                successes,
                trials,
                validator.minimum,
                confidence=self.plan.confidence,
                design_effect=design_effect(cells),
            )
            if decision is not None:
                self.decisions[v] = (decision, sampled, trials)

    # -- the store -------------------------------------------------------------------------------------------

    def _start(self) -> int:
        plan = self.plan
        parameters = {
            "inputs": len(plan.examples),
            "samples": plan.samples,
            "seed": self.options.seed,
            "temperature": plan.temperature,
            "early_stopping": plan.early_stopping,
            "interval": plan.method,
            "confidence": plan.confidence,
            "sidecar": plan.module.name,
            "verifier": _verifier_json(plan),
        }
        return start_sample_run(
            self.workspace.store,
            prompt_id=plan.prompt_id,
            version=plan.version,
            model=model_name(self.client),
            parameters=parameters,
            inputs=[e.id for e in plan.examples],
            validators=[{"name": v.name, "message": v.message, "minimum": v.minimum} for v in plan.validators],
            started_at=self.started_at,
        )

    def _save_round(
        self,
        outputs: list[tuple[int, int, Completion | LLMError]],
        results: list[tuple[int, int, int, int | None, str | None]],
    ) -> None:
        """The round's outputs and results, in one transaction before the next round starts."""
        rows: list[SampleOutputRow] = []
        for i, j, answer in outputs:
            if isinstance(answer, Completion):
                self.cached += int(answer.cached)
                rows.append(
                    SampleOutputRow(
                        i,
                        j,
                        answer.text,
                        None,
                        bool(answer.cached),
                        answer.prompt_tokens,
                        answer.completion_tokens,
                        answer.cost,
                    )
                )
            else:
                self.failed.append(str(answer))
                self.empty += isinstance(answer, EmptyAnswerError)
                rows.append(SampleOutputRow(i, j, None, str(answer), False, 0, 0, None))
        save_sample_round(self.workspace.store, self.run_id, rows, [SampleResultRow(*row) for row in results])

    def _finish(self, status: str, document: dict[str, Any] | None, error: str | None) -> None:
        try:
            finish_sample_run(self.workspace.store, self.run_id, status=status, document=document, error=error)
        except StoreError:
            if status == "done":
                raise

    # -- the document ----------------------------------------------------------------------------------------

    def _document(self) -> dict[str, Any]:
        plan = self.plan
        ids = [e.id for e in plan.examples]
        stats = analyse(
            self.tensor,
            plan.validators,
            ids,
            method=plan.method,
            confidence=plan.confidence,
            errors=self.errors,
            not_applicable=self.not_applicable,
        )
        usage = _usage(self.client)
        spent = usage.minus(self.usage_before) if usage is not None and self.usage_before is not None else None
        planned = len(ids) * plan.samples
        warnings = list(plan.warnings)
        if self.failed:
            warnings.append(f"{len(self.failed)} of {self.generated} calls failed; the first: {self.failed[0]}")
        if self.empty:
            warnings.append(
                f"{self.empty} answer(s) were empty (HTTP 200 with no text): failed calls, not outputs any check passed"
            )
        if any(self.errors):
            erring = [f"{v.name} ({n})" for v, n in zip(plan.assertions, self.errors, strict=False) if n]
            if erring:
                warnings.append(f"assertions raised errors on some outputs (not counted): {', '.join(erring)}")
            if plan.verify and self.errors[-1]:
                warnings.append(
                    f"the verifier gave no usable answer on {self.errors[-1]} output(s) (not counted); "
                    f"the first: {self.verifier_problem}"
                )
        if self.unobserved and self.decisions and len(self.decisions) + len(self.unobserved) == len(plan.validators):
            names = ", ".join(plan.validators[v].name for v in sorted(self.unobserved))
            warnings.append(f"early stopping did not wait for checks with no observed result: {names}")
        sequential = [
            {"validator": plan.validators[v].name, "decision": decision, "at_sample": at, "trials": trials}
            for v, (decision, at, trials) in sorted(self.decisions.items())
        ]
        return {
            "prompt": plan.prompt_key,
            "version": plan.version,
            "run_id": self.run_id,
            "model": model_name(self.client),
            "started_at": self.started_at,
            "finished_at": datetime.now(UTC).isoformat(),
            "seed": self.options.seed,
            "temperature": plan.temperature,
            "inputs": ids,
            "samples": plan.samples,
            "early_stopping": self._sequential,
            **stats,
            "sequential": sequential,
            "verifier": _verifier_json(plan),
            "calls": spent.calls if spent else self.generated - self.cached,
            "calls_cached": self.cached,
            "calls_planned": planned,
            "calls_saved": planned - self.generated,
            "calls_failed": len(self.failed),
            "calls_empty": self.empty,  # of the failed calls: answers with no text, which no check saw
            "tokens": {"prompt": spent.prompt_tokens, "completion": spent.completion_tokens} if spent else None,
            "cost": round(spent.cost, 6) if spent and spent.cost_known else None,
            "warnings": warnings,
            "fallbacks": self.fallbacks.to_json(),
            # provider batches (spade_lsp._batch): id, status, requested, completed, failed, cost, price source
            **({"batches": log[self.batches_before :]} if (log := getattr(self.client, "batch_log", None)) else {}),
        }


def _verifier_json(plan: _Plan) -> dict[str, Any] | None:
    """What the verifier column judged against, or None without one."""
    if not plan.verify:
        return None
    from spade_lsp.judges import DEFAULT_CRITERIA

    return {"name": VERIFIER_COLUMN, "criteria": plan.criteria or DEFAULT_CRITERIA}


def _usage(client: LLMClient) -> Any:
    usage = getattr(client, "usage", None)
    return usage.copy() if usage is not None and hasattr(usage, "copy") else None
