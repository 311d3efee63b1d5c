"""What a key is: its type, default, bounds, unit, help and rule (`ConfigKey`, judged by one function in the
same words on the laptop, in the trainer and in a script's launcher), how a sweep axis shows (`Axis`), what it
does to the prediction (`Effect`) and how a value is written back as a study file writes it (`toml_value`).

Standard library only: the cockpit's study layer declares its tables ([study], [cluster], [site]) with it,
runcontract.axes the sweep axes every run records, and each workload its own keys (the HLM trainer's
trainer/config_keys/, a script's [workload.keys]).
"""

from __future__ import annotations

import difflib
import math
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

_WORDS = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list",
          dict: "a table"}


@dataclass(frozen=True)
class Axis:
    """How a sweep axis shows: its column header (unit included), the names the filter takes for it (the
    header's word first), its tag in the configuration label ("w{}" -> `w256`) and its header where columns
    are short (`cockpit plan`'s table)."""

    header: str
    names: tuple[str, ...]
    tag: str = "{}"
    words: str = "{}"  # a value in a sentence: "window 256", "4 CPUs/task"
    short: str = ""  # "" : the header
    scale: bool = False  # gpus_per_node, nodes: their product is a run's N
    # The first eight axes are `core`: every configuration id and label has carried them from the start. An axis
    # added later is not: it enters a configuration's id and label only when set away from its default, so the
    # ids of existing stores, run directories and batch scripts survive a new axis (docs/architecture.md).
    core: bool = False
    hlm: bool = False  # the HLM's own data and objective (dataset, mode, window): a script workload never takes it


EFFECT_MODELS = ("formula", "recorded", "neutral", "none", "identity")


@dataclass(frozen=True)
class Effect:
    """What the scaling prediction (cockpit.forecast.advice) does with a key of config.json, declared on the key
    so that a key cannot be left out or misspelt. ``model``: "formula" (a formula of docs/prediction.md),
    "recorded" (only from a recorded baseline with the value: no formula across values), "neutral" (assumed not to
    change the time of a step: outside T or only the numbers change), "none" (not predicted: a change reads "the
    model has no formula for KEY") or "identity" (names the run rather than describes it: never a difference
    between two runs). ``terms``: the loss terms it acts on; ``effect``: the formula in words."""

    model: str
    terms: tuple[str, ...] = ()
    effect: str = ""

    def __post_init__(self) -> None:
        assert self.model in EFFECT_MODELS, f"effect model {self.model!r} is not one of {EFFECT_MODELS}"


NOT_PREDICTED = Effect("none")
NEUTRAL = Effect("neutral")
RECORDED = Effect("recorded")
NAMES_RUN = Effect("identity")


@dataclass(frozen=True)
class ConfigKey:
    """One key. ``kind`` holds the accepted types (a float key takes an integer too); ``default`` None means
    unset (optional, or worked out: see ``help``). Bounds: ``minimum`` <= value <= ``maximum``, ``above`` <
    value < ``below``. ``top_level``: config.json keeps it beside "model" and "train" (a sweep axis)."""

    section: str  # the study table: model, train, sweep, study, cluster, data, dataset, tokenizer, run
    name: str
    kind: tuple[type, ...]
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    above: float | None = None
    below: float | None = None
    unit: str = ""
    top_level: bool = False
    study: bool = True  # settable in a study file (False: config.json or test hooks only)
    flag: str | None = None  # the `hlm-train` flag without "--" ("" : none; None: the name with dashes)
    required: bool = False
    axis: Axis | None = None
    tokenizers: tuple[str, ...] = ()  # a tokenizer key: the tokenizers that read it
    rule: Callable[[Any], bool] | None = None  # a rule the bounds cannot say; `expected` words it
    expected_words: str = ""
    resume: bool = False  # a checkpoint written under another value is not resumed (trainer.run.checkpoint)
    windows: bool = False  # decides the test windows: an ensemble's members must agree (trainer.commands.ensemble)
    effect: Effect | None = None  # a config.json key: what the prediction does with it (every one declares it)

    @property
    def dest(self) -> str:
        """Where config.json holds it: "window" or "train.lr"."""
        return self.name if self.top_level else f"{self.section}.{self.name}"

    @property
    def flag_name(self) -> str:
        return self.name.replace("_", "-") if self.flag is None else self.flag

    @property
    def expected(self) -> str:
        """What a value must be, in the words every refusal uses: `an integer >= 2`, `a number in [0, 1)`."""
        if self.expected_words:
            return self.expected_words
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        what = " or ".join(_WORDS.get(t, t.__name__) for t in self.kind)
        lo = f"[{self.minimum:g}" if self.minimum is not None else f"({self.above:g}" if self.above is not None else None
        hi = f"{self.maximum:g}]" if self.maximum is not None else f"{self.below:g})" if self.below is not None else None
        if lo and hi:
            return f"{what} in {lo}, {hi}"
        if lo:
            return f"{what} {'>=' if lo[0] == '[' else '>'} {lo[1:]}"
        if hi:
            return f"{what} {'<=' if hi[-1] == ']' else '<'} {hi[:-1]}"
        return what

    def accepts_type(self, value: Any) -> bool:
        if isinstance(value, bool):
            return bool in self.kind
        if isinstance(value, int) and float in self.kind:
            return True
        return isinstance(value, self.kind)

    def problem(self, value: Any) -> str | None:
        """None when the value is allowed, else `expected <what>, got <value>` (None is unset: allowed)."""
        if value is None:
            return None
        if not self.accepts_type(value):
            return f"expected {self.expected}, got {value!r}"
        ok = True
        if self.choices is not None:
            ok = value in self.choices
        elif isinstance(value, int | float) and not isinstance(value, bool):
            ok = math.isfinite(value) and (
                (self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum)
                and (self.above is None or value > self.above) and (self.below is None or value < self.below))
        if ok and self.rule is not None:
            ok = self.rule(value)
        return None if ok else f"expected {self.expected}, got {value!r}"


