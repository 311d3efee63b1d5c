"""Every key a study can say, declared once: type, default, bounds, unit, help, and for a sweep axis how it
shows (table column, filter names, configuration label). torchtitan keeps one JobConfig; this is ours.

The trainer's own sections ([model], [train] and the sweep axes) are dataclasses whose fields carry their rules
(`key(...)`): `trainer.settings.Settings` nests them, typed, and `trainer.model.ModelConfig` takes the [model]
table's defaults. The rest of a study file ([study], [cluster], [data], a dataset's table, a tokenizer table)
are tables of the same `ConfigKey`. Everything else is derived from here: the study spec (cockpit.study.spec), the
plan, config.json (trainer.settings), the flags of `hlm-train train` and `prepare` (trainer.config_flags), the
configuration label, the TUI's and the report's columns and the filter's field names. A value is judged by
one function, `ConfigKey.problem`, on the laptop and in the trainer, in the same words. Pure Python (the
cockpit imports it; no torch).

Long because it is a table, one entry per key; the machinery above the tables is short.
"""

from __future__ import annotations

import difflib
import math
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Any

MODES = ("foundation", "finetune")
PRECISIONS = ("fp32", "bf16", "fp16")
DEVICES = ("auto", "cpu", "cuda")
TASKS = ("beat", "rhythm")
CONTEXTS = ("none", "rr", "rr_rhythm", "rr_af", "rr_af_lock", "rr_af_lock_sinus")  # tokens before each window: trainer.data.rr_context
WAVEFORMS = ("raw", "diff", "both")  # what a samples window holds: trainer.data.beat_template
POOLS = ("mean", "centre")  # trainer.model
CLASS_WEIGHTS = ("balanced", "sqrt", "none")
STRATEGIES = ("ddp", "zero1", "fsdp", "fsdp_noreshard")  # data parallelism: trainer.parallel, docs/strategies.md
# what each strategy keeps only a 1/N share of on a worker (the trainer's result.json and the cockpit's prediction)
STRATEGY_SHARDS: dict[str, tuple[str, ...]] = {"ddp": (), "zero1": ("optimizer",),
                                               "fsdp": ("params", "grads", "optimizer"),
                                               "fsdp_noreshard": ("params", "grads", "optimizer")}
TOKENIZERS = ("samples", "beats")
# what annotator "auto" tries after a database's ANNOTATORS list, in order (trainer.data.records.auto_annotators)
ANNOTATOR_PREFERENCE = ("atr", "ari")
N_SPECIAL = 4  # pad, mask, cls, sep: trainer.data.tokenizer_keys.SPECIAL_TOKENS

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
    resume: bool = False  # a checkpoint written under another value is not resumed (trainer.checkpoint)
    windows: bool = False  # decides the test windows: an ensemble's members must agree (trainer.ensemble)
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


FLOOR = re.compile(r"^\s*([A-Za-z]\w*)\s*=\s*([0-9.]+)\s*$")


def sensitivity_floors(entries: list[Any]) -> dict[str, float] | None:
    """train.calibrate_min_sensitivity's entries (`S=0.8`) as {class: floor}; None when one is not CLASS=FLOOR with
    a floor in (0, 1] or a class is named twice."""
    floors: dict[str, float] = {}
    for entry in entries:
        m = FLOOR.match(str(entry))
        try:
            floor = float(m[2]) if m else math.nan
        except ValueError:
            return None
        if not m or not 0 < floor <= 1 or m[1] in floors:
            return None
        floors[m[1]] = floor
    return floors or None


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


# --- the trainer's sections: dataclasses that trainer.settings.Settings nests ---------------------------------

@dataclass(frozen=True)
class ModelKeys:
    """[model]: the architecture (config.json "model")."""

    layers: int = key(4, "transformer layers", minimum=1, resume=True, effect=NOT_PREDICTED)
    d_model: int = key(128, "width of the model (divisible by heads)", minimum=8, resume=True, effect=NOT_PREDICTED)
    heads: int = key(4, "attention heads", minimum=1, resume=True, effect=NOT_PREDICTED)
    dropout: float = key(0.0, "dropout probability", minimum=0, below=1, effect=NOT_PREDICTED)
    context: str = key("none", "'rr': RR-interval tokens of the centre beat before each window; 'rr_rhythm': "
                       "the same and the rhythm's irregularity over 64 beats; 'rr_af': the same RR tokens and "
                       "the irregularity no repeating pattern explains (atrial fibrillation's); 'rr_af_lock': "
                       "those and the AF evidence, that irregularity where no P wave keeps time with the QRS "
                       "(samples tokenizer); 'rr_af_lock_sinus': those and the interval before the beat against the "
                       "patient's sinus interval (the longest intervals around it)", choices=CONTEXTS,
                       resume=True, windows=True, effect=NOT_PREDICTED)
    waveform: str = key("raw", "samples windows as tokenized ('raw'), minus the patient's template beat "
                        "('diff'), or the window followed by its difference ('both': twice the tokens)",
                        choices=WAVEFORMS, resume=True, windows=True, effect=NOT_PREDICTED)
    pool: str = key("mean", "fine-tune head input: 'mean' over positions or the 'centre' beat's", choices=POOLS,
                    resume=True, effect=NOT_PREDICTED)


