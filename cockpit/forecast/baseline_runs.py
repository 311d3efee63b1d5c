"""A baseline that ran more than once ([study].baseline_runs): what a prediction takes from its runs.

One run's T varies by the machine's noise (about 7% on a quiet machine, bench/README.md), and every prediction of
its group carries that error. The mean of k runs carries 1/sqrt(k) of it, so the prediction is made from the mean:
T and each part of the breakdown averaged over the runs, everything else (the probes, the per-step spread, the
memory, the model) the median run's, whose measured energy is kept at its own mean power. The runs' T go with it
(`RUNS_KEY`) for the words and for cockpit.forecast.interval.for_terms, which then counts the baseline's noise
once over k (docs/prediction.md, "Repeated baselines").
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

RUNS_KEY = "baseline_runs_s"  # the T of each run a pooled baseline is the mean of (absent: one run)


def t_of(result: Mapping[str, Any]) -> float:
    """A result's T (0.0 where it recorded none)."""
    return float((result.get("timing") or {}).get("train_time_s") or 0.0)


def median_run(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median T (the lower middle one of an even count), as the analysis picks a row's run."""
    ordered = sorted(runs, key=t_of)
    return ordered[(len(ordered) - 1) // 2]


def pooled(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The baseline a prediction is made from: the one run itself, or of several runs of one configuration their
    mean T and mean parts over the median run's other records (RUNS_KEY: each run's T)."""
    if len(runs) == 1:
        return runs[0]
    middle = median_run(runs)
    times = sorted(t_of(r) for r in runs)
    mean_t = statistics.fmean(times)
    names = dict.fromkeys(p for r in runs for p in (r.get("breakdown_s") or {}))
    parts = {p: statistics.fmean(float((r.get("breakdown_s") or {}).get(p) or 0.0) for r in runs) for p in names}
    out = {**middle, "timing": {**(middle.get("timing") or {}), "train_time_s": mean_t}, "breakdown_s": parts,
           RUNS_KEY: times}
    energy = middle.get("energy") or {}
    joules = energy.get("joules")
    if isinstance(joules, int | float) and t_of(middle) > 0:  # its mean power over the mean T
        out["energy"] = {**energy, "joules": float(joules) * mean_t / t_of(middle)}
    return out


def count(base: Mapping[str, Any]) -> int:
    """How many runs a baseline is the mean of (1: a single run)."""
    return len(base.get(RUNS_KEY) or ()) or 1


def words(base: Mapping[str, Any]) -> str:
    """`baseline T 10.23 s, the mean of 3 runs (10.10, 10.20, 10.40 s)`; "" for a single run."""
    times = base.get(RUNS_KEY) or ()
    if len(times) < 2:
        return ""
    return (f"baseline T {t_of(base):.2f} s, the mean of {len(times)} runs "
            f"({', '.join(f'{t:.2f}' for t in times)} s)")
