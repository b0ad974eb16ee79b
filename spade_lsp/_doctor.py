"""`spade doctor`: what this machine and workspace can do, checked rather than assumed.

The sandbox line is the one that matters most: it starts a real worker and reports the confinement the worker
verified before it would have read any user code (Landlock, seccomp, no_new_privs, no capabilities).
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["Check", "run_checks"]

Status = Literal["ok", "warning", "error"]


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _sandbox(confinement: Literal["kernel", "python-only"]) -> list[Check]:
    from spade_lsp.errors import SpadeError
    from spade_lsp.sandbox import ModuleSource, SandboxLimits, load_module_info, probe

    support = probe()
    checks = [
        Check(
            "landlock",
            "ok" if support.landlock_abi else "error",
            f"ABI {support.landlock_abi}" if support.landlock_abi else next(iter(support.missing), "absent"),
        ),
        Check(
            "seccomp",
            "ok" if support.seccomp else "error",
            "filters load through libseccomp" if support.seccomp else support.missing[-1],
        ),
    ]
    module = ModuleSource("def assert_nothing(example, prompt, response):\n    return True\n", "<doctor>")
    try:
        info = load_module_info(module, limits=SandboxLimits(confinement=confinement, workers=1))
        verified = info.confinement
        if confinement == "python-only":
            checks.append(Check("sandbox", "warning", verified))
        else:
            checks.append(Check("sandbox", "ok", verified))
    except SpadeError as error:
        checks.append(Check("sandbox", "error", str(error)))
    return checks


def _store(root: Path) -> list[Check]:
    spade_dir = root / ".spade"
    if not spade_dir.exists():
        return [Check("store", "ok", f"{spade_dir} does not exist yet (created 0700 on first use)")]
    problems = []
    for path, wanted in [(spade_dir, 0o700), *[(p, 0o600) for p in spade_dir.glob("spade.db*")]]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            problems.append(f"{path.name} is {mode:o} (want {wanted:o})")
    if problems:
        return [Check("store", "warning", "readable by others: " + "; ".join(problems))]
    return [Check("store", "ok", f"{spade_dir}: private to its owner")]


def run_checks(root: Path | None) -> list[Check]:
    """Every check, for the workspace at ``root`` (its settings decide the sandbox mode) or none."""
    from spade_lsp import local_model
    from spade_lsp.config import load_settings

    settings = load_settings(root) if root is not None else None
    confinement = settings.sandbox if settings is not None else "kernel"
    checks = [Check("python", "ok", f"{sys.version.split()[0]} at {sys.executable}")]
    checks += _sandbox(confinement)
    if root is not None:
        checks += _store(root)
    installed = local_model.is_installed()
    checks.append(
        Check("local model", "ok" if installed else "warning", "installed" if installed else local_model.INSTALL_HINT)
    )
    checks.append(Check("uid", "ok", f"{os.getuid()} (workers keep it, without capabilities)"))
    return checks
