"""How far a predicted figure can be trusted: a 90% interval built from the study's own spread and the terms the
prediction rests on.

:func:`error_model` turns what the study has measured into its spread: the noise of a run (the pooled spread of
its repeated runs, beside a stated prior) and the misses of its finished configurations (against the refit
prediction, pooled with the noise). :func:`for_terms` gives one prediction its own half-width: the noise of the
run and of its baseline, and each term the model priced rather than measured (cockpit.forecast.term_doubt: each
collective, the wait for the slower rank, shared cores, compute at a batch not run, FSDP's wrapping, the refit's
runs; `Prediction.term_sd`, seconds), never narrower than the misses say. :func:`interval` puts it around any
figure the model predicts (T, node-hours, S, E, memory, kWh); :meth:`Interval.words` says it beside the number:
"3.30 s, 90% between 3.05 and 3.60".
docs/prediction.md ("How sure a prediction is") states the rule and the priors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

LEVEL = 0.90
Z90 = 1.645  # the normal's two-sided 90% quantile
MIN_MISSES = 3  # fewer finished predictions than this: no Student-t over the misses
# The misses' spread is pooled with what they would spread by were the model exact (the run's and the baseline's
# noise, sqrt(1 + 1/k) x the noise, k the baseline's runs) counted as this many degrees of freedom: three misses alone give a t at 2 degrees
# of freedom (2.92) over an sd that one loaded run sets (bench/README.md, 2026-11-29: +-83%); the misses take over
# as they accrue.
MISS_PRIOR_DF = 4
# The run-to-run noise of T (sd of ln T) where the study has not repeated a configuration: the DDP row's three
# runs on a quiet machine (bench/README.md, 2026-11-29: 7.0%). Pooled with the study's own repeats, which outweigh
# it from NOISE_PRIOR_DF degrees of freedom on.
NOISE_PRIOR = 0.07
NOISE_PRIOR_DF = 4
# A term the model prices rather than measures (a collective from a link figure, the wait for the slower rank,
# the contention slowdown, compute at a batch size not run) is taken to be right within a factor of 2 at 90%:
# sd of its ln = ln 2 / 1.645. The benches' first comm predictions on a quiet machine fell within it
# (bench/README.md); each finished run that refits the term divides it by sqrt(1 + runs).
MODEL_SD = math.log(2.0) / Z90
REFIT_TERM = "refit"  # the term of a prediction whose per-step parts finished runs refit (their noise)
# A term that can only make T longer, given as the seconds it may add (not an sd): it widens the interval's high
# side alone (Spread.upside). cockpit.forecast.term_doubt prices it for CPU ranks sharing a host's cores.
UPSIDE_TERM = "shared cores (slower only)"


@dataclass(frozen=True)
class Spread:
    """The spread of ln(measured / predicted) a figure is given: ``half`` either side of ``centre`` (ln units),
    and what it rests on, in words. The study's (error_model) also holds the noise of one run (sd of ln T) that
    :func:`for_terms` adds each prediction's terms to."""

    centre: float
    half: float
    basis: str
    misses: int = 0
    repeats: int = 0
    noise: float = NOISE_PRIOR
    upside: float = 0.0  # ln units added to the high side only (a term that can only slow the run: UPSIDE_TERM)

    def mean_half(self) -> float:
        """The mean of the interval's two sides (ln units): how wide it is, its upside counted half."""
        return self.half + self.upside / 2


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


def noise_of(repeats: Iterable[Sequence[float]]) -> tuple[float, int, str]:
    """The noise of one run, sd of ln T: the prior NOISE_PRIOR (NOISE_PRIOR_DF degrees of freedom) pooled with
    the study's repeats (repeat_spread), its degrees of freedom from the repeats, and its words."""
    rep_sd, rep_df = repeat_spread(repeats)
    sd = math.sqrt((NOISE_PRIOR_DF * NOISE_PRIOR**2 + rep_df * rep_sd**2) / (NOISE_PRIOR_DF + rep_df))
    if not rep_df:
        return sd, 0, f"noise sd {sd:.1%} (the prior: no configuration has run twice)"
    return sd, rep_df, (f"noise sd {sd:.1%} (runs repeated: {rep_df} degrees of freedom, sd {rep_sd:.1%}, "
                        f"pooled with the prior {NOISE_PRIOR:.0%})")


