"""`cockpit plan STUDY`: the configuration matrix grouped by baseline, job count, node-hours."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from cockpit.commands._args import STUDY, STUDY_FILE_HELP, error
from cockpit.commands._text_table import Column, Row, TextTable
from cockpit.figures import labels
from cockpit.forecast import interval
from cockpit.forecast.plan_words import figures_words, prediction_lines
from cockpit.workloads.base import value_word
from runcontract.axes import AXIS, AXIS_KEYS
from runcontract.contract import RESULT_FILE

if TYPE_CHECKING:
    from rich.table import Table

    from cockpit.forecast.plan import Plan
    from cockpit.study.spec import Configuration


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = (f"%(prog)s {STUDY} [--what-if KEY=VALUE ...] [--render DIR] [--limit N] [--baselines DIR] "
                    "[--maintenance] [--full-run UNIT=AMOUNT [--deadline WHEN] [--price-node-hour X] [--price-kwh X]]")
    # optional here only so that `--what-if KEY=VALUE STUDY` works too (main finds it among the what-ifs)
    parser.add_argument("study", type=Path, nargs="?", metavar=STUDY, help=STUDY_FILE_HELP)
    parser.add_argument("--render", type=Path, metavar="DIR", help="also write every batch script into DIR")
    parser.add_argument("--limit", type=int, default=0, metavar="N",
                        help="stop after the baseline group that reaches N rows (0 = every row)")
    parser.add_argument("--baselines", type=Path, metavar="DIR",
                        help=f"predict from the {RESULT_FILE} files under DIR (baselines recorded elsewhere; or one "
                             f"{RESULT_FILE}), besides the study's own store")
    parser.add_argument("--maintenance", action="store_true",
                        help="also read the cluster's maintenance reservations over SSH (scontrol show reservation) "
                             "and name the one the time limit crosses, with the time limit that fits (the plan "
                             "alone never connects)")
    parser.add_argument("--what-if", dest="what_if", action="extend", nargs="+", metavar="KEY=VALUE", default=[],
                        help="predict the study with KEY (train.bucket_cap_mb, sweep.gpus_per_node, ...) set to "
                             "VALUE (a TOML literal) from its recorded runs, beside the study as recorded")
    from cockpit.commands import _full_run

    _full_run.add_arguments(parser)


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from cockpit.study.spec import SpecError, load_study

    study_path = args.study or _study_among_what_ifs(args.what_if)
    if study_path is None:
        return error(f"give the study file: cockpit plan {STUDY} [--what-if KEY=VALUE ...]")
    if args.limit < 0:
        return error(f"--limit must be 0 (every row) or more, got {args.limit}")
    from cockpit.commands import _full_run

    if (why := _full_run.refused(args)) is not None:
        return error(why)
    console = Console()
    try:
        study = load_study(study_path)
    except SpecError as exc:
        return error(str(exc))
    from cockpit.launch.registry import backend_kind
    from cockpit.store import StoreError
    from cockpit.study.sites import SiteError

    if args.what_if:  # the changed study predicted from the recorded one (cockpit.forecast.whatif)
        from cockpit.commands._whatif import main as what_if_main

        return what_if_main(study, args, console, lambda: baseline_results(args.baselines))
    try:
        backend_kind(study).check_scripts(study)  # what `cockpit run` would refuse, refused now (the error names the key)
        plan, store_path, problems = current_plan(study, baseline_results(args.baselines))
    except (ValueError, SiteError, StoreError) as exc:
        return error(str(exc))
    rendered = None
    if args.render:  # written before the plan is printed, so that a refusal is the only thing printed
        try:
            rendered = backend_kind(study).render_scripts(study, args.render)
        except OSError as exc:  # an unwritable --render directory: one line naming it
            what = exc.strerror or str(exc)
            return error(f"--render {args.render}: cannot write the batch scripts there ({what}); choose a "
                         "directory you can write")
    console.print(plan_table(study, args.limit, plan, console=console))
    console.print(plan_summary(study, plan, store_path), highlight=False)
    if args.maintenance:
        if not backend_kind(study).has_scheduler:
            return error("--maintenance reads a Slurm cluster's reservations: this study runs on this machine")
        console.print(maintenance_line(study), highlight=False)
    if rendered is not None:
        console.print(f"wrote {len(rendered)} batch scripts to {args.render}", highlight=False)
    if args.full_run is not None:  # the production run on every configuration, under the plan
        if (code := _full_run.main(study, args, console, plan, baseline_results(args.baselines))) != 0:
            return code
    for problem in problems:  # the plan was made without these runs' results
        error(problem)
    return 2 if problems else 0


def maintenance_line(study) -> str:  # noqa: ANN001 - Study
    """The preflight's maintenance row for the study, read over its SSH connection (`--maintenance`)."""
    import asyncio

    from cockpit.run.preflight import maintenance_check
    from cockpit.run.session import backend_for

    async def read():  # noqa: ANN202
        backend = backend_for(study)
        try:
            return await maintenance_check(study, backend)
        finally:
            await backend.close()

    check = asyncio.run(read())
    return f"maintenance: {check.verdict}: {check.found}" + (f"; fix: {check.fix}" if check.fix else "")


