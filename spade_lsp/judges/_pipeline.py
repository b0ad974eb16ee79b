"""Compound judge pipelines (after Verdict): units that judge, verify, compare or classify, repeated in layers
that feed each other, pooled into one verdict per item, declared in a TOML or YAML file (``docs/judges.md``,
"Pipelines").

One judge is noisy; several judges, judges checked by verifiers, and a vote are less so, and how much less is
measurable against human labels. All the units x items of one layer go to the LLM layer as one batch
(:func:`ask_many`), so they run concurrently under the client's limits; the next layer waits, because it is
shown the answers of the layer before. Every answer is checked against its unit's scale, bad ones are asked
again within the layer's retries, and whatever still fails is recorded per item and reported, never dropped.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, cast

from spade_lsp._fallbacks import Fallbacks
from spade_lsp._files import MAX_SETTINGS_BYTES, read_limited_text
from spade_lsp._progress import Progress
from spade_lsp.errors import ConfigError, InputError
from spade_lsp.judges._ask import PROBLEMS, Answer, JudgeClients, Question, ask_many
from spade_lsp.judges._items import JudgeItem
from spade_lsp.judges._scales import Scale
from spade_lsp.llm import LLMClient

if TYPE_CHECKING:
    from spade_lsp.config import Settings
    from spade_lsp.workspace import Workspace

__all__ = [
    "CONNECTIONS",
    "POOL_METHODS",
    "UNITS",
    "ItemResult",
    "Layer",
    "Pipeline",
    "PipelineResult",
    "Pool",
    "is_undecided",
    "pool_values",
    "render_pipeline_report",
    "run_pipeline",
]

UnitKind = Literal["judge", "verify", "pairwise", "categorical"]
Connection = Literal["chain", "dense", "broadcast", "cumulative"]
PoolMethod = Literal["majority", "mean", "weighted"]
#: Called after each layer with its answers, ``answers[unit][item]`` (the workspace runner stores them).
LayerDone = Callable[["Layer", list[list[Answer]]], None]

UNITS: Final = ("judge", "verify", "pairwise", "categorical")
CONNECTIONS: Final = ("chain", "dense", "broadcast", "cumulative")
POOL_METHODS: Final = ("majority", "mean", "weighted")
#: Units per layer; a unit's sample index is its index in the layer, which must stay below the stride that
#: ``spade judge --noise`` adds between resamples of a whole pipeline (10,000).
MAX_REPEAT: Final = 100
MAX_RETRIES: Final = 10
MAX_TEMPERATURE: Final = 2.0
DEFAULT_RETRIES: Final = 2
#: Discrete values that mean "no decision": an answer with one is valid (not asked again) but neither a pass
#: nor a fail, unless the scale lists it among its passing values.
UNDECIDED: Final = frozenset(
    {"unsure", "unknown", "undecided", "not sure", "cannot tell", "can't tell", "cannot decide", "tie", "n/a"}
)
DEFAULT_SCALES: Final[Mapping[str, Scale]] = {
    "judge": Scale.likert(1, 5),
    "verify": Scale.boolean(),
    "pairwise": Scale.discrete(["A", "B"], passing=["A"]),
}
_TOP_KEYS: Final = ("name", "description", "model", "temperature", "retries", "layers", "pool")
_LAYER_KEYS: Final = (
    "name",
    "unit",
    "repeat",
    "scale",
    "criteria",
    "prompt",
    "explanation",
    "connection",
    "model",
    "temperature",
    "retries",
)
_POOL_KEYS: Final = ("method", "weights")
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_NO_REFERENCE: Final = "no reference response to compare with (add `reference` to the example)"
_NOTHING_TO_VERIFY: Final = "not asked: no earlier unit it is shown gave a pass or a fail to verify"
_STOPPED: Final = "not asked: the run was stopped"

_ROLES: Final[Mapping[str, str]] = {
    "judge": "You are a careful, impartial judge of the responses of an LLM pipeline.",
    "verify": "You are a careful, impartial reviewer of other judges' judgements of an LLM pipeline's response.",
    "pairwise": "You are a careful, impartial judge comparing two responses to the same input.",
    "categorical": "You are a careful, impartial judge classifying the responses of an LLM pipeline.",
}
_DEFAULT_INSTRUCTIONS: Final[Mapping[str, str]] = {
    "judge": "Judge how well the response does what the input asks: correct, complete, and following every "
    "instruction in the input.",
    "verify": "Decide whether the verdict under review (pass or fail) is right. Check the response against the "
    "input yourself rather than trusting the earlier explanations.",
    "pairwise": "Decide which response does better what the input asks.",
}
_CRITERIA_LEADS: Final[Mapping[str, str]] = {
    "judge": "Judge the response against these criteria:",
    "verify": "Check the verdict under review against these criteria:",
    "pairwise": "Compare the two responses on these criteria:",
    "categorical": "Classify the response as follows:",
}


# -- the declaration ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Layer:
    """One unit repeated ``repeat`` times. ``connection`` says which units of earlier layers each unit is shown
    (None only for the first layer); ``model``, ``temperature`` and ``retries`` None inherit the pipeline's."""

    name: str
    unit: UnitKind
    scale: Scale
    repeat: int = 1
    criteria: str | None = None
    prompt: str | None = None
    explanation: bool = True
    connection: Connection | None = None
    model: str | None = None
    temperature: float | None = None
    retries: int | None = None

    def key(self, unit: int) -> str:
        """The unit's name in results, documents and the store's ``judgements.judge``."""
        return f"{self.name}/{unit}"

    @property
    def verdict_scale(self) -> Scale:
        """What the layer's verdicts are on: a verify unit's verdict is the checked verdict, kept or flipped."""
        return Scale.boolean() if self.unit == "verify" else self.scale

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "name": self.name,
            "unit": self.unit,
            "repeat": self.repeat,
            "scale": self.scale.to_spec(),
            "explanation": self.explanation,
        }
        optional = {
            "criteria": self.criteria,
            "prompt": self.prompt,
            "connection": self.connection,
            "model": self.model,
            "temperature": self.temperature,
            "retries": self.retries,
        }
        return spec | {key: value for key, value in optional.items() if value is not None}


