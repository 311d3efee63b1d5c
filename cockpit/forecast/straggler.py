"""The wait for the slower rank: what a synchronous step of N workers adds to the comm part because the
collective cannot finish before the last rank reaches it (docs/prediction.md, "The wait for the slower rank").

Each rank's step up to the collective takes X_i, independent across ranks with the baseline's per-step mean
and standard deviation sd. Rank 0 (whose parts T reports) waits in the collective for the slowest one, so per
step it waits on average

    wait_N = E[max of N of X] - E[X] = e_N x sd        e_N = the expected largest of N standard normals

(e_1 = 0, e_2 = 1/sqrt(pi) = 0.564, e_4 = 1.029, e_8 = 1.424), and the comm part gains wait_N x steps_N. sd is the
baseline's own per-step spread: result.json `timing.step_time_sd_s` (the trainer's standard deviation of each
step's wall time less its comm, without each segment's first step), or, for a run of a release before it, from
its per-interval records (metrics.jsonl: the steps of each interval and their mean time), `interval_sd`, which
the store adds as it reads the result (cockpit.store.StudyStore). Pure Python.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

TERM = "slower_rank_wait"  # its name among a prediction's comm_by_kind terms
WORDS = "wait for the slower rank"


@cache
def expected_max(n: int) -> float:
    """E[max of n independent standard normals] = integral of x n phi(x) Phi(x)^(n-1) dx (Simpson's rule over
    [-10, 10], 4000 intervals): 0 for one, 1/sqrt(pi) for two."""
    if n < 2:
        return 0.0
    lo, hi, steps = -10.0, 10.0, 4000
    h = (hi - lo) / steps

    def f(x: float) -> float:
        phi = math.exp(-x * x / 2) / math.sqrt(2 * math.pi)
        return x * n * phi * (0.5 * (1 + math.erf(x / math.sqrt(2)))) ** (n - 1)

    total = f(lo) + f(hi) + sum((4 if i % 2 else 2) * f(lo + i * h) for i in range(1, steps))
    return total * h / 3


def wait_per_step(sd: float, workers: int) -> float:
    """Seconds per step rank 0 waits for the slowest of `workers` ranks: e_N x sd."""
    return expected_max(workers) * sd if sd > 0 else 0.0


def interval_sd(intervals: Sequence[tuple[int, float]]) -> float | None:
    """The per-step standard deviation from per-interval means: (steps k_i, mean step seconds m_i) each.

    With steps independent of spread sd, an interval's mean varies by sd^2 / k_i, so
    sd^2 = sum k_i (m_i - m)^2 / (n - 1), m = sum k_i m_i / sum k_i (the between-interval sum of squares of an
    analysis of variance). None with fewer than two intervals of at least one step."""
    usable = [(k, m) for k, m in intervals if k >= 1 and math.isfinite(m)]
    if len(usable) < 2:
        return None
    steps = sum(k for k, _ in usable)
    mean = sum(k * m for k, m in usable) / steps
    return math.sqrt(sum(k * (m - mean) ** 2 for k, m in usable) / (len(usable) - 1))


def metrics_intervals(records: Iterable[Mapping[str, Any]], first_step_s: float | None = None
                      ) -> list[tuple[int, float]]:
    """(steps, mean step seconds less comm) of each interval one rank's metrics records (metrics.jsonl, or the
    store's metrics rows: `step` at the interval's end, `step_time_s` its mean, `comm_s` its comm seconds) cover,
    in step order; the first step (`first_step_s`, result.json timing: it holds the loader's start) is taken
    out of the first interval."""
    out: list[tuple[int, float]] = []
    last = 0
    for r in sorted(records, key=lambda r: int(r.get("step") or 0)):
        step, mean = int(r.get("step") or 0), r.get("step_time_s")
        k = step - last
        if k < 1 or not isinstance(mean, int | float):
            continue
        seconds = k * float(mean) - float(r.get("comm_s") or 0.0)
        if last == 0 and first_step_s is not None and k > 1:
            k, seconds = k - 1, seconds - float(first_step_s)
        out.append((k, seconds / k))
        last = step
    return out


def step_sd(base: Mapping[str, Any]) -> float | None:
    """The baseline's per-step standard deviation its result.json recorded (`timing.step_time_sd_s`), else None."""
    sd = (base.get("timing") or {}).get("step_time_sd_s")
    return float(sd) if isinstance(sd, int | float) and math.isfinite(sd) and sd >= 0 else None


def source(base: Mapping[str, Any]) -> str:
    """Where the baseline's per-step sd comes from, as the words append it: "" where its result.json recorded
    it; ` from its 12 metrics intervals` where the store worked it out of the metrics an earlier release wrote
    (cockpit.store: `timing.step_time_sd_from = "metrics"`)."""
    timing = base.get("timing") or {}
    if timing.get("step_time_sd_from") != "metrics":
        return ""
    return f" from its {timing.get('step_time_sd_intervals', '?')} metrics intervals"


def words(sd: float | None, workers: int, where: str = "") -> str:
    """How the prediction priced the wait: `wait for the slower rank 4.1 ms per step (e_2 0.56 x the baseline's
    per-step sd 7.3 ms)`, `where` the sd came from (`source`) appended, or that it did not."""
    if sd is None:
        return f"{WORDS} not priced (the baseline recorded no per-step spread, timing.step_time_sd_s)"
    return (f"{WORDS} {wait_per_step(sd, workers) * 1e3:.3g} ms per step (e_{workers} {expected_max(workers):.2f} x "
            f"the baseline's per-step sd {sd * 1e3:.3g} ms{where})")
