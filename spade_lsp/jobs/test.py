"""``test``: a prompt-response test file (ModelGauge style; ``spade test FILE``), the job's path being the file.
It is checked whole (the models it needs, its sidecar functions, looked up in the sandbox) before the first
call, then run like a shipped test, and stored."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from spade_lsp._progress import Progress
from spade_lsp.config import Settings
from spade_lsp.errors import InputError
from spade_lsp.jobs._spec import JobContext, JobParams, JobSpec

if TYPE_CHECKING:
    from spade_lsp.judges import TestFile
    from spade_lsp.workspace import Workspace


class TestParams(JobParams):
    __test__ = False  # not a pytest class

    file: str | None = None
    limit: int | None = None
    judge_model: str | None = None

    def check(self) -> None:
        """:class:`InputError` for params a test job cannot run with."""
        if self.file is None or not Path(self.file).is_absolute():
            raise InputError("params.file: expected the test file's absolute path")
        if self.limit is not None and self.limit < 1:
            raise InputError("--limit must be at least 1")
        if self.judge_model is not None and not self.judge_model.strip():
            raise InputError("params.judge_model: expected a model name")


def run(ctx: JobContext, params: TestParams, progress: Progress) -> dict[str, Any]:
    """Run the test file and return its stored document."""
    from spade_lsp.judges import load_test_file

    params.check()
    spec = load_test_file(Path(str(params.file or ctx.prompt)))
    return run_test_file(
        ctx.workspace,
        spec,
        settings=ctx.settings,
        judge_model=params.judge_model,
        limit=params.limit,
        store=True,
        progress=progress,
    )


def with_model(client: Any, model: str) -> Any:
    """``client`` asking ``model`` instead (on the same endpoint)."""
    derive = getattr(client, "with_model", None)
    if derive is None:
        raise InputError(f"--judge-model {model}: this client cannot switch models")
    return derive(model)


def run_test_file(
    workspace: Workspace,
    spec: TestFile,
    *,
    settings: Settings,
    judge_model: str | None = None,
    limit: int | None = None,
    store: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """A loaded test file, checked whole before the first call, then run like a shipped test. The model under
    test is ``model``; judge annotators ask the assistant model (or ``judge_model``); code annotators run in the
    sandbox under the ``sandbox`` setting, their ``ask_llm`` answered by the assistant model."""
    from spade_lsp._assertion_jobs import assistant_ask
    from spade_lsp._roles import HOW_TO_CONFIGURE_ASSISTANT
    from spade_lsp.errors import ModelNotConfiguredError
    from spade_lsp.judges import run_prompt_test
    from spade_lsp.sandbox import PYTHON_ONLY_WARNING, SandboxLimits

    sut = workspace.llm_client(settings)
    judge = None
    if spec.judges:
        has_assistant = workspace.has_assistant(settings)
        if judge_model is not None:  # on the assistant's endpoint when one is set, else the model under test's
            judge = with_model(workspace.assistant_client(settings) if has_assistant else sut, judge_model)
        elif has_assistant:
            what = f"the judge annotator {spec.judges[0]!r} of {spec.path.name}"
            judge = workspace.assistant_client(settings, what=what)
        else:
            raise ModelNotConfiguredError(
                f"{spec.path}: annotator {spec.judges[0]!r} is an LLM judge and needs a model; "
                f"{HOW_TO_CONFIGURE_ASSISTANT}; or pass --judge-model MODEL"
            )
    limits = SandboxLimits(confinement=settings.sandbox)
    texts = spec.sidecar_text()
    ask = None
    if texts:
        spec.check_sidecars(limits, texts)
        ask = assistant_ask(workspace, settings)
    test = spec.build(limits=limits, ask_llm=ask, texts=texts)
    document: dict[str, Any] = run_prompt_test(
        test, sut, judge=judge, store=workspace.store if store else None, limit=limit, progress=progress
    )
    if texts and limits.confinement == "python-only":
        document.setdefault("warnings", []).append(PYTHON_ONLY_WARNING)
    return document


SPEC = JobSpec("test", TestParams, run, "run a prompt-response test file against the model", prompt_settings=False)
