"""What a kind of job is: its params model and what it runs, given the resolved settings of its prompt."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from spade_lsp._progress import Progress
from spade_lsp.config import Settings
from spade_lsp.errors import ConfigError, InputError

if TYPE_CHECKING:
    from spade_lsp.workspace import Workspace

__all__ = [
    "JobContext",
    "JobParams",
    "JobParamsError",
    "JobSpec",
    "choice",
    "expect",
    "flag",
    "number",
    "parse_params",
    "setting",
]


class JobParamsError(InputError):
    """A job's kind, path or params cannot be used; nothing was queued."""


class JobParams(BaseModel):
    """The params every kind takes: ``settings``, the spade settings of the editor (or the command line) that
    asked, which beat the workspace's files and the prompt's front matter. A kind's model adds its own fields;
    :meth:`check` adds checks across fields. Unknown keys are refused, so typos surface; defaults are not
    filled in when stored (:meth:`to_json` holds only what was given)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    settings: dict[str, Any] | None = Field(
        default=None, json_schema_extra={"expected": "an object of spade settings", "nullable": True}
    )

    @field_validator("settings", mode="before")
    @classmethod
    def _settings_are_settings(cls, value: Any) -> Any:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise ValueError(f"expected an object of spade settings, got {value!r}")
        try:
            Settings().merged(dict(value), source="params.settings")
        except ConfigError as error:
            raise _Verbatim(str(error)) from error
        return dict(value)

    def check(self) -> None:
        """Checks across fields; raises :class:`InputError` (the message names the param)."""

    def setting_values(self) -> dict[str, Any]:
        """The settings this job's own params set (those declared with :func:`setting`), by setting name: they
        join ``settings`` in the one resolution of the job's settings."""
        values: dict[str, Any] = {}
        for name, field in type(self).model_fields.items():
            extra = field.json_schema_extra
            value = getattr(self, name)
            if isinstance(extra, dict) and isinstance(extra.get("setting"), str) and value is not None:
                values[str(extra["setting"])] = value
        return values

    def to_json(self) -> dict[str, Any]:
        """The params as given (what the queue stores)."""
        return self.model_dump(mode="json", exclude_unset=True)


class _Verbatim(ValueError):
    """A field error whose message is already the whole line (``params.settings: ...``)."""


P = TypeVar("P", bound=JobParams)


@dataclass(frozen=True, slots=True)
class JobContext:
    """Where a job runs: the workspace, the prompt (or file) the job is about, and that prompt's settings,
    resolved once for the job (:func:`spade_lsp.config.resolve_file`)."""

    workspace: Workspace
    prompt: Path
    settings: Settings


@dataclass(frozen=True, slots=True)
class JobSpec(Generic[P]):
    """One kind of job: its name, its params model and its run (which raises :class:`JobCancelled` from
    ``progress``, or the engine's errors, and returns the job's JSON result)."""

    kind: str
    params: type[P]
    run: Callable[[JobContext, P, Progress], dict[str, Any]]
    summary: str = ""
    #: Whether the job's path is a prompt whose own settings (front matter) count; a test file's do not.
    prompt_settings: bool = True

    def parse(self, raw: Mapping[str, Any]) -> P:
        return parse_params(self.kind, self.params, raw)

    def execute(self, ctx: JobContext, params: JobParams, progress: Progress) -> dict[str, Any]:
        if not isinstance(params, self.params):
            params = self.parse(params.to_json())
        return self.run(ctx, params, progress)


def expect(expected: str, *, nullable: bool = False, **constraints: Any) -> Any:
    """An optional field (absent: the default) whose error says what it expects; an explicit null is refused
    unless ``nullable``."""
    return Field(default=None, json_schema_extra={"expected": expected, "nullable": nullable}, **constraints)


