"""The submit flow: the plan (matrix, node-hour estimate, budget left) and a confirmation to submit; and, before
any node-hour is spent, what the study would do with some keys changed (`w`: the what-if of `cockpit plan
--what-if`, computed and worded by cockpit.forecast.whatif) and how its production run would go on each
configuration (`f`: `full-run epochs=3 ...`, the time to result of `cockpit plan --full-run`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, ContentSwitcher, DataTable, Input, Static

from cockpit.forecast.plan import hours
from cockpit.forecast.plan_words import figures_words, prediction_lines
from cockpit.tui.bindings import PLAN_BINDINGS, HelpContext
from cockpit.tui.controller import Plan
from cockpit.tui.latest import LatestRequest
from cockpit.tui.paged_table import PagedTable

if TYPE_CHECKING:
    from cockpit.forecast.full_run import FullRunPlan
    from cockpit.forecast.whatif import Outcome

STATUS_STYLE = {"submit": "bold", "done": "green", "changed": "yellow", "too big": "red"}
RERUN = "rerun"  # the dialog's answer that submits the changed configurations too
WHAT_IF_EXAMPLE = "train.bucket_cap_mb=0.5 sweep.gpus_per_node=[1, 2]"  # run by tests/tui/test_plan_what_if.py
PLAN_COLUMNS = ("configuration", "status", "node-hours", "T s", "S", "T 90%")
WHAT_IF_PLACEHOLDER = (f"w: what if KEY=VALUE ..., e.g. {WHAT_IF_EXAMPLE}; f: full-run UNIT=AMOUNT ... (enter; "
                       "empty: the plan)")
FULL_RUN_PREFIX = "full-run "


def plan_summary(plan: Plan, preflight: str | None = None) -> Text:
    """The dialog's head: what is submitted and what it costs; ``preflight``: what a submit runs first."""
    n = len(plan.to_submit)
    parts: list[tuple[str, str] | str] = [
        (f"{plan.study}", "bold"),
        f" on {plan.cluster}: {len(plan.lines)} configurations, ",
        (f"{n} to submit", "bold"),
        f", {plan.cost_words()}",
    ]
    if preflight and plan.to_submit:  # part of what "submit" means here: nothing runs before the answer
        parts += ["\n", (preflight, "bold")]
    left = plan.budget_left
    if left is not None:
        parts.append("\nbudget left ")
        parts.append((f"{hours(left)} of {hours(plan.budget)} node-hours", "bold red" if plan.over_budget else "green"))
        if plan.over_budget:
            parts.append(("  — the estimate exceeds the budget", "bold red"))
    else:
        parts.append("\nno node-hour budget set for this study")
    if any(line.kwh is not None for line in plan.to_submit):  # the energy beside the node-hours, where predicted
        parts.append(f"\n{plan.energy_words()}")
    for group, text in plan.recommendations.items():
        parts.append(f"\n{group}: {text}")
    for line in plan.changed_words():  # never run again unless asked: `r`
        parts += ["\n", (line, "yellow")]
    if plan.startup:
        parts += ["\n", (plan.startup, "yellow")]
    return Text.assemble(*parts)


def short_labels(labels: list[str]) -> list[str]:
    """The labels without the words every configuration shares (dataset, mode, precision, ... when the
    study has one of each), so the status column fits 80 columns; the summary names the shared words."""
    words = [label.split() for label in labels]
    if len(words) < 2 or len({len(w) for w in words}) != 1:
        return labels
    keep = [i for i in range(len(words[0])) if len({w[i] for w in words}) > 1]
    return [" ".join(w[i] for i in keep) or label for w, label in zip(words, labels, strict=True)]


def shared_words(labels: list[str]) -> str:
    words = [label.split() for label in labels]
    if len(words) < 2 or len({len(w) for w in words}) != 1:
        return ""
    return " ".join(words[0][i] for i in range(len(words[0])) if len({w[i] for w in words}) == 1)