def _study_among_what_ifs(what_ifs: list[str]) -> Path | None:
    """`cockpit plan --what-if KEY=VALUE STUDY`: the study file that --what-if took as one of its values (the
    last one without a `=`, which a KEY=VALUE always has); it is taken out of the list."""
    for index in range(len(what_ifs) - 1, -1, -1):
        if "=" not in what_ifs[index]:
            return Path(what_ifs.pop(index))
    return None


def baseline_results(baselines: Path | None) -> list[dict]:
    """Every result.json under `--baselines DIR` (baselines recorded elsewhere, to predict from), or the one
    result.json given. A directory without any, or an unreadable result, is an error naming the path."""
    from cockpit.figures.run_files import with_run_files
    from runcontract.contract import ContractError
    from runcontract.records import read_result

    results: list[dict] = []
    if baselines is None:
        return results
    if baselines.is_file():
        if baselines.name != RESULT_FILE:
            raise ValueError(f"--baselines {baselines}: expected a directory with {RESULT_FILE} files below it, or "
                             f"one {RESULT_FILE}; found another file")
        paths = [baselines]
    elif baselines.is_dir():
        paths = sorted(baselines.rglob(RESULT_FILE))
    else:
        raise ValueError(f"--baselines {baselines}: no such file or directory (expected a directory with "
                         f"{RESULT_FILE} files below it)")
    for path in paths:
        try:
            result = read_result(path.parent)
        except ContractError as exc:
            raise ValueError(f"--baselines: {exc}") from exc
        if result is not None:  # with what its run directory adds: its energy, where result.json predates it
            results.append(with_run_files(result, path.parent))
    if not results:
        raise ValueError(f"--baselines {baselines}: no {RESULT_FILE} below it")
    return results


def current_plan(study, baselines: list[dict] | None = None) -> tuple[Plan, Path | None, list[str]]:
    """The plan `cockpit open` and `cockpit run` would act on now: cockpit.store.recorded.study_plan over their
    inputs. The study's store is found where they find it (session.store_path_for) and read without being
    written, so what is done, queued or running there is not to submit and its results predict the rest;
    a local study gets this machine's cores (session.node_cores, what the local executor allows), as the
    TUI's plan dialog does; `baselines` are more results to predict from. Returns the plan, the store
    read (None when there is none yet) and one line per result row of it that does not parse (left out:
    the store, the run and how to re-collect it)."""
    from cockpit.run.session import node_cores, store_path_for
    from cockpit.store.recorded import study_plan

    cores = node_cores(study)
    store_path = store_path_for(study)
    if not store_path.exists():
        return study_plan(study, cores=cores, results=baselines or ()), None, []
    from cockpit.store import StudyStore

    store = StudyStore(store_path, read_only=True)  # browsing: never written, nothing left beside it
    try:
        with store.reading():
            plan = study_plan(study, store, cores=cores, results=baselines or ())
            problems = []
            if study.name in store.study_names():
                problems = [f"{store_path}: {p}" for p in store.result_problems(store.study_key(study.name))]
    finally:
        store.close()
    return plan, store_path, problems


# the plan table's short headers, explained in its caption (so every value fits 80 columns uncut)
SHORT_HEADERS = {k.name: k.axis.short or k.axis.header for k in AXIS_KEYS if k.axis}
NUMERIC_AXES = tuple(k.name for k in AXIS_KEYS if int in k.kind)


def plan_table(study, limit: int = 0, plan: Plan | None = None, console=None) -> TextTable | Table:  # noqa: ANN001
    """The plan's table, one block per baseline group: each configuration's varying axes, its
    status (what a submit does with it; the 1x1 baseline marked) and, where a finished baseline predicts
    it, its predicted T, speedup and node-hours. Short headers and the fixed axes are explained in the
    caption. Numbers are never cut: on a narrow terminal (or piped, 80 columns) the group column goes
    first, then the axes share one column of the configuration's label words (`w128 c2`); where even that
    needs wrapping, rich's table wraps them (measuring every cell: slow for thousands of rows)."""
    from cockpit.store.recorded import study_plan

    plan = plan or study_plan(study)
    entries = _entries(study, limit, plan)
    tables = (_plan_table(study, plan, entries, layout) for layout in ("wide", "narrow", "label"))
    if console is None:
        return next(tables)
    built = []
    for table in tables:  # the first that fits unwrapped; the next ones are not built
        if table.width <= console.width:
            return table
        built.append(table)
    wrapped = [t for t in built if t.minimum_width() <= console.width]
    return (wrapped or built)[0].rich_table()


