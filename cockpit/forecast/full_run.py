"""Time to result: the production run (N steps, epochs, tokens or samples) on each configuration of the study.

The study measured or predicted each configuration's T for its own short run (cockpit.forecast.plan: the
measured run where it is done, else the prediction with its 90% interval). A production run of the same
configuration is that T scaled by the samples (the time per sample is the study's), plus what the run pays
outside T: the start-up (measured: result.json timing.startup_s, of the configuration's own run, else of its
group's 1x1 baseline) once per job segment, a checkpoint per requeue, preparation and evaluation once. The
[cluster] time limit cuts the run into segments of at most time_limit, each re-paying the start-up and
ending signal_seconds early to save its checkpoint. The queue wait is the scheduler's own estimate for a job
submitted now (Backend.start_estimate: `sbatch --test-only` on Slurm; none without a scheduler). From those:
each configuration's finish time, node-hours, kWh and cost, the configuration that finishes first, the
cheapest one that meets a deadline, and the Pareto set of finish time against cost (docs/full-run.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cockpit.forecast.plan import Plan, PlanLine, group_baselines

UNITS = ("steps", "epochs", "tokens", "samples")  # what a production run is counted in
UNIT_HELP = "steps=20000 (each configuration's own steps), epochs=3, tokens=2e9 or samples=1e6"


@dataclass(frozen=True)
class ProductionRun:
    """The training the researcher will run: `amount` of `unit` (UNITS)."""

    unit: str
    amount: float

    def words(self) -> str:
        return f"{self.amount:g} {self.unit}"


def parse_production(text: str) -> ProductionRun:
    """`steps=20000`, `epochs=3`, `tokens=2e9`, `samples=1e6`; ValueError naming what is wrong."""
    unit, sep, amount = text.partition("=")
    unit = unit.strip().lower()
    if not sep or unit not in UNITS:
        raise ValueError(f"--full-run {text!r}: expected UNIT=AMOUNT with UNIT one of {', '.join(UNITS)} "
                         f"({UNIT_HELP})")
    try:
        value = float(amount)
    except ValueError:
        raise ValueError(f"--full-run {text!r}: {amount.strip()!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"--full-run {text!r}: the amount must be a positive number")
    return ProductionRun(unit, value)


@dataclass(frozen=True)
class Prices:
    """What a node-hour and a kWh cost (None: not priced); cost = node-hours x node_hour + kWh x kwh."""

    node_hour: float | None = None
    kwh: float | None = None

    @property
    def given(self) -> bool:
        return self.node_hour is not None or self.kwh is not None

    def cost(self, node_hours: float, kwh: float | None) -> float | None:
        """The cost of a run; None where a price is given for a figure that is not known (kWh unmeasured)."""
        if not self.given or (self.kwh is not None and kwh is None):
            return None
        return node_hours * (self.node_hour or 0.0) + (kwh or 0.0) * (self.kwh or 0.0)

    def problem(self) -> str | None:
        """Why the prices cannot be taken, in the flags' words (`--price-kwh must be 0 or more, got -1`)."""
        for flag, value in (("--price-node-hour", self.node_hour), ("--price-kwh", self.kwh)):
            if value is not None and not value >= 0:
                return f"{flag} must be 0 or more, got {value:g}"
        return None

    def words(self) -> str:
        parts = [f"{self.node_hour:g} per node-hour" if self.node_hour is not None else "",
                 f"{self.kwh:g} per kWh" if self.kwh is not None else ""]
        return "cost = " + " + ".join(p for p in parts if p) if self.given else ""


@dataclass(frozen=True)
class Queue:
    """A configuration's start as the scheduler estimates it: `start` in epoch seconds (None: no estimate),
    `words` what it rests on (`sbatch --test-only: mel2002 in gpu`, `no scheduler ...`, or the refusal)."""

    start: float | None
    words: str


@dataclass(frozen=True)
class Span:
    """A figure and its 90% interval (low == high == value for a measured one)."""

    value: float
    low: float
    high: float

    @classmethod
    def of(cls, value: float, low: float | None = None, high: float | None = None) -> Span:
        return cls(value, value if low is None else low, value if high is None else high)

    def map(self, f: Any) -> Span:
        return Span(f(self.value), f(self.low), f(self.high))


@dataclass(frozen=True)
class Segments:
    """What the time limit does to one run of T seconds: how many jobs, their wall time in all."""

    count: int
    wall_s: float


