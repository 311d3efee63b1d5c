"""The submit flow: the plan (matrix, node-hour estimate, budget left) and a confirmation to submit."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Static

from cockpit.plan import hours
from cockpit.tui.controller import Plan

STATUS_STYLE = {"submit": "bold", "done": "green", "too big": "red"}


def plan_summary(plan: Plan) -> Text:
    n = len(plan.to_submit)
    parts: list[tuple[str, str] | str] = [
        (f"{plan.study}", "bold"),
        f" on {plan.cluster}: {len(plan.lines)} configurations, ",
        (f"{n} to submit", "bold"),
        f", about {hours(plan.estimate)} node-hours ({plan.basis})",
    ]
    left = plan.budget_left
    if left is not None:
        parts.append("\nbudget left ")
        parts.append((f"{hours(left)} of {hours(plan.budget)} node-hours", "bold red" if plan.over_budget else "green"))
        if plan.over_budget:
            parts.append(("  — the estimate exceeds the budget", "bold red"))
    else:
        parts.append("\nno node-hour budget set for this study")
    for group, text in plan.recommendations.items():
        parts.append(f"\n{group}: {text}")
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
        labels = [line.label for line in self.plan.lines]
        shared = shared_words(labels)
        table.add_columns("configuration", "status", "node-hours", "predicted T s", "predicted S")
        if shared:
            summary = self.query_one("#plan-summary", Static)
            summary.update(plan_summary(self.plan) + Text(f"\nevery configuration: {shared}", style="dim"))
        for line, label in zip(self.plan.lines, short_labels(labels), strict=True):
            p = line.predicted
            table.add_row(label, Text(line.status, style=STATUS_STYLE.get(line.status, "")),
                          hours(line.node_hours), f"{p.t_s:.1f}" if p else "-", f"{p.speedup:.2f}x" if p else "-")
        self.query_one("#no", Button).focus()

    def action_answer(self, value: bool) -> None:
        self.dismiss(bool(value and self.plan.to_submit))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
