"""Prompt-response tests declared in a file (``spade test FILE``, ``docs/judges.md``, "Test files"): items with
prompts and context, annotators (a sidecar's assertion functions, run in the sandbox, or LLM judge units),
per-item measurements and declared aggregations, turned into a :class:`PromptResponseTest` and run by the same
engine as the shipped tests (:func:`run_prompt_test`).

Everything in the file is checked when it is loaded, before anything runs, and a problem is one
:class:`ConfigError` naming the file, the line and the key path (``refund.yaml:14: annotators.polite.judge:
...``; for an items file, its line). Sidecar functions are looked up in a sandbox worker and called only there:
the module is never imported in this process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from spade_lsp._files import MAX_DATA_BYTES, MAX_SETTINGS_BYTES, MAX_SIDECAR_BYTES, read_limited_text
from spade_lsp._prompts import ROLES, conversation_text
from spade_lsp.errors import ConfigError, InputError
from spade_lsp.judges._ask import Answer, JudgeClients
from spade_lsp.judges._items import JudgeItem
from spade_lsp.judges._pipeline import (
    Layer,
    _check_keys,
    _model,
    _retries,
    _scale,
    _system_message,
    _temperature,
    _text,
    _user_message,
    is_undecided,
)
from spade_lsp.judges._prompt_tests import (
    Aggregation,
    Annotator,
    ItemAnnotations,
    JudgeAnnotator,
    MeasuredItem,
    Message,
    PromptResponseTest,
    PromptWithContext,
    TestItem,
    _reduce,
    aggregate,
)
from spade_lsp.judges._scales import OutOfScale, Scale

if TYPE_CHECKING:
    from spade_lsp.sandbox import AskLLM, SandboxLimits, SandboxResult

__all__ = [
    "AGGREGATIONS",
    "TEST_FILE_SUFFIXES",
    "AggregationSpec",
    "AnnotatorSpec",
    "FileTest",
    "MeasurementSpec",
    "SandboxAnnotator",
    "TestFile",
    "load_test_file",
    "looks_like_test_file",
]

#: What a test file may be: YAML (JSON is YAML too). Items may also come from a JSONL file.
TEST_FILE_SUFFIXES: Final = (".yaml", ".yml", ".json")
ITEMS_SUFFIX: Final = ".jsonl"
AGGREGATIONS: Final[tuple[Aggregation, ...]] = ("mean", "min", "max", "sum", "count")
JUDGE_UNITS: Final = ("judge", "categorical")
_TOP_KEYS: Final = ("name", "description", "items", "annotators", "measurements", "aggregations", "group_by")
_ITEM_KEYS: Final = ("id", "context", "prompts", "prompt")
_PROMPT_KEYS: Final = ("text", "messages", "context")
_ANNOTATOR_KEYS: Final = ("code", "judge")
_JUDGE_KEYS: Final = ("unit", "criteria", "prompt", "scale", "explanation", "model", "temperature", "retries")
_MEASUREMENT_KEYS: Final = ("annotator", "value", "where", "reduce")
_AGGREGATION_KEYS: Final = ("measurement", "how", "by")
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_FUNCTION: Final = re.compile(r"assert_[A-Za-z0-9_]*\Z")
_UNSET: Final = object()

KeyPath = tuple[str | int, ...]


# -- where a problem is -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Where:
    """A place in a test file (or an items file): the file, the key path, and the line where the file says it
    (found from the YAML node tree; a JSONL row's line is fixed)."""

    file: str
    lines: Mapping[KeyPath, int] = field(default_factory=dict)
    path: KeyPath = ()
    line: int | None = None

    def at(self, *keys: str | int) -> _Where:
        return _Where(self.file, self.lines, self.path + keys, self.line)

    def __str__(self) -> str:
        line = self.line
        if line is None:
            for end in range(len(self.path), -1, -1):
                line = self.lines.get(self.path[:end])
                if line is not None:
                    break
        shown = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in self.path).lstrip(".")
        return f"{self.file}{'' if line is None else f':{line}'}" + (f": {shown}" if shown else "")

    def error(self, message: str) -> ConfigError:
        return ConfigError(f"{self}: {message}")


