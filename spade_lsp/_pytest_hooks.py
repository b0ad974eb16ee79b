"""``pytest --spade``: a repository's own test suite gates its prompts (docs/pytest.md). The hooks live here;
:mod:`spade_lsp.pytest_plugin` (the ``pytest11`` entry point) registers them when pytest is new enough.

Each prompt with a stored selection (``spade select PROMPT``) is collected as a file whose items are its selected
checks (``support_reply.prompt::assert_no_refund_promise``). The prompt is sampled once, on its first item, through
the same path as ``spade sample``; each item then reads its check's verdict from the run's document. A check passes
when its interval lies wholly at or above its minimum; below, it fails; an interval straddling the minimum fails as
inconclusive unless ``--spade-inconclusive`` says otherwise. With no model configured the items skip, saying how to
configure one. Samples are cached in the store by model, messages, parameters and sample index, and the inputs are
drawn with a fixed seed, so a second run makes no requests.

The fixture ``spade_check(prompt, **options)`` samples a prompt and returns the run's document for custom asserts.

pytest loads this module in every run of an environment where spade-lsp is installed (entry point ``pytest11``):
importing it loads nothing heavy, and without ``--spade`` it collects nothing. The engine is imported inside hooks.
It needs pytest 8 (``pytest.StashKey``, ``hookimpl(wrapper=True)``, ``Config.ArgsSource``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from spade_lsp._files import PROMPT_SUFFIXES

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from spade_lsp.config import Settings
    from spade_lsp.reliability import SampleOptions
    from spade_lsp.workspace import Workspace

__all__ = [
    "SpadeCheckItem",
    "SpadePromptFile",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_collection",
    "pytest_configure",
    "pytest_runtest_makereport",
    "pytest_terminal_summary",
    "pytest_unconfigure",
    "spade_check",
]

#: What an inconclusive verdict (the interval straddles the minimum) does to its item.
INCONCLUSIVE: Final = ("fail", "skip", "pass")
_OVERRIDES_SOURCE: Final = "pytest options"
#: The seed that draws the inputs when ``--spade-inputs`` takes fewer than all: fixed, so re-runs hit the cache.
DEFAULT_SEED: Final = 0
_VERIFIER: Final = "verifier"  # the verifier's column (spade_lsp.reliability.VERIFIER_COLUMN)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("spade", "spade-lsp: gate prompts on their selected checks")
    group.addoption(
        "--spade",
        action="store_true",
        default=False,
        help="collect each prompt with a stored selection as tests, one per selected check (sampled once a prompt)",
    )
    group.addoption(
        "--spade-samples",
        type=_positive,
        metavar="M",
        help="outputs per input (default: the setting samples_per_input, 5)",
    )
    group.addoption(
        "--spade-inputs",
        type=_positive,
        metavar="N",
        help="inputs drawn from the examples (default: sample_inputs, all)",
    )
    group.addoption(
        "--spade-seed",
        type=int,
        default=DEFAULT_SEED,
        metavar="S",
        help=f"which inputs are drawn when fewer than all (default {DEFAULT_SEED}; fixed, so re-runs are cached)",
    )
    group.addoption(
        "--spade-model",
        metavar="MODEL",
        help="the pipeline's model: a litellm model name, or `local` (overrides the setting `model`)",
    )
    group.addoption(
        "--spade-inconclusive",
        choices=INCONCLUSIVE,
        default="fail",
        help="a check whose interval straddles its minimum: fail (default: the run cannot vouch for it), skip, or pass",
    )


def _positive(text: str) -> int:
    """A count of at least 1 (argparse turns the error into ``argument --spade-samples: ...``)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is less than 1")
    return value


# -- state shared by the session: workspaces, selections and runs -------------------------------------------------


class _Failed(Exception):
    """An item's failure, shown as its one-line message instead of a traceback."""


@dataclass(frozen=True, slots=True)
class _Run:
    """One sampling run of a prompt: which (seed, version, model) and the settings its options set."""

    sample: SampleOptions
    settings: tuple[tuple[str, Any], ...]