@dataclass(frozen=True)
class AxisKeys:
    """The sweep axes: a configuration is one value of each. config.json keeps them at its top level; a study
    sweeps them in [sweep] and sets the default of those in [train] there. The field order is the matrix's."""

    dataset: str = key("synthetic", "the dataset's name in [data.datasets] (standalone: the data folder's name)",
                       study=False,
                       axis=Axis("dataset", ("dataset",), short="data", core=True, hlm=True), windows=True, effect=RECORDED)
    mode: str = key("foundation", "foundation (masked-span prediction) or finetune (classification)",
                    choices=MODES, axis=Axis("mode", ("mode",), core=True, hlm=True), resume=True, windows=True, effect=RECORDED)
    window: int = key(256, "tokens per training window", minimum=2, unit="tokens",
                      axis=Axis("window", ("window", "w"), "w{}", "window {}", short="w", core=True, hlm=True), resume=True, windows=True, effect=RECORDED)
    precision: str = key("fp32", "numeric precision of the forward pass", choices=PRECISIONS,
                         axis=Axis("precision", ("prec", "precision"), short="prec", core=True), effect=Effect("recorded", ("compute",)))
    batch_size: int = key(32, "windows per worker per step", minimum=1, unit="windows",
                          axis=Axis("batch", ("batch", "batch_size"), "b{}", "batch {}", short="b", core=True), resume=True, effect=Effect("formula", ("comm", "optimizer", "other"), "f = b'/b: data wait and compute per step x f, optimizer, other and all-reduce per step as the baseline's, steps / f"))
    cpus_per_task: int | None = key(None, "CPU cores per worker (default: SLURM_CPUS_PER_TASK, else 1; a "
                                    "study's matrix uses 1)", minimum=1, unit="cores",
                                    axis=Axis("CPUs/task", ("cpus", "cpus/task", "cpus_per_task", "cpu"), "c{}",
                                              "{} CPUs/task", short="c", core=True), effect=Effect("recorded", ("compute", "data_wait"), "only from a recorded baseline with that many cores per task"))
    strategy: str = key("ddp", "data parallelism: ddp (a full replica per worker), zero1 (optimizer state "
                        "sharded), fsdp (parameters, gradients and optimizer state sharded), fsdp_noreshard (fsdp "
                        "keeping the gathered parameters from forward to backward)", choices=STRATEGIES,
                        resume=True, axis=Axis("strategy", ("strategy", "strat"), short="strat"), effect=Effect("formula", ("comm", "optimizer"), "per step ddp 2(N-1)/N G all-reduced; zero1 the same plus (N-1)/N P broadcast; fsdp 3(N-1)/N P all-gathered twice and reduce-scattered (fsdp_noreshard 2); memory per rank params, grads, optimizer state / N where sharded"))
    gpus_per_node: int = key(1, "workers (GPUs) per node", minimum=1, study=False, flag="",
                             axis=Axis("GPUs/node", ("gpus", "gpus_per_node", "gpus/node"), scale=True, core=True), effect=Effect("formula", ("comm",), "N workers: ring all-reduce over the link the run spans"))
    nodes: int = key(1, "nodes", minimum=1, study=False, flag="", axis=Axis("nodes", ("nodes",), scale=True, core=True), effect=Effect("formula", ("comm",), "N workers: the inter-node link once nodes > 1"))