def _yaml_lines(text: str) -> dict[KeyPath, int]:
    """The line (1-based) of every key and list entry of a YAML document, by key path."""
    import yaml

    lines: dict[KeyPath, int] = {}

    def walk(node: Any, path: KeyPath) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    lines[(*path, str(key.value))] = key.start_mark.line + 1
                    walk(value, (*path, str(key.value)))
        elif isinstance(node, yaml.SequenceNode):
            for index, child in enumerate(node.value):
                walk(child, (*path, index))

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return {}
    if root is not None:
        walk(root, ())
    return lines


# -- the declaration ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnnotatorSpec:
    """A declared annotator: a sidecar function (``module``, ``function``) or a judge unit (``layer``)."""

    name: str
    where: str
    module: Path | None = None
    function: str | None = None
    layer: Layer | None = None

    @property
    def needs_judge(self) -> bool:
        return self.layer is not None

    @property
    def scale(self) -> Scale:
        """What its values are on: a sidecar function returns true or false."""
        return Scale.boolean() if self.layer is None else self.layer.scale


@dataclass(frozen=True, slots=True)
class MeasurementSpec:
    """Per item, over its interactions (those whose context matches ``where``) that got a usable, decided
    annotation: with ``value``, 1/0 for "the annotation is ``value``"; without, the annotation's score (1/0 for
    true/false, the number for Likert and integer scales, 1/0 pass/fail for named categories). An undecided
    answer ("Unsure") is left out, unless it is the ``value`` asked about: a judge that cannot tell is no "No".
    ``reduce`` turns those into the item's number; an item with none has no measurement."""

    name: str
    annotator: str
    value: Any = _UNSET
    where: Mapping[str, Any] = field(default_factory=dict)
    reduce: Aggregation = "mean"


@dataclass(frozen=True, slots=True)
class AggregationSpec:
    """``how`` of measurement ``measurement`` over the items, or per value of context key ``by``."""

    measurement: str
    how: Aggregation = "mean"
    by: str | None = None

    @property
    def label(self) -> str:
        """Its key in the document's aggregates."""
        return f"{self.measurement} {self.how}" + ("" if self.by is None else f" by {self.by}")


@dataclass(frozen=True, slots=True)
class TestFile:
    """A loaded, checked test file. :meth:`check_sidecars` looks the code annotators' functions up in the
    sandbox; :meth:`build` makes the runnable test."""

    __test__ = False  # not a pytest test class

    path: Path
    name: str
    description: str
    items: tuple[TestItem, ...]
    annotators: Mapping[str, AnnotatorSpec]
    measurements: Mapping[str, MeasurementSpec]
    aggregations: tuple[AggregationSpec, ...] = ()
    group_by: tuple[str, ...] = ()

    @property
    def judges(self) -> list[str]:
        """The annotators that ask an LLM judge."""
        return [name for name, spec in self.annotators.items() if spec.needs_judge]

    def sidecar_text(self) -> dict[Path, str]:
        """Each sidecar module's text, read once, so what is checked is what runs."""
        out: dict[Path, str] = {}
        for spec in self.annotators.values():
            if spec.module is not None and spec.module not in out:
                out[spec.module] = read_limited_text(
                    spec.module, limit=MAX_SIDECAR_BYTES, what="an assertions module", error=ConfigError
                )
        return out

    def check_sidecars(self, limits: SandboxLimits, texts: Mapping[Path, str] | None = None) -> None:
        """Every code annotator's function exists in its module, found by a sandbox worker (the module is
        loaded there, confined, never here); :class:`ConfigError` at the annotator's line otherwise."""
        from spade_lsp.sandbox import ModuleSource, load_module_info

        texts = texts if texts is not None else self.sidecar_text()
        for module, text in texts.items():
            info = load_module_info(ModuleSource(text, str(module)), limits=limits)
            users = [s for s in self.annotators.values() if s.module == module]
            if info.module_error is not None:
                line = f":{info.module_error.line}" if info.module_error.line else ""
                raise ConfigError(
                    f"{users[0].where}: {module}{line} does not load in the sandbox: {info.module_error.message}"
                )
            found = [a.name for a in info.assertions]
            for spec in users:
                if spec.function not in found:
                    have = ", ".join(found) or "none"
                    raise ConfigError(
                        f"{spec.where}: {module.name} has no assertion function {spec.function!r} (it has: {have})"
                    )

    def build(
        self,
        *,
        limits: SandboxLimits | None = None,
        ask_llm: AskLLM | None = None,
        texts: Mapping[Path, str] | None = None,
    ) -> FileTest:
        """The runnable test; code annotators run in sandbox workers under ``limits`` (default: kernel
        confinement), their ``ask_llm`` answered by ``ask_llm``."""
        from spade_lsp.sandbox import SandboxLimits

        runner = _SidecarRunner(
            texts if texts is not None else self.sidecar_text(), limits or SandboxLimits(), ask_llm, self
        )
        return FileTest(self, runner)


