"""The plan in words: what its figures are, each prediction with its 90% interval, each finished one's first and
refit prediction beside its measurement, and where the intervals are wide, the run (or the repeated baselines)
that would narrow them. `cockpit plan` and the TUI's plan dialog print these same lines."""

from __future__ import annotations

import math

from cockpit.figures import units
from cockpit.forecast import interval
from cockpit.forecast.plan import Plan, PlanLine, hours


def figures_words(lines: list[PlanLine]) -> str | None:
    """What the plan's T, S and node-hours are, in the words of every view that shows them (None: no figures)."""
    if not any(line.figures is not None for line in lines):
        return None
    done = any(line.measured is not None for line in lines)
    return ("measured where done (the report's figures), else " if done else "") + \
        "predicted from the group's finished 1x1 baseline"


def prediction_lines(plan: Plan) -> list[str]:
    """Each predicted configuration's figures with their 90% intervals, and each finished one's first and refit
    prediction beside its measurement, with the term that moved (cockpit.forecast.plan.PlanLine)."""
    out = []
    if plan.spread is not None and any(line.intervals() for line in plan.lines):
        out.append(f"predictions with 90% intervals ({interval.legend(plan.spread)}):")
    if plan.pooled:
        out.append("predicted from repeated baselines (the study's baseline_runs): " + "; ".join(plan.pooled))
    for line in plan.lines:
        iv = line.intervals()
        if iv and line.status != "too big":
            moved = line.moved()
            first = (f"; first predicted {line.first.t_s:.2f} s, refit moved {moved}" if line.first and moved else "")
            kwh = f"; kWh {iv['kwh'].words(spec='.3g')}" if "kwh" in iv else ""
            out.append(f"  {line.label}: T {iv['t_s'].words('s')}; node-hours {iv['node_hours'].words()}; "
                       f"S {iv['speedup'].words()}; E {iv['efficiency'].words(show=units.percent)}{kwh}{first}")
    done = [line for line in plan.lines if line.measured is not None and line.first is not None]
    if done:
        out.append("finished configurations, predicted before they ran:")
    for line in done:
        assert line.measured is not None and line.first is not None
        refit = f", refit {line.predicted.t_s:.2f} s" if line.predicted is not None else ""
        moved = line.moved()
        out.append(f"  {line.label}: first predicted T {line.first.t_s:.2f} s{refit}, measured "
                   f"{line.measured.t_s:.2f} s ({line.measured.t_s / line.first.t_s - 1:+.1%} on the first)"
                   + (f"; moved: {moved}" if moved else ""))
    narrow = narrowing_words(plan)
    if narrow:
        out.append(narrow)
    return out


WIDE = 0.25  # an interval wider than +-25% (the strategies' and advice's target) is too wide to decide with


REPEAT_HINT = 3  # the baseline runs repeat_words prices: the mean of 3 carries 1/sqrt(3) of one run's noise


def narrowing_words(plan: Plan) -> str:
    """Where the intervals are wide, the run that would narrow them most: among the configurations to submit with
    a prediction, one of a scale (nodes x workers) no finished run has measured (its miss tests a term nothing
    has tested yet), the cheapest in predicted node-hours, then in T; and where the predictions rest on single
    baseline runs, what repeating them would take off (repeat_words); "" where they are narrow or none is left."""
    halves = sorted(iv.spread.mean_half() for line in plan.lines if (iv := line.intervals().get("t_s")) is not None)
    if not halves or math.expm1(halves[len(halves) // 2]) <= WIDE:
        return ""
    wide = halves[len(halves) // 2]
    measured = {(line.nodes, line.measured.workers) for line in plan.lines if line.measured is not None}
    todo = [line for line in plan.to_submit if line.predicted is not None and line.predicted.workers > 1]
    if not todo:
        return repeat_words(plan)
    best = min(todo, key=lambda line: ((line.nodes, line.predicted.workers) in measured,  # type: ignore[union-attr]
                                       line.node_hours, line.predicted.t_s))  # type: ignore[union-attr]
    assert best.predicted is not None
    new = (best.nodes, best.predicted.workers) not in measured
    terms = best.predicted.term_sd
    largest = max(terms, key=lambda k: terms[k], default="")
    size = f"up to {terms[largest]:.2f} s longer" if largest == interval.UPSIDE_TERM else f"sd {terms.get(largest, 0):.2f} s"
    return (f"the intervals are wide (median +-{math.expm1(wide):.0%}); the run that narrows them "
            f"most: {best.label} (predicted T {best.predicted.t_s:.2f} s, {hours(best.node_hours)} node-hours"
            + (", a scale no finished run has measured" if new else ", the cheapest to measure")
            + (f"; its largest modelled term: {largest}, {size}" if largest else "")
            + "): each finished prediction is a miss the intervals are built from, and its run refits its terms"
            + (f"; {more}" if (more := repeat_words(plan)) else ""))


def repeat_words(plan: Plan) -> str:
    """Where the predictions rest on single baseline runs, what repeating them would take off every interval: the
    noise floor 1.645 x noise x sqrt(1 + 1/k) at k = 1 against k = REPEAT_HINT ("" where the baselines are
    already repeated, or nothing is predicted)."""
    runs = [line.predicted.baseline_runs for line in plan.lines if line.predicted is not None
            and line.measured is None and line.predicted.workers > 1]
    if not runs or min(runs) > 1 or plan.spread is None:
        return ""
    def floor(k: int) -> float:
        return math.expm1(interval.Z90 * plan.spread.noise * math.sqrt(1 + 1 / k))  # type: ignore[union-attr]
    return (f"the study's baseline_runs = {REPEAT_HINT} ({REPEAT_HINT - 1} more 1x1 runs per group) would lower every "
            f"interval's noise floor from +-{floor(1):.1%} to +-{floor(REPEAT_HINT):.1%} (noise sd "
            f"{plan.spread.noise:.1%})")
