"""`cockpit plan study.toml`: the configuration matrix grouped by baseline, job count, node-hours."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", type=Path, help="study TOML file")
    parser.add_argument("--render", type=Path, metavar="DIR", help="also write every batch script into DIR")
    parser.add_argument("--limit", type=int, default=0, help="show at most this many rows (0 = all)")


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from cockpit.spec import SpecError, load_study

    console = Console()
    err = Console(stderr=True)
    try:
        study = load_study(args.study)
    except SpecError as exc:
        err.print(f"error: {exc}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return 2
    console.print(plan_table(study, args.limit))
    console.print(plan_summary(study), highlight=False)
    if args.render:
        from cockpit.launch.render import render_study_scripts

        paths = render_study_scripts(study, args.render)
        console.print(f"wrote {len(paths)} batch scripts to {args.render}", highlight=False)
    return 0


def plan_table(study, limit: int = 0):
    """A rich table of the matrix, one block per baseline group; fixed axes go in the caption."""
    from rich.table import Table

    from cockpit.spec import SCALE_AXES

    varying = [axis for axis, values in study.sweep.items() if len(values) > 1 and axis not in SCALE_AXES]
    fixed = ", ".join(f"{axis}={values[0]}" for axis, values in study.sweep.items() if len(values) == 1 and axis not in SCALE_AXES)
    table = Table(title=f"{study.name}: configuration matrix", caption=f"fixed: {fixed}" if fixed else None)
    for column in ("group", "config", *varying, "nodes x GPUs", "note"):
        table.add_column(column, no_wrap=True)
    groups: dict[str, list] = {}
    for cfg in study.matrix():
        groups.setdefault(cfg.group_id, []).append(cfg)
    shown = 0
    for group_id, cfgs in groups.items():
        if limit and shown >= limit:
            break
        cfgs.sort(key=lambda c: (c.nodes, c.gpus_per_node))
        for index, cfg in enumerate(cfgs):
            note = "baseline" if cfg.is_baseline else ""
            if not study.fits_node(cfg):
                note = f"exceeds node ({cfg.gpus_per_node * cfg.cpus_per_task} cores)"
            table.add_row(
                group_id if index == 0 else "",
                cfg.config_id,
                *(str(getattr(cfg, axis)) for axis in varying),
                f"{cfg.nodes}x{cfg.gpus_per_node}",
                note,
                end_section=index == len(cfgs) - 1,
            )
            shown += 1
    return table


def plan_summary(study) -> str:
    """Counts and the node-hour estimate (cockpit.plan, as the TUI and the runner compute it), saying what
    the estimate is based on."""
    from cockpit.plan import study_plan

    plan = study_plan(study)
    matrix = study.matrix()
    submit = len(plan.to_submit)
    axes = " x ".join(f"{len(v)} {k}" for k, v in study.sweep.items() if len(v) > 1) or "1"
    groups = len({cfg.group_id for cfg in matrix})
    lines = [
        f"{len(matrix)} configurations ({axes}) in {groups} baseline groups",
        f"{submit} jobs to submit"
        + (f"; {len(matrix) - submit} exceed a node's {study.cluster.cores_per_node} cores" if submit < len(matrix) else ""),
        f"estimated {plan.estimate:.1f} node-hours ({plan.basis})",
    ]
    if plan.budget is not None:
        lines.append(f"node-hour budget {plan.budget:g}: " + ("EXCEEDS budget" if plan.over_budget else "within budget"))
    if study.synthetic_default:
        lines.append("no dataset given: using the built-in synthetic ECG generator")
    return "\n".join(lines)