def looks_like_test_file(value: str) -> bool:
    """``spade test X``: X is a file (rather than a shipped test's name) when it exists or has a file suffix."""
    return value.lower().endswith((*TEST_FILE_SUFFIXES, ITEMS_SUFFIX)) or Path(value).is_file()


def load_test_file(path: Path) -> TestFile:
    """A test file, every key checked; :class:`ConfigError` with the file, line and key path otherwise."""
    suffix = path.suffix.lower()
    if suffix == ITEMS_SUFFIX:
        raise ConfigError(
            f"{path}: a JSONL file holds test items, not a test: name it from a YAML test file "
            f"(`items: {path.name}`) that declares the annotators and measurements (docs/judges.md, 'Test files')"
        )
    if suffix not in TEST_FILE_SUFFIXES:
        raise ConfigError(f"{path}: a test file is .yaml, .yml or .json, not {suffix or 'without a suffix'}")
    if not path.is_file():
        raise ConfigError(f"{path}: no such test file")
    import yaml

    text = read_limited_text(path, limit=MAX_SETTINGS_BYTES, what="a test file", error=ConfigError)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid YAML: nested too deeply") from None
    return _test_file(data, path, _Where(str(path), _yaml_lines(text)))


def _test_file(data: Any, path: Path, where: _Where) -> TestFile:
    if not isinstance(data, Mapping):
        shown = "empty" if data is None else f"a {type(data).__name__}"
        raise where.error(f"a test file is a mapping of keys ({', '.join(_TOP_KEYS)}), not {shown}")
    _keys(data, _TOP_KEYS, where)
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name.strip()):
        raise where.at("name").error(
            f"`name` is required: the test's name (letters, digits, '_', '.', '-'), not {name!r}"
        )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise where.at("description").error(f"`description` must be text, not {description!r}")
    items = _items(data.get("items"), path, where.at("items"))
    annotators = _annotators(data.get("annotators"), path, where.at("annotators"))
    measurements = _measurements(data.get("measurements"), annotators, where.at("measurements"))
    keys = {key for item in items for key in item.context}
    aggregations = _aggregations(data.get("aggregations"), measurements, keys, where.at("aggregations"))
    group_by = _group_by(data.get("group_by"), keys, where.at("group_by"))
    for spec in aggregations:
        if spec.by is not None and spec.by not in group_by:
            group_by += (spec.by,)
    return TestFile(
        path=path.resolve(),
        name=name.strip(),
        description=description.strip(),
        items=tuple(items),
        annotators=annotators,
        measurements=measurements,
        aggregations=tuple(aggregations),
        group_by=group_by,
    )


def _keys(data: Mapping[Any, Any], known: Sequence[str], where: _Where) -> None:
    try:
        _check_keys(data, known, "")
    except ConfigError as error:
        key = next(k for k in data if k not in known)
        raise where.at(str(key)).error(str(error).removeprefix(": ")) from None


def _json_data(value: Any, where: _Where) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        raise where.error(f"must be JSON data (text, numbers, true/false, lists, mappings), not {value!r}") from None