FIGURE_HEADERS = ("T s", "S", "node-h", "kWh", "T 90%", "first T s")  # an entry's figures, in order


class _Entry(NamedTuple):
    """A configuration's row in every layout: its group id on its group's first row, its figures' cells."""

    group: str
    cfg: Configuration
    figures: tuple[str, ...]  # T s, S, node-h, kWh, T's 90% interval, the first predicted T s (FIGURE_HEADERS)
    status: str
    end_section: bool


def _entries(study, limit: int, plan: Plan) -> list[_Entry]:
    """The rows by baseline group, each group by scale, up to the group that reaches `limit` rows."""
    from cockpit.forecast.plan import hours

    lines = {line.config_id: line for line in plan.lines}
    groups: dict[str, list] = {}
    for cfg in study.matrix():
        groups.setdefault(cfg.group_id, []).append(cfg)
    entries: list[_Entry] = []
    for group_id, cfgs in groups.items():
        if limit and len(entries) >= limit:
            break
        cfgs.sort(key=lambda c: (c.nodes, c.gpus_per_node))
        for index, cfg in enumerate(cfgs):
            line = lines.get(cfg.config_id)
            status = line.status if line else "submit"
            if cfg.is_baseline:
                status += " (baseline)"
            p = line.figures if line else None
            cells: tuple[str, ...] = (_seconds(p.t_s), f"{p.speedup:.2f}x", hours(p.node_hours)) if p else ("-",) * 3
            cells += (f"{line.kwh:.3g}" if line is not None and line.kwh is not None else "-",)
            t90 = line.intervals().get("t_s") if line else None
            cells += (f"{_seconds(t90.low)}-{_seconds(t90.high)}" if t90 else "-",
                      _seconds(line.first.t_s) if line and line.first else "-")
            entries.append(_Entry(group_id if index == 0 else "", cfg, cells, status, index == len(cfgs) - 1))
    return entries


def _seconds(value: float) -> str:
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def _plan_table(study, plan: Plan, entries: list[_Entry], layout: str) -> TextTable:
    from cockpit.study.spec import SCALE_AXES

    taken = _taken(study)
    varying = [axis for axis, values in taken.items() if len(values) > 1 and axis not in SCALE_AXES]
    fixed = ", ".join(f"{axis}={value_word(values[0])}" for axis, values in taken.items()
                      if len(values) == 1 and axis not in SCALE_AXES)
    figures = figures_words(plan.lines)
    legend = []
    if layout == "label":
        legend.append("configuration: " + " ".join(_labelvalue_word(a) for a in varying) + " NxG")
    else:
        legend += [f"{SHORT_HEADERS[a]} {a}" for a in varying if SHORT_HEADERS.get(a, a) != a and a != "dataset"]
    legend.append(f"NxG nodes x {labels.worker_word(plan.device)} per node")
    energy = any(line.kwh is not None for line in plan.lines)
    if figures:
        legend.append(f"T s, S, node-h{', kWh' if energy else ''}: {figures}"
                      + ("; kWh over T: the baseline's power per GPU x GPUs x T" if energy else ""))
    shown = [0, 1, 2, *(i for i, on in ((3, energy), (4, any(line.intervals() for line in plan.lines)),
                                         (5, any(line.first for line in plan.lines))) if on)]
    if 4 in shown and plan.spread is not None:
        legend.append(f"T 90%: the prediction's 90% interval ({interval.legend(plan.spread)})")
    if 5 in shown:
        legend.append("first T s: the prediction as first made, before the finished runs refit it")
    if any(line.status == "too big" for line in plan.lines):
        legend.append(f"too big: more cores than a node's {plan.node_cores}")
    caption = "; ".join(legend) + (f"; fixed: {fixed}" if fixed else "")
    columns = []
    if layout == "wide":
        columns.append(Column("group", no_wrap=True))
    columns.append(Column("config", no_wrap=True))
    if layout == "label":
        columns.append(Column("configuration", overflow="fold"))
    else:
        for axis in varying:
            numeric = axis in NUMERIC_AXES
            columns.append(Column(SHORT_HEADERS.get(axis, axis), justify="right" if numeric else "left",
                                  no_wrap=numeric, overflow="fold"))
        columns.append(Column("NxG", no_wrap=True))
    if figures:
        columns += [Column(FIGURE_HEADERS[i], justify="right", no_wrap=True) for i in shown]
    columns.append(Column("status", overflow="fold"))
    rows = []
    for group, cfg, cells, status, end_section in entries:
        scale = f"{cfg.nodes}x{cfg.gpus_per_node}"
        if layout == "label":  # config_label's words of the varying axes
            values = cfg.all_values()
            axes_cells: tuple[str, ...] = (" ".join([*(_label_value(a, values[a]) for a in varying), scale]),)
        else:
            values = cfg.all_values()
            axes_cells = (*(value_word(values[axis]) for axis in varying), scale)
        rows.append(Row((*((group,) if layout == "wide" else ()), cfg.config_id, *axes_cells,
                         *((cells[i] for i in shown) if figures else ()), status),
                        end_section))
    return TextTable(f"{study.name}: configuration matrix", caption, columns, rows)