@dataclass(frozen=True)
class TrainKeys:
    """[train]: the run (config.json "train")."""

    steps: int | None = key(None, "optimizer steps (give steps or epochs)", minimum=1, resume=True, effect=Effect("formula", (), "samples x steps'/steps"))
    epochs: float | None = key(None, "passes over the training split (give steps or epochs)", above=0, resume=True, effect=Effect("formula", (), "samples x epochs'/epochs"))
    lr: float = key(3e-4, "peak learning rate (AdamW)", above=0, resume=True, effect=NEUTRAL)
    weight_decay: float = key(0.01, "AdamW weight decay", minimum=0, effect=NEUTRAL)
    warmup_steps: int = key(0, "linear warm-up steps", minimum=0, resume=True, effect=NEUTRAL)
    seed: int = key(0, "random seed", resume=True, effect=NEUTRAL)
    grad_accum: int = key(1, "micro-batches per optimizer step", minimum=1, resume=True, effect=Effect("formula", ("comm", "optimizer", "other"), "f = a'/a micro-batches per step: as batch_size"))
    compile: bool = key(False, "torch.compile the model", effect=NOT_PREDICTED)
    device: str = key("auto", "where to train: auto takes a GPU when there is one", choices=DEVICES, effect=NOT_PREDICTED)
    metrics_interval_s: float = key(5.0, "seconds between metrics.jsonl records", above=0, unit="s", effect=NEUTRAL)
    nvml_interval_ms: int = key(500, "milliseconds between GPU samples (gpu.jsonl)", minimum=10, unit="ms", effect=NEUTRAL)
    eval: bool = key(True, "evaluate on the test split at the end", effect=NEUTRAL)
    task: str = key("beat", "fine-tune labels: beat classes or rhythm classes", choices=TASKS, resume=True,
                    windows=True, effect=NOT_PREDICTED)
    init_checkpoint: str | None = key(None, "weights to start from (a fine-tune: its foundation's model.pt)", effect=NEUTRAL)
    mask_ratio: float = key(0.15, "foundation: share of tokens masked", above=0, below=1, resume=True, effect=NOT_PREDICTED)
    mask_span: int = key(8, "foundation: tokens per masked span", minimum=1, resume=True, effect=NOT_PREDICTED)
    num_workers: int | None = key(None, "DataLoader workers (default: cpus_per_task - 1)", minimum=0, effect=Effect("none", ("data_wait",)))
    grad_clip: float = key(1.0, "gradient norm clip (0 = off)", minimum=0, effect=NOT_PREDICTED)
    class_weights: str = key("balanced", "fine-tune loss weights per class", choices=CLASS_WEIGHTS, effect=NOT_PREDICTED)
    augment_noise_db: list | None = key(None, "fine-tune: also train on noisy versions of the training records, one "
                                        "per signal-to-noise ratio given (the tokenizer's motion noise, "
                                        "trainer/data/noise.py); validation and test stay clean", unit="dB",
                                        rule=lambda v: all(_finite_number(x) for x in v),
                                        expected_words="a list of signal-to-noise ratios in dB, e.g. [18, 12, 6]",
                                        effect=NOT_PREDICTED)
    augment_share: float = key(0.5, "fine-tune with augment_noise_db: share of the training windows drawn, anew "
                               "each epoch, from a noisy version (the levels equally often)", above=0, maximum=1,
                               effect=NOT_PREDICTED)
    context_dropout: float = key(0.0, "fine-tune with model.context: share of the training windows whose context "
                                 "tokens are hidden (the mask token), drawn anew each epoch, so the class is also "
                                 "learnt from the waveform; validation and test see every token", minimum=0, below=1,
                                 effect=NOT_PREDICTED)
    af_group: bool = key(False, "fine-tune, beat classes: N beats inside atrial fibrillation or flutter (the records' "
                         "rhythm annotations) weigh in the loss as a group of their own, with its own class weight; "
                         "they stay N everywhere else (needs class weights)", effect=NOT_PREDICTED)
    val_fraction: float = key(0.0, "fine-tune: share of training patients held out for validation", minimum=0,
                              below=1, resume=True, effect=NOT_PREDICTED)
    val_records: list | None = key(None, "fine-tune: the validation part by name: these training records and every "
                                   "other record of their patients, instead of val_fraction's evenly spaced share "
                                   "(names as the split gives them, e.g. 201 or svdb/854)", resume=True,
                                   rule=lambda v: len(v) > 0 and all(isinstance(x, str | int) for x in v),
                                   expected_words="a non-empty list of record names, e.g. [\"201\", \"203\"]",
                                   effect=NOT_PREDICTED)
    label_fraction: float = key(1.0, "fine-tune: share of the training patients (validation's apart) whose labels "
                                "it trains on, evenly spaced: label efficiency", above=0, maximum=1, resume=True,
                                effect=NOT_PREDICTED)
    val_every: int = key(200, "fine-tune: validate every this many steps (and after the last)", minimum=1, resume=True, effect=NOT_PREDICTED)
    patience: int = key(0, "fine-tune: stop after this many validations without a better macro-F1 (0 = never)",
                        minimum=0, effect=NOT_PREDICTED)
    calibrate: bool = key(False, "fine-tune: after training, move the class head's bias by -a x log(class weight), "
                          "a in 0..1 chosen on the validation part's macro-F1, for the classes it holds 100 beats of "
                          "(needs val_fraction or val_records, and class weights)", effect=NOT_PREDICTED)
    calibrate_min_sensitivity: list | None = key(
        None, "fine-tune with calibrate: sensitivity floors on the validation part, CLASS=FLOOR each (e.g. S=0.8): the "
        "decision kept is the best macro-F1 among those whose validation sensitivity reaches every floor, else the one "
        "nearest them, said in train.log", rule=lambda v: sensitivity_floors(v) is not None,
        expected_words="a list of CLASS=FLOOR entries, each class once, each floor above 0 and at most 1, e.g. "
        "[\"S=0.8\", \"V=0.9\"]", effect=NOT_PREDICTED)
    bucket_cap_mb: float | None = key(None, "DDP gradient bucket size in MB (default: DDP's 25)", above=0,
                                      unit="MB", effect=Effect("formula", ("comm",), "DDP buckets k = ceil(G / cap): exposed all-reduce max(t_ar / k, t_ar - backward)"))
    # torch.profiler, torchtitan-style: cycles of wait, warmup and active steps (torch.profiler.schedule), each
    # recorded into traces/ per rank; unset profile_active = no profiler at all (docs/training.md, "Profiling")
    profile_active: int | None = key(None, "torch.profiler: steps recorded per cycle into traces/ of the run "
                                     "directory, one Chrome trace per rank (default: no profiling)", minimum=1, effect=NOT_PREDICTED)
    profile_wait: int | None = key(None, "torch.profiler: steps left alone before each cycle (default 1: the "
                                   "first step holds loader start and compilation)", minimum=0, effect=NOT_PREDICTED)
    profile_warmup: int | None = key(None, "torch.profiler: steps run under the profiler and discarded before "
                                     "the recorded ones (default 1)", minimum=0, effect=NOT_PREDICTED)
    profile_repeat: int | None = key(None, "torch.profiler: cycles to record (default 1; 0 = until the run ends)",
                                     minimum=0, effect=NOT_PREDICTED)
    # test hooks: make one rank slower by a host sleep inside each step's compute (a known straggler)
    test_slow_rank: int | None = key(None, "test only: the rank that sleeps", study=False, flag="", effect=NOT_PREDICTED)
    test_slow_step_s: float = key(0.0, "test only: its sleep per step", minimum=0, study=False, flag="", effect=NOT_PREDICTED)


