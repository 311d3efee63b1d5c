"""The cockpit's Textual app: tabs for scaling, queue, GPUs and plots; run detail, compare, plan, help as
screens.

The app only renders snapshots and forwards actions to its Controller; polling runs in a thread worker
guarded so that a slow poll is never overlapped by the next one (the GPU history loader likewise). Views and
screens get every snapshot through one channel (cockpit.tui.channel: `apply(snapshot)`) and ask for what
they cannot do themselves with messages: the run's files (cockpit.tui.files), detail, compare, job actions.
No TUI module imports this one; the commands that start the cockpit do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import rich
from textual import work
from textual.app import App, ComposeResult
from textual.notifications import SeverityLevel
from textual.widget import Widget
from textual.widgets import Footer, TabbedContent, TabPane
from textual.worker import get_current_worker

from cockpit.forecast.plan import Plan
from cockpit.store.snapshot import ADOPTED_PROBLEM, GpuSeries, StudySnapshot
from cockpit.tui.bindings import APP_BINDINGS, HelpContext, help_sections
from cockpit.tui.channel import SnapshotView
from cockpit.tui.commands import CockpitCommands
from cockpit.tui.confirm import ConfirmScreen
from cockpit.tui.controller import Controller
from cockpit.tui.files import CopyRunDir, ExportCsv, OpenPager, RunFiles
from cockpit.tui.gpus import GpuView
from cockpit.tui.header import StatusBar
from cockpit.tui.help import HelpScreen
from cockpit.tui.plan import RERUN, PlanScreen
from cockpit.tui.preflight import PreflightScreen
from cockpit.tui.queue import QueueView
from cockpit.tui.scaling import ScalingView
from cockpit.tui.table import RowTable

TABS = ("scaling", "queue", "gpus", "plots")


class CockpitApp(App):
    CSS_PATH = Path(__file__).with_name("cockpit.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "HLM cockpit"
    BINDINGS = [*APP_BINDINGS]  # a copy, typed as the list of BindingType textual declares
    COMMANDS = App.COMMANDS | {CockpitCommands}

    def __init__(
        self,
        controller: Controller,
        *,
        clock: Callable[[], float] = time.time,
        poll_interval: float | None = 2.0,
        offer_plan: bool = True,
        auto_submit: bool = False,
        follow: bool = False,
        initial_tab: str = "scaling",
        export_dir: Path | None = None,
        compare_with: Path | None = None,
    ) -> None:
        """`poll_interval=None` loads one snapshot synchronously at mount and never polls (recorded
        stores, snapshot tests); `clock` is what "last poll 3s ago" and ETAs are measured against;
        `auto_submit` starts the study without the plan dialog (`cockpit run`, the demo: asked for on the
        command line); `follow`: the jobs a resumed study has in flight are followed, nothing submitted;
        `export_dir` is where `e` writes the table's CSV (the working directory by default);
        `compare_with`: another study (file or store) to open the two-studies screen on at start."""
        super().__init__()
        if initial_tab not in TABS:
            raise ValueError(f"unknown tab {initial_tab!r}; expected one of {', '.join(TABS)}")
        self.controller = controller
        self.clock = clock
        self.poll_interval = poll_interval
        self.offer_plan = offer_plan
        self.auto_submit = auto_submit
        self.follow = follow
        self.initial_tab = initial_tab
        self.compare_with = compare_with
        self.files = RunFiles(self, controller.run_dir, export_dir)
        self.snapshot: StudySnapshot | None = None
        self.polls = 0
        self._seen_problems: set[str] = set()
        self._notices: dict[tuple[str, str], float] = {}

    @property
    def live(self) -> bool:
        return self.controller.live

    @property
    def exports(self) -> list[Path]:
        """The CSV files `e` wrote, in order."""
        return self.files.exports

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status", live=self.live)
        with TabbedContent(initial=self.initial_tab, id="tabs"):
            with TabPane("Scaling [1]", id="scaling"):
                yield ScalingView(id="scaling-view", live=self.live, device_hint=self.controller.device)
            with TabPane("Queue [2]", id="queue"):
                yield QueueView(id="queue-view", live=self.live)
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
        if self.compare_with is not None:
            self.call_after_refresh(self.compare_study, self.compare_with)
        if self.auto_submit:
            self.call_after_refresh(self._submit)
            return
        if self.follow:
            self._follow()
        if self.offer_plan:
            self.call_after_refresh(self._offer_plan)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """As App.notify, but a notice already on screen is not stacked again (`p` pressed three times
        says it once)."""
        key = (str(message), severity)
        now = time.monotonic()
        if self._notices.get(key, 0.0) > now:
            return
        self._notices[key] = now + (timeout if timeout is not None else self.NOTIFICATION_TIMEOUT)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys with nothing behind them are not offered: no plan/submit for a recording without a plan."""
        if action == "plan":
            return self.controller.can_submit
        return True

    def _fatal_error(self) -> None:
        """Textual's crash report without the local variables of every frame (they print whole snapshots
        and paths into the terminal); `cockpit open` exits non-zero after it."""
        import textual
        from rich.traceback import Traceback

        self.bell()
        self.panic(Traceback(show_locals=False, width=None, suppress=[rich, textual], max_frames=30))

    # -- polling ---------------------------------------------------------------------------------

    def action_refresh(self) -> None:
        """Poll now unless a poll is still running (polls never overlap: the running one's snapshot is as
        fresh as a new one would be)."""
        if not any(w.group == "poll" and not w.is_finished for w in self.workers):
            self._poll()

    @work(thread=True, group="poll")
    def _poll(self) -> None:
        try:
            snap = self.controller.snapshot()
        except Exception as exc:  # the UI stays up; the user sees why the data is stale
            self.call_from_thread(self.notify, f"poll failed: {exc}", severity="error")
        else:
            self.call_from_thread(self._apply, snap)

    def _tick(self) -> None:
        # the clock's timer can fire while the app is closing and its widgets are already gone
        for bar in self.query(StatusBar):
            bar.show(self.snapshot, self.clock())

    def _apply(self, snap: StudySnapshot) -> None:
        if not self.is_running:
            # a poll that ends while the app closes: its screens are being pruned child first, so a view
            # can still be mounted with its table already gone, and there is nothing left to show it on
            return
        self.snapshot = snap
        self.polls += 1
        for bar in self.query(StatusBar):  # none while the app is closing
            bar.show(snap, self.clock())
        self._apply_tab(self.query_one(TabbedContent).active, snap)
        if isinstance(self.screen, SnapshotView):  # a run detail or a comparison follows the study too
            self._hand(self.screen, snap)
        # the five newest, and always what another cockpit submitted (said once, however old)
        adopted = [p for p in snap.problems[5:] if p.startswith(f"{ADOPTED_PROBLEM}: ")]
        for problem in [*snap.problems[:5], *adopted]:
            if problem not in self._seen_problems:
                self._seen_problems.add(problem)
                self.notify(problem, severity="warning", timeout=8)

    def _apply_tab(self, tab: str, snap: StudySnapshot) -> None:
        """Only the visible tab's view is updated; the others catch up when they are shown (the plots' view
        is not there before its first visit)."""
        for view in self.query_one(TabbedContent).get_pane(tab).children:
            if isinstance(view, SnapshotView):
                self._hand(view, snap)

    @staticmethod
    def _hand(view: Widget, snap: StudySnapshot) -> None:
        """`view.apply(snap)` now when the view is mounted, else queued on the view, to run once it has
        composed and mounted: a poll's snapshot comes in from its thread while the UI awaits, and can find
        a run detail pushed or the plots' view mounting on its first visit before their widgets exist."""
        assert isinstance(view, SnapshotView)
        if view.is_mounted:
            view.apply(snap)
        else:
            view.call_later(view.apply, snap)

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if self.focused is not None and event.pane not in self.focused.ancestors:
            # focus left in a hidden tab would switch back to it (TabbedContent follows focus): `4` from the
            # GPUs view showed the plots for a moment and then the GPUs again
            self.set_focus(None)
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
        """The keys that work here: on this screen (or tab), and on a recording only those with something
        behind them."""
        if isinstance(self.screen, HelpScreen):
            return
        screen = self.screen
        context = (screen.HELP_CONTEXT if isinstance(screen, HelpContext)
                   else self.query_one(TabbedContent).active if screen is self.screen_stack[0] else "other")
        self.push_screen(HelpScreen(help_sections(context, live=self.live, can_submit=self.controller.can_submit)))

    def open_detail(self, config_id: str) -> None:
        from cockpit.tui.detail import RunDetailScreen

        self.push_screen(RunDetailScreen(config_id, live=self.live, snapshot=self.snapshot))

    def on_scaling_view_open_detail(self, message: ScalingView.OpenDetail) -> None:
        self.open_detail(message.config_id)

    def on_scaling_view_compare(self, message: ScalingView.Compare) -> None:
        from cockpit.tui.compare import CompareScreen

        self.push_screen(CompareScreen(message.left, message.right, snapshot=self.snapshot))

    def compare_study(self, other: Path | None = None) -> None:
        """This study against another (`cockpit compare`'s content); `other` None: asked for on the screen."""
        from cockpit.tui.study_compare import StudyCompareScreen

        origin = self.controller.origin
        if origin is None:
            self.notify("nothing to compare: this view has no study file or store behind it", severity="warning")
            return
        name = self.snapshot.study if self.snapshot is not None else None
        self.push_screen(StudyCompareScreen(origin, name if origin.suffix != ".toml" else None, other))

    # -- a run's files and the table, outside the cockpit (cockpit.tui.files) ----------------------

    def on_open_pager(self, message: OpenPager) -> None:
        self.files.open_pager(message.config_id, self.snapshot)

    def on_copy_run_dir(self, message: CopyRunDir) -> None:
        self.files.copy_run_dir(message.config_id)

    def on_export_csv(self, message: ExportCsv) -> None:
        if self.snapshot is not None:
            self.files.export_csv(self.snapshot.study, message.rows)

    def log_path(self, config_id: str) -> Path:
        """What `o` shows for a run (its train.log, or the followed log in a temporary file)."""
        return self.files.log_path(config_id, self.snapshot)

    # -- GPU history of ended jobs ---------------------------------------------------------------

    def on_gpu_view_need_history(self, message: GpuView.NeedHistory) -> None:
        self._load_history(message.config_id)

    @work(thread=True, group="history", exclusive=True)
    def _load_history(self, config_id: str) -> None:
        """One run's GPU samples over its whole life, read off the UI thread; the latest request wins (an
        earlier load still reading is cancelled and its samples never shown)."""
        worker = get_current_worker()
        try:
            series: list[GpuSeries] = self.controller.gpu_history(config_id)
        except Exception as exc:  # the view says it could not load; the app stays up
            series = []
            if not worker.is_cancelled:
                self.call_from_thread(self.notify, f"GPU history of {config_id}: {exc}", severity="error")
        if not worker.is_cancelled:
            self.call_from_thread(self.query_one(GpuView).set_history, config_id, series)

    def action_open_selected(self) -> None:
        self.query_one(ScalingView).action_open_detail()

    def action_clear_filter(self) -> None:
        self.query_one(ScalingView).action_clear_filter()

    def action_group_by(self, axis: str | None) -> None:
        self.query_one(ScalingView).group(axis)

    def action_sort_by(self, key: str) -> None:
        self.query_one(ScalingView).sort_by(key)

    def action_compare_selected(self) -> None:
        self.query_one(ScalingView).action_compare()

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
        if plan is not None and (plan.to_submit or plan.count("changed")):  # changed: shown, run only when asked
            self._push_plan(plan)

    def _push_plan(self, plan: Plan) -> None:
        """The plan dialog, the one confirmation before anything is submitted (the preflight included)."""
        self.push_screen(PlanScreen(plan, self.controller.what_if, self.controller.preflight_words(),
                                    self.controller.full_run), self._plan_answered)

    def action_plan(self) -> None:
        if isinstance(self.screen, PlanScreen):
            return
        plan = self.controller.plan()
        if plan is None:
            self.notify("nothing to plan: this view has no study file behind it", severity="warning")
            return
        self._push_plan(plan)

    def _plan_answered(self, answer: bool | str | None) -> None:
        if answer == RERUN:
            self.controller.rerun_changed()
        if answer:
            self._submit()

    @work(group="submit", exclusive=True)
    async def _submit(self) -> None:
        from cockpit.run.runner import PreflightFailed

        preflight = PreflightScreen()

        def show(line: str) -> None:
            self.call_later(preflight.add_line, line)

        if self.controller.preflight_pending(show):
            await self.push_screen(preflight)
        self.notify("running the study…")
        try:
            text = await self.controller.submit()
        except PreflightFailed as exc:  # the screen stays open on its FAILED lines
            self.notify(f"nothing submitted: {exc}", severity="error", timeout=20)
            return
        except Exception as exc:
            self.notify(f"submit failed: {exc}", severity="error", timeout=15)
            return
        self.notify(text)
        self.action_refresh()

    @work(group="follow")
    async def _follow(self) -> None:
        """A resumed study's jobs in flight followed (nothing submitted) until they end or a submit takes over."""
        try:
            text = await self.controller.follow()
        except Exception as exc:  # the view stays up on what the store holds
            self.notify(f"following the jobs in flight failed: {exc}", severity="error", timeout=15)
            return
        if text:
            self.notify(text)
        self.action_refresh()

    async def on_unmount(self) -> None:
        """However the app ends (q, ctrl+c, an error), the controller releases what it holds."""
        await self.controller.close()
