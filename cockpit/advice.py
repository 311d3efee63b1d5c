"""Advice with a number: which study key acts on a loss, the value to try, and what the prediction model
expects from it; and the prediction of any changed configuration from a study's recorded runs.

The one table of keys and their modelled effects is :data:`EFFECTS` (names as trainer/config_keys.py and
config.json spell them: `batch_size`, `train.bucket_cap_mb`). docs/prediction.md states each formula.

:func:`forecast` predicts a configuration (a config.json dict) from recorded result.json dicts: from the
finished 1x1 baseline of its group (else, for a batch size the group never ran, of the group that differs
only in batch size) with cockpit.prediction's formulas, and, where the recorded study measured the same
scale of that group, as that measurement plus the model's change:

    T' = model(changed) + (T measured - model(as run)) x samples' / samples

so the part of a measured run the model does not explain (workers sharing cores, a straggler) is carried
over per sample, unchanged by the key. :func:`advise` applies it to an N-worker run's losses, one key per
loss term; `cockpit plan --what-if` and `cockpit compare` use the same function.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cockpit import explain, prediction
from cockpit.spec import AXES, SCALE_AXES
from trainer.config_keys import BY_NAME

GROUP_AXES = tuple(a for a in AXES if a not in SCALE_AXES)
DDP_FIRST_BUCKET_MB = 1.0  # as trainer/probe.py: DDP's first bucket when bucket_cap_mb is left unset
DDP_DEFAULT_BUCKET_MB = 25.0
MAX_BUCKETS = 8  # the bucket advice stays at or below this many buckets (see docs/prediction.md)
BUCKET_LADDER_MB = (100.0, 50.0, 25.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.25, 0.1, 0.05, 0.025, 0.01)


@dataclass(frozen=True)
class Effect:
    """What the prediction model does with one key. ``model``: "formula" (a formula of
    docs/prediction.md), "recorded" (only from a recorded baseline with the value: the model has no formula
    across it), "neutral" (assumed not to change the time of a step: it is outside T or only changes
    numbers) or "none" (not predicted). ``terms``: the loss terms it acts on."""

    model: str
    terms: tuple[str, ...] = ()
    effect: str = ""


EFFECTS: dict[str, Effect] = {
    "train.bucket_cap_mb": Effect("formula", ("comm",),
                                  "DDP buckets k = ceil(G / cap): exposed all-reduce max(t_ar / k, t_ar - backward)"),
    "batch_size": Effect("formula", ("comm", "optimizer", "other"),
                         "f = b'/b: data wait and compute per step x f, optimizer, other and all-reduce per step "
                         "as the baseline's, steps / f"),
    "train.grad_accum": Effect("formula", ("comm", "optimizer", "other"),
                               "f = a'/a micro-batches per step: as batch_size"),
    "train.steps": Effect("formula", (), "samples x steps'/steps"),
    "train.epochs": Effect("formula", (), "samples x epochs'/epochs"),
    "gpus_per_node": Effect("formula", ("comm",), "N workers: ring all-reduce over the link the run spans"),
    "nodes": Effect("formula", ("comm",), "N workers: the inter-node link once nodes > 1"),
    "cpus_per_task": Effect("recorded", ("compute", "data_wait"),
                            "only from a recorded baseline with that many cores per task"),
    "window": Effect("recorded"),
    "precision": Effect("recorded", ("compute",)),
    "dataset": Effect("recorded"),
    "mode": Effect("recorded"),
    "train.num_workers": Effect("none", ("data_wait",)),
    **{f"train.{k}": Effect("neutral") for k in ("lr", "weight_decay", "warmup_steps", "seed", "eval",
                                                 "init_checkpoint", "metrics_interval_s", "nvml_interval_ms")},
    "prepare_workers": Effect("neutral"),
}
# config.json keys that name the run rather than describe it (never a difference between two runs)
IDENTITY = frozenset({"study", "study_id", "config_id", "group_id", "schema_version", "token_cache"})


def effect_of(key: str) -> Effect:
    return EFFECTS.get(key, Effect("none"))


def buckets_for(grad_bytes: float, cap_mb: float | None) -> int:
    """DDP's gradient buckets for `grad_bytes`: unset, a 1 MB first bucket then 25 MB ones (as
    trainer.probe.expected_buckets); an explicit cap sizes the first bucket too (torch's DDP)."""
    if cap_mb is None:
        first = DDP_FIRST_BUCKET_MB * 2**20
        rest = DDP_DEFAULT_BUCKET_MB * 2**20
        return 1 if grad_bytes <= first else 1 + math.ceil((grad_bytes - first) / rest)
    return max(1, math.ceil(grad_bytes / (cap_mb * 2**20)))


# --- reading configurations --------------------------------------------------------------------------------

def axes_of(result: dict[str, Any]) -> dict[str, Any]:
    """A result's (or a config.json's) axis values."""
    inner = result.get("config")
    cfg: dict[str, Any] = inner if isinstance(inner, dict) else result
    return {a: cfg.get(a, result.get(a)) for a in AXES}


def config_of(result: dict[str, Any]) -> dict[str, Any]:
    """The config.json a result was run from (its axes at the top level, as Study.run_config writes it)."""
    cfg = dict(result.get("config") or {})
    for a in AXES:
        cfg.setdefault(a, result.get(a))
    return cfg


def flat_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """config.json as dotted keys (`train.lr`, `tokenizer.vocab`), the trainer's defaults filled in for the
    [model] and [train] keys it leaves out, identity keys left out."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            out[prefix] = value

    walk("", {k: v for k, v in cfg.items() if k not in IDENTITY})
    for key in BY_NAME.values():
        if key.study and not key.top_level:
            out.setdefault(key.dest, key.default)
    return {k: v for k, v in out.items() if v is not None}


def diff_keys(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(dotted key, value before, value after) of every key two config.json dicts give differently (None:
    unset)."""
    a, b = flat_config(before), flat_config(after)
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def toml_value(value: Any) -> str:
    """A value as a study file (and `--what-if`) writes it; "unset" for a key a study does not set."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}" if value == value and not value.is_integer() else f"{value:.1f}"
    return str(value)


def study_key(key: str, value: Any) -> str:
    """`[train] bucket_cap_mb = 1.0`, `[sweep] batch_size = [32]`: where a study file sets a config key."""
    if key in AXES:
        return f"[sweep] {key} = {toml_value([value])}"
    section, _, name = key.partition(".")
    return f"[{section}] {name} = {toml_value(value)}"


def what_if_arg(key: str, value: Any) -> str:
    """The `cockpit plan --what-if` argument that sets a config key: `train.bucket_cap_mb=1.0`."""
    if key in AXES:
        return f"sweep.{key}={toml_value([value])}"
    return f"{key}={toml_value(value)}"


# --- the recorded study --------------------------------------------------------------------------------------

def _completed(r: dict[str, Any]) -> bool:
    t = (r.get("timing") or {}).get("train_time_s")
    return r.get("status", "completed") == "completed" and isinstance(t, int | float) and t == t


def _t(r: dict[str, Any]) -> float:
    return float(r["timing"]["train_time_s"])


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ordered = sorted(runs, key=_t)
    return ordered[(len(ordered) - 1) // 2]


class Recorded:
    """A study's finished results, indexed once: baselines by group, runs by group and scale, the axis
    values it ran."""

    def __init__(self, results: Iterable[dict[str, Any]]) -> None:
        runs: dict[tuple, list[dict[str, Any]]] = {}
        self.values: dict[str, set[Any]] = {a: set() for a in AXES}
        for r in results:
            if not _completed(r):
                continue
            ax = axes_of(r)
            if any(ax[a] is None for a in AXES):
                continue
            runs.setdefault(tuple(ax[a] for a in AXES), []).append(r)
            for a in AXES:
                self.values[a].add(ax[a])
        self.runs = {key: _median(rs) for key, rs in runs.items()}
        self.baselines = {key[:len(GROUP_AXES)]: r for key, r in self.runs.items() if key[-2:] == (1, 1)}
        self.by_batch: dict[tuple, dict[Any, dict[str, Any]]] = {}  # baselines by their group without batch
        for key, r in self.baselines.items():
            self.by_batch.setdefault(_without_batch(key), {})[key[_BATCH]] = r
        self.baseline_values = {a: {key[i] for key in self.baselines} for i, a in enumerate(GROUP_AXES)}

    def run(self, group: tuple, nodes: int, gpus_per_node: int) -> dict[str, Any] | None:
        """The recorded run (median T of repeats) of a group at a scale (AXES order: gpus_per_node, nodes)."""
        return self.runs.get((*group, gpus_per_node, nodes))


def _group(ax: dict[str, Any]) -> tuple:
    return tuple(ax[a] for a in GROUP_AXES)


_BATCH = GROUP_AXES.index("batch_size")


def _without_batch(group: tuple) -> tuple:
    return group[:_BATCH] + group[_BATCH + 1:]


# --- the forecast ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Forecast:
    """A configuration predicted from recorded runs: T at its own work, its own baseline's T1, and what
    follows (S = T1 / (T / work), E = S / N, node-hours)."""

    workers: int
    nodes: int
    t_s: float
    t1_s: float
    work: float  # its samples / its baseline's samples
    speedup: float
    efficiency: float
    node_hours: float
    model_t_s: float  # the model's T alone
    basis: str  # what it rests on, in words
    link: str = ""  # the link figure used (cockpit.prediction.Link.source), "" for one worker
    extrapolated: tuple[str, ...] = ()  # axis values the recorded study never ran
    changes: tuple[tuple[str, Any, Any], ...] = ()  # the keys that differ from the run it starts from
    parts: dict[str, float] = field(default_factory=dict)  # T's parts as predicted (rank 0; "unaccounted")

    @property
    def t_same_work_s(self) -> float:
        return self.t_s / self.work if self.work else math.nan


def forecast(target: dict[str, Any], recorded: Recorded | Iterable[dict[str, Any]], links: prediction.Links,
             changes: Sequence[tuple[str, Any, Any]] = ()) -> Forecast | prediction.NoPrediction:
    """Predict the configuration `target` (a config.json dict) from recorded results. ``changes``: the keys
    that differ from the study as recorded (diff_keys); one the model has no formula for makes it "not
    predicted" with the reason, rather than a figure.

    Where the recorded study measured the same scale of the group it is predicted from, the forecast is
    that run with each part of its T changed as the model changes it (:func:`carried`); elsewhere it is
    the model alone (cockpit.prediction.predict)."""
    rec = recorded if isinstance(recorded, Recorded) else Recorded(recorded)
    unknown = [(k, a, b) for k, a, b in changes if k not in AXES and effect_of(k).model in ("none", "recorded")]
    if unknown:
        words = ", ".join(f"{k} ({toml_value(a)} -> {toml_value(b)})" for k, a, b in unknown)
        return prediction.NoPrediction(f"the model has no formula for {words}")
    ax = axes_of(target)
    nodes, gpus = int(ax["nodes"]), int(ax["gpus_per_node"])
    n = nodes * gpus
    src, how = _source(rec, ax)
    if src is None:
        return prediction.NoPrediction(how)
    src_ax = axes_of(src)
    timing = src.get("timing") or {}
    if not timing.get("steps"):
        return prediction.NoPrediction("the baseline's result.json has no steps")
    src_cfg = config_of(src)
    grad = (src.get("comm") or {}).get("grad_bytes")
    extrapolated = [how] if how else []
    for axis in ("gpus_per_node", "nodes"):
        if ax[axis] not in rec.values[axis]:
            extrapolated.append(f"{axis} = {ax[axis]} never ran")

    def model(cfg: dict[str, Any], nodes: int, gpus: int, buckets: int | None) -> tuple[prediction.Prediction, float]:
        w = _samples_ratio(cfg, src, nodes * gpus)
        if w is None:
            raise _Unpredicted("neither steps nor epochs to count the samples by")
        p = prediction.predict(src, nodes, gpus, w, links, batch_factor=_batch_factor(cfg, src_cfg), buckets=buckets)
        if isinstance(p, prediction.NoPrediction):
            raise _Unpredicted(p.reason)
        return p, w

    cap = _cap(target)
    buckets = buckets_for(grad, cap) if grad else None
    counterpart = rec.run(_group(src_ax), nodes, gpus)
    try:
        t_model, w_t = model(target, nodes, gpus, buckets)
        t, basis = t_model.t_s, f"the model from the {_label(src_ax)} baseline"
        parts = dict(t_model.parts)
        if counterpart is not None:
            cp_cfg = config_of(counterpart)
            cp_buckets = int((counterpart.get("comm") or {}).get("buckets") or 0) or buckets if n > 1 else None
            if _cap(cp_cfg) == cap:
                t_model, w_t = model(target, nodes, gpus, cp_buckets)  # the same cap: the buckets DDP really made
            cp_model, w_cp = model(cp_cfg, nodes, gpus, cp_buckets)
            parts = carried_parts(counterpart, cp_model, t_model, w_t / w_cp)
            t = sum(parts.values())
            same = abs(t - _t(counterpart)) < 1e-9
            basis = (f"measured ({_label(axes_of(counterpart))})" if same else
                     f"measured {_label(axes_of(counterpart))}, each part changed as the model changes it")
        else:
            extrapolated.append(f"no recorded {nodes}x{gpus} run of this group: the model alone")
        base_model, w_1 = model(target, 1, 1, None)
        own_model, w_src = model(src_cfg, 1, 1, None)
    except _Unpredicted as exc:
        return prediction.NoPrediction(str(exc))
    t1 = carried(src, own_model, base_model, w_1 / w_src)
    work = w_t / w_1 if w_1 else math.nan
    s = t1 / (t / work) if t > 0 and work == work else math.nan
    fixed = sum(float(timing.get(c) or 0.0) for c in explain.FIXED_COSTS)
    return Forecast(workers=n, nodes=nodes, t_s=t, t1_s=t1, work=work, speedup=s, efficiency=s / n,
                    node_hours=(t + fixed) * nodes / 3600.0, model_t_s=t_model.t_s, basis=basis,
                    link=t_model.link, extrapolated=tuple(extrapolated), changes=tuple(changes), parts=parts)


class _Unpredicted(Exception):
    pass


def carried(run: dict[str, Any], as_run: prediction.Prediction, changed: prediction.Prediction,
            samples: float) -> float:
    """T of :func:`carried_parts`."""
    return sum(carried_parts(run, as_run, changed, samples).values())


def carried_parts(run: dict[str, Any], as_run: prediction.Prediction, changed: prediction.Prediction,
                  samples: float) -> dict[str, float]:
    """A measured run's T with each part changed as the model changes it:

        T' = sum over parts p of (measured p - straggler wait if p is comm) x changed p / as_run p
             + (T - the sum of the measured parts + straggler wait) x samples'/samples

    The straggler wait (rank 0's exposed all-reduce minus the least any rank waited) and whatever the parts
    do not cover are carried per sample; a part the model gives no time scales with the samples."""
    measured = {p: float(v) for p, v in (run.get("breakdown_s") or {}).items() if isinstance(v, int | float)}
    wait = straggler_wait(run)
    out = {"unaccounted": (_t(run) - sum(measured.values())) * samples}
    for part, m in measured.items():
        before, after = as_run.parts.get(part, 0.0), changed.parts.get(part, 0.0)
        ratio = after / before if before > 1e-12 else samples
        out[part] = (m - wait) * ratio + wait * samples if part == "comm" else m * ratio
    return out


def straggler_wait(run: dict[str, Any]) -> float:
    """Seconds rank 0 waited in all-reduce beyond the least any rank waited (0 with one rank)."""
    by_rank = run.get("breakdown_by_rank")
    if not isinstance(by_rank, list) or len(by_rank) < 2:
        return 0.0
    ranks = explain.ranks_of(run)
    if not ranks or len(ranks) < 2:
        return 0.0
    comm0 = float((run.get("breakdown_s") or {}).get("comm") or 0.0)
    return max(0.0, comm0 - min(r["comm"] for r in ranks))


def _source(rec: Recorded, ax: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The recorded baseline a configuration is predicted from, and a note: "" for its own group's; for a
    batch size its group never ran, the group differing only in batch size (nearest batch); None and the
    reason when there is none."""
    group = _group(ax)
    if group in rec.baselines:
        return rec.baselines[group], ""
    if not rec.baselines:
        return None, "no finished 1x1 baseline recorded"
    near = rec.by_batch.get(_without_batch(group))
    if near:
        b = ax["batch_size"]
        batch = min(near, key=lambda x: (abs(math.log(x / b)), -x))
        return near[batch], f"batch_size {b} scaled from the b{batch} baseline"
    missing = [(a, v) for a, v in zip(GROUP_AXES, group, strict=True)
               if a != "batch_size" and v not in rec.baseline_values[a]]
    if not missing:
        return None, "no recorded baseline of this group (each value ran, not this combination)"
    words = ", ".join(f"{a} = {v}" for a, v in missing)
    axes = " or ".join(a for a, _ in missing)
    return None, f"no recorded baseline with {words}, and the model has no formula across {axes}"


def _samples_ratio(cfg: dict[str, Any], src: dict[str, Any], n: int) -> float | None:
    """The samples of `cfg` run on n workers over those of the recorded baseline `src`."""
    timing = src.get("timing") or {}
    src_cfg = config_of(src)
    steps_1 = float(timing["steps"])
    per_step_1 = float(src_cfg["batch_size"]) * _accum(src_cfg)
    train = cfg.get("train") or {}
    if train.get("steps") is not None:
        return float(train["steps"]) * float(cfg["batch_size"]) * _accum(cfg) * n / (steps_1 * per_step_1)
    if train.get("epochs") is not None:
        epochs_1 = timing.get("epochs") or (steps_1 / timing["steps_per_epoch"] if timing.get("steps_per_epoch")
                                             else (src_cfg.get("train") or {}).get("epochs"))
        return float(train["epochs"]) / float(epochs_1) if epochs_1 else None
    return None


def _accum(cfg: dict[str, Any]) -> float:
    return float((cfg.get("train") or {}).get("grad_accum") or 1)


def _batch_factor(cfg: dict[str, Any], src_cfg: dict[str, Any]) -> float:
    return float(cfg["batch_size"]) * _accum(cfg) / (float(src_cfg["batch_size"]) * _accum(src_cfg))


def _cap(cfg: dict[str, Any]) -> float | None:
    cap = (cfg.get("train") or {}).get("bucket_cap_mb")
    return float(cap) if cap is not None else None


def _label(ax: dict[str, Any], scale_only: bool = False) -> str:
    scale = f"{ax.get('nodes')}x{ax.get('gpus_per_node')}"
    if scale_only:
        return scale
    return f"w{ax.get('window')} {scale} c{ax.get('cpus_per_task')} b{ax.get('batch_size')}"


# --- advice ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Advice:
    """One loss term of an N-worker run: the key(s) to change, the value, and the predicted result (or why
    there is none)."""

    term: str
    loss_s: float  # the term as printed (seconds)
    keys: tuple[tuple[str, Any], ...]  # (config key, value to try)
    t_s: float  # the run's measured T and E, before the change
    efficiency: float
    predicted: Forecast | None = None
    reason: str = ""  # why it is not predicted
    alternatives: tuple[Advice, ...] = field(default=(), compare=False)

    @property
    def gain_s(self) -> float:
        return self.t_s - self.predicted.t_s if self.predicted is not None else math.nan

    @property
    def setting(self) -> str:
        """`[train] bucket_cap_mb = 1.0`, joined with `and` for several keys."""
        return " and ".join(study_key(k, v) for k, v in self.keys)

    @property
    def what_if(self) -> list[str]:
        return [what_if_arg(k, v) for k, v in self.keys]

    def text(self, head: bool = True) -> str:
        """The advice in one line, e.g. `exposed all-reduce 0.94 s: set [train] bucket_cap_mb = 1.0 →
        predicted T 4.31 s → 3.72 s, E 0.66 → 0.77`: every view prints this (``head``: the loss first)."""
        lead = f"{explain.TERM_LABELS[self.term]} {self.loss_s:.2f} s: " if head else ""
        if not self.keys:
            return f"{lead}{self.reason}"
        p = self.predicted
        if p is None:
            return f"{lead}try {self.setting}: not predicted ({self.reason})"
        text = (f"{lead}set {self.setting} → predicted T {self.t_s:.2f} s → {p.t_s:.2f} s, "
                f"E {self.efficiency:.2f} → {p.efficiency:.2f}")
        return text + " (extrapolated)" if p.extrapolated else text


def advise(rec: dict[str, Any], recorded: Recorded, links: prediction.Links) -> list[Advice]:
    """For each loss term of an analysed N-worker run (cockpit.analysis row), largest first: the key that
    acts on it with the value to try and its forecast; the option with the most predicted gain where a term
    has several. Terms without a loss get none."""
    run = rec.get("result")
    if rec.get("baseline") or not isinstance(run, dict) or rec.get("overhead_s") != rec.get("overhead_s"):
        return []
    _, shown = explain.shown_terms(rec)
    cfg = config_of(run)
    out = []
    for term, loss in shown:
        if loss <= 0:
            continue
        options = [_option(term, loss, keys, cfg, rec, recorded, links, reason)
                   for keys, reason in _candidates(term, cfg, run, rec, recorded, links)]
        if not options:
            out.append(Advice(term, loss, (), rec["train_time_s"], rec["efficiency"],
                              reason="no key acts on it: the result's parts do not add up to its T (rerun with "
                                     "the current trainer)"))
            continue
        predicted = [o for o in options if o.predicted is not None]
        best = min(predicted, key=lambda o: o.predicted.t_s if o.predicted else math.inf, default=options[0])
        rest = tuple(o for o in options if o is not best)
        out.append(Advice(best.term, loss, best.keys, best.t_s, best.efficiency, best.predicted, best.reason, rest))
    return out


def _option(term: str, loss: float, keys: tuple[tuple[str, Any], ...], cfg: dict[str, Any], rec: dict[str, Any],
            recorded: Recorded, links: prediction.Links, reason: str) -> Advice:
    t, e = rec["train_time_s"], rec["efficiency"]
    if reason:
        return Advice(term, loss, keys, t, e, reason=reason)
    target = changed(cfg, keys)
    p = forecast(target, recorded, links, [(k, _get(cfg, k), v) for k, v in keys])
    if isinstance(p, prediction.NoPrediction):
        return Advice(term, loss, keys, t, e, reason=p.reason)
    return Advice(term, loss, keys, t, e, p)


def _get(cfg: dict[str, Any], key: str) -> Any:
    if key in AXES:
        return cfg.get(key)
    section, _, name = key.partition(".")
    return (cfg.get(section) or {}).get(name)


def changed(cfg: dict[str, Any], keys: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """A config.json dict with config keys set (`batch_size`, `train.steps`)."""
    out = {**cfg, "train": dict(cfg.get("train") or {}), "model": dict(cfg.get("model") or {})}
    for key, value in keys:
        if key in AXES:
            out[key] = value
        else:
            section, _, name = key.partition(".")
            out[section] = {**(out.get(section) or {}), name: value}
    return out


def _candidates(term: str, cfg: dict[str, Any], run: dict[str, Any], rec: dict[str, Any], recorded: Recorded,
                links: prediction.Links) -> list[tuple[tuple[tuple[str, Any], ...], str]]:
    """(keys to set, reason it cannot be predicted or "") for each key that acts on `term`."""
    batch = _double_batch(cfg)
    if term == "comm":
        return [*_bucket_options(cfg, run, recorded, links), (batch, "")]
    if term in ("optimizer", "other"):
        return [(batch, "")]
    cores = (("cpus_per_task", 2 * int(cfg["cpus_per_task"])),)
    if term == "data_wait":
        return [(cores, "")]  # predicted only where a baseline with that many cores is recorded
    if term == "compute":
        if rec.get("device") == "cuda":
            return [(batch, "the model takes per-sample compute as the baseline's, so it cannot price filling "
                            "the GPU with a larger batch")]
        return [(cores, "")]
    return []


def _double_batch(cfg: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Twice the batch; with a fixed number of steps, half the steps too, so that the samples stay the same
    and T compares."""
    keys: list[tuple[str, Any]] = [("batch_size", 2 * int(cfg["batch_size"]))]
    steps = (cfg.get("train") or {}).get("steps")
    if steps is not None:
        keys.append(("train.steps", max(1, round(int(steps) / 2))))
    return tuple(keys)


def _bucket_options(cfg: dict[str, Any], run: dict[str, Any], recorded: Recorded, links: prediction.Links
                    ) -> list[tuple[tuple[tuple[str, Any], ...], str]]:
    """The cap on the ladder with the least predicted T among those giving more buckets than now and at most
    MAX_BUCKETS; the largest cap for a bucket count."""
    grad = (run.get("comm") or {}).get("grad_bytes")
    if not grad:
        smaller = next(c for c in BUCKET_LADDER_MB if c <= (_cap(cfg) or DDP_DEFAULT_BUCKET_MB) / 4)
        return [((("train.bucket_cap_mb", smaller),), "the run's result.json has no comm.grad_bytes (an older trainer)")]
    now = int((run.get("comm") or {}).get("buckets") or buckets_for(grad, _cap(cfg)))
    caps: dict[int, float] = {}
    for cap in BUCKET_LADDER_MB:
        k = buckets_for(grad, cap)
        if now < k <= MAX_BUCKETS:
            caps.setdefault(k, cap)
    if not caps:
        return [((("train.bucket_cap_mb", _cap(cfg) or DDP_DEFAULT_BUCKET_MB),),
                 f"already {now} buckets: the advice goes to at most {MAX_BUCKETS}")]
    # the model's exposed all-reduce alone tells the candidates apart (every other part is the same)
    ax = axes_of(run)
    base = recorded.baselines.get(_group(ax))
    work = float(rec_work) if (rec_work := run_work(run, base)) else 1.0
    scored = []
    for k, cap in caps.items():
        p = prediction.predict(base, int(ax["nodes"]), int(ax["gpus_per_node"]), work, links, buckets=k) if base else None
        scored.append((p.parts["comm"] if isinstance(p, prediction.Prediction) else math.inf, -cap, cap))
    best = min(scored)[2]
    return [((("train.bucket_cap_mb", best),), "")]


def run_work(run: dict[str, Any], base: dict[str, Any] | None) -> float | None:
    """A run's samples over its baseline's."""
    if base is None:
        return None
    a, b = (run.get("timing") or {}).get("samples"), (base.get("timing") or {}).get("samples")
    return float(a) / float(b) if a and b else None


def advice_text(items: Sequence[Advice]) -> str:
    """The advice one line carries (the report, the TUI's explain panel and the headless lines print this):
    the largest loss's, and, when that one cannot be predicted, the largest predicted one's too."""
    if not items:
        return ""
    first = items[0]
    if first.predicted is not None:
        return first.text()
    other = next((a for a in items[1:] if a.predicted is not None), None)
    return first.text() + (f"; {other.text()}" if other else "")