def is_group_name(v: Any) -> bool:
    """A Unix group name as sites make them (it reaches chgrp in the batch script): letters, digits, '_', '-',
    '.', not starting with '-', at most 32 characters."""
    return isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}", v) is not None


@dataclass(frozen=True)
class RunKeys:
    """The run's identity in config.json, written by the cockpit (not a study key)."""

    schema_version: int | None = key(None, "the run directory's schema version (trainer.rundir.SCHEMA_VERSION)",
                                     study=False, flag="", effect=NAMES_RUN)
    study: str = key("", "the study's name", study=False, flag="", effect=NAMES_RUN)
    study_id: str | None = key(None, "the study name's digest (Slurm job names and comments carry it)",
                               study=False, flag="", effect=NAMES_RUN)
    config_id: str = key("standalone", "the configuration's digest", study=False, flag="", effect=NAMES_RUN)
    group_id: str = key("standalone", "its scale group's digest", study=False, flag="", effect=NAMES_RUN)
    share_group: str | None = key(None, "the Unix group the run's files are shared with ([cluster].share_group); "
                                  "unset: private to the owner (0700 / 0600)", study=False, flag="",
                                  rule=is_group_name, expected_words="a Unix group name", effect=NAMES_RUN)
    launch: dict | None = key(None, "how the job started: [cluster]'s container, python, modules and env (the "
                              "cockpit compares a finished run's with what the study asks now)", study=False, flag="",
                              effect=NAMES_RUN)


def _preflight_files(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(p, str) and p for p in v)


def _preflight_datasets(v: Any) -> bool:
    """{name: {path, synthetic, tokenizer}}: the datasets a preflight checks, as job_config writes them."""
    return all(isinstance(spec, dict) and set(spec) <= {"path", "synthetic", "tokenizer"}
               and isinstance(spec.get("path"), str | None) and isinstance(spec.get("synthetic", False), bool)
               and isinstance(spec.get("tokenizer", {}), dict) for spec in v.values())


@dataclass(frozen=True)
class PreflightKeys:
    """A preflight job's config.json: cockpit.preflight.jobs.job_config writes it and judges what it wrote by these
    keys, `hlm-train preflight` reads it by the same keys (check_preflight_config)."""

    schema_version: int = key(None, "the run directory's schema version", minimum=1, required=True)
    preflight: bool = key(True, "marks a preflight's config.json", required=True)
    study: str = key("", "the study's name", required=True)
    nodes: int = key(1, "nodes the job spans", minimum=1)
    gpus_per_node: int = key(1, "workers per node", minimum=1)
    cpus_per_task: int = key(1, "CPU cores per worker", minimum=1, unit="cores")
    device: str = key("auto", "where the job probes: auto takes a GPU when there is one", choices=DEVICES)
    datasets: dict = key({}, "each dataset the study trains on, to check where the job runs",
                         rule=_preflight_datasets,
                         expected_words="a table of dataset name = {path, synthetic, tokenizer}")
    workdir: str | None = key(None, "where the study's runs write (its free space is read)")
    token_cache: str | None = key(None, "the token shard root (its free space is read)")
    probe_bytes: int = key(8 * 2**20, "bytes the link probe all-reduces", minimum=4, unit="B")
    timeout_s: float = key(300.0, "seconds the ranks wait for each other", above=0, unit="s")
    share_group: str | None = key(None, "the Unix group the job's files are shared with (unset: private)",
                                  rule=is_group_name, expected_words="a Unix group name")
    files: list | None = key(None, "a script workload's script and files, checked readable where the job runs",
                             rule=_preflight_files, expected_words="a list of paths")


def _folders(v: Any) -> bool:
    return bool(v) and all(isinstance(p, str) and p for p in v)


@dataclass(frozen=True)
class DataKeys:
    """The data keys of config.json, written by the cockpit from the study's [data] tables."""

    data_path: str | None = key(None, "a PhysioNet-style folder (RECORDS file or *.hea); unset: synthetic",
                                study=False, flag="data", windows=True, effect=NOT_PREDICTED)
    train_data: list | None = key(None, "further PhysioNet-style folders whose every record trains (validation "
                                  "included), never tests; tokenized like data_path, resampled to tokenizer.fs",
                                  study=False, windows=True, rule=_folders,
                                  expected_words="a non-empty list of folder paths", effect=NOT_PREDICTED)
    synthetic: bool = key(False, "the built-in generator's ECG (no data_path)", study=False, flag="", effect=NOT_PREDICTED)
    tokenizer: dict = key(None, "the tokenizer table (see TOKENIZER_KEYS)", study=False, flag="", windows=True, effect=NOT_PREDICTED)
    token_cache: str | None = key(None, "token cache root", study=False, effect=NAMES_RUN)
    prepare_workers: int = key(1, "processes tokenizing, one record each at a time", minimum=1, study=False,
                               flag="", effect=NEUTRAL)
    synthetic_params: dict | None = key(None, "the generator's records, seconds and seed", study=False, flag="",
                                        windows=True, effect=NOT_PREDICTED)
    skip_bad_records: bool = key(False, "leave out bad records (listed with their reason in the manifest and "
                                 "train.log)", study=False, flag="", windows=True, effect=NOT_PREDICTED)
    split: dict | None = key(None, "{test_records: [...]} or {patient_pattern: ...}; unset: the default split",
                             study=False, flag="", windows=True, effect=NOT_PREDICTED)


