"""The GPU view: every GPU of every running job, with recent utilisation and idle flags."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from cockpit.snapshot import StudySnapshot
from cockpit.tui import model
from cockpit.tui.table import RowTable


class GpuView(Vertical):
    def compose(self) -> ComposeResult:
        yield RowTable(model.GPU_COLUMNS, id="gpu-table")
        yield Static(id="gpu-caption", classes="caption")

    def apply(self, snapshot: StudySnapshot) -> None:
        rows = model.gpu_rows(snapshot)
        self.query_one("#gpu-table", RowTable).apply(rows)
        idle = sum(1 for r in rows if str(r.cells[-1]) != "ok")
        if rows:
            text = f"{len(rows)} GPUs in running jobs · {idle} idle (util < {model.IDLE_UTIL_PCT:.0f}% for the last {model.IDLE_SAMPLES} samples)"
        elif any(c.state in model.RUNNING for c in snapshot.configs):
            text = "running jobs report no GPU samples (CPU workers, or NVML unavailable: see the run's gpu.jsonl)"
        else:
            text = "no running jobs"
        self.query_one("#gpu-caption", Static).update(text)