# -- items --------------------------------------------------------------------------------------------------


def _items(raw: Any, path: Path, where: _Where) -> list[TestItem]:
    if raw is None:
        raise where.error("`items` is required: a list of items, or the name of a .jsonl file of them")
    rows: list[tuple[Any, _Where]]
    if isinstance(raw, str):
        source = path.parent / raw
        if source.suffix.lower() != ITEMS_SUFFIX:
            raise where.error(f"an items file is JSONL (one item per line, .jsonl), not {raw!r}")
        if not source.is_file():
            raise where.error(f"no such items file: {source}")
        text = read_limited_text(source, limit=MAX_DATA_BYTES, what="an items file", error=ConfigError)
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            row_where = _Where(str(source), line=number)
            try:
                rows.append((json.loads(line), row_where))
            except json.JSONDecodeError as error:
                raise row_where.error(f"not a JSON line: {error.msg}") from None
            except RecursionError:
                raise row_where.error("not a JSON line: nested too deeply") from None
    elif isinstance(raw, list):
        rows = [(row, where.at(index)) for index, row in enumerate(raw)]
    else:
        raise where.error(f"`items` is a list of items or the name of a .jsonl file, not {raw!r}")
    if not rows:
        raise where.error("there are no items: add at least one")
    items: list[TestItem] = []
    seen: dict[str, _Where] = {}
    for position, (row, row_where) in enumerate(rows, 1):
        item = _item(row, position, row_where)
        if item.id in seen:
            raise row_where.at("id").error(f"item id {item.id!r} is also the id of the item at {seen[item.id]}")
        seen[item.id] = row_where
        items.append(item)
    return items


def _item(row: Any, position: int, where: _Where) -> TestItem:
    if not isinstance(row, Mapping):
        raise where.error(f"an item is a mapping (id, context, prompts), not {row!r}")
    _keys(row, _ITEM_KEYS, where)
    raw_id = row.get("id", position)
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
        raise where.at("id").error(f"an item id is text or a number, not {raw_id!r}")
    item_id = str(raw_id).strip()
    if "/" in item_id:
        raise where.at("id").error(f"an item id cannot hold '/' (results are stored as ID/PROMPT): {item_id!r}")
    context = _context(row.get("context"), where.at("context"))
    if ("prompts" in row) == ("prompt" in row):
        raise where.error("give the item `prompts` (a list) or `prompt` (one), exactly one of them")
    raw_prompts = row["prompts"] if "prompts" in row else [row["prompt"]]
    prompts_where = where.at("prompts") if "prompts" in row else where.at("prompt")
    if not isinstance(raw_prompts, list) or not raw_prompts:
        raise prompts_where.error("`prompts` is a non-empty list of prompts")
    prompts = tuple(
        _prompt(raw, context, prompts_where.at(index) if "prompts" in row else prompts_where)
        for index, raw in enumerate(raw_prompts)
    )
    return TestItem(item_id, prompts, context)


def _context(raw: Any, where: _Where) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) for k in raw):
        raise where.error(f"`context` is a mapping of names to values, not {raw!r}")
    _json_data(raw, where)
    return dict(raw)


def _fill(text: str, values: Mapping[str, Any], where: _Where) -> str:
    """``{name}`` and ``{{name}}`` filled from the item's and the prompt's context."""
    from spade_lsp.synthesis import render_prompt

    filled, missing = render_prompt(text, values)
    if missing:
        names = ", ".join(f"{{{name}}}" for name in dict.fromkeys(missing))
        raise where.error(f"no value for {names} in the item's or the prompt's `context`")
    return filled


