"""Pure view-models: a StudySnapshot in, table rows and plot series out.

No Textual here, so the same functions drive the widgets, the benchmarks and the unit tests, and a
1000-configuration refresh costs only list building. The columns these rows fill are cockpit.tui.columns;
the scaling table's filter language is cockpit.tui.filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from rich.text import Text

from cockpit.figures import labels
from cockpit.store.snapshot import ConfigRow, JobRow, StudySnapshot
from cockpit.study.spec import config_label
from cockpit.tui import format as fmt
from cockpit.tui.columns import (
    ANALYSIS_FIELDS,
    FIGURES,
    RUNNING,
    SCALING_COLUMN,
    SCALING_COLUMNS,
    Column,
    sort_value,
    state_word,
)
from cockpit.tui.filter import Filter, matches, parse_filter
from runcontract.axes import AXES, AXIS, AXIS_KEY, LABEL_ORDER, label_words, labelled

GROUP_AXES = AXES
# the axes a row is told apart by, in the order the frozen identity columns show them ("scale" = nodes x GPUs)
IDENTITY_AXES = LABEL_ORDER
FOLDABLE = tuple(a for a in LABEL_ORDER if a != "scale")

AXIS_WORDS = {a: AXIS[a].words for a in FOLDABLE}


@dataclass(frozen=True)
class Layout:
    """Which columns the scaling table shows for a study: axes with one value in the whole study are folded
    into a subtitle, the axes left are frozen on the left (scrolling right keeps a row's identity), and the
    figures follow, most telling first, so speedup and efficiency fit 80 columns."""

    columns: tuple[Column, ...]
    fixed: int  # frozen columns: the mark and the identity axes
    constant: tuple[tuple[str, object], ...] = ()
    device: str = "gpu"

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self.columns)

    @property
    def worker_word(self) -> str:
        return labels.worker_word(self.device)

    def subtitle(self) -> str:
        """The folded axes in words, e.g. "all runs: synthetic · foundation · fp32 · batch 8"."""
        words = [AXIS_WORDS[a].format(v) for a, v in self.constant]
        if self.device == "cpu":
            words.append("CPU workers (processes)")
        return "all runs: " + " · ".join(words) if words else ""


FULL_LAYOUT = Layout(SCALING_COLUMNS, fixed=0)


def folded_axes(snapshot: StudySnapshot) -> frozenset[str]:
    """The axes with one value in the whole study (said once in the subtitle, not on every row)."""
    if not snapshot.configs:
        return frozenset()
    return frozenset(a for a in FOLDABLE if len({str(r.values.get(a)) for r in snapshot.configs}) == 1)


def short_label(values: dict[str, object], folded: frozenset[str] = frozenset()) -> str:
    """config_label without the folded axes: `w256 1x2 c1` where dataset, mode, precision and batch are
    the same for every run (the full label is in the status line and the run detail)."""
    keys = values.get("keys")
    return " ".join([*(word for axis, word in label_words(values).items() if axis not in folded),
                     *([str(keys)] if keys else [])])


def study_device(snapshot: StudySnapshot, hint: str | None = None) -> str:
    """"cpu" when the study trains on CPUs (its results say so, or the study file), else "gpu"
    (cockpit.figures.labels, which the report's words come from too)."""
    return labels.device_of(((row.analysis or {}).get("device") or (row.result or {}).get("device")
                             for row in snapshot.configs), hint)


def scaling_layout(snapshot: StudySnapshot, device_hint: str | None = None) -> Layout:
    """The screen's layout for a study (see Layout)."""
    device = study_device(snapshot, device_hint)
    folded = folded_axes(snapshot)
    first = snapshot.configs[0].values if snapshot.configs else {}
    # a later axis at its default is said nowhere (runcontract.axes.shows), as the label leaves it out
    constant = [(a, first.get(a)) for a in IDENTITY_AXES if a in folded and labelled(AXIS_KEY[a], first)]
    identity = [a for a in IDENTITY_AXES if a not in folded]
    columns = [SCALING_COLUMN["mark"]]
    for axis in identity:
        col = SCALING_COLUMN[axis]
        if axis == "scale":
            col = Column("scale", labels.scale_label(device))
        columns.append(col)
    if any(r.values.get("keys") for r in snapshot.configs):  # a script workload's keys: part of each row's identity
        identity.append("keys")
        columns.append(SCALING_COLUMN["keys"])
    columns += [SCALING_COLUMN[k] for k in FIGURES]
    # MFU and energy where some run has them (a GPU run; a CPU run where RAPL could be read): the run detail
    # says why a blank one is blank
    measured = [k for k, field in ANALYSIS_FIELDS.items() if any(_finite((r.analysis or {}).get(field)) for r in snapshot.configs)]
    for k in reversed(measured):
        columns.insert(columns.index(SCALING_COLUMN["tokens"]) + 1, SCALING_COLUMN[k])
    metrics = {r.quality_metric for r in snapshot.configs if r.quality_metric}
    if metrics:  # only a study whose runs are scored: its quality beside the verdict, named when it is one metric
        label = f"{metrics.pop()} Δ1×1" if len(metrics) == 1 else SCALING_COLUMN["quality"].label
        columns.insert(-1, Column("quality", label, max(14, len(label))))
    return Layout(tuple(columns), fixed=1 + len(identity), constant=tuple(constant), device=device)


@dataclass(frozen=True)
class Row:
    """One table row: a stable key (config or job id) and its rendered cells."""

    key: str
    cells: tuple[object, ...]
    header: bool = False


def _state_cell(row: ConfigRow, live: bool) -> Text:
    """The state; a running row of a live study shows its progress and eta (a recording has none to show)."""
    if live and row.state in RUNNING and row.progress is not None:
        eta = f" eta {fmt.duration(row.eta_s)}" if row.eta_s is not None else ""
        return Text(f"▶{row.progress * 100:.0f}%{eta}", style="bold cyan")
    return Text(state_word(row.state), style=fmt.state_style(row.state))


# --- cells ------------------------------------------------------------------------------------------------

_CELL_CACHE: dict[tuple, tuple[object, ...]] = {}
_CELL_CACHE_MAX = 20_000


def _cell_key(row: ConfigRow, keys: tuple[str, ...], live: bool) -> tuple:
    """Everything a row's cells depend on (its axis values are fixed by its config_id)."""
    return (row.config_id, row.is_baseline, row.state, row.train_time_s, row.work_ratio, row.t_same_work_s,
            row.speedup, row.efficiency, row.overhead_s, row.tokens_per_s, row.verdict, row.progress, row.eta_s,
            row.quality, row.quality_change, *((row.analysis or {}).get(f) for f in ANALYSIS_FIELDS.values()), keys,
            live)


def scaling_cells(row: ConfigRow, layout: Layout = FULL_LAYOUT, live: bool = True) -> tuple[object, ...]:
    """Cells of one row; the same tuple object is returned while the row is unchanged, so a refresh
    compares rows by identity and rebuilds nothing for the (usually many) rows that did not move."""
    key = _cell_key(row, layout.keys, live)
    cells = _CELL_CACHE.get(key)
    if cells is None:
        if len(_CELL_CACHE) >= _CELL_CACHE_MAX:
            _CELL_CACHE.clear()
        cells = _CELL_CACHE[key] = tuple(_cell(row, k, live) for k in layout.keys)
    return cells


def _cell(row: ConfigRow, key: str, live: bool) -> object:
    v = row.values
    if key == "mark":
        return Text("★", style="bold yellow") if row.is_baseline else ""
    if key == "scale":
        return f"{v.get('nodes', 1)}×{v.get('gpus_per_node', 1)}"
    if key == "state":
        return _state_cell(row, live)
    if key == "time":
        return Text(fmt.seconds(row.train_time_s))
    if key == "work":
        return fmt.ratio(row.work_ratio)
    if key == "t_same_work":
        return fmt.seconds(row.t_same_work_s)
    if key == "speedup":
        return fmt.ratio(row.speedup)
    if key == "efficiency":
        return Text(fmt.percent(row.efficiency), style=fmt.efficiency_style(row.efficiency))
    if key == "overhead":
        return fmt.seconds(row.overhead_s)
    if key == "tokens":
        return fmt.rate(row.tokens_per_s)
    if key == "verdict":
        return row.verdict
    if key == "quality":
        return fmt.quality(row.quality, row.quality_change)
    if key == "mfu":
        mfu = (row.analysis or {}).get("mfu")
        return f"{mfu:.1%}" if isinstance(mfu, float) and _finite(mfu) else "-"
    if key == "energy":
        kwh = (row.analysis or {}).get("energy_kwh")
        return f"{kwh:.3g}" if isinstance(kwh, float) and _finite(kwh) else "-"
    return str(v.get(key, ""))


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def scaling_rows(
    snapshot: StudySnapshot,
    sort_key: str | None = None,
    reverse: bool = False,
    query: str | Filter = "",
    group_by: str | None = None,
    layout: Layout = FULL_LAYOUT,
    live: bool = True,
) -> list[Row]:
    """The home table: filtered, sorted, optionally grouped by one axis with a header row per value."""
    flt = query if isinstance(query, Filter) else parse_filter(query)
    rows = [r for r in snapshot.configs if matches(r, flt)]
    if sort_key:
        ok = [r for r in rows if sort_value(r, sort_key)[0] == 0]
        absent = [r for r in rows if sort_value(r, sort_key)[0] == 1]
        ok.sort(key=lambda r: sort_value(r, sort_key), reverse=reverse)
        rows = ok + absent
    if not group_by:
        return [Row(r.config_id, scaling_cells(r, layout, live)) for r in rows]
    groups: dict[str, list[ConfigRow]] = {}
    for r in rows:
        groups.setdefault(str(r.values.get(group_by, "")), []).append(r)
    out: list[Row] = []
    keys = layout.keys
    for value in sorted(groups, key=_natural):
        members = groups[value]
        cells: list[object] = [""] * len(keys)
        cells[0] = Text("▼", style="bold")
        if group_by in keys:
            cells[keys.index(group_by)] = Text(value, style="bold")
        elif group_by in ("nodes", "gpus_per_node") and "scale" in keys:
            cells[keys.index("scale")] = Text(f"{group_by.split('_')[0]} {value}", style="bold")
        cells[keys.index("state")] = Text(f"{len(members)} configs", style="bold")
        cells[-1] = Text(f"{group_by} = {value}: {len(members)} configurations", style="bold")
        out.append(Row(f"group:{group_by}:{value}", tuple(cells), header=True))
        out.extend(Row(r.config_id, scaling_cells(r, layout, live)) for r in members)
    return out


def status_line(row: ConfigRow | None, live: bool = True, job: JobRow | None = None) -> Text:
    """The selected row in full: its label and the analysis' whole explanation (or why there is none)."""
    if row is None:
        return Text("")
    out = Text.assemble((config_label(row.values), "bold"), "  ")
    if row.explanation:
        out.append(row.explanation)
    elif row.state in RUNNING:
        if live and row.progress is not None:
            out.append(f"running: {row.progress * 100:.0f}% of its steps, eta {fmt.duration(row.eta_s)}", "cyan")
        else:
            out.append("running when recorded: its result was not collected" if not live else "running",
                       "cyan")
    elif row.state == "not_submitted":
        out.append("not submitted yet", "dim")
    elif row.verdict:
        out.append(row.verdict)
    else:
        why = f": {job.reason}" if job is not None and job.reason else ""
        out.append(f"{state_word(row.state)}{why}; the verdict appears when its result is collected", "dim")
    return out


def _natural(value: str) -> tuple:
    return (0, float(value), "") if _is_number(value) else (1, 0.0, value)


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def queue_site_line(snapshot: StudySnapshot) -> str:
    """What the site says above the queue: the controller away (no job changes state meanwhile), a
    maintenance reservation the study's time limit crosses and the time limit that fits, what submitting
    waits for (a site limit, a full work directory)."""
    parts = [f"{snapshot.scheduler}: the states below are as last seen" if snapshot.scheduler else "",
             snapshot.maintenance, snapshot.waiting and f"waiting: {snapshot.waiting}"]
    return " · ".join(p for p in parts if p)


def queue_rows(snapshot: StudySnapshot) -> list[Row]:
    """Jobs of the study, newest attempt per configuration first in submission order."""
    folded = folded_axes(snapshot)
    labels = {c.config_id: short_label(c.values, folded) for c in snapshot.configs}
    rows = []
    for job in snapshot.jobs:
        rows.append(Row(_job_key(job), queue_cells(job, labels.get(job.config_id, job.config_id))))
    return rows


def _job_key(job: JobRow) -> str:
    return job.job_id or f"intent:{job.config_id}:{job.attempt}"


def queue_cells(job: JobRow, label: str) -> tuple[object, ...]:
    limit = fmt.duration(job.time_limit_s) if job.time_limit_s else "-"
    return (
        label,
        job.job_id or "(submitting)",
        Text(job.state.replace("_", " "), style=fmt.state_style(job.state)),
        f"{fmt.duration(job.elapsed_s)} / {limit}",
        "-" if job.nodes is None else str(job.nodes),
        job.node_list or "-",
        job.reason or "",
        str(job.attempt),
    )


# --- the study's four figures -------------------------------------------------------------------------


def workers_of(row: ConfigRow) -> int:
    return int(cast("int | None", row.values.get("nodes", 1)) or 1) * int(cast("int | None", row.values.get("gpus_per_node", 1)) or 1)


def analysis_rows(snapshot: StudySnapshot) -> tuple[list[dict], list[dict]]:
    """(cockpit.forecast.analysis rows of the configurations that have one, the rest as pending points), the input
    of cockpit.figures.series: the plots tab draws what the report's PNGs draw."""
    done, pending = [], []
    for c in snapshot.configs:
        if c.analysis:
            done.append(c.analysis)
        else:
            pending.append({"group_id": c.group_id, "workers": workers_of(c),
                            "cpus_per_task": c.values.get("cpus_per_task"), "status": c.state})
    return done, pending


def new_lines(old: list[str], new: list[str]) -> list[str]:
    """Lines of `new` (a log tail) that follow what `old` already showed, found by overlap."""
    if not old:
        return list(new)
    if not new:
        return []
    last = old[-1]
    for m in range(min(len(old), len(new)), 0, -1):
        if new[m - 1] == last and new[:m] == old[-m:]:
            return new[m:]
    return list(new)
