"""Every key binding in one place: the app, the help screen and the palette all read this table."""

from __future__ import annotations

from textual.binding import Binding

APP_BINDINGS = [
    Binding("1", "show_tab('scaling')", "Scaling"),
    Binding("2", "show_tab('queue')", "Queue"),
    Binding("3", "show_tab('gpus')", "GPUs"),
    Binding("4", "show_tab('plots')", "Plots"),
    Binding("question_mark,f1", "help", "Help", key_display="?"),
    Binding("p", "plan", "Plan/submit"),
    Binding("ctrl+r", "refresh", "Refresh", show=False),
    Binding("q", "quit", "Quit"),
    # ctrl+c quits from anywhere, as in every terminal tool (listed in the help screen with q)
    Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
]

SCALING_BINDINGS = [
    Binding("enter", "open_detail", "Detail"),
    Binding("s", "sort", "Sort col"),
    Binding("S", "sort_reverse", "Reverse", show=False),
    Binding("slash", "filter", "Filter", key_display="/"),
    Binding("g", "group", "Group by"),
    Binding("escape", "clear_filter", "Clear filter", show=False),
]

QUEUE_BINDINGS = [
    Binding("c", "job('cancel')", "Cancel job"),
    Binding("r", "job('requeue')", "Requeue"),
    Binding("h", "job('hold')", "Hold"),
    Binding("u", "job('release')", "Release"),
]

DETAIL_BINDINGS = [
    Binding("escape,q", "app.pop_screen", "Back"),
    Binding("a", "toggle_scroll", "Auto-scroll"),
    Binding("slash", "search", "Search log", key_display="/"),
    Binding("n", "next_match", "Next match", show=False),
]

HELP_SECTIONS = (
    ("Everywhere", APP_BINDINGS + [Binding("ctrl+p", "command_palette", "Command palette")]),
    ("Scaling view", SCALING_BINDINGS),
    ("Queue view", QUEUE_BINDINGS),
    ("Run detail", DETAIL_BINDINGS),
)


def key_label(binding: Binding) -> str:
    return binding.key_display or binding.key.replace(",", " / ")
