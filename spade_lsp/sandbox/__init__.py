"""Run assertion functions from a sidecar module in sandbox worker processes, never in the caller's process.

Public API::

    run_assertions(module, cases, *, names=None, limits=None, ask_llm=None) -> SandboxResult
    load_module_info(module, *, limits=None) -> ModuleInfo     # discovery, also inside a worker
    check_source(source, *, allow_imports=(), filename=...) -> list[SourceProblem]   # static, runs nothing
    with worker_kept_ready(): ...    # runs one after another: each takes a worker started ahead

``module`` is a :class:`pathlib.Path` or a :class:`ModuleSource`. Every failure of an assertion becomes a cell
error (:data:`CELL_ERROR_KINDS`) and the run goes on; a module that does not load is a ``module_error``.

Security policy, from the outside in:

- **Process.** ``python -I -B -X utf8`` in a new session, so its whole process group is killed on a timeout
  or crash. The environment is rebuilt from scratch (PATH, LANG, LC_ALL, and HOME/TMPDIR pointing at a
  private ``mkdtemp`` directory that is the working directory and is removed afterwards): no API key,
  token or proxy setting reaches a worker. ``ask_llm`` is proxied to the parent, which calls the model.
- **Limits.** RLIMIT_AS (``memory_mb``; a huge allocation is a MemoryError in that cell only), RLIMIT_CPU
  backstop, RLIMIT_FSIZE, no core files, RLIMIT_NPROC=0 (not enforced for root). Per call, SIGALRM after
  ``timeout_s``; a worker that ignores it is killed after ``timeout_s + grace_s`` and replaced. An orphaned
  worker exits when its parent dies. The data files of the checks library that the module calls (CMUdict,
  langdetect's profiles: seconds to parse on a busy machine) load after the module, before the first cell's
  clock starts: ``timeout_s`` bounds the assertion's own work.
- **Audit hook** (installed before any user code): refuses fork/exec/spawn/system/subprocess, signals to
  other processes, setrlimit, sockets (connect, bind, send, name lookups), ctypes foreign calls, sqlite/dbm,
  writing or changing any file outside the private directory, and reading files outside Python's own
  directories, the private directory and ``SandboxLimits.read_paths`` (this covers /proc/PID/environ).
  A refused operation makes the cell ``forbidden``, even if the assertion catches the exception.
- **Restricted namespace.** The module runs with builtins lacking eval, exec, compile, open, input, vars,
  breakpoint, help, exit, quit; ``__import__`` admits only :data:`DEFAULT_ALLOWED_IMPORTS` (plus
  ``SandboxLimits.allow_imports``). A forbidden import at module level binds an inert stand-in, so the rest
  of the module still loads; functions that use it (directly or through module-level helpers, found
  statically by :func:`check_source`) are not run and all their cells are ``forbidden``. Inside a function
  a forbidden import raises ImportError (and the cell is ``forbidden``).

The allow-list is a lint for generated code, not a wall: Python code can reach other modules through allowed
ones. The process boundary, the scrubbed environment, the limits and the audit hook are what protect the
user. Native code (an allowed C extension) can bypass the audit hook; run untrusted sidecars under an OS
sandbox as well.

Results: a cell passes only when the assertion returns exactly ``True`` or ``False`` (``bool`` has no
subclasses, so ``numpy.bool_``, ``1`` or ``"yes"`` are ``not_bool``: wrap them in ``bool(...)``). A
:mod:`spade_lsp.checks` measurement that finds nothing to measure raises ``MeasurementError``, an
``unmeasurable`` cell: an error, never a pass or a fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_lsp._lazy import lazy_exports

# The names below load on first use. A worker imports ``spade_lsp.sandbox._worker``, which runs this file first:
# loading the runner here would make every worker import the settings model (pydantic) before its first case,
# about 0.4 s of CPU per worker, paid again each time a sampling round starts its workers.
if TYPE_CHECKING:
    from spade_lsp.sandbox._kernel import KernelSupport, probe
    from spade_lsp.sandbox._policy import DEFAULT_ALLOWED_IMPORTS, SourceProblem, check_source
    from spade_lsp.sandbox._runner import (
        PYTHON_ONLY_WARNING,
        AskLLM,
        SandboxUnavailableError,
        clean_stale_dirs,
        confinement_status,
        load_module_info,
        run_assertions,
        worker_kept_ready,
    )
    from spade_lsp.sandbox._types import (
        CELL_ERROR_KINDS,
        AssertionDescriptor,
        CellError,
        CellErrorKind,
        Confinement,
        ModuleError,
        ModuleInfo,
        ModuleSource,
        SandboxCase,
        SandboxLimits,
        SandboxResult,
        SandboxTiming,
    )


__all__ = [
    "CELL_ERROR_KINDS",
    "DEFAULT_ALLOWED_IMPORTS",
    "PYTHON_ONLY_WARNING",
    "AskLLM",
    "AssertionDescriptor",
    "CellError",
    "CellErrorKind",
    "Confinement",
    "KernelSupport",
    "ModuleError",
    "ModuleInfo",
    "ModuleSource",
    "SandboxCase",
    "SandboxLimits",
    "SandboxResult",
    "SandboxTiming",
    "SandboxUnavailableError",
    "SourceProblem",
    "check_source",
    "clean_stale_dirs",
    "confinement_status",
    "load_module_info",
    "probe",
    "run_assertions",
    "worker_kept_ready",
]

__getattr__ = lazy_exports(__name__, globals())
