"""The help screen: every binding, generated from cockpit.tui.bindings so it cannot go stale."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from cockpit.tui import model
from cockpit.tui.bindings import HELP_SECTIONS, key_label

FILTER_HELP = (
    "Filter (/): space-separated terms that must all match, with the screen's names. "
    "`field=value` and `field!=value` compare (window=256, cpus=2, prec=fp32, state=done|running|pending|"
    "failed); `<` `<=` `>` `>=` compare numbers (eff<0.6 or eff<60%, speedup>1.5, T<10, overhead>0.5); "
    "`~` and `!~` match text (verdict~comm, verdict!~data); any other word matches anywhere in the row. "
    "Fields: " + ", ".join(model.filter_names()) + ". An unknown field is reported under the table and "
    "left out of the filter."
)


def help_table() -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for title, bindings in HELP_SECTIONS:
        table.add_row(f"[b u]{title}[/]", "")
        for b in bindings:
            table.add_row(key_label(b), b.description or b.action)
        table.add_row("", "")
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static("Keys", classes="title")
            yield Static(help_table())
            yield Static(FILTER_HELP, classes="caption")

    def action_dismiss(self) -> None:
        self.dismiss(None)