class PlanScreen(ModalScreen[bool | str], HelpContext):
    """Answers True when the user confirms the submit, RERUN when the changed configurations are to run again too. `what_if` (the controller's): a line of KEY=VALUE
    arguments -> cockpit.forecast.whatif.Outcome, or None where there is no study file to change."""

    HELP_CONTEXT = "plan"

    BINDINGS = [*PLAN_BINDINGS]

    def __init__(self, plan: Plan, what_if: Callable[[str], Outcome] | None = None,
                 preflight: str | None = None, full_run: Callable[[str], FullRunPlan] | None = None) -> None:
        super().__init__()
        self.plan = plan
        self.preflight = preflight  # what a submit runs first (the controller's preflight_words)
        self._what_if = what_if
        self._full_run = full_run
        self.requests: LatestRequest[str] = LatestRequest(self._predict)  # the what-if asked (None: the plan)
        self.outcome: Outcome | FullRunPlan | None = None  # the what-if or the full run shown
        self.error = ""  # why the last what-if was refused

    def compose(self) -> ComposeResult:
        with Vertical(id="plan-dialog"):
            yield Static("Plan", classes="title")
            with ContentSwitcher(initial="plan-view", id="plan-views"):
                with Vertical(id="plan-view"):
                    yield Static(plan_summary(self.plan, self.preflight), id="plan-summary")
                    yield PagedTable(id="plan-table", cursor_type="row", zebra_stripes=True)
                with VerticalScroll(id="whatif-view"):
                    yield Static(id="whatif-title")
                    yield Static(id="whatif-summary")  # what changed and what it rests on, before the rows
                    yield DataTable(id="whatif-table", cursor_type="row", zebra_stripes=True)
                    yield Static(id="whatif-caption")
            if self._what_if is not None:
                yield Input(placeholder=WHAT_IF_PLACEHOLDER, id="whatif-input")
                yield Static(id="whatif-error")
            with Horizontal(id="buttons"):
                yield Button(
                    f"Submit {len(self.plan.to_submit)} jobs (y)", variant="warning", id="yes",
                    disabled=not self.plan.to_submit,
                )
                if self.plan.count("changed"):
                    yield Button(f"Run {self.plan.count('changed')} changed again (r)", variant="warning",
                                 id="rerun")
                yield Button("Not now (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        labels = [line.label for line in self.plan.lines]
        shared = shared_words(labels)
        notes = [f"every configuration: {shared}"] if shared else []
        figures = figures_words(self.plan.lines)
        if figures:
            notes.append(f"T s, S, node-hours: {figures}")
        intervals = any(line.intervals() for line in self.plan.lines)
        if intervals:  # the column only where some line has one, as `cockpit plan` prints it
            notes.append("T 90%: the prediction's 90% interval (a measured configuration shows its measurement)")
        notes += prediction_lines(self.plan)  # intervals in words; first and refit beside each measurement
        if notes:
            summary = self.query_one("#plan-summary", Static)
            summary.update(plan_summary(self.plan, self.preflight) + Text("\n" + "\n".join(notes), style="dim"))
        rows = []
        for line, label in zip(self.plan.lines, short_labels(labels), strict=True):
            p = line.figures
            t90 = line.intervals().get("t_s")
            row = (Text(label, no_wrap=True, end=""), Text(line.status, style=STATUS_STYLE.get(line.status, "")),
                   hours(line.node_hours), f"{p.t_s:.1f}" if p else "-", f"{p.speedup:.2f}x" if p else "-")
            rows.append((*row, f"{t90.low:.1f}-{t90.high:.1f}" if t90 else "-") if intervals else row)
        self.query_one("#plan-table", PagedTable).show(PLAN_COLUMNS if intervals else PLAN_COLUMNS[:-1], rows)
        self.query_one("#no", Button).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`w` and `f` only where there is a study file to change or time; `r` only where a configuration changed."""
        if action == "rerun":
            return bool(self.plan.count("changed"))
        if action == "full_run":
            return self._what_if is not None and self._full_run is not None
        return self._what_if is not None if action == "what_if" else True

    def action_rerun(self) -> None:
        self.dismiss(RERUN)

    def action_answer(self, value: bool) -> None:
        if not value and isinstance(self.focused, Input):  # escape while typing leaves the line, not the dialog
            self.query_one("#no", Button).focus()
            return
        self.dismiss(bool(value and self.plan.to_submit))

    def action_what_if(self) -> None:
        self.query_one("#whatif-input", Input).focus()

    def action_full_run(self) -> None:
        line = self.query_one("#whatif-input", Input)
        if not line.value.startswith(FULL_RUN_PREFIX):
            line.value = FULL_RUN_PREFIX
        line.focus()
        self.call_after_refresh(line.action_end)  # typing goes after the prefix, whatever focusing selected

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(RERUN if event.button.id == "rerun" else event.button.id == "yes")

    # -- the what-if ---------------------------------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.ask(event.value)

    def ask(self, text: str) -> None:
        """Predict `text` (KEY=VALUE ...) in a thread worker, one run at a time: a line entered while one
        runs is predicted after it (only the latest); an empty line shows the plan again."""
        text = text.strip()
        self.requests.ask(text or None)
        if not text:
            self._show(None, "")

    @work(thread=True, group="what-if")
    def _predict(self, text: str) -> None:
        from cockpit.forecast.whatif import WhatIfError

        assert self._what_if is not None
        outcome: Outcome | FullRunPlan | None = None
        error = ""
        try:
            if text.startswith(FULL_RUN_PREFIX.strip()) and self._full_run is not None:
                outcome = self._full_run(text)
            else:
                outcome = self._what_if(text)
        except (WhatIfError, ValueError) as exc:
            error = str(exc)
        except Exception as exc:  # a store or a file that cannot be read: said in the dialog, which stays up
            error = f"what-if {text}: {exc}"
        self.app.call_from_thread(self._done, text, outcome, error)

    def _done(self, text: str, outcome: Outcome | FullRunPlan | None, error: str) -> None:
        if not self.requests.done(text):  # asked for something else meanwhile
            return
        if outcome is not None:
            self._show(outcome, "")
        else:
            self._show(self.outcome, error)

    def _show(self, outcome: Outcome | FullRunPlan | None, error: str) -> None:
        from cockpit.forecast.full_run import FullRunPlan
        from cockpit.forecast.whatif_table import CAPTION, COLUMNS, summary_lines, table_rows, title

        self.outcome, self.error = outcome, error
        if self._what_if is not None:
            line = self.query_one("#whatif-error", Static)
            line.update(Text(error, style="bold red"))
            line.display = bool(error)
        switcher = self.query_one("#plan-views", ContentSwitcher)
        if outcome is None:
            switcher.current = "plan-view"
            return
        table = self.query_one("#whatif-table", DataTable)
        table.clear(columns=True)
        if isinstance(outcome, FullRunPlan):
            from cockpit.forecast import full_run_words as words

            self.query_one("#whatif-title", Static).update(Text(f"Full run of {outcome.run.words()}", style="bold"))
            headers, cells = words.shown_table(outcome)
            table.add_columns(*headers)
            rows = [tuple(row) for row in cells]
            lines, caption = words.summary_lines(outcome), words.CAPTION
        else:
            self.query_one("#whatif-title", Static).update(Text(title(outcome), style="bold"))
            table.add_columns(*COLUMNS)
            rows, lines, caption = table_rows(outcome), summary_lines(outcome), CAPTION
        for row in rows:
            table.add_row(*row)
        self.query_one("#whatif-summary", Static).update(Text("\n".join(lines)))
        self.query_one("#whatif-caption", Static).update(Text(caption, style="dim"))
        switcher.current = "whatif-view"
