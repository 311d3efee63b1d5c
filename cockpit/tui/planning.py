"""Build the submit flow's Plan from a study file and what the store already holds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cockpit.tui.controller import Plan, PlanLine

if TYPE_CHECKING:
    from cockpit.spec import Study


def make_plan(study: Study, done: set[str], used_node_hours: float = 0.0, cluster: str | None = None) -> Plan:
    """Every configuration of the matrix: submitted unless it already has a valid result or cannot fit a node."""
    lines = []
    for cfg in study.matrix():
        if cfg.config_id in done:
            status = "done"
        elif not study.fits_node(cfg):
            status = "too big"
        else:
            status = "submit"
        lines.append(PlanLine(cfg.label, study.node_hours(cfg), status))
    label = cluster or (study.cluster.ssh_host or study.cluster.host or study.cluster.kind)
    return Plan(
        study=study.name,
        cluster=label,
        lines=lines,
        hours_per_run=study.hours_per_run(),
        budget=study.cluster.node_hour_budget,
        used=used_node_hours,
    )