def _is_annotator(v: Any) -> bool:
    return v.replace("_", "").isalnum()


# the tokenizer table ([data.tokenizer], a dataset's tokenizer, config.json "tokenizer"); trainer.data.
# tokenizer_keys validates a whole table with these (plus rr_max_ms > rr_min_ms)
_S, _B = ("samples",), ("beats",)
_TOKENIZER: tuple[tuple[str, tuple[type, ...], Any, dict[str, Any]], ...] = (
    ("name", (str,), "samples", {"help": "samples (one token per sample) or beats (one per beat)",
                                 "choices": TOKENIZERS, "flag": "tokenizer"}),
    ("vocab", (int,), 256, {"help": "samples: amplitude bins", "minimum": 2, "maximum": 65535 - N_SPECIAL,
                            "tokenizers": _S}),
    ("quantizer", (str,), "mulaw", {"help": "samples: uniform or mulaw bins", "choices": ("uniform", "mulaw"),
                                    "tokenizers": _S}),
    ("mu", (float,), 15, {"help": "samples: mu-law compression", "above": 0, "tokenizers": _S}),
    ("lead", (int, str), 0, {"help": "samples: lead index or name", "tokenizers": _S,
                             "expected_words": "a lead index or name"}),
    ("fs", (float,), 360, {"help": "samples: resample to this rate (0 keeps each record's)", "minimum": 0,
                           "unit": "Hz", "tokenizers": _S,
                           "expected_words": "a sampling rate in Hz (0 keeps each record's own)"}),
    ("clip_percentile", (float,), 0.1, {"help": "samples: amplitude percentile clipped at each end",
                                        "minimum": 0, "below": 50, "tokenizers": _S}),
    ("margin", (float,), 0.1, {"help": "samples: headroom beyond the clipped range", "minimum": 0, "maximum": 10,
                               "tokenizers": _S}),
    ("highpass_hz", (float,), 0.0, {"help": "samples: remove baseline wander below this frequency (0 = off)",
                                    "minimum": 0, "below": 20, "unit": "Hz", "tokenizers": _S, "flag": "highpass",
                                    "expected_words": "a cut-off in Hz in [0, 20) (0 = off)"}),
    ("noise_snr_db", (float,), None, {"help": "samples: add electrode-motion-like noise at this signal-to-noise "
                                              "ratio (the Noise Stress Test's definition; trainer/data/noise.py); "
                                              "unset: none", "unit": "dB", "tokenizers": _S, "flag": "noise-snr",
                                      "expected_words": "a signal-to-noise ratio in dB"}),
    ("noise_seed", (int,), 0, {"help": "samples: which draw of the noise (the same seed, the same noisy record)",
                               "minimum": 0, "tokenizers": _S}),
    ("annotator", (str,), "auto", {"help": "annotation file extension (atr, ari, qrs, ...); auto tries the "
                                           "extensions of the folder's ANNOTATORS file in its order, then "
                                           + ", then ".join(ANNOTATOR_PREFERENCE) + ", and stops at the first "
                                           "the record has",
                                   "tokenizers": ("samples", "beats"), "rule": _is_annotator,
                                   "expected_words": "an annotator extension such as 'atr', 'ari' or 'auto'"}),
    ("rr_bins", (int,), 16, {"help": "beats: RR-interval bins", "minimum": 2, "maximum": 4096, "tokenizers": _B}),
    ("rr_min_ms", (float,), 200, {"help": "beats: shortest RR interval binned", "above": 0, "unit": "ms",
                                  "tokenizers": _B}),
    ("rr_max_ms", (float,), 2000, {"help": "beats: longest RR interval binned (above rr_min_ms)", "above": 0,
                                   "unit": "ms", "tokenizers": _B}),
    ("records", (list,), None, {"help": "only these records of the dataset, separated by commas or spaces"}),
)
TOKENIZER_KEYS = tuple(ConfigKey("tokenizer", name, kind, default, **rules) for name, kind, default, rules in _TOKENIZER)
NOISE_KEYS = ("noise_snr_db", "noise_seed")  # the tokenizer keys that make a record's noisy version (data/noise.py)

# --- the study file's other tables (the cockpit reads them; the trainer never does) -----------------------------

