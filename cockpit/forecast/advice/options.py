"""Advice with a number: for each loss of an N-worker run, the study key that acts on it, the value to try
(chosen by rule, docs/prediction.md) and what :func:`cockpit.forecast.advice.forecasting.forecast` expects from it,
written in one line by :meth:`Advice.text` for every view (the report, the run detail, the headless lines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cockpit.figures import explain, units
from cockpit.forecast import prediction
from cockpit.forecast.advice.effects import (
    BUCKET_LADDER_MB,
    MAX_BUCKETS,
    axes_of,
    bucket_cap,
    buckets_for,
    changed,
    config_of,
    get_key,
    group_of,
    study_key,
    taken,
    what_if_arg,
)
from cockpit.forecast.advice.forecasting import Forecast, Recorded, forecast
from cockpit.study.spec import AXES
from cockpit.workloads.script import SHARED_AXES
from runcontract.ddp_buckets import DDP_DEFAULT_BUCKET_MB


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
    label: str = ""  # the term's label for this run (explain.term_label: comm by the kinds it issued)
    unadvised: bool = False  # predicted, but no faster or within the noise: `reason` says so (gain_unclear)
    t90: tuple[float, float] | None = field(default=None, compare=False)  # the predicted T's 90% interval

    @property
    def gain_s(self) -> float:
        return self.t_s - self.predicted.t_s if self.predicted is not None else math.nan

    @property
    def predicted_t_s(self) -> float:
        return self.predicted.t_s if self.predicted is not None else math.nan

    def term_sd(self) -> dict[str, float]:
        """The sd in seconds of each modelled term of the predicted T (cockpit.forecast.interval.for_terms)."""
        return dict(self.predicted.term_sd) if self.predicted is not None else {}

    @property
    def setting(self) -> str:
        """`[train] bucket_cap_mb = 1.0`, joined with `and` for several keys."""
        return " and ".join(study_key(k, v) for k, v in self.keys)

    @property
    def what_if(self) -> list[str]:
        return [what_if_arg(k, v) for k, v in self.keys]

    def text(self, head: bool = True) -> str:
        """The advice in one line, e.g. `exposed all-reduce 0.94 s: set [train] bucket_cap_mb = 1.0 →
        predicted T 4.31 s → 3.72 s, E 66% → 77%`: every view prints this (``head``: the loss first)."""
        lead = f"{self.label or explain.TERM_LABELS[self.term]} {self.loss_s:.2f} s: " if head else ""
        if not self.keys:
            return f"{lead}{self.reason}"
        p = self.predicted
        if p is None:
            return f"{lead}try {self.setting}: {self.reason if self.unadvised else f'not predicted ({self.reason})'}"
        text = (f"{lead}set {self.setting} → predicted T {self.t_s:.2f} s → {p.t_s:.2f} s{t90_words(self.t90)}, "
                f"E {units.percent(self.efficiency)} → {units.percent(p.efficiency)}")
        return text + " (extrapolated)" if p.extrapolated else text


def t90_words(t90: tuple[float, float] | None) -> str:
    """` (90% 3.40-4.07 s)` after a predicted T, where the study's error model gave it one."""
    return f" (90% {t90[0]:.2f}-{t90[1]:.2f} s)" if t90 is not None else ""


def advise(rec: dict[str, Any], recorded: Recorded, links: prediction.Links) -> list[Advice]:
    """For each loss term of an analysed N-worker run (cockpit.forecast.analysis row), largest first: the key that
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
        label = explain.term_label(term, rec)
        candidates = _candidates(term, cfg, run, rec, recorded, links)
        options = [_option(term, loss, keys, cfg, rec, recorded, links, reason)
                   for keys, reason in candidates if all(taken(cfg, k) for k, _ in keys)]
        if candidates and not options:  # a script whose command reads none of the keys that act on it
            out.append(Advice(term, loss, (), rec["train_time_s"], rec["efficiency"], label=label,
                              reason=_not_read([k for keys, _ in candidates for k, _ in keys if not taken(cfg, k)])))
            continue
        if not options:
            out.append(Advice(term, loss, (), rec["train_time_s"], rec["efficiency"], label=label,
                              reason="no key acts on it: the result's parts do not add up to its T (rerun with "
                                     "the current trainer)"))
            continue
        predicted = [o for o in options if o.predicted is not None]
        best = min(predicted, key=lambda o: o.predicted.t_s if o.predicted else math.inf, default=options[0])
        rest = tuple(replace(o, label=label) for o in options if o is not best)
        out.append(replace(best, loss_s=loss, alternatives=rest, label=label))
    return out


def _not_read(keys: list[str]) -> str:
    """Why a script's run gets no advice on a loss: the keys that act on it, which its command does not read."""
    placeholders = sorted({k for k in keys if k in SHARED_AXES})
    others = sorted({k for k in keys if k not in SHARED_AXES})
    words = [f"its [workload].command names none of {', '.join('{' + k + '}' for k in placeholders)}"] if placeholders else []
    if others:
        words.append(f"{', '.join(others)} {'is' if len(others) == 1 else 'are'} the HLM trainer's")
    return "no key the script reads acts on it: " + "; ".join(words)