def _prompt(raw: Any, item_context: Mapping[str, Any], where: _Where) -> PromptWithContext:
    if isinstance(raw, str):
        raw = {"text": raw}
    if not isinstance(raw, Mapping):
        raise where.error(f"a prompt is text, or a mapping with `text` or `messages` (and `context`), not {raw!r}")
    _keys(raw, _PROMPT_KEYS, where)
    context = _context(raw.get("context"), where.at("context"))
    values = {**item_context, **context}
    if ("text" in raw) == ("messages" in raw):
        raise where.error("a prompt has `text` (one user message) or `messages` (a chat), exactly one of them")
    if "text" in raw:
        text = raw["text"]
        if not isinstance(text, str) or not text.strip():
            raise where.at("text").error("a prompt's `text` is non-empty text")
        return PromptWithContext(_fill(text, values, where.at("text")), context)
    messages = raw["messages"]
    if not isinstance(messages, list) or not messages:
        raise where.at("messages").error("`messages` is a non-empty list of {role, content} mappings")
    chat: list[Message] = []
    for index, message in enumerate(messages):
        here = where.at("messages", index)
        if not isinstance(message, Mapping) or set(message) != {"role", "content"}:
            raise here.error(f"a message is a mapping with exactly `role` and `content`, not {message!r}")
        if message["role"] not in ROLES:
            raise here.at("role").error(f"`role` is one of {', '.join(ROLES)}, not {message['role']!r}")
        if not isinstance(message["content"], str) or not message["content"].strip():
            raise here.at("content").error("`content` is non-empty text")
        chat.append({"role": message["role"], "content": _fill(message["content"], values, here.at("content"))})
    if chat[-1]["role"] != "user":
        raise where.at("messages").error("the last message is the user's: the model under test answers it")
    return PromptWithContext(conversation_text(chat), context, tuple(chat))


# -- annotators ---------------------------------------------------------------------------------------------


def _annotators(raw: Any, path: Path, where: _Where) -> dict[str, AnnotatorSpec]:
    if not isinstance(raw, Mapping) or not raw:
        raise where.error("`annotators` is required: a mapping of names to {code: ...} or {judge: {...}}")
    out: dict[str, AnnotatorSpec] = {}
    for name, spec in raw.items():
        here = where.at(str(name))
        if not isinstance(name, str) or not _NAME.match(name):
            raise here.error(f"an annotator's name is letters, digits, '_', '.' or '-', not {name!r}")
        if not isinstance(spec, Mapping):
            raise here.error(f"an annotator is {{code: FILE.py::assert_name}} or {{judge: {{...}}}}, not {spec!r}")
        _keys(spec, _ANNOTATOR_KEYS, here)
        if len(spec) != 1:
            raise here.error("an annotator is either `code` (a sidecar function) or `judge` (an LLM judge unit)")
        if "code" in spec:
            module, function = _code_ref(spec["code"], path, here.at("code"))
            out[name] = AnnotatorSpec(name, str(here.at("code")), module=module, function=function)
        else:
            out[name] = AnnotatorSpec(name, str(here.at("judge")), layer=_judge_layer(name, spec["judge"], here))
    return out


def _code_ref(raw: Any, path: Path, where: _Where) -> tuple[Path, str]:
    if not isinstance(raw, str) or raw.count("::") != 1:
        raise where.error(f"`code` is MODULE.py::assert_name (a sidecar module and one of its functions), not {raw!r}")
    file, function = (part.strip() for part in raw.split("::"))
    if not file.endswith(".py"):
        raise where.error(f"the module is a Python file (.py), not {file!r}")
    if not _FUNCTION.match(function):
        raise where.error(f"the function is an assertion function, named assert_..., not {function!r}")
    module = (path.parent / file).resolve()
    if not module.is_file():
        raise where.error(f"no such sidecar module: {module}")
    return module, function