STUDY_KEYS = (
    ConfigKey("study", "name", (str,), required=True, help="1-64 letters, digits, '_', '.', '-'"),
    ConfigKey("study", "description", (str,), "", help="free text about the study"),
)
@dataclass(frozen=True)
class ClusterKeys:
    """[cluster]: where and how jobs run; cockpit.study.spec.Cluster is this table resolved (local defaults filled in)."""

    kind: str = key("local", "local: this machine's cores (no scheduler); slurm: a cluster over SSH",
                    choices=("local", "slurm"))
    site: str = key("generic", "site profile: a built-in one of sbatch_templates/sites/ (generic, meluxina) or "
                    "the path of a .toml profile, relative to the study file")
    ssh_host: str | None = key(None, "an ~/.ssh/config alias")
    host: str | None = key(None, "the login node's address, when there is no ssh_host alias")
    port: int | None = key(None, "the login node's SSH port (unset: from ~/.ssh/config, else 22)", minimum=1)
    user: str | None = key(None, "the cluster user (default: from ~/.ssh/config)")
    known_hosts: str | None = key(None, "the file host keys are checked against (default ~/.ssh/known_hosts)")
    identity_file: str | None = key(None, "the SSH private key (default: from ~/.ssh/config)")
    account: str | None = key(None, "Slurm account (-A; required where the site profile says so)")
    qos: str | None = key(None, "Slurm QOS (-q; its wall-time limit is checked before submitting)")
    partition: str | None = key(None, "Slurm partition (-p; default: the site profile's)")
    time_limit: str | int = key("01:00:00", "a Slurm time or whole minutes")
    expected_minutes: float | None = key(None, "expected wall time of one run: the node-hour estimate uses it "
                                         "instead of time_limit", minimum=0, unit="min")
    modules: list = key([], "environment modules each job loads (`module load`) before it starts")
    workdir: str | None = key(None, "where run directories go (slurm: required, absolute on the cluster; local: "
                              "default ~/.local/share/hlm-cockpit)")
    container: str = key("", "an Apptainer image the trainer runs in (containers/README.md)")
    container_binds: list = key([], "further host paths bound into the container")
    gpus_per_node: int = key(1, "GPUs a node has: the largest [sweep].gpus_per_node", minimum=1)
    cores_per_node: int | None = key(None, "CPUs Slurm gives a node, which gpus_per_node x cpus_per_task must fit "
                                     "(slurm: unset, the site profile's cores_per_node x threads_per_core, or its "
                                     "cores with hint_nomultithread; local: this machine's)", minimum=1, unit="cores")
    max_concurrent_jobs: int | None = key(None, "jobs queued or running at once (unset: what the site's submit "
                                          "limit leaves beside the user's other jobs, else 4)", minimum=1)
    node_hour_budget: float | None = key(None, "nothing is submitted past it (--force to override); unset: no limit",
                                         minimum=0, unit="node-hours")
    hint_nomultithread: bool = key(False, "#SBATCH --hint=nomultithread (one task per core)")
    signal_seconds: int = key(120, "USR1 this long before the time limit: checkpoint and requeue", minimum=0,
                              unit="s")
    gres_style: str = key("gpus-per-node", "GPUs asked as --gpus-per-node=G or --gres=gpu:G",
                          choices=("gpus-per-node", "gres"))
    rdzv_port: int = key(29500, "multi-node rendezvous port; a job adds its id mod 1000, so at most 64536 "
                         "(65535 - 999)", minimum=1024, maximum=64536)
    python: str = key("python3", "the interpreter jobs run, with torch and this project")
    env: dict = key({}, "environment variables of every job (over the site profile's)")
    share_group: str | None = key(None, "a Unix group (a project's, e.g. p200000) that may read the study's "
                                  "directories and files: 2750 / 0640 and that group; unset: private, 0700 / 0600, "
                                  "whatever the umask", rule=is_group_name, expected_words="a Unix group name")


CLUSTER_KEYS = keys_of("cluster", ClusterKeys)


def _strings(value: Any) -> bool:
    return all(isinstance(v, str) for v in value)


def _minutes(value: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value.values())


def _env_values(value: Any) -> bool:
    return all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in value.values())


@dataclass(frozen=True)
class SiteKeys:
    """[site] of a site profile (sbatch_templates/sites/*.toml, or a study's own file named by [cluster].site):
    what a batch script must know about one Slurm installation; cockpit.study.sites.Site is this table
    read. 0 or "" means unknown where a figure has no default."""

    name: str = key(None, "the site's name", required=True)
    description: str = key("", "free text about the site")
    login_host: str = key("", "the login node's address")
    login_port: int = key(22, "the login node's SSH port", minimum=1)
    require_account: bool = key(False, "every job must name [cluster].account (-A)")
    require_qos: bool = key(False, "every job must name [cluster].qos (-q)")
    partitions: list = key([], "the partitions a study may name", rule=_strings, expected_words="a list of strings")
    gpu_partitions: list = key([], "the partitions with GPUs", rule=_strings, expected_words="a list of strings")
    default_partition: str = key("", "the partition used when [cluster].partition is unset")
    gpus_per_node: int = key(0, "GPUs a node has (0: unknown)", minimum=0)
    cores_per_node: int = key(0, "physical cores a node of the default partition has (0: unknown)", minimum=0,
                              unit="cores")
    threads_per_core: int = key(1, "hardware threads per core: Slurm counts each as a CPU unless a job asks "
                                "--hint=nomultithread", minimum=1)
    numa_nodes: int = key(0, "NUMA domains per node (0: unknown)", minimum=0)
    container_runtime: str = key("apptainer", "the container runtime's command")
    container_modules: list = key([], "environment modules a job loads before the container runtime",
                                  rule=_strings, expected_words="a list of strings")
    max_requeues: int = key(5, "requeues after the time limit's signal before a run is given up", minimum=0)
    storage_tool: str = key("df", "how the work directory's free space and quota are read: df (the file system's "
                            "free space), lfs (Lustre's `lfs quota` of the user, and df), quota (the `quota` "
                            "of the user, and df) or none", choices=("df", "lfs", "quota", "none"))
    qos_max_minutes: dict = key({}, "each QOS's wall-time limit in minutes, checked before submitting",
                                rule=_minutes, expected_words="a table of QOS = positive whole minutes")
    env: dict = key({}, "environment variables of every job on the site", rule=_env_values,
                    expected_words="a table of NAME = string or number")
    # link figures for the scaling prediction (docs/prediction.md)
    intra_node_busbw_gbs: float = key(0.0, "all-reduce bus bandwidth within a node (0: unknown)", minimum=0,
                                      unit="GB/s")
    inter_node_busbw_gbs: float = key(0.0, "all-reduce bus bandwidth across nodes (0: unknown)", minimum=0,
                                      unit="GB/s")
    allreduce_latency_us: float = key(0.0, "all-reduce latency per ring step (0: unknown)", minimum=0, unit="us")
    gpu_memory_gb: float = key(0.0, "one GPU's memory: the plan flags a configuration predicted above it "
                               "(0: unknown)", minimum=0, unit="GB")


