"""Tests use the public API where one exists: a test that imports a name from a private module, when the package
exports that same object, imports it from the package instead (so the tests see what users see, and a module
can move without breaking them)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("spade_lsp", "spade_lsp_server", "spade_lsp_client")


def _private_imports_of_public_names(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        parts = node.module.split(".")
        private = [k for k, part in enumerate(parts) if k > 0 and part.startswith("_")]
        if parts[0] not in FIRST_PARTY or not private:
            continue
        package = importlib.import_module(".".join(parts[: private[0]]))
        module = importlib.import_module(node.module)
        exported = set(getattr(package, "__all__", ()))
        public = [
            a.name for a in node.names if a.name in exported and getattr(package, a.name) is getattr(module, a.name)
        ]
        if public and len(public) == len(node.names):
            found.append(f"{path.relative_to(root)}:{node.lineno}: from {node.module} import {', '.join(public)}")
    return found


def test_tests_import_exported_names_from_their_package() -> None:
    offending = [
        line for path in sorted((ROOT / "tests").rglob("*.py")) for line in _private_imports_of_public_names(path)
    ]
    assert not offending, "import these from the package:\n" + "\n".join(offending)


def test_the_check_finds_a_private_import_of_an_exported_name(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "from spade_lsp.reliability._sampling import SampleOptions\nfrom spade_lsp._lazy import lazy_exports\n",
        encoding="utf-8",
    )
    assert _private_imports_of_public_names(sample, tmp_path) == [
        "test_sample.py:1: from spade_lsp.reliability._sampling import SampleOptions"
    ]