def _judge_layer(name: str, raw: Any, where: _Where) -> Layer:
    here = where.at("judge")
    if not isinstance(raw, Mapping):
        raise here.error(f"`judge` is a mapping (criteria, scale, ...), not {raw!r}")
    _keys(raw, _JUDGE_KEYS, here)
    unit = raw.get("unit", "judge")
    if unit not in JUDGE_UNITS:
        raise here.at("unit").error(
            f"an annotator's `unit` is one of {', '.join(JUDGE_UNITS)} (verify and pairwise need other judges or "
            f"a reference: use a pipeline for those), not {unit!r}"
        )
    label = str(here)
    criteria = _text(raw, "criteria", label)
    prompt = _text(raw, "prompt", label)
    if criteria is not None and prompt is not None:
        raise here.error("give `criteria` (added to the judge's instruction) or `prompt` (replacing it), not both")
    if criteria is None and prompt is None:
        raise here.error("say what to judge: `criteria` (e.g. criteria: Is the reply polite?) or `prompt`")
    explanation = raw.get("explanation", True)
    if not isinstance(explanation, bool):
        raise here.at("explanation").error(f"`explanation` is true or false, not {explanation!r}")
    return Layer(
        name=name,
        unit=cast("Any", unit),
        scale=_scale(raw.get("scale"), unit, str(here.at("scale")).removesuffix(".scale")),
        criteria=criteria,
        prompt=prompt,
        explanation=explanation,
        model=_model(raw, label),
        temperature=_temperature(raw, label, None),
        retries=_retries(raw, label, None),
    )


# -- measurements and aggregations --------------------------------------------------------------------------


def _measurements(raw: Any, annotators: Mapping[str, AnnotatorSpec], where: _Where) -> dict[str, MeasurementSpec]:
    if not isinstance(raw, Mapping) or not raw:
        raise where.error("`measurements` is required: a mapping of names to {annotator: NAME, value: ...}")
    out: dict[str, MeasurementSpec] = {}
    for name, spec in raw.items():
        here = where.at(str(name))
        if not isinstance(name, str) or not _NAME.match(name):
            raise here.error(f"a measurement's name is letters, digits, '_', '.' or '-', not {name!r}")
        if isinstance(spec, str):
            spec = {"annotator": spec}
        if not isinstance(spec, Mapping):
            raise here.error(f"a measurement is {{annotator: NAME, value: ..., where: ..., reduce: ...}}, not {spec!r}")
        _keys(spec, _MEASUREMENT_KEYS, here)
        annotator = spec.get("annotator")
        if not isinstance(annotator, str) or annotator not in annotators:
            known = ", ".join(annotators)
            raise here.at("annotator").error(f"unknown annotator {annotator!r}; the annotators are: {known}")
        value: Any = _UNSET
        if "value" in spec:
            value = _measured_value(spec["value"], annotators[annotator], here.at("value"))
        where_spec = spec.get("where") or {}
        if not isinstance(where_spec, Mapping) or not all(isinstance(k, str) for k in where_spec):
            raise here.at("where").error(
                f"`where` maps context keys to a value (or a list of values), not {where_spec!r}"
            )
        _json_data(where_spec, here.at("where"))
        reduce = spec.get("reduce", "mean")
        if reduce not in AGGREGATIONS:
            raise here.at("reduce").error(f"`reduce` is one of {', '.join(AGGREGATIONS)}, not {reduce!r}")
        out[name] = MeasurementSpec(name, annotator, value, dict(where_spec), cast("Aggregation", reduce))
    return out


def _measured_value(raw: Any, annotator: AnnotatorSpec, where: _Where) -> Any:
    """The value on the annotator's scale (forgiving the spellings answers are forgiven: "yes" for "Yes")."""
    try:
        return annotator.scale.parse(raw)
    except OutOfScale:
        raise where.error(
            f"{raw!r} is not a value annotator {annotator.name!r} gives: it answers {annotator.scale.describe()}"
        ) from None


def _aggregations(
    raw: Any, measurements: Mapping[str, MeasurementSpec], keys: set[str], where: _Where
) -> list[AggregationSpec]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise where.error("`aggregations` is a list of {measurement: NAME, how: mean|min|max|sum|count, by: KEY}")
    out: list[AggregationSpec] = []
    for index, spec in enumerate(raw):
        here = where.at(index)
        if not isinstance(spec, Mapping):
            raise here.error(f"an aggregation is {{measurement: NAME, how: ..., by: KEY}}, not {spec!r}")
        _keys(spec, _AGGREGATION_KEYS, here)
        measurement = spec.get("measurement")
        if not isinstance(measurement, str) or measurement not in measurements:
            known = ", ".join(measurements)
            raise here.at("measurement").error(f"unknown measurement {measurement!r}; the measurements are: {known}")
        how = spec.get("how", "mean")
        if how not in AGGREGATIONS:
            raise here.at("how").error(f"`how` is one of {', '.join(AGGREGATIONS)}, not {how!r}")
        by = spec.get("by")
        if by is not None:
            _context_key(by, keys, here.at("by"))
        out.append(AggregationSpec(measurement, cast("Aggregation", how), by))
    return out


