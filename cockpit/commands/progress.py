"""How a headless run reports as it goes: one plain line per change (a rich progress bar on a terminal),
the preflight's tables, and at the end each finished configuration with the inputs of its figures.
`cockpit/commands/json_events.py` says the same as JSON events."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TextIO

from cockpit.figures import units
from cockpit.workloads.hlm.quality import quality_words

if TYPE_CHECKING:
    from cockpit.preflight.checks import PreflightReport
    from cockpit.run.session import StudySession
    from cockpit.store.snapshot import Counts


def _ending_lines(session: StudySession, snap, files, failed: list, stream: TextIO) -> None:  # noqa: ANN001
    """The plain ending: each finished configuration with its figures' inputs, the report, the failures."""
    for c in snap.configs:
        if c.analysis and c.state == "completed":
            # a script workload's keys come with the analysis row (the store's values hold the axes)
            print(explained_line(_label({**c.values, "keys": c.analysis.get("keys", "")}), c.analysis),
                  file=stream)
    print(f"report: {files.markdown} · {files.html} · {files.csv}", file=stream)
    if failed:
        for c in failed:
            print(f"FAILED {c.config_id} ({c.state}): {_label(c.values)}: {failure_reason(snap, c)}", file=stream)
        print(f"{session.study.name}: {len(failed)} of {len(snap.configs)} configurations failed; once the cause "
              "is fixed, run again with --resubmit-failed to submit them again", file=stream)
        return
    print(f"{session.study.name}: all {snap.counts.done} configurations completed", file=stream)


def failure_reason(snap, row) -> str:  # noqa: ANN001 - StudySnapshot, ConfigRow
    """Why a configuration has no result: its last job's reason and exit code, as the store has them."""
    jobs = snap.jobs_of(row.config_id)
    if not jobs:
        return "never submitted"
    last = jobs[-1]
    parts = [last.reason] if last.reason else []
    if last.exit_code is not None and f"exit {last.exit_code}" not in last.reason:
        parts.append(f"exit code {last.exit_code}")
    return "; ".join(parts) or f"job {last.job_id} ended {last.state} with no reason recorded: see its run directory"


def explained_line(label: str, a: dict) -> str:
    """One finished configuration with the inputs of its figures, so each can be checked by hand, its
    model quality beside the baseline's when the run was scored, and the advice (key, value, predicted
    gain) for an N-worker run."""
    quality = quality_words(a)
    tail = f"; {quality}" if quality else ""
    line = f"{label}: T {a['train_time_s']:.2f} s"
    if a.get("baseline"):
        return f"{line} (baseline T1){tail}"
    if a.get("speedup") != a.get("speedup"):
        return f"{line} ({a.get('note')}){tail}"
    if a["work_ratio"] != 1.0:
        line += f" for {a['work_ratio']:g}x the baseline's work = {a['t_same_work_s']:.2f} s"
    advice = f"; advice: {a['advice']}" if a.get("advice") else ""  # cockpit.forecast.advice.advice_text, as every view
    return (f"{line}; S = {a['t1_s']:.2f}/{a['t_same_work_s']:.2f} = {a['speedup']:.2f}x on N = {a['workers']}, "
            f"E = {units.percent(a['efficiency'])}; {a['verdict']}{tail}{advice}")


def _label(values: dict) -> str:
    from cockpit.study.spec import config_label

    return config_label(values)


