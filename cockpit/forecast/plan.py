"""What a submit would do: each configuration's status, the node-hour estimate and the budget left.

One computation for `cockpit plan`, the TUI's plan dialog and the runner's budget guard, so that the three
agree on which configurations are still to run and what they cost.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from cockpit.figures import labels
from cockpit.figures.energy import J_PER_KWH
from cockpit.forecast import baseline_runs, interval, prediction, prediction_words
from cockpit.forecast.advice.effects import axes_of
from cockpit.forecast.analysis import analyse
from cockpit.study.changes import NO_CONFIG, Change, changes_words
from cockpit.study.cluster_kinds import KINDS
from cockpit.study.spec import AXES, Configuration
from runcontract.judge import STARTUP_SHARE, startup_note

if TYPE_CHECKING:
    from cockpit.study.spec import Study

# "submit": to run; "done": has a valid result; "changed": has one, run with other settings than the study now
# asks (cockpit.study.changes; submitted again only on request); "active": a job is queued or running; "failed":
# its last job ended without a result (submitted again only on request); "too big": does not fit a node.


@dataclass(frozen=True)
class PlanLine:
    """One configuration of the plan: what it is, what it will cost and what a submit does with it."""

    label: str
    node_hours: float
    status: str
    config_id: str = ""
    predicted: prediction.Prediction | None = None  # from the group's finished baseline (docs/prediction.md)
    group_id: str = ""
    measured: prediction.Prediction | None = None  # a done configuration's own run, as the report shows it
    nodes: int = 1
    kwh: float | None = None  # energy over T: measured where done, else the baseline's power x GPUs x predicted T
    first: prediction.Prediction | None = None  # its prediction as first made (cockpit/store/predictions.py)
    spread: interval.Spread | None = None  # the study's measured misses (cockpit.forecast.interval.error_model)
    changes: tuple[Change, ...] = ()  # "changed": the keys its finished run ran otherwise, old value to new
    run: int = 1  # a repeated baseline's run 2 to k (Configuration.run): not a configuration of its own to choose

    @property
    def figures(self) -> prediction.Prediction | None:
        """What the plan shows for it: its measured run where it is done, else the prediction."""
        return self.measured or self.predicted

    def intervals(self) -> dict[str, interval.Interval]:
        """The 90% interval of each predicted figure (T s, node-hours, S, E, memory per rank, kWh): none for a
        measured line or one without a prediction."""
        p = self.predicted
        if p is None or self.measured is not None or self.spread is None:
            return {}
        own = interval.for_terms(self.spread, p.t_s, p.term_sd, p.baseline_runs)
        out = {"t_s": interval.interval(p.t_s, own), "node_hours": interval.interval(p.node_hours, own),
               "speedup": interval.interval(p.speedup, own, inverse=True),
               "efficiency": interval.interval(p.efficiency, own, inverse=True)}
        if p.memory and p.memory.get("peak_bytes"):
            out["memory_peak_bytes"] = interval.interval(p.memory["peak_bytes"], own, timed=False)
        if self.kwh is not None:  # the baseline's measured power x the predicted T: T's relative interval
            out["kwh"] = interval.interval(self.kwh, own)
        return out

    def moved(self) -> str:
        """Which term of T moved between the first prediction and the refit one, in seconds ("" : none kept)."""
        return prediction_words.moved_term(self.first, self.predicted)

    def miss(self) -> float | None:
        """ln(measured T / predicted T) of a finished N-worker configuration, against the prediction the plan makes
        now (the refit) where it has one, else its first: the intervals are put around refit predictions, so their
        centre is the refit model's own error, and a bias the refit already removed is not shifted out twice."""
        made = self.predicted or self.first
        if self.measured is None or made is None or made.workers == 1:
            return None
        misses = interval.log_misses([(made.t_s, self.measured.t_s)])
        return misses[0] if misses else None


