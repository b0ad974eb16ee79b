"""What sidecar code may import and call, checked statically (here) and again at run time (in the worker).

The static check is a lint for generated code, not a wall: Python code can always reach a forbidden module
through an allowed one. What actually protects the user is the worker process itself (scrubbed environment,
private directory, resource limits, audit hook); see ``spade_lsp/sandbox/__init__.py``.
Kept free of heavy imports: the worker imports this module before running anything.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, Literal

from spade_lsp.assertions import ASSERTION_PREFIX

__all__ = [
    "DEFAULT_ALLOWED_IMPORTS",
    "FORBIDDEN_ATTRIBUTES",
    "FORBIDDEN_BUILTINS",
    "Analysis",
    "ProblemKind",
    "SourceProblem",
    "analyse",
    "check_source",
    "is_import_allowed",
]

#: Modules sidecar code may import. An entry admits the module and its submodules ("urllib.parse" admits
#: only that package; plain "urllib" would also admit urllib.request, so it is not listed).
DEFAULT_ALLOWED_IMPORTS: Final[frozenset[str]] = frozenset(
    {
        "__future__",
        "abc",
        "ast",
        "asyncio",
        "bisect",
        "calendar",
        "collections",
        "contextlib",
        "copy",
        "csv",
        "dataclasses",
        "datetime",
        "decimal",
        "difflib",
        "enum",
        "fractions",
        "functools",
        "heapq",
        "html",
        "ipaddress",
        "itertools",
        "json",
        "keyword",
        "math",
        "numbers",
        "operator",
        "re",
        "statistics",
        "string",
        "textwrap",
        "tomllib",
        "typing",
        "unicodedata",
        "urllib.parse",
        "uuid",
        "xml.etree",
        "spade_lsp.assertions",
        "spade_lsp.checks",
        "langdetect",
        "textstat",
        "vaderSentiment",
    }
)

#: Builtins that evaluate code, touch files or the terminal, or hand out namespaces; replaced at run time.
FORBIDDEN_BUILTINS: Final[frozenset[str]] = frozenset(
    {"__import__", "breakpoint", "compile", "eval", "exec", "exit", "help", "input", "open", "quit", "vars"}
)

#: Attributes used to climb out of the restricted namespace (to builtins, frames or other modules' globals).
FORBIDDEN_ATTRIBUTES: Final[frozenset[str]] = frozenset(
    {
        "__base__",
        "__bases__",
        "__builtins__",
        "__closure__",
        "__code__",
        "__dict__",
        "__func__",
        "__getattribute__",
        "__globals__",
        "__import__",
        "__loader__",
        "__mro__",
        "__reduce__",
        "__reduce_ex__",
        "__self__",
        "__spec__",
        "__subclasses__",
        "ag_frame",
        "cr_frame",
        "f_back",
        "f_builtins",
        "f_globals",
        "f_locals",
        "gi_code",
        "gi_frame",
        "tb_frame",
    }
)

ProblemKind = Literal["syntax", "signature", "import", "call", "attribute"]


@dataclass(frozen=True, slots=True)
class SourceProblem:
    """One reason a sidecar module (or one function in it) would not run as written.

    ``function`` is the top-level function the problem sits in (``None`` for module-level code); ``module``
    names the forbidden module for ``kind == "import"``.
    """

    kind: ProblemKind
    message: str
    line: int | None
    col: int | None = None
    function: str | None = None
    module: str | None = None


def is_import_allowed(module: str, fromlist: Iterable[str], allowed: Iterable[str]) -> bool:
    """Whether ``import module`` / ``from module import *fromlist`` is admitted by ``allowed``."""
    allowed_set = allowed if isinstance(allowed, frozenset | set) else frozenset(allowed)

    def admitted(name: str) -> bool:
        parts = name.split(".")
        return any(".".join(parts[:n]) in allowed_set for n in range(1, len(parts) + 1))

    if admitted(module):
        return True
    names = [name for name in fromlist if name != "*"]
    return bool(names) and all(admitted(f"{module}.{name}") for name in names)


@dataclass(frozen=True, slots=True)
class Analysis:
    """The static view of a module: its problems, and which assertions must not run and why."""

    problems: list[SourceProblem]
    forbidden: dict[str, str]  # assertion name -> message (first reason)
    def_lines: dict[str, int]  # top-level function name -> line of its ``def``
    syntax_error: SourceProblem | None


class _Scan(ast.NodeVisitor):
    """Collects imports, global-name loads, forbidden calls/attributes and bound names in one subtree."""

    def __init__(self, allowed: frozenset[str]) -> None:
        self.allowed = allowed
        self.problems: list[SourceProblem] = []
        self.loads: set[str] = set()
        self.bound: set[str] = set()
        self.builtin_uses: list[tuple[str, int, int]] = []

    def _import_problem(self, node: ast.Import | ast.ImportFrom, module: str, message: str) -> None:
        self.problems.append(SourceProblem("import", message, node.lineno, node.col_offset, module=module))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.bound.add((alias.asname or alias.name).split(".")[0])
            if not is_import_allowed(alias.name, (), self.allowed):
                self._import_problem(node, alias.name, _import_message(alias.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        names = [alias.name for alias in node.names]
        self.bound.update(alias.asname or alias.name for alias in node.names if alias.name != "*")
        module = node.module or ""
        if node.level:
            self._import_problem(node, "." * node.level + module, "relative imports are not allowed in a sidecar")
        elif not is_import_allowed(module, names, self.allowed):
            name = module
            if any(entry.startswith(module + ".") for entry in self.allowed):
                name = next(f"{module}.{n}" for n in names if not is_import_allowed(f"{module}.{n}", (), self.allowed))
            self._import_problem(node, name, _import_message(name))

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.loads.add(node.id)
            if node.id in FORBIDDEN_BUILTINS:
                self.builtin_uses.append((node.id, node.lineno, node.col_offset))
            if node.id == "__builtins__":
                self.problems.append(
                    SourceProblem("attribute", "`__builtins__` is not allowed", node.lineno, node.col_offset)
                )
        else:
            self.bound.add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in FORBIDDEN_ATTRIBUTES:
            message = f"attribute `{node.attr}` is not allowed (it reaches outside the sandboxed namespace)"
            self.problems.append(SourceProblem("attribute", message, node.lineno, node.col_offset))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Name)
            and func.id in {"getattr", "setattr", "delattr", "hasattr"}
            and len(node.args) > 1
        ):
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value in FORBIDDEN_ATTRIBUTES:
                message = f"attribute `{name.value}` is not allowed (it reaches outside the sandboxed namespace)"
                self.problems.append(SourceProblem("attribute", message, node.lineno, node.col_offset))
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self.bound.add(node.arg)
        self.generic_visit(node)

    def _visit_def(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.bound.add(node.name)
        self.generic_visit(node)

    visit_FunctionDef = _visit_def
    visit_AsyncFunctionDef = _visit_def
    visit_ClassDef = _visit_def

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.bound.add(node.name)
        self.generic_visit(node)

    def finish(self, module_bound: set[str]) -> list[SourceProblem]:
        """Problems, counting a forbidden builtin only when no local or module-level name shadows it."""
        out = list(self.problems)
        for name, line, col in self.builtin_uses:
            if name not in self.bound and name not in module_bound:
                out.append(SourceProblem("call", f"`{name}` is not allowed in a sidecar", line, col))
        return out


def _import_message(module: str) -> str:
    return f"imports `{module}`, which the sandbox does not allow"


def _bindings(node: ast.Import | ast.ImportFrom, allowed: frozenset[str]) -> list[tuple[str, SourceProblem | None]]:
    """Each name a module-level import binds, with the problem of its import when that is forbidden."""
    out: list[tuple[str, SourceProblem | None]] = []
    for alias in node.names:
        fromlist: tuple[str, ...]
        if isinstance(node, ast.Import):
            bound, module, fromlist = (alias.asname or alias.name).split(".")[0], alias.name, ()
        elif alias.name == "*":
            continue
        else:
            bound, module, fromlist = alias.asname or alias.name, node.module or "", (alias.name,)
        ok = not getattr(node, "level", 0) and is_import_allowed(module, fromlist, allowed)
        name = module if not fromlist or is_import_allowed(module, (), allowed) else f"{module}.{fromlist[0]}"
        if not ok and fromlist and not any(entry.startswith(module + ".") for entry in allowed):
            name = module
        problem = (
            None if ok else SourceProblem("import", _import_message(name), node.lineno, node.col_offset, module=name)
        )
        out.append((bound, problem))
    return out


def _iter_toplevel(tree: ast.Module) -> Iterator[ast.stmt]:
    """Top-level statements, looking inside module-level if/try/with blocks (they run at import time too)."""
    for node in tree.body:
        if isinstance(node, ast.If | ast.Try | ast.With):
            inner = ast.Module(body=[], type_ignores=[])
            for field in ("body", "orelse", "finalbody"):
                inner.body.extend(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                inner.body.extend(handler.body)
            yield from _iter_toplevel(inner)
        else:
            yield node


def _signature_problem(node: ast.FunctionDef | ast.AsyncFunctionDef) -> SourceProblem | None:
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    kw_required = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    if (len(positional) >= 3 or args.vararg) and required <= 3 and not kw_required:
        return None
    message = (
        f"`{node.name}` must take (example, prompt, response); it takes "
        f"({', '.join(a.arg for a in positional) or 'nothing'})"
    )
    return SourceProblem("signature", message, node.lineno, node.col_offset, function=node.name)


def analyse(source: str, allow_imports: Iterable[str] = (), *, filename: str = "<assertions>") -> Analysis:
    """Parse ``source`` (never executing it) and find what must not run."""
    allowed = DEFAULT_ALLOWED_IMPORTS | frozenset(allow_imports)
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        line = error.lineno if isinstance(error, SyntaxError) else None
        detail = error.msg if isinstance(error, SyntaxError) else str(error) or type(error).__name__
        message = f"syntax error: {detail}" + (f" (line {line})" if line else "")
        problem = SourceProblem("syntax", message, line, getattr(error, "offset", None))
        return Analysis([problem], {}, {}, problem)

    statements = list(_iter_toplevel(tree))
    module_bound: set[str] = set()
    import_bindings: dict[str, SourceProblem] = {}  # module-level name -> its forbidden import
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = {}
    module_level = _Scan(allowed)
    for node in statements:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defs[node.name] = node
            module_bound.add(node.name)
            for decorator in node.decorator_list:
                module_level.visit(decorator)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for bound, issue in _bindings(node, allowed):
                module_bound.add(bound)
                if issue is not None:
                    import_bindings[bound] = issue
            scan = _Scan(allowed)
            scan.visit(node)
            module_level.problems.extend(scan.problems)
        else:
            module_level.visit(node)
    module_bound |= module_level.bound
    problems = [p for p in module_level.finish(module_bound)]
    # A forbidden module-level import is bound to an inert stand-in at run time; only code that uses it fails.
    direct: dict[str, list[SourceProblem]] = {}
    refs: dict[str, set[str]] = {}
    for name, node in defs.items():
        scan = _Scan(allowed)
        for child in node.body if not isinstance(node, ast.ClassDef) else [node]:
            scan.visit(child)
        if not isinstance(node, ast.ClassDef):
            scan.visit(node.args)
        own = [
            SourceProblem(p.kind, p.message, p.line, p.col, function=name, module=p.module)
            for p in scan.finish(module_bound)
        ]
        if name.startswith(ASSERTION_PREFIX) and not isinstance(node, ast.ClassDef):
            signature = _signature_problem(node)
            if signature is not None:
                own.append(signature)
        direct[name] = own
        refs[name] = scan.loads & module_bound
        problems.extend(own)

    forbidden: dict[str, str] = {}
    for name, node in defs.items():
        if not name.startswith(ASSERTION_PREFIX) or isinstance(node, ast.ClassDef):
            continue
        reasons = _reasons(name, direct, refs, import_bindings)
        if reasons:
            forbidden[name] = reasons[0]
    problems.sort(key=lambda p: (p.line or 0, p.col or 0))
    def_lines = {name: node.lineno for name, node in defs.items()}
    return Analysis(problems, forbidden, def_lines, None)


def _reasons(
    start: str,
    direct: dict[str, list[SourceProblem]],
    refs: dict[str, set[str]],
    import_bindings: dict[str, SourceProblem],
) -> list[str]:
    """Why ``start`` must not run: its own problems, and those of module-level helpers it reaches."""
    reasons: list[str] = []
    seen: set[str] = set()
    stack = [start]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        via = "" if name == start else f" (through `{name}`)"
        for problem in direct.get(name, []):
            if problem.kind != "signature":
                reasons.append(f"forbidden: {problem.message}{via} (line {problem.line})")
        for ref in sorted(refs.get(name, set())):
            if ref in import_bindings:
                imp = import_bindings[ref]
                reasons.append(
                    f"forbidden: uses `{ref}`{via}, bound by an import of `{imp.module}` (line {imp.line}), "
                    "which the sandbox does not allow"
                )
            elif ref in direct:
                stack.append(ref)
    return reasons


def check_source(
    source: str, *, allow_imports: Iterable[str] = (), filename: str = "<assertions>"
) -> list[SourceProblem]:
    """Validate sidecar source without running it: it parses, every ``assert_*`` function takes
    (example, prompt, response), and it imports only allowed modules and uses no forbidden builtin or attribute.

    An empty list means the code may be run; the synthesizer rejects generated code with any problem.
    """
    return analyse(source, allow_imports, filename=filename).problems
