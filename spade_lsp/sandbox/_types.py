"""The sandbox's public data: limits, cases, and what a run returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from spade_lsp._types import NOT_ERROR_KINDS
from spade_lsp.assertions import AssertionInfo
from spade_lsp.sandbox._policy import SourceProblem

__all__ = [
    "CELL_ERROR_KINDS",
    "NOT_ERROR_KINDS",
    "AssertionDescriptor",
    "CellError",
    "CellErrorKind",
    "Confinement",
    "ModuleError",
    "ModuleInfo",
    "ModuleSource",
    "SandboxCase",
    "SandboxLimits",
    "SandboxResult",
    "SandboxTiming",
]

#: ``kernel``: a worker runs only under the kernel layer (sandbox/_kernel.py), and nothing runs where the kernel
#: cannot confine; ``python-only``: the user opted in to the Python-level checks alone (a warning says so).
Confinement = Literal["kernel", "python-only"]

CellErrorKind = Literal[
    "exception",
    "timeout",
    "crash",
    "memory",
    "not_bool",
    "forbidden",
    "needs_model",
    "llm_error",
    "signature",
    "unmeasurable",  # a spade_lsp.checks measurement found nothing to measure (MeasurementError)
    "not_applicable",  # the check reads an input the example lacks (NotApplicable): no verdict, no error
]
CELL_ERROR_KINDS: tuple[CellErrorKind, ...] = get_args(CellErrorKind)


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """How much one assertion call may use, and how many workers share the work.

    ``timeout_s`` bounds one call (time spent waiting for ``ask_llm`` answers is not counted); a worker that
    does not answer within ``timeout_s + grace_s`` is killed and replaced. After ``give_up_after`` timeouts or
    crashes an assertion's remaining cells are not run (reported with the same kind). ``memory_mb`` caps each
    worker's address space (``None``: no cap); ``cpu_s`` is a per-worker CPU backstop; ``file_mb`` caps any
    file a worker writes. ``allow_imports`` extends the import allow-list (e.g. ``{"numpy"}``) for
    hand-written sidecars; ``read_paths`` are extra directories assertions may read. ``confinement`` is the
    ``sandbox`` setting. ``workers`` is the most that run at once: one starts first, the others only when the
    cells left would keep it busy longer than a worker takes to start.
    """

    timeout_s: float = 5.0
    memory_mb: int | None = 1024
    workers: int = 2
    grace_s: float = 1.0
    give_up_after: int = 3
    cpu_s: int = 3600
    file_mb: int = 64
    startup_s: float = 30.0
    allow_imports: frozenset[str] = frozenset()
    read_paths: tuple[str, ...] = ()
    confinement: Confinement = "kernel"

    def __post_init__(self) -> None:
        if self.confinement not in ("kernel", "python-only"):
            raise ValueError("sandbox confinement must be 'kernel' or 'python-only'")
        if not self.timeout_s > 0 or not self.grace_s >= 0 or not self.startup_s > 0:
            raise ValueError("sandbox timeouts must be positive")
        if self.memory_mb is not None and self.memory_mb < 64:
            raise ValueError("sandbox memory_mb must be at least 64 (or None for no cap)")
        if self.workers < 1 or self.give_up_after < 1 or self.cpu_s < 1 or self.file_mb < 1:
            raise ValueError("sandbox workers, give_up_after, cpu_s and file_mb must be at least 1")
        object.__setattr__(self, "allow_imports", frozenset(self.allow_imports))
        object.__setattr__(self, "read_paths", tuple(str(p) for p in self.read_paths))


@dataclass(frozen=True, slots=True)
class SandboxCase:
    """One example to evaluate: its inputs (``example``, JSON data), the rendered prompt and the response."""

    example: Mapping[str, Any]
    prompt: str
    response: str
    messages: Sequence[Mapping[str, str]] | None = None  # a chat prompt's rendered messages (``prompt.messages``)


@dataclass(frozen=True, slots=True)
class ModuleSource:
    """Sidecar source given as text; ``filename`` is used in line numbers and messages."""

    text: str
    filename: str = "<assertions>"


@dataclass(frozen=True, slots=True)
class AssertionDescriptor:
    """An assertion found in the module (discovered inside a worker, never in the caller's process)."""

    name: str
    line: int
    is_async: bool
    info: dict[str, Any]
    problem: str | None = None

    def to_info(self) -> AssertionInfo:
        """The metadata as the decorator recorded it."""
        names = {f.name for f in dataclasses.fields(AssertionInfo)}
        return AssertionInfo(**{k: v for k, v in self.info.items() if k in names})


@dataclass(frozen=True, slots=True)
class CellError:
    """Why one (case, assertion) cell has no verdict. ``line`` is the sidecar line where it happened."""

    case: int
    assertion: int
    name: str
    kind: CellErrorKind
    message: str
    line: int | None = None


@dataclass(frozen=True, slots=True)
class ModuleError:
    """The module could not be loaded: a syntax error or a failure in its top-level code."""

    kind: str
    message: str
    line: int | None = None


@dataclass(frozen=True, slots=True)
class SandboxTiming:
    """Where the time went; ``startup_s`` is until the module was loaded and its assertions known."""

    wall_s: float
    startup_s: float
    cells_run: int
    worker_starts: int
    llm_calls: int
    llm_cache_hits: int


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """``passed[case][assertion]`` is True/False, or None when ``errors`` holds that cell's error.

    ``seconds[assertion]`` is the total time spent in that assertion (a cost for selection).
    ``confinement`` says what confined the workers (read it to warn when it was Python-level only).
    """

    assertions: list[AssertionDescriptor]
    passed: list[list[bool | None]]
    errors: list[CellError]
    module_error: ModuleError | None
    problems: list[SourceProblem]
    seconds: list[float]
    timing: SandboxTiming
    #: what confined the workers: the kernel layers, or the python-only warning
    confinement: str = ""
    _index: dict[tuple[int, int], CellError] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._index.update({(e.case, e.assertion): e for e in self.errors})

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.assertions]

    def error(self, case: int, assertion: int | str) -> CellError | None:
        """The error of one cell (``assertion`` by index or name), or None when it has a verdict."""
        column = self.names.index(assertion) if isinstance(assertion, str) else assertion
        return self._index.get((case, column))


@dataclass(frozen=True, slots=True)
class ModuleInfo:
    """What a sidecar module declares, found without running any assertion."""

    assertions: list[AssertionDescriptor]
    module_error: ModuleError | None
    problems: list[SourceProblem]
    confinement: str = ""
