"""Pure view-models: a StudySnapshot in, table rows and plot series out.

No Textual here, so the same functions drive the widgets, the benchmarks and the unit tests, and a
1000-configuration refresh costs only list building.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text

from cockpit.snapshot import ConfigRow, GpuSeries, JobRow, StudySnapshot
from cockpit.spec import config_label  # noqa: F401  (the views name it model.config_label)
from cockpit.tui import format as fmt

GROUP_AXES = ("dataset", "mode", "window", "precision", "batch_size", "cpus_per_task", "gpus_per_node", "nodes")
RUNNING = ("running", "completing")
IDLE_UTIL_PCT = 5.0
IDLE_SAMPLES = 5


@dataclass(frozen=True)
class Column:
    """A table column; a fixed width for columns whose values change live (no re-measuring per update)."""

    key: str
    label: str
    width: int | None = None


SCALING_COLUMNS = (
    Column("mark", " ", 1),
    Column("dataset", "dataset"),
    Column("mode", "mode"),
    Column("window", "window"),
    Column("scale", "nodes×GPUs"),
    Column("cpus_per_task", "cpus"),
    Column("precision", "prec"),
    Column("state", "state", 13),
    Column("time", "T s", 16),
    Column("work", "work", 5),
    Column("t_same_work", "T/work s", 8),
    Column("speedup", "speedup", 7),
    Column("efficiency", "eff", 4),
    Column("overhead", "overhead s", 10),
    Column("tokens", "tokens/s", 8),
    Column("verdict", "where the time went"),
)
SORTABLE = tuple(c.key for c in SCALING_COLUMNS if c.key != "mark")

QUEUE_COLUMNS = (
    Column("config", "configuration"),
    Column("job", "job"),
    Column("state", "state", 13),
    Column("elapsed", "elapsed / limit", 15),
    Column("nodes", "nodes"),
    Column("nodelist", "node list"),
    Column("reason", "reason"),
    Column("attempt", "try"),
)

GPU_COLUMNS = (
    Column("config", "configuration"),
    Column("host", "host"),
    Column("gpu", "gpu"),
    Column("util", "util", 5),
    Column("util_spark", "util (recent)", 24),
    Column("mem", "memory", 14),
    Column("power", "power", 7),
    Column("temp", "temp", 7),
    Column("flag", "flag", 9),
)


@dataclass(frozen=True)
class Row:
    """One table row: a stable key (config or job id) and its rendered cells."""

    key: str
    cells: tuple[object, ...]
    header: bool = False


def _time_cell(row: ConfigRow) -> Text:
    if row.state in RUNNING and row.progress is not None:
        eta = f" eta {fmt.duration(row.eta_s)}" if row.eta_s is not None else ""
        return Text(f"▶ {row.progress * 100:.0f}%{eta}", style="cyan")
    return Text(fmt.seconds(row.train_time_s))


def _sort_value(row: ConfigRow, key: str) -> tuple:
    """Sort key that puts missing numbers last whatever the direction."""
    v = row.values
    value: object
    if key == "scale":
        value = (v.get("nodes", 1) or 1) * (v.get("gpus_per_node", 1) or 1)
    elif key == "time":
        value = row.train_time_s
    elif key == "work":
        value = row.work_ratio
    elif key == "t_same_work":
        value = row.t_same_work_s
    elif key == "speedup":
        value = row.speedup
    elif key == "efficiency":
        value = row.efficiency
    elif key == "overhead":
        value = row.overhead_s
    elif key == "tokens":
        value = row.tokens_per_s
    elif key == "state":
        value = row.state
    elif key == "verdict":
        value = row.verdict
    else:
        value = v.get(key)
    if value is None or (isinstance(value, float) and value != value):
        return (1, "")
    return (0, value) if isinstance(value, int | float) else (0, str(value))


def matches(row: ConfigRow, terms: list[str]) -> bool:
    """Filter: every term must match; `axis=value` compares one axis, anything else is a substring."""
    if not terms:
        return True
    haystack = None
    for term in terms:
        if "=" in term:
            axis, _, want = term.partition("=")
            axis = axis.strip().lower()
            have = row.state if axis == "state" else row.values.get(axis)
            if str(have).lower() != want.strip().lower():
                return False
            continue
        if haystack is None:
            haystack = " ".join([config_label(row.values), row.state, row.verdict, row.config_id]).lower()
        if term.lower() not in haystack:
            return False
    return True


_CELL_CACHE: dict[tuple, tuple[object, ...]] = {}
_CELL_CACHE_MAX = 20_000


def _cell_key(row: ConfigRow) -> tuple:
    """Everything a row's cells depend on (its axis values are fixed by its config_id)."""
    return (row.config_id, row.is_baseline, row.state, row.train_time_s, row.work_ratio, row.t_same_work_s,
            row.speedup, row.efficiency, row.overhead_s, row.tokens_per_s, row.verdict, row.progress, row.eta_s)


def scaling_cells(row: ConfigRow) -> tuple[object, ...]:
    """Cells of one row; the same tuple object is returned while the row is unchanged, so a refresh
    compares rows by identity and rebuilds nothing for the (usually many) rows that did not move."""
    key = _cell_key(row)
    cells = _CELL_CACHE.get(key)
    if cells is None:
        if len(_CELL_CACHE) >= _CELL_CACHE_MAX:
            _CELL_CACHE.clear()
        cells = _CELL_CACHE[key] = _scaling_cells(row)
    return cells