SITE_KEYS = keys_of("site", SiteKeys)
_SPLIT = (
    ConfigKey("data", "test_records", (list,), help="the test split, explicitly"),
    ConfigKey("data", "patient_pattern", (str,), help="regular expression extracting the patient id"),
)
SPLIT_KEYS = tuple(k.name for k in _SPLIT)  # a split is one of them (trainer.data.splits.check_options)
DATA_KEYS = (
    ConfigKey("data", "datasets", (dict,), {}, help="one table per dataset (see [data.datasets.NAME])"),
    ConfigKey("data", "tokenizer", (dict,), {}, help="the tokenizer of every dataset (see [data.tokenizer])"),
    ConfigKey("data", "token_cache", (str,), help="token shard root (default: <workdir>/<study>/tokens)"),
    ConfigKey("data", "prepare_workers", (int,), 1, minimum=1, help="processes tokenizing, one record each"),
    ConfigKey("data", "skip_bad_records", (bool,), False, help="leave bad records out (listed with the reason)"),
    *_SPLIT,
)
DATASET_KEYS = (  # a table of [data.datasets]
    ConfigKey("dataset", "path", (str,), help="a PhysioNet-style folder (RECORDS or *.hea) where the jobs run"),
    ConfigKey("dataset", "synthetic", (bool,), False, help="the built-in synthetic ECG generator instead of path"),
    ConfigKey("dataset", "tokenizer", (dict,), {}, help="this dataset's tokenizer keys over [data.tokenizer]"),
    ConfigKey("dataset", "records", (int,), 8, minimum=1, help="synthetic: records generated"),
    ConfigKey("dataset", "seconds", (float,), 300, minimum=1, unit="s", help="synthetic: seconds per record"),
    ConfigKey("dataset", "seed", (int,), 0, help="synthetic: generator seed"),
    ConfigKey("dataset", "skip_bad_records", (bool,), help="over [data].skip_bad_records for this dataset"),
    ConfigKey("dataset", "train_data", (list,), help="further PhysioNet-style folders (as path: where the jobs "
              "run) whose every record trains, never tests; mixed at one rate, the tokenizer's fs "
              "(docs/training.md)", rule=_folders, expected_words="a non-empty list of folder paths"),
    *(ConfigKey("dataset", k.name, k.kind, help=k.help) for k in _SPLIT),
)

# --- derived ---------------------------------------------------------------------------------------------

# an axis a study may default in [train] has section "train"; dataset, gpus_per_node and nodes only [sweep]
AXIS_KEYS = tuple(replace(k, section="train" if k.study else "sweep") for k in keys_of("", AxisKeys, top_level=True))
KEYS: tuple[ConfigKey, ...] = (*keys_of("model", ModelKeys), *AXIS_KEYS, *keys_of("train", TrainKeys))
BY_NAME: dict[str, ConfigKey] = {k.name: k for k in KEYS}
DEFAULTS: dict[str, Any] = {k.name: k.default for k in KEYS}
AXES: tuple[str, ...] = tuple(k.name for k in AXIS_KEYS)
SCALE_AXES: tuple[str, ...] = tuple(k.name for k in AXIS_KEYS if k.axis and k.axis.scale)
AXIS: dict[str, Axis] = {k.name: k.axis for k in AXIS_KEYS if k.axis}
TOKENIZER: dict[str, ConfigKey] = {k.name: k for k in TOKENIZER_KEYS}
# the order a configuration is shown in (its label, the tables' identity columns): "scale" = nodes x workers
LABEL_ORDER = ("dataset", "mode", "window", "scale", "cpus_per_task", "precision", "batch_size", "strategy")
assert set(LABEL_ORDER) - {"scale"} == set(AXES) - set(SCALE_AXES), "every axis has its place in LABEL_ORDER"


CONFIG_DATA_KEYS = keys_of("data", DataKeys, top_level=True)  # config.json's data keys, beside "model" and "train"
TRAINER_KEYS: tuple[ConfigKey, ...] = (*keys_of("run", RunKeys, top_level=True), *CONFIG_DATA_KEYS, *KEYS)
# config.json's keys by where it holds them ("batch_size", "train.lr", "tokenizer") and what the prediction does
# with each (cockpit.forecast.advice.effects reads it; a table inside a key, "tokenizer.vocab", is its key's)
EFFECTS: dict[str, Effect] = {k.dest: k.effect for k in TRAINER_KEYS if k.effect is not None}


PREFLIGHT_KEYS = keys_of("preflight", PreflightKeys, top_level=True, study=False, flag="")