class PlainProgress:
    """One line per change: time, counters, what was submitted or finished."""

    def __init__(self, session: StudySession, stream: TextIO) -> None:
        self.session = session
        self.stream = stream
        self._last: tuple | None = None
        self._waiting = ""  # the site limit last said to be waited for
        self._scheduler = ""  # "Slurm not answering since 14:05", as last said
        self._maintenance = ""  # the maintenance reservation the time limit crosses, as last said
        conn = session.runner.backend.connection
        if conn is not None:  # printed as it happens, also while a tick waits through an outage
            conn.listeners.append(self._on_connection)

    def counts(self) -> Counts:
        return self.session.store.snapshot(self.session.study.name).counts

    def changed(self, plan) -> None:  # noqa: ANN001 - Plan
        """The configurations whose run ran other settings than the study asks, one line each (before start)."""
        for line in plan.changed_words():
            self.say(line)

    def events(self, report) -> list[str]:  # noqa: ANN001 - TickReport
        """What happened this tick: submissions, and each ended job with its final state and reason."""
        if report is None:
            return []
        snap = self.session.store.snapshot(self.session.study.name)
        out = [f"submitted {cid}" for cid in report.submitted]
        out += [f"REFUSED {cid} ({why})" for cid, why in report.refused]
        if self.waiting_changed(report):
            out.append(f"waiting: {report.waiting}" if report.waiting else "submitting again")
        out += [line for _, line in self.site_changes(report)]
        for cid in report.finished:
            row = snap.config(cid)
            state = row.state.replace("_", " ") if row else "ended"
            why = "" if row is None or state == "completed" else f" ({failure_reason(snap, row)})"
            out.append(f"{state} {cid}{why}")
        return out

    def waiting_changed(self, report) -> bool:  # noqa: ANN001 - TickReport
        """Whether the site limit submissions wait for changed this tick (said once, not every tick)."""
        changed = report.waiting != self._waiting
        self._waiting = report.waiting
        return changed

    def site_changes(self, report) -> list[tuple[str, str]]:  # noqa: ANN001 - TickReport
        """The controller away or back, a maintenance reservation crossed or no longer: each said once, as
        (what, line) with what in "away", "back", "maintenance"."""
        out = []
        if report.scheduler and report.scheduler != self._scheduler:
            out.append(("away", f"{report.scheduler}: no job changes state until it answers"))
        if report.scheduler_back:
            out.append(("back", report.scheduler_back))
        self._scheduler = report.scheduler
        if report.maintenance != self._maintenance:
            self._maintenance = report.maintenance
            out.append(("maintenance", report.maintenance or "no maintenance reservation crossed any more"))
        return out

    def _on_connection(self, state, detail: str) -> None:  # noqa: ANN001 - ConnectionState
        self.say(f"{time.strftime('%H:%M:%S')} connection: {state}" + (f" ({detail})" if detail else ""))

    def say(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def tick(self, report) -> None:
        c = self.counts()
        key = (c.done, c.running, c.pending, c.failed, report.scheduler if report is not None else "")
        events = self.events(report)
        if key == self._last and not events:
            return
        self._last = key
        line = (f"{time.strftime('%H:%M:%S')} {self.session.study.name}: {c.done + c.failed}/{c.total} finished "
                f"({c.done} ok, {c.failed} failed) · {c.running} running · {c.pending} pending")
        if report is not None and report.scheduler:
            line += f" · {report.scheduler}"
        if events:
            line += " · " + ", ".join(events)
        print(line, file=self.stream, flush=True)

    def preflight(self, report: PreflightReport) -> None:
        """The tables of a preflight the runner has just run."""
        from cockpit.preflight.table import report_lines

        for line in report_lines(report):
            self.say(line)

    def ending(self, snap, files, failed: list) -> None:  # noqa: ANN001 - StudySnapshot, ReportFiles
        _ending_lines(self.session, snap, files, failed, self.stream)

    def close(self) -> None:
        return None


class RichProgress(PlainProgress):
    """A progress bar on a terminal (same information, redrawn in place)."""

    def __init__(self, session: StudySession, stream: TextIO) -> None:
        super().__init__(session, stream)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[state]}"),
            TimeElapsedColumn(), console=Console(file=stream),
        )
        self.task = self.progress.add_task(session.study.name, total=None, state="starting")
        self.progress.start()

    def tick(self, report) -> None:
        c = self.counts()
        state = f"{c.running} running · {c.pending} pending · {c.failed} failed"
        if report is not None and report.scheduler:
            state += f" · {report.scheduler}"
        self.progress.update(self.task, total=c.total, completed=c.done + c.failed, state=state)
        for event in self.events(report):
            if not event.startswith("submitted "):
                self.progress.console.print(event)

    def say(self, line: str) -> None:
        self.progress.console.print(line)

    def close(self) -> None:
        self.progress.stop()
