"""Every key binding in one place: the app, the help screen and the palette all read this table."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding


class HelpContext:
    """A screen with its own section of the help screen: `HELP_CONTEXT` names it (a key of HELP_SECTIONS)."""

    HELP_CONTEXT: ClassVar[str]

# The footer shows the focused view's keys first, then these; at 80 columns only the first few fit, so
# the tab keys (their labels already show them) and the rarer keys stay in the help screen and the palette.
APP_BINDINGS = [
    Binding("1", "show_tab('scaling')", "Scaling", show=False),
    Binding("2", "show_tab('queue')", "Queue", show=False),
    Binding("3", "show_tab('gpus')", "GPUs", show=False),
    Binding("4", "show_tab('plots')", "Plots", show=False),
    Binding("question_mark,f1", "help", "Help", key_display="?"),
    Binding("q", "quit", "Quit"),
    Binding("p", "plan", "Plan/submit"),
    Binding("ctrl+r", "refresh", "Refresh", show=False),
    # ctrl+c quits from anywhere, as in every terminal tool (listed in the help screen with q)
    Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
]

SCALING_BINDINGS = [
    Binding("enter", "open_detail", "Detail", show=False),
    Binding("slash", "filter", "Filter", key_display="/"),
    Binding("s", "sort", "Sort"),
    Binding("S", "sort_reverse", "Reverse sort", show=False),
    Binding("g", "group", "Group"),
    Binding("c", "compare", "Compare"),
    Binding("m", "mark", "Mark for compare", show=False),
    Binding("o", "row('pager')", "train.log in $PAGER", show=False),
    Binding("y", "row('copy')", "Copy run-dir path", show=False),
    Binding("e", "row('export')", "Export table to CSV", show=False),
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
    Binding("o", "pager", "$PAGER"),
    Binding("y", "copy_path", "Copy path", show=False),
]

COMPARE_BINDINGS = [
    Binding("escape,q", "app.pop_screen", "Back"),
    Binding("x", "swap", "Swap sides"),
]

PLAN_BINDINGS = [
    Binding("y", "answer(True)", "Submit"),
    Binding("n,escape", "answer(False)", "Not now"),
    Binding("w", "what_if", "What if KEY=VALUE"),
    Binding("f", "full_run", "Full run UNIT=AMOUNT"),
    Binding("r", "rerun", "Run changed again"),
]

STUDY_COMPARE_BINDINGS = [
    Binding("escape,q", "app.pop_screen", "Back"),
    Binding("o", "other", "Other study"),
    Binding("x", "swap", "Swap A and B"),
]

PALETTE = Binding("ctrl+p", "command_palette", "Command palette")
HELP_SECTIONS = (  # every key there is (the help screen shows those of the screen it was opened from)
    ("Everywhere", APP_BINDINGS + [PALETTE]),
    ("Scaling view", SCALING_BINDINGS),
    ("Queue view", QUEUE_BINDINGS),
    ("Run detail", DETAIL_BINDINGS),
    ("Compare", COMPARE_BINDINGS),
    ("Plan", PLAN_BINDINGS),
    ("Two studies", STUDY_COMPARE_BINDINGS),
)
TAB_SECTIONS = {"scaling": ("Scaling view", SCALING_BINDINGS), "queue": ("Queue view", QUEUE_BINDINGS)}
SCREEN_SECTIONS = {"detail": ("Run detail", DETAIL_BINDINGS), "compare": ("Compare", COMPARE_BINDINGS),
                   "plan": ("Plan", PLAN_BINDINGS), "study-compare": ("Two studies", STUDY_COMPARE_BINDINGS)}


def help_sections(context: str = "scaling", *, live: bool = True, can_submit: bool = True
                  ) -> list[tuple[str, list[Binding]]]:
    """The keys that do something where help was asked for: `context` is the main screen's tab (scaling,
    queue, gpus, plots) or a screen over it (detail, compare, plan, study-compare). A recording (`live`
    False) has no job actions; `p` is listed only where there is a plan to submit (`can_submit`)."""
    if context in SCREEN_SECTIONS:  # a screen over the tabs: its own keys, and help and ctrl+c
        title, keys = SCREEN_SECTIONS[context]
        return [(title, list(keys)), ("Also here", [b for b in APP_BINDINGS if b.action in ("help",) or
                                                    b.key == "ctrl+c"])]
    everywhere = [b for b in APP_BINDINGS if b.action != "plan" or can_submit] + [PALETTE]
    sections = [("Everywhere", everywhere)]
    if context in TAB_SECTIONS:
        title, keys = TAB_SECTIONS[context]
        if context == "queue" and not live:
            keys = []  # a recording sends nothing: cancel, requeue, hold and release are not offered
        if keys:
            sections.insert(0, (title, list(keys)))
    return sections


def key_label(binding: Binding) -> str:
    return binding.key_display or binding.key.replace(",", " / ")