@dataclass(frozen=True)
class FullRunRow:
    """One configuration's production run; `reason` says why it has no figures."""

    label: str
    config_id: str
    nodes: int
    workers: int
    basis: str  # "measured" (its own run's time per sample) or "predicted"
    reason: str = ""
    step_s: float | None = None  # T per step of the configuration, as the study measured or predicted it
    steps: float | None = None  # the production run's steps on this configuration
    t_s: Span | None = None  # T of the production run
    startup_s: float = 0.0
    once_s: float = 0.0  # preparation and evaluation, paid once
    checkpoint_s: float = 0.0  # a checkpoint saved at each requeue
    segments: Segments | None = None  # at T's value
    segments_high: Segments | None = None  # at T's 90% upper end
    wall_s: Span | None = None
    node_hours: Span | None = None
    kwh: Span | None = None
    cost: Span | None = None
    queue: Queue = Queue(None, "")
    finish: Span | None = None  # epoch seconds

    @property
    def ranked(self) -> bool:
        return self.finish is not None


@dataclass(frozen=True)
class FullRunPlan:
    """Every configuration's production run and what the plan names from them."""

    run: ProductionRun
    rows: list[FullRunRow]
    now: float
    time_limit_s: float
    signal_s: float
    prices: Prices = Prices()
    deadline: float | None = None
    queue_words: str = ""  # where the queue waits come from
    left_out: list[str] = field(default_factory=list)  # configurations not in the table, and why

    @property
    def priced_by(self) -> str:
        """What "cheapest" ranks by: cost where a price is given, else node-hours."""
        return "cost" if self.prices.given else "node-hours"

    def price(self, row: FullRunRow) -> Span | None:
        return row.cost if self.prices.given else row.node_hours

    @property
    def first(self) -> FullRunRow | None:
        """The configuration that finishes first (its predicted finish; the queue's start included)."""
        ranked = [r for r in self.rows if r.finish is not None]
        return min(ranked, key=lambda r: (_at(r.finish), _at(r.wall_s))) if ranked else None

    def meets(self, row: FullRunRow) -> bool:
        return self.deadline is None or (row.finish is not None and row.finish.value <= self.deadline)

    @property
    def cheapest(self) -> FullRunRow | None:
        """The cheapest configuration that finishes by the deadline (any, without one)."""
        ranked = [r for r in self.rows if r.finish is not None and self.price(r) is not None and self.meets(r)]
        return min(ranked, key=lambda r: (_at(self.price(r)), _at(r.finish))) if ranked else None

    @property
    def pareto(self) -> list[FullRunRow]:
        """The configurations no other beats on both finish time and price (cost, else node-hours), soonest
        first."""
        ranked = [r for r in self.rows if r.finish is not None and self.price(r) is not None]
        keep = [r for r in ranked if not any(
            _at(o.finish) <= _at(r.finish) and _at(self.price(o)) <= _at(self.price(r))
            and (_at(o.finish) < _at(r.finish) or _at(self.price(o)) < _at(self.price(r))) for o in ranked)]
        return sorted(keep, key=lambda r: _at(r.finish))


def _at(span: Span | None) -> float:
    return math.inf if span is None else span.value


def segments(t_s: float, time_limit_s: float, startup_s: float, checkpoint_s: float, signal_s: float,
             once_s: float = 0.0) -> Segments | None:
    """The jobs a run of T seconds takes under the time limit, and their wall time in all: each job pays the
    start-up and ends signal_seconds (or its checkpoint, if longer) before the limit to save a checkpoint; the
    run's preparation and evaluation are paid once. None where the time limit leaves no training time."""
    per_job = time_limit_s - startup_s - max(signal_s, checkpoint_s)
    if per_job <= 0:
        return None
    count = max(1, math.ceil((t_s + once_s) / per_job - 1e-9))
    return Segments(count, t_s + once_s + count * startup_s + (count - 1) * checkpoint_s)


def full_run(plan: Plan, results: Iterable[Mapping[str, Any]], run: ProductionRun, *, time_limit_s: float,
             signal_s: float, queues: Mapping[str, Queue] | None = None, now: float, deadline: float | None = None,
             prices: Prices = Prices(), queue_words: str = "", steps: Any = None) -> FullRunPlan:
    """Each configuration of `plan` (cockpit.forecast.plan.make_plan) run for `run`, from its figures (measured
    where done, else predicted with the plan's 90% interval) and `results` (the study's result.json dicts: each
    run's counts and start-up). `queues`: each configuration's start as the scheduler estimates it, by config id
    (missing: starts `now`). `steps`: the study's [train] steps (which baseline the plan picked)."""
    recorded = [dict(r) for r in results]
    baselines = group_baselines(recorded, steps)
    own = {str(r["config_id"]): r for r in recorded
           if r.get("status", "completed") == "completed" and r.get("config_id") and (r.get("timing") or {})}
    rows, left_out = [], []
    for line in plan.lines:
        if line.run > 1:  # a repeated baseline's further run: the same configuration as its run 1
            continue
        if line.status == "too big":
            left_out.append(f"{line.label}: too big for a node")
            continue
        ref = own.get(line.config_id) if line.measured is not None else None
        base = baselines.get(line.group_id)
        rows.append(_row(plan, line, ref, base, run, time_limit_s, signal_s,
                         (queues or {}).get(line.config_id, Queue(now, "")), prices))
    return FullRunPlan(run, rows, now, time_limit_s, signal_s, prices, deadline, queue_words, left_out)


