"""Invariants from DESIGN.md that can be checked mechanically."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "spade_lsp"


def test_the_engine_never_imports_lsp_libraries() -> None:
    offenders = []
    for path in ENGINE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in {"pygls", "lsprotocol"}]
    assert offenders == []


def test_only_the_llm_module_imports_litellm() -> None:
    importers = {
        path.relative_to(ENGINE).as_posix()
        for path in ENGINE.rglob("*.py")
        if "import litellm" in path.read_text(encoding="utf-8")
    }
    assert importers == {"llm.py"}


def test_offline_paths_never_load_litellm(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from spade_lsp.cli import main\n"
        f"main(['demo', '--dir', {str(tmp_path)!r}, '--json'])\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
        "assert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_building_the_command_line_loads_no_solver_or_numpy() -> None:
    """Every `spade` command, `spade lsp` included, builds the parser first: it must stay light."""
    code = (
        "import sys; from spade_lsp.cli import build_parser\n"
        "build_parser()\n"
        "heavy = [m for m in ('numpy', 'highspy', 'pulp', 'litellm') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