@dataclass(frozen=True, slots=True)
class Pool:
    """How the last layer's answers become one per item; ``weights`` (weighted only) one per unit."""

    method: PoolMethod = "majority"
    weights: tuple[float, ...] | None = None

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"method": self.method}
        if self.weights is not None:
            spec["weights"] = list(self.weights)
        return spec


@dataclass(frozen=True, slots=True)
class Pipeline:
    """A compound judge: layers run in order, the last one pooled. Build with :meth:`load` or :meth:`from_dict`,
    which validate everything, so a pipeline that exists can run."""

    name: str
    layers: tuple[Layer, ...]
    pool: Pool = field(default_factory=Pool)
    model: str | None = None
    temperature: float = 0.0
    retries: int = DEFAULT_RETRIES
    description: str | None = None
    source: str | None = None

    @classmethod
    def load(cls, path: Path) -> Pipeline:
        """A pipeline file: TOML (``.toml``) or YAML (``.yaml``, ``.yml``); :class:`ConfigError` naming the file,
        the layer and the key for anything wrong in it."""
        suffix = path.suffix.lower()
        if suffix not in (".toml", ".yaml", ".yml"):
            raise ConfigError(f"{path}: a pipeline file is .toml, .yaml or .yml, not {suffix or 'without a suffix'}")
        if not path.exists():
            raise ConfigError(f"{path}: no such pipeline file")
        text = read_limited_text(path, limit=MAX_SETTINGS_BYTES, what="a pipeline file", error=ConfigError)
        data: Any
        if suffix == ".toml":
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as error:
                raise ConfigError(f"{path}: not valid TOML: {error}") from None
            except RecursionError:
                raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
        else:
            import yaml

            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as error:
                raise ConfigError(f"{path}: not valid YAML: {' '.join(str(error).split())}") from None
            except RecursionError:
                raise ConfigError(f"{path}: not valid YAML: nested too deeply") from None
        return cls.from_dict(data, where=str(path), source=str(path))

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "pipeline", source: str | None = None) -> Pipeline:
        """A pipeline from its declaration (a file's parsed content); ``where`` prefixes every error."""
        if data is None:
            raise ConfigError(f"{where}: the pipeline is empty: give it a `name` and `layers`")
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: a pipeline is a table of keys (name, layers, ...), not {type(data).__name__}")
        _check_keys(data, _TOP_KEYS, where)
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{where}: `name` is required: the pipeline's name, a non-empty string")
        raw_layers = data.get("layers")
        if not isinstance(raw_layers, list) or not raw_layers:
            raise ConfigError(f"{where}: `layers` must be a non-empty list of layer tables ([[layers]] in TOML)")
        layers: list[Layer] = []
        for index, raw in enumerate(raw_layers):
            layers.append(_layer(raw, index, layers, where))
        return cls(
            name=name.strip(),
            layers=tuple(layers),
            pool=_pool(data.get("pool"), layers[-1], where),
            model=_model(data, where),
            temperature=_temperature(data, where, 0.0),
            retries=_retries(data, where, DEFAULT_RETRIES),
            description=_text(data, "description", where),
            source=source,
        )

    def to_spec(self) -> dict[str, Any]:
        """The declaration with every default filled in (``from_dict`` of it gives the same pipeline)."""
        spec: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            spec["description"] = self.description
        if self.model is not None:
            spec["model"] = self.model
        spec |= {"temperature": self.temperature, "retries": self.retries}
        spec["layers"] = [layer.to_spec() for layer in self.layers]
        spec["pool"] = self.pool.to_spec()
        return spec

    @property
    def units(self) -> int:
        return sum(layer.repeat for layer in self.layers)

    def upstream(self, layer: int, unit: int) -> list[tuple[int, int]]:
        """The (layer, unit) pairs that unit ``unit`` of layer ``layer`` is shown, per its connection."""
        connection = self.layers[layer].connection
        if layer == 0 or connection is None:
            return []
        before = self.layers[layer - 1].repeat
        if connection == "chain":
            return [(layer - 1, unit)]
        if connection == "broadcast":
            return [(layer - 1, unit // (self.layers[layer].repeat // before))]
        if connection == "dense":
            return [(layer - 1, u) for u in range(before)]
        return [(li, u) for li in range(layer) for u in range(self.layers[li].repeat)]

    def run(
        self,
        client: LLMClient | JudgeClients,
        items: Sequence[JudgeItem],
        *,
        sample_offset: int = 0,
        on_progress: Progress | None = None,
        should_stop: Callable[[], bool] | None = None,
        on_layer: LayerDone | None = None,
    ) -> PipelineResult:
        """Judge ``items``. ``sample_offset`` shifts every sample index, so a resample of the whole pipeline is
        a set of fresh calls (each cached in its own right). ``on_progress`` may raise to stop the run: the
        calls in flight are abandoned and the exception is raised here."""
        if sample_offset < 0:
            raise ValueError("sample_offset must be at least 0")
        pool = client if isinstance(client, JudgeClients) else JudgeClients(client)
        for layer in self.layers:
            if layer.unit == "pairwise" and items and all(item.reference is None for item in items):
                raise InputError(
                    f"pipeline {self.name!r}: layer {layer.name!r} compares each output with the example's "
                    "`reference` response, and no example has one"
                )
        state = _RunState(self, items, _Tracker(on_progress, self.units * len(items)), should_stop)
        for index in range(len(self.layers)):
            state.run_layer(pool, index, sample_offset)
            if on_layer is not None:
                on_layer(self.layers[index], state.answers[index])
        return state.result()


def _check_keys(data: Mapping[Any, Any], known: Sequence[str], where: str) -> None:
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{where}: unknown key {key!r}{hint}; the keys here are {', '.join(known)}")


def _text(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: `{key}` must be a non-empty string, not {value!r}")
    return value.strip()


def _model(data: Mapping[str, Any], where: str) -> str | None:
    return _text(data, "model", where)


def _temperature(data: Mapping[str, Any], where: str, default: float | None) -> Any:
    value = data.get("temperature")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= MAX_TEMPERATURE:
        raise ConfigError(f"{where}: `temperature` must be a number from 0 to {MAX_TEMPERATURE:g}, not {value!r}")
    return float(value)


def _retries(data: Mapping[str, Any], where: str, default: int | None) -> Any:
    value = data.get("retries")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES:
        raise ConfigError(
            f"{where}: `retries` (re-asks of an answer that is malformed, off the scale or refused) must be an "
            f"integer from 0 to {MAX_RETRIES}, not {value!r}"
        )
    return value


def _layer(raw: Any, index: int, previous: Sequence[Layer], where: str) -> Layer:
    label = f"{where}: layer {index + 1}"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{label}: a layer is a table of keys (name, unit, ...), not {raw!r}")
    name = raw.get("name")
    if isinstance(name, str) and name:
        label += f" ({name!r})"
    _check_keys(raw, _LAYER_KEYS, label)
    if name is None:
        raise ConfigError(f"{label}: `name` is required (it names the layer's units: NAME/0, NAME/1, ...)")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{label}: `name` must be letters, digits, '_', '.' or '-', not {name!r}")
    if any(layer.name == name for layer in previous):
        raise ConfigError(f"{label}: an earlier layer is also named {name!r}; layer names are unique")
    unit = raw.get("unit")
    if unit not in UNITS:
        raise ConfigError(f"{label}: `unit` must be one of {', '.join(UNITS)}, not {unit!r}")
    if unit == "verify" and not previous:
        raise ConfigError(f"{label}: a verify unit checks earlier judgements, so it cannot be in the first layer")
    repeat = raw.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_REPEAT:
        raise ConfigError(f"{label}: `repeat` must be an integer from 1 to {MAX_REPEAT}, not {repeat!r}")
    criteria = _text(raw, "criteria", label)
    prompt = _text(raw, "prompt", label)
    if criteria is not None and prompt is not None:
        raise ConfigError(
            f"{label}: give `criteria` (added to the unit's default instruction) or `prompt` (which replaces it), "
            "not both"
        )
    if unit == "categorical" and criteria is None and prompt is None:
        raise ConfigError(f"{label}: a categorical unit needs `criteria` or `prompt` saying how to classify")
    explanation = raw.get("explanation", True)
    if not isinstance(explanation, bool):
        raise ConfigError(f"{label}: `explanation` must be true or false, not {explanation!r}")
    return Layer(
        name=name,
        unit=cast("UnitKind", unit),
        scale=_scale(raw.get("scale"), unit, label),
        repeat=repeat,
        criteria=criteria,
        prompt=prompt,
        explanation=explanation,
        connection=_connection(raw.get("connection"), previous, repeat, label),
        model=_model(raw, label),
        temperature=_temperature(raw, label, None),
        retries=_retries(raw, label, None),
    )


def _scale(spec: Any, unit: str, label: str) -> Scale:
    if spec is None:
        if unit == "categorical":
            raise ConfigError(
                f"{label}: a categorical unit needs a discrete `scale`, e.g. "
                'scale = {type = "discrete", values = ["on-topic", "off-topic", "Unsure"]}'
            )
        return DEFAULT_SCALES[unit]
    scale = Scale.from_spec(spec, where=f"{label}: scale")
    if unit == "categorical" and scale.kind != "discrete":
        raise ConfigError(f"{label}: a categorical unit's scale must be discrete (its categories), not {scale.kind}")
    return scale


def _connection(value: Any, previous: Sequence[Layer], width: int, label: str) -> Connection | None:
    if not previous:
        if value is not None:
            raise ConfigError(f"{label}: the first layer has no earlier layer to connect to: remove `connection`")
        return None
    before = previous[-1]
    if value is None:
        return "chain" if before.repeat == width else "dense"
    if value not in CONNECTIONS:
        raise ConfigError(f"{label}: `connection` must be one of {', '.join(CONNECTIONS)}, not {value!r}")
    if value == "chain" and before.repeat != width:
        raise ConfigError(
            f'{label}: connection = "chain" shows unit i the answer of unit i of layer {before.name!r}, so both '
            f"layers need the same repeat ({before.repeat} there, {width} here)"
        )
    if value == "broadcast" and width % before.repeat:
        raise ConfigError(
            f'{label}: connection = "broadcast" gives each of the {before.repeat} unit(s) of layer '
            f"{before.name!r} an equal share of this layer's units, so this layer's repeat must be a multiple of "
            f"{before.repeat}, not {width}"
        )
    return cast("Connection", value)


def _pool(raw: Any, last: Layer, where: str) -> Pool:
    label = f"{where}: pool"
    if raw is None:
        return Pool()
    if isinstance(raw, str):
        raw = {"method": raw}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{label}: `pool` is a table (method, weights) or a method's name, not {raw!r}")
    _check_keys(raw, _POOL_KEYS, label)
    method = raw.get("method", "majority")
    if method not in POOL_METHODS:
        raise ConfigError(f"{label}: `method` must be one of {', '.join(POOL_METHODS)}, not {method!r}")
    raw_weights = raw.get("weights")
    weights: tuple[float, ...] | None = None
    if method == "weighted":
        if not isinstance(raw_weights, list) or len(raw_weights) != last.repeat:
            raise ConfigError(
                f"{label}: weighted pooling needs `weights`, a list of one number per unit of the last layer "
                f"({last.name!r} has {last.repeat})"
            )
        for weight in raw_weights:
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
                raise ConfigError(f"{label}: a weight must be a finite number, not {weight!r}")
            if weight < 0:
                raise ConfigError(f"{label}: a weight cannot be negative ({weight!r})")
        weights = tuple(float(weight) for weight in raw_weights)
        if sum(weights) <= 0:
            raise ConfigError(f"{label}: at least one weight must be above 0")
    elif raw_weights is not None:
        raise ConfigError(f'{label}: `weights` only go with method = "weighted"')
    scale = last.verdict_scale
    if method != "majority" and _integer_scale(scale):
        threshold = min(scale.passing)
        if any(value >= threshold and value not in scale.passing for value in scale.values):
            raise ConfigError(
                f"{label}: {method} pooling passes an item when the mean reaches the lowest passing value, so the "
                f"passing values of layer {last.name!r}'s scale must be its highest ones"
            )
    return Pool(cast("PoolMethod", method), weights)


# -- what a unit is asked -----------------------------------------------------------------------------------


def _system_message(layer: Layer) -> str:
    """The task and the scale, the same for every item (and every repeat: repeats differ by sample index)."""
    if layer.prompt is not None:
        instruction = layer.prompt
    elif layer.criteria is not None:
        instruction = f"{_CRITERIA_LEADS[layer.unit]}\n{layer.criteria}"
    else:
        instruction = _DEFAULT_INSTRUCTIONS[layer.unit]
    scale = f"Answer on this scale: {layer.scale.describe()}."
    if layer.scale == DEFAULT_SCALES.get(layer.unit):
        meaning = {
            "judge": "",
            "verify": " Answer true if the verdict under review is right, false if it is wrong.",
            "pairwise": ' Answer "A" if response A is better, "B" if response B is better.',
        }
        scale += meaning[layer.unit]
    elif layer.unit == "judge" and layer.scale.kind == "boolean":
        scale += " Answer true if the response meets the criteria, false if it does not."
    if layer.explanation:
        form = 'Reply with a JSON object {"explanation": "<your reasoning, briefly>", "score": <your answer>}.'
    else:
        form = 'Reply with a JSON object {"score": <your answer>}.'
    return f"{_ROLES[layer.unit]}\n\n{instruction}\n\n{scale}\n{form}"


def _word(verdict: bool | None) -> str:
    return "undecided" if verdict is None else ("pass" if verdict else "fail")


def _shown_layer(layer: Layer, units: Sequence[tuple[int, Answer, bool | None]]) -> str:
    about = f"{layer.unit} units; scale: {layer.scale.describe()}"
    if layer.criteria is not None:
        about += f"; criteria: {' '.join(layer.criteria.split())}"
    lines = [f'## Layer "{layer.name}" ({about})']
    for unit, answer, verdict in units:
        lines.append(f"### {layer.key(unit)}")
        if not answer.valid:
            lines.append(f"No usable answer ({answer.problem}).")
            continue
        shown = json.dumps(answer.value, ensure_ascii=False)
        if layer.unit == "verify":
            lines.append(f"Score: {shown} (so its verdict is {_word(verdict)})")
        else:
            lines.append(f"Score: {shown} ({_word(verdict)})")
        if answer.explanation:
            lines.append(f"Explanation: {answer.explanation.strip()}")
    return "\n".join(lines)


def _user_message(
    layer: Layer,
    item: JudgeItem,
    shown: Sequence[tuple[Layer, list[tuple[int, Answer, bool | None]]]],
    review: bool | None,
) -> str:
    parts = [f"# Input\n{item.input}"]
    if layer.unit == "pairwise":
        parts += [f"# Response A\n{item.output}", f"# Response B\n{item.reference}"]
    else:
        parts.append(f"# Response\n{item.output}")
    if shown:
        parts.append("# Earlier judgements\n\n" + "\n\n".join(_shown_layer(up, units) for up, units in shown))
    if review is not None:
        says = "passes" if review else "fails"
        parts.append(f"# Verdict under review\n{_word(review)}: the earlier judgements say the response {says}.")
    return "\n\n".join(parts)


# -- verdicts and pooling -----------------------------------------------------------------------------------


def _integer_scale(scale: Scale) -> bool:
    return scale.kind == "likert" or (scale.kind == "discrete" and all(isinstance(v, int) for v in scale.values))


def is_undecided(scale: Scale, value: Any) -> bool:
    """An answer that decides nothing ("Unsure", "tie", ...), unless the scale counts it as passing."""
    return (
        scale.kind == "discrete"
        and isinstance(value, str)
        and value.strip().casefold() in UNDECIDED
        and value not in scale.passing
    )


def _decision(scale: Scale, value: Any) -> bool | None:
    return None if is_undecided(scale, value) else scale.passes(value)


def _score(scale: Scale, value: Any) -> float | None:
    """A number to average: 1/0 for boolean, the value for Likert and integer categories, and for named
    categories (whose order means nothing) 1/0 for pass/fail, None for an undecided one."""
    if scale.kind == "boolean":
        return 1.0 if value else 0.0
    if _integer_scale(scale):
        return float(value)
    decision = _decision(scale, value)
    return None if decision is None else (1.0 if decision else 0.0)


def _threshold(scale: Scale) -> float:
    """The mean at or above which an item passes: the lowest passing value, or 0.5 for 1/0 scores."""
    return float(min(scale.passing)) if _integer_scale(scale) else 0.5


def _tie_order(scale: Scale, value: Any) -> tuple[int, int]:
    """Ties go to a failing value, then an undecided one, then a passing one; within those, the lowest."""
    decision = _decision(scale, value)
    rank = 0 if decision is False else (1 if decision is None else 2)
    return rank, scale.values.index(value)


def pool_values(pool: Pool, scale: Scale, values: Sequence[Any]) -> tuple[Any, float | None, bool | None]:
    """(pooled value, score, passed) of one item from its last-layer values in unit order (None: no usable
    answer). Majority: the most common value (ties: see :func:`_tie_order`); mean and weighted: the (weighted)
    mean of the scores, passing at :func:`_threshold`. All None when no unit gave a usable answer."""
    usable = [(unit, value) for unit, value in enumerate(values) if value is not None]
    if not usable:
        return None, None, None
    if pool.method == "majority":
        counts = Counter(value for _, value in usable)
        top = max(counts.values())
        chosen = min((value for value, count in counts.items() if count == top), key=lambda v: _tie_order(scale, v))
        return chosen, _score(scale, chosen), _decision(scale, chosen)
    scored = [(unit, _score(scale, value)) for unit, value in usable]
    weights = pool.weights or (1.0,) * len(values)
    pairs = [(weights[unit], score) for unit, score in scored if score is not None]
    total = math.fsum(weight for weight, _ in pairs)
    if total <= 0:
        return None, None, None
    mean = math.fsum(weight * score for weight, score in pairs) / total
    return round(mean, 6), mean, mean >= _threshold(scale) - 1e-12


def _majority_verdict(verdicts: Sequence[bool | None]) -> bool | None:
    """The verdict a verify unit checks: the majority of the verdicts it is shown (ties: fail)."""
    decided = [v for v in verdicts if v is not None]
    if not decided:
        return None
    return sum(decided) * 2 > len(decided)


# -- running ------------------------------------------------------------------------------------------------


class _Tracker:
    """Progress per answer, reported when the whole percentage moves (the daemon stores each report)."""

    def __init__(self, report: Progress | None, total: int) -> None:
        self.report = report
        self.total = max(total, 1)
        self.done = 0
        self.shown = -1
        self.error: BaseException | None = None

    def step(self, layer: str) -> None:
        self.done += 1
        percentage = 100.0 * self.done / self.total
        if self.report is None or self.error is not None or int(percentage) == self.shown:
            return
        self.shown = int(percentage)
        try:
            self.report(f"judging: layer {layer}, {self.done} of {self.total} answers", round(percentage, 1))
        except BaseException as error:  # the daemon cancels a job by raising from progress: stop the batch
            self.error = error


class _RunState:
    """The answers and verdicts so far, ``[layer][unit][item]``."""

    def __init__(
        self,
        pipeline: Pipeline,
        items: Sequence[JudgeItem],
        tracker: _Tracker,
        should_stop: Callable[[], bool] | None,
    ) -> None:
        self.pipeline = pipeline
        self.items = items
        self.tracker = tracker
        self.user_stop = should_stop
        self.stopped = False
        self.answers: list[list[list[Answer]]] = []
        self.verdicts: list[list[list[bool | None]]] = []

    def should_stop(self) -> bool:
        if self.tracker.error is not None:
            return True
        if self.user_stop is not None and self.user_stop():
            self.stopped = True
        return self.stopped

    def run_layer(self, pool: JudgeClients, index: int, sample_offset: int) -> None:
        pipeline, layer, items = self.pipeline, self.pipeline.layers[index], self.items
        system = _system_message(layer)
        stopping = self.should_stop()
        answers: list[list[Answer | None]] = [[None] * len(items) for _ in range(layer.repeat)]
        reviewed: list[list[bool | None]] = [[None] * len(items) for _ in range(layer.repeat)]
        questions: list[Question] = []
        slots: list[tuple[int, int]] = []
        for unit in range(layer.repeat):
            upstream = pipeline.upstream(index, unit)
            for k, item in enumerate(items):
                fixed = self._unasked(layer, item, stopping)
                review: bool | None = None
                if fixed is None and layer.unit == "verify":
                    review = _majority_verdict([self.verdicts[li][lu][k] for li, lu in upstream])
                    reviewed[unit][k] = review
                    if review is None:
                        fixed = Answer(problem="error", detail=_NOTHING_TO_VERIFY, attempts=0)
                if fixed is not None:
                    answers[unit][k] = fixed
                    self.tracker.step(layer.name)
                    continue
                shown: dict[int, list[tuple[int, Answer, bool | None]]] = {}
                for li, lu in upstream:
                    shown.setdefault(li, []).append((lu, self.answers[li][lu][k], self.verdicts[li][lu][k]))
                user = _user_message(layer, item, [(pipeline.layers[li], units) for li, units in shown.items()], review)
                questions.append(
                    Question(
                        ({"role": "system", "content": system}, {"role": "user", "content": user}),
                        layer.scale,
                        model=layer.model or pipeline.model,
                        temperature=layer.temperature if layer.temperature is not None else pipeline.temperature,
                        sample_index=sample_offset + unit,
                        explanation=layer.explanation,
                    )
                )
                slots.append((unit, k))
        got = ask_many(
            pool,
            questions,
            retries=layer.retries if layer.retries is not None else pipeline.retries,
            on_answer=lambda _index, _answer: self.tracker.step(layer.name),
            should_stop=self.should_stop,
        )
        if self.tracker.error is not None:
            raise self.tracker.error
        for (unit, k), answer in zip(slots, got, strict=True):
            answers[unit][k] = answer
        final = [[cast("Answer", answer) for answer in row] for row in answers]
        self.answers.append(final)
        self.verdicts.append(
            [[_verdict(layer, final[u][k], reviewed[u][k]) for k in range(len(items))] for u in range(layer.repeat)]
        )

    @staticmethod
    def _unasked(layer: Layer, item: JudgeItem, stopping: bool) -> Answer | None:
        if stopping:
            return Answer(problem="error", detail=_STOPPED, attempts=0)
        if layer.unit == "pairwise" and item.reference is None:
            return Answer(problem="error", detail=_NO_REFERENCE, attempts=0)
        return None

    def result(self) -> PipelineResult:
        pipeline = self.pipeline
        last = pipeline.layers[-1]
        scale = last.verdict_scale
        rows: list[ItemResult] = []
        for k, item in enumerate(self.items):
            answers = {
                layer.key(u): self.answers[li][u][k]
                for li, layer in enumerate(pipeline.layers)
                for u in range(layer.repeat)
            }
            verdicts = {
                layer.key(u): self.verdicts[li][u][k]
                for li, layer in enumerate(pipeline.layers)
                for u in range(layer.repeat)
            }
            if last.unit == "verify":
                values: list[Any] = [self.verdicts[-1][u][k] for u in range(last.repeat)]
            else:
                values = [a.value if a.valid else None for a in (self.answers[-1][u][k] for u in range(last.repeat))]
            value, score, passed = pool_values(pipeline.pool, scale, values)
            usable = sum(1 for v in values if v is not None)
            rows.append(ItemResult(item.id, answers, verdicts, value, score, passed, usable, item.label))
        return PipelineResult(pipeline, rows, stopped=self.stopped)


def _verdict(layer: Layer, answer: Answer, reviewed: bool | None) -> bool | None:
    """Pass, fail or undecided for one answer; a verify unit's verdict is the one it checked, kept when it
    confirms it and flipped when it rejects it."""
    if not answer.valid:
        return None
    decision = _decision(layer.scale, answer.value)
    if layer.unit != "verify":
        return decision
    if reviewed is None or decision is None:
        return None
    return reviewed if decision else not reviewed


# -- results ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ItemResult:
    """One item: every unit's answer and verdict (keyed ``layer/unit``), and the pooled value, score and
    verdict (None when no unit of the last layer gave a usable answer)."""

    id: str
    answers: dict[str, Answer]
    verdicts: dict[str, bool | None]
    value: Any
    score: float | None
    passed: bool | None
    usable: int  # usable answers of the last layer
    label: int | None = None

    def pooled_answer(self, pool: Pool) -> Answer:
        """The pooled result as an answer, for the store."""
        if self.score is None and self.value is None:
            return Answer(problem="error", detail="no unit of the last layer gave a usable answer", attempts=0)
        return Answer(value=self.value, explanation=f"{pool.method} of {self.usable} usable answer(s)", attempts=0)


@dataclass(frozen=True, slots=True)
class PipelineResult:
    pipeline: Pipeline
    items: list[ItemResult]
    stopped: bool = False

    def scores(self) -> list[float | None]:
        """The pooled score per item (see :func:`_score`; for mean and weighted pooling, the mean)."""
        return [row.score for row in self.items]

    def passed_list(self) -> list[bool | None]:
        return [row.passed for row in self.items]

    def summary(self, *, confidence: float) -> dict[str, Any]:
        """Scores, problems, alignment with human labels and per-item rows (the document's core; see
        ``docs/judges.md``)."""
        from spade_lsp.judges._agreement import agreement, positive_rate

        passed = self.passed_list()
        labels = [row.label for row in self.items]
        problems, warnings = _problems(self)
        return {
            "items": len(self.items),
            "scores": {
                "pool": self.pipeline.pool.method,
                "positive_rate": positive_rate(passed, confidence=confidence).to_json(),
                "undecided": sum(1 for p in passed if p is None),
                "mean": _mean_interval(
                    [s for s in self.scores() if s is not None], _score_range(self.pipeline), confidence
                ),
                "distribution": _distribution(self),
            },
            "problems": problems,
            "alignment": (
                agreement(passed, labels, confidence=confidence).to_json()
                if any(label is not None for label in labels)
                else None
            ),
            "rows": [_row(row) for row in self.items],
            "warnings": warnings,
            "fallbacks": self._fallbacks().to_json(),
        }

    def _fallbacks(self) -> Fallbacks:
        """Judge units whose answer was unusable after their re-asks: left out of the pooling, never fatal."""
        fallbacks = Fallbacks()
        for row in self.items:
            for key, answer in row.answers.items():
                if answer.problem is not None and answer.detail != _NO_REFERENCE:
                    fallbacks.add(f"judge unit {key}", answer.problem, "left its answer out of the pooling")
        return fallbacks


def _mean_interval(scores: Sequence[float], bounds: tuple[float, float], confidence: float) -> dict[str, Any]:
    """The mean pooled score with a t interval, clipped to the range scores can take (a t interval of 1/0
    scores can otherwise run past 0 or 1); None where it cannot be computed."""
    n = len(scores)
    out: dict[str, Any] = {"value": None, "ci_low": None, "ci_high": None, "n": n, "interval": "t"}
    if n == 0:
        return out
    mean = math.fsum(scores) / n
    out["value"] = round(mean, 6)
    if n > 1:
        from scipy import stats

        sd = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / (n - 1))
        half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
        out["ci_low"], out["ci_high"] = round(max(bounds[0], mean - half), 6), round(min(bounds[1], mean + half), 6)
    return out


def _score_range(pipeline: Pipeline) -> tuple[float, float]:
    scale = pipeline.layers[-1].verdict_scale
    if _integer_scale(scale):
        return float(min(scale.values)), float(max(scale.values))
    return 0.0, 1.0


def _value_key(value: Any) -> str:
    if value is None:
        return "none"
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _distribution(result: PipelineResult) -> dict[str, int]:
    """How often each pooled value came out (``none``: no usable answer), in the scale's order."""
    counts = Counter(_value_key(row.value) for row in result.items)
    scale = result.pipeline.layers[-1].verdict_scale
    if result.pipeline.pool.method == "majority":
        order = [_value_key(v) for v in scale.values] + ["none"]
        return {key: counts[key] for key in order if counts[key]}
    return dict(sorted(counts.items(), key=lambda kv: (kv[0] == "none", float(kv[0]) if kv[0] != "none" else 0.0)))


def _problems(result: PipelineResult) -> tuple[dict[str, Any], list[str]]:
    """Problem counts per layer, and units that never decided anything (flags, also as warnings)."""
    layers: dict[str, dict[str, int]] = {}
    flags: list[dict[str, str]] = []
    warnings: list[str] = []
    n = len(result.items)
    for layer in result.pipeline.layers:
        counts = dict.fromkeys(PROBLEMS, 0) | {"undecided": 0, "reasked": 0}
        for unit in range(layer.repeat):
            key = layer.key(unit)
            answers = [row.answers[key] for row in result.items]
            for answer in answers:
                if answer.problem is not None:
                    counts[answer.problem] += 1
                elif is_undecided(layer.scale, answer.value):
                    counts["undecided"] += 1
                if answer.attempts > 1:
                    counts["reasked"] += 1
            if result.stopped or not answers:
                continue
            usable = [a for a in answers if a.valid]
            if not usable:
                common = Counter(a.problem for a in answers).most_common(1)[0][0]
                detail = f"no usable answer on any of the {n} item(s) (mostly: {common})"
                flags.append({"unit": key, "flag": "never_usable", "detail": detail})
            elif all(is_undecided(layer.scale, a.value) for a in usable):
                said = ", ".join(sorted({json.dumps(a.value) for a in usable}))
                detail = f"answered {said} on every item it answered ({len(usable)} of {n})"
                flags.append({"unit": key, "flag": "always_undecided", "detail": detail})
        layers[layer.name] = counts
    warnings += [f"unit {flag['unit']}: {flag['detail']}" for flag in flags]
    unanswered = sum(1 for row in result.items if row.usable == 0)
    if unanswered:
        warnings.append(f"{unanswered} of {n} item(s) got no usable answer from the last layer (passed: null)")
    missing = sum(1 for row in result.items for a in row.answers.values() if a.detail == _NO_REFERENCE)
    if missing:
        warnings.append(f"{missing} pairwise answer(s) were not asked: the example has no `reference`")
    return {"layers": layers, "units": flags, "unanswered": unanswered}, warnings


def _row(row: ItemResult) -> dict[str, Any]:
    return {
        "id": row.id,
        "value": row.value,
        "score": None if row.score is None else round(row.score, 6),
        "passed": row.passed,
        "label": row.label,
        "units": {key: (a.value if a.valid else None) for key, a in row.answers.items()},
        "problems": [
            {"unit": key, "problem": a.problem, "detail": a.detail, "attempts": a.attempts}
            for key, a in row.answers.items()
            if a.problem is not None
        ],
    }


# -- in a workspace -----------------------------------------------------------------------------------------


def run_pipeline(
    workspace: Workspace,
    prompt: Path,
    pipeline: Pipeline,
    *,
    settings: Settings,
    client: LLMClient | JudgeClients | None = None,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Judge ``prompt``'s examples with ``pipeline``, store the run (every unit's answer and the pooled one)
    and return its document. A run that raises is stored as failed (cancelled for a cancelled job). ``settings``
    are the prompt's, resolved once by the caller; the judge is made from them unless ``client`` is given."""
    from spade_lsp.errors import JobCancelled
    from spade_lsp.judges._items import items_from_examples
    from spade_lsp.store import Judgement, finish_judge_run, save_judgements, start_judge_run

    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat()
    source = items_from_examples(workspace, prompt)
    base = client if client is not None else workspace.judge_client(settings)
    pool = base if isinstance(base, JudgeClients) else JudgeClients(base)
    usage = getattr(pool.default, "usage", None)
    before = usage.copy() if usage is not None else None
    store = workspace.store
    model = pipeline.model or pool.default.model
    parameters = {"pipeline": pipeline.to_spec(), "file": pipeline.source, "items": len(source.items)}
    run_id = start_judge_run(
        store,
        kind="pipeline",
        name=pipeline.name,
        parameters=parameters,
        prompt_id=source.prompt_id,
        version=source.version,
        model=model,
    )
    items = source.items

    def save(layer: Layer, answers: list[list[Answer]]) -> None:
        judgements = [
            Judgement(item.id, layer.key(unit), answers[unit][k], sample=unit)
            for unit in range(layer.repeat)
            for k, item in enumerate(items)
        ]
        save_judgements(store, run_id, judgements)

    try:
        result = pipeline.run(pool, items, on_progress=progress, should_stop=should_stop, on_layer=save)
        save_judgements(
            store, run_id, [Judgement(row.id, "pooled", row.pooled_answer(pipeline.pool)) for row in result.items]
        )
        summary = result.summary(confidence=settings.confidence)
        document: dict[str, Any] = {
            "run_id": run_id,
            "prompt": source.prompt_key,
            "version": source.version,
            "model": model,
            "started_at": started_at,
            "finished_at": datetime.now(UTC).isoformat(),
            "pipeline": {"name": pipeline.name, "file": pipeline.source, "spec": pipeline.to_spec()},
            **{key: value for key, value in summary.items() if key != "warnings"},
            "skipped": source.skipped,
            "stopped": result.stopped,
            "usage": usage.minus(before).to_json() if usage is not None and before is not None else None,
            "seconds": round(time.perf_counter() - started, 3),
            "warnings": [*source.warnings, *summary["warnings"]],
        }
    except BaseException as error:
        status = "cancelled" if isinstance(error, JobCancelled | KeyboardInterrupt) else "failed"
        finish_judge_run(
            store, run_id, status=status, error=str(error).splitlines()[0] if str(error) else type(error).__name__
        )
        raise
    finish_judge_run(store, run_id, status="cancelled" if result.stopped else "done", document=document)
    return document


# -- the report ---------------------------------------------------------------------------------------------


def _percent(rate: Mapping[str, Any] | None) -> str:
    if not rate or rate.get("rate") is None:
        return "n/a"
    return f"{100 * rate['rate']:.1f}% [{100 * rate['ci_low']:.1f}%, {100 * rate['ci_high']:.1f}%]"


def _number(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}"


def render_pipeline_report(document: Mapping[str, Any]) -> str:
    """The CLI's short table: rates with intervals, alignment and kappa, the confusion table, problems."""
    pipeline = document.get("pipeline") or {}
    scores = document.get("scores") or {}
    positive = scores.get("positive_rate") or {}
    lines = [
        f"pipeline {pipeline.get('name')} on {document.get('prompt')} (version {document.get('version')}): "
        f"{document.get('items')} item(s), pooled by {scores.get('pool')}",
        f"  positive rate  {_percent(positive)}  ({positive.get('successes')} of {positive.get('trials')} passed, "
        f"{scores.get('undecided', 0)} undecided)",
    ]
    mean = scores.get("mean") or {}
    interval = "" if mean.get("ci_low") is None else f" [{_number(mean['ci_low'])}, {_number(mean['ci_high'])}]"
    lines.append(f"  mean score     {_number(mean.get('value'))}{interval}  (n = {mean.get('n', 0)})")
    alignment = document.get("alignment")
    if alignment is None:
        lines.append("  alignment      n/a (no example has a human label)")
    else:
        kappa = alignment["kappa"]
        kappa_ci = "" if kappa.get("ci_low") is None else f" [{_number(kappa['ci_low'])}, {_number(kappa['ci_high'])}]"
        lines += [
            f"  alignment      {_percent(alignment['alignment'])}  over {alignment['labelled']} labelled "
            f"(decided only: {_percent(alignment['alignment_decided'])} over {alignment['decided']})",
            f"  kappa          {_number(kappa.get('value'))}{kappa_ci}",
            "  confusion      human good  human bad",
        ]
        for side in ("pass", "fail", "undecided"):
            cells = alignment["confusion"][side]
            lines.append(f"    judge {side:<9}  {cells['good']:>9}  {cells['bad']:>9}")
    problems = document.get("problems") or {}
    for name, counts in (problems.get("layers") or {}).items():
        found = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
        lines.append(f"  layer {name}: {found or 'no problems'}")
    for flag in problems.get("units") or []:
        lines.append(f"  ! {flag['unit']}: {flag['detail']}")
    usage = document.get("usage")
    if usage:
        cost = "" if usage.get("cost") is None else f", ${usage['cost']:.4f}"
        lines.append(f"  calls          {usage['calls']} ({usage['cached']} cached, {usage['failed']} failed){cost}")
    if document.get("seconds") is not None:
        lines.append(f"  time           {document['seconds']:.1f} s")
    return "\n".join(lines) + "\n"