def number(low: float, high: float = math.inf, *, integer: bool = False, nullable: bool = False) -> Any:
    """A numeric field in [low, high]."""
    expected = f"{'an integer' if integer else 'a number'} in [{low:g}, {high:g}]"
    if high == math.inf:
        return expect(expected, nullable=nullable, ge=low)
    return expect(expected, nullable=nullable, ge=low, le=high)


def setting(name: str) -> Any:
    """A field that sets the setting ``name`` for one job, with the setting's own bounds and choices: they are
    declared once, in :class:`Settings`, and a job refuses what the setting would refuse."""
    field = Settings.model_fields[name]
    bounds = {
        key: getattr(item, key) for item in field.metadata for key in ("ge", "gt", "le", "lt") if hasattr(item, key)
    }
    annotation = field.annotation
    union = get_origin(annotation) in (Union, UnionType)
    kinds = [kind for kind in (get_args(annotation) if union else (annotation,)) if kind is not type(None)]
    if kinds and get_origin(kinds[0]) is Literal:
        expected = f"one of {', '.join(map(str, get_args(kinds[0])))}"
    elif kinds == [bool]:
        expected = "true or false"
    else:
        low = bounds.get("ge", bounds.get("gt", -math.inf))
        high = bounds.get("le", bounds.get("lt", math.inf))
        opening, closing = "[" if "gt" not in bounds else "(", "]" if "lt" not in bounds else ")"
        what = "an integer" if kinds == [int] else "a number"
        expected = f"{what} in {opening}{low:g}, {high:g}{closing}"
    return Field(default=None, json_schema_extra={"expected": expected, "nullable": False, "setting": name}, **bounds)


def choice(*options: str) -> Any:
    """A field of ``Literal[options]`` whose error names them."""
    return expect(f"one of {', '.join(options)}")


def flag(*, setting: str | None = None) -> Any:
    """A true-or-false field; with ``setting``, one that sets that setting for one job (true: the setting's
    plain form, such as the verifier with its default criteria)."""
    field: Any = expect("true or false")
    if setting is not None:
        field.json_schema_extra["setting"] = setting
    return field


def _expected(model: type[BaseModel], name: str) -> tuple[str | None, bool]:
    field = model.model_fields.get(name)
    extra = field.json_schema_extra if field is not None else None
    if not isinstance(extra, dict):
        return None, True
    expected = extra.get("expected")
    return (expected if isinstance(expected, str) else None), bool(extra.get("nullable", False))


def parse_params(kind: str, model: type[P], raw: Mapping[str, Any]) -> P:
    """``raw`` as ``model``, or :class:`JobParamsError` in one line naming ``params.<field>``."""
    if not isinstance(raw, Mapping):
        raise JobParamsError(f"params: expected an object, got {type(raw).__name__}")
    unknown = sorted(str(key) for key in raw if key not in model.model_fields)
    if unknown:
        raise JobParamsError(f"params: unknown key(s) for {kind}: {', '.join(unknown)}")
    for key, value in raw.items():
        expected, nullable = _expected(model, key)
        if value is None and expected is not None and not nullable:
            raise JobParamsError(f"params.{key}: expected {expected}, got None")
    try:
        params = model.model_validate(dict(raw))
    except ValidationError as error:
        raise JobParamsError(_one_line(model, raw, error)) from None
    try:
        params.check()
    except (InputError, TypeError, ValueError) as error:
        raise JobParamsError(str(error)) from None
    return params


def _one_line(model: type[BaseModel], raw: Mapping[str, Any], error: ValidationError) -> str:
    first = error.errors()[0]
    loc = first["loc"]
    name = str(loc[0]) if loc else ""
    context = first.get("ctx") or {}
    cause = context.get("error")
    if isinstance(cause, _Verbatim):
        return str(cause)
    expected, _ = _expected(model, name)
    where = ".".join(str(part) for part in loc)
    if isinstance(cause, ValueError):
        return f"params.{where}: {cause}"
    if expected is not None:
        return f"params.{name}: expected {expected}, got {raw.get(name)!r}"
    return f"params.{where}: {first['msg']}" if where else f"params: {first['msg']}"
