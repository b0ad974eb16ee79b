"""The kinds of job the daemon runs (and the CLI runs in-process when no daemon does), and the registry.

Each kind is a :class:`JobSpec` in a module of its own here: its params model (validated before a job is
queued, and again when it runs) and its run function. A job's settings are resolved once, when it runs
(:func:`run`): the workspace's files, then the prompt's own settings, then the params' ``settings`` (the
editor's, or the command line's); the run receives them in its :class:`JobContext`.

Adding a kind: a module defining ``SPEC``, and its name in :data:`JOB_KINDS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from spade_lsp._progress import Progress
from spade_lsp.jobs._spec import JobContext, JobParams, JobParamsError, JobSpec

if TYPE_CHECKING:
    from spade_lsp.store import Job
    from spade_lsp.workspace import Workspace

__all__ = [
    "EDITOR_SETTINGS",
    "JOB_KINDS",
    "JobContext",
    "JobParams",
    "JobParamsError",
    "JobSpec",
    "run",
    "run_here",
    "run_job",
    "spec",
    "validate_params",
]

#: Every kind, each the name of its module in this package.
JOB_KINDS: Final = ("synthesize", "evaluate", "select", "sample", "judge", "compare", "relabel", "review", "test")
#: How a daemon job's ``settings`` are named in errors: the editor's (the CLI sends its options the same way).
EDITOR_SETTINGS: Final = "editor settings (spade)"


def spec(kind: str) -> JobSpec[Any]:
    """The spec of ``kind``; :class:`JobParamsError` for a kind there is none of."""
    if kind not in JOB_KINDS:
        raise JobParamsError(f"unknown job kind {kind!r}; expected one of {', '.join(JOB_KINDS)}")
    found: JobSpec[Any] = importlib.import_module(f"{__name__}.{kind}").SPEC
    return found


def validate_params(kind: str, params: Mapping[str, Any]) -> JobParams:
    """``params`` checked for ``kind``; raises :class:`JobParamsError` naming the param at fault."""
    checked: JobParams = spec(kind).parse(params)
    return checked


def run(
    workspace: Workspace,
    kind: str,
    path: Path,
    params: JobParams,
    progress: Progress,
    *,
    overrides_source: str = EDITOR_SETTINGS,
) -> dict[str, Any]:
    """Run a job of ``kind`` on ``path`` here: its settings resolved once, then the kind's run. Raises
    :class:`~spade_lsp.errors.JobCancelled` from ``progress``, or the engine's errors."""
    from spade_lsp.config import resolve, resolve_file

    found = spec(kind)
    overrides = {**(params.settings or {}), **params.setting_values()}  # --samples is samples_per_input, ...
    if found.prompt_settings:
        settings = resolve_file(workspace.root, path, overrides, overrides_source=overrides_source)
    else:
        settings = resolve(workspace.root, None, overrides, overrides_source=overrides_source)
    return found.execute(JobContext(workspace, path, settings), params, progress)


def run_here(
    workspace: Workspace,
    kind: str,
    path: Path,
    params: Mapping[str, Any],
    progress: Progress,
    *,
    overrides: Mapping[str, Any] | None = None,
    overrides_source: str = "command line",
) -> dict[str, Any]:
    """A job run in this process (the CLI with no daemon): ``params`` validated with ``overrides`` as their
    ``settings``, exactly as the daemon would get them, then :func:`run`."""
    given = dict(params)
    if overrides:
        given["settings"] = {**(given.get("settings") or {}), **overrides}
    return run(workspace, kind, path, validate_params(kind, given), progress, overrides_source=overrides_source)


def run_job(workspace: Workspace, job: Job, progress: Progress) -> dict[str, Any]:
    """Run a queued job (its stored params validated again into the kind's model)."""
    params = validate_params(job.kind, job.params)
    return run(workspace, job.kind, workspace.root / job.path, params, progress)  # an absolute key stays absolute