@dataclass
class _State:
    """Workspaces open in this session and the runs made, so each prompt is sampled once whatever asks."""

    config: pytest.Config
    workspaces: dict[Path, Workspace] = field(default_factory=dict)
    selections: dict[Path, dict[str, list[str]]] = field(default_factory=dict)
    resolved: dict[Path, Settings] = field(default_factory=dict)
    runs: dict[tuple[Path, _Run], dict[str, Any] | Exception] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return bool(self.config.getoption("spade"))

    def overrides(self) -> dict[str, Any]:
        """The settings the command line overrides: ``--spade-model``."""
        model = self.config.getoption("spade_model")
        return {} if model is None else {"model": model}

    def workspace(self, root: Path) -> Workspace:
        """The workspace at ``root``, opened once, with ``--spade-model`` as an override."""
        workspace = self.workspaces.get(root)
        if workspace is None:
            from spade_lsp.workspace import Workspace

            workspace = self.workspaces[root] = Workspace(
                root, overrides=self.overrides(), overrides_source=_OVERRIDES_SOURCE
            )
        return workspace

    def settings(self, prompt: Path) -> Settings:
        """The prompt's settings, resolved once a session: the workspace's files, its own (front matter), then
        ``--spade-model``."""
        prompt = prompt.resolve()
        settings = self.resolved.get(prompt)
        if settings is None:
            from spade_lsp.config import find_workspace_root, resolve_file

            settings = self.resolved[prompt] = resolve_file(
                find_workspace_root(prompt), prompt, self.overrides(), overrides_source=_OVERRIDES_SOURCE
            )
        return settings

    def selected(self, root: Path) -> dict[str, list[str]]:
        """Each prompt's newest selection in the workspace at ``root``: its key -> the selected names. A workspace
        with no store has none (nothing is created)."""
        found = self.selections.get(root)
        if found is None:
            from spade_lsp.store import STORE_DIR, STORE_FILE

            found = {}
            if (root / STORE_DIR / STORE_FILE).is_file():
                from spade_lsp.store import newest_selections

                found = newest_selections(self.workspace(root).store)
            self.selections[root] = found
        return found

    def options(self, **given: Any) -> _Run:
        """The command line's sampling options, then ``given`` over them, read as a ``sample`` job reads its
        params (``samples``, ``inputs``, ``seed``, ``temperature``, ...; ``version`` and ``model`` choose what
        is sampled): which run, and the settings the options set."""
        from spade_lsp.errors import InputError
        from spade_lsp.jobs import JobParamsError, spec, validate_params
        from spade_lsp.reliability import SampleOptions

        known = {*spec("sample").params.model_fields, "version", "model"} - {"settings"}
        unknown = sorted(set(given) - known)
        if unknown:
            raise TypeError(f"spade_check(): unknown option {unknown[0]!r}; known: {', '.join(sorted(known))}")

        base = {
            "inputs": self.config.getoption("spade_inputs"),
            "samples": self.config.getoption("spade_samples"),
            "seed": self.config.getoption("spade_seed"),
        }
        wanted = {key: value for key, value in (base | given).items() if value is not None}
        which = {key: wanted.pop(key) for key in ("version", "model") if key in wanted}
        try:
            params = validate_params("sample", wanted)
            sample = SampleOptions(seed=wanted.get("seed", 0), **which)
        except (JobParamsError, InputError) as error:
            raise TypeError(f"spade_check(): {error}") from None
        return _Run(sample, tuple(sorted(params.setting_values().items())))

    def run(self, prompt: Path, run: _Run) -> dict[str, Any]:
        """The prompt's run: sampled on the first call, then the same document (or error)."""
        prompt = prompt.resolve()
        key = (prompt, run)
        if key not in self.runs:
            from spade_lsp.config import find_workspace_root
            from spade_lsp.reliability import sample_prompt

            try:
                workspace = self.workspace(find_workspace_root(prompt))
                settings = self.settings(prompt).merged(dict(run.settings), source=_OVERRIDES_SOURCE)
                self.runs[key] = sample_prompt(workspace, prompt, run.sample, settings=settings)
            except Exception as error:  # a spade error, or a bug: either way the prompt's other items see it too
                self.runs[key] = error
        outcome = self.runs[key]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def close(self) -> None:
        for workspace in self.workspaces.values():
            workspace.close()
        self.workspaces.clear()


_STATE: Final = pytest.StashKey[_State]()


