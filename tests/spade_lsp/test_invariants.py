"""Invariants from DESIGN.md that can be checked mechanically."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import grimp

from tests.support.ray_cluster import require_ray

ENGINE = Path(__file__).resolve().parents[2] / "spade_lsp"

#: appended to a subprocess's checks: the names checked are the ones those modules really load under, so "not in
#: sys.modules" cannot pass because a name is wrong (Ray is imported by the Ray executor only)
IMPORTABLE = (
    "from spade_lsp._ray import import_ray\n"
    "import_ray()\n"
    "assert 'ray' in sys.modules, 'ray loads under another name: the check above proves nothing'\n"
)


def _ray_control() -> str:
    """The positive control when Ray is installed. Without it nothing can import Ray and the other checks still
    run, except under CI, which installs Ray and so fails here rather than check nothing."""
    if importlib.util.find_spec("ray") is not None:
        return IMPORTABLE
    if os.environ.get("CI"):
        require_ray()
    return ""


def test_the_engine_never_imports_lsp_libraries() -> None:
    """Every import statement of every engine module (lazy and TYPE_CHECKING ones included, as import-linter's
    graph sees them), with the language server, which does import them, as the positive control."""
    graph = grimp.build_graph("spade_lsp", "spade_lsp_server", include_external_packages=True, cache_dir=None)
    lsp = {"pygls", "lsprotocol"}

    def importers_of_lsp(package: str) -> set[str]:
        return {
            module
            for module in graph.find_descendants(package) | {package}
            if graph.find_modules_directly_imported_by(module) & lsp
        }

    assert importers_of_lsp("spade_lsp") == set()
    assert "spade_lsp_server.server" in importers_of_lsp("spade_lsp_server")


def test_importing_every_engine_module_loads_no_lsp_library() -> None:
    """At run time too: an import made some other way (importlib, __import__) would show up in sys.modules."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import spade_lsp\n"
        "names = [m.name for m in pkgutil.walk_packages(spade_lsp.__path__, 'spade_lsp.')]\n"
        "assert len(names) > 50, names\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(n for n in ('pygls', 'lsprotocol') if n in sys.modules)\n"
        "assert loaded == [], loaded\n"
        "import spade_lsp_server.server\n"
        "assert 'pygls' in sys.modules and 'lsprotocol' in sys.modules, 'the check above proves nothing'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_only_the_llm_module_imports_litellm() -> None:
    importers = {
        path.relative_to(ENGINE).as_posix()
        for path in ENGINE.rglob("*.py")
        if "import litellm" in path.read_text(encoding="utf-8")
    }
    assert importers == {"llm.py"}


def test_offline_paths_never_load_litellm(tmp_path: Path) -> None:
    """The demo: a whole ``executor = "local"`` run (history, synthesis, evaluation, selection, sampling)."""
    control = _ray_control()
    code = (
        "import sys; from pathlib import Path; from spade_lsp.cli import main\n"
        f"assert main(['demo', '--dir', {str(tmp_path)!r}, '--json']) == 0\n"
        "assert 'litellm' not in sys.modules, 'litellm was imported'\n"
        "assert 'ray' not in sys.modules, 'ray was imported by a local run'\n"
        "assert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules\n"
        f"{control}"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_building_the_command_line_loads_no_solver_or_numpy() -> None:
    """Every `spade` command, `spade lsp` included, builds the parser first: it must stay light. So does the
    language server's start-up (its module and the server object)."""
    control = _ray_control()
    code = (
        "import sys; from spade_lsp.cli import build_parser\n"
        "build_parser()\n"
        "from spade_lsp_server.server import create_server\n"
        "create_server()\n"
        "heavy = [m for m in ('numpy', 'highspy', 'pulp', 'litellm', 'ray') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        f"{control}"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
