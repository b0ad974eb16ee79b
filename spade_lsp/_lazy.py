"""Names a package exports on first use, so importing the package loads none of its modules (the language server
imports a few names from packages whose other modules pull in numpy, scipy, litellm or sqlite-utils).

A package declares each lazy name once, as type checkers need it anyway: an import from one of its own private
modules inside its ``if TYPE_CHECKING:`` block. That block, read from the package's source on the first lazy
access, is the table; ``__all__`` lists the public names (a test checks the two agree).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def type_checking_imports(source: str, package: str) -> dict[str, tuple[str, str]]:
    """public name -> (private module, its name there), from the ``from PACKAGE.MODULE import NAME [as
    PUBLIC]`` statements of the module's top-level ``if TYPE_CHECKING:`` blocks."""
    table: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom) or not (statement.module or "").startswith(package + "."):
                continue
            module = (statement.module or "").removeprefix(package + ".")
            for alias in statement.names:
                table[alias.asname or alias.name] = (module, alias.name)
    return table


def lazy_exports(package: str, namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` (its ``globals()`` as ``namespace``): a name its
    ``TYPE_CHECKING`` block imports is imported from that module on first use and kept in ``namespace``."""
    table: dict[str, tuple[str, str]] = {}

    def __getattr__(name: str) -> Any:
        if not table:
            table.update(type_checking_imports(Path(namespace["__file__"]).read_text(encoding="utf-8"), package))
        where = table.get(name)
        if where is None:  # a submodule not imported yet: `from package import submodule` then imports it
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = where
        value = getattr(importlib.import_module(f"{package}.{module}"), attribute)
        namespace[name] = value
        return value

    return __getattr__
