"""How far a predicted figure can be trusted: a 90% interval from the model's own measured misses.

One function, :func:`error_model`, turns what the study has measured into a spread of ln(measured / predicted):
the misses of its finished configurations (against the refit prediction) and the spread of its repeated runs
(the same configuration run more than once). :func:`interval` puts that spread around any figure the model
predicts (T, node-hours, S, E, memory, kWh); :meth:`Interval.words` says it beside the number: "3.30 s, 90% between 3.05 and 3.60".
docs/prediction.md ("How sure a prediction is") states the rule and the prior.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

LEVEL = 0.90
MIN_MISSES = 3  # fewer finished predictions than this: the prior width
# The prior: +-40% (ln 1.4 either side) where the study has too few misses of its own. It spans the misses the
# project's benches recorded before any study of the site finished (DDP +1% to +15%, ZeRO-1 +8%, FSDP +33%, the
# 2-node Slurm run +11.5%; bench/README.md), FSDP on shared cores (+69%) excepted.
PRIOR_RELATIVE = 0.40


@dataclass(frozen=True)
class Spread:
    """The spread of ln(measured / predicted) a study's figures are given: ``half`` either side of ``centre``
    (ln units), and what it rests on, in words."""

    centre: float
    half: float
    basis: str
    misses: int = 0
    repeats: int = 0


@dataclass(frozen=True)
class Interval:
    """A figure and its 90% interval, with the spread it comes from."""

    value: float
    low: float
    high: float
    spread: Spread
    level: float = LEVEL

    def words(self, unit: str = "", spec: str = ".2f", show: Callable[[float], str] | None = None) -> str:
        """`3.30 s, 90% between 3.05 and 3.60` (each number in the format `spec`, or as `show` prints it:
        cockpit.figures.units.percent for an efficiency)."""
        u = f" {unit}" if unit else ""
        def f(v: float) -> str:
            return show(v) if show is not None else f"{v:{spec}}"
        return f"{f(self.value)}{u}, {self.level:.0%} between {f(self.low)} and {f(self.high)}"

    def contains(self, measured: float) -> bool:
        return self.low <= measured <= self.high

    def as_dict(self) -> dict[str, float | str]:
        return {"value": self.value, "low": self.low, "high": self.high, "level": self.level,
                "basis": self.spread.basis}


# Student's t at 0.95 (a two-sided 90% interval) for 1 to 30 degrees of freedom; beyond, 1.645 (the normal's)
T95 = (6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697)


def t_quantile(df: int) -> float:
    """Student's t two-sided 90% quantile: 2.92 for 2 degrees of freedom."""
    return T95[df - 1] if df <= len(T95) else 1.645


def log_misses(pairs: Iterable[tuple[float, float]]) -> list[float]:
    """ln(measured / predicted) of each (predicted, measured) pair with both figures positive and finite."""
    return [math.log(m / p) for p, m in pairs if p > 0 and m > 0 and math.isfinite(p) and math.isfinite(m)]


def repeat_spread(groups: Iterable[Sequence[float]]) -> tuple[float, int]:
    """The pooled standard deviation of ln(T) within each configuration that ran more than once, and its degrees
    of freedom (0: no repeats)."""
    ss, df = 0.0, 0
    for values in groups:
        logs = [math.log(v) for v in values if v > 0]
        if len(logs) > 1:
            mean = sum(logs) / len(logs)
            ss += sum((x - mean) ** 2 for x in logs)
            df += len(logs) - 1
    return (math.sqrt(ss / df) if df else 0.0), df


def error_model(misses: Sequence[float], repeats: Iterable[Sequence[float]] = ()) -> Spread:
    """The spread a prediction is given. With MIN_MISSES or more misses (ln measured/predicted of finished
    configurations, against the prediction the plan makes now: cockpit.forecast.plan.PlanLine.miss): a Student-t
    prediction interval, centre their mean, half-width t(n-1) x s x sqrt(1 + 1/n). With fewer: the prior,
    +-PRIOR_RELATIVE. Repeated runs widen it where the runs' own spread is wider (t(df) x s_repeat x sqrt(2): a run and its prediction each vary by that much)."""
    n = len(misses)
    rep_sd, rep_df = repeat_spread(repeats)
    rep_half = t_quantile(rep_df) * rep_sd * math.sqrt(2) if rep_df else 0.0
    rep_words = f", runs repeated: {rep_df} degrees of freedom, sd {rep_sd:.1%}" if rep_df else ""
    if n >= MIN_MISSES:
        mean = sum(misses) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in misses) / (n - 1))
        half = t_quantile(n - 1) * sd * math.sqrt(1 + 1 / n)
        basis = f"t over the misses of {n} finished configurations (mean {math.expm1(mean):+.1%}, sd {sd:.1%}{rep_words})"
        return Spread(mean, max(half, rep_half), basis, n, rep_df)
    half = math.log1p(PRIOR_RELATIVE)
    basis = (f"prior +-{PRIOR_RELATIVE:.0%}: {n} finished configuration{'s' if n != 1 else ''} with a prediction, "
             f"{MIN_MISSES} needed{rep_words}")
    return Spread(0.0, max(half, rep_half), basis, n, rep_df)


def interval(value: float, spread: Spread, *, inverse: bool = False) -> Interval:
    """The interval of a figure that scales with T (T, node-hours, memory, kWh at the baseline's measured power:
    ``inverse`` False) or with 1/T
    (speedup, efficiency: ``inverse`` True), from the spread of ln(measured T / predicted T)."""
    lo, hi = math.exp(spread.centre - spread.half), math.exp(spread.centre + spread.half)
    if inverse:
        lo, hi = 1 / hi, 1 / lo
    return Interval(value, value * lo, value * hi, spread)
