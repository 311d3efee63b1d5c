"""Command palette (ctrl+p): the app's actions, searchable by name."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from cockpit.tui import model


def palette_commands(app) -> list[tuple[str, object, str]]:
    """(name, callback, help) for every palette entry; built fresh so it follows the app's state."""
    cmds: list[tuple[str, object, str]] = [
        ("Show scaling view", partial(app.action_show_tab, "scaling"), "one row per configuration"),
        ("Show queue", partial(app.action_show_tab, "queue"), "jobs, states, pending reasons"),
        ("Show GPUs", partial(app.action_show_tab, "gpus"), "every GPU of the running jobs"),
        ("Show plots", partial(app.action_show_tab, "plots"), "the study's four figures"),
        ("Plan and submit", app.action_plan, "matrix, node-hour estimate, budget"),
        ("Refresh now", app.action_refresh, "poll the study immediately"),
        ("Help", app.action_help, "every key binding"),
        ("Open detail of selected configuration", app.action_open_selected, "loss, breakdown, log"),
        ("Clear filter", app.action_clear_filter, "show every configuration"),
        ("Cancel selected job", partial(app.action_queue_job, "cancel"), "asks for confirmation"),
        ("Requeue selected job", partial(app.action_queue_job, "requeue"), "asks for confirmation"),
        ("Hold selected job", partial(app.action_queue_job, "hold"), "asks for confirmation"),
        ("Release selected job", partial(app.action_queue_job, "release"), "asks for confirmation"),
        ("Ungroup", partial(app.action_group_by, None), "one flat table"),
    ]
    for axis in model.GROUP_AXES:
        cmds.append((f"Group by {axis}", partial(app.action_group_by, axis), "header row per value"))
    for col in model.SCALING_COLUMNS:
        if col.key in model.SORTABLE:
            cmds.append((f"Sort by {col.label}", partial(app.action_sort_by, col.key), "again to reverse"))
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
