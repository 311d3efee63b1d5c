"""A run's files and the table, outside the cockpit: the run's train.log in $PAGER, its run directory on
the clipboard, the scaling table as the report's CSV.

Views and screens ask with a message (`OpenPager`, `CopyRunDir`, `ExportCsv`) that bubbles up to the app;
the app hands it to its `RunFiles`, which finds the files through the controller's run directories and
uses the app only for what Textual keeps there: the terminal (suspended for the pager), the clipboard, the
notices and the worker that writes the CSV.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from textual.app import App, SuspendNotSupported
from textual.message import Message

from cockpit.store.snapshot import ConfigRow, StudySnapshot

LOG_FILE = "train.log"


class OpenPager(Message):
    """Show this run's train.log in $PAGER."""

    def __init__(self, config_id: str) -> None:
        super().__init__()
        self.config_id = config_id


class CopyRunDir(Message):
    """Put this run's directory (an absolute path) on the clipboard."""

    def __init__(self, config_id: str) -> None:
        super().__init__()
        self.config_id = config_id


class ExportCsv(Message):
    """Write these rows (the scaling table's, as filtered and sorted) to `<study>-scaling.csv`."""

    def __init__(self, rows: list[ConfigRow]) -> None:
        super().__init__()
        self.rows = rows


class RunFiles:
    """What the file messages do. `run_dir` is the controller's (where a run's files are, or None);
    `export_dir` is where the CSV goes (the working directory by default); `exports` lists what was
    written."""

    def __init__(self, app: App, run_dir: Callable[[str], str | None], export_dir: Path | None = None) -> None:
        self.app = app
        self.run_dir = run_dir
        self.export_dir = export_dir
        self.exports: list[Path] = []

    def log_path(self, config_id: str, snapshot: StudySnapshot | None) -> Path:
        """The run's train.log when it is on this machine; else the followed log written to a temporary file
        (a Slurm run's files are on the cluster; a recording keeps the last lines it followed)."""
        run_dir = self.run_dir(config_id)
        if run_dir and (Path(run_dir) / LOG_FILE).is_file():
            return Path(run_dir) / LOG_FILE
        lines = snapshot.log_tail(config_id, 100_000) if snapshot is not None else []
        handle = tempfile.NamedTemporaryFile("w", prefix=f"{config_id}-", suffix=".log", delete=False)
        with handle:
            handle.write("\n".join(lines) + ("\n" if lines else "(nothing of this log was followed)\n"))
        return Path(handle.name)

    def open_pager(self, config_id: str, snapshot: StudySnapshot | None) -> None:
        """The run's log in $PAGER (less by default); the cockpit is suspended meanwhile."""
        path = self.log_path(config_id, snapshot)
        pager = shlex.split(os.environ.get("PAGER") or "less")
        try:
            with self.app.suspend():
                subprocess.run([*pager, str(path)], check=False)
            if path.name != LOG_FILE:  # a copy of the followed log, written for the pager
                path.unlink(missing_ok=True)
        except SuspendNotSupported:
            self.app.notify(f"cannot hand the terminal to a pager here; the log is {path}", severity="warning")
        except OSError as exc:
            self.app.notify(f"{pager[0]}: {exc} (set $PAGER); the log is {path}", severity="error")

    def copy_run_dir(self, config_id: str) -> None:
        """The run directory's absolute path to the clipboard (a cluster's path as the cluster names it)."""
        run_dir = self.run_dir(config_id)
        if not run_dir:
            self.app.notify("this configuration has no run directory recorded", severity="warning")
            return
        if not run_dir.startswith(("/", "~", "$")):  # a relative path means nothing outside this process
            run_dir = os.path.abspath(run_dir)
        self.app.copy_to_clipboard(run_dir)
        self.app.notify(f"copied {run_dir}")

    def export_csv(self, study: str, rows: list[ConfigRow]) -> None:
        """The rows as the table shows them now, every figure at full precision, written in a thread."""
        self.app.run_worker(partial(self._write_csv, study, rows), thread=True, group="export")

    def _write_csv(self, study: str, rows: list[ConfigRow]) -> None:
        """What the report's scaling.csv holds (the same function writes both), for the rows shown that
        have a result, in the table's order."""
        from cockpit.forecast.analysis import write_scaling_csv

        analysed = [r.analysis for r in rows if r.analysis]
        folder = self.export_dir or Path.cwd()
        path = folder / f"{study}-scaling.csv"
        n = 2
        while path.exists():
            path = folder / f"{study}-scaling-{n}.csv"
            n += 1
        try:
            with path.open("w", newline="", encoding="utf-8") as f:
                written = write_scaling_csv(analysed, f)
        except OSError as exc:
            self.app.call_from_thread(self.app.notify, f"export failed: {exc}", severity="error")
            return
        self.exports.append(path)
        left = len(rows) - written
        extra = f" ({left} shown without a result left out)" if left else ""
        self.app.call_from_thread(self.app.notify, f"wrote {written} configurations to {path}{extra}")
