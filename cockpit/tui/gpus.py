"""The GPU view: every job with its allocated time beside its T, and the GPUs of the selected job over its
whole run (utilisation and memory timelines, idle flags), also after the job ended; node-hours vs budget.

A running job's GPUs come with every snapshot; an ended job's history is asked of the controller once, in
a worker (the app's), and kept, since it no longer changes.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from cockpit.store.snapshot import GpuSeries, StudySnapshot
from cockpit.tui import gpu_rows, model
from cockpit.tui.channel import SnapshotView
from cockpit.tui.columns import GPU_COLUMNS, GPU_JOB_COLUMNS, RUNNING
from cockpit.tui.table import RowTable


class GpuView(Vertical, SnapshotView):
    class NeedHistory(Message):
        """The selected job has ended and its GPU history is not loaded yet."""

        def __init__(self, config_id: str) -> None:
            super().__init__()
            self.config_id = config_id

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._snapshot: StudySnapshot | None = None
        self._history: dict[str, list[GpuSeries]] = {}
        self._asked: set[str] = set()

    def compose(self) -> ComposeResult:
        yield Static(id="gpu-budget", classes="caption")
        yield RowTable(GPU_JOB_COLUMNS, id="gpu-jobs")
        yield Static(id="gpu-title", classes="caption")
        yield RowTable(GPU_COLUMNS, id="gpu-table")
        yield Static(id="gpu-caption", classes="caption")

    @property
    def jobs(self) -> RowTable:
        return self.query_one("#gpu-jobs", RowTable)

    def apply(self, snapshot: StudySnapshot) -> None:
        self._snapshot = snapshot
        self.jobs.apply(gpu_rows.gpu_job_rows(snapshot))
        used, budget = snapshot.node_hours_used, snapshot.node_hours_budget
        spent = f"node-hours spent {used:.2f}" + (f" of a {budget:.2f} budget" if budget is not None else
                                                   " (no budget set)")
        self.query_one("#gpu-budget", Static).update(
            Text.assemble((spent, "bold red" if budget is not None and used > budget else "bold"),
                          "  ·  allocated = the job's elapsed time; T = training time; outside T = start-up, "
                          "preparation, evaluation, checkpoints"))
        self._show_selected()

    def set_history(self, config_id: str, series: list[GpuSeries]) -> None:
        self._history[config_id] = series
        self._show_selected()

    def _show_selected(self) -> None:
        snap = self._snapshot
        if snap is None:
            return
        key = self.jobs.selected_key()
        row = snap.config(key) if key else None
        title = self.query_one("#gpu-title", Static)
        caption = self.query_one("#gpu-caption", Static)
        table = self.query_one("#gpu-table", RowTable)
        if row is None:
            title.update("no jobs yet")
            table.apply([])
            caption.update("")
            return
        label = model.config_label(row.values)
        running = row.state in RUNNING
        if running:
            series = [g for g in snap.gpus if g.config_id == row.config_id]
            title.update(Text.assemble(("GPUs of ", "bold"), (label, "bold"), " (running: recent samples)"))
        elif row.config_id in self._history:
            series = self._history[row.config_id]
            title.update(Text.assemble(("GPUs of ", "bold"), (label, "bold"), " over its whole run"))
        else:
            series = []
            title.update(Text.assemble(("GPUs of ", "bold"), (label, "bold"), ": loading its history…"))
            if row.config_id not in self._asked:
                self._asked.add(row.config_id)
                self.post_message(self.NeedHistory(row.config_id))
        table.apply(gpu_rows.gpu_rows(series, running))
        if series:
            text = (f"{len(series)} GPUs · idle = utilisation under {gpu_rows.IDLE_UTIL_PCT:.0f}% for "
                    f"{gpu_rows.IDLE_SAMPLES} samples in a row")
        elif model.study_device(snap) == "cpu":
            text = "a CPU study: its workers are processes, there are no GPU samples (allocated time vs T above)"
        elif row.config_id in self._history or running:
            text = "no GPU samples for this job (NVML unavailable: see the run's gpu.jsonl)"
        else:
            text = ""
        caption.update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "gpu-jobs":
            event.stop()
            self._show_selected()
