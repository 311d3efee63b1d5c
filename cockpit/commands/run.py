"""`cockpit run [--headless] study.toml`: submit a study and follow it to the end, then write its report.

Headless, progress goes to stdout as plain lines (a rich progress bar on a terminal); the exit status is
non-zero when any configuration failed, so a batch pipeline can tell.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from cockpit.quality import quality_words

if TYPE_CHECKING:
    from cockpit.preflight.checks import PreflightReport
    from cockpit.session import StudySession
    from cockpit.snapshot import Counts

EXIT_FAILED = 1
EXIT_REFUSED = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", help="the study file (.toml)")
    parser.add_argument("--headless", action="store_true", help="no screen: progress lines, then the report")
    parser.add_argument("--out", metavar="DIR", help="report directory (default: <study dir>/report or ./<study>-report)")
    parser.add_argument("--force", action="store_true", help="start even if the estimate exceeds the budget")
    parser.add_argument("--resubmit-failed", action="store_true", help="submit failed configurations again")
    parser.add_argument("--skip-preflight", action="store_true",
                        help="submit without a passed preflight of this study file (see `cockpit preflight`)")
    parser.add_argument("--baseline-first", action="store_true",
                        help="submit each group's 1x1 run first, the rest once its result predicts their cost")
    parser.add_argument("--timeout", type=float, metavar="S", help="give up (exit 1) after S seconds")
    parser.add_argument("--json", action="store_true",
                        help="with --headless: one JSON object per event on stdout (docs/json-events.md)")


def main(args: argparse.Namespace) -> int:
    from cockpit.commands._study import load
    from cockpit.session import open_session

    study = load(args.study)
    if study is None:
        return EXIT_REFUSED
    if args.timeout is not None and args.timeout <= 0:
        print(f"cockpit run: --timeout must be positive, got {args.timeout}", file=sys.stderr)
        return EXIT_REFUSED
    session = open_session(study, force=args.force, resubmit_failed=args.resubmit_failed,
                           baseline_first=args.baseline_first, preflight=not args.skip_preflight)
    if args.json and not args.headless:
        print("cockpit run: --json needs --headless (the screen has no JSON form)", file=sys.stderr)
        return EXIT_REFUSED
    if not args.headless:
        from cockpit.tui.app import CockpitApp
        from cockpit.tui.live import LiveController

        CockpitApp(LiveController(session), auto_submit=True, offer_plan=False).run()
        failed = session.has_failures()
        session.store.close()
        return EXIT_FAILED if failed else 0
    out = Path(args.out) if args.out else default_report_dir(session)
    return asyncio.run(run_headless(session, out, timeout_s=args.timeout, as_json=args.json))


def default_report_dir(session: StudySession) -> Path:
    study = session.study
    if study.cluster.kind == "local":
        return Path(study.study_dir()) / "report"
    return Path.cwd() / f"{study.name}-report"


async def run_headless(session: StudySession, out: Path, *, timeout_s: float | None = None,
                       stream: TextIO | None = None, as_json: bool = False) -> int:
    """Run the study to the end with progress lines (JSON lines with ``as_json``), write the report;
    0 ok, 1 failures, 2 refused."""
    from cockpit.runner import BudgetExceeded, PreflightFailed
    from cockpit.slurm import SlurmError
    from cockpit.ssh import SshError

    stream = stream or sys.stdout
    progress = make_progress(session, stream, as_json=as_json)
    session.runner.preflight_listeners.append(progress.say)
    session.runner.preflight_report_listeners.append(progress.preflight)
    try:
        try:
            await session.runner.start()
        except PreflightFailed as exc:
            progress.close()
            print(f"cockpit run: {exc} (fix the study file and run again, or --skip-preflight)", file=sys.stderr)
            return EXIT_REFUSED
        except BudgetExceeded as exc:
            print(f"cockpit run: {exc} (use --force to start anyway)", file=sys.stderr)
            return EXIT_REFUSED
        except (SshError, SlurmError) as exc:
            print(f"cockpit run: cannot start {session.study.name}: {exc}", file=sys.stderr)
            return EXIT_REFUSED
        progress.tick(None)
        try:
            await session.runner.run(timeout_s=timeout_s, on_tick=progress.tick)
        except (TimeoutError, SshError, SlurmError) as exc:
            progress.close()
            print(f"cockpit run: {exc} (the store keeps everything so far; run again to resume)", file=sys.stderr)
            return EXIT_FAILED
        progress.close()
    finally:
        await session.runner.close()
    return finish(session, out, progress)


def finish(session: StudySession, out: Path, progress: PlainProgress) -> int:
    """Write the report and say how the study ended."""
    from cockpit.report.source import from_store
    from cockpit.report.write import write_report
    from cockpit.snapshot import ACTIVE_STATES

    snap = session.store.snapshot(session.study.name)
    files = write_report(from_store(session.store.path, session.study.name), out)
    failed = [c for c in snap.configs if c.state not in ("completed", "not_submitted", *ACTIVE_STATES)]
    progress.ending(snap, files, failed)
    return EXIT_FAILED if failed else 0


def _ending_lines(session: StudySession, snap, files, failed: list, stream: TextIO) -> None:  # noqa: ANN001
    """The plain ending: each finished configuration with its figures' inputs, the report, the failures."""
    for c in snap.configs:
        if c.analysis and c.state == "completed":
            print(explained_line(_label(c.values), c.analysis), file=stream)
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
    """One finished configuration with the inputs of its figures, so each can be checked by hand, and its
    model quality beside the baseline's when the run was scored."""
    quality = quality_words(a)
    tail = f"; {quality}" if quality else ""
    line = f"{label}: T {a['train_time_s']:.2f} s"
    if a.get("baseline"):
        return f"{line} (baseline T1){tail}"
    if a.get("speedup") != a.get("speedup"):
        return f"{line} ({a.get('note')}){tail}"
    if a["work_ratio"] != 1.0:
        line += f" for {a['work_ratio']:g}x the baseline's work = {a['t_same_work_s']:.2f} s"
    return (f"{line}; S = {a['t1_s']:.2f}/{a['t_same_work_s']:.2f} = {a['speedup']:.2f}x on N = {a['workers']}, "
            f"E = {a['efficiency']:.0%}; {a['verdict']}{tail}")


