"""Command palette (ctrl+p): the app's actions, searchable by name."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from cockpit.tui import model
from cockpit.tui.columns import SCALING_COLUMN, SORTABLE


def palette_commands(app) -> list[tuple[str, Callable[[], object], str]]:
    """(name, callback, help) for every palette entry; built fresh so it follows the app's state."""
    view = app.query_one("#scaling-view")
    cmds: list[tuple[str, Callable[[], object], str]] = [
        ("Show scaling view", partial(app.action_show_tab, "scaling"), "one row per configuration"),
        ("Show queue", partial(app.action_show_tab, "queue"), "jobs, states, pending reasons"),
        ("Show GPUs", partial(app.action_show_tab, "gpus"), "allocated time vs T, each job's GPUs over its run"),
        ("Show plots", partial(app.action_show_tab, "plots"), "the study's four figures"),
        ("Refresh now", app.action_refresh, "poll the study immediately"),
        ("Help", app.action_help, "every key binding and the filter's fields"),
        ("Open detail of selected configuration", app.action_open_selected, "loss, breakdown, log"),
        ("Compare selected with its baseline (or the marked run)", app.action_compare_selected,
         "two runs side by side"),
        ("Mark selected for compare", view.action_mark, "then c on another run"),
        ("Compare with another study", app.compare_study, "as cockpit compare: a study file or a store"),
        ("Open train.log of selected in $PAGER", partial(view.action_row, "pager"), "the whole log"),
        ("Copy run directory of selected", partial(view.action_row, "copy"), "to the clipboard"),
        ("Export table to CSV", partial(view.action_row, "export"), "the rows shown, full precision"),
        ("Clear filter", app.action_clear_filter, "show every configuration"),
        ("Ungroup", partial(app.action_group_by, None), "one flat table"),
    ]
    if app.controller.can_submit:
        cmds.append(("Plan and submit", app.action_plan, "matrix, node-hour estimate, budget"))
    if app.controller.live:  # a recording has nothing to send these to
        cmds += [
            ("Cancel selected job", partial(app.action_queue_job, "cancel"), "asks for confirmation"),
            ("Requeue selected job", partial(app.action_queue_job, "requeue"), "asks for confirmation"),
            ("Hold selected job", partial(app.action_queue_job, "hold"), "asks for confirmation"),
            ("Release selected job", partial(app.action_queue_job, "release"), "asks for confirmation"),
        ]
    for axis in model.GROUP_AXES:
        cmds.append((f"Group by {axis}", partial(app.action_group_by, axis), "header row per value"))
    for key in SORTABLE:
        label = SCALING_COLUMN[key].label
        cmds.append((f"Sort by {label}", partial(app.action_sort_by, key), "again to reverse"))
    return cmds


class CockpitCommands(Provider):
    async def discover(self) -> Hits:
        for name, callback, help_text in palette_commands(self.app):
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in palette_commands(self.app):
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