def _counts(line: PlanLine, ref: Mapping[str, Any] | None, base: Mapping[str, Any] | None
            ) -> tuple[dict[str, float], Mapping[str, Any]] | str:
    """The steps, samples, tokens and epochs of the run whose T the line gives, and the timing its start-up comes
    from: the configuration's own run where measured, else its baseline's scaled by the prediction's work."""
    if ref is not None:
        timing = ref.get("timing") or {}
        return {u: float(timing.get(u) or 0.0) for u in UNITS}, timing
    if base is None or line.predicted is None:
        return "not predicted: its group's 1x1 baseline has not finished"
    timing = base.get("timing") or {}
    work, n = line.predicted.work, line.predicted.workers
    counts = {u: float(timing.get(u) or 0.0) * work for u in ("samples", "tokens", "epochs")}
    counts["steps"] = float(timing.get("steps") or 0.0) * work / max(1, n)
    return counts, timing


def _row(plan: Plan, line: PlanLine, ref: Mapping[str, Any] | None, base: Mapping[str, Any] | None,
         run: ProductionRun, time_limit_s: float, signal_s: float, queue: Queue, prices: Prices) -> FullRunRow:
    figures = line.figures
    workers = figures.workers if figures is not None else 0
    head = FullRunRow(line.label, line.config_id, line.nodes, workers,
                      "measured" if line.measured is not None else "predicted", queue=queue)
    counted = _counts(line, ref, base)
    if figures is None or isinstance(counted, str):
        return replace(head, reason=counted if isinstance(counted, str) else "no figures")
    counts, timing = counted
    if not counts["samples"] or not counts["steps"] or not counts.get(run.unit):
        missing = next(u for u in ("samples", "steps", run.unit) if not counts.get(u))
        return replace(head, reason=f"its run records no {missing} (result.json timing.{missing})")
    samples = run.amount * counts["samples"] / counts[run.unit]  # the production run's samples
    scale = samples / counts["samples"]
    iv = line.intervals()
    t = Span.of(figures.t_s * scale, *((iv["t_s"].low * scale, iv["t_s"].high * scale) if "t_s" in iv else ()))
    startup = float(timing.get("startup_s") or 0.0)
    once = float(timing.get("prepare_s") or 0.0) + float(timing.get("eval_s") or 0.0)
    checkpoint = float(timing.get("checkpoint_s") or 0.0)
    cut = [segments(x, time_limit_s, startup, checkpoint, signal_s, once) for x in (t.value, t.low, t.high)]
    if cut[0] is None or cut[1] is None or cut[2] is None:
        return replace(head, reason=f"the time limit ({time_limit_s / 60:g} min) leaves no training time "
                                    f"after the start-up ({startup:.0f} s) and the checkpoint margin "
                                    f"({max(signal_s, checkpoint):.0f} s)")
    wall = Span(cut[0].wall_s, cut[1].wall_s, cut[2].wall_s)
    node_hours = wall.map(lambda w: w * line.nodes / 3600.0)
    kwh = None
    if line.kwh is not None:  # over T: the measured power x T, so T's interval
        k = iv.get("kwh")
        kwh = Span.of(line.kwh * scale, *((k.low * scale, k.high * scale) if k is not None else ()))
    cost = None
    if prices.cost(node_hours.value, kwh.value if kwh else None) is not None:
        cost = Span(*(prices.cost(h, k) or 0.0 for h, k in zip(
            (node_hours.value, node_hours.low, node_hours.high),
            (kwh.value, kwh.low, kwh.high) if kwh else (None, None, None), strict=True)))
    finish = wall.map(lambda w: queue.start + w) if queue.start is not None else None
    return replace(head, step_s=figures.t_s / counts["steps"], steps=samples / (counts["samples"] / counts["steps"]),
                   t_s=t, startup_s=startup, once_s=once, checkpoint_s=checkpoint, segments=cut[0],
                   segments_high=cut[2], wall_s=wall, node_hours=node_hours, kwh=kwh, cost=cost, finish=finish)


def parse_deadline(text: str) -> float:
    """`2026-12-24T18:00` (this machine's time zone unless it names one: `...+01:00`) in epoch seconds;
    ValueError naming the expected form."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(f"--deadline {text!r}: expected a date and time as 2026-12-24T18:00 (this machine's "
                         "time zone unless one is given: 2026-12-24T18:00+01:00)") from None
