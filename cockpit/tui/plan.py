"""The submit flow: the plan (matrix, node-hour estimate, budget left) and a confirmation to submit."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Static

from cockpit.tui.controller import Plan

STATUS_STYLE = {"submit": "bold", "done": "green", "too big": "red"}


def plan_summary(plan: Plan) -> Text:
    n = len(plan.to_submit)
    parts: list[tuple[str, str] | str] = [
        (f"{plan.study}", "bold"),
        f" on {plan.cluster}: {len(plan.lines)} configurations, ",
        (f"{n} to submit", "bold"),
        f", about {plan.estimate:.2f} node-hours ({plan.basis})",
    ]
    left = plan.budget_left
    if left is not None:
        parts.append("\nbudget left ")
        parts.append((f"{left:.2f} of {plan.budget:.2f} node-hours", "bold red" if plan.over_budget else "green"))
        if plan.over_budget:
            parts.append(("  — the estimate exceeds the budget", "bold red"))
    else:
        parts.append("\nno node-hour budget set for this study")
    for group, text in plan.recommendations.items():
        parts.append(f"\n{group}: {text}")
    return Text.assemble(*parts)


class PlanScreen(ModalScreen[bool]):
    """Answers True when the user confirms the submit."""

    BINDINGS = [
        Binding("y", "answer(True)", "Submit"),
        Binding("n,escape", "answer(False)", "Not now"),
    ]

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="plan-dialog"):
            yield Static("Plan", classes="title")
            yield Static(plan_summary(self.plan), id="plan-summary")
            yield DataTable(id="plan-table", cursor_type="row", zebra_stripes=True)
            with Horizontal(id="buttons"):
                yield Button(
                    f"Submit {len(self.plan.to_submit)} jobs (y)", variant="warning", id="yes",
                    disabled=not self.plan.to_submit,
                )
                yield Button("Not now (n)", variant="primary", id="no")

    def on_mount(self) -> None:
        table = self.query_one("#plan-table", DataTable)
        table.add_columns("configuration", "node-hours", "predicted T s", "predicted S", "status")
        for line in self.plan.lines:
            p = line.predicted
            table.add_row(line.label, f"{line.node_hours:.2f}", f"{p.t_s:.1f}" if p else "-",
                          f"{p.speedup:.2f}x" if p else "-",
                          Text(line.status, style=STATUS_STYLE.get(line.status, "")))
        self.query_one("#no", Button).focus()

    def action_answer(self, value: bool) -> None:
        self.dismiss(bool(value and self.plan.to_submit))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