@dataclass(frozen=True)
class Plan:
    """The matrix with a status per configuration, the node-hour estimate and the budget."""

    study: str
    cluster: str
    lines: list[PlanLine]
    hours_per_run: float
    budget: float | None = None
    used: float = 0.0
    basis: str = ""  # what the per-run hours rest on, for people
    node_cores: int | None = None  # the cores a configuration must fit in (the study's, or fewer on this machine)
    recommendations: dict[str, str] = field(default_factory=dict)  # baseline label -> the prediction's advice
    device: str = "gpu"  # "cpu" where the workers are CPU processes (cockpit.figures.labels words them)
    local: bool = False  # this machine's cores: no node-hours are spent
    upper_bound: bool = False  # some run's hours rest on the time limit alone: the estimate is a ceiling
    spread: interval.Spread | None = None  # what every prediction's interval rests on (cockpit.forecast.interval)
    unknown: tuple[str, ...] = ()  # done configurations whose result kept no config (changes.NO_CONFIG)
    startup: str = ""  # the finished runs that measured start-up more than training (startup_words)
    # each repeated baseline the predictions are made from, in words: `<label>: baseline T 10.23 s, the mean of ...`
    pooled: tuple[str, ...] = ()

    @property
    def to_submit(self) -> list[PlanLine]:
        return [p for p in self.lines if p.status == "submit"]

    @property
    def estimate(self) -> float:
        """Node-hours of what is still to submit."""
        return sum(p.node_hours for p in self.to_submit)

    @property
    def committed(self) -> float:
        """Node-hours already spent plus those of the jobs still queued or running."""
        return self.used + sum(p.node_hours for p in self.lines if p.status == "active")

    @property
    def budget_left(self) -> float | None:
        return None if self.budget is None else self.budget - self.used

    @property
    def over_budget(self) -> bool:
        left = self.budget_left
        return left is not None and self.estimate > left + 1e-9

    def duration_hours(self, pace: int) -> float:
        """Wall hours until every configuration still to submit has run, ``pace`` jobs running at a time (the
        site's limits or max_concurrent_jobs: cockpit.run.submission.running_at_once): the longest first, each onto the
        slot that frees first; a run's hours are its node-hours over its nodes. Queue waits not included."""
        slots = [0.0] * max(1, pace)
        for hours in sorted((p.node_hours / max(1, p.nodes) for p in self.to_submit), reverse=True):
            heapq.heapreplace(slots, slots[0] + hours)
        return max(slots)

    def cost_words(self) -> str:
        """What the runs still to submit cost, as `cockpit plan` and the TUI's plan dialog say it: node-hours on
        a cluster; none on this machine, where only the time counts (unless the study set a node-hour budget:
        then its hours count against it, as the runner's guard counts them)."""
        if self.local and self.budget is None:
            return f"local: no node-hours ({self.basis})"
        return f"estimated {hours(self.estimate)} node-hours ({self.basis})"

    def duration_words(self, pace: int) -> str:
        """`about 1.5 h`, or `at most 4.0 h` where the time limit stands in for runs not yet measured or
        predicted (cockpit plan, the preflight's site-limits line)."""
        return f"{'at most' if self.upper_bound else 'about'} {self.duration_hours(pace):.1f} h"

    @property
    def kwh_estimate(self) -> float:
        """kWh of what is still to submit, over the configurations whose energy is predicted."""
        return sum(p.kwh for p in self.to_submit if p.kwh is not None)

    def energy_words(self) -> str:
        """`estimated 0.0118 kWh for 10 of 12 configurations to submit (...)`: the plan's energy beside its
        node-hours, or why it is not predicted."""
        todo = self.to_submit
        known = [p for p in todo if p.kwh is not None]
        if not todo:
            return ""
        if not known:
            return ("energy not predicted: no finished 1x1 baseline with a measured energy (result.json energy: "
                    "NVML on a GPU, RAPL on CPU); `cockpit plan --baselines DIR` predicts from runs recorded elsewhere")
        return (f"estimated {self.kwh_estimate:.3g} kWh for {len(known)} of {len(todo)} configurations to submit "
                "(over T: the group's 1x1 baseline's measured power per GPU x GPUs x predicted T; start-up, "
                "evaluation and idle nodes not included)")

    def changed_words(self) -> list[str]:
        """One line per "changed" configuration naming the keys, old value to new, and one for the runs that kept
        no config: what plan, TUI, headless and report print (`cockpit run --rerun-changed` runs them again)."""
        groups: dict[str, list[PlanLine]] = {}
        for line in self.lines:
            if line.status == "changed":
                groups.setdefault(changes_words(line.changes), []).append(line)
        out = [f"{lines[0].label} ({lines[0].config_id}): changed since it ran: {words}" if len(lines) == 1 else
               f"{len(lines)} configurations ({', '.join(line.config_id for line in lines)}) changed since they ran: "
               f"{words}" for words, lines in groups.items()]
        if self.unknown:
            out.append(f"{len(self.unknown)} done configuration(s) ({', '.join(self.unknown)}): {NO_CONFIG}")
        return out

    def count(self, status: str) -> int:
        return sum(1 for line in self.lines if line.status == status)

    def budget_message(self) -> str:
        """Why a start is refused: the estimate against what is left of the budget."""
        left = max(0.0, self.budget_left or 0.0)
        return (
            f"study {self.study!r} needs an estimated {self.estimate:.1f} node-hours for {len(self.to_submit)} "
            f"configurations but only {left:.1f} of the {self.budget or 0:g} node-hour budget remain "
            f"({self.used:.1f} used); shrink the sweep, raise [cluster].node_hour_budget, or force the start"
        )


