"""The queue view: the study's jobs with state, elapsed/limit, nodes and pending reason."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from cockpit.store.snapshot import ACTIVE_STATES, StudySnapshot
from cockpit.tui import model
from cockpit.tui.bindings import QUEUE_BINDINGS
from cockpit.tui.channel import SnapshotView
from cockpit.tui.columns import QUEUE_COLUMNS
from cockpit.tui.table import RowTable

# Which states each action makes sense in (the backend has the final word).
ACTION_STATES = {
    "cancel": ACTIVE_STATES,
    "requeue": ACTIVE_STATES | {"failed", "cancelled", "timeout", "preempted", "node_fail"},
    "hold": frozenset({"pending", "submitting", "requeued"}),
    "release": frozenset({"held"}),
}


class QueueView(Vertical, SnapshotView):
    BINDINGS = [*QUEUE_BINDINGS]  # a copy, typed as the list of BindingType textual declares

    class JobAction(Message):
        """The user asked for an action on a job; the app confirms and performs it."""

        def __init__(self, action: str, job_id: str, label: str) -> None:
            super().__init__()
            self.action = action
            self.job_id = job_id
            self.label = label

    def __init__(self, *, live: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.live = live
        self._snapshot: StudySnapshot | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="queue-site", classes="caption")
        yield RowTable(QUEUE_COLUMNS, id="queue-table")
        text = ("c cancel · r requeue · h hold · u release (each asks first)" if self.live else
                "a recording: jobs cannot be cancelled, requeued, held or released from here")
        yield Static(text, classes="caption")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A recording offers no job actions: nothing could be sent."""
        return self.live or action != "job"

    @property
    def table(self) -> RowTable:
        return self.query_one("#queue-table", RowTable)

    def apply(self, snapshot: StudySnapshot) -> None:
        self._snapshot = snapshot
        site = self.query_one("#queue-site", Static)
        site.update(model.queue_site_line(snapshot))
        site.display = bool(snapshot.scheduler or snapshot.maintenance or snapshot.waiting)
        self.table.apply(model.queue_rows(snapshot))

    def action_job(self, action: str) -> None:
        if not self.live:
            self.notify(f"a recording: {action} cannot be sent to any cluster", severity="warning")
            return
        key = self.table.selected_key()
        if self._snapshot is None or key is None:
            self.notify("no job selected", severity="warning")
            return
        job = next((j for j in self._snapshot.jobs if j.job_id == key), None)
        if job is None or job.job_id is None:
            self.notify("this job has no id yet (still being submitted)", severity="warning")
            return
        if job.state not in ACTION_STATES[action]:
            self.notify(f"cannot {action} job {job.job_id}: it is {job.state}", severity="warning")
            return
        config = self._snapshot.config(job.config_id)
        label = model.config_label(config.values) if config else job.config_id
        self.post_message(self.JobAction(action, job.job_id, label))
