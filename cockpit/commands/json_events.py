"""`cockpit run --headless --json`: one JSON object per line per event, for CI pipelines and scripts.

Every object has `v` (EVENTS_VERSION), `event`, `t` (Unix seconds) and `study`; docs/json-events.md lists
each event's fields. The figures are the analysis row's (the same function as every other view), with the
overhead terms as printed elsewhere (cockpit.figures.explain.shown_terms: they add up to the shown O).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, TextIO

from cockpit.commands.progress import PlainProgress, failure_reason
from cockpit.figures.explain import shown_terms
from cockpit.store import predictions
from cockpit.store.snapshot import FAILED_STATES

if TYPE_CHECKING:
    from cockpit.forecast.advice import Advice
    from cockpit.preflight.checks import PreflightReport
    from cockpit.run.session import StudySession

EVENTS_VERSION = 1


class JsonProgress(PlainProgress):
    """The headless run's progress as JSON lines instead of sentences."""

    def __init__(self, session: StudySession, stream: TextIO) -> None:
        super().__init__(session, stream)
        self._states: dict[str, str] = {}
        self._steps: dict[str, int | None] = {}
        self._disk: tuple[bool, str] = (False, "")  # the full-work-directory pause last said

    def emit(self, event: str, **fields: Any) -> None:
        record = {"v": EVENTS_VERSION, "event": event, "t": round(time.time(), 3), "study": self.session.study.name,
                  **fields}
        print(json.dumps(record, allow_nan=False, default=str), file=self.stream, flush=True)

    def say(self, line: str) -> None:
        """Free-text lines (the preflight's progress) become `message` events."""
        self.emit("message", text=line)

    def changed(self, plan) -> None:  # noqa: ANN001 - Plan
        """`changed`: a configuration whose finished run ran other settings than the study asks, the keys with
        the value it ran and the value asked; `rerun` true where --rerun-changed runs it again."""
        for line in plan.lines:
            if line.changes:
                self.emit("changed", config_id=line.config_id, label=line.label, rerun=line.status == "submit",
                          keys=[{"key": c.key, "ran": c.ran, "asked": c.asked} for c in line.changes])

    def _on_connection(self, state, detail: str) -> None:  # noqa: ANN001 - ConnectionState
        self.emit("connection", state=str(state), detail=detail)

    def preflight(self, report: PreflightReport) -> None:
        self.emit("preflight", passed=report.passed, digest=report.digest, jobs=[j.to_json() for j in report.jobs])

    def tick(self, report) -> None:  # noqa: ANN001 - TickReport
        snap = self.session.store.snapshot(self.session.study.name)
        submitted = list(report.submitted) if report is not None else []
        predicted = self._predicted(submitted) if submitted else {}
        for cid in submitted:
            row = snap.config(cid)
            self.emit("submitted", config_id=cid, label=_label(row.values) if row else cid,
                      job_id=row.job_id if row else None, predicted=predicted.get(cid))
        for cid, why in report.refused if report is not None else []:
            row = snap.config(cid)
            self.emit("refused", config_id=cid, label=_label(row.values) if row else cid, reason=why)
        if report is not None and self.waiting_changed(report):
            self.emit("waiting", limit=report.waiting)  # "" once submitting goes on
        if report is not None and report.disk is not None and (report.disk["paused"], report.disk["line"]) != self._disk:
            self._disk = (report.disk["paused"], report.disk["line"])
            self.emit("disk_full", **report.disk)  # paused, then once more with paused false when it goes on
        for what, line in self.site_changes(report) if report is not None else []:
            if what == "maintenance":
                self.emit("maintenance", line=report.maintenance)  # "" once no reservation is crossed
            else:
                self.emit("scheduler", answering=what == "back", line=line)
        for row in snap.configs:
            if self._states.get(row.config_id) != row.state:
                self._states[row.config_id] = row.state
                self._changed(snap, row)
            if row.state == "running" and row.last_step is not None and self._steps.get(row.config_id) != row.last_step:
                self._steps[row.config_id] = row.last_step
                self.emit("progress", config_id=row.config_id, step=row.last_step, fraction=_num(row.progress),
                          eta_s=_num(row.eta_s), loss=_num(row.last_loss))

    def _predicted(self, config_ids: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
        """Each submitted configuration's predicted figures with their 90% intervals (the runner's plan, as
        `cockpit plan` shows them; none for a baseline or where nothing predicts it)."""
        lines = {line.config_id: line for line in self.session.runner.plan().lines}
        return {cid: {name: {k: _num(v) if isinstance(v, float) else v for k, v in iv.as_dict().items()}
                      for name, iv in lines[cid].intervals().items()}
                for cid in config_ids if cid in lines and lines[cid].intervals()}

    def _first_t(self, config_id: str) -> float | None:
        """The T first predicted for a configuration before it ran (cockpit/store/predictions.py), or None."""
        store = self.session.store
        first = predictions.first(store, store.study_key(self.session.study.name)).get(config_id)
        return _num(first.t_s) if first is not None else None

    def _changed(self, snap, row) -> None:  # noqa: ANN001 - StudySnapshot, ConfigRow
        label = _label(row.values)
        if row.state == "completed" and row.analysis:
            self.emit("finished", config_id=row.config_id, label=label, **figures(row.analysis),
                      first_predicted_T_s=self._first_t(row.config_id))
        elif row.state in FAILED_STATES:
            self.emit("failed", config_id=row.config_id, label=label, state=row.state,
                      reason=failure_reason(snap, row))
        elif row.state != "not_submitted":
            self.emit("state", config_id=row.config_id, label=label, state=row.state, job_id=row.job_id)


    def ending(self, snap, files, failed: list) -> None:  # noqa: ANN001 - StudySnapshot, ReportFiles
        self.emit("study_end", done=snap.counts.done, failed=len(failed), total=len(snap.configs),
                  report={"markdown": str(files.markdown), "html": str(files.html), "csv": str(files.csv)})


def figures(a: dict[str, Any]) -> dict[str, Any]:
    """T, the work it covers, the baseline's T1, N, S, E, O, Karp-Flatt and the printed terms of O."""
    out = {"T_s": _num(a.get("train_time_s")), "workers": a.get("workers"), "baseline": bool(a.get("baseline"))}
    if a.get("baseline"):
        return out
    shown_o, terms = shown_terms(a)
    return {**out, "work_ratio": _num(a.get("work_ratio")), "T_same_work_s": _num(a.get("t_same_work_s")),
            "T1_s": _num(a.get("t1_s")), "S": _num(a.get("speedup")), "E": _num(a.get("efficiency")),
            "O_s": _num(shown_o), "karp_flatt": _num(a.get("karp_flatt")), "verdict": a.get("verdict", ""),
            "terms_s": {name: value for name, value in terms},
            "advice": [advice_fields(item) for item in a.get("advice_items") or []]}


def advice_fields(item: Advice) -> dict[str, Any]:
    """One advice (cockpit.forecast.advice.Advice) as fields: the loss term and its seconds, the keys and values to
    try, the predicted T and E (null where not predicted, with the reason) and the line every view prints."""
    p = item.predicted
    return {"term": item.term, "loss_s": _num(item.loss_s), "set": {k: v for k, v in item.keys},
            "what_if": item.what_if, "T_s": _num(item.t_s), "E": _num(item.efficiency),
            "predicted_T_s": _num(p.t_s) if p is not None else None,
            "predicted_E": _num(p.efficiency) if p is not None else None,
            "extrapolated": bool(p.extrapolated) if p is not None else False,
            "reason": item.reason, "text": item.text()}


def _num(value: Any) -> float | None:
    """JSON has no NaN: a figure that is not a number is null."""
    return float(value) if isinstance(value, int | float) and value == value else None


def _label(values: dict) -> str:
    from cockpit.study.spec import config_label

    return config_label(values)