def hours(value: float | None) -> str:
    """Node-hours as `cockpit plan` and the TUI's plan dialog both print them: two decimals below 10
    (0.20), one from 10 on (144.0)."""
    if value is None:
        return "-"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def make_plan(study: Study, statuses: Mapping[str, str] | None = None, used: float = 0.0,
              cluster: str | None = None, results: Iterable[dict[str, Any]] = (), cores: int | None = None,
              measured: prediction.Links | None = None,
              first: Mapping[str, prediction.Prediction] | None = None,
              changed: Mapping[str, tuple[Change, ...]] | None = None, unknown: Sequence[str] = ()) -> Plan:
    """The plan of every configuration of the matrix; ``statuses`` gives those that are not to submit
    (by config id); a configuration that cannot fit a node is "too big" unless it is already done or
    active (a result recorded on a larger machine is still a result: it is not submitted again).

    ``results`` (result.json dicts of the study, or recorded elsewhere for the same configurations): where a
    group's 1x1 baseline has finished, the other configurations' node-hours are its prediction instead of
    the per-run estimate, and the group gets a recommendation line. ``cores``: what one node really has
    when the backend knows better than the study (Backend.cores_per_node). ``measured``: link figures the
    preflight measured, between the runs' own probes and the site profile. ``first``: each configuration's
    prediction as first made (cockpit/store/predictions.py); the misses of those that have since finished,
    and the spread of repeated runs, give every prediction its interval (cockpit.forecast.interval), and the
    prediction itself is refit: made again now, from the links the finished runs measured. ``changed``: the keys
    each "changed" configuration's run ran otherwise (cockpit.study.changes); ``unknown``: the done ones whose
    result kept no config."""
    statuses = statuses or {}
    first = first or {}
    results = list(results)
    baselines = _baselines(results, study.train.get("steps"))
    fallback = prediction.merge(measured or prediction.Links(), study_site_links(study))
    links = prediction.merge(prediction.measured_links(results), fallback)
    device = labels.device_of((r.get("device") for r in results), study.train.get("device"))
    runs, energies = _measured_runs(results, statuses)
    gpu_bytes = study_gpu_memory_gb(study) * 1e9
    over_memory: dict[str, str] = {}
    lines = []
    for cfg in study.matrix():
        fits = study.fits_node(cfg, cores)
        status = statuses.get(cfg.config_id, "submit")
        if not fits and status not in ("done", "active"):
            status = "too big"
        base = baselines.get(cfg.group_id)
        pred = None
        if base is not None:
            p = prediction.predict(base, cfg.nodes, cfg.gpus_per_node,
                                   prediction.work_for(study.train, cfg.workers, study.workload.work_per_worker),
                                   links, strategy=cfg.strategy, config_id=cfg.config_id)
            pred = p if isinstance(p, prediction.Prediction) else None
            if pred is not None and (flag := prediction_words.memory_flag(pred.memory, device, gpu_bytes)):
                over_memory[cfg.label] = flag
        run = runs.get(cfg.config_id) if status == "done" else None
        figures = run or pred
        hours = figures.node_hours if figures is not None else study.node_hours(cfg)
        kwh = energies.get(cfg.config_id) if run is not None else predicted_kwh(base, pred)
        lines.append(PlanLine(cfg.label, hours, status, cfg.config_id, pred, cfg.group_id, run, cfg.nodes, kwh,
                              first.get(cfg.config_id), changes=(changed or {}).get(cfg.config_id, ()), run=cfg.run))
    missed = [(m, line) for line in lines if (m := line.miss()) is not None]
    spread = interval.error_model([m for m, _ in missed], _repeats(results, study),
                                  min((line.predicted.baseline_runs for _, line in missed if line.predicted), default=1))
    lines = [replace(line, spread=spread) for line in lines]
    c = study.cluster
    basis = (f"{c.expected_minutes:g} min expected per run" if c.expected_minutes is not None
             else f"time limit {c.time_limit} per run, an upper bound")
    upper_bound = c.expected_minutes is None and any(
        line.measured is None and line.predicted is None for line in lines if line.status == "submit")
    done = sum(1 for line in lines if line.measured is not None)
    predicted = sum(1 for line in lines if line.predicted is not None and line.measured is None)
    if lines and done == len(lines):
        basis = f"every configuration is done: the {done} runs' node-hours are measured"
    elif predicted:
        basis = (f"{f'measured for {done}, ' if done else ''}predicted from the group's baseline for {predicted} "
                 f"configuration{'s' if predicted > 1 else ''}, else {basis}")
    return Plan(
        study=study.name,
        cluster=cluster or c.place,
        lines=lines,
        hours_per_run=study.hours_per_run(),
        budget=c.node_hour_budget,
        unknown=tuple(unknown),
        startup=startup_words(results, {line.config_id: line.label for line in lines if line.status == "done"}),
        pooled=tuple(f"{cfg.label}: {baseline_runs.words(base)}" for cfg in study.matrix()
                     if cfg.is_baseline and cfg.run == 1 and (base := baselines.get(cfg.group_id)) is not None
                     and baseline_runs.count(base) > 1),
        used=used,
        basis=basis,
        node_cores=min(c.cores_per_node, cores) if cores is not None else c.cores_per_node,
        recommendations={**_recommendations(lines, baselines, device), **over_memory},
        spread=spread,
        device=device,
        local=KINDS[c.kind].on_this_machine,
        upper_bound=upper_bound,
    )


