"""The time to result in words: the table's cells and the lines under it (`cockpit plan --full-run`, the
notebook's `full_run`), from cockpit.forecast.full_run's one computation."""

from __future__ import annotations

import time
from typing import Any

from cockpit.forecast.full_run import FullRunPlan, FullRunRow, Span

HEADERS = ("config", "NxG", "s/step", "steps", "T", "T 90%", "jobs", "start (wait)", "finish", "finish 90%", "node-h",
           "kWh", "cost")
CAPTION = ("90%: the predicted figure's 90% interval (- where measured); jobs: the time limit's jobs (at T's 90% upper "
           "end in brackets); start: the scheduler's estimate (the wait)")


def clock(epoch: float, day: bool = True) -> str:
    """An instant in this machine's time zone: `2026-12-24 18:00` (`12-24 18:00` in the table)."""
    return time.strftime("%Y-%m-%d %H:%M" if day else "%m-%d %H:%M", time.localtime(epoch))


def duration(seconds: float) -> str:
    """`45 s`, `12 min`, `3.2 h`, `2.1 d`."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def figure(value: float) -> str:
    return f"{value:.3g}" if value < 1000 else f"{value:.0f}"


def span_words(span: Span | None, show: Any = figure) -> str:
    """`1.2 (0.9-1.6)`: a figure and its 90% interval (none where measured)."""
    if span is None:
        return "-"
    if span.low == span.high:
        return show(span.value)
    return f"{show(span.value)} ({show(span.low)}-{show(span.high)})"


def wait_words(plan: FullRunPlan, row: FullRunRow) -> str:
    start = row.queue.start
    if start is None:
        return "-"
    wait = max(0.0, start - plan.now)
    return f"{_short(plan, start)} ({duration(wait)})" if wait >= 60 else "now"


def shown_table(plan: FullRunPlan) -> tuple[list[str], list[list[str]]]:
    """The table every view shows (headers, a row of cells per configuration): HEADERS and table_rows less the
    columns with nothing to say, kWh and cost where no row has them, the 90% columns where no T is predicted."""
    interval = any(r.t_s is not None and r.t_s.low != r.t_s.high for r in plan.rows)
    shown = [i for i, h in enumerate(HEADERS) if (h not in ("kWh", "cost") or any(
        getattr(r, h.lower()) is not None for r in plan.rows)) and ("90%" not in h or interval)]
    return [HEADERS[i] for i in shown], [[cells[i] for i in shown] for cells in table_rows(plan)]


def table_rows(plan: FullRunPlan) -> list[tuple[str, ...]]:
    """One row of HEADERS' cells per configuration with figures: T's and the finish's 90% interval in their own
    columns (`-` where measured); those of node-hours, kWh and cost are in the named configurations' lines and the
    notebook's records. An instant on another day than now carries its date."""
    out: list[tuple[str, ...]] = []
    for r in plan.rows:
        if r.t_s is None or r.segments is None or r.node_hours is None:
            continue
        jobs = str(r.segments.count) + (f" ({r.segments_high.count})" if r.segments_high and
                                        r.segments_high.count != r.segments.count else "")
        finish = r.finish
        when = (lambda t: _short(plan, t))  # noqa: E731 - one rule for every instant of the table
        out.append((r.config_id, f"{r.nodes}x{r.workers // max(1, r.nodes)}", f"{r.step_s:.3g}", f"{r.steps:.0f}",
                    duration(r.t_s.value), _ends(r.t_s, duration), jobs, wait_words(plan, r),
                    when(finish.value) if finish else "-", _ends(finish, when) if finish else "-",
                    figure(r.node_hours.value), figure(r.kwh.value) if r.kwh else "-",
                    figure(r.cost.value) if r.cost else "-"))
    return out


def _short(plan: FullRunPlan, epoch: float) -> str:
    """`14:14` today, `11-30 14:14` on another day."""
    same = time.localtime(epoch)[:3] == time.localtime(plan.now)[:3]
    return time.strftime("%H:%M" if same else "%m-%d %H:%M", time.localtime(epoch))


def _ends(span: Span, show: Any) -> str:
    """`3.6 h-7.0 h`: a predicted figure's 90% interval; `-` for a measured one."""
    return "-" if span.low == span.high else f"{show(span.low)}-{show(span.high)}"