def _context_key(key: Any, keys: set[str], where: _Where) -> None:
    if not isinstance(key, str) or key not in keys:
        known = ", ".join(sorted(keys)) or "none"
        raise where.error(f"no item's context has the key {key!r} (the items' context keys: {known})")


def _group_by(raw: Any, keys: set[str], where: _Where) -> tuple[str, ...]:
    if raw is None:
        return ()
    listed = [raw] if isinstance(raw, str) else raw
    if not isinstance(listed, list):
        raise where.error(f"`group_by` is a context key or a list of them, not {raw!r}")
    for index, key in enumerate(listed):
        _context_key(key, keys, where.at(index) if isinstance(raw, list) else where)
    return tuple(dict.fromkeys(listed))


# -- running ------------------------------------------------------------------------------------------------


class _SidecarRunner:
    """Runs the code annotators' functions in sandbox workers: one run per module over every interaction with
    a response, all that module's functions at once, kept for the module's other annotators."""

    def __init__(
        self, texts: Mapping[Path, str], limits: SandboxLimits, ask_llm: AskLLM | None, spec: TestFile
    ) -> None:
        self.texts = texts
        self.limits = limits
        self.ask_llm = ask_llm
        self.names = {
            module: sorted({s.function or "" for s in spec.annotators.values() if s.module == module})
            for module in texts
        }
        self.done: dict[Path, tuple[tuple[Any, ...], SandboxResult, list[tuple[int, int]]]] = {}

    def answers(self, module: Path, function: str, items: Sequence[ItemAnnotations]) -> list[tuple[Answer | None, ...]]:
        from spade_lsp.sandbox import ModuleSource, SandboxCase, run_assertions

        slots = [
            (k, index)
            for k, item in enumerate(items)
            for index, interaction in enumerate(item.interactions)
            if interaction.response is not None
        ]
        key = tuple((items[k].item.id, index, items[k].interactions[index].response) for k, index in slots)
        cached = self.done.get(module)
        if cached is None or cached[0] != key:
            cases = []
            for k, index in slots:
                interaction = items[k].interactions[index]
                messages = [dict(m) for m in interaction.prompt.chat()]  # as sent: what eval and sample give a check
                cases.append(
                    SandboxCase(
                        example={**items[k].item.context, **interaction.prompt.context},
                        prompt=conversation_text(messages),
                        response=interaction.response or "",
                        messages=messages,
                    )
                )
            result = run_assertions(
                ModuleSource(self.texts[module], str(module)),
                cases,
                names=self.names[module],
                limits=self.limits,
                ask_llm=self.ask_llm,
            )
            if result.module_error is not None:
                line = f":{result.module_error.line}" if result.module_error.line else ""
                raise InputError(f"{module}{line}: {result.module_error.message}")
            cached = self.done[module] = (key, result, slots)
        _, result, slots = cached
        column = result.names.index(function)
        out: list[list[Answer | None]] = [[None] * len(item.interactions) for item in items]
        for case, (k, index) in enumerate(slots):
            error = result.error(case, column)
            if error is not None:
                where = f" (line {error.line})" if error.line else ""
                out[k][index] = Answer(problem="error", detail=f"{error.kind}{where}: {error.message}")
            else:
                out[k][index] = Answer(value=result.passed[case][column])
        return [tuple(row) for row in out]