def error_model(misses: Sequence[float], repeats: Iterable[Sequence[float]] = (), baseline_runs: int = 1) -> Spread:
    """The study's spread. With MIN_MISSES or more misses (ln measured/predicted of finished configurations,
    against the prediction the plan makes now: cockpit.forecast.plan.PlanLine.miss): a Student-t prediction
    interval, centre their mean, half-width t(n-1+MISS_PRIOR_DF) x s x sqrt(1 + 1/n), s their sd pooled with
    sqrt(1 + 1/k) x the noise at MISS_PRIOR_DF degrees of freedom (k: the runs each prediction's baseline is the
    mean of, `baseline_runs`). With fewer: centred, as wide as the largest miss seen (0 with none). Either way
    each prediction's own terms may widen it (:func:`for_terms`); the noise of a run is the prior pooled with the
    repeats (noise_of)."""
    n = len(misses)
    noise, rep_df, noise_words = noise_of(repeats)
    if n >= MIN_MISSES:
        mean = sum(misses) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in misses) / (n - 1))
        exact = math.sqrt(1 + 1 / baseline_runs) * noise  # how far the misses would spread were the model exact
        pooled = math.sqrt(((n - 1) * sd**2 + MISS_PRIOR_DF * exact**2) / (n - 1 + MISS_PRIOR_DF))
        half = t_quantile(n - 1 + MISS_PRIOR_DF) * pooled * math.sqrt(1 + 1 / n)
        basis = (f"t over the misses of {n} finished configurations (mean {math.expm1(mean):+.1%}, sd {sd:.1%}, "
                 f"pooled {pooled:.1%} with the noise's {exact:.1%} at {MISS_PRIOR_DF} degrees of freedom); "
                 f"{noise_words}")
        return Spread(mean, half, basis, n, rep_df, noise)
    seen = max((abs(m) for m in misses), default=0.0)
    basis = (f"{n} finished configuration{'s' if n != 1 else ''} with a prediction ({MIN_MISSES} give a t over the "
             f"misses)" + (f", none narrower than its largest miss {math.expm1(seen):+.1%}" if n else "")
             + f"; {noise_words}")
    return Spread(0.0, seen, basis, n, rep_df, noise)


def for_terms(spread: Spread, t_s: float, term_sd: Mapping[str, float], baseline_runs: int = 1) -> Spread:
    """One prediction's spread: half-width 1.645 x sqrt((1 + 1/k) noise^2 + sum over its terms of (sd_k / T)^2)
    (ln units; the run varies by the noise, and the baseline it is predicted from by the noise over k, the runs its
    T is the mean of: `baseline_runs`, cockpit.forecast.baseline_runs; `term_sd` each modelled term's standard
    deviation in seconds, `t_s` the predicted T), never narrower than the study's (its misses). A
    prediction whose parts the finished runs refit (a REFIT_TERM) already holds their bias: the misses' mean is
    not shifted out of it a second time. An UPSIDE_TERM's seconds widen the high side alone, by ln(1 + s / T).
    The basis names the terms in seconds."""
    terms = {k: v for k, v in term_sd.items() if v > 0 and math.isfinite(v) and k != UPSIDE_TERM}
    up_s = float(term_sd.get(UPSIDE_TERM) or 0.0)
    upside = math.log1p(up_s / t_s) if t_s > 0 and up_s > 0 and math.isfinite(up_s) else 0.0
    runs = max(1, baseline_runs)
    own = Z90 * math.sqrt((1 + 1 / runs) * spread.noise**2 + sum((v / t_s) ** 2 for v in terms.values())) \
        if t_s > 0 else math.inf
    named = ", ".join(f"{k} {v:.3g} s" for k, v in sorted(terms.items(), key=lambda kv: -kv[1]))
    baseline = "its baseline" if runs == 1 else f"its baseline (the mean of {runs} runs)"
    words = (f"+-{math.expm1(own):.1%} from the noise of the run and {baseline}"
             + (f" and its modelled terms (sd: {named})" if named else ""))
    if spread.half > own:
        words += f", widened to the study's +-{math.expm1(spread.half):.1%}"
    if upside:
        words += f", and up to {up_s:.3g} s ({math.expm1(upside):+.1%}) longer: {UPSIDE_TERM}"
    centre = 0.0 if REFIT_TERM in terms else spread.centre
    return replace(spread, centre=centre, half=max(own, spread.half), basis=f"{words}; {spread.basis}", upside=upside)


def legend(spread: Spread) -> str:
    """What every interval of a view rests on, as its legend says it (each line's own terms: for_terms)."""
    return f"each from the run's noise and the terms its prediction models; {spread.basis}"


def interval(value: float, spread: Spread, *, inverse: bool = False, timed: bool = True) -> Interval:
    """The interval of a figure that scales with T (T, node-hours, memory, kWh at the baseline's measured power:
    ``inverse`` False) or with 1/T
    (speedup, efficiency: ``inverse`` True), from the spread of ln(measured T / predicted T). A figure that is not
    a time (``timed`` False: memory) takes no upside: a term that can only slow the run holds no bytes."""
    upside = spread.upside if timed else 0.0
    lo, hi = math.exp(spread.centre - spread.half), math.exp(spread.centre + spread.half + upside)
    if inverse:
        lo, hi = 1 / hi, 1 / lo
    return Interval(value, value * lo, value * hi, spread)