def basis_lines(plan: FullRunPlan) -> list[str]:
    """What every figure of the table rests on, with its inputs."""
    limit = duration(plan.time_limit_s)
    lines = [
        f"full run of {plan.run.words()} on each configuration: T = its study run's T (measured where done, else "
        f"predicted, with the plan's 90% interval) x the production run's samples / its run's samples; s/step its "
        f"T per step, steps the production run's on it",
        f"time limit {limit}: jobs of at most {limit}, each paying the measured start-up (result.json "
        f"timing.startup_s) and ending {plan.signal_s:g} s (signal_seconds) early to save a checkpoint, requeued "
        f"until done; preparation and evaluation paid once; node-h = (T + start-ups + checkpoints) x nodes",
        f"queue: {plan.queue_words}" if plan.queue_words else "queue: not asked (every job starts now)",
    ]
    if any(r.kwh is not None for r in plan.rows):
        lines.append("kWh over T: the measured power per GPU x GPUs x T (start-up and idle nodes not included)")
    if plan.prices.given:
        lines.append(plan.prices.words())
    return lines


def row_words(plan: FullRunPlan, r: FullRunRow) -> str:
    """`synthetic ... 1x4 (ab12cd): finishes 2026-12-24 03:10 (90% 02:40-03:55), starts now, 3 jobs, 1.52
    node-hours, cost 1.82`."""
    assert r.finish is not None and r.segments is not None and r.node_hours is not None
    finish = clock(r.finish.value) + (f" (90% {clock(r.finish.low)} to {clock(r.finish.high)})"
                                      if r.finish.low != r.finish.high else "")
    cost = f", cost {span_words(r.cost)}" if r.cost is not None else ""
    start = wait_words(plan, r)
    return (f"{r.label} ({r.config_id}): finishes {finish}, starts {start}{f' ({r.queue.words})' if r.queue.words else ''}, "
            f"{r.segments.count} job(s), {span_words(r.node_hours)} node-hours{cost}")


def summary_lines(plan: FullRunPlan) -> list[str]:
    """The basis, the first to finish, the cheapest that meets the deadline, the Pareto set, and why any
    configuration has no figures."""
    lines = basis_lines(plan)
    first = plan.first
    if first is None:
        lines.append("no configuration has a start estimate (below, why)" if any(r.t_s for r in plan.rows)
                     else "no configuration has figures for the full run (below, why)")
    else:
        lines.append(f"first to finish: {row_words(plan, first)}")
        cheapest = plan.cheapest
        by = f"{plan.priced_by}" + (f", finishing by {clock(plan.deadline)}" if plan.deadline is not None else "")
        if cheapest is not None:
            lines.append(f"cheapest ({by}): {row_words(plan, cheapest)}")
        elif plan.deadline is not None:
            lines.append(f"no configuration finishes by the deadline {clock(plan.deadline)}: the first finishes "
                         f"{clock(first.finish.value) if first.finish else '-'}")
        pareto = plan.pareto
        if pareto:
            lines.append(f"Pareto set (finish vs {plan.priced_by}, soonest first): " + "; ".join(
                f"{r.config_id} {clock(r.finish.value, day=False) if r.finish else '-'} "
                f"{span_words(plan.price(r))}" for r in pareto))
    lines += [f"{r.label} ({r.config_id}): {r.reason}" for r in plan.rows if r.reason]
    lines += [f"{r.label} ({r.config_id}): no start: {r.queue.words}" for r in plan.rows
              if r.reason == "" and r.queue.start is None]
    lines += plan.left_out
    return lines


def records(plan: FullRunPlan) -> list[dict[str, Any]]:
    """One record per configuration, every figure with its 90% interval's ends (`_low`, `_high`), instants in
    epoch seconds: the notebook's `full_run` DataFrame. `first`, `cheapest` and `pareto` mark what the lines name."""
    first, cheapest, pareto = plan.first, plan.cheapest, {r.config_id for r in plan.pareto}
    out = []
    for r in plan.rows:
        rec: dict[str, Any] = {"config_id": r.config_id, "label": r.label, "nodes": r.nodes, "workers": r.workers,
                               "basis": r.basis, "step_s": r.step_s, "steps": r.steps,
                               "jobs": r.segments.count if r.segments else None, "startup_s": r.startup_s,
                               "queue_start": r.queue.start, "queue": r.queue.words}
        for name in ("t_s", "wall_s", "node_hours", "kwh", "cost", "finish"):
            span = getattr(r, name)
            rec.update({name: span.value if span else None, f"{name}_low": span.low if span else None,
                        f"{name}_high": span.high if span else None})
        rec.update(first=first is r, cheapest=cheapest is r, pareto=r.config_id in pareto, reason=r.reason)
        out.append(rec)
    return out
