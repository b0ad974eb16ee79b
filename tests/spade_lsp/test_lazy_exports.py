"""The lazy public API: each package declares a lazy name once, as an import in its ``TYPE_CHECKING`` block, and
``__all__`` lists what it exports; the two must agree, and every listed name must load."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import spade_lsp
from spade_lsp._lazy import type_checking_imports

ROOT = Path(spade_lsp.__file__).parent
LAZY_PACKAGES = sorted(
    ".".join(path.parent.relative_to(ROOT.parent).parts)
    for path in ROOT.rglob("__init__.py")
    if "lazy_exports(__name__, globals())" in path.read_text(encoding="utf-8")
)


def test_the_packages_with_a_lazy_api_are_found() -> None:
    assert {"spade_lsp", "spade_lsp.store", "spade_lsp.sandbox", "spade_lsp.reliability"} <= set(LAZY_PACKAGES)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_lazy_name_is_public_and_every_public_name_loads(package: str) -> None:
    module = importlib.import_module(package)
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    lazy = type_checking_imports(source, package)
    assert lazy, f"{package}: no lazy names read from its TYPE_CHECKING block"
    assert set(lazy) <= set(module.__all__), f"{package}: lazy but not in __all__: {set(lazy) - set(module.__all__)}"
    for name in module.__all__:
        value = getattr(module, name)
        if name in lazy:
            where, attribute = lazy[name]
            assert value is getattr(importlib.import_module(f"{package}.{where}"), attribute), name
    with pytest.raises(AttributeError, match="has no attribute 'not_a_name'"):
        assert module.not_a_name is None  # raises before the comparison


def test_importing_a_package_loads_none_of_its_lazy_modules() -> None:
    script = (
        "import sys, spade_lsp.store, spade_lsp.reliability, spade_lsp.selection\n"
        "print(sorted(m for m in ('spade_lsp.store._runs', 'spade_lsp.reliability._sampling', "
        "'spade_lsp.selection._select', 'numpy', 'sqlite_utils') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_renamed_import_is_read_with_its_public_name() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg._a import NAME as PUBLIC, other\n"
        "    from elsewhere import ignored\n"
        "from pkg._b import eager\n"
    )
    assert type_checking_imports(source, "pkg") == {"PUBLIC": ("_a", "NAME"), "other": ("_a", "other")}
