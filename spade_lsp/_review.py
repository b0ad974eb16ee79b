"""Review of LLM-written assertion code: which functions of a sidecar module an LLM wrote, and which of them the
user has read and accepted.

A function the LLM synthesizer writes is recorded in the store (``generated_code``: prompt, name, sha256 of its
text). The user accepts a function explicitly (the editor's quick fix "Accept reviewed code", or
``spade review PROMPT --accept NAME``), and the acceptance is tied to the exact text accepted (``code_reviews``:
prompt, name, sha256). A function is **unreviewed** when an LLM wrote it (a ``generated_code`` row, or its
decorator says ``synthesizer='llm'``, as in a module written in another clone) and the text it has now was
never accepted. So:

- an edit is not acceptance: an unreviewed function the user edits stays unreviewed (and says it was edited);
- an accepted function whose text changes (the user's edit, or a re-synthesis that rewrites it) needs a new
  acceptance; going back to a text that was accepted needs none;
- template-based (offline) functions and hand-written ones are never flagged; a name the offline synthesizer
  takes over, or one that synthesis removes, loses its LLM record.

A function's text runs from its first decorator to the end of its body (the decorator's arguments are code
too), lines split as Python splits them, hashed as UTF-8. Unreviewed functions still run, confined in the
sandbox like every assertion (validation ran them there already); evaluation marks them.

The store is local state (``.spade/``, never committed): a colleague's clone flags the module's LLM-declared
functions until someone accepts them there.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from spade_lsp.assertions import ASSERTION_PREFIX
from spade_lsp.errors import InputError
from spade_lsp.overview import decorator_metadata

if TYPE_CHECKING:
    from spade_lsp.store import Store

LLM_SYNTHESIZER: Final = "llm"
#: The diagnostic code and the editor command; the CLI subcommand is ``spade review``.
DIAGNOSTIC_CODE: Final = "spade/unreviewed-code"
ACCEPT_COMMAND: Final = "spade.acceptReviewed"
REVIEWERS: Final = ("editor", "cli")

State = Literal["new", "edited", "changed", "declared"]

_NEWLINE = re.compile(r"\r\n|\r|\n")  # Python's own line breaks (str.splitlines also breaks at \x0c, \u2028...)
_SHA = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(rf"{ASSERTION_PREFIX}[A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class FunctionText:
    """One ``assert_*`` function of a module: where it is and the digest of its text."""

    name: str
    line: int  # 0-based line of its ``def``
    first_line: int  # 0-based line of its first decorator (the ``def`` when it has none)
    sha: str
    declared: str | None  # the ``synthesizer=`` its ``@assertion(...)`` decorator gives, if any


@dataclass(frozen=True, slots=True)
class Unreviewed:
    """An LLM-written function whose current text nobody accepted."""

    name: str
    line: int  # 0-based line of its ``def``
    sha: str  # of its current text: what accepting it accepts
    state: State  # new: as the LLM last wrote it; edited: changed since, never accepted; changed: changed since
    # a text of it was accepted; declared: its decorator says an LLM wrote it, and this workspace has no record
    model: str | None = None

    @property
    def message(self) -> str:
        detail = {
            "new": f" (written by {self.model})" if self.model else "",
            "edited": " (edited since it was written; an edit is not acceptance)",
            "changed": " (changed since it was accepted)",
            "declared": " (its decorator says synthesizer='llm'; no review is recorded in this workspace)",
        }[self.state]
        return f"LLM-written, not reviewed: read {self.name}, then accept it{detail}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "line": self.line + 1, "message": self.message}


def sha_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _declared_synthesizer(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    value = (decorator_metadata(node) or {}).get("synthesizer")
    return value if isinstance(value, str) else None


def function_texts(text: str) -> list[FunctionText]:
    """The module's top-level ``assert_*`` functions; none when it does not parse (nothing of it can run)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = _NEWLINE.split(text)
    out: list[FunctionText] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith(ASSERTION_PREFIX):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        end = node.end_lineno or node.lineno
        body = "\n".join(lines[first:end])
        out.append(FunctionText(node.name, node.lineno - 1, first, sha_of(body), _declared_synthesizer(node)))
    return out


# -- the store ------------------------------------------------------------------------------------------------


