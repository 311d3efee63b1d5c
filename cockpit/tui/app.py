"""The cockpit's Textual app: tabs for scaling, queue, GPUs and plots; run detail, plan, help as screens.

The app only renders snapshots and forwards actions to its Controller; polling runs in a thread worker
guarded so that a slow poll is never overlapped by the next one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.widgets import Footer, TabbedContent, TabPane

from cockpit.snapshot import StudySnapshot
from cockpit.tui.bindings import APP_BINDINGS
from cockpit.tui.commands import CockpitCommands
from cockpit.tui.confirm import ConfirmScreen
from cockpit.tui.controller import Controller
from cockpit.tui.gpus import GpuView
from cockpit.tui.header import StatusBar
from cockpit.tui.help import HelpScreen
from cockpit.tui.plan import PlanScreen
from cockpit.tui.queue import QueueView
from cockpit.tui.scaling import ScalingView
from cockpit.tui.table import RowTable

TABS = ("scaling", "queue", "gpus", "plots")


class CockpitApp(App):
    CSS_PATH = Path(__file__).with_name("cockpit.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "HLM cockpit"
    BINDINGS = APP_BINDINGS
    COMMANDS = App.COMMANDS | {CockpitCommands}

    def __init__(
        self,
        controller: Controller,
        *,
        clock: Callable[[], float] = time.time,
        poll_interval: float | None = 2.0,
        offer_plan: bool = True,
        auto_submit: bool = False,
        initial_tab: str = "scaling",
    ) -> None:
        """`poll_interval=None` loads one snapshot synchronously at mount and never polls (recorded
        stores, snapshot tests); `clock` is what "last poll 3s ago" and ETAs are measured against;
        `auto_submit` starts the study without the plan dialog (resuming a submitted study, the demo)."""
        super().__init__()
        if initial_tab not in TABS:
            raise ValueError(f"unknown tab {initial_tab!r}; expected one of {', '.join(TABS)}")
        self.controller = controller
        self.clock = clock
        self.poll_interval = poll_interval
        self.offer_plan = offer_plan
        self.auto_submit = auto_submit
        self.initial_tab = initial_tab
        self.snapshot: StudySnapshot | None = None
        self.polls = 0
        self._polling = False
        self._seen_problems: set[str] = set()

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with TabbedContent(initial=self.initial_tab, id="tabs"):
            with TabPane("Scaling [1]", id="scaling"):
                yield ScalingView(id="scaling-view")
            with TabPane("Queue [2]", id="queue"):
                yield QueueView(id="queue-view")
            with TabPane("GPUs [3]", id="gpus"):
                yield GpuView(id="gpu-view")
            yield TabPane("Plots [4]", id="plots")  # filled on first visit: plotting stays off the start-up path
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(StatusBar).show(None, self.clock())
        tables = self.query_one(f"TabPane#{self.initial_tab}").query(RowTable)
        if tables:
            tables.first().focus()
        if self.poll_interval is None:
            self._apply(self.controller.snapshot())
        else:
            self.call_after_refresh(self.action_refresh)
            self.set_interval(self.poll_interval, self.action_refresh)
            self.set_interval(1.0, self._tick)
        if self.auto_submit:
            self.call_after_refresh(self._submit)
        elif self.offer_plan:
            self.call_after_refresh(self._offer_plan)

    # -- polling ---------------------------------------------------------------------------------

    def action_refresh(self) -> None:
        """Poll now unless a poll is still running (polls never overlap)."""
        if self._polling:
            return
        self._polling = True
        self._poll()

    @work(thread=True, group="poll")
    def _poll(self) -> None:
        try:
            snap = self.controller.snapshot()
        except Exception as exc:  # the UI stays up; the user sees why the data is stale
            self.call_from_thread(self.notify, f"poll failed: {exc}", severity="error")
        else:
            self.call_from_thread(self._apply, snap)
        finally:
            self._polling = False

    def _tick(self) -> None:
        self.query_one(StatusBar).show(self.snapshot, self.clock())

    def _apply(self, snap: StudySnapshot) -> None:
        self.snapshot = snap
        self.polls += 1
        self.query_one(StatusBar).show(snap, self.clock())
        self._apply_tab(self.query_one(TabbedContent).active, snap)
        if getattr(self.screen, "follows_snapshots", False):
            self.screen.apply(snap)
        for problem in snap.problems[:5]:
            if problem not in self._seen_problems:
                self._seen_problems.add(problem)
                self.notify(problem, severity="warning", timeout=8)

    def _apply_tab(self, tab: str, snap: StudySnapshot) -> None:
        """Only the visible tab is updated; the others catch up when they are shown."""
        if tab == "scaling":
            self.query_one(ScalingView).apply(snap)
        elif tab == "queue":
            self.query_one(QueueView).apply(snap)
        elif tab == "gpus":
            self.query_one(GpuView).apply(snap)
        elif tab == "plots":
            self._plots_apply(snap)

    def _plots_apply(self, snap: StudySnapshot) -> None:
        views = self.query("#plots-view")
        if views:
            views.first().apply(snap)

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "plots" and not self.query("#plots-view"):
            from cockpit.tui.plots import PlotsView

            await event.pane.mount(PlotsView(id="plots-view"))
        if self.snapshot is not None and event.pane.id:
            self._apply_tab(event.pane.id, self.snapshot)
        tables = event.pane.query(RowTable)
        if tables:
            tables.first().focus()

    # -- navigation ------------------------------------------------------------------------------

    def action_show_tab(self, tab: str) -> None:
        if tab not in TABS:
            raise ValueError(f"unknown tab {tab!r}; expected one of {', '.join(TABS)}")
        self.query_one(TabbedContent).active = tab

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def open_detail(self, config_id: str) -> None:
        from cockpit.tui.detail import RunDetailScreen

        self.push_screen(RunDetailScreen(config_id))

    def on_scaling_view_open_detail(self, message: ScalingView.OpenDetail) -> None:
        self.open_detail(message.config_id)

    def action_open_selected(self) -> None:
        self.query_one(ScalingView).action_open_detail()

    def action_clear_filter(self) -> None:
        self.query_one(ScalingView).action_clear_filter()

    def action_group_by(self, axis: str | None) -> None:
        self.query_one(ScalingView).group(axis)

    def action_sort_by(self, key: str) -> None:
        self.query_one(ScalingView).sort_by(key)

    def action_queue_job(self, action: str) -> None:
        self.action_show_tab("queue")
        if self.snapshot is not None:
            self.query_one(QueueView).apply(self.snapshot)
        self.query_one(QueueView).action_job(action)

    # -- actions that change things: always confirmed --------------------------------------------

    def on_queue_view_job_action(self, message: QueueView.JobAction) -> None:
        question = f"{message.action.capitalize()} job {message.job_id}?\n{message.label}"

        def answered(yes: bool | None) -> None:
            if yes:
                self._job_action(message.action, message.job_id)

        self.push_screen(ConfirmScreen(question, yes=message.action.capitalize(), no="Keep"), answered)

    @work(group="actions")
    async def _job_action(self, action: str, job_id: str) -> None:
        try:
            text = await self.controller.job_action(action, job_id)
        except Exception as exc:
            self.notify(f"{action} {job_id} failed: {exc}", severity="error", timeout=10)
            return
        self.notify(text)
        self.action_refresh()

    def _offer_plan(self) -> None:
        plan = self.controller.plan()
        if plan is not None and plan.to_submit:
            self.push_screen(PlanScreen(plan), self._plan_answered)

    def action_plan(self) -> None:
        plan = self.controller.plan()
        if plan is None:
            self.notify("nothing to plan: this view has no study file behind it", severity="warning")
            return
        self.push_screen(PlanScreen(plan), self._plan_answered)

    def _plan_answered(self, yes: bool | None) -> None:
        if yes:
            self._submit()

    @work(group="submit", exclusive=True)
    async def _submit(self) -> None:
        self.notify("running the study…")
        try:
            text = await self.controller.submit()
        except Exception as exc:
            self.notify(f"submit failed: {exc}", severity="error", timeout=15)
            return
        self.notify(text)
        self.action_refresh()

    async def on_unmount(self) -> None:
        """However the app ends (q, ctrl+c, an error), the controller releases what it holds."""
        await self.controller.close()