def startup_words(results: Iterable[dict[str, Any]], done: Mapping[str, str]) -> str:
    """One line for the done configurations whose run's T is under a tenth of its wall time
    (runcontract.judge.startup_note): the study measured start-up more than training; "" when none did."""
    notes = [(label, note) for r in results if (label := done.get(str(r.get("config_id")))) is not None
             and r.get("status", "completed") == "completed" and (note := startup_note(r))]
    if not notes:
        return ""
    label, note = notes[0]
    return (f"{len(notes)} of {len(done)} finished runs measured start-up more than training (T under "
            f"{STARTUP_SHARE:.0%} of the wall time; {label}: {note.split(': ', 1)[1]})")


def study_spread(study: Study, results: Iterable[dict[str, Any]]) -> interval.Spread:
    """The study's error model as its plan gives it (make_plan: each configuration with a completed result done),
    for a prediction made outside the plan (a what-if) to carry the same interval."""
    results = list(results)
    done = {str(r["config_id"]): "done" for r in results
            if r.get("status", "completed") == "completed" and r.get("config_id")}
    spread = make_plan(study, done, results=results).spread
    assert spread is not None  # make_plan always sets it
    return spread


def _repeats(results: list[dict[str, Any]], study: Study) -> list[list[float]]:
    """The T of each configuration that finished more than once (its repeats), by configuration: a repeated
    baseline's runs 2 to k count as run 1's."""
    first_run = {cfg.config_id: replace(cfg, run=1).config_id for cfg in study.matrix() if cfg.run > 1}
    by_config: dict[str, list[float]] = {}
    for r in results:
        t = (r.get("timing") or {}).get("train_time_s")
        if r.get("status", "completed") == "completed" and r.get("config_id") and t:
            by_config.setdefault(first_run.get(r["config_id"], r["config_id"]), []).append(float(t))
    return [ts for ts in by_config.values() if len(ts) > 1]


def _measured_runs(results: list[dict[str, Any]], statuses: Mapping[str, str]
                  ) -> tuple[dict[str, prediction.Prediction], dict[str, float | None]]:
    """The figures and the measured kWh of each done configuration's finished run, by config id (none analysed
    when none is done); each run of a repeated configuration (a repeated baseline's) shows the configuration's
    row, its median run, as the report does."""
    if "done" not in statuses.values():
        return {}, {}
    rows = {cid: row for row in analyse(results) if row.get("status") == "completed"
            for cid in row.get("run_ids", (row["config_id"],)) if statuses.get(cid) == "done"}
    kwh = {cid: row["energy_kwh"] if row.get("energy_kwh") == row.get("energy_kwh") else None
           for cid, row in rows.items()}
    return {cid: measured_figures(row) for cid, row in rows.items()}, kwh


def group_baselines(results: list[dict[str, Any]], steps: Any) -> dict[str | None, dict[str, Any]]:
    """Each group's finished 1x1 run, as the plan predicts from it (the time to result reads its counts)."""
    return _baselines(results, steps)