def _labelvalue_word(axis: str) -> str:
    """How config_label writes an axis, for the one-column layout's legend: `w<window>` (a workload's key:
    `lr=<lr>`)."""
    return AXIS[axis].tag.format(f"<{axis}>") if axis in AXIS else f"{axis}=<{axis}>"


def _label_value(axis: str, value) -> str:  # noqa: ANN001
    return AXIS[axis].tag.format(value) if axis in AXIS else f"{axis}={value_word(value)}"


def _taken(study) -> dict[str, list]:  # noqa: ANN001
    """The swept values of what the study's workload takes: its axes and its own keys (a script's plan does not
    list the HLM trainer's dataset, mode and window)."""
    names = [*study.workload.axes, *(k.name for k in study.workload.keys())]
    return {name: values for name, values in study.sweep.items() if name in names}


STATUS_WORDS = {"done": "done", "changed": "changed since they ran (cockpit run --rerun-changed runs them again)",
                "active": "queued or running", "failed": "failed (cockpit run --resubmit-failed runs them again)"}


def plan_summary(study, plan: Plan | None = None, store_path: Path | None = None) -> str:
    """Counts by status and the node-hour estimate of what is to submit (cockpit.forecast.plan, as the TUI's plan
    dialog and the runner compute them), saying what the estimate rests on, which store the statuses come
    from, and each predicted group's recommendation."""
    from cockpit.forecast.plan import hours
    from cockpit.run.submission import DEFAULT_PACE
    from cockpit.store.recorded import study_plan

    plan = plan or study_plan(study)
    matrix = study.matrix()
    submit = len(plan.to_submit)
    axes = " x ".join(f"{len(v)} {k}" for k, v in _taken(study).items() if len(v) > 1) or "1"
    groups = len({cfg.group_id for cfg in matrix})
    others = [f"{plan.count(status)} {word}" for status, word in STATUS_WORDS.items() if plan.count(status)]
    if plan.count("too big"):
        others.append(f"{plan.count('too big')} too big for a node's {plan.node_cores} cores")
    lines = [
        f"{len(matrix)} configurations ({axes}) in {groups} baseline groups",
        f"{submit} jobs to submit" + (f"; {', '.join(others)}" if others else ""),
        plan.cost_words(),
    ]
    if plan.energy_words():  # beside the node-hours: the energy a site's report asks for
        lines.append(plan.energy_words())
    if submit:  # the pace: the study's own, else the site's limits decide when the runner starts
        at_once = study.cluster.max_concurrent_jobs
        source = ("the study's max_concurrent_jobs" if at_once else
                  "max_concurrent_jobs unset: the site's submit limit sets it at run time; `cockpit preflight` reads it")
        lines.append(f"{plan.duration_words(at_once or DEFAULT_PACE)} of runs at "
                     f"{at_once or DEFAULT_PACE} job(s) at once ({source}; queue waits not included)")
    if plan.budget is not None:
        lines.append(f"node-hour budget {plan.budget:g}, {hours(plan.used)} used: "
                     + ("EXCEEDS budget" if plan.over_budget else "within budget"))
    if store_path is not None:
        lines.append(f"statuses from the study's store {store_path}")
    lines += plan.changed_words()
    if plan.startup:
        lines.append(plan.startup)
    lines += [f"{group}: {text}" for group, text in plan.recommendations.items()]
    lines += prediction_lines(plan)
    if study.synthetic_default and study.workload.reads_study_data:
        lines.append("no dataset given: using the built-in synthetic ECG generator")
    if study.workload.not_given():
        lines.append(f"what the {study.workload.describe()} cannot give: {'; '.join(study.workload.not_given())}")
    return "\n".join(lines)