def _label(values: dict) -> str:
    from cockpit.spec import config_label

    return config_label(values)


class PlainProgress:
    """One line per change: time, counters, what was submitted or finished."""

    def __init__(self, session: StudySession, stream: TextIO) -> None:
        self.session = session
        self.stream = stream
        self._last: tuple | None = None
        conn = session.runner.backend.connection
        if conn is not None:  # printed as it happens, also while a tick waits through an outage
            conn.listeners.append(self._on_connection)

    def counts(self) -> Counts:
        return self.session.store.snapshot(self.session.study.name).counts

    def events(self, report) -> list[str]:  # noqa: ANN001 - TickReport
        """What happened this tick: submissions, and each ended job with its final state and reason."""
        if report is None:
            return []
        snap = self.session.store.snapshot(self.session.study.name)
        out = [f"submitted {cid}" for cid in report.submitted]
        out += [f"REFUSED {cid} ({why})" for cid, why in report.refused]
        for cid in report.finished:
            row = snap.config(cid)
            state = row.state.replace("_", " ") if row else "ended"
            why = "" if row is None or state == "completed" else f" ({failure_reason(snap, row)})"
            out.append(f"{state} {cid}{why}")
        return out

    def _on_connection(self, state, detail: str) -> None:  # noqa: ANN001 - ConnectionState
        self.say(f"{time.strftime('%H:%M:%S')} connection: {state}" + (f" ({detail})" if detail else ""))

    def say(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def tick(self, report) -> None:
        c = self.counts()
        key = (c.done, c.running, c.pending, c.failed)
        events = self.events(report)
        if key == self._last and not events:
            return
        self._last = key
        line = (f"{time.strftime('%H:%M:%S')} {self.session.study.name}: {c.done + c.failed}/{c.total} finished "
                f"({c.done} ok, {c.failed} failed) · {c.running} running · {c.pending} pending")
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
        self.progress.update(self.task, total=c.total, completed=c.done + c.failed, state=state)
        for event in self.events(report):
            if not event.startswith("submitted "):
                self.progress.console.print(event)

    def say(self, line: str) -> None:
        self.progress.console.print(line)

    def close(self) -> None:
        self.progress.stop()


def make_progress(session: StudySession, stream: TextIO, *, as_json: bool = False) -> PlainProgress:
    if as_json:
        from cockpit.commands.json_events import JsonProgress

        return JsonProgress(session, stream)
    return RichProgress(session, stream) if stream.isatty() else PlainProgress(session, stream)