def nearest(name: str, known: typing.Iterable[str]) -> str:
    """The words every refusal of an unknown key ends with: the nearest known key, where one is near."""
    near = difflib.get_close_matches(name, sorted(known), n=1)
    return f"did you mean {near[0]!r}?" if near else "see docs/study-keys.md"


def judge_table(where: str, prefix: str, values: dict[str, Any], keys: dict[str, ConfigKey],
                error: type[Exception]) -> dict[str, Any]:
    """Every key of one table (a study file's, a site profile's) judged by its rule, in one set of words:
    unknown keys refused with the nearest known one, required keys demanded, defaults filled in. Raises
    `error` naming `where` and `prefix.key`."""
    unknown = sorted(set(values) - set(keys))
    if unknown:
        raise error(f"{where}: {prefix}.{unknown[0]} is not a known key ({nearest(unknown[0], keys)}); expected one "
                    f"of {', '.join(keys)}")
    out: dict[str, Any] = {}
    for name, k in keys.items():
        if name not in values:
            if k.required:
                raise error(f"{where}: {prefix}.{name} is required")
            out[name] = k.default
            continue
        problem = k.problem(values[name])
        if problem:
            raise error(f"{where}: {prefix}.{name}: {problem}")
        out[name] = values[name]
    return out


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)



def key(default: Any = None, help: str = "", **rules: Any) -> Any:
    """A field of a section dataclass with its rules (ConfigKey's fields, minus section, name and kind); a list
    or table default is copied for each instance."""
    metadata = {"rules": {"help": help, **rules}}
    if isinstance(default, list | dict):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def _kind(hint: Any) -> tuple[type, ...]:
    """`int | None` -> (int,); `int | str` -> (int, str); `float` -> (float,)."""
    args = typing.get_args(hint)
    kinds = tuple(a for a in args if a is not type(None)) if args else (hint,)
    return tuple(typing.get_origin(k) or k for k in kinds)


def keys_of(section: str, cls: type, **common: Any) -> tuple[ConfigKey, ...]:
    """The ConfigKeys of a section dataclass, in field order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in fields(cls):
        rules: dict[str, Any] = dict(f.metadata.get("rules", {}))
        default = f.default_factory() if f.default_factory is not MISSING else None if f.default is MISSING else f.default
        out.append(ConfigKey(section, f.name, _kind(hints[f.name]), default, **{**common, **rules}))
    return tuple(out)


def toml_value(value: Any) -> str:
    """A value as a study file (and `--what-if`, and docs/study-keys.md) writes it: `"fp32"`, `true`,
    `0.0003`, `5.0`, `[1, 2]`, `{a = 1}`; "unset" for None (a key a study does not set)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float):
        return f"{value:g}" if value == value and not value.is_integer() else f"{value:.1f}"
    return str(value)