def _baselines(results: list[dict[str, Any]], steps: Any) -> dict[str | None, dict[str, Any]]:
    """Each group's finished 1x1 run, by the group id it recorded and by the group its axes make (a baseline
    recorded under another study's group id predicts the same configurations). Of several (a repeated baseline:
    [study].baseline_runs), those that ran the study's steps, pooled: their mean T and parts
    (cockpit.forecast.baseline_runs)."""
    by_group: dict[str | None, list[dict[str, Any]]] = {}
    for r in results:
        if r.get("status", "completed") == "completed" and _is_baseline(r):
            for g in dict.fromkeys((r.get("group_id"), _group_of(r))):
                if g:
                    by_group.setdefault(g, []).append(r)
    out = {}
    for g, runs in by_group.items():
        same = [r for r in runs if steps is not None and (r.get("timing") or {}).get("steps") == steps] or runs
        out[g] = baseline_runs.pooled(same)
    return out


def predicted_kwh(base: Mapping[str, Any] | None, pred: prediction.Prediction | None) -> float | None:
    """A configuration's energy over T from its group's baseline: the baseline's measured mean power per GPU (or
    per worker on CPU) x the configuration's workers x its predicted T; None where the baseline measured none."""
    if base is None or pred is None:
        return None
    energy = base.get("energy") or {}
    joules, t1 = energy.get("joules"), (base.get("timing") or {}).get("train_time_s")
    if not isinstance(joules, int | float) or joules != joules or not isinstance(t1, int | float) or t1 <= 0:
        return None
    per_worker_w = float(joules) / float(t1) / max(1, int(base.get("world_size") or 1))
    return per_worker_w * pred.workers * pred.t_s / J_PER_KWH


def _group_of(result: Mapping[str, Any]) -> str | None:
    """The group id a result's axes make (cockpit.study.spec.Configuration), or None where an axis is missing."""
    axes = axes_of(dict(result))
    if any(axes.get(a) is None for a in AXES):
        return None
    return Configuration(**{a: axes[a] for a in AXES}).group_id


def measured_figures(row: Mapping[str, Any]) -> prediction.Prediction:
    """A finished run's T, speedup, efficiency and node-hours as cockpit.forecast.analysis gives them (the report's
    figures), in a prediction's shape so that the plan, its recommendation and the what-if read both alike."""
    work = row.get("work_ratio", 1.0)
    node_hours = (row["train_time_s"] + (row.get("fixed_s") or 0.0)) * row["nodes"] / 3600.0
    return prediction.Prediction(row["workers"], row["nodes"], 1.0 if work != work else work, row["train_time_s"],
                                 row.get("t_same_work_s", row["train_time_s"]), row.get("speedup", float("nan")),
                                 row.get("efficiency", float("nan")), node_hours)


def _is_baseline(result: dict[str, Any]) -> bool:
    cfg = result.get("config") or {}
    return cfg.get("nodes", result.get("nodes")) == 1 and cfg.get("gpus_per_node", result.get("gpus_per_node")) == 1


def study_gpu_memory_gb(study: Study) -> float:
    """One GPU's memory in the study's site profile (GB; 0 where the profile has none or does not load)."""
    from cockpit.study.sites import SiteError, site_for

    try:
        return site_for(study).gpu_memory_gb
    except (SiteError, AttributeError):
        return 0.0


def study_site_links(study: Study) -> prediction.Links:
    """The link figures of the study's site profile (none where it has no profile that loads): the last
    fallback of every prediction (the plan, the what-if, a comparison of two studies)."""
    from cockpit.study.sites import SiteError, site_for

    try:
        return prediction.site_links(site_for(study))
    except SiteError:
        return prediction.site_links(None)


def _recommendations(lines: list[PlanLine], baselines: Mapping[str | None, dict[str, Any]],
                     device: str) -> dict[str, str]:
    """Per group, the recommendation over the configurations that fit a node: measured where done, else
    predicted."""
    by_group: dict[str, list[PlanLine]] = {}
    for line in lines:
        if line.predicted is not None and line.status != "too big":
            by_group.setdefault(line.group_id, []).append(line)
    out = {}
    for group, group_lines in by_group.items():
        t1 = float(baselines[group]["timing"]["train_time_s"])
        text = prediction_words.recommendation(t1, [line.figures for line in group_lines if line.figures], device,
                                               measured=all(line.measured is not None for line in group_lines))
        base = next((line for line in group_lines if line.predicted and line.predicted.workers == 1), None)
        if text:
            out[base.label if base else group] = text
    return out