def check_preflight_config(config: Any, source: str, error: type[Exception]) -> dict[str, Any]:
    """A preflight's config.json judged by PREFLIGHT_KEYS (unknown keys refused with the nearest, each value by its
    rule), its defaults filled in; raises `error` naming the file and the key."""
    if not isinstance(config, dict):
        raise error(f"{source}: expected a JSON object, got {type(config).__name__}")
    return judge_table(source, "preflight", config, {k.name: k for k in PREFLIGHT_KEYS}, error)


def section_keys(section: str, *, study: bool | None = None) -> list[ConfigKey]:
    """The keys of one study table ("model" or "train"), optionally only those a study may set."""
    return [k for k in KEYS if k.section == section and (study is None or k.study == study)]


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


def tokenizer_defaults(name: str) -> dict[str, Any]:
    """Every parameter of one tokenizer with its default."""
    return {k.name: k.default for k in TOKENIZER_KEYS if name in k.tokenizers}


def shows(axis: ConfigKey, values: Mapping[str, Any]) -> bool:
    """Whether an axis enters a configuration's id and label: a core axis always; an axis added later only when
    the configuration sets it away from its default (absent, as in a store written before it existed, is the
    default)."""
    assert axis.axis is not None, f"{axis.name} is not a sweep axis"
    return axis.axis.core or values.get(axis.name, axis.default) != axis.default


def unread(axis: ConfigKey, values: Mapping[str, Any]) -> bool:
    """Whether a configuration's program never reads the axis: the HLM's own axes (dataset, mode, window:
    Axis.hlm) in a configuration of another workload (`values["workload"]`, its kind; absent: the HLM
    trainer's), which runs with them at their defaults."""
    return axis.axis is not None and axis.axis.hlm and values.get("workload", "hlm") != "hlm"


def labelled(axis: ConfigKey, values: Mapping[str, Any]) -> bool:
    """Whether an axis has a word in a configuration's label and a column in its tables: as it `shows`, unless
    the configuration's program never reads it (`unread`)."""
    return not unread(axis, values) and shows(axis, values)


def id_values(values: Mapping[str, Any], axes: tuple[ConfigKey, ...] = AXIS_KEYS) -> dict[str, Any]:
    """The axis values a configuration id digests (cockpit.study.spec.Configuration.config_id): every core axis and
    each later axis set away from its default."""
    return {k.name: values[k.name] for k in axes if shows(k, values)}


def label_words(values: Mapping[str, Any]) -> dict[str, str]:
    """The configuration label's words by part (LABEL_ORDER): {"window": "w256", "scale": "1x2", ...}; a
    missing core axis shows as '?', a missing scale axis as 1 (a stored configuration may lack one); a later
    axis at its default shows no word (`shows`)."""
    def tag(name: str) -> str:
        if name == "scale":
            return "x".join(str(values.get(a, 1)) for a in reversed(SCALE_AXES))
        return AXIS[name].tag.format(values.get(name, "?"))

    return {name: tag(name) for name in LABEL_ORDER if name == "scale" or labelled(BY_NAME[name], values)}


def config_label(values: Mapping[str, Any]) -> str:
    """Short human name of a configuration, every axis in it: `mitdb foundation w256 1x2 c4 bf16 b32`.
    The one label of the plan, the batch scripts, the TUI and the headless run. A script workload's own keys
    follow as the analysis words them (`values["keys"]`: `lr=0.1 pin_memory=true`)."""
    keys = values.get("keys")
    return " ".join([*label_words(values).values(), *([keys] if isinstance(keys, str) and keys else [])])


def check_model(values: Mapping[str, Any]) -> str | None:
    """The [model] rule across keys: None, or what is wrong, in the words spec and trainer share."""
    if values["d_model"] % values["heads"]:
        return f"model.d_model ({values['d_model']}) must be divisible by model.heads ({values['heads']})"
    return None


def check_train(values: Mapping[str, Any]) -> str | None:
    """The [train] rule across keys: a fixed amount of work to time."""
    given = [name for name in ("steps", "epochs") if values.get(name) is not None]
    if len(given) != 1:
        return f"train: give exactly one of steps or epochs ({'both are' if given else 'neither is'} set)"
    if values.get("val_fraction") and values.get("val_records"):
        return ("train: give one of val_fraction (a share of the training patients) or val_records (the patients by "
                f"name), not both; found val_fraction = {values.get('val_fraction')}, val_records = "
                f"{values.get('val_records')}")
    validates = bool(values.get("val_fraction") or values.get("val_records"))
    if values.get("calibrate") and (not validates or values.get("class_weights") == "none"):
        return ("train.calibrate: needs a validation part to choose on (train.val_fraction > 0 or train.val_records) "
                "and class weights to undo (train.class_weights other than 'none'); found val_fraction = "
                f"{values.get('val_fraction')}, val_records = {values.get('val_records')}, "
                f"class_weights = {values.get('class_weights')!r}")
    if values.get("calibrate_min_sensitivity") and not values.get("calibrate"):
        return ("train.calibrate_min_sensitivity: floors for the calibration's choice, so it needs train.calibrate = "
                f"true; found calibrate = {values.get('calibrate')}")
    if values.get("af_group") and values.get("class_weights") == "none":
        return ("train.af_group: gives N beats inside atrial fibrillation a class weight of their own, so it needs "
                "class weights (train.class_weights other than 'none'); found class_weights = 'none'")
    return None