def _option(term: str, loss: float, keys: tuple[tuple[str, Any], ...], cfg: dict[str, Any], rec: dict[str, Any],
            recorded: Recorded, links: prediction.Links, reason: str) -> Advice:
    t, e = rec["train_time_s"], rec["efficiency"]
    if reason:
        return Advice(term, loss, keys, t, e, reason=reason)
    target = changed(cfg, keys)
    p = forecast(target, recorded, links, [(k, get_key(cfg, k), v) for k, v in keys])
    if isinstance(p, prediction.NoPrediction):
        return Advice(term, loss, keys, t, e, reason=p.reason)
    unclear = gain_unclear(t, p.t_s, recorded.spread.get(tuple(axes_of(cfg)[a] for a in AXES)))
    return Advice(term, loss, keys, t, e, reason=unclear, unadvised=True) if unclear else Advice(term, loss, keys, t, e, p)


# Where the study did not repeat a configuration, the run-to-run noise it must beat is taken as this share of T:
# repeated runs of one configuration on a shared machine differ by about that much (the issue's own pairs, E
# 0.82-0.93 for one configuration; bench/README.md, the optimisation loop's repeats).
UNREPEATED_NOISE = 0.10


def gain_unclear(t: float, predicted_t: float, spread: tuple[float, int] | None) -> str:
    """Why a predicted T is not given as a gain, or "", worded to follow "try <keys>: ": a change predicted
    slower (or no faster) is never advised, and a gain within the noise is not given: the spread of T over
    the study's repeats of the run (max - min) where it repeated it, else UNREPEATED_NOISE of T."""
    gain = t - predicted_t
    if gain <= 0:
        return f"predicted {'slower' if gain < 0 else 'no faster'}, T {t:.2f} s → {predicted_t:.2f} s"
    if spread is not None and gain <= spread[0]:
        return (f"the predicted gain {gain:.2f} s (T {t:.2f} s → {predicted_t:.2f} s) is within the {spread[0]:.2f} s "
                f"spread of T over {spread[1]} repeated runs")
    if spread is None and gain <= UNREPEATED_NOISE * t:
        return (f"the predicted gain {gain:.2f} s (T {t:.2f} s → {predicted_t:.2f} s) is within "
                f"{UNREPEATED_NOISE:.0%} of T ({UNREPEATED_NOISE * t:.2f} s), what one configuration's runs differ by "
                "on a shared machine; run it again to measure the spread here")
    return ""


def _candidates(term: str, cfg: dict[str, Any], run: dict[str, Any], rec: dict[str, Any], recorded: Recorded,
                links: prediction.Links) -> list[tuple[tuple[tuple[str, Any], ...], str]]:
    """(keys to set, reason it cannot be predicted or "") for each key that acts on `term`."""
    batch = _double_batch(cfg)
    if term == "comm":
        strategy = axes_of(run)["strategy"]
        # DDP's buckets act on ddp's and zero1's all-reduce only; a strategy that moves more than ddp is priced
        # against ddp (cockpit.forecast.prediction.STRATEGY_COMM)
        buckets = _bucket_options(cfg, run, recorded, links) if strategy in ("ddp", "zero1") else []
        other = [((("strategy", "ddp"),), "")] if strategy != "ddp" else []
        return [*buckets, (batch, ""), *other]
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
    if steps is not None and taken(cfg, "train.steps"):  # a script counts its own steps
        keys.append(("train.steps", max(1, round(int(steps) / 2))))
    return tuple(keys)


def _bucket_options(cfg: dict[str, Any], run: dict[str, Any], recorded: Recorded, links: prediction.Links
                    ) -> list[tuple[tuple[tuple[str, Any], ...], str]]:
    """The cap on the ladder with the least predicted T among those giving more buckets than now and at most
    MAX_BUCKETS; the largest cap for a bucket count."""
    grad = (run.get("comm") or {}).get("grad_bytes")
    if not grad:
        smaller = next(c for c in BUCKET_LADDER_MB if c <= (bucket_cap(cfg) or DDP_DEFAULT_BUCKET_MB) / 4)
        return [((("train.bucket_cap_mb", smaller),), "the run's result.json has no comm.grad_bytes (an older trainer)")]
    now = int((run.get("comm") or {}).get("buckets") or buckets_for(grad, bucket_cap(cfg)))
    caps: dict[int, float] = {}
    for cap in BUCKET_LADDER_MB:
        k = buckets_for(grad, cap)
        if now < k <= MAX_BUCKETS:
            caps.setdefault(k, cap)
    if not caps:
        return [((("train.bucket_cap_mb", bucket_cap(cfg) or DDP_DEFAULT_BUCKET_MB),),
                 f"already {now} buckets: the advice goes to at most {MAX_BUCKETS}")]
    # the model's exposed all-reduce alone tells the candidates apart (every other part is the same)
    ax = axes_of(run)
    base = recorded.baselines.get(group_of(ax))
    work = float(rec_work) if (rec_work := run_work(run, base)) else 1.0
    scored = []
    for k, cap in caps.items():
        p = prediction.predict(base, int(ax["nodes"]), int(ax["gpus_per_node"]), work, links, buckets=k,
                               strategy=ax["strategy"]) if base else None
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