@dataclass(frozen=True, slots=True)
class SandboxAnnotator:
    """A code annotator whose function lives in a sidecar module and runs only in sandbox workers: its value
    is the function's true or false; a cell that errs (an exception, a timeout, a refused operation) is an
    annotation with problem ``error`` and the sandbox's reason."""

    module: Path
    function: str
    runner: _SidecarRunner
    needs_judge: bool = False
    undecided: frozenset[Any] = frozenset()

    def annotate(self, items: Sequence[ItemAnnotations], judge: JudgeClients | None) -> list[tuple[Answer | None, ...]]:
        return self.runner.answers(self.module, self.function, items)


def _judge_annotator(layer: Layer) -> JudgeAnnotator:
    """A judge unit as an annotator: the pipeline's own instruction and input/response message, one question
    per interaction; its undecided values ("Unsure", ...) are asked once more."""

    def render(item: ItemAnnotations, index: int) -> list[Message] | None:
        interaction = item.interactions[index]
        if interaction.response is None:
            return None
        judged = JudgeItem(f"{item.item.id}/{index}", interaction.prompt.text, interaction.response)
        return [
            {"role": "system", "content": _system_message(layer)},
            {"role": "user", "content": _user_message(layer, judged, [], None)},
        ]

    scale = layer.scale
    return JudgeAnnotator(
        render,
        scale,
        retries=layer.retries if layer.retries is not None else 2,
        reask=frozenset(v for v in scale.values if is_undecided(scale, v)),
        model=layer.model,
        temperature=layer.temperature or 0.0,
        explanation=layer.explanation,
    )


def _score(scale: Scale, value: Any) -> float | None:
    """1/0 for true/false, the number for Likert and integer scales, 1/0 pass/fail for named categories, None
    for an undecided value."""
    if isinstance(value, bool) or scale.kind == "boolean":
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if is_undecided(scale, value):
        return None
    return 1.0 if scale.passes(value) else 0.0


def _matches(context: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    for key, wanted in where.items():
        value = context.get(key)
        if value != wanted and not (isinstance(wanted, list) and value in wanted):
            return False
    return True


class FileTest(PromptResponseTest):
    """A :class:`PromptResponseTest` made from a test file: its items, annotators and measurements as declared,
    aggregated by the defaults plus the declared aggregations."""

    def __init__(self, spec: TestFile, runner: _SidecarRunner) -> None:
        self.spec = spec
        self.runner = runner
        self.name = spec.name
        self.description = spec.description
        self.measurements = tuple(spec.measurements)
        self.group_by = spec.group_by
        self.source = str(spec.path)

    def make_test_items(self) -> list[TestItem]:
        return list(self.spec.items)

    def annotators(self) -> dict[str, Annotator]:
        out: dict[str, Annotator] = {}
        for name, spec in self.spec.annotators.items():
            if spec.layer is not None:
                out[name] = _judge_annotator(spec.layer)
            else:
                assert spec.module is not None and spec.function is not None
                out[name] = SandboxAnnotator(spec.module, spec.function, self.runner)
        return out

    def measure_quality(self, item: ItemAnnotations) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, spec in self.spec.measurements.items():
            scale = self.spec.annotators[spec.annotator].scale
            scores: list[float] = []
            for interaction, value in zip(item.interactions, item.values(spec.annotator), strict=True):
                if value is None or not _matches({**item.item.context, **interaction.prompt.context}, spec.where):
                    continue
                if spec.value is _UNSET:
                    score = _score(scale, value)
                elif is_undecided(scale, value) and value != spec.value:
                    score = None  # "Unsure" decides nothing: not a "not polite"
                else:
                    score = 1.0 if value == spec.value else 0.0
                if score is not None:
                    scores.append(score)
            found = _reduce(scores, spec.reduce) if scores else None
            if found is not None:
                out[name] = found
        return out

    def aggregate_measurements(self, items: Sequence[MeasuredItem]) -> dict[str, Any]:
        out = super().aggregate_measurements(items)
        for spec in self.spec.aggregations:
            if spec.by is None:
                value = aggregate(items, spec.measurement, spec.how)
                out[spec.label] = None if value is None else round(value, 6)
            else:
                groups = aggregate(items, spec.measurement, spec.how, group_by=spec.by)
                out[spec.label] = {g: None if v is None else round(v, 6) for g, v in groups.items()}
        return out