def _scaling_cells(row: ConfigRow) -> tuple[object, ...]:
    v = row.values
    eff = Text(fmt.percent(row.efficiency), style=fmt.efficiency_style(row.efficiency))
    return (
        Text("★", style="bold yellow") if row.is_baseline else "",
        str(v.get("dataset", "")),
        str(v.get("mode", "")),
        str(v.get("window", "")),
        f"{v.get('nodes', 1)}×{v.get('gpus_per_node', 1)}",
        str(v.get("cpus_per_task", "")),
        str(v.get("precision", "")),
        Text(row.state.replace("_", " "), style=fmt.state_style(row.state)),
        _time_cell(row),
        fmt.ratio(row.work_ratio),
        fmt.seconds(row.t_same_work_s),
        fmt.ratio(row.speedup),
        eff,
        fmt.seconds(row.overhead_s),
        fmt.rate(row.tokens_per_s),
        row.verdict,
    )


def scaling_rows(
    snapshot: StudySnapshot,
    sort_key: str | None = None,
    reverse: bool = False,
    query: str = "",
    group_by: str | None = None,
) -> list[Row]:
    """The home table: filtered, sorted, optionally grouped by one axis with a header row per value."""
    terms = query.split()
    rows = [r for r in snapshot.configs if matches(r, terms)]
    if sort_key:
        ok = [r for r in rows if _sort_value(r, sort_key)[0] == 0]
        absent = [r for r in rows if _sort_value(r, sort_key)[0] == 1]
        ok.sort(key=lambda r: _sort_value(r, sort_key), reverse=reverse)
        rows = ok + absent
    if not group_by:
        return [Row(r.config_id, scaling_cells(r)) for r in rows]
    groups: dict[str, list[ConfigRow]] = {}
    for r in rows:
        groups.setdefault(str(r.values.get(group_by, "")), []).append(r)
    out: list[Row] = []
    keys = [c.key for c in SCALING_COLUMNS]
    for value in sorted(groups, key=_natural):
        members = groups[value]
        cells: list[object] = [""] * len(keys)
        cells[0] = Text("▼", style="bold")
        if group_by in keys:
            cells[keys.index(group_by)] = Text(value, style="bold")
        cells[-1] = Text(f"{group_by} = {value}: {len(members)} configurations", style="bold")
        out.append(Row(f"group:{group_by}:{value}", tuple(cells), header=True))
        out.extend(Row(r.config_id, scaling_cells(r)) for r in members)
    return out


def _natural(value: str) -> tuple:
    return (0, float(value), "") if _is_number(value) else (1, 0.0, value)


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def queue_rows(snapshot: StudySnapshot) -> list[Row]:
    """Jobs of the study, newest attempt per configuration first in submission order."""
    labels = {c.config_id: config_label(c.values) for c in snapshot.configs}
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


def gpu_is_idle(series: GpuSeries) -> bool:
    """Idle = the last few samples all below the utilisation threshold."""
    recent = [s.util_pct for s in series.samples[-IDLE_SAMPLES:] if s.util_pct is not None]
    return bool(recent) and max(recent) < IDLE_UTIL_PCT


def gpu_rows(snapshot: StudySnapshot) -> list[Row]:
    """Every GPU of every running job; GPUs (and whole nodes) that idle while their job runs are flagged."""
    states = {c.config_id: c.state for c in snapshot.configs}
    labels = {c.config_id: config_label(c.values) for c in snapshot.configs}
    idle_by_node: dict[tuple[str, str], list[bool]] = {}
    running = [g for g in snapshot.gpus if states.get(g.config_id) in RUNNING]
    for g in running:
        idle_by_node.setdefault((g.config_id, g.host), []).append(gpu_is_idle(g))
    rows = []
    for g in sorted(running, key=lambda s: (s.config_id, s.host, s.gpu)):
        last = g.latest
        idle = gpu_is_idle(g)
        node_idle = all(idle_by_node[(g.config_id, g.host)])
        if node_idle:
            flag = Text("NODE IDLE", style="bold white on red")
        elif idle:
            flag = Text("idle", style="bold red")
        else:
            flag = Text("ok", style="green")
        util = [s.util_pct for s in g.samples if s.util_pct is not None]
        mem = "-"
        if last and last.mem_used_bytes is not None:
            total = f"/{last.mem_total_bytes / 2**30:.0f}" if last.mem_total_bytes else ""
            mem = f"{last.mem_used_bytes / 2**30:.1f}{total} GiB"
        rows.append(
            Row(
                f"{g.config_id}:{g.host}:{g.gpu}",
                (
                    labels.get(g.config_id, g.config_id),
                    g.host,
                    str(g.gpu),
                    "-" if not last or last.util_pct is None else f"{last.util_pct:.0f}%",
                    Text(fmt.sparkline(util, 24, 0.0, 100.0), style="red" if idle else "green"),
                    mem,
                    "-" if not last or last.power_w is None else f"{last.power_w:.0f} W",
                    "-" if not last or last.temp_c is None else f"{last.temp_c:.0f} °C",
                    flag,
                ),
            )
        )
    return rows


# --- the study's four figures -------------------------------------------------------------------------


def workers_of(row: ConfigRow) -> int:
    return int(row.values.get("nodes", 1) or 1) * int(row.values.get("gpus_per_node", 1) or 1)


def analysis_rows(snapshot: StudySnapshot) -> tuple[list[dict], list[dict]]:
    """(cockpit.analysis rows of the configurations that have one, the rest as pending points), the input
    of cockpit.series: the plots tab draws what the report's PNGs draw."""
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