def unreviewed(store: Store | None, key: str, text: str | None) -> list[Unreviewed]:
    """The module's LLM-written functions whose current text was never accepted, in module order. ``store`` may
    be opened read-only, or None (no store yet: only decorators say who wrote what)."""
    if not text:
        return []
    functions = function_texts(text)
    if not functions:
        return []
    written: dict[str, tuple[str, str | None]] = {}
    accepted: dict[str, set[str]] = {}
    if store is not None:  # the repository loads when a store is open (the language server's is read-only)
        from spade_lsp.store import review_records

        records = review_records(store, key)
        written, accepted = records.written, records.accepted
    out: list[Unreviewed] = []
    for function in functions:
        record = written.get(function.name)
        if record is None and function.declared != LLM_SYNTHESIZER:
            continue  # hand-written or template-based
        shas = accepted.get(function.name, set())
        if function.sha in shas:
            continue
        state: State
        if record is None:
            state = "changed" if shas else "declared"
        elif record[0] == function.sha:
            state = "new"  # as the LLM wrote it (a re-synthesis may rewrite a function accepted before)
        else:
            state = "changed" if shas else "edited"
        out.append(Unreviewed(function.name, function.line, function.sha, state, record[1] if record else None))
    return out


def record_synthesis(
    store: Store,
    key: str,
    text: str,
    *,
    llm: Iterable[str],
    template: Iterable[str] = (),
    removed: Iterable[str] = (),
    model: str | None = None,
) -> None:
    """After synthesis planned ``text``: the ``llm`` names now hold LLM-written code (recorded with the digest
    of their text there), the ``template`` names hold template code and the ``removed`` ones are gone (both
    lose their LLM record). Acceptances are kept: they name exact texts."""
    shas = {function.name: function.sha for function in function_texts(text)}
    llm = [name for name in llm if name in shas]
    dropped = sorted(set(template) | set(removed))
    if not llm and not dropped:
        return
    from spade_lsp.store import record_generated_code

    record_generated_code(
        store,
        key,
        {name: shas[name] for name in llm},
        dropped=dropped,
        synthesizer=LLM_SYNTHESIZER,
        model=model,
        at=datetime.now(UTC).isoformat(),
    )


def accept(store: Store, key: str, items: Sequence[tuple[str, str]], *, by: str) -> list[str]:
    """Record that the user accepted each ``(name, sha)``: that function with exactly that text."""
    if by not in REVIEWERS:
        raise ValueError(f"unknown reviewer {by!r}")
    from spade_lsp.store import record_acceptances

    record_acceptances(store, key, items, by=by, at=datetime.now(UTC).isoformat())
    return [name for name, _ in items]


# -- the daemon's job -----------------------------------------------------------------------------------------


def check_review_params(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``review`` job's ``accept``: a non-empty list of ``{"name": "assert_...", "sha": <sha256 hex>}``."""
    items = params.get("accept")
    if not isinstance(items, list) or not items:
        raise InputError('params.accept: expected a non-empty list of {"name", "sha"} objects')
    out: list[tuple[str, str]] = []
    for item in items:
        name = item.get("name") if isinstance(item, Mapping) else None
        sha = item.get("sha") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InputError(f"params.accept: {name!r} is not an {ASSERTION_PREFIX}* function name")
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):
            raise InputError(f"params.accept: {name}: sha must be 64 lowercase hex digits (sha256 of its text)")
        out.append((name, sha))
    return out


def review_job(workspace: Any, prompt: Path, items: Sequence[tuple[str, str]], *, by: str) -> dict[str, Any]:
    """The ``review`` job (:mod:`spade_lsp.jobs.review`): record the editor's (or the CLI's) acceptances of
    exact function texts."""
    from spade_lsp.workspace import sync_prompt

    if by not in REVIEWERS:
        raise InputError(f"params.by: expected one of {', '.join(REVIEWERS)}")
    sync_prompt(workspace, prompt)  # a clone whose prompt was never recorded has no row to tie them to yet
    key = workspace.history.prompt_key(prompt)
    accepted = accept(workspace.store, key, items, by=by)
    return {"accepted": accepted, "sidecar": str(_sidecar(prompt))}


def _sidecar(prompt: Path) -> Path:
    from spade_lsp._files import sidecar_path

    return sidecar_path(prompt)


def accepted_items(value: Any) -> list[tuple[str, str]]:
    """``accept`` as ``(name, sha)`` pairs: a non-empty list of ``{"name": "assert_...", "sha": <sha256 hex>}``;
    :class:`~spade_lsp.errors.InputError` naming what is wrong."""
    return check_review_params({"accept": value})
