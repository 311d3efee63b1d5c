"""The help screen: the keys that work where it was opened (on a recording, only those with something
behind them), generated from cockpit.tui.bindings so it cannot go stale."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from cockpit.figures import explain
from cockpit.tui.bindings import HELP_SECTIONS, key_label
from cockpit.tui.filter import filter_names

FILTER_HELP = (
    "Filter (/): space-separated terms that must all match, with the screen's names, e.g. "
    "eff<0.6 verdict~comm state=done. `field=value` and `field!=value` compare (window=256, cpus=2, prec=fp32, "
    "state=running); the states are done, running, pending, failed and not submitted. `<` `<=` `>` `>=` compare "
    "numbers (eff<0.6 or eff<60%, speedup>1.5, T<10, overhead>0.5); `~` and `!~` match text (verdict~comm, "
    "verdict!~data). On the verdict and the explanation a term's usual names are one: "
    + "; ".join(" = ".join(words[:4]) for words in explain.TERM_WORDS.values())
    + ". Any other word matches anywhere in the row. "
    "Fields: " + ", ".join(filter_names()) + ". An unknown field is reported under the table and "
    "left out of the filter."
)


def help_table(sections: Sequence[tuple[str, Sequence[Binding]]] = HELP_SECTIONS) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for title, bindings in sections:
        table.add_row(f"[b u]{title}[/]", "")
        for b in bindings:
            table.add_row(key_label(b), b.description or b.action)
        table.add_row("", "")
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close")]

    def __init__(self, sections: Sequence[tuple[str, Sequence[Binding]]] = HELP_SECTIONS) -> None:
        """`sections`: the keys that work where help was asked for (bindings.help_sections); the filter's
        grammar is added where `/` filters."""
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Static("Keys", classes="title")
            yield Static(help_table(self.sections))
            if any(b.action == "filter" for _, keys in self.sections for b in keys):
                yield Static(FILTER_HELP, classes="caption")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)
