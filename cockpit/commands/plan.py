"""`cockpit plan study.toml`: the configuration matrix grouped by baseline, job count, node-hours."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("study", type=Path, help="study TOML file")
    parser.add_argument("--render", type=Path, metavar="DIR", help="also write every batch script into DIR")
    parser.add_argument("--limit", type=int, default=0, help="show at most this many rows (0 = all)")
    parser.add_argument("--baselines", type=Path, metavar="DIR",
                        help="predict from the result.json files under DIR (baselines recorded elsewhere), "
                             "besides the study's own store")


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
    from cockpit.launch.render import check_scripts
    from cockpit.launch.sites import SiteError
    from cockpit.store import StoreError

    problems: list[str] = []
    try:
        if study.cluster.kind == "slurm":
            check_scripts(study)  # what `cockpit run` would refuse, refused now (the error names the key)
        results = known_results(study, args.baselines, problems)
    except (ValueError, SiteError, StoreError) as exc:
        err.print(f"error: {exc}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return 2
    from cockpit.plan import make_plan, study_plan

    plan = make_plan(study, results=results) if results else study_plan(study)
    console.print(plan_table(study, args.limit, plan))
    console.print(plan_summary(study, plan), highlight=False)
    if args.render:
        from cockpit.launch.render import render_study_scripts

        try:
            paths = render_study_scripts(study, args.render)
        except OSError as exc:  # an unwritable --render directory: one line naming it
            what = exc.strerror or str(exc)
            err.print(f"error: --render {args.render}: cannot write the batch scripts there ({what}); choose a "
                      "directory you can write", style="bold red", markup=False, highlight=False, soft_wrap=True)
            return 2
        console.print(f"wrote {len(paths)} batch scripts to {args.render}", highlight=False)
    for problem in problems:  # the plan was made without these runs' results
        err.print(f"error: {problem}", style="bold red", markup=False, highlight=False, soft_wrap=True)
    return 2 if problems else 0


def known_results(study, baselines: Path | None, problems: list[str] | None = None) -> list[dict]:
    """result.json dicts the prediction can start from: every one under `baselines`, and the study's store's.
    A directory without any, or an unreadable result, is an error naming the path. A store's result row
    that does not parse is left out and named in `problems` (the store, the run and how to re-collect it)."""
    from trainer.rundir import RunDirError, read_result

    results: list[dict] = []
    if baselines is not None:
        if not baselines.is_dir():
            raise ValueError(f"--baselines {baselines}: no such directory")
        for path in sorted(baselines.rglob("result.json")):
            try:
                result = read_result(path.parent)
            except RunDirError as exc:
                raise ValueError(f"--baselines: {exc}") from exc
            if result is not None:
                results.append(result)
        if not results:
            raise ValueError(f"--baselines {baselines}: no result.json below it")
    from cockpit.session import store_path_for

    store_path = store_path_for(study)
    if store_path.exists():
        from cockpit.store import StudyStore

        store = StudyStore(store_path, read_only=True)  # browsing: never written, nothing left beside it
        try:
            with store.reading():
                if study.name in store.study_names():
                    key = store.study_key(study.name)
                    results += list(store.results(key).values())
                    if problems is not None:
                        problems += [f"{store_path}: {p}" for p in store.result_problems(key)]
        finally:
            store.close()
    return results


def plan_table(study, limit: int = 0, plan=None):
    """A rich table of the matrix, one block per baseline group; fixed axes go in the caption. With a
    plan whose lines carry predictions, each configuration shows its predicted T, speedup and node-hours."""
    from rich.table import Table

    from cockpit.spec import SCALE_AXES

    varying = [axis for axis, values in study.sweep.items() if len(values) > 1 and axis not in SCALE_AXES]
    fixed = ", ".join(f"{axis}={values[0]}" for axis, values in study.sweep.items() if len(values) == 1 and axis not in SCALE_AXES)
    table = Table(title=f"{study.name}: configuration matrix", caption=f"fixed: {fixed}" if fixed else None)
    lines = {line.config_id: line for line in plan.lines} if plan is not None else {}
    predicted = any(line.predicted is not None for line in lines.values())
    extra = ("predicted T s", "S", "node-h") if predicted else ()
    for column in ("group", "config", *varying, "nodes x GPUs", *extra, "note"):
        table.add_column(column, no_wrap=True, justify="right" if column in extra else "left")
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
            p = lines[cfg.config_id].predicted if cfg.config_id in lines else None
            cells = (f"{p.t_s:.1f}", f"{p.speedup:.2f}x", f"{p.node_hours:.3f}") if p else ("-", "-", "-")
            table.add_row(
                group_id if index == 0 else "",
                cfg.config_id,
                *(str(getattr(cfg, axis)) for axis in varying),
                f"{cfg.nodes}x{cfg.gpus_per_node}",
                *(cells if predicted else ()),
                note,
                end_section=index == len(cfgs) - 1,
            )
            shown += 1
    return table


def plan_summary(study, plan=None) -> str:
    """Counts and the node-hour estimate (cockpit.plan, as the TUI and the runner compute it), saying what
    the estimate is based on, and each predicted group's recommendation."""
    from cockpit.plan import study_plan

    plan = plan or study_plan(study)
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
    lines += [f"{group}: {text}" for group, text in plan.recommendations.items()]
    if study.synthetic_default:
        lines.append("no dataset given: using the built-in synthetic ECG generator")
    return "\n".join(lines)