def _state(config: pytest.Config) -> _State:
    return config.stash[_STATE]


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STATE] = _State(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None:
        state.close()


# -- collection ---------------------------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """When the paths to test come from ``testpaths`` (``pytest --spade`` with no arguments), add the rootdir
    workspace's prompts that have a selection: prompts rarely live under ``tests/``. Paths given on the command
    line are taken as given."""
    config = session.config
    state = _state(config)
    if not state.enabled or config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return
    from spade_lsp.config import find_workspace_root
    from spade_lsp.errors import SpadeError

    root = find_workspace_root(config.rootpath)
    try:
        selected = state.selected(root)
    except SpadeError as error:  # an unusable store or settings file
        raise pytest.UsageError(f"--spade: {error}") from error
    for key in selected:
        path = root / key
        if path.is_file() and str(path) not in config.args:
            config.args.append(str(path))  # pytest drops overlaps with the other paths


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SpadePromptFile | None:
    state = _state(parent.config)
    if not state.enabled or not file_path.name.endswith(PROMPT_SUFFIXES):
        return None
    from spade_lsp.config import find_workspace_root
    from spade_lsp.errors import SpadeError
    from spade_lsp.overview import prompt_key

    root = find_workspace_root(file_path)
    try:
        selected = state.selected(root).get(prompt_key(root, file_path))
    except SpadeError as error:  # an unusable store or settings file: a collection error with its one line
        return SpadePromptFile.from_parent(parent, path=file_path, problem=error)
    if selected is None:
        return None
    return SpadePromptFile.from_parent(parent, path=file_path, checks=selected)


class SpadePromptFile(pytest.File):
    """A prompt with a stored selection: one item per selected check, all judged on one sampling run."""

    def __init__(self, *, checks: list[str] | None = None, problem: BaseException | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.checks = list(checks or [])
        self.problem = problem

    def collect(self) -> Iterator[SpadeCheckItem]:
        if self.problem is not None:
            raise self.problem
        names = self.checks or _sidecar_assertions(self.path)  # an empty selection: every assertion, as sampling
        settings = _state(self.config).settings(self.path)
        if settings.verifier and _VERIFIER not in names:
            names = [*names, _VERIFIER]
        for name in names:
            yield SpadeCheckItem.from_parent(self, name=name, check=name)

    def document(self) -> dict[str, Any]:
        """The prompt's run with the command line's options, sampled on the first call."""
        state = _state(self.config)
        return state.run(self.path, state.options())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str | TerminalRepr:  # type: ignore[override]
        from spade_lsp.errors import SpadeError

        if isinstance(excinfo.value, SpadeError):
            return f"{self.name}: {excinfo.value}"
        return super().repr_failure(excinfo)


def _sidecar_assertions(prompt: Path) -> list[str]:
    """The ``assert_*`` functions of the prompt's sidecar, read from its syntax tree (never imported)."""
    import ast

    from spade_lsp._files import sidecar_path

    try:
        tree = ast.parse(sidecar_path(prompt).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return []
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("assert_")
    ]


class SpadeCheckItem(pytest.Item):
    """One selected check of a prompt: passes when the run's interval for it clears its minimum."""

    def __init__(self, *, check: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check
        # no fixtures; but pytest-lsp's runtest wrapper fails to yield for an item without ``funcargs``
        self.funcargs: dict[str, Any] = {}

    def runtest(self) -> None:
        from spade_lsp.errors import ModelNotConfiguredError

        assert isinstance(self.parent, SpadePromptFile)
        try:
            document = self.parent.document()
        except ModelNotConfiguredError as error:
            pytest.skip(_no_model(error))
        validator = next((v for v in document["validators"] if v["name"] == self.check), None)
        if validator is None and self.check == _VERIFIER:  # no assistant model to judge with: like no model
            pytest.skip(_missing(self.check, document))
        if validator is None:
            raise _Failed(_missing(self.check, document))
        for name in ("rate", "ci_low", "ci_high", "minimum", "verdict"):
            self.user_properties.append((f"spade_{name}", validator[name]))
        self.user_properties.append(("spade_run", document["run_id"]))
        verdict = validator["verdict"]
        if verdict == "pass":
            return
        if verdict == "fail":
            raise _Failed(f"{self.check} failed: {_figures(validator, document)}")
        policy = self.config.getoption("spade_inconclusive")
        if policy == "pass":
            return
        hint = (
            "sample more (--spade-samples, --spade-inputs, or samples_per_input in the settings)"
            if validator["trials"]
            else "no output was judged (see the warnings in the spade summary)"
        )
        figures = _figures(validator, document)
        if policy == "skip":
            pytest.skip(f"{self.check} inconclusive: {figures.splitlines()[0]}; {hint}")
        raise _Failed(f"{self.check} inconclusive: {hint}, or pass --spade-inconclusive=skip\n{figures}")

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        from spade_lsp.errors import SpadeError

        if isinstance(excinfo.value, _Failed | SpadeError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        """The check's name as the domain (pytest turns any dot in it into ``::``, as in a Python name)."""
        return self.path, None, self.check


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A skipped check is reported at its prompt, not at the line of this module that skipped it."""
    report = yield
    if isinstance(item, SpadeCheckItem) and report.skipped and isinstance(report.longrepr, tuple):
        report.longrepr = (str(item.path), 1, report.longrepr[2])
    return report


def _no_model(error: Exception) -> str:
    """The engine's how-to-configure message, naming this plugin's option instead of the CLI's."""
    return str(error).replace("pass --model,", "pass --spade-model,")


def _figures(validator: dict[str, Any], document: dict[str, Any]) -> str:
    """What a verdict rests on (``25/40 passed (62.5%); 95% CI 47.0–75.8% lies below the minimum 90.0%``), then the
    check's instruction and the run on separate lines."""
    from spade_lsp.reliability import validator_figures

    lines = [validator_figures(validator, document["confidence"])]
    if validator.get("message"):
        lines.append(f"  check: {validator['message']}")
    lines.append(
        f"  run {document['run_id']}: {document['prompt']} v{document['version']} on {document['model']}, "
        f"{len(document['inputs'])} input(s) x up to {document['samples']} sample(s)"
    )
    return "\n".join(lines)


def _missing(check: str, document: dict[str, Any]) -> str:
    if check == _VERIFIER:
        reasons = [f["reason"] for f in document.get("fallbacks") or [] if f.get("step") == "verifier"]
        return "the verifier column was not sampled" + (f": {reasons[0]}" if reasons else "")
    return f"{check} is not among the run's checks (is it still in the sidecar module? re-run `spade select`)"


# -- the fixture --------------------------------------------------------------------------------------------------


@pytest.fixture
def spade_check(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """``spade_check(prompt, **options)``: sample ``prompt`` (a path, relative to the rootdir) and return the run's
    document (``spade sample --json``); ``options`` are a ``sample`` job's params (samples, inputs, seed,
    temperature, ...) and ``version`` or ``model``, over the ``--spade-*`` options. The same prompt and options
    are sampled once a session. With no model configured the test skips; another spade error fails it with its
    one line."""
    state = _state(request.config)

    def check(prompt: str | os.PathLike[str], **options: Any) -> dict[str, Any]:
        from spade_lsp.errors import ModelNotConfiguredError, SpadeError

        path = Path(prompt)
        if not path.is_absolute():
            path = request.config.rootpath / path
        try:
            return state.run(path, state.options(**options))
        except ModelNotConfiguredError as error:
            pytest.skip(_no_model(error))
        except SpadeError as error:
            pytest.fail(f"{prompt}: {error}", pytrace=False)

    return check


# -- the summary --------------------------------------------------------------------------------------------------


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """One line per run: which version on which model, and what it cost (a re-run: every call cached)."""
    state = config.stash.get(_STATE, None)
    if state is None or not state.runs:
        return
    from spade_lsp._fallbacks import Fallback

    terminalreporter.section("spade")
    for (prompt, _), outcome in state.runs.items():
        if isinstance(outcome, BaseException):
            terminalreporter.write_line(f"{prompt.name}: not sampled: {outcome}")
            continue
        d = outcome
        cost = "unknown cost" if d.get("cost") is None else f"${d['cost']:.4f}"
        terminalreporter.write_line(
            f"{d['prompt']} v{d['version']} on {d['model']}: run {d['run_id']}, {len(d['inputs'])} input(s) x up to "
            f"{d['samples']} sample(s); calls {d['calls']} made, {d['calls_cached']} cached, {d['calls_saved']} saved "
            f"by early stopping; {cost}"
        )
        for warning in d.get("warnings") or []:
            terminalreporter.write_line(f"  warning: {warning}")
        for fallback in d.get("fallbacks") or []:
            terminalreporter.write_line(f"  fell back: {Fallback(**fallback).message()}")
