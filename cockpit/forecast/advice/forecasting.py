"""The forecast: any configuration (a config.json dict) predicted from a study's recorded result.json
dicts, before a node-hour is spent on it.

From the finished 1x1 baseline of its group (else, for a batch size the group never ran, of the group that
differs only in batch size) with cockpit.forecast.prediction's formulas, and, where the recorded study measured the
same scale of that group, as that measurement with each part of its T changed as the model changes it
(:func:`carried_parts`), so the part of a measured run the model does not explain (workers sharing cores, a
straggler) is carried over per sample, unchanged by the key. The advice, `cockpit plan --what-if` and
`cockpit compare` all predict through :func:`forecast`; docs/prediction.md states the formulas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cockpit.figures import explain
from cockpit.forecast import batch_fit, interval, prediction
from cockpit.forecast.advice.effects import (
    GROUP_AXES,
    axes_of,
    bucket_cap,
    buckets_for,
    config_of,
    effect_of,
    group_of,
    toml_value,
)
from cockpit.forecast.baseline_runs import median_run, t_of
from cockpit.study.spec import AXES
from cockpit.workloads import workload_class
from runcontract.axes import config_label, label_words

# --- the recorded study --------------------------------------------------------------------------------------

def _completed(r: dict[str, Any]) -> bool:
    t = (r.get("timing") or {}).get("train_time_s")
    return r.get("status", "completed") == "completed" and isinstance(t, int | float) and t == t


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
        self.runs = {key: median_run(rs) for key, rs in runs.items()}
        # the spread of T over a configuration's repeated runs (max - min, seconds) and how many there are
        self.spread = {key: (max(map(t_of, rs)) - min(map(t_of, rs)), len(rs)) for key, rs in runs.items() if len(rs) > 1}
        self.baselines = {key[:len(GROUP_AXES)]: r for key, r in self.runs.items() if key[-2:] == (1, 1)}
        self.by_batch: dict[tuple, dict[Any, dict[str, Any]]] = {}  # baselines by their group without batch
        for key, r in self.baselines.items():
            self.by_batch.setdefault(_without_batch(key), {})[key[_BATCH]] = r
        self.baseline_values = {a: {key[i] for key in self.baselines} for i, a in enumerate(GROUP_AXES)}

    def run(self, group: tuple, nodes: int, gpus_per_node: int) -> dict[str, Any] | None:
        """The recorded run (median T of repeats) of a group at a scale (AXES order: gpus_per_node, nodes)."""
        return self.runs.get((*group, gpus_per_node, nodes))


_BATCH = GROUP_AXES.index("batch_size")


def _without_batch(group: tuple) -> tuple:
    return group[:_BATCH] + group[_BATCH + 1:]


_STRATEGY = GROUP_AXES.index("strategy")


def _without_strategy(group: tuple) -> tuple:
    return group[:_STRATEGY] + group[_STRATEGY + 1:]


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
    link: str = ""  # the link figure used (cockpit.forecast.prediction.Link.source), "" for one worker
    extrapolated: tuple[str, ...] = ()  # axis values the recorded study never ran
    changes: tuple[tuple[str, Any, Any], ...] = ()  # the keys that differ from the run it starts from
    parts: dict[str, float] = field(default_factory=dict)  # T's parts as predicted (rank 0; "unaccounted")
    memory: dict[str, float] | None = None  # bytes per rank as the model predicts them (prediction.memory_per_rank)
    # sd in seconds of each term resting on the model (prediction.Prediction.term_sd; carried from a measured run:
    # MODEL_SD x the seconds the model moved each part by): cockpit.forecast.interval.for_terms
    term_sd: dict[str, float] = field(default_factory=dict)

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
    the model alone (cockpit.forecast.prediction.predict)."""
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
    # compute per step against the batch over the baselines differing only in batch size (None: one batch size)
    line = batch_fit.fit(rec.by_batch.get(_without_batch(group_of(src_ax)), {}).values())
    grad = (src.get("comm") or {}).get("grad_bytes")
    extrapolated = [how] if how else []
    for axis in ("gpus_per_node", "nodes"):
        if ax[axis] not in rec.values[axis]:
            extrapolated.append(f"{axis} = {ax[axis]} never ran")

    def model(cfg: dict[str, Any], nodes: int, gpus: int, buckets: int | None,
              with_links: prediction.Links = links) -> tuple[prediction.Prediction, float]:
        w = _samples_ratio(cfg, src, nodes * gpus)
        if w is None:
            raise _Unpredicted("neither steps nor epochs to count the samples by")
        p = prediction.predict(src, nodes, gpus, w, with_links, batch_factor=_batch_factor(cfg, src_cfg), buckets=buckets,
                               strategy=axes_of(cfg)["strategy"], micro_batches=_accum(cfg), compute_line=line)
        if isinstance(p, prediction.NoPrediction):
            raise _Unpredicted(p.reason)
        return p, w

    cap = bucket_cap(target)
    buckets = buckets_for(grad, cap) if grad else None
    counterpart = rec.run(group_of(src_ax), nodes, gpus)
    try:
        t_model, w_t = model(target, nodes, gpus, buckets)
        t, basis = t_model.t_s, f"the model from the {_label(src_ax)} baseline"
        parts = dict(t_model.parts)
        if counterpart is not None:
            # the measured run already holds what the finished runs' per-step parts would refit: both sides of
            # each part's ratio are the model without them (with them, a change of strategy would move the parts
            # by the other sharding's residuals, not by the model)
            plain = replace(links, residuals=())
            cp_cfg = config_of(counterpart)
            cp_buckets = int((counterpart.get("comm") or {}).get("buckets") or 0) or buckets if n > 1 else None
            t_model, w_t = model(target, nodes, gpus, cp_buckets if bucket_cap(cp_cfg) == cap else buckets, plain)
            cp_model, w_cp = model(cp_cfg, nodes, gpus, cp_buckets, plain)
            parts = carried_parts(counterpart, cp_model, t_model, w_t / w_cp)
            t = sum(parts.values())
            as_ran = carried_parts(counterpart, cp_model, cp_model, 1.0)
            term_sd = {f"{p} moved": interval.MODEL_SD * abs(v - as_ran.get(p, 0.0)) for p, v in parts.items()}
            same = abs(t - t_of(counterpart)) < 1e-9
            basis = (f"measured ({_label(axes_of(counterpart))})" if same else
                     f"measured {_label(axes_of(counterpart))}, each part changed as the model changes it")
        else:
            extrapolated.append(f"no recorded {nodes}x{gpus} run of this group: the model alone")
            term_sd = dict(t_model.term_sd)
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
                    link=t_model.link, extrapolated=tuple(extrapolated), changes=tuple(changes), parts=parts,
                    memory=t_model.memory, term_sd=term_sd)


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
    out = {"unaccounted": (t_of(run) - sum(measured.values())) * samples}
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
    group = group_of(ax)
    if group in rec.baselines:
        return rec.baselines[group], ""
    if not rec.baselines:
        return None, "no finished 1x1 baseline recorded"
    same_model = [key for key in rec.baselines if _without_strategy(key) == _without_strategy(group)]
    if same_model:  # one worker runs the plain model whatever its strategy (trainer.parallelism.parallel)
        other = rec.baselines[same_model[0]]
        return other, f"strategy {ax['strategy']} from the {axes_of(other)['strategy']} baseline (one worker runs " \
                      "every strategy the same way)"
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
    workload, taker = cfg.get("workload"), workload_class(cfg)
    per_worker = taker.config_work_per_worker(workload) if taker is not None and isinstance(workload, dict) else None
    if per_worker is not None:
        # a program that counts its own steps (a script's [workload].work: each worker the baseline's steps at
        # its own batch, or one total split between the workers)
        return n * float(cfg["batch_size"]) / float(src_cfg["batch_size"]) if per_worker else 1.0
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


def _label(ax: dict[str, Any], scale_only: bool = False) -> str:
    """A run's configuration label in advice texts (or only its `1x1`)."""
    return label_words(ax)["scale"] if scale_only else config_label(ax)


